"""Test helpers for boards: position text from a few stacks (imported as a top-level module, see conftest.py)."""

from __future__ import annotations


def fen(side: str, stacks: "dict[int, str] | None" = None) -> str:
    """Position text: ``side`` ("W" or "B") to move, ``{square: stack, top man first}`` on the board."""
    stacks = stacks or {}
    return side + ":" + ",".join(stacks.get(n, "") for n in range(1, 51))
