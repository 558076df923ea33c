"""Deprecated alias of ``stapel_rl.models.checkpoint`` (kept for one version: import that module instead)."""

from stapel_rl.models.checkpoint import (
    atomic_write_bytes,
    code_version,
    export,
    list_checkpoints,
    load,
    load_network,
    save,
)

__all__ = ["atomic_write_bytes", "code_version", "export", "list_checkpoints", "load", "load_network", "save"]
