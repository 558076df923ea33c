"""Observation planes and canonical action ids."""

import numpy as np
import pytest
from boards import fen as fen_of

from stapel_rl.env import from_fens, init, step
from stapel_rl.env.geometry import FORWARD_DIRECTIONS, JUMP, NEIGHBOR, ROTATE_ACTION
from stapel_rl.env.observation import (
    CELL,
    INPUTS,
    MOVE_PLANES,
    NUM_PLANES,
    PLANES,
    canonical_mask,
    encode,
    encode_squares,
    from_canonical_actions,
    num_planes,
    to_canonical_actions,
)
from stapel_rl.env.sampling import random_legal_actions


def mirror(fen: str) -> str:
    """The position with the board rotated 180 degrees, colours swapped and the other side to move."""
    side, body = fen.split(":")
    stacks = body.split(",")[::-1]
    swap = str.maketrans("wb", "bw")
    return {"W": "B", "B": "W"}[side] + ":" + ",".join(s.translate(swap) for s in stacks)


# Black to move (stacks top first; lower case = the stack's men):
#      a    b    c    d    e    f    g    h    i    j
#  10       b                                              square 1
#   6                            bw                        square 23
#   5                      wbb                             square 28
#   1  w                                                   square 46
BLACK_TO_MOVE = fen_of("B", {1: "b", 23: "bw", 28: "wbb", 46: "w"})


@pytest.mark.parametrize("inputs", sorted(INPUTS))
@pytest.mark.parametrize("variant", ["I", "II"])
def test_black_view_equals_mirrored_white_view(variant, inputs):
    black = from_fens([BLACK_TO_MOVE], variant)
    white = from_fens([mirror(BLACK_TO_MOVE)], variant)
    assert black.current_player[0] == 1 and white.current_player[0] == 0
    np.testing.assert_array_equal(encode(black, inputs=inputs), encode(white, inputs=inputs))
    np.testing.assert_array_equal(canonical_mask(black), white.legal_action_mask)


def test_mirrored_views_along_random_games():
    rng = np.random.default_rng(0)
    state = init("II", 16)
    checked = 0
    for _ in range(120):
        state = step(state, random_legal_actions(state.legal_action_mask, rng))
        black = np.flatnonzero((state.current_player == 1) & (state.capturing < 0) & ~state.done)
        if black.size:
            from stapel_rl.env import take, to_fens

            fens = to_fens(take(state, black))
            mirrored = from_fens([mirror(f) for f in fens], "II")
            mirrored = mirrored.replace(ply=state.ply[black].copy())
            mine = take(state, black)
            np.testing.assert_array_equal(encode(mine, inputs="moves"), encode(mirrored, inputs="moves"))
            np.testing.assert_array_equal(encode(mine), encode(mirrored))
            np.testing.assert_array_equal(canonical_mask(mine), mirrored.legal_action_mask)
            checked += black.size
    assert checked > 200


def test_canonical_actions_round_trip():
    actions = np.arange(200)
    for player in (0, 1):
        p = np.full(200, player)
        canon = to_canonical_actions(actions, p)
        np.testing.assert_array_equal(from_canonical_actions(canon, p), actions)
    np.testing.assert_array_equal(to_canonical_actions(actions, np.zeros(200)), actions)
    # Square n -> 51 - n and direction d -> 3 - d: action of 32-28 (square 32, up-left... up-right).
    assert ROTATE_ACTION[4 * 31 + 1] == 4 * 18 + 2
    assert sorted(set(ROTATE_ACTION)) == list(range(200))


