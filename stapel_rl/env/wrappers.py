"""The old path of ``VersusAgent``, now ``stapel_rl.eval.versus.VersusAgent``: kept for one version.

The env layer may not import agents (``stapel_rl.eval``), so the class moved up; importing it from here
still works, with a ``DeprecationWarning``, and loads ``stapel_rl.eval`` only then.
"""

from __future__ import annotations

import warnings
from typing import Any


def __getattr__(name: str) -> Any:
    if name != "VersusAgent":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        "stapel_rl.env.wrappers.VersusAgent moved to stapel_rl.eval.versus.VersusAgent; the old path goes in the "
        "next version",
        DeprecationWarning,
        stacklevel=2,
    )
    from stapel_rl.eval.versus import VersusAgent  # the one allowed upward import (tests/test_layers.py)

    return VersusAgent
