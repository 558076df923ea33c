"""Batched MCTS throughput, the network's speed, and how much of a search the network takes.

1. Simulations/s with the uniform evaluator (rules only, no network) for
   B in {64, 512} games and {32, 128} simulations, PUCT and Gumbel.
   All searches play forced actions on through as self-play's do, at most
   ``--forced-rounds`` per node (``mcts.forced_rounds``). Each search
   runs from mid-game positions (20 random plies) and reuses the previous
   search's tree arrays, as self-play does.
2. Positions/s of a network preset alone (batch 512, ``NetworkEvaluator``):
   the fp32 10x10 reference and the fast path self-play uses (batch norm
   folded, bf16 where native, in ``--layout``: the default config's 10x10
   grid, or the 10x5 compact one; see scripts/bench_net.py).
3. A search with the fast network: simulations/s and the share of the
   search's wall time spent inside the network (evaluator time / search time).

Usage: python scripts/bench_mcts.py [--model small] [--layout grid] [--net-batch 512] [--net-sims 32]
                                    [--forced-rounds 2] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
import torch

from stapel_rl._malloc import tune_malloc
from stapel_rl.env import State
from stapel_rl.env.sampling import random_positions
from stapel_rl.mcts import SearchConfig, search
from stapel_rl.models import PRESETS, NetworkEvaluator, PolicyValueNet, UniformEvaluator


def midgame(batch: int, plies: int, rng: np.random.Generator) -> State:
    """``batch`` live Variant I positions after about ``plies`` random actions, at the start of a turn."""
    return random_positions("I", batch, plies, rng)


def sims_per_second(state, evaluator, config: SearchConfig, repeats: int) -> float:
    rng = np.random.default_rng(0)
    out = search(state, evaluator, config, rng)  # warm-up; its arrays are reused below
    start = time.perf_counter()
    for _ in range(repeats):
        out = search(state, evaluator, config, rng, buffer=out.tree)
    return repeats * state.batch_size * config.num_simulations / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model", default="small", choices=sorted(PRESETS), help="network size (default: the default config's)"
    )
    parser.add_argument("--net-batch", type=int, default=512, help="games searched at once with the network")
    parser.add_argument("--net-sims", type=int, default=32, help="simulations per search with the network")
    parser.add_argument(
        "--layout",
        default="grid",
        choices=["grid", "compact"],
        help="the fast network's input layout (default: the default config's)",
    )
    parser.add_argument(
        "--forced-rounds",
        type=int,
        default=2,
        help="forced actions a search node plays on through at most (self-play's mcts.forced_rounds; -1: no cap)",
    )
    parser.add_argument("--quick", action="store_true", help="one repeat each (smoke test)")
    args = parser.parse_args()
    tune_malloc()  # as the CLIs and self-play workers do: multi-MB temporaries stay mapped
    repeats = 1 if args.quick else 3
    rng = np.random.default_rng(0)
    print(f"MCTS benchmark | torch {torch.__version__}, {torch.get_num_threads()} threads | numpy {np.__version__}")

    rounds = None if args.forced_rounds < 0 else args.forced_rounds
    print(f"\n1. uniform evaluator (rules only), simulations/s, forced rounds {rounds}")
    print(f"{'algorithm':>9} {'B':>5} {'sims':>5} {'sims/s':>10}")
    for algorithm in ("puct", "gumbel"):
        for batch in (64, 512):
            state = midgame(batch, 20, rng)
            for sims in (32, 128):
                config = SearchConfig(sims, algorithm, forced_rounds=rounds)
                rate = sims_per_second(state, UniformEvaluator(), config, repeats)
                print(f"{algorithm:>9} {batch:>5} {sims:>5} {rate:>10,.0f}", flush=True)

    print(f"\n2. network '{args.model}' alone, batch {args.net_batch}")
    state = midgame(args.net_batch, 20, rng)
    reference = NetworkEvaluator(
        PolicyValueNet(dataclasses.replace(PRESETS[args.model], layout="grid")),
        device="cpu",
        precision="fp32",
        fold=False,
    )
    net = PolicyValueNet(dataclasses.replace(PRESETS[args.model], layout=args.layout))
    evaluator = NetworkEvaluator(net, device="cpu")
    shape = "10x10" if args.layout == "grid" else "10x5"
    for name, e in (("fp32 10x10", reference), (f"fast ({evaluator.precision} {shape})", evaluator)):
        e(state)
        e.reset_stats()
        for _ in range(repeats * 3):
            e(state)
        print(f"{name:>16}: positions/s {e.positions_per_second:,.0f}")
    print(f"parameters {sum(p.numel() for p in net.parameters()):,}")

    print(
        f"\n3. search with the fast network '{args.model}': B={args.net_batch}, {args.net_sims} simulations, "
        f"forced rounds {rounds}"
    )
    for algorithm in ("puct", "gumbel"):
        config = SearchConfig(args.net_sims, algorithm, forced_rounds=rounds)
        out = search(state, evaluator, config, rng)
        evaluator.reset_stats()
        start = time.perf_counter()
        for _ in range(repeats):
            out = search(state, evaluator, config, rng, buffer=out.tree)
        total = time.perf_counter() - start
        rate = repeats * args.net_batch * args.net_sims / total
        share = 100 * evaluator.seconds / total
        print(f"{algorithm:>9}: {rate:,.0f} simulations/s, {share:.1f}% of search time in the network")


if __name__ == "__main__":
    main()
