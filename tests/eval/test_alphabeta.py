"""The alpha-beta agent: legal actions, tactics found by hand, Variant II points, specs, strength.

Positions are built square by square; every tactical claim a test relies on
is checked by stepping the engine first. Square geometry (RULES.md): square n
is on row (n-1)//5 (row 0 = Black's back row) and column 2k+1 on even rows,
2k on odd rows, k = (n-1) % 5; White moves up (towards row 0).
"""

import subprocess
import sys

import numpy as np
import pytest
from boards import fen

from stapel_rl.env import (
    VARIANT_I,
    apply_move,
    check_actions,
    engine,
    expand_full_moves,
    from_fens,
    game_result,
    legal_moves,
)
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.env.state import concatenate, take
from stapel_rl.eval.agents import make_agent
from stapel_rl.eval.alphabeta import WIN, AlphaBetaAgent, evaluate
from stapel_rl.eval.arena import play_match


def action(square, direction):
    """Action id; direction 0 up-left, 1 up-right, 2 down-left, 3 down-right."""
    return 4 * (square - 1) + direction


UL, UR, DL, DR = 0, 1, 2, 3


def choices(agent, state, seeds=range(5)):
    return {int(agent(state, np.random.default_rng(seed))[0]) for seed in seeds}


def random_positions(variant, rng, games=6, snapshots=(6, 25, 60), mid_captures=3):
    """Positions from random play (some finished), plus a few in the middle of a capture."""
    state = engine.init(variant, games)
    parts, mids = [], []
    for t in range(max(snapshots) + 1):
        if t in snapshots:
            parts.append(state)
        mid = np.flatnonzero((state.capturing >= 0) & ~state.done)
        if mid.size and len(mids) < mid_captures:
            mids.append(take(state, mid[:1]))
        state = engine.step(state, random_legal_actions(state.legal_action_mask, rng))
    return concatenate(parts + mids), len(mids)


@pytest.mark.parametrize("variant", ["I", "II"])
def test_legal_actions_on_random_positions(variant):
    rng = np.random.default_rng(7)
    state, n_mid = random_positions(variant, rng)
    assert n_mid > 0, "no position in the middle of a capture came up: pick another seed"
    agent = AlphaBetaAgent(2)
    actions = agent(state, rng)
    assert actions.shape == (state.batch_size,)
    check_actions(state, actions)  # raises on an illegal action in a live game
    live = np.flatnonzero(~state.done)
    assert state.legal_action_mask[live, actions[live]].all()


def test_depth_one_without_extension_is_legal_too():
    rng = np.random.default_rng(3)
    state, _ = random_positions("I", rng, games=4, snapshots=(10, 40))
    check_actions(state, AlphaBetaAgent(1, quiescence=0)(state, rng))


# Win in 1, Variant I. White to move must capture (one leap either way):
#   32x23 takes the free man on 28; Black's men on 41 and 46 are then stuck
#   (41: 46 is his own, 47 White's, nothing to leap), so Black cannot move.
#   47x36 takes 41 instead; then Black captures 28x37 and plays on.
WIN_IN_ONE = fen("W", {32: "w", 47: "w", 28: "b", 41: "b", 46: "b"})


def test_win_in_one_position_checked_by_engine():
    assert sorted(legal_moves(WIN_IN_ONE)) == ["32x23", "47x36"]
    assert game_result(apply_move(WIN_IN_ONE, "32x23")) == 1
    after = apply_move(WIN_IN_ONE, "47x36")
    assert game_result(after) is None and legal_moves(after) == ["28x37"]


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_finds_win_in_one(depth):
    state = from_fens([WIN_IN_ONE])
    assert choices(AlphaBetaAgent(depth), state) == {action(32, UR)}


def test_win_scores_are_exact_and_prefer_quick_wins():
    after = expand_full_moves(from_fens([WIN_IN_ONE]))
    won = np.flatnonzero(after.state.terminated)
    assert won.size == 1
    # Black to move has no move: lost, from Black's (side to move's) view.
    assert evaluate(take(after.state, won), ply=1)[0] == -(WIN - 1)
    assert evaluate(take(after.state, won), ply=3)[0] == -(WIN - 3)


