"""Speed of the compiled classical searcher against the Python ``alphabeta`` searcher.

Both search the same middlegame positions (seeded random games, 10-20 plies in,
both variants), one after the other on one core (numba's code is serial, the
numpy searcher runs in this thread too). Prints the classical searcher's
nodes/s in 1 s searches, the positions/s of ``alphabeta`` (every position it
expands or evaluates, counted as the classical nodes are), their ratio, the
time each takes to finish the same depths on the same positions, the depth
the classical searcher completes at 0.1 s and 1 s per move, and the CPU.

Rates and times are CPU seconds of the searching thread (``time.thread_time``): the
machine may be shared, and wall time would charge other jobs to the search.
The first search's wall time is printed too: the compile a user waits for once.
Each searcher is built before its clock starts (a fresh table per search).

    python scripts/bench_classical.py [--positions 6] [--depths 2,3,4] [--net I=PATH.npz --net II=PATH.npz]

With ``--net`` the same positions are also searched with that learned evaluation
(``stapel_rl.classical.nnue``, ``scripts/train_eval.py``; ``I=nnue`` for the packaged one), its
nodes/s given as a share of the hand-written evaluation's. ``--widths 32,64,128`` does so for
networks of those accumulator widths, randomly initialised (what a wider network costs a node
before it is trained: ``minimax.width``).
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from stapel_rl.classical import Position, Searcher, nnue
from stapel_rl.env import engine
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.env.state import State
from stapel_rl.eval.alphabeta import AlphaBetaAgent


class CountingAlphaBeta(AlphaBetaAgent):
    """``alphabeta`` counting positions as the classical searcher does: every position whose moves
    are generated or that is evaluated. Each child is evaluated (those searched deeper too), so that
    is the evaluated positions plus the roots (its own ``nodes`` counts only the expanded ones)."""

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


def middlegames(variant: str, count: int, seed: int) -> "list[State]":
    """States ``count`` games into seeded random play, at a turn's start between plies 10 and 20."""
    rng = np.random.default_rng(seed)
    states: "list[State]" = []
    while len(states) < count:
        plies = int(rng.integers(10, 21))
        state = engine.init(variant, 1)
        while not state.done[0] and (state.ply[0] < plies or state.capturing[0] >= 0):
            state = engine.step(state, random_legal_actions(state.legal_action_mask, rng))
        if not state.done[0] and state.legal_action_mask[0].sum() > 1:
            states.append(state)
    return states


REPEATS = 3  # the same-depth timings keep the fastest of this many runs, both searchers alike


def _classical(variant: str, states: list, depth: int) -> "tuple[int, float]":
    """Nodes and CPU seconds of fixed-depth searches of ``states`` (fastest of ``REPEATS`` runs)."""
    runs = [_classical_once(variant, states, depth) for _ in range(REPEATS)]
    return min(runs, key=lambda r: r[1])


def _classical_once(variant: str, states: list, depth: int) -> "tuple[int, float]":
    nodes, seconds = 0, 0.0
    for state in states:
        searcher = Searcher(variant)
        start = time.thread_time()
        nodes += searcher.search(Position.from_state(state, 0), depth=depth).nodes
        seconds += time.thread_time() - start
    return nodes, seconds


def random_net(variant: str, width: int, hidden: int = 16) -> nnue.Net:
    """A randomly initialised network ``width`` wide correcting the hand-written evaluation of ``variant``."""
    import torch

    from stapel_rl.classical.evaluation import load_weights
    from stapel_rl.classical.trainer import Model, to_net

    torch.manual_seed(width)
    return to_net(Model(width, hidden), 100.0, load_weights(variant), {"variant": variant})


def _learned(variant: str, states: list, net: nnue.Net) -> "tuple[int, float, list[int]]":
    """Nodes, CPU seconds and depths of 1 s searches with the learned evaluation ``net``."""
    nodes, seconds, depths = 0, 0.0, []
    for state in states:
        searcher = Searcher(variant, net=net)
        start = time.thread_time()
        result = searcher.search(Position.from_state(state, 0), time_limit=1.0)
        seconds += time.thread_time() - start
        nodes += result.nodes
        depths.append(result.depth)
    return nodes, seconds, depths


def _alphabeta(states: list, depth: int) -> "tuple[int, float]":
    """Positions and CPU seconds of ``alphabeta:depth`` on ``states`` (fastest of ``REPEATS`` runs)."""
    runs = [_alphabeta_once(states, depth) for _ in range(REPEATS)]
    return min(runs, key=lambda r: r[1])


