"""Tests of the batched MCTS (PUCT and Gumbel AlphaZero) in ``stapel_rl.mcts``.

The search runs with the uniform evaluator (uniform prior, value 0), so
whatever it finds comes from the rules and the true results at terminal
nodes. Every position below was worked out by hand from docs/RULES.md; the
tests also check by stepping the engine (a small exhaustive negamax) that
the move the search must find really is the only good one.

Diagrams show the rows that matter, as in test_rules.py: a dark square shows
its number when vacant, else its stack (top man first); rank 10 is Black's
back row. Square n lies on row r = (n - 1) // 5 (rank 10 - r).
"""

import numpy as np
import pytest
from boards import fen
from searches import (
    ALGORITHMS,
    DL,
    DR,
    UL,
    UNIFORM,
    UR,
    action,
    config,
    legal_ids,
    node_path,
    play,
    position,
    random_positions,
    run,
)
from trees import check_tree, negamax

from stapel_rl.env import VARIANT_I, VARIANT_II, concatenate, from_fens, init, legal_moves, step, take
from stapel_rl.mcts import SearchConfig, search

# ------------------------------------------- 1a. Variant I: win at once
#        a   b   c   d   e   f   g   h   i   j
#   9  06      07      08      09      10
#   8      11      12      13      wb      b
#   7  16      17      18      19      w
#   6      21      22      23      w       25
# White to move has three moves, all plain (nothing can be leapt):
#   14-9   wins at once: Black's only stack, 15, cannot move to 20 nor leap
#          it (24 is taken), and may not move backwards.
#   14-10  loses: 15 must leap 10 backwards to 4, and the stack left on 10
#          is Black's (wb loses its top man); White is then lost.
#   24-19  loses: 15 leaps 20 and lands on the vacated 24.
# 20 cannot move: 14 is White's own and leaping 15 would leave the board.
WIN_I = ("W", {14: "wb", 15: "b", 20: "w", 24: "w"})
WIN_I_MOVE = action(14, UL)  # 14-9
WIN_I_OTHERS = [action(14, UR), action(24, UL)]  # 14-10, 24-19


@pytest.mark.parametrize("flip", [False, True], ids=["white", "black"])
def test_variant_i_position_is_as_worked_out(flip):
    s, m = position(*WIN_I, flip)
    assert sorted(legal_ids(s)) == sorted(m(a) for a in [WIN_I_MOVE] + WIN_I_OTHERS)
    if not flip:
        assert sorted(legal_moves(fen(*WIN_I), "I")) == ["14-10", "14-9", "24-19"]
    won = step(s, np.array([m(WIN_I_MOVE)]))
    assert won.terminated[0]
    assert won.rewards[0, s.current_player[0]] == 1
    for a in WIN_I_OTHERS:
        after = step(s, np.array([m(a)]))
        assert not after.done[0] and after.current_player[0] != s.current_player[0]
        # The opponent, to move, wins by force within 8 actions.
        assert negamax(after, 8) == 1.0


