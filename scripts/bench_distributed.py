"""Self-play positions/s: the learner's own process against 1 and 2 Ray actors, in one run.

Each setting plays the default config's self-play (Variant I, Gumbel with 16
simulations, 128 games, the `small` network with the committed agent's
weights, bf16 inference where native) and is timed from the learner's side
over ``--rounds`` requests of ``--positions`` positions after one warm-up
request, as ``stapel-train`` asks for them:

- single process: ``SelfPlay`` in this process, torch on every core;
- 1 actor / 2 actors: ``stapel-train distributed=ray distributed.actors=N``'s
  actors on a local Ray (one CPU and one torch thread each).

Usage: python scripts/bench_distributed.py [--positions 4096] [--rounds 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import pathlib
import time
from collections.abc import Callable

import numpy as np
import torch

from stapel_rl.models import PRESETS
from stapel_rl.models.checkpoint import load
from stapel_rl.train.config import DistributedConfig
from stapel_rl.train.distributed import RaySelfPlayActors
from stapel_rl.train.selfplay import SelfPlayConfig
from stapel_rl.train.workers import Batch, WorkerPlay, WorkerSpec

ROOT = pathlib.Path(__file__).resolve().parents[1]


def weights_and_config() -> "tuple[dict[str, np.ndarray], dict]":
    saved = load(ROOT / "checkpoints" / "variant_I_zero.pt")
    config = dataclasses.asdict(dataclasses.replace(PRESETS["small"], **saved["model_config"]))
    return {k: v.numpy() for k, v in saved["model"].items()}, config


def timed(
    request: Callable[[int], object], collect: Callable[[], Batch], positions: int, rounds: int
) -> "tuple[float, list[float]]":
    """Positions/s over ``rounds`` request-collect cycles after a warm-up; and each worker's own rate."""
    request(positions)
    collect()
    made, per_worker, start = 0, [], time.perf_counter()
    for _ in range(rounds):
        request(positions)
        batch = collect()
        made += len(batch.positions)
        per_worker.append([n / s for n, s in batch.per_worker])
    return made / (time.perf_counter() - start), list(np.mean(per_worker, axis=0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--positions", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    weights, model_config = weights_and_config()
    spec = WorkerSpec("I", 600, model_config, "auto", SelfPlayConfig(16, "gumbel"), 128, (0, 0, 0))
    results: "dict[str, tuple[float, list[float]]]" = {}

    threads = torch.get_num_threads()
    local = WorkerPlay(spec, -1, threads=threads)
    answers: "list[tuple]" = []
    rate, _ = timed(
        lambda n: answers.append(local.play(weights, 0, n)),
        lambda: Batch.join([answers.pop()]),
        args.positions,
        args.rounds,
    )
    results[f"single process ({threads} torch threads)"] = (rate, [])

    for actors in (1, 2):
        specs = [dataclasses.replace(spec, seed=(0, i, 0)) for i in range(actors)]
        pool = RaySelfPlayActors(specs, DistributedConfig(backend="ray", actors=actors))
        try:
            pool.pids()  # started
            results[f"{actors} Ray actor{'s' if actors > 1 else ''}"] = timed(
                functools.partial(pool.request, weights), pool.collect, args.positions, args.rounds
            )
        finally:
            pool.close()

    base = next(iter(results.values()))[0]
    print(
        f"self-play positions/s, {args.rounds} x {args.positions} positions after a warm-up "
        f"(Variant I, gumbel 16 sims, 128 games, small network):"
    )
    for name, (rate, per_worker) in results.items():
        each = ", each " + ", ".join(f"{r:,.0f}" for r in per_worker) if per_worker else ""
        print(f"  {name:32s} {rate:8,.0f} pos/s  ({rate / base:.2f}x{each})")


if __name__ == "__main__":
    main()
