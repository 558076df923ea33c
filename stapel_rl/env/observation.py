"""Observation planes and canonical actions: every player sees the board as White does.

The canonical view of the side to move is the board rotated 180 degrees with
colours swapped when Black is to move (RULES.md), so one network plays both
colours. ``encode`` turns a batch of states into float32 planes
``[B, NUM_PLANES, 10, 10]``; ``PLANES`` names them. Board planes are 0 on
light squares and vacant squares; the last five are constant planes.

====  =====================  ==================================================
idx   name                   value on a dark square (0 where empty)
====  =====================  ==================================================
0-3   own_at_depth_0..3      1 if the man at that depth (0 = top) is the side
                             to move's; plane 0 marks the stacks it controls
4-7   opp_at_depth_0..3      1 if the man at that depth is the opponent's
8     height                 stack height / 20
9     own_men                men of the side to move in the stack / 20
10    opp_men                opponent men in the stack / 20
11    capturing              1 on the stack making a multi-leap capture
12    last_leapt             1 on the square it leapt last (may not leap next)
13    own_points             (whole plane) side to move's Variant II points / 20
14    opp_points             (whole plane) opponent's Variant II points / 20
15    ply_progress           (whole plane) ply / ply cap
16    variant_ii             (whole plane) 1 in Variant II, 0 in Variant I
17    ones                   (whole plane) 1: lets convolutions find the edge
====  =====================  ==================================================

``inputs="moves"`` (``INPUTS``) appends four board planes read off the moves
both sides have, as a network would otherwise have to find them through its
convolutions (captures are compulsory and decide this game):

====  =====================  ==================================================
18    legal_from             1 on the squares the side to move's legal actions
                             start from (its captures alone when it must capture)
19    own_attacked           1 on its stacks the opponent could leap, were it the
                             opponent's turn (a stack beside, a vacant square beyond)
20    opp_attacked           1 on the opponent's stacks it could leap so
21    opp_movable            1 on the opponent's stacks with a leap or a plain
                             move, were it the opponent's turn
====  =====================  ==================================================

Planes 19-21 are the board's geometry alone: the maximum-capture rule and the
limits of a capture under way are in plane 18 only.

Canonical action ids rotate squares and directions: ``to_canonical_actions``
and ``from_canonical_actions`` are each other's inverse (the rotation is an
involution) and the identity when White is to move.
"""

from __future__ import annotations

import numpy as np

from stapel_rl.env.engine import FORWARD_COLUMNS, bitboards
from stapel_rl.env.geometry import (
    COL,
    NUM_DIRECTIONS,
    NUM_SQUARES,
    ROTATE_ACTION,
    ROTATE_SQUARE,
    ROW,
    VALID,
    shift_all,
    unpack_squares,
    unshift_all,
)
from stapel_rl.env.state import State

DEPTHS = 4
PLANES = (
    [f"own_at_depth_{i}" for i in range(DEPTHS)]
    + [f"opp_at_depth_{i}" for i in range(DEPTHS)]
    + ["height", "own_men", "opp_men", "capturing", "last_leapt"]
    + ["own_points", "opp_points", "ply_progress", "variant_ii", "ones"]
)
NUM_PLANES = len(PLANES)
#: Planes 0..12 vary by square; the rest are whole-board constants.
NUM_BOARD_PLANES = 13
#: Board planes of the moves both sides have (``inputs="moves"``), after ``PLANES``.
MOVE_PLANES = ("legal_from", "own_attacked", "opp_attacked", "opp_movable")
#: The planes of each ``inputs`` option of ``encode``, in order.
INPUTS = {"base": tuple(PLANES), "moves": (*PLANES, *MOVE_PLANES)}
#: Spatial shape of each observation layout (see ``encode``).
LAYOUTS = {"grid": (10, 10), "compact": (10, 5)}
#: Flat cell (row * 10 + col) of each square index on the 10x10 grid.
CELL = (ROW * 10 + COL).astype(np.int64)
_SQUARES = np.arange(NUM_SQUARES)
_DEPTH_BITS = np.arange(DEPTHS, dtype=np.uint64)


