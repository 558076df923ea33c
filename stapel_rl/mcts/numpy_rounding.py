"""numpy's float32 arithmetic where compiled (numba) code must reproduce it to the last bit.

numpy sums a float32 row pairwise (``pairwise_sum``): Gumbel's root rounds,
compiled for leaf batching (``lanes_compiled``), keep the sums numpy's
``halving.Root`` keeps. The compiled in-tree choice takes ``exp`` and ``log``
in float64, rounded once to float32 (``exp32_scalar``, ``log32_scalar``), so
that its numbers do not depend on which float32 approximation (SIMD or not)
the compiler picks.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from stapel_rl.mcts.qtransforms import SMALLEST

_PAIRWISE_BLOCK = 128  # numpy's PW_BLOCKSIZE


@njit(cache=True, nogil=True)
def _block_sum(a: np.ndarray, start: int, n: int) -> np.float32:
    """numpy's pairwise summation of at most 128 float32: eight running sums, then the rest in turn."""
    if n < 8:
        total = np.float32(0.0)
        for i in range(start, start + n):
            total += a[i]
        return total
    r = np.empty(8, np.float32)
    for j in range(8):
        r[j] = a[start + j]
    i = 8
    while i < n - n % 8:
        for j in range(8):
            r[j] += a[start + i + j]
        i += 8
    total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        total += a[start + i]
        i += 1
    return total


@njit(cache=True, nogil=True)
def pairwise_sum(a: np.ndarray, start: int, n: int) -> np.float32:
    """``a[start:start + n].sum()`` for float32 ``a``, rounded as numpy's pairwise summation rounds it.

    numpy halves a longer run (at a multiple of 8) until the halves fit a block; the halving runs
    here on an explicit stack, as numba's cache does not keep recursive functions safely.
    """
    if n <= _PAIRWISE_BLOCK:
        return _block_sum(a, start, n)
    starts, sizes, state = np.empty(64, np.int64), np.empty(64, np.int64), np.empty(64, np.int64)
    values = np.empty(64, np.float32)
    top, count = 0, 0
    starts[0], sizes[0], state[0] = start, n, 0
    while top >= 0:
        s, m, done = starts[top], sizes[top], state[top]
        top -= 1
        if m <= _PAIRWISE_BLOCK:
            values[count] = _block_sum(a, s, m)
            count += 1
        elif done:  # both halves summed: combine them as the recursion does, left + right
            values[count - 2] = values[count - 2] + values[count - 1]
            count -= 1
        else:
            half = m // 2
            half -= half % 8
            for push_start, push_size, push_state in ((s, m, 1), (s + half, m - half, 0), (s, half, 0)):
                top += 1
                starts[top], sizes[top], state[top] = push_start, push_size, push_state
    return values[0]


@njit(cache=True, nogil=True, inline="always")
def exp32_scalar(x: np.float32) -> np.float32:
    """float32 ``exp`` of float32 ``x``, computed in float64 and rounded once."""
    return np.float32(math.exp(np.float64(x)))


@njit(cache=True, nogil=True, inline="always")
def log32_scalar(x: np.float32) -> np.float32:
    """float32 ``log`` of float32 ``x``, computed in float64 and rounded once."""
    return np.float32(math.log(np.float64(x)))


@njit(cache=True, nogil=True, inline="always")
def mixed_value_scalar(
    raw: np.float32, total: np.float32, visited_prior: np.float32, weighted_q: np.float32
) -> np.float32:
    """``qtransforms.mixed_value`` of one node, in compiled code (float32 throughout)."""
    return (raw + total * (weighted_q / max(visited_prior, SMALLEST))) / (np.float32(1.0) + total)
