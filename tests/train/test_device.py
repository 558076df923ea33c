"""Where self-play runs the network: the training GPU if any, in half precision there; else the CPU."""

import torch

from stapel_rl.models import fused
from stapel_rl.train.app import selfplay_device


def test_selfplay_follows_a_cuda_learner_and_stays_on_the_cpu_otherwise():
    assert selfplay_device(torch.device("cpu")) == torch.device("cpu")
    assert selfplay_device(torch.device("cuda")) == torch.device("cuda")
    assert selfplay_device(torch.device("cuda:1")) == torch.device("cuda:1")
    assert selfplay_device(torch.device("mps")) == torch.device("cpu")  # only CUDA is followed


def test_auto_precision_is_half_on_cuda_and_bf16_only_where_native_on_the_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert fused.resolve_precision("auto", torch.device("cuda")) == "bf16"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert fused.resolve_precision("auto", torch.device("cuda")) == "fp16"  # pre-Ampere: fp16 tensor cores
    cpu = fused.resolve_precision("auto", torch.device("cpu"))
    # without native bf16: the fused ONNX Runtime graph where the `fast` extra is installed (dev has it)
    assert cpu == ("bf16" if fused.bf16_native(torch.device("cpu")) else "onnx" if fused.onnx_available() else "fp32")
    assert fused.resolve_precision("fp16", torch.device("cpu")) == "fp16"


def test_an_fp16_evaluator_says_what_the_fp32_one_says():
    # The CUDA path's format, checked here on the CPU: the same network in fp16 and fp32.
    import numpy as np

    from stapel_rl.env.sampling import random_positions
    from stapel_rl.models import PRESETS, NetworkEvaluator, PolicyValueNet

    torch.manual_seed(0)
    net = PolicyValueNet(PRESETS["tiny"])
    state = random_positions("I", 16, 20, np.random.default_rng(0))
    half = NetworkEvaluator(net, "cpu", precision="fp16")(state)
    full = NetworkEvaluator(net, "cpu", precision="fp32")(state)
    assert half.logits.dtype == np.float32 and np.abs(half.value - full.value).max() < 0.01
    assert np.abs(half.logits - full.logits).max() < 0.05
