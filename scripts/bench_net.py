"""Network inference speed: today's fp32 10x10 path against the fast path, in one run.

For each network size, on real positions from random play (batch 512 by
default, the threads given), positions/s through ``NetworkEvaluator``
(encoding, forward pass, policy rotation) of four paths, measured in
interleaved rounds so that a busy machine slows them alike:

- ``fp32 grid``: the network on the 10x10 planes in fp32, layers as trained (the baseline);
- ``bf16 grid``: same layout, batch norm folded, bf16;
- ``fp32 compact``: the 10x5 layout (dark squares only), batch norm folded, fp32;
- ``fast``: what self-play uses, the 10x5 layout with ``precision="auto"`` (bf16
  where this CPU computes it natively).

Lower precision must not change what the network says: for the size the
default config trains, the fast path is compared with the same network (same
layout, same trained weights) evaluated in fp32 as trained: the largest value
difference and the mean KL divergence of the policy over the legal moves.

Usage: python scripts/bench_net.py [--sizes small default] [--batch 512] [--threads 2] [--checkpoint PATH]
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import statistics
import time

import numpy as np
import torch

from stapel_rl._malloc import tune_malloc
from stapel_rl.env.sampling import random_positions
from stapel_rl.models import PRESETS, NetworkEvaluator, PolicyValueNet
from stapel_rl.models.accuracy import compare
from stapel_rl.models.checkpoint import load_network

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: Trained 4x32 networks by layout: the committed Variant I agent (10x10 grid) and a compact one
#: trained for 12 minutes on Variant I (both are the tests' references too).
TRAINED = {"grid": ROOT / "checkpoints" / "variant_I.pt", "compact": ROOT / "tests" / "data" / "small_compact_I.pt"}


def default_model() -> "tuple[str, str]":
    """The model preset and layout the default training config selects (configs/config.yaml)."""
    from hydra import compose, initialize_config_dir

    from stapel_rl.train.app import CONFIG_DIR

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        cfg = compose(config_name="config")
    fields = {k: v for k, v in cfg.model.items() if k not in ("points_head", "layout")}
    return next(
        name for name, preset in PRESETS.items() if all(getattr(preset, k) == v for k, v in fields.items())
    ), cfg.model.layout


def paths(size: str) -> "dict[str, NetworkEvaluator]":
    grid = PolicyValueNet(dataclasses.replace(PRESETS[size], layout="grid"))
    compact = PolicyValueNet(dataclasses.replace(PRESETS[size], layout="compact"))
    return {
        "fp32 grid": NetworkEvaluator(grid, "cpu", precision="fp32", fold=False),
        "bf16 grid": NetworkEvaluator(grid, "cpu", precision="bf16"),
        "fp32 compact": NetworkEvaluator(compact, "cpu", precision="fp32"),
        "fast": NetworkEvaluator(compact, "cpu", precision="auto"),
    }


def measure(evaluators: "dict[str, NetworkEvaluator]", state, rounds: int, calls: int) -> "dict[str, float]":
    """Median positions/s of each evaluator over ``rounds`` interleaved rounds of ``calls`` calls."""
    rates: "dict[str, list[float]]" = {name: [] for name in evaluators}
    for evaluator in evaluators.values():
        evaluator(state)  # warm-up: builds the inference copy and oneDNN's kernels for this shape
    for _ in range(rounds):
        for name, evaluator in evaluators.items():
            start = time.perf_counter()
            for _ in range(calls):
                evaluator(state)
            rates[name].append(calls * state.batch_size / (time.perf_counter() - start))
    return {name: statistics.median(r) for name, r in rates.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["small", "default"], choices=sorted(PRESETS))
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--checkpoint",
        default=None,
        help="trained network of the default config's size and layout, for the accuracy check",
    )
    args = parser.parse_args()
    tune_malloc()  # as the CLIs and self-play workers do: multi-MB temporaries stay mapped
    torch.set_num_threads(args.threads)
    state = random_positions("I", args.batch, 30, np.random.default_rng(0))
    fast_precision = NetworkEvaluator(PolicyValueNet("tiny"), "cpu").precision
    print(
        f"bench_net | torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"CPU capability {torch.backends.cpu.get_cpu_capability()}, fast path precision {fast_precision} | "
        f"batch {args.batch} positions after 30 random plies"
    )

    trained_size, layout = default_model()
    new_path = "fast" if layout == "compact" else "bf16 grid"  # what self-play runs with the default config
    rates: "dict[str, dict[str, float]]" = {}
    print(f"\n{'size':>8} {'path':>13} {'positions/s':>12} {'vs fp32 grid':>13}")
    for size in args.sizes:
        rates[size] = measure(paths(size), state, args.rounds, calls=max(2, 4096 // args.batch))
        for name, rate in rates[size].items():
            print(f"{size:>8} {name:>13} {rate:>12,.0f} {rate / rates[size]['fp32 grid']:>12.2f}x", flush=True)

    net, _ = load_network(args.checkpoint or TRAINED[layout])
    same_size = (net.config.blocks, net.config.channels) == (
        PRESETS[trained_size].blocks,
        PRESETS[trained_size].channels,
    )
    accuracy = compare(net, state, precision="auto")
    print(
        f"\naccuracy of the fast path against fp32, trained weights {args.checkpoint or TRAINED[layout]} "
        f"({net.config.blocks}x{net.config.channels}, {net.config.layout}"
        f"{'' if same_size else ', NOT the default size'}):"
    )
    print(
        f"max |dvalue| {accuracy['max_dvalue']:.4f}, mean |dvalue| {accuracy['mean_dvalue']:.4f}, "
        f"mean policy KL {accuracy['mean_kl']:.2e}, max policy KL {accuracy['max_kl']:.2e}, "
        f"same best move {100 * accuracy['same_argmax']:.1f}%"
    )
    r = rates.get(trained_size) or measure(paths(trained_size), state, args.rounds, max(2, 4096 // args.batch))
    print(
        f"\nbench_net: speedup {r[new_path] / r['fp32 grid']:.2f}x (new {r[new_path]:,.0f} pos/s, "
        f"fp32 10x10 {r['fp32 grid']:,.0f} pos/s, max |dvalue| {accuracy['max_dvalue']:.4f}, "
        f"mean policy KL {accuracy['mean_kl']:.2e}) [size {trained_size}, {layout} layout, as the default config "
        f"trains; compact fast path {r['fast'] / r['fp32 grid']:.2f}x]"
    )


if __name__ == "__main__":
    main()
