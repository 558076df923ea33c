"""Throughput benchmark of the batched Stapeldammen engine under random legal play.

What is measured, per variant ("I", "II"), start kind and batch size B:

* start: every game begins at the variant's start position;
  mid: every game begins at a position drawn from a pool made beforehand by
  random play from the start for 20-60 plies (a snapshot of each game taken the
  moment its ply count reaches its drawn target, never mid-capture).
* One batch step = sample one uniformly random legal action per game, call
  ``step(state, actions, validate=False)``, then autoreset: finished games are
  overwritten by fresh ones from the same source (the start position or a random
  pool position), so the batch stays full of live games.
* steps = actions applied to live (not done) games, summed over the batch; one
  action is one plain move or one leap, as in the engine's action space.
* "engine steps/s" divides by the time spent inside ``step`` only;
  "total steps/s" divides by the wall time of the whole loop (action
  sampling, autoreset and bookkeeping included). Each configuration runs for a
  fixed wall time (``--seconds``) after a short warm-up; ``time.perf_counter``.

A micro-benchmark of two exact uniform samplers (see ``random_actions``) runs
first. If ``pyspiel`` (OpenSpiel) is importable, its
``checkers(rows=10,columns=10)`` is played randomly from Python, one state at a
time, for the same wall time, and our batch-4096 throughput is compared with
it. That game has different rules (international-style 10x10 checkers without
stacks), so the ratio is a rough reference for "per-game Python driving of a
C++ engine" versus "batched numpy", not a like-for-like rules comparison.

Usage: python scripts/bench_engine.py [--seconds 1.5] [--batch-sizes 1,64,1024,4096]
       [--variants I,II] [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import random
import time
from importlib import metadata

import numpy as np

from stapel_rl._malloc import tune_malloc
from stapel_rl.env import VARIANT_I, VARIANT_II, State, concatenate, init, step, take
from stapel_rl.env.sampling import random_legal_actions as random_actions
from stapel_rl.env.state import ARRAY_FIELDS
from stapel_rl.env.variants import Variant

VARIANTS = {"I": VARIANT_I, "II": VARIANT_II}
OPENSPIEL_GAME = "checkers(rows=10,columns=10)"


def random_actions_argmax(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Alternative sampler: argmax of float32 random keys with illegal entries set to -1.

    Uniform up to ties between equal float32 keys (probability about count/2**24 per draw).
    """
    keys = rng.random(mask.shape, dtype=np.float32)
    keys[~mask] = -1.0
    return keys.argmax(axis=1)


def refill(state: State, source: State, rng: np.random.Generator) -> State:
    """Overwrite finished games with random games of ``source`` (autoreset).

    In place: ``step`` returns freshly allocated arrays and the loop holds the
    only reference to them, so no other state (in particular ``source``) sees
    the writes. This avoids copying the whole batch on every step.
    """
    rows = np.flatnonzero(state.done)
    if rows.size:
        pick = rng.integers(source.batch_size, size=rows.size)
        for name in ARRAY_FIELDS:
            getattr(state, name)[rows] = getattr(source, name)[pick]
    return state


def midgame_pool(variant: Variant, size: int, rng: np.random.Generator, lo: int = 20, hi: int = 60) -> State:
    """Snapshots of ``size`` random games, each taken when its ply reaches a target drawn in ``[lo, hi]``.

    Games that end before their target are dropped, so the pool may be a little smaller.
    """
    state = init(variant, size)
    target = rng.integers(lo, hi + 1, size=size)
    taken = np.zeros(size, dtype=bool)
    parts = []
    while (~taken & ~state.done).any():
        state = step(state, random_actions(state.legal_action_mask, rng), validate=False)
        hit = np.flatnonzero(~taken & ~state.done & (state.ply == target) & (state.capturing < 0))
        if hit.size:
            parts.append(take(state, hit))
            taken[hit] = True
    return concatenate(parts)


def bench(source: State, batch: int, seconds: float, rng: np.random.Generator) -> "dict[str, float]":
    """Random play of ``batch`` games drawn from ``source`` (autoreset from it) for ``seconds``."""
    state = take(source, rng.integers(source.batch_size, size=batch))
    for _ in range(3):  # warm-up, untimed
        state = refill(step(state, random_actions(state.legal_action_mask, rng), validate=False), source, rng)
    steps = iters = 0
    t_step = 0.0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        actions = random_actions(state.legal_action_mask, rng)
        steps += batch - int(np.count_nonzero(state.done))
        t0 = time.perf_counter()
        state = step(state, actions, validate=False)
        t1 = time.perf_counter()
        t_step += t1 - t0
        iters += 1
        state = refill(state, source, rng)
        if t1 >= deadline:
            break
    total = time.perf_counter() - start
    return {"iters": iters, "engine": steps / t_step, "total": steps / total}


