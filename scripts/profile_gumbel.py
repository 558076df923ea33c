"""Gumbel against PUCT search speed with the uniform evaluator, and where a Gumbel search spends its time.

Prints simulations/s of PUCT and Gumbel (32 and 128 simulations each) at
B = 512 and 64 in one process, interleaved over ``--rounds`` rounds so that
other load on the machine hits all alike, with the ratio Gumbel 32 / PUCT
128 per round. With ``--profile`` it then runs cProfile over Gumbel searches
and prints the time per phase of a simulation.

Usage: python scripts/profile_gumbel.py [--rounds 3] [--repeats 2] [--forced-rounds 2] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pathlib
import pstats
import sys
import types

import numpy as np

from stapel_rl._malloc import tune_malloc
from stapel_rl.env.sampling import random_positions
from stapel_rl.mcts import SearchConfig, search
from stapel_rl.models import UniformEvaluator

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_mcts import sims_per_second  # noqa: E402  (the same measurement as the benchmark's)

# Phases of a simulation, by the functions that carry them out (cumulative time of each).
PHASES = {
    "root selection": ("halving.py", "select"),
    "root update": ("halving.py", "update"),
    "interior, after backup": ("gumbel.py", "refresh"),
    "interior, new nodes": ("gumbel.py", "expanded"),
    "interior, reused nodes": ("gumbel.py", "choose"),
    "engine step": ("engine.py", "step"),
    "read states": ("tree.py", "read_states"),
    "write states": ("tree.py", "write_states"),
    "evaluation (incl. new nodes)": ("expand.py", "evaluate"),
    "backup": ("search.py", "_backup"),
    "simulation total": ("search.py", "_simulate"),
    "final policy/action": ("gumbel.py", "root_policy"),
}


def timings(rounds: int, repeats: int, forced_rounds: "int | None") -> None:
    rng = np.random.default_rng(0)
    cases = [("puct", 128), ("gumbel", 32), ("puct", 32), ("gumbel", 128)]
    for batch in (512, 64):
        state = random_positions("I", batch, 20, rng)
        print(f"\nB={batch}: simulations/s (uniform evaluator), {repeats} searches per figure")
        print(f"{'round':>5} " + " ".join(f"{a + ' ' + str(s):>12}" for a, s in cases) + f" {'g32/p128':>9}")
        for r in range(rounds):
            rates = [
                sims_per_second(state, UniformEvaluator(), SearchConfig(s, a, forced_rounds=forced_rounds), repeats)
                for a, s in cases
            ]
            print(f"{r:>5} " + " ".join(f"{x:>12,.0f}" for x in rates) + f" {rates[1] / rates[0]:>9.2f}", flush=True)


def profile(batch: int, sims: int, repeats: int, forced_rounds: "int | None") -> None:
    state = random_positions("I", batch, 20, np.random.default_rng(0))
    config = SearchConfig(sims, "gumbel", forced_rounds=forced_rounds)
    rng = np.random.default_rng(0)
    out = search(state, UniformEvaluator(), config, rng)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(repeats):
        out = search(state, UniformEvaluator(), config, rng, buffer=out.tree)
    profiler.disable()
    # The profiler's own entries, as pstats reads them (its tables are not typed): a function's
    # inline time adds up to the total, its total time (callees included) is the cumulative time.
    entries = profiler.getstats()
    total = sum(entry.inlinetime for entry in entries)
    print(f"\nGumbel B={batch}, {sims} simulations, {repeats} searches under cProfile: {total:.2f} s")
    for phase, (file, name) in PHASES.items():
        cumulative = sum(
            entry.totaltime
            for entry in entries
            if isinstance(entry.code, types.CodeType)
            and entry.code.co_filename.endswith(file)
            and entry.code.co_name == name
        )
        print(f"  {phase:<28} {cumulative:6.2f} s  {100 * cumulative / total:5.1f}%")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--profile", action="store_true", help="also profile Gumbel searches by phase")
    parser.add_argument("--no-timings", action="store_true")
    parser.add_argument(
        "--forced-rounds",
        type=int,
        default=2,
        help="forced actions a search node plays on through at most (self-play's "
        "mcts.forced_rounds, as scripts/bench_mcts.py; -1: no cap)",
    )
    args = parser.parse_args()
    tune_malloc()  # as bench_mcts.py and self-play do: multi-MB temporaries stay mapped
    rounds = None if args.forced_rounds < 0 else args.forced_rounds
    if not args.no_timings:
        timings(args.rounds, args.repeats, rounds)
    if args.profile:
        profile(512, 32, 2, rounds)
        profile(64, 32, 10, rounds)


if __name__ == "__main__":
    main()
