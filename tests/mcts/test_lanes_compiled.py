"""The compiled parts of leaf batching (mcts/lanes_compiled.py: the lanes' moves, Gumbel's root rounds)
against plain numpy statements of them (``NumpyStep`` here; the generic ``lanes._Step.root_rounds`` with
``halving.Root``'s choice): the same trees, to the last bit."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
from boards import fen
from test_lanes_solver import PositionEvaluator, config

from stapel_rl.env import concatenate, from_fens, init
from stapel_rl.env.sampling import random_positions
from stapel_rl.mcts import lanes, search
from stapel_rl.mcts.lanes_compiled import by_node
from stapel_rl.mcts.numpy_rounding import pairwise_sum
from stapel_rl.mcts.search import ALGORITHMS
from stapel_rl.mcts.tree import Tree, grow


def test_pairwise_sum_rounds_as_numpy_sums():
    rng = np.random.default_rng(0)
    for n in [*range(0, 300, 7), 200, 1000, 1033]:
        rows = (rng.standard_normal((3, n)) * rng.choice([1e-3, 1.0, 1e4], (3, n))).astype(np.float32)
        sums = rows.sum(axis=1)  # the float32 sums halving.Root takes over its [F, A] rows
        assert [pairwise_sum(row, 0, n) for row in rows] == sums.tolist()


class NumpyStep(lanes._Step):
    """``lanes._Step`` with the lanes' moves in numpy, one array operation for all lanes, and Gumbel's
    root rounds made by the generic ``root_rounds`` (``halving.Root.select`` in turn)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.undo = []  # (array, index, old values) in the order saved

    def _save(self, array, index):
        self.undo.append((array, index, array[index]))

    def _visit_nodes(self, node):
        self._save(self.node_visits, node)
        self.node_visits[node] += 1

    def take(self, lanes_, node, action):
        over = action == -2
        if over.any():
            self._visit_nodes(node[over])
            self.final[lanes_[over]] = node[over]
            lanes_, node, action = lanes_[~over], node[~over], action[~over]
        base = node - node % self.n
        child = self.children[node * self.a + action]
        collide = (child >= 0) & self.pending[base + np.maximum(child, 0)]
        if collide.any():
            self.dropped[lanes_[collide]] = True
            lanes_, node, action, child, base = (x[~collide] for x in (lanes_, node, action, child, base))
        self.path_lane.append(lanes_)
        self.path_node.append(node)
        self.path_action.append(action)
        self._visit_nodes(node)
        edge = node * self.a + action
        self._save(self.edge_visits, edge)
        self._save(self.edge_values, edge)
        visits, old = self.edge_visits[edge], self.edge_values[edge]
        self.edge_values[edge] = old + (lanes.VIRTUAL_LOSS - old) / (visits + 1)
        self.edge_visits[edge] = visits + 1
        new = child < 0
        if new.any():
            self._place(lanes_[new], node[new], action[new])
        return lanes_[~new], base[~new] + child[~new]

    def _place(self, lanes_, parent, action):
        """New nodes below flat ``parent`` by ``action``, numbered in each game in the lanes' order."""
        tree = self.tree
        games = parent // self.n
        order = np.argsort(games, kind="stable")
        lanes_, parent, action, games = lanes_[order], parent[order], action[order], games[order]
        count = np.bincount(games, minlength=tree.batch_size)
        new = (tree.num_nodes[games] + np.arange(games.size) - (np.cumsum(count) - count)[games]).astype(np.int64)
        tree.num_nodes += count.astype(np.int32)
        local = parent % self.n
        tree.parents[games, new] = local
        tree.action_from_parent[games, new] = action
        tree.children_index[games, local, action] = new
        flat = games * self.n + new
        self.pending[flat] = True
        self._visit_nodes(flat)
        self.final[lanes_] = flat
        self.algorithm.placed(tree, games, new)
        self.placed_games.append(games)
        self.placed_nodes.append(new)

    def halving_rounds(self, gumbel, lanes_, start_visits):
        return self.root_rounds(lanes_, start_visits)

    def restore(self):
        for array, index, old in reversed(self.undo):  # latest first: the first saved value wins
            array[index] = old
        super().restore()


def searched(state, compiled: bool, sims: int, tree: "Tree | None" = None, algorithm: str = "gumbel", **kw):
    """A search with the compiled or the numpy lane moves and root rounds (the rest of the search alike)."""
    step = lanes._Step
    lanes._Step = step if compiled else NumpyStep
    try:
        rng = np.random.default_rng(3)
        return search(state, PositionEvaluator(), config(algorithm, sims, **kw), rng, tree=tree)
    finally:
        lanes._Step = step


def assert_same_trees(a: Tree, b: Tree) -> None:
    for field in dataclasses.fields(Tree):
        if field.name != "states":
            np.testing.assert_array_equal(getattr(a, field.name), getattr(b, field.name), err_msg=field.name)


def mixed_batch(seed: int):
    """Live mid-games of both variants' kind, a root with one legal action and a finished game."""
    over = init("I", 1)
    over.terminated[:] = True
    over.legal_action_mask[:] = False
    forced = from_fens([fen("W", {32: "w", 28: "b", 1: "b"})])
    return concatenate([random_positions("I", 3, 8 + seed, np.random.default_rng(seed)), forced, over])