def _alphabeta_once(states: list, depth: int) -> "tuple[int, float]":
    ab = CountingAlphaBeta(depth=depth)
    rng = np.random.default_rng(0)
    start = time.thread_time()
    for state in states:
        ab(state, rng)
    return ab.evaluated + len(states), time.thread_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--positions", type=int, default=6, help="positions per variant")
    parser.add_argument("--depths", default="2,3,4", help="depths both searchers finish, timed both ways")
    parser.add_argument("--net", action="append", default=[], metavar="VARIANT=PATH", help="a learned evaluation")
    parser.add_argument("--widths", default="", help="accumulator widths of random networks to time, e.g. 32,64,128")
    args = parser.parse_args()
    nets = {
        v: nnue.load_packaged(v) if path == "nnue" else nnue.load(path)
        for v, _, path in (item.partition("=") for item in args.net)
    }
    widths = [int(w) for w in args.widths.split(",") if w]
    depths = [int(d) for d in args.depths.split(",")]
    print(f"CPU: {cpu_description()}; one core, one thread searching")
    start = time.perf_counter()
    Searcher("I").search(Position.from_state(engine.init("I", 1), 0), depth=3)
    print(
        f"first search: {time.perf_counter() - start:.1f} s (numba compiles the engine where its cache is "
        "empty, as after installing; set NUMBA_CACHE_DIR to an empty folder to time that)"
    )
    _alphabeta([engine.init("I", 1)], 1)
    totals = np.zeros(4)  # classical nodes, seconds; alphabeta positions, seconds (deepest depth)
    for variant in ("I", "II"):
        states = middlegames(variant, args.positions, seed=2024 if variant == "I" else 2025)
        reached: "dict[float, list[int]]" = {0.1: [], 1.0: []}
        nodes = seconds = 0.0
        for state in states:
            for budget in (0.1, 1.0):
                searcher = Searcher(variant)  # a fresh table: no help from the previous search
                start = time.thread_time()
                result = searcher.search(Position.from_state(state, 0), time_limit=budget)
                reached[budget].append(result.depth)
                if budget == 1.0:
                    nodes += result.nodes
                    seconds += time.thread_time() - start
        print(
            f"Variant {variant}: classical {nodes / seconds:,.0f} nodes/s in 1 s searches "
            f"({int(nodes):,} nodes, {seconds:.2f} CPU s)"
        )
        for budget, ds in reached.items():
            print(f"  depth completed at {budget:g} s/move: mean {np.mean(ds):.1f}, min {min(ds)}, max {max(ds)}")
        learned = [(nets[variant], "learned evaluation")] if variant in nets else []
        learned += [(random_net(variant, width), "random network") for width in widths]
        for net, what in learned:
            net_nodes, net_seconds, net_depths = _learned(variant, states, net)
            print(
                f"  {what} ({net.width} wide): {net_nodes / net_seconds:,.0f} nodes/s in 1 s "
                f"searches, {net_nodes / net_seconds / (nodes / seconds):.2f}x the hand-written's; depth completed "
                f"at 1 s/move: mean {np.mean(net_depths):.1f}"
            )
        for depth in depths:
            c_nodes, c_seconds = _classical(variant, states, depth)
            ab_positions, ab_seconds = _alphabeta(states, depth)
            print(
                f"  depth {depth} on {len(states)} positions: alphabeta {ab_seconds * 1000:.1f} ms "
                f"({ab_positions:,} positions, {ab_positions / ab_seconds:,.0f}/s), classical "
                f"{c_seconds * 1000:.1f} ms ({c_nodes:,} nodes, {c_nodes / c_seconds:,.0f}/s): "
                f"{ab_seconds / c_seconds:.0f}x less time"
            )
        print(
            f"  nodes/s ratio (classical 1 s searches / alphabeta:{depths[-1]}): "
            f"{nodes / seconds / (ab_positions / ab_seconds):.0f}x"
        )
        totals += (nodes, seconds, ab_positions, ab_seconds)
    nps, ab_rate = totals[0] / totals[1], totals[2] / totals[3]
    print(
        f"Overall: classical {nps:,.0f} nodes/s, alphabeta:{depths[-1]} {ab_rate:,.0f} positions/s, "
        f"ratio {nps / ab_rate:.0f}x"
    )


if __name__ == "__main__":
    main()
