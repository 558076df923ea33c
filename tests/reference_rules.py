"""A deliberately naive, one-position-at-a-time oracle of RULES.md for the tests.

It shares nothing with the engine but the text format: stacks are strings
(top man first), the capture search is plain recursion. Slow and obvious, so
that the property tests can check the fast engine against it.
"""

from __future__ import annotations

ROWS = [(n - 1) // 5 for n in range(1, 51)]
COLS = [2 * ((n - 1) % 5) + 1 if ROWS[n - 1] % 2 == 0 else 2 * ((n - 1) % 5) for n in range(1, 51)]
_AT = {(ROWS[i], COLS[i]): i + 1 for i in range(50)}
DELTAS = [(-1, -1), (-1, 1), (1, -1), (1, 1)]


def neighbour(n: int, d: int, steps: int = 1) -> "int | None":
    dr, dc = DELTAS[d]
    return _AT.get((ROWS[n - 1] + steps * dr, COLS[n - 1] + steps * dc))


def parse(fen: str) -> "tuple[str, list[str]]":
    side, body = fen.split(":")
    return side.lower(), body.split(",")


def fmt(side: str, board: "list[str]") -> str:
    return side.upper() + ":" + ",".join(board)


def _captures(board: "list[str]", side: str, at: int, last: "int | None") -> "list[tuple[list[int], list[str]]]":
    """All complete capture paths continuing from ``at`` (after at least one leap was made, or the first)."""
    found = []
    for d in range(4):
        over, land = neighbour(at, d), neighbour(at, d, 2)
        if over is None or land is None or over == last:
            continue
        if not board[over - 1] or board[over - 1][0] == side or board[land - 1]:
            continue
        nb = list(board)
        captured = nb[over - 1][0]
        nb[land - 1] = nb[at - 1] + captured
        nb[at - 1] = ""
        nb[over - 1] = nb[over - 1][1:]
        rest = _captures(nb, side, land, over)
        if rest:
            found += [([at] + path, after) for path, after in rest]
        else:
            found.append(([at, land], nb))
    return found


def full_moves(fen: str) -> "dict[str, str]":
    """Every legal full move (PDN text) mapped to the position text after it."""
    side, board = parse(fen)
    other = "b" if side == "w" else "w"
    captures = []
    for n in range(1, 51):
        if board[n - 1] and board[n - 1][0] == side:
            captures += _captures(board, side, n, None)
    if captures:
        longest = max(len(p) for p, _ in captures)
        return {"x".join(map(str, p)): fmt(other, b) for p, b in captures if len(p) == longest}
    moves = {}
    forward = (0, 1) if side == "w" else (2, 3)
    for n in range(1, 51):
        if board[n - 1] and board[n - 1][0] == side:
            for d in forward:
                t = neighbour(n, d)
                if t is not None and not board[t - 1]:
                    nb = list(board)
                    nb[t - 1], nb[n - 1] = nb[n - 1], ""
                    moves[f"{n}-{t}"] = fmt(other, nb)
    return moves


def points(fen: str) -> "tuple[int, int]":
    """Variant II points of White and Black."""
    _, board = parse(fen)
    white = sum(len(s) for s in board[0:5] if s and s[0] == "w")
    black = sum(len(s) for s in board[45:50] if s and s[0] == "b")
    return white, black
