"""Speed of the compiled classical searcher against the Python ``alphabeta`` searcher.

Both search the same middlegame positions (seeded random games, 10-20 plies in,
both variants). Prints the classical searcher's nodes/s, the positions/s of
``alphabeta`` (every position it expands or evaluates), their ratio, the depth
the classical searcher completes at 0.1 s and 1 s per move, and the CPU.

    python scripts/bench_classical.py [--positions 6] [--alphabeta-depth 3]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from stapel_rl.classical import Position, Searcher
from stapel_rl.env import engine
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.eval.alphabeta import AlphaBetaAgent


class CountingAlphaBeta(AlphaBetaAgent):
    """``alphabeta`` counting every position it evaluates (its ``nodes`` counts only expansions)."""

    evaluated: int = 0

    def evaluate(self, state, ply=0):
        self.evaluated += state.batch_size
        return super().evaluate(state, ply)


def cpu_description() -> str:
    name = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            name = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        import llvmlite.binding as llvm

        features = llvm.get_host_cpu_features()
        isa = [f for f in ("avx512f", "avx2", "bmi2", "popcnt", "neon") if features.get(f)]
        host = llvm.get_host_cpu_name()
    except Exception:  # the description is informative only
        isa, host = [], "?"
    return f"{name} ({platform.machine()}, LLVM target {host}, {'+'.join(isa) or 'base ISA'})"


def middlegames(variant: str, count: int, seed: int) -> "list":
    """States ``count`` games into seeded random play, at a turn's start between plies 10 and 20."""
    rng = np.random.default_rng(seed)
    states = []
    while len(states) < count:
        plies = int(rng.integers(10, 21))
        state = engine.init(variant, 1)
        while not state.done[0] and (state.ply[0] < plies or state.capturing[0] >= 0):
            state = engine.step(state, random_legal_actions(state.legal_action_mask, rng))
        if not state.done[0] and state.legal_action_mask[0].sum() > 1:
            states.append(state)
    return states


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--positions", type=int, default=6, help="positions per variant")
    parser.add_argument("--alphabeta-depth", type=int, default=3)
    args = parser.parse_args()
    print(f"CPU: {cpu_description()}")
    Searcher("I").search(Position.from_state(engine.init("I", 1), 0), depth=3)  # load/compile the JIT code
    totals = {"nodes": 0, "seconds": 0.0, "ab_positions": 0, "ab_seconds": 0.0}
    for variant in ("I", "II"):
        states = middlegames(variant, args.positions, seed=2024 if variant == "I" else 2025)
        depths = {0.1: [], 1.0: []}
        nodes = seconds = 0.0
        for state in states:
            for budget in (0.1, 1.0):
                searcher = Searcher(variant)  # a fresh table: no help from the previous search
                result = searcher.search(Position.from_state(state, 0), time_limit=budget)
                depths[budget].append(result.depth)
                if budget == 1.0:
                    nodes += result.nodes
                    seconds += result.seconds
        ab = CountingAlphaBeta(depth=args.alphabeta_depth)
        rng = np.random.default_rng(0)
        start = time.perf_counter()
        for state in states:
            ab(state, rng)
        ab_seconds = time.perf_counter() - start
        ab_positions = ab.evaluated
        # The same depth both ways: alphabeta searches full width (batched numpy), classical prunes.
        start = time.perf_counter()
        for state in states:
            Searcher(variant).search(Position.from_state(state, 0), depth=args.alphabeta_depth)
        same_depth = time.perf_counter() - start
        print(f"Variant {variant}: classical {nodes / seconds:,.0f} nodes/s ({int(nodes):,} nodes in {seconds:.2f} s); "
              f"alphabeta:{args.alphabeta_depth} {ab_positions / ab_seconds:,.0f} positions/s "
              f"({ab_positions:,} in {ab_seconds:.2f} s); ratio {nodes / seconds / (ab_positions / ab_seconds):.0f}x")
        print(f"  depth {args.alphabeta_depth} on {len(states)} positions: alphabeta {ab_seconds * 1000:.1f} ms, "
              f"classical {same_depth * 1000:.1f} ms ({ab_seconds / same_depth:.0f}x faster)")
        for budget, ds in depths.items():
            print(f"  depth completed at {budget:g} s/move: mean {np.mean(ds):.1f}, min {min(ds)}, max {max(ds)}")
        totals["nodes"] += nodes
        totals["seconds"] += seconds
        totals["ab_positions"] += ab_positions
        totals["ab_seconds"] += ab_seconds
    nps = totals["nodes"] / totals["seconds"]
    ab_rate = totals["ab_positions"] / totals["ab_seconds"]
    print(f"Overall: classical {nps:,.0f} nodes/s, alphabeta {ab_rate:,.0f} positions/s, ratio {nps / ab_rate:.0f}x")


if __name__ == "__main__":
    main()
