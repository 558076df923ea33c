"""Gradient steps/s: fp32 against bf16 autocast, same network and batches, in one run.

The learner of a `stapel-train` run with self-play workers trains on one
thread while the workers play; its steps/s bound the iteration rate. Batches
are real replay batches: positions after random play (grid or compact
layout) with the search-policy target set to the uniform policy over legal
moves and random results (targets do not change the cost of a step).

Usage: python scripts/bench_train.py [--size small] [--layout grid] [--batch 256] [--threads 1] [--steps 30]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
import torch

from stapel_rl.env.observation import canonical_mask, encode
from stapel_rl.env.sampling import random_positions
from stapel_rl.models import PRESETS, PolicyValueNet
from stapel_rl.train.replay import TrainingBatch
from stapel_rl.train.trainer import OptimConfig, Trainer


def batches(layout: str, size: int, count: int, rng: np.random.Generator) -> "list[TrainingBatch]":
    state = random_positions("I", size * count, 30, rng)
    obs, mask = encode(state, layout), canonical_mask(state)
    policy = (mask / mask.sum(1, keepdims=True)).astype(np.float32)
    value = rng.choice([-1.0, 1.0], size * count).astype(np.float32)
    return [
        TrainingBatch(
            obs[i * size : (i + 1) * size],
            mask[i * size : (i + 1) * size],
            policy[i * size : (i + 1) * size],
            value[i * size : (i + 1) * size],
            np.zeros(size, np.float32),
        )
        for i in range(count)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="small", choices=sorted(PRESETS))
    parser.add_argument("--layout", default="grid", choices=["grid", "compact"])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    data = batches(args.layout, args.batch, 8, np.random.default_rng(0))
    config = dataclasses.replace(PRESETS[args.size], layout=args.layout)
    rates: "dict[str, list[float]]" = {"fp32": [], "bf16": []}
    losses = {}
    for _ in range(args.rounds):  # interleaved, so both see the same machine
        for precision in rates:
            torch.manual_seed(0)
            trainer = Trainer(PolicyValueNet(config), OptimConfig(train_precision=precision), torch.device("cpu"))
            trainer.step(data[0])  # warm-up (oneDNN primitives)
            start = time.perf_counter()
            for i in range(args.steps):
                metrics = trainer.step(data[i % len(data)])
            rates[precision].append(args.steps / (time.perf_counter() - start))
            losses[precision] = metrics["loss/total"]
    fp32, bf16 = (float(np.median(rates[p])) for p in ("fp32", "bf16"))
    print(f"{args.size} {args.layout}, batch {args.batch}, {args.threads} thread(s), median of {args.rounds}:")
    print(f"  fp32 {fp32:6.2f} steps/s   bf16 autocast {bf16:6.2f} steps/s   ({bf16 / fp32:.2f}x)")
    print(f"  loss after {args.steps + 1} steps: fp32 {losses['fp32']:.4f}, bf16 {losses['bf16']:.4f}")
    print(f"bench_train: speedup {bf16 / fp32:.2f}x (bf16 {bf16:.2f} steps/s, fp32 {fp32:.2f} steps/s)")


if __name__ == "__main__":
    main()