def test_planes_of_a_known_position():
    # White to move. Square 28 holds wbb (White on top of two Black men), 1 holds b, 46 holds w.
    fen = "W:b" + "," * 27 + "wbb" + "," * 18 + "w" + "," * 4
    obs = encode(from_fens([fen], "I"))[0]
    assert obs.shape == (NUM_PLANES, 10, 10) and len(PLANES) == NUM_PLANES
    r, c = divmod(CELL[27], 10)
    plane = {name: obs[i] for i, name in enumerate(PLANES)}
    assert plane["own_at_depth_0"][r, c] == 1 and plane["opp_at_depth_0"][r, c] == 0
    assert plane["opp_at_depth_1"][r, c] == 1 and plane["opp_at_depth_2"][r, c] == 1
    assert plane["own_at_depth_3"][r, c] == 0 and plane["opp_at_depth_3"][r, c] == 0
    assert plane["height"][r, c] == pytest.approx(3 / 20)
    assert plane["own_men"][r, c] == pytest.approx(1 / 20)
    assert plane["opp_men"][r, c] == pytest.approx(2 / 20)
    assert plane["own_at_depth_0"].sum() == 2 and plane["opp_at_depth_0"].sum() == 1
    assert (plane["ones"] == 1).all() and (plane["variant_ii"] == 0).all()


def test_capture_planes_mark_the_capturing_stack():
    # White 37 can leap 32 then 21... a two-leap capture: after the first leap the planes show it.
    fen = "W:" + ",".join({37: "w", 32: "b", 22: "b"}.get(n, "") for n in range(1, 51))
    s = from_fens([fen], "I")
    s = step(s, np.flatnonzero(s.legal_action_mask[0])[:1])
    assert s.capturing[0] == 27 and s.current_player[0] == 0
    obs = encode(s)[0]
    r, c = divmod(CELL[27], 10)
    assert obs[PLANES.index("capturing"), r, c] == 1 and obs[PLANES.index("capturing")].sum() == 1
    r, c = divmod(CELL[31], 10)
    assert obs[PLANES.index("last_leapt"), r, c] == 1


# --- the compact 10x5 layout -----------------------------------------------------------


def test_compact_layout_is_the_grid_on_dark_squares():
    rng = np.random.default_rng(5)
    state = init("II", 64)
    for _ in range(25):
        state = step(state, random_legal_actions(state.legal_action_mask, rng))
    grid, compact = encode(state, "grid"), encode(state, "compact")
    assert compact.shape == (64, NUM_PLANES, 10, 5) and compact.dtype == np.float32
    by_square = compact.reshape(64, NUM_PLANES, 50)
    np.testing.assert_array_equal(grid.reshape(64, NUM_PLANES, 100)[:, :, CELL], by_square)
    # Light squares hold only the whole-board planes (13-17) in the grid layout.
    light = np.setdiff1d(np.arange(100), CELL)
    assert (grid.reshape(64, NUM_PLANES, 100)[:, :13, light] == 0).all()
    np.testing.assert_array_equal(
        grid.reshape(64, NUM_PLANES, 100)[:, 13:, light], np.repeat(by_square[:, 13:, :1], light.size, axis=2)
    )


def test_compact_planes_of_the_initial_position():
    # Variant I, White to move: Black's men on squares 1-20 (rows 0-3), White's on 31-50 (rows 6-9).
    #   row 0  b b b b b        row 5  . . . . .
    #   row 1  b b b b b        row 6  w w w w w
    #   row 2  b b b b b        row 7  w w w w w
    #   row 3  b b b b b        row 8  w w w w w
    #   row 4  . . . . .        row 9  w w w w w
    obs = encode(init("I", 1), "compact")[0]
    own, opp = obs[PLANES.index("own_at_depth_0")], obs[PLANES.index("opp_at_depth_0")]
    np.testing.assert_array_equal(own, np.repeat([[0], [0], [0], [0], [0], [0], [1], [1], [1], [1]], 5, axis=1))
    np.testing.assert_array_equal(opp, own[::-1])
    assert (obs[PLANES.index("height")] == (own + opp) / 20).all()


def test_unknown_layout_is_rejected():
    with pytest.raises(ValueError, match="layout"):
        encode(init("I", 1), "hex")


# --- the planes of the moves both sides have (inputs="moves") -----------------------------