def num_planes(inputs: str = "base") -> int:
    """Planes of ``encode(..., inputs=inputs)``: 18 (``base``) or 22 (``moves``)."""
    if inputs not in INPUTS:
        raise ValueError(f"inputs must be one of {sorted(INPUTS)}, got {inputs!r}")
    return len(INPUTS[inputs])


def _leapers(movers: np.ndarray, victims: np.ndarray, empty: np.ndarray) -> np.ndarray:
    """``uint64 [B, 4]``: column d, the ``movers`` that could leap a ``victims`` stack in direction d."""
    return movers[:, None] & unshift_all(victims[:, None] & unshift_all(empty))


def move_planes(state: State) -> np.ndarray:
    """The ``MOVE_PLANES`` on board squares: ``bool [B, 4, 50]`` (not yet the side to move's view)."""
    b = state.batch_size
    # From the stacks, as the other planes are (a replay buffer's states carry no bitboards).
    white, black_men = bitboards(state.height, state.colours)
    black = state.current_player == 1
    own = np.where(black, black_men, white)
    opp = np.where(black, white, black_men)
    empty = VALID & ~(white | black_men)
    own_leaps, opp_leaps = _leapers(own, opp, empty), _leapers(opp, own, empty)
    # A leaper's column d stepped once in direction d lands on the stack it leaps.
    own_attacked = np.bitwise_or.reduce(shift_all(opp_leaps), axis=1) & own
    opp_attacked = np.bitwise_or.reduce(shift_all(own_leaps), axis=1) & opp
    opp_steps = opp[:, None] & unshift_all(empty) & FORWARD_COLUMNS[np.where(black, 0, 1)]
    opp_movable = np.bitwise_or.reduce(opp_leaps | opp_steps, axis=1)
    planes = np.empty((b, len(MOVE_PLANES), NUM_SQUARES), dtype=bool)
    planes[:, 0] = state.legal_action_mask.reshape(b, NUM_SQUARES, NUM_DIRECTIONS).any(axis=2)
    planes[:, 1:] = unpack_squares(np.stack([own_attacked, opp_attacked, opp_movable], axis=1) & VALID)
    return planes


def canonical_squares(player: np.ndarray) -> np.ndarray:
    """``int [B, 50]``: the board square shown at each canonical square index."""
    return np.where(np.asarray(player)[:, None] == 1, ROTATE_SQUARE[None, :], _SQUARES[None, :])


def to_canonical_actions(actions: np.ndarray, player: np.ndarray) -> np.ndarray:
    """Board action ids ``[B]`` to the side to move's canonical ids."""
    actions = np.asarray(actions)
    return np.where(np.asarray(player) == 1, ROTATE_ACTION[actions], actions)


def from_canonical_actions(actions: np.ndarray, player: np.ndarray) -> np.ndarray:
    """Canonical action ids ``[B]`` back to board action ids."""
    return to_canonical_actions(actions, player)


def action_ids(actions: object, shape: "tuple[int, ...]" = ()) -> np.ndarray:
    """``int64 [shape]``: ``actions`` as integer action ids, checked; a float (truncated, it would play
    another move), a string or another shape raises ``ValueError`` saying what was given."""
    given = np.asarray(actions)
    if given.shape != shape or not np.issubdtype(given.dtype, np.integer):
        what = "one integer canonical action id" if shape == () else f"integer canonical action ids of shape {shape}"
        raise ValueError(f"actions must be {what}, got {actions!r}")
    return given.astype(np.int64)


def canonical_mask(state: State) -> np.ndarray:
    """``bool [B, 200]`` legal-action mask in canonical action ids."""
    mask = state.legal_action_mask
    return np.where((state.current_player == 1)[:, None], np.take(mask, ROTATE_ACTION, axis=1), mask)


