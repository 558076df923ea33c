"""train.gate_time: the training gate by simulations (0, the default) or at equal time (seconds a move)."""

import numpy as np
import pytest
from omegaconf import OmegaConf

from stapel_rl.env import get_variant
from stapel_rl.eval.network_agents import UNLIMITED
from stapel_rl.models import NetworkEvaluator, PolicyValueNet
from stapel_rl.models.network import PRESETS
from stapel_rl.train import app
from stapel_rl.train.config import Config


def _config(**train: float) -> Config:
    cfg = OmegaConf.structured(Config)
    for key, value in train.items():
        cfg.train[key] = value
    return OmegaConf.to_object(cfg)


@pytest.mark.parametrize("gate_time, seconds, simulations", [(0.0, None, 6), (0.25, 0.25, UNLIMITED)])
def test_the_gate_searches_by_simulations_or_by_time(monkeypatch, gate_time, seconds, simulations):
    played = {}

    def sprt(a, b, variant, test, **options):
        played.update(a=a, b=b, variant=variant)
        test.add_pair(0.75)
        return "H1"

    monkeypatch.setattr(app, "run_sprt", sprt)
    config = _config(gate_time=gate_time, gate_simulations=6)
    variant = get_variant("I")
    net_config = PRESETS["tiny"].for_variant(variant)
    net, best = PolicyValueNet(net_config), NetworkEvaluator(PolicyValueNet(net_config))
    metrics = app.gate(config, net, best, variant, np.random.default_rng(0))
    assert metrics["gate/accepted"] == 1.0 and metrics["gate/pairs"] == 1
    for agent in (played["a"], played["b"]):
        assert agent.seconds == seconds and agent.seconds_per_decision == seconds
        assert agent.config.num_simulations == simulations
    assert played["b"].evaluator is best and played["variant"] is variant


@pytest.mark.parametrize("gate_time", [-0.5, float("inf"), float("nan")])
def test_a_gate_time_that_is_no_number_of_seconds_is_refused(gate_time):
    with pytest.raises(ValueError, match="train.gate_time must be 0 .* or a positive number of seconds a move"):
        _config(gate_time=gate_time)
