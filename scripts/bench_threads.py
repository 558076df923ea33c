"""One move's search time by torch threads, beside a load on the cores: why agents default to ``--threads 1``.

    python scripts/bench_threads.py                      # mcts:variant_I_zero:sims=128, 2 busy processes beside it
    python scripts/bench_threads.py --load 0             # the machine to itself

``stapel-play`` and ``stapel-serve`` ran their agents with torch's default thread count (the machine's
cores) until they took ``--threads`` (default 1) as ``stapel-engine`` and ``stapel-match`` do. This
times one decision of the agent on each of ``--positions`` mid-game positions with a choice of action,
with torch's default count ("before") and with one thread ("after"), interleaved in one process
``--repeats`` times, while ``--load`` processes each spin a core in pure Python (a second program, a
match's other side, a training run). It prints the median seconds a move of each and their ratio.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator

import numpy as np
import torch
from bench_mcts import cpu_description, positions_with_a_choice

from stapel_rl.env import take
from stapel_rl.eval.agents import make_agent


@contextlib.contextmanager
def busy_processes(count: int) -> "Iterator[list[subprocess.Popen]]":
    """``count`` processes each spinning a core in pure Python while the block runs, killed after it."""
    processes = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield processes
    finally:
        for process in processes:
            process.kill()
            process.wait()


def move_seconds(spec: str, thread_counts: "list[int]", positions: int, repeats: int, variant: str) -> "list[float]":
    """Median seconds of one decision of ``spec`` with each of ``thread_counts`` torch threads; each
    repeat searches every position with each count in turn, so a change of the load falls on all alike."""
    agent = make_agent(spec)
    state = positions_with_a_choice(variant, positions, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    samples: "list[list[float]]" = [[] for _ in thread_counts]
    for _ in range(repeats):
        for i in range(positions):
            one = take(state, np.array([i]))
            for k, threads in enumerate(thread_counts):
                torch.set_num_threads(threads)
                start = time.perf_counter()
                agent(one, rng)
                samples[k].append(time.perf_counter() - start)
                cache = getattr(agent, "cache", None)  # a kept subtree would make the next search cheaper
                if cache is not None:
                    cache.clear()
    return [statistics.median(s) for s in samples]


def main(argv: "list[str] | None" = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agent", default="mcts:variant_I_zero:sims=128", help="the agent spec to time")
    parser.add_argument("--variant", default="I")
    parser.add_argument("--load", type=int, default=2, help="busy processes beside the search (default 2)")
    parser.add_argument("--positions", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    default = torch.get_num_threads()
    counts = [default, 1]
    print(f"{cpu_description()}; torch {torch.__version__}; {args.load} busy processes beside the search")
    with busy_processes(args.load):
        before, after = move_seconds(args.agent, counts, args.positions, args.repeats, args.variant)
    print(f"{args.agent}, median seconds a move over {args.positions} positions x {args.repeats}:")
    print(f"  before: {default} torch threads  {before:.4f} s")
    print(f"  after:  1 torch thread    {after:.4f} s   ({before / after:.2f}x faster)")


if __name__ == "__main__":
    main()