def encode_squares(state: State, inputs: str = "base") -> np.ndarray:
    """Canonical planes on the 50 dark squares only: ``float32 [B, C, 50]``, ``C = num_planes(inputs)``.

    Square ``sq`` of the canonical view is entry ``sq`` (row ``sq // 5``), so a
    reshape to ``[B, C, 10, 5]`` is the compact 10x5 layout; the whole-board
    planes 13-17 hold their value on every square.
    """
    b = state.batch_size
    c = num_planes(inputs)
    player = state.current_player.astype(np.int64)
    # Rotating the board reverses the square order (sq -> 49 - sq).
    black = (player == 1)[:, None]
    height = np.where(black, state.height[:, ::-1], state.height).astype(np.int64)  # [B, 50] canonical
    colours = np.where(black, state.colours[:, ::-1], state.colours)
    # Bit i of colours is 1 for a Black man; flipping makes bit i = "own man" for the side to move.
    flip = np.where(player == 1, np.uint64(0), ~np.uint64(0))[:, None]
    in_stack = (np.uint64(1) << height.astype(np.uint64)) - np.uint64(1)
    own = (colours ^ flip) & in_stack
    opp = ~(colours ^ flip) & in_stack
    own_men = np.bitwise_count(own)

    planes = np.empty((b, c, NUM_SQUARES), dtype=np.float32)
    men = np.stack([own, opp], axis=1)[:, :, None, :]  # [B, 2, 1, 50]
    depth_planes = (men >> _DEPTH_BITS[None, None, :, None]) & np.uint64(1)  # [B, 2, DEPTHS, 50]
    planes[:, : 2 * DEPTHS] = depth_planes.reshape(b, 2 * DEPTHS, NUM_SQUARES)
    planes[:, 8] = height / 20.0
    planes[:, 9] = own_men / 20.0
    planes[:, 10] = (height - own_men) / 20.0
    planes[:, 11:13] = 0.0
    for plane, square in ((11, state.capturing), (12, state.last_leapt)):
        square = square.astype(np.int64)
        g = np.flatnonzero(square >= 0)
        canonical = np.where(player[g] == 1, ROTATE_SQUARE[square[g]], square[g])
        planes[g, plane, canonical] = 1.0
    own_points = state.points[np.arange(b), player]
    opp_points = state.points[np.arange(b), 1 - player]
    scalars = np.stack(
        [
            own_points / 20.0,
            opp_points / 20.0,
            state.ply / float(state.variant.ply_cap),
            np.full(b, float(state.variant.points_decide)),
            np.ones(b),
        ],
        axis=1,
    ).astype(np.float32)
    planes[:, NUM_BOARD_PLANES:NUM_PLANES] = scalars[:, :, None]
    if c > NUM_PLANES:
        extra = move_planes(state)
        planes[:, NUM_PLANES:] = np.where(black[:, :, None], extra[:, :, ::-1], extra)
    return planes


def encode(state: State, layout: str = "grid", inputs: str = "base") -> np.ndarray:
    """Canonical observation planes of the side to move.

    ``layout="grid"`` (the environments' observation): ``float32 [B, C,
    10, 10]``, board planes 0 on light squares. ``layout="compact"``: ``float32
    [B, C, 10, 5]``, only the 50 dark squares (row r, k-th dark square
    of the row), half the cells for a network to convolve over. ``C =
    num_planes(inputs)``: ``PLANES`` (``inputs="base"``), then ``MOVE_PLANES``
    (``inputs="moves"``).
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {sorted(LAYOUTS)}, got {layout!r}")
    planes = encode_squares(state, inputs)
    b, c = state.batch_size, planes.shape[1]
    if layout == "compact":
        return planes.reshape(b, c, *LAYOUTS["compact"])
    # Dark squares of even rows sit on odd columns and vice versa: two strided
    # copies put the 50 squares onto the 10x10 grid (square = 10 * row_pair + 5 * parity + k).
    board = np.r_[0:NUM_BOARD_PLANES, NUM_PLANES:c]
    grid: np.ndarray = np.zeros((b, c, 5, 2, 5, 2), dtype=np.float32)
    by_row = planes.reshape(b, c, 5, 2, 5)
    grid[:, board, :, 0, :, 1] = by_row[:, board, :, 0, :]
    grid[:, board, :, 1, :, 0] = by_row[:, board, :, 1, :]
    grid = grid.reshape(b, c, 100)
    grid[:, NUM_BOARD_PLANES:NUM_PLANES, :] = planes[:, NUM_BOARD_PLANES:NUM_PLANES, :1]
    return grid.reshape(b, c, 10, 10)
