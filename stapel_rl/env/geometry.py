"""Board geometry of the 10x10 draughts board: numbering, neighbours, bitboards.

Squares are numbered 1..50 in the text formats (RULES.md); inside the engine a
square is its index ``sq = number - 1`` (0..49).

Bitboards put every square on one bit of a ``uint64`` with a "ghost" bit after
every pair of rows (11 bits per two rows, ghosts at bits 10, 21, 32, 43, 54).
With that padding each diagonal direction is a constant bit offset, so a whole
set of squares steps one square diagonally with a single shift::

    bit(sq) = 11 * (row // 2) + 5 * (row % 2) + k        (k = sq % 5)

    up-left  -6   up-right  -5   down-left  +5   down-right  +6

A step off the left/right edge lands on a ghost bit and one off the top/bottom
edge leaves the 64-bit word, so ``shift_all(bb) & VALID`` is always exact.

Directions follow the action encoding of RULES.md, as White sees the board:
0 = up-left, 1 = up-right, 2 = down-left, 3 = down-right. All tables are built
once at import.
"""

from __future__ import annotations

import functools

import numpy as np

NUM_SQUARES = 50
NUM_DIRECTIONS = 4
NUM_ACTIONS = NUM_SQUARES * NUM_DIRECTIONS

#: Row (0 = Black's back row) and column (0 = file a) of each square index.
ROW = np.arange(NUM_SQUARES) // 5
COL = np.where(ROW % 2 == 0, 2 * (np.arange(NUM_SQUARES) % 5) + 1, 2 * (np.arange(NUM_SQUARES) % 5))

#: (d_row, d_col) of the four directions.
DIRECTION_DELTAS = np.array([(-1, -1), (-1, 1), (1, -1), (1, 1)])
#: Bit offset of one diagonal step in each direction (see module docstring).
DIRECTION_SHIFTS = (-6, -5, 5, 6)
#: Forward directions of each colour: White (0) moves up, Black (1) moves down.
FORWARD_DIRECTIONS = ((0, 1), (2, 3))

BIT = (11 * (ROW // 2) + 5 * (ROW % 2) + np.arange(NUM_SQUARES) % 5).astype(np.int64)
#: uint64 with only square ``sq``'s bit set.
SQUARE_MASK = (np.uint64(1) << BIT.astype(np.uint64)).astype(np.uint64)
#: All 50 playable bits.
VALID = np.bitwise_or.reduce(SQUARE_MASK)
#: Square index of each of the 64 bits, -1 for ghosts and unused bits.
SQUARE_OF_BIT = np.full(64, -1, dtype=np.int64)
SQUARE_OF_BIT[BIT] = np.arange(NUM_SQUARES)

_coord_to_square = {(int(r), int(c)): s for s, (r, c) in enumerate(zip(ROW, COL, strict=True))}


def _walk(steps: int) -> np.ndarray:
    table = np.full((NUM_SQUARES, NUM_DIRECTIONS), -1, dtype=np.int64)
    for s in range(NUM_SQUARES):
        for d, (dr, dc) in enumerate(DIRECTION_DELTAS):
            table[s, d] = _coord_to_square.get((ROW[s] + steps * dr, COL[s] + steps * dc), -1)
    return table


#: NEIGHBOR[sq, d]: the square one diagonal step away, -1 off the board.
NEIGHBOR = _walk(1)
#: JUMP[sq, d]: the landing square of a leap (two steps away), -1 off the board.
JUMP = _walk(2)
#: 180-degree rotation: square n <-> 51 - n, i.e. index sq <-> 49 - sq.
ROTATE_SQUARE = NUM_SQUARES - 1 - np.arange(NUM_SQUARES)
#: Rotation of a direction: d <-> 3 - d.
ROTATE_DIRECTION = NUM_DIRECTIONS - 1 - np.arange(NUM_DIRECTIONS)
#: Action id under the 180-degree rotation (an involution).
ROTATE_ACTION = (4 * ROTATE_SQUARE[:, None] + ROTATE_DIRECTION[None, :]).reshape(-1)

#: Back rows by colour index: White's is squares 46-50, Black's squares 1-5.
BACK_ROW = (np.arange(45, 50), np.arange(0, 5))

#: Column of the 4 x 64 unpacked direction bitboards feeding each action id:
#: action 4 * sq + d reads bit BIT[sq] of direction d's board.
ACTION_BIT_COLUMN = (np.arange(NUM_DIRECTIONS)[None, :] * 64 + BIT[:, None]).reshape(-1)


@functools.lru_cache(maxsize=64)
def _step_counts(batch: int) -> "tuple[np.ndarray, np.ndarray]":
    """``uint64 [B, 4]`` left and right shift counts of one step in each column's direction (one of
    the two is 0), read-only: numpy shifts by a full array of counts several times faster than by
    a broadcast row of four."""
    left = np.array([max(s, 0) for s in DIRECTION_SHIFTS], dtype=np.uint64)
    right = np.array([max(-s, 0) for s in DIRECTION_SHIFTS], dtype=np.uint64)
    counts = tuple(np.ascontiguousarray(np.broadcast_to(c, (batch, NUM_DIRECTIONS))) for c in (left, right))
    for c in counts:
        c.flags.writeable = False
    left_counts, right_counts = counts
    return left_counts, right_counts


def shift_all(bb: np.ndarray) -> np.ndarray:
    """Every bit of ``bb`` one step in each direction (ghost bits not cleared): ``[B]`` (or ``[B, 4]``,
    column d moved in direction d) to ``[B, 4]``, column d the step in direction d. One operation on
    four columns costs little more than one on one column."""
    x = bb[:, None] if bb.ndim == 1 else bb
    left, right = _step_counts(x.shape[0])
    return (x << left) >> right


def unshift_all(bb: np.ndarray) -> np.ndarray:
    """Inverse of :func:`shift_all`: column d holds the squares whose step in direction d is in ``bb``."""
    x = bb[:, None] if bb.ndim == 1 else bb
    left, right = _step_counts(x.shape[0])
    return (x << right) >> left


def unpack_squares(bb: np.ndarray) -> np.ndarray:
    """``uint64 [...]`` bitboards to ``bool [..., 50]`` by square index."""
    bits = np.unpackbits(np.ascontiguousarray(bb).view(np.uint8).reshape(*bb.shape, 8), axis=-1, bitorder="little")
    return bits[..., BIT].astype(bool)


def pack_squares(squares: np.ndarray) -> np.ndarray:
    """``bool [..., 50]`` by square index to ``uint64 [...]`` bitboards."""
    return np.bitwise_or.reduce(np.where(squares, SQUARE_MASK, np.uint64(0)), axis=-1).astype(np.uint64)


def square_name(sq: int) -> str:
    """Coordinate name such as ``b10`` of square index ``sq``."""
    return f"{'abcdefghij'[COL[sq]]}{10 - ROW[sq]}"
