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

import numpy as np
import pytest

from stapel_rl.env import VARIANT_I, VARIANT_II, concatenate, from_fens, init, legal_moves, step, take
from stapel_rl.mcts import SearchConfig, gumbel, search, subtree
from stapel_rl.models.evaluator import UniformEvaluator

ALGORITHMS = ("puct", "gumbel")
UNIFORM = UniformEvaluator()
UL, UR, DL, DR = 0, 1, 2, 3


# ---------------------------------------------------------------- helpers


def fen(side, stacks=None):
    """Position text from {square: stack, top man first}."""
    stacks = stacks or {}
    return side + ":" + ",".join(stacks.get(n, "") for n in range(1, 51))


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


def negamax(state, depth):
    """Exact value for the side to move of game 0 within ``depth`` actions, or None if not settled.

    Values flip only where the player to move changes (a leap that continues
    a capture keeps the player), the same rule the search must follow.
    """
    if state.terminated[0]:
        return float(state.rewards[0, state.current_player[0]])
    if depth == 0:
        return None
    best, unknown = -1.0, False
    for a in legal_ids(state):
        child = step(state, np.array([a]))
        v = negamax(child, depth - 1)
        if v is None:
            unknown = True
            continue
        v = v if child.current_player[0] == state.current_player[0] else -v
        if v == 1.0:
            return 1.0
        best = max(best, v)
    return None if unknown else best


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


def check_tree(tree):
    """Bookkeeping every search tree must satisfy, game by game."""
    for b in range(tree.batch_size):
        used = int(tree.num_nodes[b])
        assert 1 <= used <= tree.capacity
        assert (tree.node_visits[b, used:] == 0).all()
        nodes = np.arange(1, used)
        parent = tree.parents[b, nodes]
        act = tree.action_from_parent[b, nodes]
        assert (parent >= 0).all() and (parent < nodes).all()
        assert tree.parents[b, 0] == -1
        # Every edge in the tree is a legal action of its parent.
        assert tree.legal[b, parent, act].all(), "an illegal action was expanded"
        assert (tree.children_index[b, parent, act] == nodes).all()
        assert (tree.children_index[b, :used] >= 0).sum() == used - 1
        # The stored player is the engine's, and it stays only while a capture goes on.
        np.testing.assert_array_equal(tree.player[b, :used], tree.states.current_player[b, :used])
        same = tree.player[b, parent] == tree.player[b, nodes]
        mid_capture = tree.states.capturing[b, nodes] >= 0
        np.testing.assert_array_equal(same, mid_capture)
        # Edge statistics mirror the child's, with the sign of the parent's view.
        np.testing.assert_array_equal(tree.children_visits[b, parent, act], tree.node_visits[b, nodes])
        sign = np.where(same, 1.0, -1.0)
        np.testing.assert_allclose(
            tree.children_values[b, parent, act], sign * tree.node_values[b, nodes], atol=1e-5
        )
        assert (tree.children_visits[b, :used][tree.children_index[b, :used] < 0] == 0).all()
        # A node's visits: its expansion plus its children's; its value: the mean of those.
        for n in range(used):
            if tree.node_visits[b, n] == 0:
                continue
            cv = tree.children_visits[b, n].astype(np.float64)
            if tree.terminal[b, n]:
                assert cv.sum() == 0
                assert tree.node_values[b, n] == pytest.approx(tree.raw_values[b, n], abs=1e-6)
                continue
            assert tree.node_visits[b, n] == 1 + cv.sum()
            total = tree.raw_values[b, n] + (cv * tree.children_values[b, n]).sum()
            assert tree.node_values[b, n] == pytest.approx(total / tree.node_visits[b, n], abs=1e-4)
            assert -1.0 - 1e-6 <= tree.node_values[b, n] <= 1.0 + 1e-6


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
    else:
        # The improved policy puts most mass on the winning move.
        assert out.policy[0].argmax() == win and out.policy[0, win] > 0.5


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

    out = run(s, algorithm, 100)
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
    out = run(s, algorithm, 200)
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
    out = search(s, UNIFORM, config(algorithm, 48, dirichlet_fraction=fraction, dirichlet_alpha=0.3),
                 np.random.default_rng(7))
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
        out = search(s, UNIFORM, SearchConfig(num_simulations=sims, algorithm=algorithm),
                     np.random.default_rng(sims))
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
            schedule = gumbel.considered_visits(m, sims)
            visits = out.visits[b]
            for v in range(sims):
                assert (visits > v).sum() == (schedule == v).sum(), (b, v)
        # The chosen action is one of the most visited.
        assert (out.visits[np.arange(4), out.action] == out.visits.max(axis=1)).all()


@pytest.mark.parametrize("m, n", [(4, 8), (2, 4), (3, 10), (9, 64), (16, 16), (16, 200), (5, 3), (1, 5)])
def test_considered_visits_schedule(m, n):
    table = gumbel.considered_visits(m, n)
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
