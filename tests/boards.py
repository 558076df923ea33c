"""Test helpers for boards: position text, and the state fields a step decides (a top-level module, see conftest.py)."""

from __future__ import annotations


def fen(side: str, stacks: "dict[int, str] | None" = None) -> str:
    """Position text: ``side`` ("W" or "B") to move, ``{square: stack, top man first}`` on the board."""
    stacks = stacks or {}
    return side + ":" + ",".join(stacks.get(n, "") for n in range(1, 51))


#: The state fields a step decides: a batched and a one-game step must agree on each.
STEP_FIELDS = (
    "height",
    "colours",
    "current_player",
    "capturing",
    "last_leapt",
    "ply",
    "legal_action_mask",
    "terminated",
    "truncated",
    "rewards",
    "points",
)