def bench_samplers(masks: np.ndarray, batch_sizes: "list[int]", rng: np.random.Generator) -> None:
    """Time both samplers on real mid-game masks and check they only return legal actions."""
    print("\nAction sampler, microseconds per call on mid-game masks:")
    print(f"{'batch':>6} {'flatnonzero (used)':>19} {'argmax keys':>12}")
    for b in batch_sizes:
        mask = np.ascontiguousarray(masks[np.arange(b) % masks.shape[0]])
        row = []
        for sampler in (random_actions, random_actions_argmax):
            assert mask[np.arange(b), sampler(mask, rng)].all(), f"{sampler.__name__} drew an illegal action"
            reps = max(20, 50_000 // b)
            t0 = time.perf_counter()
            for _ in range(reps):
                sampler(mask, rng)
            row.append((time.perf_counter() - t0) / reps * 1e6)
        print(f"{b:>6} {row[0]:>19.1f} {row[1]:>12.1f}")


def bench_openspiel(seconds: float) -> "float | None":
    """Steps/s of OpenSpiel 10x10 checkers under random play driven from Python; None if not installed."""
    try:
        import pyspiel
    except ImportError:
        return None
    game = pyspiel.load_game(OPENSPIEL_GAME)
    rng = random.Random(0)
    state = game.new_initial_state()
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(256):  # check the clock every 256 steps only
            if state.is_terminal():
                state = game.new_initial_state()
            state.apply_action(rng.choice(state.legal_actions()))
        steps += 256
    return steps / (time.perf_counter() - start)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=1.5, help="wall time per configuration (default 1.5)")
    p.add_argument("--batch-sizes", default="1,64,1024,4096", help="comma-separated (default 1,64,1024,4096)")
    p.add_argument("--variants", default="I,II", help="comma-separated subset of I,II (default both)")
    p.add_argument("--quick", action="store_true", help="smoke test: 0.2 s per configuration")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    args.batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    args.variants = [v.strip().upper() for v in args.variants.split(",")]
    if unknown := set(args.variants) - set(VARIANTS):
        p.error(f"unknown variant(s) {sorted(unknown)}: expected I and/or II")
    if args.quick:
        args.seconds = 0.2
    return args


def main() -> None:
    tune_malloc()
    args = parse_args()
    rng = np.random.default_rng(args.seed)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print("stapel_rl engine benchmark: random legal play, autoreset, validate=False")
    print(
        f"date {datetime.datetime.now().isoformat(timespec='seconds')} | python {platform.python_version()} "
        f"| numpy {np.__version__} | CPUs {os.cpu_count()} ({cpus} usable) | {platform.machine()}"
    )
    print(f"{args.seconds:g} s per configuration; steps = actions (moves or leaps) applied to live games")

    pool_size = max(max(args.batch_sizes), 1024)
    pools = {}
    for name in args.variants:
        t0 = time.perf_counter()
        pools[name] = midgame_pool(VARIANTS[name], pool_size, rng)
        print(
            f"variant {name}: mid-game pool of {pools[name].batch_size} positions, mean ply "
            f"{pools[name].ply.mean():.1f}, built in {time.perf_counter() - t0:.2f} s"
        )
    bench_samplers(pools[args.variants[0]].legal_action_mask, args.batch_sizes, rng)

    print(f"\n{'variant':>7} {'from':>6} {'batch':>6} {'batch steps':>11} {'engine steps/s':>15} {'total steps/s':>14}")
    results = {}
    for name in args.variants:
        for kind, source in (("start", init(VARIANTS[name], 1)), ("mid", pools[name])):
            for b in args.batch_sizes:
                r = bench(source, b, args.seconds, rng)
                results[name, kind, b] = r
                print(f"{name:>7} {kind:>6} {b:>6} {r['iters']:>11} {r['engine']:>15,.0f} {r['total']:>14,.0f}")

    print()
    spiel = bench_openspiel(args.seconds)
    if spiel is None:
        print(
            "OpenSpiel (pyspiel) is not importable, comparison skipped. "
            'Install it with: pip install -e ".[bench]"   (or: pip install open_spiel)'
        )
        return
    print(
        f"OpenSpiel {metadata.version('open_spiel')} {OPENSPIEL_GAME}, one game at a time from Python: "
        f"{spiel:,.0f} steps/s"
    )
    big = 4096 if 4096 in args.batch_sizes else max(args.batch_sizes)
    for name in args.variants:
        for kind in ("start", "mid"):
            r = results[name, kind, big]
            print(
                f"  ratio stapel_rl {name:>2} {kind:>5} B={big} / OpenSpiel: total {r['total'] / spiel:5.2f}x, "
                f"engine only {r['engine'] / spiel:5.2f}x"
            )


if __name__ == "__main__":
    main()