# A trap, Variant I. White's only man on 33 may go to 28 or 29:
#   33-28 lets Black's man on 22 capture 22x33, and White, with no stack of
#   his own left, cannot move and loses. 33-29 is safe.
#   A one-ply search without the capture extension falls for it: after 33-28
#   Black has a single (forced) move, so Black's mobility looks low.
TRAP = fen("W", {33: "w", 22: "b"})


def test_trap_position_checked_by_engine():
    assert sorted(legal_moves(TRAP)) == ["33-28", "33-29"]
    after = apply_move(TRAP, "33-28")
    assert legal_moves(after) == ["22x33"]
    assert game_result(apply_move(after, "22x33")) == -1  # White to move, no move: Black won
    safe = apply_move(TRAP, "33-29")
    assert all(game_result(apply_move(safe, m)) is None for m in legal_moves(safe))


@pytest.mark.parametrize("depth", [2, 3, 4])
def test_avoids_a_move_that_loses_at_once(depth):
    state = from_fens([TRAP])
    assert choices(AlphaBetaAgent(depth, quiescence=0), state) == {action(33, UR)}
    assert choices(AlphaBetaAgent(depth), state) == {action(33, UR)}


def test_one_ply_without_extension_falls_for_the_trap_and_the_extension_saves_it():
    state = from_fens([TRAP])
    assert choices(AlphaBetaAgent(1, quiescence=0), state) == {action(33, UL)}
    assert choices(AlphaBetaAgent(1), state) == {action(33, UR)}


# Variant II: Black controls no stack, so the game ends as soon as White has
# moved, and points decide. 7-1 or 7-2 puts a man on Black's back row (1
# point: White wins); 40-34 or 40-35 leaves it 0-0 (a draw).
POINTS = fen("W", {7: "w", 40: "wb"})


def test_points_position_checked_by_engine():
    assert sorted(legal_moves(POINTS, "II")) == ["40-34", "40-35", "7-1", "7-2"]
    assert game_result(apply_move(POINTS, "7-1", "II"), "II") == 1
    assert game_result(apply_move(POINTS, "7-2", "II"), "II") == 1
    assert game_result(apply_move(POINTS, "40-34", "II"), "II") == 0


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_variant_two_scores_back_row_points_before_the_end(depth):
    state = from_fens([POINTS], "II")
    picked = choices(AlphaBetaAgent(depth), state, seeds=range(12))
    # Both scoring moves are equally good: the rng picks among them.
    assert picked == {action(7, UL), action(7, UR)}


def test_variant_two_evaluation_counts_points():
    # White to move, White's stack of 2 on Black's back row: 2 points up.
    on_row = from_fens([fen("W", {3: "ww", 40: "w", 11: "b"})], "II")
    off_row = from_fens([fen("W", {8: "ww", 40: "w", 11: "b"})], "II")
    assert on_row.points[0].tolist() == [2, 0]
    assert evaluate(on_row)[0] > evaluate(off_row)[0]
    # The same position seen by Black (Black to move) is worth the negative of its points.
    black_view = from_fens([fen("B", {3: "ww", 40: "w", 11: "b"})], "II")
    assert evaluate(black_view, points_weight=2.0)[0] < 0


# Mid-capture: 32x23 (over 28) is forced; from 23 White may go on over the
# stack on 18 (b on w: taking the top frees the White man under it) or over
# the single man on 19. Freeing the man is worth more material.
MID = fen("W", {32: "w", 28: "b", 18: "bw", 19: "b"})


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_mid_capture_continues_with_the_best_leap(depth):
    assert sorted(legal_moves(MID)) == ["32x23x12", "32x23x14"]
    state = from_fens([MID])
    agent = AlphaBetaAgent(depth)
    assert choices(agent, state) == {action(32, UR)}  # the shared first leap
    mid = engine.step(state, np.array([action(32, UR)]))
    assert mid.capturing[0] == 22 and mid.current_player[0] == 0  # square 23, White still moving
    assert np.flatnonzero(mid.legal_action_mask[0]).tolist() == [action(23, UL), action(23, UR)]
    assert choices(agent, mid) == {action(23, UL)}


