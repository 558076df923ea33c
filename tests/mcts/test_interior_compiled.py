"""Gumbel's compiled in-tree choice (mcts/interior_compiled.py) at every node of searched trees: the
plain formulas' best (tests/mcts/test_reference_formulas.py) and the counts it keeps, recounted."""

from __future__ import annotations

import math

import numpy as np
import pytest
from searches import UNIFORM, random_positions
from test_reference_formulas import RandomEvaluator, assert_best_interior_choice, assert_kept_counts

from stapel_rl.env import VARIANT_I, VARIANT_II
from stapel_rl.mcts import SearchConfig, gumbel, search
from stapel_rl.mcts.numpy_rounding import exp32_scalar, log32_scalar

EVALUATORS = {
    "uniform": UNIFORM,
    "random": RandomEvaluator(0),
    # logits spread over hundreds: many legal priors underflow to 0, and some nodes have no unvisited prior left
    "sharp": RandomEvaluator(3, scale=20.0),
    "near-ties": RandomEvaluator(2, scale=1.0, near_ties=True),
}


def test_exp32_and_log32_are_float64s_rounded_once():
    x = np.random.default_rng(0).uniform(-90, 5, 5000).astype(np.float32)
    assert [exp32_scalar(v) for v in x] == [np.float32(math.exp(float(v))) for v in x]
    y = np.abs(x) + np.float32(1e-30)
    assert [log32_scalar(v) for v in y] == [np.float32(math.log(float(v))) for v in y]


@pytest.mark.parametrize("evaluator", EVALUATORS.values(), ids=EVALUATORS.keys())
@pytest.mark.parametrize("leaves", [1, 8])
def test_compiled_choices_at_every_node_of_searched_trees_score_the_formulas_best(evaluator, leaves):
    """After a search, choose again at every node with a choice, every node's unvisited children recounted."""
    for variant in (VARIANT_I, VARIANT_II):
        state = random_positions(variant, 6, 14, seed=leaves)
        cfg = SearchConfig(num_simulations=48, algorithm="gumbel", leaves_per_call=leaves, max_considered=8)
        tree = search(state, evaluator, cfg, np.random.default_rng(1)).tree
        games, nodes = np.nonzero((tree.forced == -1) & (np.arange(tree.capacity) < tree.num_nodes[:, None]))
        assert games.size > 50
        interior = gumbel.Interior.empty(tree, cfg.c_visit, cfg.c_scale)
        chosen = interior.choose(tree, games, nodes)
        assert_best_interior_choice(tree, games, nodes, chosen, cfg.c_visit, cfg.c_scale)
        np.testing.assert_array_equal(interior.next_action[games, nodes], chosen)
        assert not interior.stale[games, nodes].any()
        assert_kept_counts(interior, tree, games, nodes)
