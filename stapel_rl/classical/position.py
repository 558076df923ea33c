"""One game as the compiled code sees it, and the Python-side conversions: env ``State``,
position text, move text, action ids."""

from __future__ import annotations

import dataclasses

import numpy as np

from stapel_rl.classical.board import DIRECTION, board_key, make_move
from stapel_rl.classical.movegen import MAX_MOVES, generate, new_move_buffer, new_scratch
from stapel_rl.env.fen import format_fen, parse_fen
from stapel_rl.env.notation import move_text
from stapel_rl.env.state import State


@dataclasses.dataclass
class Position:
    """A game at a decision point.

    Attributes:
        h: ``uint8 [50]`` men per square. c: ``uint64 [50]`` colours, top man at bit 0 (1 = Black).
        side: side to move (0 White, 1 Black).
        capturing: square of the stack in the middle of a capture, -1 if none.
        last_leapt: square that stack may not leap next, -1 if none.
        ply: full moves played in the game so far (for the ply cap).
    """

    h: np.ndarray
    c: np.ndarray
    side: int
    capturing: int = -1
    last_leapt: int = -1
    ply: int = 0

    @classmethod
    def from_state(cls, state: State, game: int) -> "Position":
        return cls(
            h=np.ascontiguousarray(state.height[game], dtype=np.uint8).copy(),
            c=np.ascontiguousarray(state.colours[game], dtype=np.uint64).copy(),
            side=int(state.current_player[game]),
            capturing=int(state.capturing[game]),
            last_leapt=int(state.last_leapt[game]),
            ply=int(state.ply[game]),
        )

    @classmethod
    def from_fen(cls, fen: str, ply: int = 0) -> "Position":
        heights, colours, side = parse_fen(fen)
        return cls(np.array(heights, dtype=np.uint8), np.array(colours, dtype=np.uint64), side, ply=ply)

    def fen(self) -> str:
        if self.capturing >= 0:
            raise ValueError("a position in the middle of a capture has no position text")
        return format_fen(self.h.tolist(), [int(x) for x in self.c], self.side)

    def key(self) -> int:
        return int(board_key(self.h, self.c, self.side))

    def move_rows(self) -> np.ndarray:
        """``int8 [M, MOVE_WIDTH]`` the legal full moves (``board`` module's row format)."""
        buffer = new_move_buffer(1)[0]
        n, _ = generate(self.h, self.c, self.side, self.capturing, self.last_leapt, buffer, new_scratch())
        if n > MAX_MOVES:
            raise RuntimeError(f"{n} legal moves, more than the {MAX_MOVES} the generator keeps")
        return buffer[:n].copy()

    def after(self, row: np.ndarray) -> "Position":
        """The position after full move ``row`` (the turn passes)."""
        h, c = self.h.copy(), self.c.copy()
        make_move(h, c, row, np.uint64(0))
        return Position(h, c, 1 - self.side, ply=self.ply + 1)


def row_path(row: np.ndarray) -> "list[int]":
    """Square indices of a move row."""
    return [int(s) for s in row[1 : 1 + int(row[0])]]


def row_text(row: np.ndarray) -> str:
    """Move text (``32-28``, ``28x19x10``) of a move row."""
    return move_text(row_path(row))


def step_actions(path: "list[int]") -> "list[int]":
    """Action ids (``4 * square + direction``) of the steps of a full move's path."""
    return [4 * p + int(DIRECTION[p, q]) for p, q in zip(path[:-1], path[1:], strict=True)]


def legal_move_texts(fen: str) -> "dict[str, str]":
    """Every legal full move of a position text, mapped to the position text after it."""
    pos = Position.from_fen(fen)
    return {row_text(r): pos.after(r).fen() for r in pos.move_rows()}
