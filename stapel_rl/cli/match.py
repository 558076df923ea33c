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
Ctrl-C stops a match at once (status 130), printing the result of the pairs
played so far.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable

import numpy as np

from stapel_rl._malloc import tune_malloc
from stapel_rl.cli.options import add_match_options, check_counts, check_match_options
from stapel_rl.env import get_variant
from stapel_rl.eval.agents import check_variant, clock
from stapel_rl.eval.arena import MatchResult, timed_spec
from stapel_rl.eval.openings import opening_fens
from stapel_rl.eval.parallel import Played, agent_of, in_order, one_core, play_in_parallel
from stapel_rl.records import append_jsonl, code_version, start_jsonl


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


def keep(
    so_far: "list[Played]",
    record: "Callable[[np.ndarray, MatchResult], None] | None",
    pairs: np.ndarray,
    result: MatchResult,
) -> None:
    """A pair as it ends: kept for the line a stopped match prints, and appended to ``--record``'s file."""
    so_far.append((pairs, result))
    if record is not None:
        record(pairs, result)


def stopped(match: str, so_far: "list[Played]", pairs: int, record: "str | None") -> str:
    """What a match stopped by Ctrl-C says: its result over the pairs played, and how to go on."""
    played = sum(p.size for p, _ in so_far)
    line = f"{match}: stopped by Ctrl-C after {played} of {pairs} pairs"
    if so_far:
        result, pair = in_order(so_far)
        line += f": {result.summary(pair)}"
    more = f"the same command resumes it from {record}" if record else "--record PATH keeps the pairs for a resume"
    return f"{line}; {more}"


def main(argv: "list[str] | None" = None) -> int:
    tune_malloc()
    if "torch" not in sys.modules:  # called as the command (with --jobs 1 the games are played here)
        one_core()
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
        check_counts(args, "jobs", "games")
        variant = get_variant(args.variant)
        specs = [timed_spec(s, args.time) for s in (args.agent, *args.opponents)]
        for spec in specs:
            check_variant(agent_of(spec), variant)  # a bad spec, or one of the other variant, fails before any game
        if args.record is not None:
            records = start_jsonl(args.record)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    pairs = (args.games + 1) // 2
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

        so_far = list(done)
        record = None
        if args.record is not None:
            record = functools.partial(
                record_pairs, args.record, specs[0], opponent, variant.name, fens, args.seed, version
            )
        on_played = functools.partial(keep, so_far, record)
        clocked = any(clock(agent_of(spec)) is not None for spec in (specs[0], opponent))
        try:
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
        except KeyboardInterrupt:
            print(stopped(f"{specs[0]} vs {opponent}", so_far, pairs, args.record), flush=True)
            return 130
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
