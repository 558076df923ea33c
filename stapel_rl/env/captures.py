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

    mask = np.zeros((num_games, NUM_ACTIONS), dtype=bool)
    depth = np.zeros(num_games, dtype=np.int64)
    level = 0
    while game.size:
        over = NEIGHBOR[pos]
        land = JUMP[pos]
        over_bit = SQUARE_MASK[over]
        land_bit = SQUARE_MASK[land]
        ok = (land >= 0) & (over != last[:, None])
        ok &= (opp[:, None] & over_bit) != _ZERO
        ok &= (emp[:, None] & land_bit) != _ZERO
        row, direction = np.nonzero(ok)
        if row.size == 0:
            break
        level += 1
        if level > MAX_LEAPS:  # every leap takes one of at most 20 opponent men
            raise RuntimeError(f"capture search passed {MAX_LEAPS} leaps: the engine is inconsistent")
        o = over[row, direction]
        t = land[row, direction]
        g = game[row]
        # Men this leap has removed from the leapt stack, this one included.
        removed = (path[row] == o[:, None]).sum(axis=1).astype(np.uint64) + np.uint64(1)
        still_there = removed < height[g, o]
        new_top = (colours[g, o] >> removed) & np.uint64(1)
        o_bit = over_bit[row, direction]
        keeps_opponent = still_there & (new_top == opp_colour[g])
        opp = (opp[row] & ~o_bit) | np.where(keeps_opponent, o_bit, _ZERO)
        emp = (emp[row] | SQUARE_MASK[pos[row]] | np.where(still_there, _ZERO, o_bit)) & ~land_bit[row, direction]
        root = 4 * pos[row] + direction if level == 1 else root[row]
        path = np.concatenate([path[row], o[:, None]], axis=1)
        game, pos, last = g, t, o

        reached = np.zeros(num_games, dtype=bool)
        reached[game] = True
        mask[reached] = False
        mask[game, root] = True
        depth[reached] = level
    return mask, depth
