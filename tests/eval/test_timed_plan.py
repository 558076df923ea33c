"""How a timed MCTS search spends its time: ``plan=rate`` plans one search from the last searches' rate."""

import numpy as np
import pytest

from stapel_rl.env import take
from stapel_rl.env.sampling import random_positions
from stapel_rl.eval.agents import make_agent
from stapel_rl.eval.network_agents import FIRST_CHUNK, RATE_SHARE, MCTSAgent
from stapel_rl.mcts import SearchConfig
from stapel_rl.models import UniformEvaluator


def positions(count: int) -> list:
    state = random_positions("I", 8 * count, 20, np.random.default_rng(0))
    choice = np.flatnonzero(state.legal_action_mask.sum(axis=1) > 1)[:count]
    return [take(state, np.array([i])) for i in choice]


def chunks_of(agent: MCTSAgent, monkeypatch) -> "list[int]":
    """Record the simulations each search call of ``agent`` is planned for."""
    from stapel_rl.eval import network_agents

    planned: "list[int]" = []
    real = network_agents.search

    def spy(state, evaluator, config, rng, **kwargs):
        planned.append(config.num_simulations)
        return real(state, evaluator, config, rng, **kwargs)

    monkeypatch.setattr(network_agents, "search", spy)
    return planned


@pytest.mark.parametrize("algorithm", ["gumbel", "puct"])
def test_rate_plans_one_search_after_the_first_move(algorithm, monkeypatch):
    config = SearchConfig(num_simulations=2**31 - 1, algorithm=algorithm, leaves_per_call=4)
    agent = MCTSAgent(UniformEvaluator(), config, seconds=0.2, plan="rate")
    planned = chunks_of(agent, monkeypatch)
    first, second = positions(2)
    agent(first, np.random.default_rng(0))
    assert planned[0] == FIRST_CHUNK and agent.rate > 0  # no rate yet: a probe measures it
    rate, planned[:] = agent.rate, []
    agent(second, np.random.default_rng(0))
    assert planned[0] == int(RATE_SHARE * rate * 0.2) > 2 * FIRST_CHUNK


def test_probe_keeps_the_probe_and_a_bad_plan_is_refused(monkeypatch):
    config = SearchConfig(num_simulations=2**31 - 1)
    agent = MCTSAgent(UniformEvaluator(), config, seconds=0.05, plan="probe")
    planned = chunks_of(agent, monkeypatch)
    for state in positions(2):
        planned[:] = []
        agent(state, np.random.default_rng(0))
        assert planned[0] == FIRST_CHUNK
    with pytest.raises(ValueError, match="plan must be one of probe, rate"):
        MCTSAgent(UniformEvaluator(), SearchConfig(), plan="guess")
    with pytest.raises(ValueError, match="unknown mcts agent option"):
        make_agent("mcts:variant_I:plan=guess")
    assert make_agent("mcts:variant_I:plan=rate:sims=8").plan == "rate"
    assert make_agent("mcts:variant_I:sims=8").plan == "probe"