def _squares(plane: np.ndarray) -> "list[int]":
    """Square numbers (1-50) marked on a plane of ``encode_squares``."""
    return [int(i) + 1 for i in np.flatnonzero(plane)]


def test_move_planes_of_a_known_position():
    # White to move: its man on 33 must leap Black's 28 (22 behind it is vacant); Black's 28 could
    # leap 33 (to 39), Black's 19 could step to 23 or 24, Black's 1 is blocked by its own 6 and 7, whose
    # step squares 11 and 12 are vacant; White's 46 and 47 wait (and could step, were there no capture).
    stacks = {33: "w", 28: "b", 19: "b", 1: "b", 6: "b", 7: "b", 46: "w", 47: "w"}
    state = from_fens([fen_of("W", stacks)], "I")
    planes = encode_squares(state, "moves")[0]
    assert planes.shape == (num_planes("moves"), 50) == (22, 50)
    plane = dict(zip(MOVE_PLANES, planes[NUM_PLANES:], strict=True))
    assert _squares(plane["legal_from"]) == [33]
    assert _squares(plane["own_attacked"]) == [33]
    assert _squares(plane["opp_attacked"]) == [28]
    assert _squares(plane["opp_movable"]) == [6, 7, 19, 28]
    np.testing.assert_array_equal(planes[:NUM_PLANES], encode_squares(state)[0])


def test_move_planes_on_the_grid_sit_on_dark_squares():
    state = init("I", 1)
    grid, compact = encode(state, "grid", "moves")[0], encode(state, "compact", "moves")[0]
    assert grid.shape == (22, 10, 10) and compact.shape == (22, 10, 5)
    np.testing.assert_array_equal(grid.reshape(22, 100)[:, CELL], compact.reshape(22, 50))
    # At the start White's front row (31-35) can move, and so could Black's (16-20); nothing is attacked.
    assert _squares(compact[18].reshape(50)) == [31, 32, 33, 34, 35]
    assert compact[19:21].sum() == 0
    assert _squares(compact[21].reshape(50)) == [16, 17, 18, 19, 20]


def _brute_move_planes(state, g: int) -> np.ndarray:
    """The move planes of game ``g`` on board squares, square by square from the step tables."""
    me = int(state.current_player[g])
    top = {
        sq: int(state.colours[g, sq] & np.uint64(1)) for sq in range(50) if state.height[g, sq] > 0
    }  # square -> the colour controlling it

    def leaps(sq: int, d: int) -> bool:
        over, to = NEIGHBOR[sq, d], JUMP[sq, d]
        return to >= 0 and over in top and top[over] != top[sq] and to not in top

    planes = np.zeros((4, 50), dtype=bool)
    planes[0] = state.legal_action_mask[g].reshape(50, 4).any(axis=1)
    for sq, colour in top.items():
        for d in range(4):
            if leaps(sq, d):
                planes[1 if colour != me else 2, NEIGHBOR[sq, d]] = True
            step = NEIGHBOR[sq, d]
            if colour != me and (leaps(sq, d) or (d in FORWARD_DIRECTIONS[colour] and step >= 0 and step not in top)):
                planes[3, sq] = True
    return planes


def test_move_planes_equal_a_square_by_square_count_along_random_games():
    rng = np.random.default_rng(7)
    checked = 0
    for variant in ("I", "II"):
        state = init(variant, 32)
        for _ in range(60):
            planes = encode_squares(state, "moves")[:, NUM_PLANES:]
            for g in np.flatnonzero(~state.done):
                expected = _brute_move_planes(state, int(g))
                if state.current_player[g] == 1:  # the side to move's view: the board rotated
                    expected = expected[:, ::-1]
                np.testing.assert_array_equal(planes[g].astype(bool), expected)
                checked += 1
            state = step(state, random_legal_actions(state.legal_action_mask, rng))
    assert checked > 2000


def test_unknown_inputs_are_rejected():
    with pytest.raises(ValueError, match="inputs must be one of"):
        encode(init("I", 1), inputs="rich")
