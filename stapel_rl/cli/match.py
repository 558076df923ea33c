"""stapel-match: one agent against one or more opponents, colours alternated.

    stapel-match mcts:checkpoints/variant_I.pt:sims=32 random greedy --games 200 --variant I

Prints wins/draws/losses and the score with a 95% Wilson interval per opponent.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from stapel_rl.eval.agents import make_agent
from stapel_rl.eval.arena import play_match
from stapel_rl.eval.ratings import wilson


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(prog="stapel-match", description=__doc__.split("\n")[0])
    parser.add_argument("agent", help="agent spec, e.g. mcts:PATH:sims=32, policy:PATH, greedy")
    parser.add_argument("opponents", nargs="+", help="opponent specs")
    parser.add_argument("--variant", default="I")
    parser.add_argument("--games", type=int, default=200, help="games per opponent (colours alternate)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        agent = make_agent(args.agent)
        opponents = [make_agent(spec) for spec in args.opponents]
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    for opponent in opponents:
        start = time.perf_counter()
        result = play_match(agent, opponent, args.variant, args.games, rng)
        low, high = wilson(result.score, args.games)
        print(f"{agent.name} vs {opponent.name} (Variant {args.variant}): {result.summary()}, "
              f"95% CI [{100 * low:.1f}%, {100 * high:.1f}%], {time.perf_counter() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
