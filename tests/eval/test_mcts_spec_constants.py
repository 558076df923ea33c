"""The search constants of an ``mcts`` agent spec: the network's training values (or play's) unless the spec names
others."""

import dataclasses

import pytest

from stapel_rl.bundled import resolve_checkpoint
from stapel_rl.eval.agents import make_agent
from stapel_rl.eval.network_agents import PLAY_CONSTANTS
from stapel_rl.models import checkpoint


def test_the_defaults_are_the_networks_training_constants():
    trained = checkpoint.load(resolve_checkpoint("variant_I"))["config"]["mcts"]
    config = make_agent("mcts:variant_I").config
    assert (config.c_puct, config.c_visit, config.c_scale, config.max_considered) == tuple(
        trained[k] for k in ("c_puct", "c_visit", "c_scale", "max_considered")
    )


def test_play_constants_override_the_networks(tmp_path):
    saved = checkpoint.load(resolve_checkpoint("variant_I"))
    saved["config"]["mcts"]["min_span"] = 1e-8  # a network trained with mctx's floor plays with play's
    path = checkpoint.save(tmp_path, 1, saved)
    assert make_agent(f"mcts:{path}").config.min_span == PLAY_CONSTANTS["min_span"]
    assert make_agent(f"mcts:{path}:min_span=1e-8").config.min_span == 1e-8


def test_each_constant_is_set_by_the_spec():
    config = make_agent("mcts:variant_I:c_puct=2.5:c_visit=0:c_scale=0.01:min_span=2:considered=8:sims=32").config
    assert (config.c_puct, config.c_visit, config.c_scale, config.min_span, config.max_considered) == (
        2.5, 0.0, 0.01, 2.0, 8
    )  # fmt: skip
    untouched = make_agent("mcts:variant_I:sims=32").config
    assert untouched.min_span == PLAY_CONSTANTS["min_span"] == 0.5  # play's floor, not the network's (mctx's)
    changed = {f.name for f in dataclasses.fields(config) if getattr(config, f.name) != getattr(untouched, f.name)}
    assert changed == {"c_puct", "c_visit", "c_scale", "min_span", "max_considered"}


@pytest.mark.parametrize(
    "option,message",
    [
        ("c_scale=0", "c_scale must be positive and finite, got 0.0"),
        ("c_puct=-1", "c_puct must be positive and finite, got -1.0"),
        ("c_visit=-5", "c_visit must be at least 0 and finite, got -5.0"),
        ("c_scale=nan", "c_scale must be positive and finite, got nan"),
        ("min_span=2.5", "min_span must be in (0, 2] (the width of the value range), got 2.5"),
        ("min_span=0", "min_span must be in (0, 2] (the width of the value range), got 0.0"),
        ("considered=0", "max_considered must be at least 1, got 0 (option considered=)"),
        ("considered=2.5", "mcts agent option considered='2.5' is not a whole number"),
        ("c_puct=big", "mcts agent option c_puct='big' is not a number"),
        ("cscale=0.1", "unknown mcts agent option(s) ['cscale']"),
    ],
)
def test_a_bad_constant_is_a_clear_error(option, message):
    with pytest.raises(ValueError) as problem:
        make_agent(f"mcts:variant_I:{option}")
    assert message in str(problem.value)
