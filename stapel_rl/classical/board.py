"""Compiled board primitives: lookup tables, Zobrist-style hashing, make/unmake of leaps and full moves.

A position is two small arrays, the layout of the numpy engine's ``State``:
``h`` (``uint8 [50]``, men per square) and ``c`` (``uint64 [50]``, colour of each
man top first, bit set = Black), plus the side to move (0 White, 1 Black).
Captures walk that 50-square mailbox one stack at a time (every man of a stack
matters, not just who owns it); who owns what is also kept as two occupancy
bitboards in ``stapel_rl.env.geometry``'s layout, so that plain moves, the
presence of a capture and mobility need a few shifts, not a loop over squares.

A full move is an ``int8`` row ``[n, s0, s1, ..., s(n-1)]``: the number of
squares the moving stack stands on, then those squares (indices 0..49). Two
squares one step apart are a plain move; every other pair of consecutive
squares is a leap over the square between them.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

from stapel_rl.env.geometry import BIT, JUMP, NEIGHBOR, ROW, SQUARE_MASK, SQUARE_OF_BIT, VALID

#: Longest capture: each leap takes one opponent man and there are at most 20.
MAX_LEAPS = 20
#: Columns of a move row: the length, then up to MAX_LEAPS + 1 squares.
MOVE_WIDTH = MAX_LEAPS + 2

NEIGHBOR8 = NEIGHBOR.astype(np.int8)
JUMP8 = JUMP.astype(np.int8)
ROW8 = ROW.astype(np.int8)


def _between() -> "tuple[np.ndarray, np.ndarray]":
    over = np.full((50, 50), -1, dtype=np.int8)  # square leapt from p to q, -1 if p->q is no leap
    direction = np.full((50, 50), -1, dtype=np.int8)  # direction of the step or leap p->q
    for p in range(50):
        for d in range(4):
            if NEIGHBOR[p, d] >= 0:
                direction[p, NEIGHBOR[p, d]] = d
            if JUMP[p, d] >= 0:
                over[p, JUMP[p, d]] = NEIGHBOR[p, d]
                direction[p, JUMP[p, d]] = d
    return over, direction


#: OVER[p, q]: the square a leap from p to q passes over, -1 when p->q is no leap.
#: DIRECTION[p, q]: the direction (0..3) of the step or leap from p to q, -1 if none.
OVER, DIRECTION = _between()
#: Bitboard bit of each square, square of each bit (-1 for ghosts), the 50 squares' bits.
SQUARE_BIT = SQUARE_MASK.astype(np.uint64)
BIT_SQUARE = SQUARE_OF_BIT.astype(np.int8)
ALL_SQUARES = np.uint64(VALID)
#: Each side's scoring row (the opponent's back row: White's is Black's squares 1-5).
SCORING_ROW = np.array([np.bitwise_or.reduce(SQUARE_BIT[ROW == r]) for r in (0, 9)], dtype=np.uint64)
assert (np.diff(BIT) > 0).all()  # bit order is square order: bitboard loops keep the mailbox's move order
#: Forward directions by colour (White moves up: 0, 1; Black down: 2, 3).
FORWARD = np.array([[0, 1], [2, 3]], dtype=np.int8)

_ONE = np.uint64(1)
#: Key of the side to move, XORed in when Black is to move.
SIDE_KEY = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True, inline="always")
def mix64(x: np.uint64) -> np.uint64:
    # splitmix64's finaliser: every input bit flips about half the output bits.
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always")
def square_key(sq: int, height: int, colours: np.uint64) -> np.uint64:
    """Hash of one square's whole stack (0 for a vacant square): colours < 2^40, height < 64."""
    if height == 0:
        return np.uint64(0)
    return mix64(colours ^ (np.uint64(height) << np.uint64(40)) ^ (np.uint64(sq + 1) << np.uint64(48)))


@njit(cache=True, nogil=True)
def board_key(h: np.ndarray, c: np.ndarray, side: int) -> np.uint64:
    """Zobrist-style key of a position: XOR of the squares' stack keys and the side key."""
    key = np.uint64(0)
    for s in range(50):
        key ^= square_key(s, h[s], c[s])
    if side == 1:
        key ^= SIDE_KEY
    return key


@njit(cache=True, nogil=True, inline="always")
def leap(h: np.ndarray, c: np.ndarray, p: int, o: int, q: int) -> None:
    # The leapt top man goes to the bottom of the capturer; the start square empties at once.
    hp = h[p]
    c[q] = c[p] | ((c[o] & _ONE) << np.uint64(hp))
    h[q] = hp + 1
    h[p] = 0
    c[p] = 0
    c[o] = c[o] >> _ONE
    h[o] -= 1


@njit(cache=True, nogil=True, inline="always")
def unleap(h: np.ndarray, c: np.ndarray, p: int, o: int, q: int) -> None:
    hq = h[q] - 1
    bit = (c[q] >> np.uint64(hq)) & _ONE
    c[o] = (c[o] << _ONE) | bit
    h[o] += 1
    c[p] = c[q] & ~(_ONE << np.uint64(hq))
    h[p] = hq
    h[q] = 0
    c[q] = 0


