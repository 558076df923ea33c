"""The MCTS-minimax hybrid: the network's leaf values blended with the compiled alpha-beta engine's."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from stapel_rl.classical import Position, Searcher, nnue
from stapel_rl.env import engine
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.eval.agents import make_agent
from stapel_rl.eval.hybrid import BlendedEvaluator
from stapel_rl.models.evaluator import UniformEvaluator


def middlegames(variant: str, n: int, plies: int = 24):
    rng = np.random.default_rng(5)
    state = engine.init(variant, n)
    for _ in range(plies):
        state = engine.step(state, random_legal_actions(state.legal_action_mask, rng))
    return state


@pytest.mark.parametrize("variant", ["I", "II"])
def test_the_blend_is_the_engines_value_where_weighted_fully(variant):
    state = middlegames(variant, 6)
    engine_only = BlendedEvaluator(UniformEvaluator(), depth=2, weight=1.0)(state)
    k = nnue.packaged_scale(variant)
    for g in np.flatnonzero(~state.done):
        score = Searcher(variant, tt_bits=16).search(Position.from_state(state, int(g)), depth=2).score
        assert engine_only.value[g] == pytest.approx(2 * expit(k * score) - 1, abs=1e-6)
    assert (engine_only.logits == 0).all()  # the priors stay the inner evaluator's
    half = BlendedEvaluator(UniformEvaluator(), depth=2, weight=0.25, eval="nnue")(state)
    assert np.abs(half.value).max() <= 0.25 + 1e-6 and np.abs(half.value).max() > 0


def test_finished_games_keep_the_networks_value():
    state = middlegames("I", 2)
    state.terminated[1] = True
    values, searched = BlendedEvaluator(UniformEvaluator(), 1, 0.5).scores(state)
    assert searched.tolist() == [not state.done[0], False] and values[1] == 0


def test_hybrid_agent_specs():
    agent = make_agent("mcts:variant_I:sims=4:ab_depth=1:ab_weight=0.3")
    assert isinstance(agent.evaluator, BlendedEvaluator)
    assert (agent.evaluator.depth, agent.evaluator.weight, agent.evaluator.eval) == (1, 0.3, "hand")
    assert agent.evaluator.net is agent.evaluator.inner.net  # what agents read of their evaluator
    state = middlegames("I", 1)
    assert state.legal_action_mask[0, agent(state, np.random.default_rng(0))[0]]
    assert make_agent("mcts:variant_II:sims=2:ab_depth=2:ab_eval=nnue").evaluator.weight == 0.5
    assert make_agent("mcts:variant_I:sims=2:ab_depth=1:ab_weight=0").evaluator.weight == 0.0  # in [0, 1]
    for bad, message in [
        ("ab_weight=0.5", "go with ab_depth=N"),
        ("ab_depth=1:ab_weight=2", r"weight must be in \[0, 1\]"),
        ("ab_depth=1:ab_eval=deep", "evaluation network 'deep' does not exist"),
        ("ab_depth=1:ab_eval=", "must be hand, nnue or a network file's path"),
        ("ab_depth=1:ab_weight=nan", r"weight must be in \[0, 1\], got nan"),
        ("ab_depth=1:ab_weight=x", "ab_weight='x' is not a number"),
        ("ab_depth=0", "ab_depth"),
    ]:
        with pytest.raises(ValueError, match=message):
            make_agent(f"mcts:variant_I:sims=2:{bad}")


def test_the_leaves_can_search_with_a_network_file(tmp_path):
    # The packaged network named by its path: the same leaf values as ab_eval=nnue, in the file's own scale.
    state = middlegames("II", 4)
    path = nnue.packaged_path("II")
    by_name = BlendedEvaluator(UniformEvaluator(), depth=1, weight=1.0, eval="nnue")(state)
    by_path = BlendedEvaluator(UniformEvaluator(), depth=1, weight=1.0, eval=str(path))(state)
    np.testing.assert_array_equal(by_path.value, by_name.value)
    assert np.abs(by_path.value).max() > 0
    # Another scale: a network whose output is in half the centi-men reads as half the logit.
    net = nnue.load(path)
    net.head = net.head * np.array([1.0, 0.5])
    halved = BlendedEvaluator(UniformEvaluator(), 1, 1.0, str(nnue.save(net, tmp_path / "half.npz")))
    searcher, k = halved.searcher("II")
    assert k == pytest.approx(2 * nnue.packaged_scale("II"))
    agent = make_agent(f"mcts:variant_II:sims=2:ab_depth=1:ab_eval={path}")
    assert agent.evaluator.leaf_net is not None and agent.evaluator.net is agent.evaluator.inner.net
    with pytest.raises(ValueError, match="is for Variant II, not I"):
        BlendedEvaluator(UniformEvaluator(), 1, 1.0, str(path))(middlegames("I", 1))
    (tmp_path / "bad.npz").write_bytes(b"not a network")
    with pytest.raises(ValueError, match="cannot be read"):
        make_agent(f"mcts:variant_II:sims=2:ab_depth=1:ab_eval={tmp_path / 'bad.npz'}")
