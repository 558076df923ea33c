"""stapel-match: one agent against one or more opponents, in colour-swapped pairs from the opening suite.

    stapel-match mcts:variant_I classical greedy --games 200 --variant I
    stapel-match mcts:variant_I classical --time 0.5 --jobs 2          # equal time: 0.5 s a move each side
    stapel-match mcts:variant_I:time=0.5 classical:time=0.05 --time 0.5  # time odds: a spec's own time= wins

Each pair of games starts from one opening and gives each side both colours,
so deterministic agents do not replay one game over and over and the luck of
an opening cancels. Openings come from the variant's shipped suite
(``--openings suite``, the default: every match of a variant starts from the
same positions) or are made by ``--opening-plies`` random actions
(``--openings random``).

``--time SECONDS`` gives both sides that budget per move: agents that search
by time (``mcts``, ``classical``) get ``:time=SECONDS`` unless their spec sets
its own, and every agent is called with one game at a time, so the budget is
each game's own. ``--jobs N`` plays the pairs in N processes; every side
searches on one thread (a fair clock: equal hardware), with ``--jobs 1`` in
this process too.

Per opponent it prints wins/draws/losses, the score and the Elo difference
with pentanomial 95% intervals (from the spread of the pair scores), the
pentanomial counts (pairs scoring 0, 0.5, 1, 1.5, 2) and the average time
each side used per move.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import os
import sys
import threading
import time

import numpy as np
from tqdm import tqdm

from stapel_rl._malloc import tune_malloc
from stapel_rl.cli.options import add_match_options, check_match_options
from stapel_rl.env import get_variant
from stapel_rl.eval.agents import make_agent
from stapel_rl.eval.arena import MatchResult, paired_start, play_match, timed_spec
from stapel_rl.eval.openings import opening_fens

_AGENTS: "dict[str, object]" = {}


def _agent(spec: str):
    """One agent per spec and process: a job plays many pairs and loads each network once."""
    if spec not in _AGENTS:
        _AGENTS[spec] = make_agent(spec)
    return _AGENTS[spec]


def play_pairs(a: str, b: str, variant: str, fens: "list[str]", seed: int, one_at_a_time: bool) -> MatchResult:
    """Agent specs ``a`` against ``b``, each of ``fens`` played twice with colours swapped (game k and k + n pair)."""
    start, colour = paired_start(get_variant(variant), fens)
    return play_match(
        _agent(a),
        _agent(b),
        variant,
        start.batch_size,
        np.random.default_rng(seed),
        start=start,
        agent_colour=colour,
        one_at_a_time=one_at_a_time,
    )


def _one_core() -> None:
    """Every side searches on one core (the field's equal hardware; the classical engine is serial):
    on a shared machine torch's threads would stall batch-1 calls.

    The variables hold for libraries not yet loaded; torch, if some import has loaded it
    already, has read them and is told directly.
    """
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[name] = "1"
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def _job_process(parent: int) -> None:
    """A job's set-up: one core (``_one_core``), and an exit once the match process is gone.

    A match killed from outside (Ctrl-C, ``kill``) would otherwise leave its jobs
    playing on, taking the cores from whatever runs next.
    """
    _one_core()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="stapel-match-watch", daemon=True).start()


def _merge(results: "list[MatchResult]") -> MatchResult:
    return MatchResult(
        scores=np.concatenate([r.scores for r in results]),
        agent_colour=np.concatenate([r.agent_colour for r in results]),
        plies=np.concatenate([r.plies for r in results]),
        seconds=np.sum([r.seconds for r in results], axis=0),
        moves=np.sum([r.moves for r in results], axis=0),
    )


def play_in_parallel(
    a: str, b: str, variant: str, fens: "list[str]", seed: int, one_at_a_time: bool, jobs: int, progress: bool = False
) -> "tuple[MatchResult, np.ndarray]":
    """``play_pairs`` over ``jobs`` processes; returns the merged result and each game's pair index.

    With one game at a time (``--time``) each pair is its own task, so a bar can show the running
    score, the rate and the time left; batched matches split the pairs into one chunk per job.
    """
    jobs = max(1, min(jobs, len(fens)))
    if one_at_a_time:
        chunks = [np.array([i]) for i in range(len(fens))]
    else:
        chunks = [c for c in np.array_split(np.arange(len(fens)), jobs) if c.size]
    bar = tqdm(
        total=len(fens), unit="pair", desc=f"{a} vs {b}", disable=not progress or len(chunks) == 1, dynamic_ncols=True
    )
    done: "list[MatchResult]" = []

    def advance(result: MatchResult, size: int) -> None:
        done.append(result)
        score = np.concatenate([r.scores for r in done])
        bar.set_postfix(score=f"{100 * score.mean():.1f}%", games=score.size, refresh=False)
        bar.update(size)

    results: "list[MatchResult]"
    if jobs == 1:
        results = []
        for j, c in enumerate(chunks):
            results.append(play_pairs(a, b, variant, [fens[i] for i in c], seed + j, one_at_a_time))
            advance(results[-1], c.size)
    else:
        context = multiprocessing.get_context("spawn")  # a fresh interpreter per job: no forked thread state
        with concurrent.futures.ProcessPoolExecutor(
            jobs, mp_context=context, initializer=_job_process, initargs=(os.getpid(),)
        ) as pool:
            futures = [
                pool.submit(play_pairs, a, b, variant, [fens[i] for i in c], seed + j, one_at_a_time)
                for j, c in enumerate(chunks)
            ]
            for future in concurrent.futures.as_completed(futures):
                advance(future.result(), chunks[futures.index(future)].size)
            results = [f.result() for f in futures]
    bar.close()
    pair = np.concatenate([np.tile(c, 2) for c in chunks])
    return _merge(results), pair


def main(argv: "list[str] | None" = None) -> int:
    tune_malloc()
    if "torch" not in sys.modules:  # called as the command (with --jobs 1 the games are played here)
        _one_core()
    parser = argparse.ArgumentParser(prog="stapel-match", description=__doc__.split("\n")[0])
    parser.add_argument("agent", help="agent spec, e.g. mcts:PATH:sims=32, classical:time=0.1, greedy")
    parser.add_argument("opponents", nargs="+", help="opponent specs")
    parser.add_argument("--games", type=int, default=200, help="games per opponent (rounded up to whole pairs)")
    parser.add_argument("--jobs", type=int, default=1, help="processes that play the pairs (default 1)")
    add_match_options(parser)
    args = parser.parse_args(argv)
    try:
        check_match_options(args)
        if args.jobs < 1:
            raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
        variant = get_variant(args.variant)
        specs = [timed_spec(s, args.time) for s in (args.agent, *args.opponents)]
        for spec in specs:
            make_agent(spec)  # a bad spec fails here, before any game
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    pairs = max(1, (args.games + 1) // 2)
    clock = f", {args.time:g} s a move" if args.time is not None else ""
    for index, opponent in enumerate(specs[1:]):
        start = time.perf_counter()
        fens = opening_fens(variant, pairs, args.openings, args.opening_plies, seed=args.seed * 7919 + index)
        result, pair = play_in_parallel(
            specs[0], opponent, variant.name, fens, args.seed, args.time is not None, args.jobs, progress=True
        )
        mine, theirs = result.time_per_move()
        print(
            f"{specs[0]} vs {opponent} (Variant {variant.name}): {result.summary(pair)}; "
            f"time per move {mine:.3f} s / {theirs:.3f} s; "
            f"{args.openings} openings{clock}; {time.perf_counter() - start:.0f} s",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
