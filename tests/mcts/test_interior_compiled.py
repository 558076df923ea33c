"""Gumbel's compiled in-tree choice (mcts/interior_compiled.py) against its numpy form
(``gumbel.Interior.choose_numpy``): the same actions and kept counts, to the last bit."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from searches import UNIFORM, random_positions
from test_lanes_compiled import assert_same_trees
from test_reference_formulas import RandomEvaluator

from stapel_rl.env import VARIANT_I, VARIANT_II
from stapel_rl.mcts import SearchConfig, gumbel, search
from stapel_rl.mcts.numpy_rounding import exp32, exp32_scalar, log32, log32_scalar

EVALUATORS = {
    "uniform": UNIFORM,
    "random": RandomEvaluator(0),
    # logits spread over hundreds: many legal priors underflow to 0, and some nodes have no unvisited prior left
    "sharp": RandomEvaluator(3, scale=20.0),
    "near-ties": RandomEvaluator(2, scale=1.0, near_ties=True),
}


def test_exp32_and_log32_round_alike_in_numpy_and_compiled():
    x = np.random.default_rng(0).uniform(-90, 5, 5000).astype(np.float32)
    assert exp32(x).tolist() == [exp32_scalar(v) for v in x]
    y = np.abs(x) + np.float32(1e-30)
    assert log32(y).tolist() == [log32_scalar(v) for v in y]


@pytest.mark.parametrize("evaluator", EVALUATORS.values(), ids=EVALUATORS.keys())
@pytest.mark.parametrize("leaves", [1, 8])
def test_compiled_choices_at_every_node_of_searched_trees_are_numpys(evaluator, leaves):
    """After a search, choose again at every node with a choice (stale ones recounted), both ways."""
    for variant in (VARIANT_I, VARIANT_II):
        state = random_positions(variant, 6, 14, seed=leaves)
        cfg = SearchConfig(num_simulations=48, algorithm="gumbel", leaves_per_call=leaves, max_considered=8)
        tree = search(state, evaluator, cfg, np.random.default_rng(1)).tree
        interior = gumbel.Interior.start(tree, cfg.c_visit, cfg.c_scale)  # chooses at every node below the roots
        games, nodes = np.nonzero((tree.forced == -1) & (np.arange(tree.capacity) < tree.num_nodes[:, None]))
        interior.stale[games, nodes] = True  # recount the unvisited children everywhere
        numpy_form = copy.deepcopy(interior)
        fast = interior.choose(tree, games, nodes)
        slow = numpy_form.choose_numpy(tree, games, nodes)
        np.testing.assert_array_equal(fast, slow)
        for name in ("next_action", "best", "best_prior", "mass", "stale"):
            np.testing.assert_array_equal(getattr(interior, name), getattr(numpy_form, name), err_msg=name)


@pytest.mark.parametrize("evaluator", EVALUATORS.values(), ids=EVALUATORS.keys())
@pytest.mark.parametrize("leaves", [1, 16])
def test_searches_with_the_compiled_choice_are_the_numpy_searches(evaluator, leaves, monkeypatch):
    state = random_positions(VARIANT_I, 4, 20, seed=3)
    cfg = SearchConfig(num_simulations=64, algorithm="gumbel", leaves_per_call=leaves)
    fast = search(state, evaluator, cfg, np.random.default_rng(2))
    monkeypatch.setattr(gumbel.Interior, "choose", gumbel.Interior.choose_numpy)
    plain = search(state, evaluator, cfg, np.random.default_rng(2))
    assert_same_trees(fast.tree, plain.tree)
    np.testing.assert_array_equal(fast.action, plain.action)