@pytest.mark.parametrize("flip", [False, True], ids=["white", "black"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_variant_i_forced_win_found(algorithm, flip):
    s, m = position(*WIN_I, flip)
    out = run(s, algorithm, 200)
    assert out.action[0] == m(WIN_I_MOVE)
    tree = out.tree
    check_tree(tree)
    win = m(WIN_I_MOVE)
    assert tree.children_values[0, 0, win] == pytest.approx(1.0)
    others = [m(a) for a in WIN_I_OTHERS if tree.children_visits[0, 0, m(a)] > 0]
    assert all(tree.children_values[0, 0, a] < 0.5 for a in others)
    if algorithm == "puct":
        assert out.visits[0].argmax() == win
        assert out.visits[0, win] > 0.8 * 200
        assert out.root_value[0] > 0.8
        assert out.search_value[0] == out.root_value[0]
    else:
        # The improved policy puts most mass on the winning move.
        assert out.policy[0].argmax() == win and out.policy[0, win] > 0.5
        # Its value is the win's, weighed by that mass; the mean over the visits to losing moves is lower.
        completed = np.where(out.visits[0] > 0, tree.children_values[0, 0], 0)
        assert out.search_value[0] == pytest.approx((out.policy[0] * completed).sum(), abs=1e-5)
        assert out.search_value[0] > max(0.5, out.root_value[0])


# ------------------------------------------------ 1b. Variant II: points
#        a   b   c   d   e   f   g   h   i   j
#  10      w       02      03      04      05
#   9  06      www     08      09      10
#   ...
#   3  36      37      w       39      40
#   2      41      42      43      44      45
#   1  46      bb      48      49      50
# White to move; Black's only stack stands on White's back row, where it
# has no plain move and nothing to leap, so whatever White plays, Black is
# then without a move and points decide. White has 1 (the man on 1),
# Black 2 (47).
#   7-2    puts 3 more men on Black's back row: 4 to 2, White wins.
#   38-32, 38-33 end the game at 1 to 2: White loses.
#   7-1 is impossible (1 is taken).
POINTS_II = ("W", {1: "w", 7: "www", 38: "w", 47: "bb"})
POINTS_II_MOVE = action(7, UR)  # 7-2
POINTS_II_OTHERS = [action(38, UL), action(38, UR)]  # 38-32, 38-33


@pytest.mark.parametrize("flip", [False, True], ids=["white", "black"])
def test_variant_ii_position_is_as_worked_out(flip):
    s, m = position(*POINTS_II, flip, VARIANT_II)
    me = int(s.current_player[0])
    assert sorted(legal_ids(s)) == sorted(m(a) for a in [POINTS_II_MOVE] + POINTS_II_OTHERS)
    if not flip:
        assert sorted(legal_moves(fen(*POINTS_II), "II")) == ["38-32", "38-33", "7-2"]
    assert s.points[0, me] == 1 and s.points[0, 1 - me] == 2
    won = step(s, np.array([m(POINTS_II_MOVE)]))
    assert won.terminated[0] and won.points[0, me] == 4 and won.rewards[0, me] == 1
    for a in POINTS_II_OTHERS:
        lost = step(s, np.array([m(a)]))
        assert lost.terminated[0] and lost.points[0, me] == 1 and lost.rewards[0, me] == -1


@pytest.mark.parametrize("flip", [False, True], ids=["white", "black"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_variant_ii_deciding_points_secured(algorithm, flip):
    s, m = position(*POINTS_II, flip, VARIANT_II)
    out = run(s, algorithm, 200)
    check_tree(out.tree)
    win = m(POINTS_II_MOVE)
    assert out.action[0] == win
    assert out.tree.children_values[0, 0, win] == pytest.approx(1.0)
    for a in POINTS_II_OTHERS:
        if out.visits[0, m(a)] > 0:
            assert out.tree.children_values[0, 0, m(a)] == pytest.approx(-1.0)
    if algorithm == "puct":
        assert out.root_value[0] > 0.8


# ------------------------------------------------- 2. multi-leap captures
# One forced three-leap capture that takes Black's last men:
#        a   b   c   d   e   f   g   h   i   j
#  10      01      02      03      04      05
#   9  06      b       08      09      10
#   8      11      12      13      14      15
#   7  16      17      b       19      20
#   6      21      22      23      24      25
#   5  26      27      b       29      30
#   4      31      w       33      34      35
# 32x23x12x1, three actions by White; then Black has no man and loses.
# Correct backup: the two mid-capture nodes (White still to move) are worth
# +1 to White. Flipping the sign at every edge would make the first of them
# -1 (and, with two leaps, the root -1).
THREE_LEAPS = ("W", {32: "w", 28: "b", 18: "b", 7: "b"})
THREE_LEAP_ACTIONS = [action(32, UR), action(23, UL), action(12, UL)]


@pytest.mark.parametrize("flip", [False, True], ids=["white", "black"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_forced_multi_leap_values_keep_the_capturing_players_view(algorithm, flip):
    s, m = position(*THREE_LEAPS, flip)
    me = int(s.current_player[0])
    if not flip:
        assert legal_moves(fen(*THREE_LEAPS), "I") == ["32x23x12x1"]
    leaps = [m(a) for a in THREE_LEAP_ACTIONS]
    # Engine: same player between leaps, the game ends with the capture.
    t = s
    for i, a in enumerate(leaps):
        assert legal_ids(t) == [a]
        t = step(t, np.array([a]))
        assert t.current_player[0] == (me if i < 2 else 1 - me)
    assert t.terminated[0] and t.rewards[0, me] == 1

    out = run(s, algorithm, 100, skip_forced=False)  # every leap a node: the sign logic under test
    tree = out.tree
    check_tree(tree)
    assert out.action[0] == leaps[0]
    root, mid1, mid2, end = node_path(tree, leaps)
    assert tree.player[0, mid1] == me and tree.player[0, mid2] == me
    assert tree.player[0, end] == 1 - me and tree.terminal[0, end]
    assert tree.node_values[0, end] == -1.0  # the loser's view
    assert tree.node_values[0, mid2] > 0.9
    assert tree.node_values[0, mid1] > 0.9
    assert tree.children_values[0, root, leaps[0]] > 0.9
    assert out.root_value[0] > 0.9


@pytest.mark.parametrize("flip", [False, True], ids=["white", "black"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_skip_forced_makes_the_whole_capture_one_node(algorithm, flip):
    # The same three-leap capture with skip_forced (the default): the root's only
    # child already holds the position after 32x23x12x1, over, Black to move and lost.
    s, m = position(*THREE_LEAPS, flip)
    me = int(s.current_player[0])
    leaps = [m(a) for a in THREE_LEAP_ACTIONS]
    out = run(s, algorithm, 10)
    tree = out.tree
    check_tree(tree)
    assert out.action[0] == leaps[0]
    assert tree.num_nodes[0] == 2  # root and the end of the capture: no mid-capture nodes
    end = tree.children_index[0, 0, leaps[0]]
    assert tree.player[0, end] == 1 - me and tree.terminal[0, end]
    assert tree.states.height[0, end].sum() == 4 and tree.states.ply[0, end] == 1
    assert tree.node_values[0, end] == -1.0
    assert out.root_value[0] > 0.9


# A choice between two first leaps, both of two-leap captures (2 men each,
# so the maximum capture rule allows both):
#        a   b   c   d   e   f   g   h   i   j
#   4      31      32      w       34      35
#   3  36      37      38      39      w
#   2      41      b       b       b       bb
#   1  46      w       b       49      b
# White: 33, 40, 47. Black: 42, 43, 44, 45 (bb), 48, 50.
#   40x49x38 (first leap 40 down-left over 44, then 49 up-left over 43):
#     42 is stuck (47 and 48 are taken, leaping 47 would leave the board,
#     leaping the White 38 would land on 33); 48 and 50 stand on White's
#     back row and 45 in front of 50, with nothing left to leap (40, 43
#     and 44 are empty now). Black cannot move: White wins at once.
#   47x38x49 (first leap 47 up-right over 42, then 38 down-right over 43):
#     leaves 40 exposed: 44 or 45 leaps it, and Black wins by force
#     (checked below to 8 actions).
# A backup that flipped the sign between the two leaps of one capture would
# rate the winning first leap -1 and play the other one.
TWO_CAPTURES = ("W", {33: "w", 40: "w", 47: "w", 42: "b", 43: "b", 44: "b", 45: "bb", 48: "b", 50: "b"})
TWO_CAPTURES_WIN = [action(40, DL), action(49, UL)]  # 40x49x38
TWO_CAPTURES_LOSE = [action(47, UR), action(38, DR)]  # 47x38x49


@pytest.mark.parametrize("flip", [False, True], ids=["white", "black"])
def test_two_captures_position_is_as_worked_out(flip):
    s, m = position(*TWO_CAPTURES, flip)
    me = int(s.current_player[0])
    if not flip:
        assert sorted(legal_moves(fen(*TWO_CAPTURES), "I")) == ["40x49x38", "47x38x49"]
    win, lose = [m(a) for a in TWO_CAPTURES_WIN], [m(a) for a in TWO_CAPTURES_LOSE]
    assert sorted(legal_ids(s)) == sorted([win[0], lose[0]])
    for leaps in (win, lose):
        mid = step(s, np.array([leaps[0]]))
        assert mid.current_player[0] == me and legal_ids(mid) == [leaps[1]]
    won = play(s, win)
    assert won.terminated[0] and won.rewards[0, me] == 1
    lost = play(s, lose)
    assert not lost.done[0] and lost.current_player[0] == 1 - me
    assert negamax(lost, 8) == 1.0  # the opponent wins by force


@pytest.mark.parametrize("flip", [False, True], ids=["white", "black"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_multi_leap_choice_backs_up_without_flipping_mid_capture(algorithm, flip):
    s, m = position(*TWO_CAPTURES, flip)
    me = int(s.current_player[0])
    win, lose = [m(a) for a in TWO_CAPTURES_WIN], [m(a) for a in TWO_CAPTURES_LOSE]
    out = run(s, algorithm, 200, skip_forced=False)  # mid-capture nodes under test
    tree = out.tree
    check_tree(tree)
    assert out.action[0] == win[0]
    root, mid, end = node_path(tree, win)
    assert tree.player[0, mid] == me and not tree.terminal[0, mid]
    assert tree.player[0, end] == 1 - me and tree.terminal[0, end]
    assert tree.node_values[0, end] == -1.0
    assert tree.node_values[0, mid] > 0.9  # mid-capture: still the capturer's view
    assert tree.children_values[0, root, win[0]] > 0.9
    lose_mid = tree.children_index[0, root, lose[0]]
    if lose_mid > 0:
        assert tree.player[0, lose_mid] == me
        assert tree.children_values[0, root, lose[0]] < tree.children_values[0, root, win[0]] - 0.5
    if algorithm == "puct":
        assert out.root_value[0] > 0.8
        assert out.visits[0, win[0]] > 0.8 * 200
    else:
        assert out.policy[0, win[0]] > 0.9


# ------------------------------------------------ 3. Dirichlet noise: root only


def _assert_uniform(prior, legal):
    n = legal.sum()
    assert n > 0
    np.testing.assert_allclose(prior[legal], 1.0 / n, rtol=1e-6)
    assert (prior[~legal] == 0).all()


@pytest.mark.parametrize("fraction", [0.0, 0.5])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_dirichlet_noise_only_at_the_root(algorithm, fraction):
    s = random_positions(VARIANT_I, 3, 4, seed=1)
    out = search(
        s, UNIFORM, config(algorithm, 48, dirichlet_fraction=fraction, dirichlet_alpha=0.3), np.random.default_rng(7)
    )
    tree = out.tree
    check_tree(tree)
    expanded_interior = 0
    for b in range(tree.batch_size):
        for n in range(1, int(tree.num_nodes[b])):
            if tree.terminal[b, n]:
                assert (tree.children_prior[b, n] == 0).all()
                continue
            _assert_uniform(tree.children_prior[b, n], tree.legal[b, n])
            expanded_interior += 1
        root_prior, root_legal = tree.children_prior[b, 0], tree.legal[b, 0]
        assert (root_prior[~root_legal] == 0).all()
        assert root_prior.sum() == pytest.approx(1.0, abs=1e-5)
        if fraction == 0:
            _assert_uniform(root_prior, root_legal)
        elif algorithm == "puct":
            assert np.abs(root_prior[root_legal] - 1.0 / root_legal.sum()).max() > 1e-3
            # (1 - fraction) of the uniform prior remains under every legal action.
            assert (root_prior[root_legal] >= (1 - fraction) / root_legal.sum() - 1e-6).all()
    assert expanded_interior > 40


# ------------------------------------------------ 4. mixed batches
# Terminal position (White blocked: 36 can neither move to 31 nor leap it):
#        a   b   c   d   e   f   g   h   i   j
#   5  26      b       28      29      30
#   4      b       32      33      34      35
#   3  w       37      38      39      40
BLOCKED_I = fen("W", {36: "w", 31: "b", 27: "b"})


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_mixed_batch_variant_i(algorithm):
    start = init(VARIANT_I, 1)
    mid_game = random_positions(VARIANT_I, 2, 7, seed=9)
    capture = from_fens([fen(*THREE_LEAPS)], VARIANT_I)
    mid_capture = step(capture, np.array([THREE_LEAP_ACTIONS[0]]))  # White still to move
    terminal = from_fens([BLOCKED_I], VARIANT_I)
    s = concatenate([start, take(mid_game, [0]), terminal, mid_capture, take(mid_game, [1])])
    assert s.terminated.tolist() == [False, False, True, False, False]
    sims = 24
    out = search(s, UNIFORM, SearchConfig(num_simulations=sims, algorithm=algorithm), np.random.default_rng(4))
    check_tree(out.tree)
    live = np.flatnonzero(~s.done)
    assert s.legal_action_mask[live, out.action[live]].all()
    np.testing.assert_array_equal(out.visits[live].sum(axis=1), sims)
    np.testing.assert_allclose(out.policy[live].sum(axis=1), 1.0, atol=1e-5)
    assert (out.policy[~s.legal_action_mask] == 0).all()
    # The game that is over: no visits, the value is its result for the side to move.
    assert out.visits[2].sum() == 0 and out.policy[2].sum() == 0
    assert out.root_value[2] == -1.0
    # The game in the middle of a capture continues it (the only legal action) and wins.
    assert out.action[3] == THREE_LEAP_ACTIONS[1]
    assert out.root_value[3] > 0.5


def test_mixed_batch_variant_ii():
    # Black to move and blocked; points 4 (White) to 3 (Black): Black lost.
    finished = from_fens([fen("B", {2: "wbb", 4: "w", 28: "ww", 47: "bww", 49: "wbb"})], VARIANT_II)
    points = from_fens([fen(*POINTS_II)], VARIANT_II)
    s = concatenate([init(VARIANT_II, 1), finished, points, random_positions(VARIANT_II, 1, 6, seed=2)])
    for algorithm in ALGORITHMS:
        out = search(s, UNIFORM, config(algorithm, 64), np.random.default_rng(0))
        check_tree(out.tree)
        live = np.flatnonzero(~s.done)
        assert live.tolist() == [0, 2, 3]
        assert s.legal_action_mask[live, out.action[live]].all()
        assert out.root_value[1] == -1.0 and out.visits[1].sum() == 0
        assert out.action[2] == POINTS_II_MOVE
