"""Gradient steps: the learning-rate schedule, and bf16 autocast training against fp32 on the same batches."""

import math

import numpy as np
import pytest
import torch

from stapel_rl.env.observation import canonical_mask, encode
from stapel_rl.env.sampling import random_positions
from stapel_rl.models import PRESETS, PolicyValueNet
from stapel_rl.train.replay import TrainingBatch
from stapel_rl.train.trainer import OptimConfig, Trainer, lr_factor, training_precision


def test_cosine_schedule_warms_up_then_decays_to_its_floor():
    config = OptimConfig(warmup_steps=10, total_steps=100, lr_min_factor=0.1)
    assert lr_factor(0, config) == pytest.approx(0.1)  # 1/10 of the warm-up
    assert lr_factor(50, config) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi / 2)))
    assert lr_factor(100, config) == pytest.approx(0.1) and lr_factor(10_000, config) == pytest.approx(0.1)
    assert lr_factor(10_000, OptimConfig(lr_schedule="constant")) == 1.0


def test_cosine_hours_follows_the_runs_clock_not_its_steps():
    config = OptimConfig(warmup_steps=10, lr_schedule="cosine_hours", total_steps=100, lr_min_factor=0.1)
    assert lr_factor(5, config, 0.0) == pytest.approx(0.6)  # the warm-up as before
    assert lr_factor(50, config, 0.0) == 1.0  # step 50 of total_steps 100 does not count
    assert lr_factor(50, config, 0.5) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi / 2)))
    assert lr_factor(10, config, 1.0) == pytest.approx(0.1) and lr_factor(10, config, 1.7) == pytest.approx(0.1)
    cosine = OptimConfig(warmup_steps=10, lr_schedule="cosine", total_steps=100, lr_min_factor=0.1)
    for step in (5, 30, 70, 100, 150):  # a run without a time budget: the cosine over total_steps
        assert lr_factor(step, config) == lr_factor(step, cosine)
    assert lr_factor(70, config) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.7)))
    with pytest.raises(ValueError, match="lr_schedule must be one of constant, cosine, cosine_hours; got 'linear'"):
        lr_factor(10, OptimConfig(lr_schedule="linear"))


def test_trainer_anneals_as_the_run_fraction_grows():
    state = random_positions("I", 16, 10, np.random.default_rng(0))
    mask = canonical_mask(state)
    policy = (mask / mask.sum(1, keepdims=True)).astype(np.float32)
    batch = TrainingBatch(encode(state, "grid"), mask, policy, np.zeros(16, np.float32), np.zeros(16, np.float32))
    config = OptimConfig(lr=1e-3, warmup_steps=1, lr_schedule="cosine_hours", lr_min_factor=0.1)
    trainer = Trainer(PolicyValueNet(PRESETS["tiny"]), config, torch.device("cpu"))
    rates = []
    for fraction in (0.0, 0.5, 1.0):
        trainer.run_fraction = fraction
        rates.append(trainer.step(batch)["train/lr"])  # the rate the next step will take
    assert rates == pytest.approx([1e-3, 0.55e-3, 1e-4])


def test_training_precision_choice():
    cpu = torch.device("cpu")
    assert training_precision("fp32", cpu) == "fp32" and training_precision("bf16", cpu) == "bf16"
    assert training_precision("auto", cpu) in ("fp32", "bf16")
    with pytest.raises(ValueError, match="training precision must be"):
        training_precision("fp16", cpu)


def test_bf16_training_follows_fp32_and_keeps_fp32_weights():
    state = random_positions("I", 64, 20, np.random.default_rng(0))
    mask = canonical_mask(state)
    batch = TrainingBatch(
        encode(state, "grid"),
        mask,
        (mask / mask.sum(1, keepdims=True)).astype(np.float32),
        np.random.default_rng(1).choice([-1.0, 1.0], 64).astype(np.float32),
        np.zeros(64, np.float32),
    )
    losses = {}
    for precision in ("fp32", "bf16"):
        torch.manual_seed(0)
        net = PolicyValueNet(PRESETS["tiny"])
        trainer = Trainer(net, OptimConfig(lr=1e-2, warmup_steps=1, train_precision=precision), torch.device("cpu"))
        losses[precision] = [trainer.step(batch)["loss/total"] for _ in range(20)]
        assert all(p.dtype == torch.float32 for p in net.parameters())
    for precision, curve in losses.items():
        assert curve[-1] < 0.8 * curve[0], precision  # it learns the batch
    assert abs(losses["bf16"][0] - losses["fp32"][0]) < 0.02  # same start, bf16 rounding only
    assert abs(losses["bf16"][-1] - losses["fp32"][-1]) < 0.1 * losses["fp32"][-1]
