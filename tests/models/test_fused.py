"""The fast inference path: batch norm folded, bf16, compared with fp32 on trained networks and real positions.

Both trained networks are real: ``checkpoints/variant_I_zero.pt`` (the committed
Variant I agent learned from zero, 4x32 on the 10x10 grid) and ``tests/data/small_compact_I.pt``
(4x32 on the 10x5 compact layout, 12 minutes of ``stapel-train`` on Variant I).
"""

import pathlib

import numpy as np
import pytest
import torch

from stapel_rl.env.sampling import random_positions
from stapel_rl.eval.network_agents import load_evaluator
from stapel_rl.models import NetworkEvaluator, PolicyValueNet, fused
from stapel_rl.models.accuracy import compare, policy_kl
from stapel_rl.train.replay import TrainingBatch
from stapel_rl.train.trainer import OptimConfig, Trainer

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRAINED = {
    "grid": ROOT / "checkpoints" / "variant_I_zero.pt",
    "compact": ROOT / "tests" / "data" / "small_compact_I.pt",
}


@pytest.fixture(scope="module")
def positions():
    """256 live Variant I positions after 30 random plies (captures and stacks in play)."""
    return random_positions("I", 256, 30, np.random.default_rng(0))


def trained(layout: str) -> PolicyValueNet:
    net = load_evaluator(str(TRAINED[layout]))[0].net
    assert net.config.layout == layout and (net.config.blocks, net.config.channels) == (4, 32)
    return net


@pytest.mark.parametrize("layout", ["grid", "compact"])
def test_folding_batch_norm_is_exact_up_to_rounding(layout, positions):
    accuracy = compare(trained(layout), positions, precision="fp32")
    assert accuracy["max_dvalue"] < 1e-4
    assert accuracy["max_kl"] < 1e-7
    assert accuracy["same_argmax"] == 1.0


@pytest.mark.parametrize("layout", ["grid", "compact"])
def test_bf16_stays_close_to_fp32_on_trained_networks(layout, positions):
    accuracy = compare(trained(layout), positions, precision="bf16")
    # Measured here: max |dvalue| about 0.05, mean about 0.01, mean KL about 1e-5.
    assert accuracy["max_dvalue"] < 0.12
    assert accuracy["mean_dvalue"] < 0.03
    assert accuracy["mean_kl"] < 1e-3
    assert accuracy["same_argmax"] > 0.95
    # ... and is not the fp32 path under another name.
    assert accuracy["max_dvalue"] > 0 and accuracy["mean_kl"] > 0


def test_fold_batch_norm_of_one_layer():
    torch.manual_seed(0)
    conv, bn = torch.nn.Conv2d(3, 5, 3, padding=1, bias=False), torch.nn.BatchNorm2d(5)
    with torch.no_grad():
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.normal_()
        bn.bias.normal_()
    bn.eval()
    x = torch.randn(4, 3, 10, 5)
    with torch.no_grad():
        torch.testing.assert_close(fused.fold_batch_norm(conv, bn)(x), bn(conv(x)), rtol=1e-5, atol=1e-5)


def test_inference_copy_leaves_the_network_alone():
    net = trained("compact")
    net.train()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    fast = fused.inference_copy(net, "bf16")
    assert net.training and not fast.training
    assert all(v.dtype == before[k].dtype and torch.equal(v, before[k]) for k, v in net.state_dict().items())
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in fast.modules())
    assert {p.dtype for p in fast.parameters()} == {torch.bfloat16}


def test_evaluator_follows_weight_changes(positions):
    """Training the shared network (optimizer steps, load_state_dict) reaches the evaluator's fast copy."""
    net = PolicyValueNet(trained("compact").config)
    evaluator = NetworkEvaluator(net, "cpu", precision="bf16")
    first = evaluator(positions)
    assert evaluator(positions).value.tobytes() == first.value.tobytes()  # same weights, same copy

    net.load_state_dict(trained("compact").state_dict())
    loaded = evaluator(positions)
    np.testing.assert_array_equal(loaded.value, NetworkEvaluator(net, "cpu", precision="bf16")(positions).value)
    assert np.abs(loaded.value - first.value).max() > 0.05

    trainer = Trainer(net, OptimConfig(lr=1e-2, warmup_steps=1), torch.device("cpu"))
    from stapel_rl.env.observation import canonical_mask, encode

    mask = canonical_mask(positions)
    trainer.step(
        TrainingBatch(
            encode(positions, "compact"),
            mask,
            mask / mask.sum(1, keepdims=True),
            np.ones(256, np.float32),
            np.zeros(256, np.float32),
        )
    )
    stepped = evaluator(positions)
    np.testing.assert_array_equal(stepped.value, NetworkEvaluator(net, "cpu", precision="bf16")(positions).value)
    assert np.abs(stepped.value - loaded.value).max() > 0


def test_precision_choice(monkeypatch):
    cpu = torch.device("cpu")
    # The torch paths' choice (the ONNX Runtime path's is in test_onnx_runtime.py).
    monkeypatch.setattr(fused, "onnx_available", lambda: False)
    monkeypatch.setattr(fused, "bf16_native", lambda device: True)
    assert fused.resolve_precision("auto", cpu) == "bf16"
    monkeypatch.setattr(fused, "bf16_native", lambda device: False)
    assert fused.resolve_precision("auto", cpu) == "fp32"
    assert fused.resolve_precision("bf16", cpu) == "bf16"  # asked for explicitly: emulated where not native
    with pytest.raises(ValueError, match="precision"):
        fused.resolve_precision("int4", cpu)
    with pytest.raises(ValueError, match="precision"):
        NetworkEvaluator(PolicyValueNet("tiny"), "cpu", precision="fp16x")


def test_policy_kl_of_known_distributions():
    legal = np.array([[True, True, False], [True, True, True]])
    same = np.log(np.array([[0.5, 0.5, 0.3], [0.2, 0.3, 0.5]]))
    np.testing.assert_allclose(policy_kl(same, same, legal), [0.0, 0.0], atol=1e-12)
    # KL([1/2, 1/2] || [1/4, 3/4]) = 1/2 log 2 + 1/2 log(2/3); the illegal entry is ignored.
    other = np.log(np.array([[0.25, 0.75, 100.0], [0.2, 0.3, 0.5]]))
    np.testing.assert_allclose(policy_kl(same, other, legal)[0], 0.5 * np.log(2) + 0.5 * np.log(2 / 3), rtol=1e-9)


def test_agents_and_the_engine_protocol_take_the_fast_path():
    from stapel_rl.eval.agents import make_agent

    cpu = torch.device("cpu")
    # stapel-match, stapel-tournament, stapel-engine and stapel-play all build their agents with make_agent.
    for kind, path, options in (("mcts", TRAINED["grid"], ":sims=2"), ("policy", TRAINED["compact"], "")):
        evaluator = make_agent(f"{kind}:{path}{options}").evaluator
        assert isinstance(evaluator, NetworkEvaluator)
        assert evaluator.fold and evaluator.precision == fused.resolve_precision("auto", cpu)
