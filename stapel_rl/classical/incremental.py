"""Make a full move in the search, keeping everything a node reads up to date without a board scan.

Per ply the search keeps the position key, the two occupancy bitboards,
the evaluation's square sum (``evaluation.square_value``) and, with a learned
evaluation, its accumulator (``nnue``). Making a move lifts the squares it
changes out of all of them, changes the mailbox, and puts them back; taking
it back needs only the mailbox (``board.unmake_move``), since the parent's ply
still holds its own values.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from stapel_rl.classical.board import OVER, SIDE_KEY, SQUARE_BIT, leap, square_key
from stapel_rl.classical.evaluation import square_value
from stapel_rl.classical.nnue import add_stack

_ONE = np.uint64(1)


@njit(cache=True, nogil=True, inline="always")
def _lift(h, c, s, key, white, black, squares, weights, acc, emb, net):
    if h[s] != 0:
        key ^= square_key(s, h[s], c[s])
        squares -= square_value(s, h[s], c[s], weights)
        if net:
            add_stack(acc, s, h[s], c[s], emb, -1)
        white &= ~SQUARE_BIT[s]
        black &= ~SQUARE_BIT[s]
    return key, white, black, squares


@njit(cache=True, nogil=True, inline="always")
def _place(h, c, s, key, white, black, squares, weights, acc, emb, net):
    if h[s] != 0:
        key ^= square_key(s, h[s], c[s])
        squares += square_value(s, h[s], c[s], weights)
        if net:
            add_stack(acc, s, h[s], c[s], emb, 1)
        if c[s] & _ONE:
            black |= SQUARE_BIT[s]
        else:
            white |= SQUARE_BIT[s]
    return key, white, black, squares


@njit(cache=True, nogil=True)
def play(
    h: np.ndarray,
    c: np.ndarray,
    mv: np.ndarray,
    ply: int,
    keys: np.ndarray,
    occ: np.ndarray,
    sums: np.ndarray,
    weights: np.ndarray,
    accs: np.ndarray,
    emb: np.ndarray,
    net: bool,
) -> None:
    """Make full move ``mv`` on ``h``/``c``; ``keys``, ``occ`` (``[ply, 2]``), ``sums`` and, with
    ``net``, the accumulators ``accs`` (``[ply, 2, W]``, of embeddings ``emb``) of ``ply + 1`` become
    those of the position after it, from those of ``ply``."""
    acc = accs[ply + 1]
    if net:
        # A loop, not a slice assignment (compile time: see stapel_rl.classical.search).
        for i in range(acc.shape[0]):
            for j in range(acc.shape[1]):
                acc[i, j] = accs[ply, i, j]
    key = keys[ply]
    white = occ[ply, 0]
    black = occ[ply, 1]
    squares = sums[ply]
    n = mv[0]
    for i in range(1, n):
        p = mv[i]
        q = mv[i + 1]
        o = OVER[p, q]
        # q is vacant before every step (a plain move's target, a leap's landing square).
        key, white, black, squares = _lift(h, c, p, key, white, black, squares, weights, acc, emb, net)
        if o < 0:
            h[q] = h[p]
            c[q] = c[p]
            h[p] = 0
            c[p] = 0
        else:
            key, white, black, squares = _lift(h, c, o, key, white, black, squares, weights, acc, emb, net)
            leap(h, c, p, o, q)
            key, white, black, squares = _place(h, c, o, key, white, black, squares, weights, acc, emb, net)
        key, white, black, squares = _place(h, c, q, key, white, black, squares, weights, acc, emb, net)
    keys[ply + 1] = key ^ SIDE_KEY
    occ[ply + 1, 0] = white
    occ[ply + 1, 1] = black
    sums[ply + 1] = squares
