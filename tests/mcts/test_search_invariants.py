"""Invariants of the batched search on random positions: visit counts, determinism, subtree reuse,
Gumbel's schedule with few simulations (the uniform evaluator, as in test_mcts.py)."""

import dataclasses

import numpy as np
import pytest
from searches import ALGORITHMS, UNIFORM, config, legal_ids, random_positions, run
from trees import check_tree

from stapel_rl.env import VARIANT_I, VARIANT_II, init, step
from stapel_rl.mcts import SearchConfig, halving, search, subtree

# ------------------------------------------------ 1. visit counts


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


# ------------------------------------------------ 2. determinism


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


# ------------------------------------------------ 3. subtree reuse


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


# ------------------------------------------------ 4. Gumbel with few simulations


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
