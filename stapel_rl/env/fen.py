"""Position text (RULES.md): ``<side>:<s1>,...,<s50>``, each stack top man first.

Only the syntax lives here; the engine builds states from what this parses.
"""

from __future__ import annotations

MAX_STACK = 40
MEN_PER_SIDE = 20
_SIDES = {"W": 0, "B": 1}
_LETTERS = {"w": 0, "b": 1}


def parse_fen(text: str) -> "tuple[list[int], list[int], int]":
    """Heights, colour bitmasks (bit i = i-th man from the top is Black) and side to move.

    Raises ``ValueError`` saying what is wrong with malformed text.
    """
    if not isinstance(text, str):
        raise ValueError(f"position text must be a string, got {type(text).__name__}")
    side, sep, body = text.strip().partition(":")
    if not sep:
        raise ValueError(f"position text {text!r} lacks the ':' after the side to move (expected 'W:...' or 'B:...')")
    if side not in _SIDES:
        raise ValueError(f"position text {text!r}: side to move must be 'W' or 'B', got {side!r}")
    fields = body.split(",")
    if len(fields) != 50:
        raise ValueError(f"position text {text!r}: expected 50 comma-separated squares, got {len(fields)}")
    heights, colours = [], []
    men = [0, 0]
    for number, stack in enumerate(fields, start=1):
        stack = stack.strip()
        bad = set(stack) - set(_LETTERS)
        if bad:
            raise ValueError(
                f"position text: square {number} holds {stack!r}; stacks use only 'w' and 'b' (found {sorted(bad)})"
            )
        if len(stack) > MAX_STACK:
            raise ValueError(f"position text: square {number} holds {len(stack)} men, more than {MAX_STACK}")
        mask = 0
        for i, letter in enumerate(stack):
            mask |= _LETTERS[letter] << i
            men[_LETTERS[letter]] += 1
        heights.append(len(stack))
        colours.append(mask)
    for colour, name in enumerate(("White", "Black")):
        if men[colour] > MEN_PER_SIDE:
            raise ValueError(f"position text: {men[colour]} {name} men, more than {MEN_PER_SIDE}")
    return heights, colours, _SIDES[side]


def format_stack(height: int, colours: int) -> str:
    """A stack as letters, top man first."""
    return "".join("b" if (colours >> i) & 1 else "w" for i in range(height))


def format_fen(heights: "list[int]", colours: "list[int]", player: int) -> str:
    """Position text of one game."""
    return "WB"[player] + ":" + ",".join(format_stack(h, c) for h, c in zip(heights, colours, strict=True))
