"""The ONNX Runtime path ("onnx"): compared with fp32 on trained networks and real positions, following
weight changes, and chosen by ``precision="auto"`` where bf16 is not native.

The trained networks are those of test_fused.py. The tests that run ONNX Runtime
are skipped where the optional ``fast`` extra is not installed; the choice
tests run everywhere.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import torch

from stapel_rl.env.sampling import random_positions
from stapel_rl.env.state import take
from stapel_rl.models import NetworkConfig, NetworkEvaluator, PolicyValueNet, fused
from stapel_rl.models.accuracy import compare
from stapel_rl.models.checkpoint import load_network

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRAINED = {
    "grid": ROOT / "checkpoints" / "variant_I_zero.pt",
    "compact": ROOT / "tests" / "data" / "small_compact_I.pt",
}
needs_onnx = pytest.mark.skipif(not fused.onnx_available(), reason="the fast extra (onnx, onnxruntime) is absent")
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def positions():
    """256 live Variant I positions after 30 random plies (captures and stacks in play)."""
    return random_positions("I", 256, 30, np.random.default_rng(0))


def trained(layout: str) -> PolicyValueNet:
    return load_network(TRAINED[layout])[0]


@needs_onnx
@pytest.mark.parametrize("layout", ["grid", "compact"])
def test_onnx_matches_fp32_on_trained_networks(layout, positions):
    accuracy = compare(trained(layout), positions, precision="onnx")
    # fp32 throughout, only the summation order differs: far inside the bf16 path's bounds (0.05, 0.01).
    assert accuracy["max_dvalue"] < 1e-3
    assert accuracy["mean_kl"] < 1e-6
    assert accuracy["same_argmax"] == 1.0


@needs_onnx
@pytest.mark.parametrize(
    "config",
    [
        NetworkConfig(blocks=2, channels=16, policy_channels=2, value_hidden=32, points_head=True),
        NetworkConfig(blocks=2, channels=16, value_hidden=32, layout="compact", policy_head="conv", points_head=True),
        NetworkConfig(blocks=2, channels=16, value_hidden=32, value_head="pool", points_head=True),
    ],
    ids=["grid-fc-points", "compact-conv-points", "grid-pool-points"],
)
def test_onnx_exports_every_head(config, positions):
    torch.manual_seed(0)
    net = PolicyValueNet(config)
    with torch.no_grad():  # batch-norm statistics away from (0, 1), so that folding them matters
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.normal_(0, 0.3)
                module.running_var.uniform_(0.5, 2.0)
    reference = NetworkEvaluator(net, "cpu", precision="fp32", fold=False)(positions)
    onnx = NetworkEvaluator(net, "cpu", precision="onnx")(positions)
    for name in ("logits", "value", "points"):
        np.testing.assert_allclose(getattr(onnx, name), getattr(reference, name), atol=1e-4, rtol=1e-4)


@needs_onnx
def test_onnx_batch_sizes_and_chunks(positions):
    """Agents evaluate one position, self-play hundreds: any batch, in chunks of max_batch, gives the same."""
    net = trained("grid")
    whole = NetworkEvaluator(net, "cpu", precision="onnx")(positions)
    chunked = NetworkEvaluator(net, "cpu", precision="onnx", max_batch=100)
    out = chunked(positions)
    np.testing.assert_allclose(out.logits, whole.logits, atol=1e-5)
    np.testing.assert_allclose(out.value, whole.value, atol=1e-6)
    single = NetworkEvaluator(net, "cpu", precision="onnx")(take(positions, np.arange(1)))
    np.testing.assert_allclose(single.logits, whole.logits[:1], atol=1e-5)
    assert (
        single.points is None
        and len(NetworkEvaluator(net, "cpu", precision="onnx")(take(positions, np.arange(0))).value) == 0
    )
    assert (chunked.positions, chunked.calls) == (256, 1) and chunked.seconds > 0


@needs_onnx
def test_onnx_follows_weight_changes_without_tracing_again(positions):
    """Self-play loads new weights every iteration: they reach the graph, which is traced only once."""
    net = PolicyValueNet(trained("compact").config)
    evaluator = NetworkEvaluator(net, "cpu", precision="onnx")
    first = evaluator(positions)
    graph = evaluator.onnx_network()
    net.load_state_dict(trained("compact").state_dict())
    loaded = evaluator(positions)
    assert evaluator.onnx_network() is graph
    np.testing.assert_allclose(
        loaded.value, NetworkEvaluator(net, "cpu", precision="fp32", fold=False)(positions).value, atol=1e-4
    )
    assert np.abs(loaded.value - first.value).max() > 0.05

    with torch.no_grad():  # an in-place change, as an optimizer step makes
        net.value_head.out.bias.add_(0.5)
    stepped = evaluator(positions)
    np.testing.assert_allclose(
        stepped.value, NetworkEvaluator(net, "cpu", precision="fp32", fold=False)(positions).value, atol=1e-4
    )
    assert np.abs(stepped.value - loaded.value).max() > 0.01


def test_auto_choice(monkeypatch):
    """bf16 where native; else the fused graph where installed; else fp32 (the choice before it)."""
    cases = [
        # (bf16 native, onnx installed) -> auto
        ((True, True), "bf16"),
        ((True, False), "bf16"),
        ((False, True), "onnx"),
        ((False, False), "fp32"),
    ]
    for (native, installed), expected in cases:
        monkeypatch.setattr(fused, "bf16_native", lambda device, native=native: native)
        monkeypatch.setattr(fused, "onnx_available", lambda installed=installed: installed)
        assert fused.resolve_precision("auto", CPU) == expected, (native, installed)
    monkeypatch.setattr(fused, "onnx_available", lambda: True)
    assert fused.resolve_precision("auto", CPU, onnx=False) == "fp32"  # a network that cannot be exported
    assert fused.resolve_precision("onnx", CPU) == "onnx"
    with pytest.raises(ValueError, match="CPU only"):
        fused.resolve_precision("onnx", torch.device("cuda"))


def test_auto_falls_back_without_the_package(monkeypatch, positions):
    """Without onnxruntime (an import that fails), auto is the torch path and evaluates."""
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now raises ImportError
    monkeypatch.setattr(fused, "bf16_native", lambda device: False)
    assert not fused.onnx_available()
    evaluator = NetworkEvaluator(trained("grid"), "cpu", precision="auto")
    assert evaluator.precision == "fp32"
    assert evaluator(take(positions, np.arange(8))).logits.shape == (8, 200)


def test_bf16_native_honours_an_older_instruction_set(monkeypatch):
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: True)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    assert fused.bf16_native(CPU) or not torch.backends.mkldnn.is_available()
    for held in ("AVX2", "avx512_core", "AVX512_CORE_VNNI"):
        monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", held)
        assert not fused.bf16_native(CPU)
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")
    if fused._x86():
        monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")  # ATEN_CPU_CAPABILITY=avx2
        assert not fused.bf16_native(CPU)


HELD = """
import json, numpy as np, torch
from stapel_rl.env.sampling import random_positions
from stapel_rl.models.accuracy import compare
from stapel_rl.models.checkpoint import load_network
from stapel_rl.models.fused import bf16_native, cpu_isa, resolve_precision
net = load_network({path!r})[0]
positions = random_positions("I", 128, 30, np.random.default_rng(0))
print(json.dumps(dict(native=bf16_native(torch.device("cpu")), auto=resolve_precision("auto", torch.device("cpu")),
                      isa=cpu_isa(), **compare(net, positions, "auto"))))
"""


def test_auto_under_the_avx2_emulation():
    """A process held to AVX2, as an AVX2-only CPU runs it: bf16 is not native, and auto stays accurate."""
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2", ATEN_CPU_CAPABILITY="avx2")
    out = subprocess.run(
        [sys.executable, "-c", HELD.format(path=str(TRAINED["grid"]))],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert not result["native"] and result["auto"] == ("onnx" if fused.onnx_available() else "fp32")
    assert result["isa"].startswith("AVX2") or not fused._x86()
    assert result["max_dvalue"] <= 0.05 and result["mean_kl"] <= 0.01
