"""scripts/bench_mcts.py times agents only on positions where they search."""

import numpy as np
import pytest

from scripts import load_script
from stapel_rl.env import take
from stapel_rl.eval.agents import make_agent
from stapel_rl.mcts import SearchConfig
from stapel_rl.models import UniformEvaluator


@pytest.mark.parametrize("variant", ["I", "II"])
def test_the_agent_benchmark_positions_each_have_a_choice_and_are_searched(variant):
    positions = load_script("bench_mcts").positions_with_a_choice(variant, 6, np.random.default_rng(1))
    assert positions.batch_size == 6
    assert (positions.legal_action_mask.sum(axis=1) > 1).all()
    assert not positions.done.any()
    assert positions.variant.name == variant
    # What the benchmark divides by: a search of every position counts its simulations.
    agent = make_agent(f"mcts:variant_{variant}:sims=8:reuse=off")
    for game in range(positions.batch_size):
        agent(take(positions, np.array([game])), np.random.default_rng(0))
        assert agent.simulations == 8


def test_the_agent_benchmark_times_the_agent_before_leaf_batching_beside_each_leaves_per_call():
    bench = load_script("bench_mcts")
    positions = bench.positions_with_a_choice("I", 2, np.random.default_rng(1))
    rates = bench.agent_rates("mcts:variant_I", 8, [1, 4], positions, repeats=1)
    assert list(rates) == ["before", 1, 4]
    assert all(rate > 0 for rate in rates.values())


def test_the_search_benchmark_counts_every_games_simulations():
    bench = load_script("bench_mcts")
    state = bench.midgame(4, 10, np.random.default_rng(0))
    calls = []

    def counting(state):
        calls.append(state.batch_size)
        return UniformEvaluator()(state)

    rate = bench.sims_per_second(state, counting, SearchConfig(8, "gumbel"), 2)
    assert rate > 0
    assert len(calls) == 3 * 9  # a warm-up and two timed searches: the roots, then a call per simulation
