"""Compiled full-move generation (maximum capture rule) and perft.

Captures are found by a depth-first walk per stack that plays each leap on the
board and takes it back on the way out, so stacks leapt twice, the vacated
start square and men changing owner all come out of the board itself. Which
stacks can leap at all, and the plain moves, come from the occupancy bitboards.
Constants passed to compiled calls are ``np.int64``, not literals, for compile
time (``stapel_rl.classical.search``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from stapel_rl.classical.board import (
    ALL_SQUARES,
    FORWARD,
    JUMP8,
    MAX_LEAPS,
    MOVE_WIDTH,
    NEIGHBOR8,
    capture_sources,
    leap,
    lowest_square,
    make_move,
    occupancy,
    plain_sources,
    unleap,
    unmake_move,
)

#: Full moves kept per position; positions with more are counted but not all kept.
MAX_MOVES = 512
_ONE = np.uint64(1)


@njit(cache=True, nogil=True)
def _captures_from(h, c, side, start, first_banned, moves, n, best, stack):
    """Add the longest capture paths of the stack on ``start`` to ``moves`` (``n`` kept so far,
    ``best`` leaps each); return the new ``(n, best)``. ``stack`` is ``int8 [3, MAX_LEAPS + 2]``
    scratch: squares of the path, next direction to try, square leapt to get there."""
    opp = 1 - side
    path = stack[0]
    nextdir = stack[1]
    leapt = stack[2]
    path[0] = start
    nextdir[0] = 0
    leapt[0] = first_banned
    level = 0
    found = False  # whether the node at ``level`` has a child
    while level >= 0:
        d = nextdir[level]
        if d == 4:
            if not found and level > 0:  # a complete capture of ``level`` leaps
                if level > best:
                    best = level
                    n = 0
                if level == best:
                    if n < MAX_MOVES:
                        moves[n, 0] = level + 1
                        for i in range(level + 1):
                            moves[n, i + 1] = path[i]
                    n += 1
            if level > 0:
                unleap(h, c, path[level - 1], leapt[level], path[level])
            level -= 1
            found = True  # the parent had this child
            continue
        nextdir[level] = d + 1
        p = path[level]
        q = JUMP8[p, d]
        if q < 0 or h[q] != 0:
            continue
        o = NEIGHBOR8[p, d]
        if o == leapt[level] or h[o] == 0 or int(c[o] & _ONE) != opp:
            continue
        leap(h, c, p, o, q)
        level += 1
        path[level] = q
        leapt[level] = o
        nextdir[level] = 0
        found = False
    return n, best


@njit(cache=True, nogil=True)
def generate(
    h: np.ndarray, c: np.ndarray, side: int, capturing: int, last_leapt: int, moves: np.ndarray, stack: np.ndarray
) -> "tuple[int, int]":
    """Legal full moves into ``moves`` (``int8 [MAX_MOVES, MOVE_WIDTH]``).

    ``capturing >= 0``: the position is in the middle of a capture by that
    square's stack, which may not leap ``last_leapt`` next; the moves are then
    the remaining continuations (paths starting there).

    Returns ``(count, leaps)``: the number of legal moves (possibly over
    ``MAX_MOVES``, of which only the first ``MAX_MOVES`` are stored) and the
    leaps each captures (0 for plain moves).
    """
    if capturing >= 0:
        return _captures_from(h, c, side, capturing, last_leapt, moves, np.int64(0), np.int64(0), stack)
    white, black = occupancy(h, c)
    if side == 0:
        return generate_bb(h, c, side, white, black, moves, stack)
    return generate_bb(h, c, side, black, white, moves, stack)


@njit(cache=True, nogil=True)
def generate_bb(
    h: np.ndarray, c: np.ndarray, side: int, own: np.uint64, opp: np.uint64, moves: np.ndarray, stack: np.ndarray
) -> "tuple[int, int]":
    """``generate`` at a turn's start, given the bitboards of the stacks each side controls."""
    empty = ALL_SQUARES & ~(own | opp)
    leapers = capture_sources(own, opp, empty)
    n = np.int64(0)
    best = np.int64(0)
    while leapers:
        s = lowest_square(leapers)
        leapers &= leapers - np.uint64(1)
        n, best = _captures_from(h, c, side, s, np.int64(-1), moves, n, best, stack)
    if best > 0:
        return n, best
    left, right = plain_sources(own, empty, side)
    movers = left | right
    d0 = FORWARD[side, 0]
    d1 = FORWARD[side, 1]
    while movers:
        s = lowest_square(movers)
        bit = movers & (~movers + np.uint64(1))
        movers ^= bit
        if left & bit:
            moves[n, 0] = 2
            moves[n, 1] = s
            moves[n, 2] = NEIGHBOR8[s, d0]
            n += 1
        if right & bit:
            moves[n, 0] = 2
            moves[n, 1] = s
            moves[n, 2] = NEIGHBOR8[s, d1]
            n += 1
    return n, 0


def new_move_buffer(plies: int) -> np.ndarray:
    """``int8 [plies, MAX_MOVES, MOVE_WIDTH]`` move lists, one per ply of a search."""
    return np.zeros((plies, MAX_MOVES, MOVE_WIDTH), dtype=np.int8)


def new_scratch() -> np.ndarray:
    return np.zeros((3, MAX_LEAPS + 2), dtype=np.int8)


@njit(cache=True, nogil=True)
def _perft(h, c, side, depth, ply, buffer, stack):
    moves = buffer[ply]
    n, _ = generate(h, c, side, np.int64(-1), np.int64(-1), moves, stack)
    if depth == 1:
        return n
    if n > MAX_MOVES:
        raise ValueError("perft: more moves in a position than the buffer keeps")
    total = 0
    for i in range(n):
        make_move(h, c, moves[i], np.uint64(0))
        total += _perft(h, c, 1 - side, depth - 1, ply + 1, buffer, stack)
        unmake_move(h, c, moves[i])
    return total


def perft(h: np.ndarray, c: np.ndarray, side: int, depth: int) -> int:
    """Full-move paths of length ``depth`` from a position (as ``stapel_rl.env.perft``)."""
    if depth <= 0:
        return 1
    h = np.array(h, dtype=np.uint8)
    c = np.array(c, dtype=np.uint64)
    return int(_perft(h, c, int(side), int(depth), 0, new_move_buffer(depth), new_scratch()))
