"""Maximum-capture search over capture paths, for many games at once.

Every partial capture path of every game is one row of a frontier of arrays;
one level of the search expands all rows by one leap in all four directions
with a few array operations. The frontier carries per row the board as the
capture left it (as bitboards of opponent-controlled and vacant squares) plus
the squares leapt so far, which tells how many men a stack has already lost
when it is leapt again. Searching level by level, the deepest level any row
of a game reaches is its maximum capture, and the first leaps of the rows on
that level are the game's legal actions.

The search enumerates paths (not positions), which is cheap because captures
in real games are short and few.
"""

from __future__ import annotations

import numpy as np

from stapel_rl.env.geometry import JUMP, NEIGHBOR, NUM_ACTIONS, SQUARE_MASK, unpack_squares

_ZERO = np.uint64(0)
MAX_LEAPS = 20
#: OVER_BITS[sq, d], LAND_BITS[sq, d]: the bit of the square leapt and of the landing square of a
#: leap from ``sq`` in direction ``d``; both 0 where the landing square is off the board.
_ON_BOARD = JUMP >= 0
OVER_BITS = np.where(_ON_BOARD, SQUARE_MASK[NEIGHBOR], _ZERO).astype(np.uint64)
LAND_BITS = np.where(_ON_BOARD, SQUARE_MASK[JUMP], _ZERO).astype(np.uint64)
#: A square's bit, and 0 for index -1 (no square): ``_MASK_OR_NONE[last_leapt]``.
_MASK_OR_NONE = np.append(SQUARE_MASK, _ZERO)


def max_capture_mask(
    height: np.ndarray,
    colours: np.ndarray,
    player: np.ndarray,
    sources: np.ndarray,
    last_leapt: np.ndarray,
    opponent: np.ndarray,
    empty: np.ndarray,
) -> "tuple[np.ndarray, np.ndarray]":
    """Legal first leaps under the maximum-capture rule for G games.

    Args:
        height: ``uint8 [G, 50]`` stack heights.
        colours: ``uint64 [G, 50]`` stack colours, top man at bit 0 (1 = Black).
        player: ``int8 [G]`` capturing colour.
        sources: ``uint64 [G]`` bitboard of the stacks that have a first leap
            (every game must have at least one).
        last_leapt: ``int [G]`` square that may not be leapt first (-1: none).
        opponent: ``uint64 [G]`` bitboard of opponent-controlled stacks.
        empty: ``uint64 [G]`` bitboard of vacant squares.

    Returns:
        ``bool [G, 200]`` legal action mask and ``int [G]`` maximum number of
        men captured.
    """
    num_games = height.shape[0]
    game, pos = np.nonzero(unpack_squares(sources))
    last = np.asarray(last_leapt, dtype=np.int64)[game]
    opp = opponent[game]
    emp = empty[game]
    root = np.zeros(game.shape[0], dtype=np.int64)
    path = np.zeros((game.shape[0], 0), dtype=np.int64)
    opp_colour = (1 - np.asarray(player, dtype=np.int64)).astype(np.uint64)

    depth = np.zeros(num_games, dtype=np.int64)
    reached: list[
        tuple[np.ndarray, np.ndarray]
    ] = []  # per level: the games and first leaps of the paths that reached it
    while game.size:
        # The stacks each row may leap (not the one it just leapt) and the squares it may land on.
        leapable = opp & ~_MASK_OR_NONE[last]
        ok = ((leapable[:, None] & OVER_BITS[pos]) != _ZERO) & ((emp[:, None] & LAND_BITS[pos]) != _ZERO)
        row, direction = np.nonzero(ok)
        if row.size == 0:
            break
        if len(reached) == MAX_LEAPS:  # every leap takes one of at most 20 opponent men
            raise RuntimeError(f"capture search passed {MAX_LEAPS} leaps: the engine is inconsistent")
        p = pos[row]
        o = NEIGHBOR[p, direction]
        g = game[row]
        # Men this leap has removed from the leapt stack, this one included.
        removed = (path[row] == o[:, None]).sum(axis=1).astype(np.uint64) + np.uint64(1)
        still_there = removed < height[g, o]
        o_bit = OVER_BITS[p, direction]
        keeps_opponent = still_there & (((colours[g, o] >> removed) & np.uint64(1)) == opp_colour[g])
        opp = (opp[row] & ~o_bit) | np.where(keeps_opponent, o_bit, _ZERO)
        emp = (emp[row] | SQUARE_MASK[p] | np.where(still_there, _ZERO, o_bit)) & ~LAND_BITS[p, direction]
        root = 4 * p + direction if not reached else root[row]
        path = np.concatenate([path[row], o[:, None]], axis=1)
        game, pos, last = g, JUMP[p, direction], o
        depth[game] = len(reached) + 1
        reached.append((game, root))
    # A game's legal first leaps start its paths of the deepest level it reached.
    mask = np.zeros((num_games, NUM_ACTIONS), dtype=bool)
    for level, (g, first) in enumerate(reached, start=1):
        deepest = depth[g] == level
        mask[g[deepest], first[deepest]] = True
    return mask, depth