@pytest.mark.parametrize("leaves", [2, 5, 16])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize("considered", [2, 4, 16])
def test_compiled_steps_leave_the_numpy_steps_trees(leaves, temperature, considered):
    state = mixed_batch(leaves + considered)
    kw = {"leaves_per_call": leaves, "temperature": temperature, "max_considered": considered}
    fast, plain = searched(state, True, 45, **kw), searched(state, False, 45, **kw)
    assert_same_trees(fast.tree, plain.tree)
    for name in ("action", "policy", "visits", "search_value"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(plain, name), err_msg=name)


@pytest.mark.parametrize("min_span", [0.1, 2.0])
def test_compiled_steps_with_a_span_floor_leave_the_numpy_steps_trees(min_span):
    state = mixed_batch(3)
    kw = {"leaves_per_call": 5, "temperature": 1.0, "max_considered": 8, "min_span": min_span}
    fast, plain = searched(state, True, 45, **kw), searched(state, False, 45, **kw)
    assert_same_trees(fast.tree, plain.tree)
    for name in ("action", "policy", "visits", "search_value"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(plain, name), err_msg=name)
    assert not np.array_equal(
        fast.tree.children_visits, searched(state, True, 45, **{**kw, "min_span": 1e-8}).tree.children_visits
    )


@pytest.mark.parametrize("leaves", [3, 16])
def test_compiled_lane_moves_under_puct_leave_the_numpy_trees(leaves):
    state = mixed_batch(leaves)
    fast, plain = (searched(state, c, 45, algorithm="puct", leaves_per_call=leaves) for c in (True, False))
    assert_same_trees(fast.tree, plain.tree)
    np.testing.assert_array_equal(fast.action, plain.action)


@pytest.mark.parametrize("variant", ["I", "II"])
def test_compiled_steps_continue_a_searched_tree_as_numpy_does(variant):
    """A tree searched before (as an agent searching by time continues it): the roots inherit visits."""
    state = random_positions(variant, 2, 14, np.random.default_rng(7))
    first = searched(state, False, 30, leaves_per_call=4)
    again = {c: searched(state, c, 40, grow(first.tree, 71), leaves_per_call=8, solver=True) for c in (True, False)}
    assert_same_trees(again[True].tree, again[False].tree)
    np.testing.assert_array_equal(again[True].action, again[False].action)


@pytest.mark.parametrize("seed", range(6))
def test_one_steps_root_rounds_change_the_same_arrays_as_numpy(seed):
    """Right after the root rounds, before the descent and ``resync``: the roots' halving arrays, the
    tree, the lanes' paths and ends, and the statistics ``restore`` puts back. (The numpy rounds also
    choose for games with fewer lanes than the round's number, which ``resync`` undoes: the searches
    above hold the two equal there.)"""
    rng = np.random.default_rng(seed)
    state = mixed_batch(seed)
    searched_before = searched(state, False, int(rng.integers(1, 40)), leaves_per_call=3)
    lanes_per_game = np.full(state.batch_size, int(rng.integers(2, 17)))
    cfg = config("gumbel", 80, temperature=1.0, max_considered=int(rng.integers(2, 17)))
    start = searched_before.tree.node_visits[:, 0]  # a new search of the searched roots
    runs = {}
    for compiled in (True, False):
        tree = copy.deepcopy(grow(searched_before.tree, 100))
        algorithm = ALGORITHMS["gumbel"](tree, cfg, np.random.default_rng(seed), tree.children_visits[:, 0].copy())
        games = np.repeat(np.arange(state.batch_size), lanes_per_game)
        step = (lanes._Step if compiled else NumpyStep)(tree, algorithm, games, False)
        go = step.halving_rounds(algorithm, lanes_per_game, start)
        runs[compiled] = tree, algorithm.root, step, go
    (tree, root, step, go), (tree_np, root_np, step_np, go_np) = runs[True], runs[False]
    assert_same_trees(tree, tree_np)
    for field in dataclasses.fields(root):
        if field.name not in ("considered", "considered_at", "considered_base", "considered_score", "chosen"):
            np.testing.assert_array_equal(getattr(root, field.name), getattr(root_np, field.name), err_msg=field.name)
    for name in ("final", "dropped", "pending"):
        np.testing.assert_array_equal(getattr(step, name), getattr(step_np, name), err_msg=name)
    for name in ("path_lane", "path_node", "path_action", "placed_games", "placed_nodes"):
        np.testing.assert_array_equal(*(np.concatenate(s.__dict__[name] or [[]]) for s in (step, step_np)), name)
    np.testing.assert_array_equal(go[0], go_np[0])
    np.testing.assert_array_equal(go[1], go_np[1])
    step.restore()
    step_np.restore()
    assert_same_trees(tree, tree_np)


def test_by_node_sorts_lanes_stably_and_ranks_them_at_their_node():
    node = np.array([7, 3, 7, 9, 3, 7, 1])
    lanes_sorted, node_sorted, rank = by_node(np.arange(7, dtype=np.int64), node.astype(np.int64))
    assert node_sorted.tolist() == [1, 3, 3, 7, 7, 7, 9]
    assert lanes_sorted.tolist() == [6, 1, 4, 0, 2, 5, 3]  # the lanes at one node keep their order
    assert rank.tolist() == [0, 0, 1, 0, 1, 2, 0]
