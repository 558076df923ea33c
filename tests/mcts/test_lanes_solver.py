"""Leaf batching (``SearchConfig.leaves_per_call``, mcts/lanes.py) and the MCTS-solver (mcts/solver.py),
checked against the plain search on small trees and against positions with known results."""

from __future__ import annotations

import numpy as np
import pytest
from boards import fen
from trees import check_tree, negamax

from stapel_rl.env import VARIANT_I, VARIANT_II, concatenate, from_fens, init, step, take
from stapel_rl.env.sampling import random_positions
from stapel_rl.mcts import SearchConfig, search
from stapel_rl.mcts.tree import read_states
from stapel_rl.models.evaluator import Evaluation, UniformEvaluator

ALGORITHMS = ("puct", "gumbel")
UL, UR = 0, 1


def action(square, direction):
    return 4 * (square - 1) + direction


class PositionEvaluator:
    """A fixed function of each position alone (not of the batch it comes in), so that a search that
    evaluates the same positions in other batches sees the same numbers."""

    def __init__(self, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.square = rng.normal(size=50).astype(np.float32)
        self.action = rng.normal(size=200).astype(np.float32)

    def __call__(self, state) -> Evaluation:
        h = (state.height.astype(np.float32) * self.square).sum(axis=1) * (1 - 2 * state.current_player)
        value = np.tanh(0.2 * h).astype(np.float32)
        logits = (np.sin(h)[:, None] * 2 * self.action).astype(np.float32)
        return Evaluation(logits=logits, value=value)


def config(algorithm, sims, **kw):
    kw = {"temperature": 0.0, "dirichlet_fraction": 0.0, **kw}
    return SearchConfig(num_simulations=sims, algorithm=algorithm, **kw)


def run(state, algorithm, sims, evaluator=None, seed=0, **kw):
    return search(state, evaluator or PositionEvaluator(), config(algorithm, sims, **kw), np.random.default_rng(seed))


# ---------------------------------------------------------------- leaf batching


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("leaves", [2, 5, 16])
def test_batched_search_keeps_the_visit_total_and_the_tree_bookkeeping(algorithm, leaves):
    # Three live mid-games, a finished game and a root with one legal action (a forced leap).
    forced = fen("W", {32: "w", 28: "b", 1: "b"})
    over = init("I", 1)
    over.terminated[:] = True
    over.legal_action_mask[:] = False
    state = concatenate([random_positions("I", 3, 20, np.random.default_rng(2)), from_fens([forced]), over])
    out = run(state, algorithm, 37, leaves_per_call=leaves)
    check_tree(out.tree)
    assert out.tree.node_visits[:, 0].tolist() == [38] * 5  # every game: its root, then 37 simulations
    assert out.tree.num_nodes.max() <= 38
    live = ~state.done
    assert state.legal_action_mask[np.flatnonzero(live), out.action[live]].all()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_batched_search_spends_fewer_evaluator_calls(algorithm):
    calls = []

    def counting(state):
        calls.append(state.batch_size)
        return UniformEvaluator()(state)

    state = random_positions("I", 1, 20, np.random.default_rng(4))
    out = run(state, algorithm, 64, evaluator=counting, leaves_per_call=8)
    check_tree(out.tree)
    assert len(calls) <= 1 + 64 // 4  # the root, then steps of up to 8 leaves (collisions drop a few)
    assert sum(calls) == out.tree.num_nodes[0] - (out.tree.terminal[0, : out.tree.num_nodes[0]]).sum()


def test_gumbel_first_phase_batched_is_the_plain_search():
    """Sequential halving's first phase visits each considered root action once, in an order that does not
    depend on the values found; K = m lanes visit the same actions in one step, and each new child's
    statistics are its own evaluation's: the same root statistics as m plain simulations."""
    state = random_positions("I", 8, 16, np.random.default_rng(5))
    state = take(state, np.flatnonzero(state.legal_action_mask.sum(axis=1) >= 8))  # m = 8 considered actions
    assert state.batch_size >= 2
    plain = run(state, "gumbel", 8, max_considered=8)
    batched = run(state, "gumbel", 8, max_considered=8, leaves_per_call=8)
    for name in ("children_visits", "children_values"):
        np.testing.assert_array_equal(getattr(plain.tree, name)[:, 0], getattr(batched.tree, name)[:, 0])
    np.testing.assert_allclose(batched.tree.node_values[:, 0], plain.tree.node_values[:, 0], atol=1e-6)
    np.testing.assert_array_equal(plain.action, batched.action)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_leaves_per_call_one_is_the_default_search(algorithm):
    state = random_positions("II", 3, 12, np.random.default_rng(6))
    plain = run(state, algorithm, 24)
    explicit = run(state, algorithm, 24, leaves_per_call=1, solver=False)
    for name in ("children_visits", "children_values", "node_values", "num_nodes"):
        np.testing.assert_array_equal(getattr(plain.tree, name), getattr(explicit.tree, name))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_batched_search_finds_the_forced_win(algorithm):
    state = from_fens([fen("W", {14: "wb", 15: "b", 20: "w", 24: "w"})])
    out = run(state, algorithm, 128, evaluator=UniformEvaluator(), leaves_per_call=8)
    check_tree(out.tree)
    assert out.action[0] == action(14, UL)


def test_leaves_per_call_is_validated():
    with pytest.raises(ValueError, match="leaves_per_call"):
        SearchConfig(leaves_per_call=0)


# ---------------------------------------------------------------- solver

# Variant I, White to move: 14-9 wins at once; 14-10 and 24-19 lose by force (tests/mcts/test_mcts.py).
WIN_I = fen("W", {14: "wb", 15: "b", 20: "w", 24: "w"})
# Variant II, White to move: 7-2 wins on points at once, 38-32 and 38-33 lose at once.
POINTS_II = fen("W", {1: "w", 7: "www", 38: "w", 47: "bb"})
# Variant II, White to move: both moves (38-32, 38-33) end the game 1 to 2: White has lost.
LOST_II = fen("W", {1: "w", 38: "w", 47: "bb"})


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("leaves", [1, 4])
def test_solver_proves_the_points_position(algorithm, leaves):
    state = from_fens([POINTS_II], VARIANT_II)
    out = run(state, algorithm, 50, solver=True, leaves_per_call=leaves)
    check_tree(out.tree)
    tree = out.tree
    assert tree.exact[0, 0] == 1.0 and out.search_value[0] == 1.0
    assert out.action[0] == action(7, UR)
    # All three children are terminal: the search stops once the root is proven.
    assert tree.node_visits[0, 0] <= 1 + 3 + leaves
    children = tree.children_index[0, 0][tree.children_index[0, 0] >= 0]
    assert sorted(tree.exact[0, children].tolist()) == [-1.0, 1.0, 1.0]  # each from its own mover's view


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("leaves", [1, 4])
def test_solver_proves_a_lost_position(algorithm, leaves):
    state = from_fens([LOST_II], VARIANT_II)
    out = run(state, algorithm, 20, solver=True, leaves_per_call=leaves)
    check_tree(out.tree)
    assert out.tree.exact[0, 0] == -1.0 and out.search_value[0] == -1.0
    assert state.legal_action_mask[0, out.action[0]]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("leaves", [1, 8])
def test_solver_values_are_exact(algorithm, leaves):
    """Every proven node of a search of the Variant I win holds the value negamax gives its position."""
    state = from_fens([WIN_I], VARIANT_I)
    out = run(state, algorithm, 300, evaluator=UniformEvaluator(), solver=True, leaves_per_call=leaves)
    tree = out.tree
    check_tree(tree)
    assert out.action[0] == action(14, UL) and tree.exact[0, 0] == 1.0
    used = int(tree.num_nodes[0])
    proven = np.flatnonzero(~np.isnan(tree.exact[0, :used]))
    assert proven.size > 1
    states = read_states(tree, np.zeros(proven.size, np.int64), proven)
    for i, node in enumerate(proven):
        value = negamax(take(states, np.array([i])), 8)
        assert value is not None and value == tree.exact[0, node], f"node {node}"


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_solver_proves_the_forced_win_after_a_losing_move(algorithm):
    # After 14-10 Black wins by force (negamax within 8 actions): the root is a proven win for Black.
    state = step(from_fens([WIN_I], VARIANT_I), np.array([action(14, UR)]))
    assert negamax(state, 8) == 1.0
    out = run(state, algorithm, 400, evaluator=UniformEvaluator(), solver=True, leaves_per_call=4)
    check_tree(out.tree)
    assert out.tree.exact[0, 0] == 1.0
    after = step(state, out.action)
    value = negamax(after, 8)
    assert value == (1.0 if after.current_player[0] == state.current_player[0] else -1.0)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_solver_off_leaves_the_tree_unproven_but_terminal_nodes_marked(algorithm):
    out = run(from_fens([POINTS_II], VARIANT_II), algorithm, 20)
    assert np.isnan(out.tree.exact[0, 0])  # nothing propagates without the solver
    assert out.tree.node_visits[0, 0] == 21  # and the search runs its whole budget
