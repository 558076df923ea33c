"""Compiled alpha-beta search: negamax with principal-variation search over full moves.

Iterative deepening runs in Python (one compiled call per depth, so each
completed iteration can be reported); everything below the root is compiled.

- Transposition table: ``uint64 [buckets, 4]`` indexed by the low bits of
  the position key (``board.board_key``: whole stacks hashed, plus the
  side); a bucket (32 bytes, one cache line) holds two entries, each the key
  and one word packing move code, score, depth, bound and search age. The
  first entry keeps the deeper result (the costlier one to redo) unless it
  is from an earlier search; whatever it refuses goes to the second, which
  is always overwritten. Mate scores are stored as distance from the node,
  not from the root, so they stay right when the node is met at another ply.
- Move ordering: hash move, then killers and the history heuristic for plain
  moves (captures are mandatory, so a list holds only captures or only plain moves).
- Capture extension: at depth 0 a position whose side to move must capture is
  searched on (the capture is forced and changes the material), up to
  ``MAX_QPLY`` extra plies on a line; only quiet positions are evaluated.
- Exact ends: the side to move without a move has lost (Variant I) or the
  points decide (Variant II), scored ``WIN - ply`` so quicker wins rank
  higher; a game reaching the variant's ply cap is truncated and scores 0.
- Stopping: the node limit is checked at every node (deterministic results),
  the ``stop`` flag every 1024 nodes; a Python timer sets the flag at the
  deadline (the search releases the GIL, so the timer thread runs).

Compile time is what a user waits for on the first search after installing,
so the compiled calls pass constants as ``np.int64(...)``: numba compiles a
callee once more for each literal argument it is given, and a literal at
the top of the search would compile most of it twice. Arrays are copied by
loops, not slice assignment, which would compile numba's broadcasting
errors with their string formatting.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from stapel_rl.classical.board import (
    ALL_SQUARES,
    capture_sources,
    make_move,
    move_code,
    occupancy,
    plain_sources,
    points,
    unmake_move,
)
from stapel_rl.classical.evaluation import evaluate_incremental, mobility_blocked, square_sum
from stapel_rl.classical.incremental import play
from stapel_rl.classical.movegen import MAX_MOVES, generate, generate_bb
from stapel_rl.classical.nnue import Net, forward, refresh

MAX_PLY = 128
MAX_QPLY = 24
WIN = 1_000_000
MATE_BOUND = WIN - 1000
INF = 10 * WIN
EXACT, LOWER, UPPER = 1, 2, 3
#: Indices into the ``stats`` array shared with Python.
NODES, MAX_NODES, ABORT, ROOT_PLY, PLY_CAP, POINTS_DECIDE, SELDEPTH, AGE = range(8)

# Fields of a frame of the explicit search stack (one row per ply). The search is a loop over
# that stack rather than a recursive function: numba cannot load recursive functions from its
# on-disk cache (they crash), and the JIT cost must be paid once, not per process.
DEPTH, ALPHA, BETA, BEST, ALPHA0, COUNT, LEAPS, NEXT, MOVE, QPLY, MODE, SIDE, BEST_CODE = range(13)
FRAME_FIELDS = 16
FULL, NULL_WINDOW, RESEARCH = 0, 1, 2

Tables = namedtuple(
    "Tables",
    "moves order index codes frames keys occ sums tt killers history stats stop weights gscratch "
    "net accs emb bias w1 b1 w2 head",
)


def new_tables(weights: np.ndarray, tt_bits: int = 20, net: "Net | None" = None) -> Tables:
    """All the search's working memory, allocated once per searcher; the leaves are valued by the
    hand-written ``weights``, plus the learned correction ``net`` (``nnue``) if given."""
    size = 1 << max(tt_bits, 2)
    arrays = net or Net.off()
    return Tables(
        moves=np.zeros((MAX_PLY, MAX_MOVES, 22), np.int8),
        order=np.zeros((MAX_PLY, MAX_MOVES), np.int64),
        index=np.zeros((MAX_PLY, MAX_MOVES), np.int16),
        codes=np.zeros((MAX_PLY, MAX_MOVES), np.uint32),
        frames=np.zeros((MAX_PLY, FRAME_FIELDS), np.int64),
        keys=np.zeros(MAX_PLY, np.uint64),
        occ=np.zeros((MAX_PLY, 2), np.uint64),
        sums=np.zeros(MAX_PLY, np.int64),
        tt=np.zeros((size // 2, 4), np.uint64),
        killers=np.zeros((MAX_PLY, 2), np.uint32),
        history=np.zeros((50, 50), np.int64),
        stats=np.zeros(8, np.int64),
        stop=np.zeros(1, np.int8),
        weights=np.ascontiguousarray(weights, dtype=np.int64),
        gscratch=np.zeros((3, 22), np.int8),
        net=np.array([net is not None]),
        accs=np.zeros((MAX_PLY, 2, arrays.width), np.int32),
        emb=arrays.emb,
        bias=arrays.bias,
        w1=arrays.w1,
        b1=arrays.b1,
        w2=arrays.w2,
        head=arrays.head,
    )


@njit(cache=True, nogil=True, inline="always")
def _evaluate(t, p, side):
    value = evaluate_incremental(side, t.occ[p, 0], t.occ[p, 1], t.sums[p], t.weights)
    if t.net[0]:  # the learned correction (nnue)
        mobility, blocked = mobility_blocked(t.occ[p, 0], t.occ[p, 1])
        value += forward(t.accs[p], side, mobility, blocked, t.w1, t.b1, t.w2, t.head)
        return min(max(value, -MATE_BOUND // 2), MATE_BOUND // 2)  # never taken for a proven result
    return value


@njit(cache=True, nogil=True, inline="always")
def _to_tt(score, ply):
    if score > MATE_BOUND:
        return score + ply
    if score < -MATE_BOUND:
        return score - ply
    return score


@njit(cache=True, nogil=True, inline="always")
def _from_tt(score, ply):
    if score > MATE_BOUND:
        return score - ply
    if score < -MATE_BOUND:
        return score + ply
    return score


# The data word: move code (bits 0-31), score + SCORE_BIAS (32-52), depth (53-59), bound (60-61),
# age (62-63). Stored scores are within +-WIN (mate scores are made ply-independent first).
SCORE_BIAS = 1 << 20
assert WIN < SCORE_BIAS and MAX_PLY <= 128


@njit(cache=True, nogil=True, inline="always")
def _pack(code, score, depth, flag, age):
    return (
        np.uint64(code)
        | (np.uint64(score + SCORE_BIAS) << np.uint64(32))
        | (np.uint64(depth) << np.uint64(53))
        | (np.uint64(flag) << np.uint64(60))
        | (np.uint64(age & 3) << np.uint64(62))
    )


@njit(cache=True, nogil=True, inline="always")
def _unpack(data):
    """``(move code, score, depth, bound)`` of a data word."""
    return (
        np.uint32(data & np.uint64(0xFFFFFFFF)),
        np.int64((data >> np.uint64(32)) & np.uint64(0x1FFFFF)) - SCORE_BIAS,
        np.int64((data >> np.uint64(53)) & np.uint64(0x7F)),
        np.int64((data >> np.uint64(60)) & np.uint64(3)),
    )


@njit(cache=True, nogil=True, inline="always")
def _find(t, key):
    """``(bucket, column of the entry's key)`` for ``key``; column -1 if it is not stored."""
    b = key & np.uint64(t.tt.shape[0] - 1)
    if t.tt[b, 0] == key:
        return b, 0
    if t.tt[b, 2] == key:
        return b, 2
    return b, -1


@njit(cache=True, nogil=True, inline="always")
def tt_move(t, key):
    """The hash move code stored for ``key``, 0 if none."""
    b, col = _find(t, key)
    if col < 0:
        return np.uint32(0)
    return np.uint32(t.tt[b, col + 1] & np.uint64(0xFFFFFFFF))


@njit(cache=True, nogil=True, inline="always")
def _store(t, key, data, depth, age):
    b = key & np.uint64(t.tt.shape[0] - 1)
    kept = t.tt[b, 1]
    kept_depth = np.int64((kept >> np.uint64(53)) & np.uint64(0x7F))
    kept_age = np.int64(kept >> np.uint64(62))
    if t.tt[b, 0] == key or depth >= kept_depth or kept_age != (age & 3):
        t.tt[b, 0] = key
        t.tt[b, 1] = data
    else:
        t.tt[b, 2] = key
        t.tt[b, 3] = data


@njit(cache=True, nogil=True)
def _terminal(h, c, side, ply, points_decide):
    if points_decide:
        diff = points(h, c, side) - points(h, c, 1 - side)
        if diff == 0:
            return 0
        return (WIN - ply) if diff > 0 else -(WIN - ply)
    return -(WIN - ply)


@njit(cache=True, nogil=True)
def _order_moves(t, ply, n, hash_move, leaps):
    moves = t.moves[ply]
    for i in range(n):
        code = move_code(moves[i])
        t.codes[ply, i] = code
        t.index[ply, i] = i
        if code == hash_move:
            score = 1 << 40
        elif leaps > 0:
            score = 0
        elif code == t.killers[ply, 0]:
            score = 1 << 31
        elif code == t.killers[ply, 1]:
            score = 1 << 30
        else:
            score = t.history[moves[i, 1], moves[i, 2]]
        t.order[ply, i] = score


@njit(cache=True, nogil=True, inline="always")
def _pick(t, ply, i, n):
    # Selection sort one step at a time: most nodes cut off after a move or two.
    best = i
    for j in range(i + 1, n):
        if t.order[ply, j] > t.order[ply, best]:
            best = j
    if best != i:
        tmp = t.order[ply, i]
        t.order[ply, i] = t.order[ply, best]
        t.order[ply, best] = tmp
        k = t.index[ply, i]
        t.index[ply, i] = t.index[ply, best]
        t.index[ply, best] = k
    return t.index[ply, i]


@njit(cache=True, nogil=True)
def _enter(h, c, p, t):
    """Start the node at ply ``p`` (frame set by its parent); ``(value, True)`` when it needs no
    move searched, else ``(0, False)`` with its moves generated and ordered."""
    f = t.frames[p]
    stats = t.stats
    stats[NODES] += 1
    if stats[NODES] >= stats[MAX_NODES] or ((stats[NODES] & 1023) == 0 and t.stop[0] != 0):
        stats[ABORT] = 1
    if stats[ABORT] != 0:
        return 0, True
    if p > stats[SELDEPTH]:
        stats[SELDEPTH] = p
    side = f[SIDE]
    own = t.occ[p, side]
    opp = t.occ[p, 1 - side]
    empty = ALL_SQUARES & ~(own | opp)
    # Only the bitboards until the node is known to need its move list: most are leaves or TT hits.
    capture = capture_sources(own, opp, empty) != 0
    if not capture:
        left, right = plain_sources(own, empty, side)
        if (left | right) == 0:
            return _terminal(h, c, side, p, stats[POINTS_DECIDE] != 0), True
    if stats[ROOT_PLY] + p >= stats[PLY_CAP]:
        return 0, True
    depth = f[DEPTH]
    if (depth <= 0 and not capture) or p >= MAX_PLY - 2 or f[QPLY] >= MAX_QPLY:
        return _evaluate(t, p, side), True
    if depth <= 0:
        f[QPLY] += 1
        f[DEPTH] = depth = 0
    key = t.keys[p]
    b, col = _find(t, key)
    hash_move = np.uint32(0)
    if col >= 0:
        hash_move, s, stored_depth, flag = _unpack(t.tt[b, col + 1])
        if stored_depth >= depth:
            s = _from_tt(s, p)
            if flag == EXACT or (flag == LOWER and s >= f[BETA]) or (flag == UPPER and s <= f[ALPHA]):
                return s, True
    n, leaps = generate_bb(h, c, side, own, opp, t.moves[p], t.gscratch)
    n = min(n, MAX_MOVES)
    _order_moves(t, p, n, hash_move, leaps)
    f[COUNT] = n
    f[LEAPS] = leaps
    f[NEXT] = 0
    f[BEST] = -INF
    f[ALPHA0] = f[ALPHA]
    f[BEST_CODE] = 0
    return 0, False


@njit(cache=True, nogil=True)
def _push(h, c, p, t, mode):
    """Play the node's next move (or, for a re-search, keep the one played) and set up the child."""
    f = t.frames[p]
    if mode != RESEARCH:
        k = _pick(t, p, f[NEXT], f[COUNT])
        f[MOVE] = k
        play(h, c, t.moves[p, k], p, t.keys, t.occ, t.sums, t.weights, t.accs, t.emb, t.net[0])
    f[MODE] = mode
    g = t.frames[p + 1]
    g[DEPTH] = f[DEPTH] - 1
    g[QPLY] = f[QPLY]
    g[SIDE] = 1 - f[SIDE]
    g[BETA] = -f[ALPHA]
    g[ALPHA] = -f[ALPHA] - 1 if mode == NULL_WINDOW else -f[BETA]


@njit(cache=True, nogil=True)
def _finish(p, t):
    f = t.frames[p]
    best = f[BEST]
    flag = UPPER if best <= f[ALPHA0] else (LOWER if best >= f[BETA] else EXACT)
    age = t.stats[AGE]
    _store(t, t.keys[p], _pack(f[BEST_CODE], _to_tt(best, p), f[DEPTH], flag, age), f[DEPTH], age)
    return best


@njit(cache=True, nogil=True)
def negamax(h, c, side, key, depth, alpha, beta, ply, t):
    """Value of the position (``side`` to move, ``ply`` from the root) within ``(alpha, beta)``.

    ``h``/``c`` are changed during the search and restored on return, also on an abort (then 0).
    """
    base = ply
    p = ply
    f = t.frames[p]
    f[DEPTH] = depth
    f[ALPHA] = alpha
    f[BETA] = beta
    f[QPLY] = 0
    f[SIDE] = side
    t.keys[p] = key
    t.occ[p, 0], t.occ[p, 1] = occupancy(h, c)
    t.sums[p] = square_sum(h, c, t.weights)
    if t.net[0]:
        refresh(h, c, t.accs[p], t.emb, t.bias)
    while True:
        v, resolved = _enter(h, c, p, t)
        if not resolved:
            _push(h, c, p, t, np.int64(FULL))
            p += 1
            continue
        while True:  # hand v up the stack until some node has another move to search
            if p == base:
                return v
            p -= 1
            v = -v
            f = t.frames[p]
            if t.stats[ABORT] != 0:
                for q in range(p, base - 1, -1):
                    unmake_move(h, c, t.moves[q, t.frames[q, MOVE]])
                return 0
            if f[MODE] == NULL_WINDOW and f[ALPHA] < v < f[BETA]:
                _push(h, c, p, t, np.int64(RESEARCH))
                p += 1
                break
            k = f[MOVE]
            mv = t.moves[p, k]
            unmake_move(h, c, mv)
            cutoff = False
            if v > f[BEST]:
                f[BEST] = v
                f[BEST_CODE] = t.codes[p, k]
                if v > f[ALPHA]:
                    f[ALPHA] = v
                    if v >= f[BETA]:
                        cutoff = True
                        if f[LEAPS] == 0:
                            code = t.codes[p, k]
                            if t.killers[p, 0] != code:
                                t.killers[p, 1] = t.killers[p, 0]
                                t.killers[p, 0] = code
                            t.history[mv[1], mv[2]] += f[DEPTH] * f[DEPTH]
            f[NEXT] += 1
            if cutoff or f[NEXT] >= f[COUNT]:
                v = _finish(p, t)
                continue
            _push(h, c, p, t, np.int64(NULL_WINDOW))
            p += 1
            break


@njit(cache=True, nogil=True)
def search_root(h, c, side, key, depth, n, root_index, root_scores, t):
    """One iteration over the root moves ``t.moves[0][root_index[:n]]`` in that order.

    Returns ``(best score, position in root_index of the best move)``; on an
    abort the best of the moves whose search completed (-1 if none did).
    """
    alpha = -INF
    best = -INF
    best_i = -1
    for i in range(n):
        mv = t.moves[0, root_index[i]]
        child = make_move(h, c, mv, key)
        if i == 0:
            v = -negamax(h, c, 1 - side, child, depth - 1, -INF, -alpha, np.int64(1), t)
        else:
            v = -negamax(h, c, 1 - side, child, depth - 1, -alpha - 1, -alpha, np.int64(1), t)
            if v > alpha:
                v = -negamax(h, c, 1 - side, child, depth - 1, -INF, -alpha, np.int64(1), t)
        unmake_move(h, c, mv)
        if t.stats[ABORT] != 0:
            break
        root_scores[i] = v
        if v > best:
            best = v
            best_i = i
            alpha = v
    return best, best_i


@njit(cache=True, nogil=True)
def principal_variation(h, c, side, key, first, out, t):
    """Write the line ``first`` then the hash moves into ``out`` (``int8 [L, 22]``); return its length."""
    h = h.copy()
    c = c.copy()
    moves = t.moves[MAX_PLY - 1]
    for j in range(out.shape[1]):
        out[0, j] = first[j]
    key = make_move(h, c, first, key)
    side = 1 - side
    length = 1
    while length < out.shape[0]:
        code = tt_move(t, key)
        if code == 0:
            break
        n, _ = generate(h, c, side, np.int64(-1), np.int64(-1), moves, t.gscratch)
        found = -1
        for i in range(min(n, MAX_MOVES)):
            if move_code(moves[i]) == code:
                found = i
                break
        if found < 0:
            break
        for j in range(out.shape[1]):
            out[length, j] = moves[found, j]
        key = make_move(h, c, moves[found], key)
        side = 1 - side
        length += 1
    return length
