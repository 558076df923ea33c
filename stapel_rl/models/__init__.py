"""Models: the evaluator protocol, the policy-value network and its batched evaluator.

The torch-based names are imported on first use, so that code needing only
the ``Evaluator`` protocol (the search, uniform baselines) does not pay for
importing torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from stapel_rl.models.evaluator import Evaluation, Evaluator, UniformEvaluator

if TYPE_CHECKING:
    from stapel_rl.models.inference import NetworkEvaluator
    from stapel_rl.models.network import (
        PRESETS,
        NetworkConfig,
        PolicyValueNet,
        masked_log_softmax,
    )

_LAZY = {
    "NetworkConfig": "stapel_rl.models.network",
    "PRESETS": "stapel_rl.models.network",
    "PolicyValueNet": "stapel_rl.models.network",
    "masked_log_softmax": "stapel_rl.models.network",
    "NetworkEvaluator": "stapel_rl.models.inference",
}

__all__ = [
    "PRESETS",
    "Evaluation",
    "Evaluator",
    "NetworkConfig",
    "NetworkEvaluator",
    "PolicyValueNet",
    "UniformEvaluator",
    "masked_log_softmax",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later look-ups skip this hook
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> "list[str]":
    return sorted(set(globals()) | set(__all__))
