"""stapel-match: one agent against one or more opponents, in colour-swapped pairs from the opening suite.

    stapel-match mcts:variant_I classical greedy --games 200 --variant I
    stapel-match mcts:variant_I classical --time 0.5 --jobs 2          # equal time: 0.5 s a move each side
    stapel-match mcts:variant_I:time=0.5 classical:time=0.05 --time 0.5  # time odds: a spec's own time= wins
    stapel-match mcts:variant_I classical --time 0.5 --record eq.jsonl   # resumable: the same command after a kill

Each pair of games starts from one opening and gives each side both colours,
so deterministic agents do not replay one game over and over and the luck of
an opening cancels. Openings come from the variant's shipped suite
(``--openings suite``, the default: every match of a variant starts from the
same positions) or are made by ``--opening-plies`` random actions
(``--openings random``).

A spec's ``time=`` is a budget for each decision of each game: where either
side has one (``classical`` always does unless given ``depth=``/``nodes=``
alone), every agent is called with one game at a time and each pair is a
task of its own; a batch of games goes to the agents only where neither side
has a clock (networks then see batches). ``--time SECONDS`` gives both sides
that budget per move: agents that search by time (``mcts``, ``classical``)
get ``:time=SECONDS`` unless their spec sets its own, and every agent,
clock or not, is called with one game at a time. ``--jobs N`` plays the
pairs in N processes; every side searches on one thread (a fair clock:
equal hardware), with ``--jobs 1`` in this process too. An agent made for
the other variant (``mcts:variant_I`` in a Variant II match) is refused
before any game.

Per opponent it prints wins/draws/losses, the score and the Elo difference
with pentanomial 95% intervals (from the spread of the pair scores), the
pentanomial counts (pairs scoring 0, 0.5, 1, 1.5, 2) and the average time
each side used per move. ``--record PATH`` appends every pair to a
JSON-lines file (``stapel_rl.records``) as its second game ends, batched or
not, in a job or here; the same command again resumes a killed match from it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import multiprocessing
import os
import queue
import sys
import threading
import time
from collections.abc import Callable

import numpy as np
from tqdm import tqdm

from stapel_rl._malloc import tune_malloc
from stapel_rl.cli.options import add_match_options, check_match_options
from stapel_rl.env import get_variant
from stapel_rl.eval.agents import Agent, check_variant, clock, make_agent
from stapel_rl.eval.arena import MatchResult, paired_start, play_match, timed_spec
from stapel_rl.eval.openings import opening_fens
from stapel_rl.records import append_jsonl, code_version, start_jsonl

_AGENTS: "dict[str, Agent]" = {}
#: In a job (``_job_process``): where each pair goes as it finishes, to be recorded by the match process.
_FINISHED: "multiprocessing.Queue | None" = None


def _agent(spec: str) -> Agent:
    """One agent per spec and process: a job plays many pairs and loads each network once."""
    if spec not in _AGENTS:
        _AGENTS[spec] = make_agent(spec)
    return _AGENTS[spec]


#: A finished task: the indices of the openings it played (each twice) and its result.
Played = tuple[np.ndarray, MatchResult]


def play_pairs(
    a: str,
    b: str,
    variant: str,
    fens: "list[str]",
    pairs: "list[int]",
    seed: int,
    one_at_a_time: bool,
    on_pair: "Callable[[Played], None] | None" = None,
) -> "list[Played]":
    """Agent specs ``a`` against ``b``, each of ``fens`` (the match's openings ``pairs``) played twice with
    colours swapped; returns every pair, its White game's result first.

    ``on_pair`` (in a job: ``_FINISHED``) sees each pair as its second game ends, before the others finish.
    """
    report = on_pair if on_pair is not None else _FINISHED.put if _FINISHED is not None else None
    start, colour = paired_start(get_variant(variant), fens)
    halves: "dict[int, MatchResult]" = {}
    played: "list[Played]" = []

    def ended(game: int, result: MatchResult) -> None:
        k = game % len(fens)  # game k and game k + n start from fens[k]
        if k not in halves:
            halves[k] = result
            return
        white, black = (result, halves.pop(k)) if game < len(fens) else (halves.pop(k), result)
        pair = (np.array([pairs[k]], dtype=np.int64), _merge([white, black]))
        played.append(pair)
        if report is not None:
            report(pair)

    play_match(
        _agent(a),
        _agent(b),
        variant,
        start.batch_size,
        np.random.default_rng(seed),
        start=start,
        agent_colour=colour,
        one_at_a_time=one_at_a_time,
        on_game_result=ended,
    )
    return played


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


def _job_process(parent: int, finished: "multiprocessing.Queue | None" = None) -> None:
    """A job's set-up: one core (``_one_core``), the queue ``finished`` pairs go to (``_FINISHED``), and an
    exit once the match process is gone.

    A match killed from outside (Ctrl-C, ``kill``) would otherwise leave its jobs
    playing on, taking the cores from whatever runs next.
    """
    global _FINISHED
    _one_core()
    if finished is not None:
        # A task's return value holds its pairs too: what the queue has not passed on at exit is not lost.
        finished.cancel_join_thread()
        _FINISHED = finished

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
    a: str,
    b: str,
    variant: str,
    fens: "list[str]",
    seed: int,
    one_at_a_time: bool,
    jobs: int,
    progress: bool = False,
    done: "list[Played] | None" = None,
    on_played: "Callable[[np.ndarray, MatchResult], None] | None" = None,
) -> "tuple[MatchResult, np.ndarray]":
    """``play_pairs`` over ``jobs`` processes; returns the merged result and each game's pair index.

    With one game at a time (a clock on either side, or ``--time``) each pair is its own task;
    batched matches split the pairs into one chunk per job. ``done`` holds pairs already played (a
    resumed match): they are merged in, not played again. ``on_played`` sees each pair as its second
    game ends, in a chunk too (a job sends it over a queue), and a bar shows the running score, the
    rate and the time left. A task's seed is ``seed`` plus its first pair's index, so with one pair
    a task a resumed match plays each pair as an uninterrupted one would.
    """
    finished: "list[Played]" = list(done or [])
    have = {int(i) for pairs, _ in finished for i in pairs}
    todo = np.array([i for i in range(len(fens)) if i not in have], dtype=np.int64)
    jobs = max(1, min(jobs, todo.size))
    if one_at_a_time:
        chunks = [todo[i : i + 1] for i in range(todo.size)]
    else:
        chunks = [c for c in np.array_split(todo, jobs) if c.size]
    bar = tqdm(
        total=len(fens),
        initial=len(have),
        unit="pair",
        desc=f"{a} vs {b}",
        disable=not progress or todo.size <= 1,
        dynamic_ncols=True,
    )

    def advance(played: Played) -> None:
        pairs, result = played
        if int(pairs[0]) in have:  # sent by its job, then returned with its task
            return
        have.update(int(i) for i in pairs)
        finished.append(played)
        if on_played is not None:
            on_played(pairs, result)
        score = np.concatenate([r.scores for _, r in finished])
        bar.set_postfix(score=f"{100 * score.mean():.1f}%", games=score.size, refresh=False)
        bar.update(pairs.size)

    def task(c: np.ndarray) -> "tuple[str, str, str, list[str], list[int], int, bool]":
        return (a, b, variant, [fens[i] for i in c], c.tolist(), seed + int(c[0]), one_at_a_time)

    if jobs == 1 or len(chunks) <= 1:
        for c in chunks:
            play_pairs(*task(c), on_pair=advance)
    else:
        context = multiprocessing.get_context("spawn")  # a fresh interpreter per job: no forked thread state
        sent: "multiprocessing.Queue[Played]" = context.Queue()

        def receive() -> None:
            while True:
                try:
                    advance(sent.get_nowait())
                except queue.Empty:
                    return

        with concurrent.futures.ProcessPoolExecutor(
            jobs, mp_context=context, initializer=_job_process, initargs=(os.getpid(), sent)
        ) as pool:
            pending = {pool.submit(play_pairs, *task(c)) for c in chunks}
            while pending:
                ended, pending = concurrent.futures.wait(pending, 0.5, concurrent.futures.FIRST_COMPLETED)
                receive()
                for future in ended:
                    for played in future.result():
                        advance(played)
        sent.close()
    bar.close()
    finished.sort(key=lambda played: int(played[0][0]))
    pair = np.concatenate([np.tile(c, 2) for c, _ in finished])
    return _merge([r for _, r in finished]), pair


def resumed(records: "list[dict]", a: str, b: str, variant: str, fens: "list[str]", seed: int) -> "list[Played]":
    """The tasks of ``a`` against ``b`` in ``records`` (a ``--record`` file) played with ``seed`` whose
    openings are ``fens``' at the same indices: pairs of another match, seed or opening choice are not
    this match's."""
    played: "list[Played]" = []
    have: "set[int]" = set()
    for number, r in enumerate(records, 1):
        try:
            if (r["agent"], r["opponent"], r["variant"], r["seed"]) != (a, b, variant, seed):
                continue
            pairs = np.asarray(r["pairs"], dtype=np.int64)
            fits = all(0 <= i < len(fens) and fens[i] == fen for i, fen in zip(pairs, r["fens"], strict=True))
            indices = set(pairs.tolist())
            if fits and not have & indices:  # a pair recorded twice counts once
                played.append((pairs, MatchResult.from_dict(r["result"])))
                have |= indices
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"record {number} is not a stapel-match pair record ({error!r})") from None
    return played


