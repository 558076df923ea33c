"""Make a variant's opening suite: distinct positions a few plies in that the classical engine scores near equal.

    python scripts/make_openings.py --variant I            # writes stapel_rl/eval/openings/variant_I.txt
    python scripts/make_openings.py --variant II --count 300 --depth 7 --margin 200

Candidates are the positions after ``--min-plies``..``--max-plies`` random
full moves from the start (a multi-leap capture is one move), duplicates
dropped. Each is searched by the classical engine to ``--depth`` plies; the
``--count`` whose scores for the side to move lie nearest 0 (within
``--margin`` centi-men, if given), in a seeded random order, make the suite.
The file's header records the command's settings, the scores kept and the code
version, so a suite can be made again.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile

import numpy as np
from tqdm import tqdm

from stapel_rl.classical import Position, Searcher
from stapel_rl.cli.options import check_counts
from stapel_rl.env import Variant, apply_move, get_variant, initial_fen, legal_moves
from stapel_rl.eval.openings import suite_path
from stapel_rl.records import code_version


def candidates(variant: Variant, count: int, min_plies: int, max_plies: int, rng: np.random.Generator) -> "list[str]":
    """Up to ``count`` distinct positions after a random number of random full moves (games not over)."""
    seen: "dict[str, None]" = {}
    for _ in range(50 * count):
        if len(seen) >= count:
            break
        fen = initial_fen(variant)
        for _ in range(int(rng.integers(min_plies, max_plies + 1))):
            moves = legal_moves(fen, variant)
            if not moves:
                break
            fen = apply_move(fen, moves[int(rng.integers(len(moves)))], variant)
        if legal_moves(fen, variant):
            seen.setdefault(fen)
    return list(seen)


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", default="I")
    parser.add_argument("--count", type=int, default=300, help="positions in the suite")
    parser.add_argument("--candidates", type=int, default=2500, help="distinct random positions to score")
    parser.add_argument("--min-plies", type=int, default=4)
    parser.add_argument("--max-plies", type=int, default=8)
    parser.add_argument("--depth", type=int, default=6, help="classical search depth that scores each candidate")
    parser.add_argument("--margin", type=int, default=None, help="largest |score| kept, centi-men (default: none)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="default: the package's suite file of the variant")
    args = parser.parse_args(argv)
    try:
        check_counts(args, "count", "candidates", "depth")
    except ValueError as error:
        parser.error(str(error))
    if not 0 <= args.min_plies <= args.max_plies:
        parser.error(f"--min-plies and --max-plies must be 0 <= min <= max, got {args.min_plies} and {args.max_plies}")
    variant = get_variant(args.variant)
    rng = np.random.default_rng(args.seed)
    pool = candidates(variant, args.candidates, args.min_plies, args.max_plies, rng)
    searcher = Searcher(variant)
    scores = []
    for fen in tqdm(pool, desc=f"scoring Variant {variant.name} at depth {args.depth}", unit="pos"):
        searcher.clear()
        scores.append(abs(searcher.search(Position.from_fen(fen), depth=args.depth).score))
    nearest = [
        int(i)
        for i in np.argsort(scores, kind="stable")[: args.count]
        if args.margin is None or scores[i] <= args.margin
    ]
    if len(nearest) < args.count:
        print(
            f"only {len(nearest)} of {len(pool)} candidates within +-{args.margin}: raise --candidates or --margin",
            file=sys.stderr,
        )
        return 1
    chosen = [pool[nearest[i]] for i in rng.permutation(len(nearest))]
    widest = max(scores[i] for i in nearest)
    header = [
        f"# Stapeldammen Variant {variant.name} opening suite: {args.count} positions after {args.min_plies}-"
        f"{args.max_plies} random full moves",
        f"# whose classical depth-{args.depth} scores lie nearest 0 of {len(pool)} distinct candidates "
        f"(all within +-{widest} centi-men).",
        f"# Made by: python scripts/make_openings.py --variant {variant.name} --count {args.count} --candidates "
        f"{args.candidates} --min-plies {args.min_plies} --max-plies {args.max_plies} --depth {args.depth} "
        + (f"--margin {args.margin} " if args.margin is not None else "")
        + f"--seed {args.seed}",
        f"# Code version: {code_version()}",
    ]
    out = pathlib.Path(args.out) if args.out else suite_path(variant)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=out.parent, delete=False, suffix=".tmp") as f:
        f.write("\n".join(header + chosen) + "\n")
    os.replace(f.name, out)
    print(f"{out}: {args.count} openings of {len(pool)} candidates, all within +-{widest} centi-men")
    return 0


if __name__ == "__main__":
    sys.exit(main())