@njit(cache=True, nogil=True)
def make_move(h: np.ndarray, c: np.ndarray, mv: np.ndarray, key: np.uint64) -> np.uint64:
    """Play full move ``mv`` on ``h``/``c`` and return the new key (side to move flipped)."""
    n = mv[0]
    for i in range(1, n):
        p = mv[i]
        q = mv[i + 1]
        o = OVER[p, q]
        if o < 0:
            key ^= square_key(p, h[p], c[p]) ^ square_key(q, h[q], c[q])
            h[q] = h[p]
            c[q] = c[p]
            h[p] = 0
            c[p] = 0
            key ^= square_key(q, h[q], c[q])
        else:
            key ^= square_key(p, h[p], c[p]) ^ square_key(o, h[o], c[o]) ^ square_key(q, h[q], c[q])
            leap(h, c, p, o, q)
            key ^= square_key(o, h[o], c[o]) ^ square_key(q, h[q], c[q])
    return key ^ SIDE_KEY


@njit(cache=True, nogil=True)
def unmake_move(h: np.ndarray, c: np.ndarray, mv: np.ndarray) -> None:
    """Take back full move ``mv`` (the caller keeps the old key)."""
    n = mv[0]
    for i in range(n - 1, 0, -1):
        p = mv[i]
        q = mv[i + 1]
        o = OVER[p, q]
        if o < 0:
            h[p] = h[q]
            c[p] = c[q]
            h[q] = 0
            c[q] = 0
        else:
            unleap(h, c, p, o, q)


@intrinsic
def _ctpop(typingctx, x):
    # llvm.ctpop becomes one POPCNT where the host has it (numba compiles for the host CPU).
    if x != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.ctpop", [ir.IntType(64)])
        return builder.call(fn, [args[0]])

    return types.uint64(types.uint64), codegen


@njit(cache=True, nogil=True, inline="always")
def popcount(x: np.uint64) -> int:
    return int(_ctpop(np.uint64(x)))  # type: ignore[call-arg]  # @intrinsic drops the typing-context parameter


@njit(cache=True, nogil=True, inline="always")
def lowest_square(bb: np.uint64) -> int:
    """Square index of the lowest set bit of a non-empty bitboard."""
    bit: int = trailing_zeros(bb)  # type: ignore[call-arg]  # @intrinsic drops the typing-context parameter
    return BIT_SQUARE[bit]


@njit(cache=True, nogil=True)
def occupancy(h: np.ndarray, c: np.ndarray) -> "tuple[np.uint64, np.uint64]":
    """``(White's, Black's)`` bitboards of the stacks each controls."""
    white = np.uint64(0)
    black = np.uint64(0)
    for s in range(50):
        if h[s] != 0:
            if c[s] & _ONE:
                black |= SQUARE_BIT[s]
            else:
                white |= SQUARE_BIT[s]
    return white, black


@njit(cache=True, nogil=True, inline="always")
def plain_sources(own: np.uint64, empty: np.uint64, side: int) -> "tuple[np.uint64, np.uint64]":
    """Stacks of ``own`` with a vacant forward square, per forward direction (``FORWARD`` order)."""
    if side == 0:
        return own & (empty << np.uint64(6)), own & (empty << np.uint64(5))
    return own & (empty >> np.uint64(5)), own & (empty >> np.uint64(6))


@njit(cache=True, nogil=True, inline="always")
def capture_sources(own: np.uint64, opp: np.uint64, empty: np.uint64) -> np.uint64:
    """Stacks of ``own`` with a leap: an ``opp`` stack next to them and a vacant square beyond."""
    up = ((opp << np.uint64(6)) & (empty << np.uint64(12))) | ((opp << np.uint64(5)) & (empty << np.uint64(10)))
    down = ((opp >> np.uint64(5)) & (empty >> np.uint64(10))) | ((opp >> np.uint64(6)) & (empty >> np.uint64(12)))
    return own & (up | down)


@njit(cache=True, nogil=True)
def move_code(mv: np.ndarray) -> np.uint32:
    """A 32-bit identity of a full move (its whole path), for the hash move and killers.

    Only moves of one position are ever compared, so a plain move is its two
    squares (cheap: most moves are plain) and a capture a hash of its path."""
    if mv[0] == 2 and OVER[mv[1], mv[2]] < 0:
        return np.uint32(0x80000000) | (np.uint32(mv[1]) << np.uint32(8)) | np.uint32(mv[2])
    x = np.uint64(mv[0])
    for i in range(1, mv[0] + 1):
        x = x * np.uint64(0x100000001B3) ^ np.uint64(mv[i] + 1)
    return np.uint32(mix64(x) >> np.uint64(33)) | np.uint32(1)  # never 0: 0 means "no move"


@njit(cache=True, nogil=True)
def points(h: np.ndarray, c: np.ndarray, side: int) -> int:
    """Variant II points of ``side``: men of its stacks on the opponent's back row."""
    total = 0
    lo = 0 if side == 0 else 45
    for s in range(lo, lo + 5):
        if h[s] > 0 and int(c[s] & _ONE) == side:
            total += h[s]
    return total
