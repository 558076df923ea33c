"""Full moves as text (PDN-like, RULES.md), built on the batched engine.

A full move is the sequence of actions one player makes in a turn: one plain
move, or all leaps of a capture. ``expand_full_moves`` enumerates them for a
whole batch by stepping the engine until every capture is complete; the text
functions and perft are thin layers over it.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from stapel_rl.env import engine
from stapel_rl.env.geometry import JUMP, NEIGHBOR
from stapel_rl.env.state import State, concatenate, take
from stapel_rl.env.variants import Variant, get_variant

_MOVE_RE = re.compile(r"^(\d+)(?:-(\d+)|((?:x\d+)+))$")


@dataclasses.dataclass
class FullMoves:
    """The full moves of a batch of positions.

    Attributes:
        parent: ``int [M]`` game of the input batch each move belongs to.
        path: ``int [M, L]`` square indices the moving stack stands on, start
            first, padded with -1 (L = longest capture + 1).
        actions: ``int [M, L - 1]`` the action ids making up each move, -1 padded.
        state: the M positions after the moves.
    """

    parent: np.ndarray
    path: np.ndarray
    actions: np.ndarray
    state: State

    def texts(self) -> "list[str]":
        return [move_text(p) for p in self.path]


def _pad(a: np.ndarray, width: int) -> np.ndarray:
    return np.pad(a, ((0, 0), (0, width - a.shape[1])), constant_values=-1)


def expand_full_moves(state: State) -> FullMoves:
    """Every legal full move of every game in ``state`` (games at the start of a turn)."""
    done_parts: "list[tuple]" = []
    parent = np.arange(state.batch_size)
    path = np.zeros((state.batch_size, 0), dtype=np.int64)
    actions = np.zeros((state.batch_size, 0), dtype=np.int64)
    current = state
    while current.batch_size:
        g, a = np.nonzero(current.legal_action_mask)
        src, d = a // 4, a % 4
        leap = current.height[g, NEIGHBOR[src, d]] > 0
        dst = np.where(leap, JUMP[src, d], NEIGHBOR[src, d])
        start = src[:, None] if path.shape[1] == 0 else path[g]
        path = np.concatenate([start, dst[:, None]], axis=1)
        actions = np.concatenate([actions[g], a[:, None]], axis=1)
        parent = parent[g]
        current = engine.step(take(current, g), a, validate=False)
        pending = current.capturing >= 0
        done_parts.append((parent[~pending], path[~pending], actions[~pending], take(current, ~pending)))
        parent, path, actions = parent[pending], path[pending], actions[pending]
        current = take(current, pending)
    width = max(p[1].shape[1] for p in done_parts)
    return FullMoves(
        parent=np.concatenate([p[0] for p in done_parts]),
        path=np.concatenate([_pad(p[1], width) for p in done_parts]),
        actions=np.concatenate([_pad(p[2], width - 1) for p in done_parts]),
        state=concatenate([p[3] for p in done_parts]),
    )


def move_text(path: "np.ndarray | list[int]") -> str:
    """``32-28`` for a plain move, ``28x19x10`` for a capture, from square indices."""
    squares = [int(s) for s in path if s >= 0]
    a, b = squares[0], squares[1]
    sep = "-" if len(squares) == 2 and b in NEIGHBOR[a] else "x"
    return sep.join(str(s + 1) for s in squares)


def parse_move(text: str) -> "tuple[list[int], bool]":
    """Square numbers (1..50) of a move text and whether it is written as a capture."""
    if not isinstance(text, str):
        raise ValueError(f"move text must be a string, got {type(text).__name__}")
    m = _MOVE_RE.match(text.strip())
    if not m:
        raise ValueError(f"malformed move {text!r}: expected e.g. '32-28' or '28x19x10'")
    squares = [int(m.group(1))]
    squares += [int(m.group(2))] if m.group(2) else [int(x) for x in m.group(3).split("x")[1:]]
    for s in squares:
        if not 1 <= s <= 50:
            raise ValueError(f"malformed move {text!r}: square {s} is not between 1 and 50")
    return squares, m.group(3) is not None


def initial_fen(variant: "Variant | str" = "I") -> str:
    """Position text of the start position of ``variant``."""
    return get_variant(variant).setup


def legal_moves(fen: str, variant: "Variant | str" = "I") -> "list[str]":
    """All legal full moves of a position, as texts with full capture paths."""
    return expand_full_moves(engine.from_fens([fen], variant)).texts()


def find_move(moves: FullMoves, text: str) -> int:
    """Index into ``moves`` (of one position) of the move written ``text``.

    Accepts the full path, and for a capture ``from x to`` where exactly one
    legal capture matches. Raises ``ValueError`` listing the legal moves.
    """
    squares, is_capture = parse_move(text)
    texts = moves.texts()
    wanted = [s - 1 for s in squares]
    exact = [i for i, p in enumerate(moves.path) if [int(x) for x in p if x >= 0] == wanted]
    if exact:
        return exact[0]
    if is_capture and len(wanted) == 2:
        ends = [
            i
            for i, t in enumerate(texts)
            if "x" in t and int(t.split("x")[0]) == squares[0] and int(t.split("x")[-1]) == squares[1]
        ]
        if len(ends) == 1:
            return ends[0]
        if len(ends) > 1:
            raise ValueError(
                f"ambiguous move {text!r}: {len(ends)} legal captures match ({', '.join(texts[i] for i in ends)}); "
                "give the full path"
            )
    raise ValueError(f"illegal move {text!r}; legal moves: {', '.join(texts) if texts else 'none'}")


def apply_move(fen: str, move: str, variant: "Variant | str" = "I") -> str:
    """Position text after playing ``move`` (see :func:`find_move`) in ``fen``."""
    moves = expand_full_moves(engine.from_fens([fen], variant))
    i = find_move(moves, move)
    return engine.to_fens(take(moves.state, [i]))[0]


def game_result(fen: str, variant: "Variant | str" = "I") -> "int | None":
    """+1 White won, -1 Black won, 0 draw, or None while the side to move has a move."""
    state = engine.from_fens([fen], variant)
    if not state.terminated[0]:
        return None
    return int(state.rewards[0, 0])


def perft(fen: "str | State", depth: int, variant: "Variant | str" = "I", chunk: int = 1 << 15) -> int:
    """Number of full-move paths of length ``depth`` from a position, the whole frontier stepped at once."""
    state = engine.from_fens([fen], variant) if isinstance(fen, str) else fen
    if depth <= 0:
        return state.batch_size
    total = 0
    for lo in range(0, state.batch_size, chunk):
        part = take(state, slice(lo, lo + chunk))
        if depth == 1:
            total += _count_full_moves(part)
        else:
            total += perft(expand_full_moves(part).state, depth - 1, chunk=chunk)
    return total


def _count_full_moves(state: State) -> int:
    """Full moves of a batch; only positions with a capture need expanding."""
    mask = state.legal_action_mask
    g, a = np.nonzero(mask)
    leap = state.height[g, NEIGHBOR[a // 4, a % 4]] > 0
    capturing = np.zeros(state.batch_size, dtype=bool)
    capturing[g[leap]] = True
    plain = int(mask[~capturing].sum())
    return plain + (expand_full_moves(take(state, capturing)).parent.size if capturing.any() else 0)