def record_pairs(
    path: str,
    a: str,
    b: str,
    variant: str,
    fens: "list[str]",
    seed: int,
    version: str,
    pairs: np.ndarray,
    result: MatchResult,
) -> None:
    """Append a finished task to ``--record``'s file (``resumed`` reads it back)."""
    entry = {"agent": a, "opponent": b, "variant": variant, "pairs": pairs.tolist(), "fens": [fens[i] for i in pairs]}
    append_jsonl(path, {**entry, "seed": seed, "result": result.to_dict(), "code_version": version})


def main(argv: "list[str] | None" = None) -> int:
    tune_malloc()
    if "torch" not in sys.modules:  # called as the command (with --jobs 1 the games are played here)
        _one_core()
    parser = argparse.ArgumentParser(prog="stapel-match", description=__doc__.split("\n")[0])
    parser.add_argument("agent", help="agent spec, e.g. mcts:PATH:sims=32, classical:time=0.1, greedy")
    parser.add_argument("opponents", nargs="+", help="opponent specs")
    parser.add_argument("--games", type=int, default=200, help="games per opponent (rounded up to whole pairs)")
    parser.add_argument("--jobs", type=int, default=1, help="processes that play the pairs (default 1)")
    parser.add_argument(
        "--record",
        metavar="PATH",
        default=None,
        help="JSON-lines file each finished pair is appended to; the same command again resumes a killed match",
    )
    add_match_options(parser)
    args = parser.parse_args(argv)
    records: "list[dict]" = []
    try:
        check_match_options(args)
        if args.jobs < 1:
            raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
        variant = get_variant(args.variant)
        specs = [timed_spec(s, args.time) for s in (args.agent, *args.opponents)]
        for spec in specs:
            check_variant(_agent(spec), variant)  # a bad spec, or one of the other variant, fails before any game
        if args.record is not None:
            records = start_jsonl(args.record)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    pairs = max(1, (args.games + 1) // 2)
    version = code_version() if args.record is not None else ""
    equal_time = f", {args.time:g} s a move" if args.time is not None else ""
    for index, opponent in enumerate(specs[1:]):
        start = time.perf_counter()
        fens = opening_fens(variant, pairs, args.openings, args.opening_plies, seed=args.seed * 7919 + index)
        try:
            done = resumed(records, specs[0], opponent, variant.name, fens, args.seed)
        except ValueError as error:
            print(f"error: {args.record}: {error}", file=sys.stderr)
            return 2
        if done:
            print(f"{specs[0]} vs {opponent}: {sum(p.size for p, _ in done)} of {pairs} pairs from {args.record}")

        on_played = None
        if args.record is not None:
            on_played = functools.partial(
                record_pairs, args.record, specs[0], opponent, variant.name, fens, args.seed, version
            )
        clocked = any(clock(_agent(spec)) is not None for spec in (specs[0], opponent))
        result, pair = play_in_parallel(
            specs[0],
            opponent,
            variant.name,
            fens,
            args.seed,
            args.time is not None or clocked,
            args.jobs,
            progress=True,
            done=done,
            on_played=on_played,
        )
        mine, theirs = result.time_per_move()
        print(
            f"{specs[0]} vs {opponent} (Variant {variant.name}): {result.summary(pair)}; "
            f"time per move {mine:.3f} s / {theirs:.3f} s; "
            f"{args.openings} openings{equal_time}; {time.perf_counter() - start:.0f} s",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
