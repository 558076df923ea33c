"""Alpha-beta agent decisions/s: the batched full-width search against the one-game pruning search.

Both choose the same moves (tests/eval/test_alphabeta.py checks it); this measures
what each costs on the same positions in one run: mid-game positions after
random play (live games at the start of a turn), one decision for each, with
the agent's default games per batch. The pruning search is the reference kept
in tests/reference_alphabeta.py.

Usage: python scripts/bench_alphabeta.py [--depths 2 3 4] [--games 64] [--plies 20] [--variant I]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from collections.abc import Callable

import numpy as np

from stapel_rl._malloc import tune_malloc
from stapel_rl.env.sampling import random_positions
from stapel_rl.env.state import State, take
from stapel_rl.eval.alphabeta import AlphaBetaAgent

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from reference_alphabeta import ReferenceAlphaBeta  # noqa: E402


def timed(
    agent: Callable[[State, np.random.Generator], np.ndarray], state: State, seed: int
) -> "tuple[float, np.ndarray]":
    start = time.perf_counter()
    actions = agent(state, np.random.default_rng(seed))
    return time.perf_counter() - start, actions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--depths", type=int, nargs="+", default=[2, 3, 4])
    parser.add_argument("--games", type=int, default=64, help="positions decided (depth 4: a quarter of them)")
    parser.add_argument("--plies", type=int, default=20, help="random actions before the position")
    parser.add_argument("--variant", default="I")
    args = parser.parse_args()
    tune_malloc()
    state = random_positions(args.variant, args.games, args.plies, np.random.default_rng(0))
    state = take(state, np.flatnonzero(~state.done & (state.capturing < 0)))
    print(f"bench_alphabeta | Variant {args.variant}, {state.batch_size} positions after {args.plies} random plies")
    ratios: "dict[int, float]" = {}
    for depth in args.depths:
        batch = state if depth < 4 else take(state, np.arange(max(1, state.batch_size // 4)))
        fast_s, fast = timed(AlphaBetaAgent(depth), batch, 1)
        ref_s, ref = timed(ReferenceAlphaBeta(depth), batch, 1)
        same = float((fast == ref).mean())
        ratios[depth] = ref_s / fast_s
        n = batch.batch_size
        print(
            f"  depth {depth}: full width {n / fast_s:8.1f} decisions/s, pruning {n / ref_s:8.1f} decisions/s, "
            f"speedup {ratios[depth]:.2f}x, same action {100 * same:.0f}% ({n} positions)"
        )
    print("bench_alphabeta: speedup " + ", ".join(f"depth {d} {r:.2f}x" for d, r in ratios.items()))


if __name__ == "__main__":
    main()