def test_same_seed_same_choice():
    rng = np.random.default_rng(11)
    state, _ = random_positions("I", rng, games=3, snapshots=(20,), mid_captures=0)
    agent = AlphaBetaAgent(2)
    a = agent(state, np.random.default_rng(5))
    b = agent(state, np.random.default_rng(5))
    assert (a == b).all()


def test_make_agent_specs():
    agent = make_agent("alphabeta:3")
    assert isinstance(agent, AlphaBetaAgent) and agent.depth == 3 and agent.name == "alphabeta:3"
    assert make_agent("alphabeta").depth == 2
    assert make_agent("alphabeta:4:q=0").quiescence == 0
    for bad in [
        "alphabeta:x",
        "alphabeta:0",
        "alphabeta:-2",
        "alphabeta:2.5",
        "alphabeta:",
        "alphabeta:2:3",
        "alphabeta:2:q=-1",
        "alphabeta:2:depth=3",
    ]:
        with pytest.raises(ValueError):
            make_agent(bad)
    with pytest.raises(ValueError):
        AlphaBetaAgent(0)


def test_importing_agents_does_not_import_the_search():
    code = "import sys, stapel_rl.eval.agents; print('stapel_rl.eval.alphabeta' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_beats_random_play():
    rng = np.random.default_rng(0)
    result = play_match(make_agent("alphabeta:2"), make_agent("random"), "I", 10, rng)
    assert result.score >= 0.8, result.summary()


def test_truncated_games_score_zero_not_a_loss():
    capped = VARIANT_I.with_ply_cap(1)
    # Every move of the trap position reaches the ply cap: both are worth 0, so both get played.
    state = from_fens([TRAP], capped)
    children = expand_full_moves(state).state
    assert children.truncated.all() and (evaluate(children, ply=1) == 0).all()
    assert choices(AlphaBetaAgent(2), state, seeds=range(12)) == {action(33, UL), action(33, UR)}
    # A win still beats a truncation.
    assert choices(AlphaBetaAgent(2), from_fens([WIN_IN_ONE], capped)) == {action(32, UR)}


@pytest.mark.parametrize("variant", ["I", "II"])
@pytest.mark.parametrize("depth, q", [(1, 0), (1, 2), (2, 2), (3, 1)])
def test_full_width_search_chooses_as_alpha_beta_pruning_does(variant, depth, q):
    # The reference is the one-game pruning search the agent used before; the batched
    # full-width values must give the same best moves, so the same draws pick the same action.
    from reference_alphabeta import ReferenceAlphaBeta

    rng = np.random.default_rng(7 + depth)
    state, _ = random_positions(variant, rng, games=4, snapshots=(4, 20, 45), mid_captures=2)
    live = np.flatnonzero(~state.done)
    agent, reference = AlphaBetaAgent(depth, quiescence=q), ReferenceAlphaBeta(depth, quiescence=q)
    moves, values = agent.root_values(take(state, live))
    for j, g in enumerate(live):
        first, bounds = reference.root(take(state, [g]))
        mine = values[moves.parent == j]
        if (first != first[0]).any():
            best = bounds.max()
            assert mine.max() == pytest.approx(best, abs=1e-9)
            np.testing.assert_array_equal(mine > best - 1e-6, bounds > best - 1e-6)  # the same ties
            exact = bounds > best - 1e-6
            np.testing.assert_allclose(mine[exact], bounds[exact], atol=1e-9)
            assert (mine[~exact] <= bounds[~exact] + 1e-9).all()  # pruned moves: the bound holds
    for seed in range(3):
        np.testing.assert_array_equal(
            agent(state, np.random.default_rng(seed)), reference(state, np.random.default_rng(seed))
        )
