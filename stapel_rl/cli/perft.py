"""Perft: count full-move paths from a position, ply by ply.

    stapel-perft --variant II --depth 5
    stapel-perft --fen "W:b,b,...,w" --depth 3

Each ply's whole frontier is stepped at once by the batched engine.
"""

from __future__ import annotations

import argparse
import sys
import time

from stapel_rl._malloc import tune_malloc
from stapel_rl.cli.options import check_counts
from stapel_rl.env import from_fens, get_variant, initial_fen, perft


def main(argv: "list[str] | None" = None) -> int:
    tune_malloc()
    parser = argparse.ArgumentParser(prog="stapel-perft", description=__doc__.split("\n")[0])
    parser.add_argument("--variant", default="I", help="I or II (default I)")
    parser.add_argument("--depth", type=int, default=5, help="deepest ply to count (default 5)")
    parser.add_argument("--fen", default=None, help="start from this position text instead of the variant's start")
    args = parser.parse_args(argv)
    try:
        check_counts(args, "depth")
        variant = get_variant(args.variant)
        fen = args.fen or initial_fen(variant)
        from_fens([fen], variant)  # reject malformed text before printing anything
        print(f"variant {variant.name}  position {fen}")
        print(f"{'depth':>5} {'count':>14} {'seconds':>9}")
        for depth in range(1, args.depth + 1):
            start = time.perf_counter()
            count = perft(fen, depth, variant)
            print(f"{depth:>5} {count:>14,} {time.perf_counter() - start:>9.3f}", flush=True)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
