"""stapel-match: one agent against one or more opponents, in colour-swapped pairs from random openings.

    stapel-match mcts:checkpoints/variant_I.pt:sims=32 random greedy --games 200 --variant I

Each pair of games starts from one opening (``--opening-plies`` random
actions from the start position) and gives each side both colours, so
deterministic agents do not replay one game over and over and the luck of an
opening cancels. Prints wins/draws/losses and the score with a 95% Wilson
interval per opponent.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from stapel_rl._malloc import tune_malloc
from stapel_rl.eval.agents import make_agent
from stapel_rl.env import get_variant
from stapel_rl.eval.arena import paired_openings, play_match
from stapel_rl.eval.ratings import wilson


def main(argv: "list[str] | None" = None) -> int:
    tune_malloc()
    parser = argparse.ArgumentParser(prog="stapel-match", description=__doc__.split("\n")[0])
    parser.add_argument("agent", help="agent spec, e.g. mcts:PATH:sims=32, policy:PATH, greedy")
    parser.add_argument("opponents", nargs="+", help="opponent specs")
    parser.add_argument("--variant", default="I")
    parser.add_argument("--games", type=int, default=200, help="games per opponent (rounded up to whole pairs)")
    parser.add_argument("--opening-plies", type=int, default=4,
                        help="random actions that make each opening (0: every pair from the start position)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        variant = get_variant(args.variant)
        agent = make_agent(args.agent)
        opponents = [make_agent(spec) for spec in args.opponents]
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    pairs = max(1, (args.games + 1) // 2)
    for opponent in opponents:
        start = time.perf_counter()
        openings, colour = paired_openings(variant, pairs, args.opening_plies, rng)
        result = play_match(agent, opponent, variant, 2 * pairs, rng, start=openings, agent_colour=colour)
        low, high = wilson(result.score, 2 * pairs)
        print(f"{agent.name} vs {opponent.name} (Variant {args.variant}): {result.summary()}, "
              f"95% CI [{100 * low:.1f}%, {100 * high:.1f}%], {time.perf_counter() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
