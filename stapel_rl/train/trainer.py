"""Gradient steps on replay batches: policy cross-entropy + value MSE (+ Variant II points loss)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from stapel_rl.models.fused import bf16_native
from stapel_rl.models.network import PolicyValueNet, masked_log_softmax
from stapel_rl.train.replay import TrainingBatch


@dataclasses.dataclass
class OptimConfig:
    """The optimiser's settings (the training config's ``train`` group holds them through ``TrainConfig``).

    Attributes:
    lr: peak learning rate (AdamW).
    weight_decay: AdamW weight decay.
    warmup_steps: linear warm-up from 0 to ``lr``.
    lr_schedule: "constant"; "cosine" (to ``lr_min_factor * lr`` over ``total_steps``); or
        "cosine_hours", the same cosine over the run's time budget (``train.hours``), so that the
        rate reaches its minimum as the run ends however many steps the machine takes (a run
        without a time budget falls back to the cosine over ``total_steps``).
    total_steps: length of the "cosine" schedule in gradient steps (and of "cosine_hours" in a run
        without a time budget).
    lr_min_factor: final learning rate as a fraction of ``lr``.
    points_weight: weight of the auxiliary points loss (Variant II).
    points_scale: the points difference is divided by this before the loss.
    train_precision: "fp32", or "bf16" (the forward pass under bf16 autocast: weights,
        gradients and the optimizer stay fp32), or "auto" (bf16 where the device
        computes it natively).
    """

    lr: float = 2e-3
    weight_decay: float = 1e-4
    warmup_steps: int = 100
    lr_schedule: str = "cosine"
    total_steps: int = 20000
    lr_min_factor: float = 0.1
    points_weight: float = 0.25
    points_scale: float = 10.0
    train_precision: str = "fp32"


#: The values of ``OptimConfig.lr_schedule``.
LR_SCHEDULES = ("constant", "cosine", "cosine_hours")
#: The values of ``OptimConfig.train_precision``.
TRAIN_PRECISIONS = ("auto", "fp32", "bf16")


def lr_factor(step: int, config: OptimConfig, run_fraction: "float | None" = None) -> float:
    """Multiplier of the peak learning rate at gradient step ``step``; ``run_fraction``: the share of the
    run's time budget spent, which the "cosine_hours" schedule follows (None: the run has no budget,
    and the cosine runs over ``total_steps`` steps)."""
    warm = min(1.0, (step + 1) / max(1, config.warmup_steps))
    if config.lr_schedule not in LR_SCHEDULES:
        raise ValueError(f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}; got {config.lr_schedule!r}")
    if config.lr_schedule == "constant":
        return warm
    if config.lr_schedule == "cosine" or run_fraction is None:
        progress = min(1.0, step / max(1, config.total_steps))
    else:
        progress = min(1.0, max(0.0, run_fraction))
    cosine = config.lr_min_factor + (1 - config.lr_min_factor) * 0.5 * (1 + math.cos(math.pi * progress))
    return warm * cosine


def training_precision(precision: str, device: torch.device) -> str:
    """ "fp32" or "bf16" for training on ``device`` ("auto": bf16 where native). No fp16: it would need
    loss scaling, and bf16 keeps fp32's exponent range."""
    if precision not in TRAIN_PRECISIONS:
        raise ValueError(f"training precision must be 'auto', 'fp32' or 'bf16', got {precision!r}")
    if precision == "auto":
        return "bf16" if bf16_native(torch.device(device)) else "fp32"
    return precision


class Trainer:
    """Owns the optimizer and the learning-rate schedule of one network."""

    def __init__(self, net: PolicyValueNet, config: OptimConfig, device: torch.device):
        self.net, self.config, self.device = net, config, device
        self.optimizer = torch.optim.AdamW(net.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        # The share of the run's time budget spent (None: no budget): the training loop sets it,
        # "cosine_hours" reads it.
        self.run_fraction: "float | None" = None
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: lr_factor(s, config, self.run_fraction)
        )
        self.steps = 0
        self.precision = training_precision(config.train_precision, device)

    def step(self, batch: TrainingBatch) -> "dict[str, float]":
        """One gradient step; returns the losses and diagnostics of the batch."""
        t = lambda a: torch.as_tensor(a, device=self.device)  # noqa: E731
        obs = t(batch.obs).contiguous(memory_format=torch.channels_last)
        mask, target, z = t(batch.mask), t(batch.policy), t(batch.value)
        self.net.train()
        with torch.autocast(self.device.type, torch.bfloat16, enabled=self.precision == "bf16"):
            logits, value, points = self.net(obs)
        logits, value = logits.float(), value.float()
        points = None if points is None else points.float()
        log_p = masked_log_softmax(logits, mask)
        policy_loss = -(target * log_p).sum(dim=1).mean()
        value_loss = torch.mean((value - z) ** 2)
        loss = policy_loss + value_loss
        metrics: dict[str, float] = {}
        if points is not None:
            points_loss = torch.nn.functional.smooth_l1_loss(points, t(batch.points_diff) / self.config.points_scale)
            loss = loss + self.config.points_weight * points_loss
            metrics["loss/points"] = points_loss.item()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        self.steps += 1
        with torch.no_grad():
            p = log_p.exp()
            entropy = -(p * torch.where(mask, log_p, torch.zeros_like(log_p))).sum(dim=1).mean()
            target_entropy = -(target * torch.log(target.clamp_min(1e-12))).sum(dim=1).mean()
        metrics.update(
            {
                "loss/total": loss.item(),
                "loss/policy": policy_loss.item(),
                "loss/value": value_loss.item(),
                "policy/entropy": entropy.item(),
                "policy/target_entropy": target_entropy.item(),
                "value/abs_error": torch.mean(torch.abs(value - z)).item(),
                "train/lr": float(self.scheduler.get_last_lr()[0]),
            }
        )
        return metrics

    def state_dict(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict(), "steps": self.steps}

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.steps = int(state["steps"])


def mean_metrics(history: "list[dict[str, float]]") -> "dict[str, float]":
    keys = history[0].keys() if history else []
    return {k: float(np.mean([h[k] for h in history])) for k in keys}
