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

import dataclasses
import importlib

import numpy as np
import pytest
from boards import fen
from trees import check_tree, negamax

from stapel_rl.env import VARIANT_I, VARIANT_II, concatenate, from_fens, init, legal_moves, step, take
from stapel_rl.mcts import SearchConfig, allocate, gumbel, halving, qtransforms, search, subtree
from stapel_rl.mcts.expand import softmax_live
from stapel_rl.mcts.tree import ILLEGAL_VALUE
from stapel_rl.models.evaluator import Evaluation, UniformEvaluator

ALGORITHMS = ("puct", "gumbel")
UNIFORM = UniformEvaluator()
UL, UR, DL, DR = 0, 1, 2, 3


# ---------------------------------------------------------------- helpers


def action(square, direction):
    """Action id; direction 0 up-left, 1 up-right, 2 down-left, 3 down-right."""
    return 4 * (square - 1) + direction


def mirrored(side, stacks):
    """The same position seen from the other side: board turned 180 degrees, colours swapped."""
    swap = {"w": "b", "b": "w"}
    return {"W": "B", "B": "W"}[side], {51 - n: "".join(swap[m] for m in s) for n, s in stacks.items()}


def mirrored_action(a):
    return action(51 - (a // 4 + 1), 3 - a % 4)


def position(side, stacks, flip, variant=VARIANT_I):
    """(state, action map): the position, or its mirror image with actions mapped to match."""
    if flip:
        side, stacks = mirrored(side, stacks)
        return from_fens([fen(side, stacks)], variant), mirrored_action
    return from_fens([fen(side, stacks)], variant), lambda a: a


def config(algorithm, sims, **kw):
    """Deterministic choice: no Dirichlet noise, PUCT plays the most visited action."""
    kw = {"temperature": 0.0, "dirichlet_fraction": 0.0, **kw}
    return SearchConfig(num_simulations=sims, algorithm=algorithm, **kw)


def run(state, algorithm, sims, seed=0, **kw):
    return search(state, UNIFORM, config(algorithm, sims, **kw), np.random.default_rng(seed))


def legal_ids(state, game=0):
    return np.flatnonzero(state.legal_action_mask[game]).tolist()


def play(state, actions):
    for a in actions:
        state = step(state, np.array([a]))
    return state


def random_positions(variant, batch, plies, seed):
    """``batch`` games after ``plies`` random actions each (live games only, at a decision point)."""
    rng = np.random.default_rng(seed)
    s = init(variant, batch)
    for _ in range(plies):
        live = ~s.done
        acts = np.zeros(batch, np.int64)
        for g in np.flatnonzero(live):
            acts[g] = rng.choice(legal_ids(s, g))
        s = step(s, acts)
    assert not s.done.any()
    return s


def node_path(tree, actions, game=0):
    """Node indices reached from the root by ``actions`` (each must be expanded)."""
    nodes = [0]
    for a in actions:
        child = int(tree.children_index[game, nodes[-1], a])
        assert child > 0, f"action {a} from node {nodes[-1]} not expanded"
        nodes.append(child)
    return nodes


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


# ------------------------------------------------ 4. visit counts


@pytest.mark.parametrize("batch", [1, 3, 8])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_root_visits_sum_to_simulations(algorithm, batch):
    for sims, plies, variant in ((1, 0, VARIANT_I), (17, 3, VARIANT_I), (40, 5, VARIANT_II)):
        s = random_positions(variant, batch, plies, seed=batch + sims)
        out = search(s, UNIFORM, SearchConfig(num_simulations=sims, algorithm=algorithm), np.random.default_rng(sims))
        np.testing.assert_array_equal(out.visits.sum(axis=1), sims)
        np.testing.assert_array_equal(out.tree.children_visits[:, 0].sum(axis=1), sims)
        np.testing.assert_array_equal(out.tree.node_visits[:, 0], sims + 1)
        assert (out.visits[~s.legal_action_mask] == 0).all()
        assert s.legal_action_mask[np.arange(batch), out.action].all()
        assert out.policy.shape == (batch, 200) and out.visits.shape == (batch, 200)
        np.testing.assert_allclose(out.policy.sum(axis=1), 1.0, atol=1e-5)
        assert (out.policy[~s.legal_action_mask] == 0).all()
        np.testing.assert_allclose(out.root_value, out.tree.node_values[:, 0])
        check_tree(out.tree)


# ------------------------------------------------ 5. determinism


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_same_seed_same_search(algorithm):
    s = random_positions(VARIANT_I, 4, 2, seed=3)
    cfg = SearchConfig(num_simulations=48, algorithm=algorithm, temperature=1.0, dirichlet_fraction=0.25)
    first = search(s, UNIFORM, cfg, np.random.default_rng(11))
    again = search(s, UNIFORM, cfg, np.random.default_rng(11))
    # A third run in the second one's arrays (``buffer``) must not see their old contents.
    third = search(s, UNIFORM, cfg, np.random.default_rng(11), buffer=again.tree)
    for other in (again, third):
        np.testing.assert_array_equal(first.action, other.action)
        np.testing.assert_array_equal(first.visits, other.visits)
        np.testing.assert_array_equal(first.policy, other.policy)
        np.testing.assert_array_equal(first.root_value, other.root_value)


def test_different_seed_different_puct_visits():
    s = random_positions(VARIANT_I, 4, 2, seed=3)
    cfg = SearchConfig(num_simulations=64, algorithm="puct", temperature=1.0, dirichlet_fraction=0.25)
    visits = [search(s, UNIFORM, cfg, np.random.default_rng(seed)).visits for seed in (1, 2, 3)]
    assert not np.array_equal(visits[0], visits[1])
    assert not np.array_equal(visits[1], visits[2])


# ------------------------------------------------ 6. subtree reuse


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_subtree_reuse_keeps_statistics_and_adds_simulations(algorithm):
    batch, sims = 3, 64
    s = random_positions(VARIANT_I, batch, 2, seed=5)
    cfg = SearchConfig(num_simulations=sims, algorithm=algorithm, temperature=0.0)
    rng = np.random.default_rng(0)
    out = search(s, UNIFORM, cfg, rng)
    games = np.arange(batch)
    child = out.tree.children_index[games, 0, out.action]
    assert (child > 0).all()
    child_visits = out.tree.node_visits[games, child].copy()
    child_values = out.tree.node_values[games, child].copy()
    grandchild_visits = out.tree.children_visits[games, child].copy()
    grandchild_values = out.tree.children_values[games, child].copy()
    grandchild_prior = out.tree.children_prior[games, child].copy()

    after = step(s, out.action)
    capacity = 2 * (sims + 1)
    tree, reused = subtree(out.tree, out.action, after, capacity, sims + 1)
    assert reused.all()
    assert tree.capacity == capacity
    check_tree(tree)
    np.testing.assert_array_equal(tree.node_visits[:, 0], child_visits)
    np.testing.assert_array_equal(tree.node_values[:, 0], child_values)
    np.testing.assert_array_equal(tree.children_visits[:, 0], grandchild_visits)
    np.testing.assert_array_equal(tree.children_values[:, 0], grandchild_values)
    np.testing.assert_array_equal(tree.children_prior[:, 0], grandchild_prior)
    np.testing.assert_array_equal(tree.states.height[:, 0], after.height)
    np.testing.assert_array_equal(tree.player[:, 0], after.current_player)
    assert (tree.parents[:, 0] == -1).all() and (tree.action_from_parent[:, 0] == -1).all()

    before = tree.children_visits[:, 0].sum(axis=1).copy()
    more = 40
    out2 = search(after, UNIFORM, dataclasses.replace(cfg, num_simulations=more), rng, tree=tree)
    np.testing.assert_array_equal(out2.visits.sum(axis=1), before + more)
    np.testing.assert_array_equal(out2.tree.node_visits[:, 0], child_visits + more)
    # Only legal actions may be searched from the reused root, and the tree stays consistent.
    assert (out2.visits[~after.legal_action_mask] == 0).all(), "visits on illegal root actions"
    assert after.legal_action_mask[games, out2.action].all()
    check_tree(out2.tree)


def test_subtree_without_expanded_child_starts_afresh():
    s = init(VARIANT_I, 2)
    out = run(s, "puct", 4)
    unvisited = [a for a in legal_ids(s) if out.tree.children_index[0, 0, a] < 0][0]
    visited = int(out.action[1])
    actions = np.array([unvisited, visited])
    after = step(s, actions)
    tree, reused = subtree(out.tree, actions, after, 20, 5)
    assert reused.tolist() == [False, True]
    assert tree.num_nodes[0] == 1 and tree.node_visits[0, 0] == 0
    assert (tree.children_index[0, 0] == -1).all()
    np.testing.assert_array_equal(tree.states.height[0, 0], after.height[0])
    out2 = search(after, UNIFORM, config("puct", 8), np.random.default_rng(0), tree=tree)
    assert out2.visits[0].sum() == 8 and out2.tree.node_visits[0, 0] == 9
    check_tree(out2.tree)
    # A game marked fresh, or whose subtree would not leave ``room`` free nodes, starts afresh too.
    _, reused = subtree(out.tree, actions, after, 20, 5, fresh=np.array([False, True]))
    assert reused.tolist() == [False, False]
    kept = int(out.tree.node_visits[1, out.tree.children_index[1, 0, visited]])
    _, reused = subtree(out.tree, actions, after, kept + 4, 5)
    assert reused.tolist() == [False, False]
    _, reused = subtree(out.tree, actions, after, kept + 5, 5)
    assert reused.tolist() == [False, True]


# ------------------------------------------------ 7. Gumbel with few simulations


@pytest.mark.parametrize("sims", [4, 8, 16])
def test_gumbel_with_few_simulations(sims):
    s = random_positions(VARIANT_I, 4, 3, seed=sims)
    for max_considered in (4, 16):
        cfg = SearchConfig(num_simulations=sims, algorithm="gumbel", max_considered=max_considered)
        out = search(s, UNIFORM, cfg, np.random.default_rng(sims))
        check_tree(out.tree)
        legal = s.legal_action_mask
        assert legal[np.arange(4), out.action].all()
        np.testing.assert_array_equal(out.visits.sum(axis=1), sims)
        assert (out.visits[~legal] == 0).all()
        np.testing.assert_allclose(out.policy.sum(axis=1), 1.0, atol=1e-5)
        assert (out.policy[~legal] == 0).all() and (out.policy[legal] > 0).all()
        # Sequential halving: the root visits are exactly the schedule's.
        for b in range(4):
            m = min(int(legal[b].sum()), max_considered)
            schedule = halving.considered_visits(m, sims)
            visits = out.visits[b]
            for v in range(sims):
                assert (visits > v).sum() == (schedule == v).sum(), (b, v)
        # The chosen action is one of the most visited.
        assert (out.visits[np.arange(4), out.action] == out.visits.max(axis=1)).all()


@pytest.mark.parametrize("m, n", [(4, 8), (2, 4), (3, 10), (9, 64), (16, 16), (16, 200), (5, 3), (1, 5)])
def test_considered_visits_schedule(m, n):
    table = halving.considered_visits(m, n)
    assert len(table) == n
    assert (table >= 0).all() and (table < n).all()
    assert (np.diff(table) >= 0).all()
    # Each considered action is visited once before any is visited twice.
    assert (table[: min(m, n)] == 0).all()
    counts = np.bincount(table, minlength=n)
    assert (counts <= max(m, 1)).all()
    assert (np.diff(counts) <= 0).all()  # fewer actions survive each halving
    if (m, n) == (4, 8):
        assert table.tolist() == [0, 0, 0, 0, 1, 1, 2, 2]


# ------------------------------------------------ 8. mixed batches
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


# ------------------------------------------------ 9. Gumbel selection against the plain formulas
# The search keeps per-action arrays at the roots, makes its in-tree choices
# right after backup (caching them per node) and works on visited children
# only; these are the straightforward versions it replaced, which recompute
# everything from the tree when the descent needs it. Both must choose alike.


def reference_log_prior(tree, games, nodes):
    prior = tree.children_prior[games, nodes]
    with np.errstate(divide="ignore"):
        return np.where(tree.legal[games, nodes], np.log(np.maximum(prior, 1e-30)), -np.inf).astype(np.float32)


def reference_completed_q(tree, games, nodes):
    visits = tree.children_visits[games, nodes].astype(np.float32)
    q = tree.children_values[games, nodes]
    prior = tree.children_prior[games, nodes]
    total = visits.sum(axis=1)
    visited_prior = np.where(visits > 0, prior, 0).sum(axis=1)
    weighted_q = np.where(visits > 0, prior * q, 0).sum(axis=1)
    policy_q = np.divide(weighted_q, visited_prior, out=np.zeros_like(weighted_q), where=visited_prior > 0)
    mixed = (tree.raw_values[games, nodes] + total * policy_q) / (1.0 + total)
    return np.where(visits > 0, q, mixed[:, None])


def reference_sigma(tree, games, nodes, c_visit, c_scale):
    visits = tree.children_visits[games, nodes].astype(np.float32)
    legal = tree.legal[games, nodes]
    completed = reference_completed_q(tree, games, nodes)
    low = np.where(legal, completed, np.inf).min(axis=1, keepdims=True)
    high = np.where(legal, completed, -np.inf).max(axis=1, keepdims=True)
    scaled = (completed - low) / np.maximum(high - low, 1e-8)
    return ((c_visit + visits.max(axis=1, keepdims=True)) * c_scale * scaled).astype(np.float32)


def reference_improved_policy(tree, games, nodes, c_visit, c_scale):
    z = reference_log_prior(tree, games, nodes) + reference_sigma(tree, games, nodes, c_visit, c_scale)
    z = z - np.max(z, axis=1, keepdims=True, initial=-1e30, where=np.isfinite(z))
    e = np.where(np.isfinite(z), np.exp(z), 0.0)
    total = e.sum(axis=1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0).astype(np.float32)


def reference_interior_scores(tree, games, nodes, c_visit, c_scale):
    policy = reference_improved_policy(tree, games, nodes, c_visit, c_scale)
    visits = tree.children_visits[games, nodes].astype(np.float32)
    share = visits / (1.0 + visits.sum(axis=1, keepdims=True))
    return np.where(tree.legal[games, nodes], policy - share, -np.inf)


def reference_select_interior(tree, games, nodes, c_visit, c_scale):
    return reference_interior_scores(tree, games, nodes, c_visit, c_scale).argmax(axis=1)


def assert_best_interior_choice(tree, games, nodes, chosen, c_visit, c_scale):
    """``chosen`` scores within 1e-6 of the plain formula's best at every node (the fast choice rounds
    differently, so it may take another action only at a near-tie); returns how many choices differ."""
    scores = reference_interior_scores(tree, games, nodes, c_visit, c_scale)
    picked = scores[np.arange(games.size), chosen]
    best = scores.max(axis=1)
    assert (picked >= best - 1e-6).all(), f"choice {(best - picked).max():.3g} below the best score"
    return int((chosen != scores.argmax(axis=1)).sum())


def reference_root_scores(tree, noise, c_visit, c_scale):
    games, roots = np.arange(tree.batch_size), np.zeros(tree.batch_size, np.int64)
    return noise + reference_log_prior(tree, games, roots) + reference_sigma(tree, games, roots, c_visit, c_scale)


class ReferenceRoot:
    """Stands in for ``halving.Root``: rescores every root action at every simulation."""

    def __init__(self, tree, noise, base_visits, max_considered, num_simulations, c_visit, c_scale):
        self.noise, self.base_visits, self.c = noise, base_visits, (c_visit, c_scale)
        self.table = halving.considered_table(max_considered, num_simulations)
        self.max_considered = max_considered
        self.games = np.flatnonzero(~tree.terminal[:, 0] & (tree.legal[:, 0].sum(axis=1) > 1))

    start = classmethod(lambda cls, *args: cls(*args))

    def select(self, tree, simulation):
        target = self.table[np.minimum(tree.legal[:, 0].sum(axis=1), self.max_considered), simulation]
        visits = tree.children_visits[:, 0] - self.base_visits
        scores = reference_root_scores(tree, self.noise, *self.c)
        return np.where(visits == target[:, None], scores, -np.inf).argmax(axis=1)[self.games]

    def update(self, tree):
        pass

    def final_action(self, tree):
        visits = tree.children_visits[:, 0] - self.base_visits
        most = (visits == visits.max(axis=1, keepdims=True)) & tree.legal[:, 0]
        return np.where(most, reference_root_scores(tree, self.noise, *self.c), -np.inf).argmax(axis=1)


SELECT_INTERIOR = gumbel.select_interior


class ReferenceInterior:
    """Stands in for ``gumbel.Interior``: chooses (with ``select_interior``) when the descent reaches the node."""

    def __init__(self, tree, c_visit, c_scale):
        self.c, self.tree = (c_visit, c_scale), tree

    start = classmethod(lambda cls, *args: cls(*args))

    @property
    def next_action(self):
        return self.tree.forced  # -1 at every node with a choice: the descent asks ``choose`` each time

    def choose(self, tree, games, nodes):
        return SELECT_INTERIOR(tree, games, nodes, *self.c)

    def refresh(self, tree, games, nodes):
        pass

    def expanded(self, tree, games, nodes, forced, live, prior):
        pass


def reference_root_policy(tree, c_visit, c_scale):
    games = np.arange(tree.batch_size)
    roots = np.zeros_like(games)
    policy = reference_improved_policy(tree, games, roots, c_visit, c_scale)
    value = np.where(tree.legal[games, roots], policy * reference_completed_q(tree, games, roots), 0).sum(axis=1)
    return policy, value


class RandomEvaluator:
    """Deterministic but far from uniform: logits and value are fixed random functions of the position.

    ``near_ties``: logits rounded to integers, then nudged by a millionth on odd
    actions, so that priors tie exactly or nearly.
    """

    def __init__(self, seed, scale=0.5, near_ties=False):
        rng = np.random.default_rng(seed)
        self.w_logits = rng.normal(scale=scale, size=(101, 200)).astype(np.float32)
        self.w_value = rng.normal(scale=0.2, size=101).astype(np.float32)
        self.near_ties = near_ties

    def __call__(self, state):
        top_black = (state.colours & np.uint64(1)).astype(np.float32) * (state.height > 0)
        x = np.concatenate(
            [state.height.astype(np.float32), top_black, state.current_player[:, None].astype(np.float32)], axis=1
        )
        logits = x @ self.w_logits
        if self.near_ties:
            logits = np.round(logits) + 1e-6 * (np.arange(200) % 2)
        return Evaluation(logits.astype(np.float32), np.tanh(x @ self.w_value).astype(np.float32))


def searches_with_reuse(state, evaluator, cfg, seed):
    """Two searches, the second continuing from the first's subtree: outputs of both."""
    rng = np.random.default_rng(seed)
    first = search(state, evaluator, cfg, rng)
    live = ~state.done
    after = step(state, np.where(live, first.action, state.legal_action_mask.argmax(axis=1)))
    tree, _ = subtree(first.tree, first.action, after, 2 * (cfg.num_simulations + 1), cfg.num_simulations + 1)
    second = search(after, evaluator, cfg, rng, tree=tree)
    return first, second


# "sharp": logits spread over hundreds, so that many legal priors underflow to 0 (log prior -69).
@pytest.mark.parametrize(
    "evaluator",
    [UNIFORM, RandomEvaluator(0), RandomEvaluator(3, scale=20.0), RandomEvaluator(2, scale=1.0, near_ties=True)],
    ids=["uniform", "random", "sharp", "near-ties"],
)
@pytest.mark.parametrize(
    "variant, sims, max_considered, temperature",
    [(VARIANT_I, 5, 16, 1.0), (VARIANT_I, 16, 4, 1.0), (VARIANT_I, 48, 16, 1.0), (VARIANT_II, 32, 8, 0.0)],
)
def test_gumbel_selection_matches_reference(evaluator, variant, sims, max_considered, temperature, monkeypatch):
    s = random_positions(variant, 24, 20 if variant == VARIANT_I else 9, seed=sims)
    cfg = SearchConfig(num_simulations=sims, algorithm="gumbel", max_considered=max_considered, temperature=temperature)
    fast = searches_with_reuse(s, evaluator, cfg, seed=sims)

    choices = []

    def checked_interior(tree, games, nodes, c_visit, c_scale, unvisited=None, children=None):
        # What ``Interior`` kept or passed of each node's children, against a recount from the tree.
        node = games * tree.capacity + nodes
        for kept, recounted in zip(unvisited or (), gumbel.unvisited_best(tree, node), strict=False):
            np.testing.assert_array_equal(kept, recounted)
        for passed, recounted in zip(children or (), gumbel.visited_children(tree, node), strict=False):
            np.testing.assert_array_equal(passed, recounted)
        chosen = SELECT_INTERIOR(tree, games, nodes, c_visit, c_scale, unvisited, children)
        choices.append(assert_best_interior_choice(tree, games, nodes, chosen, c_visit, c_scale))
        return chosen

    # Each batched interior choice, against the plain formula on the same tree.
    monkeypatch.setattr(gumbel, "select_interior", checked_interior)
    searches_with_reuse(s, evaluator, cfg, seed=sims)
    assert len(choices) > sims
    # The plain search: the roots' scores recomputed from the tree at every simulation, the interior
    # choices made when the descent reaches a node instead of cached.
    monkeypatch.setattr(halving, "Root", ReferenceRoot)
    monkeypatch.setattr(gumbel, "Interior", ReferenceInterior)
    monkeypatch.setattr(gumbel, "select_interior", SELECT_INTERIOR)
    monkeypatch.setattr(gumbel, "root_policy", reference_root_policy)
    plain = searches_with_reuse(s, evaluator, cfg, seed=sims)

    for a, b in zip(fast, plain, strict=True):
        np.testing.assert_array_equal(a.action, b.action)
        np.testing.assert_allclose(a.policy, b.policy, rtol=1e-5, atol=1e-7)
        np.testing.assert_array_equal(a.visits, b.visits)
        np.testing.assert_array_equal(a.root_value, b.root_value)
        np.testing.assert_allclose(a.search_value, b.search_value, rtol=1e-5, atol=1e-6)
        for name in ("num_nodes", "children_visits", "children_values", "node_values", "parents"):
            np.testing.assert_array_equal(getattr(a.tree, name), getattr(b.tree, name), err_msg=name)
        check_tree(a.tree)
    assert (fast[1].tree.node_visits[:, 0] > cfg.num_simulations + 1).any(), "no subtree was reused"


def test_gumbel_first_choice_at_new_nodes_matches_reference():
    """Priors one or a few ulps apart, the smaller first: the formula's softmax can round them alike and
    take the first; the search takes the highest prior, which scores within rounding of it."""
    rng = np.random.default_rng(0)
    g = 3000
    prior, legal = np.zeros((g, 200), np.float32), np.zeros((g, 200), bool)
    for row in range(g):
        cols = np.sort(rng.choice(200, rng.integers(2, 20), replace=False))
        p = (rng.random(cols.size) * 0.5).astype(np.float32)
        j, top = rng.integers(1, cols.size), np.float32(0.5 + 0.5 * rng.random())
        p[j], p[j - 1] = top, top - rng.integers(0, 4) * np.spacing(top)
        prior[row, cols], legal[row, cols] = p / p.sum(), True
    prior[: g // 10] = np.where(legal[: g // 10], 1.0 / legal[: g // 10].sum(axis=1, keepdims=True), 0)  # exact ties
    tree = allocate(init(VARIANT_I, g), 2)
    games, nodes = np.arange(g), np.ones(g, np.int64)
    tree.states.legal_action_mask[:, 1], tree.num_legal[:, 1] = legal, legal.sum(axis=1)
    tree.children_prior[:, 1], tree.children_values[:, 1] = prior, np.where(legal, 0, -1e9)
    tree.node_visits[:, 1], tree.raw_values[:, 1] = 1, rng.uniform(-1, 1, g)
    interior = gumbel.Interior.start(tree, 50.0, 0.1)
    interior.expanded(tree, games, nodes, np.full(g, -1), np.arange(g), prior)
    np.testing.assert_array_equal(interior.next_action[:, 1], SELECT_INTERIOR(tree, games, nodes, 50.0, 0.1))
    differ = assert_best_interior_choice(tree, games, nodes, interior.next_action[:, 1], 50.0, 0.1)
    assert differ > 100  # the formula's rounding ties do occur; the choice is then the first of highest prior


def tree_with_children(prior, legal, visits, q, raw):
    """Trees whose root (node 0) has children priors ``prior``, legal actions ``legal``, visit counts
    ``visits`` and mean values ``q`` (all ``[G, A]``) and value ``raw`` ``[G]``: each visited child is
    a node of its own, as the search makes them, holding its visits."""
    g = prior.shape[0]
    game, action = np.nonzero(visits)
    child = 1 + np.cumsum(visits > 0, axis=1)[game, action] - 1
    tree = allocate(init(VARIANT_I, g), 1 + max((visits > 0).sum(axis=1).max(), 1))
    tree.states.legal_action_mask[:, 0], tree.num_legal[:, 0] = legal, legal.sum(axis=1)
    tree.children_prior[:, 0], tree.children_visits[:, 0] = prior, visits
    tree.children_values[:, 0] = np.where(visits > 0, q, np.where(legal, 0, -1e9))
    tree.node_visits[:, 0], tree.raw_values[:, 0] = 1 + visits.sum(axis=1), raw
    tree.children_index[game, 0, action] = child
    tree.parents[game, child], tree.action_from_parent[game, child] = 0, action
    tree.node_visits[game, child] = visits[game, action]
    tree.num_nodes[:] = 1 + (visits > 0).sum(axis=1)
    return tree


def test_gumbel_interior_choice_scores_the_formulas_best():
    """Random nodes with visited children: uniform priors (exact ties), spread ones, sharp ones whose
    unvisited priors all underflow to 0, and nodes with every legal child visited."""
    rng = np.random.default_rng(1)
    g = 4000
    prior, legal = np.zeros((g, 200), np.float32), np.zeros((g, 200), bool)
    visits, q = np.zeros((g, 200), np.int32), np.zeros((g, 200), np.float32)
    for row in range(g):
        cols = rng.choice(200, rng.integers(2, 30), replace=False)
        kind = row % 4
        logits = rng.normal(size=cols.size) * (0.0 if kind == 0 else 1.0 if kind == 1 else 60.0)
        seen = rng.random(cols.size) < 0.3
        seen[0] = True
        if kind == 2:  # the visited children hold all the prior: the others underflow to 0
            logits = np.where(seen, logits, -200.0)
        if kind == 3:
            seen[:] = True
        p = np.exp(logits - logits.max())
        prior[row, cols], legal[row, cols] = (p / p.sum()).astype(np.float32), True
        visits[row, cols[seen]] = rng.integers(1, 10, seen.sum())
        q[row, cols[seen]] = rng.uniform(-1, 1, seen.sum())
    raw = rng.uniform(-1, 1, g)
    chosen, differ = np.zeros(g, np.int64), 0
    for part in np.array_split(np.arange(g), 4):  # trees of 1,000 games: a few tens of MB each
        tree = tree_with_children(prior[part], legal[part], visits[part], q[part], raw[part])
        games, nodes = np.arange(part.size), np.zeros(part.size, np.int64)
        chosen[part] = SELECT_INTERIOR(tree, games, nodes, 50.0, 0.1)
        differ += assert_best_interior_choice(tree, games, nodes, chosen[part], 50.0, 0.1)
    assert differ < g // 100
    games = np.arange(g)
    unvisited = visits[games, chosen] == 0
    left = legal & (visits == 0)
    lost = left.any(axis=1) & (np.where(left, prior, 0).max(axis=1) == 0)  # every unvisited prior is 0
    assert unvisited.sum() > 200 and lost.sum() > 500 and (~left.any(axis=1)).sum() > 900


def test_gumbel_cached_choices_and_root_arrays_match_the_tree(monkeypatch):
    """What the search caches equals what it stands for, recomputed from the finished trees."""
    roots, interiors = [], []
    start_root, start_interior = halving.Root.start, gumbel.Interior.start
    monkeypatch.setattr(halving.Root, "start", lambda *a: roots.append(start_root(*a)) or roots[-1])
    monkeypatch.setattr(gumbel.Interior, "start", lambda *a: interiors.append(start_interior(*a)) or interiors[-1])
    s = random_positions(VARIANT_I, 16, 16, seed=4)
    cfg = SearchConfig(num_simulations=24, algorithm="gumbel", max_considered=8)
    outputs = searches_with_reuse(s, RandomEvaluator(1), cfg, seed=2)
    assert len(roots) == len(interiors) == 2 and roots[1].inherited.any()
    for interior, out in zip(interiors, outputs, strict=True):
        tree = out.tree
        # The next in-tree choice at every node with a choice (the roots have theirs in ``Root``).
        games, nodes = np.nonzero(tree.num_legal > 1)
        games, nodes = games[nodes > 0], nodes[nodes > 0]
        assert games.size > 100
        expected = SELECT_INTERIOR(tree, games, nodes, cfg.c_visit, cfg.c_scale)
        assert_best_interior_choice(tree, games, nodes, expected, cfg.c_visit, cfg.c_scale)
        chosen = interior.next_action[games, nodes] >= 0  # a reused node may not have been reached
        assert chosen.mean() > 0.5
        np.testing.assert_array_equal(interior.next_action[games, nodes][chosen], expected[chosen])
        # Elsewhere the only action, -2 where the game is over, -1 at the roots and unused nodes.
        others = np.ones(interior.next_action.shape, bool)
        others[games, nodes] = False
        used = np.arange(tree.capacity) < tree.num_nodes[:, None]
        only = np.where(tree.num_legal == 1, tree.legal.argmax(axis=2), np.where(tree.terminal & used, -2, -1))
        only[:, 0] = np.where(tree.terminal[:, 0], -2, only[:, 0])
        np.testing.assert_array_equal(interior.next_action[others], only[others])
        np.testing.assert_array_equal(tree.forced, only)
    for root, out in zip(roots, outputs, strict=True):
        tree, g = out.tree, root.games
        visits, q, prior = tree.children_visits[g, 0], tree.children_values[g, 0], tree.children_prior[g, 0]
        visited = visits > 0
        np.testing.assert_array_equal(root.prior_visited, np.where(visited, prior, 0))
        np.testing.assert_array_equal(root.visited_prior, np.where(visited, prior, 0).sum(axis=1))
        np.testing.assert_array_equal(root.prior_q, np.where(visited, prior * q, 0))
        np.testing.assert_array_equal(root.q_low, np.where(visited, q, np.inf))
        np.testing.assert_array_equal(root.q_high, np.where(visited, q, -np.inf))
        np.testing.assert_array_equal(root.num_visited, visited.sum(axis=1))
        np.testing.assert_array_equal(root.num_legal, tree.legal[g, 0].sum(axis=1))
        np.testing.assert_array_equal(root.max_visits, visits.max(axis=1))
        this_search = visits - root.base_visits
        np.testing.assert_array_equal(root.fresh_score, np.where(this_search == 0, root.score, -np.inf))
        assert root.has_considered.all()
        for row in range(g.size):
            expected = np.flatnonzero(this_search[row])
            assert root.considered[row, : expected.size].tolist() == expected.tolist()
            assert (root.considered[row, expected.size :] == expected[-1]).all()
        rows, cols = np.arange(g.size)[:, None], root.considered
        np.testing.assert_array_equal(tree.children_visits.ravel()[root.considered_at], visits[rows, cols])
        np.testing.assert_array_equal(root.considered_base, root.base_visits[rows, cols])
        np.testing.assert_array_equal(root.considered_score, root.score[rows, cols])


def reference_backup(tree, leaves):
    """The backup the search replaced: one level at a time from each game's leaf up to its root."""
    games = np.arange(tree.batch_size)
    node = leaves.astype(np.int64)
    value = tree.raw_values[games, node]
    while games.size:
        n = node[games]
        v = value[games]
        visits = tree.node_visits[games, n]
        tree.node_values[games, n] += (v - tree.node_values[games, n]) / (visits + 1)
        tree.node_visits[games, n] = visits + 1
        parent = tree.parents[games, n]
        up = parent >= 0
        games, n, v, parent = games[up], n[up], v[up], parent[up]
        v = np.where(tree.player[games, parent] == tree.player[games, n], v, -v)
        a = tree.action_from_parent[games, n]
        visits = tree.children_visits[games, parent, a]
        tree.children_values[games, parent, a] += (v - tree.children_values[games, parent, a]) / (visits + 1)
        tree.children_visits[games, parent, a] = visits + 1
        node[games] = parent
        value[games] = v


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_backup_of_all_paths_at_once_matches_the_level_by_level_one(algorithm, monkeypatch):
    """The search backs up all (game, level) pairs in one pass; the statistics must equal, bit for bit,
    those of the per-level loop, at every simulation."""
    search_module = importlib.import_module("stapel_rl.mcts.search")  # the package exports its ``search``

    stats = ("node_values", "node_visits", "children_values", "children_visits")
    fast_backup, checked = search_module._backup, []

    def both(tree, final, games, nodes, actions):
        before = {name: getattr(tree, name).copy() for name in stats}
        fast_backup(tree, final, games, nodes, actions)
        after = {name: getattr(tree, name).copy() for name in stats}
        for name in stats:
            getattr(tree, name)[...] = before[name]
        reference_backup(tree, final % tree.capacity)
        for name in stats:
            np.testing.assert_array_equal(after[name], getattr(tree, name), err_msg=name)
        checked.append(final.size)

    monkeypatch.setattr(search_module, "_backup", both)
    s = random_positions(VARIANT_I, 12, 30, seed=7)
    searches_with_reuse(s, RandomEvaluator(5, scale=2.0), SearchConfig(num_simulations=24, algorithm=algorithm), 3)
    assert len(checked) == 48


@pytest.mark.parametrize("wild", [None, 1.05e9, -5e9, np.inf])
def test_new_nodes_priors_are_the_masked_softmax(wild):
    """The priors of new nodes come from adding the ILLEGAL_VALUE penalty, not masking: the masked
    softmax to float32 rounding and exactly 0 on illegal actions, also where a logit is too large for
    the penalty to hide it."""
    rng = np.random.default_rng(3)
    logits = (rng.normal(size=(64, 200)) * 8).astype(np.float32)
    legal = rng.random((64, 200)) < 0.1
    legal[:, 7] = True
    if wild is not None:
        logits[5, ~legal[5]] = wild  # illegal actions' logits above (or below) what -1e9 outweighs
        logits[9, 7] = -wild
    penalty = np.where(legal, 0, ILLEGAL_VALUE).astype(np.float32)
    prior = softmax_live(logits, penalty, legal)
    assert prior.dtype == np.float32
    np.testing.assert_allclose(prior, qtransforms.masked_softmax(logits, legal), rtol=1e-6, atol=1e-7)
    assert (prior[~legal] == 0).all()
    np.testing.assert_allclose(prior.sum(axis=1), 1, rtol=1e-6)
