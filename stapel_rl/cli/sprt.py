"""stapel-sprt: is agent A stronger than agent B? Play colour-swapped pairs until the SPRT decides.

    stapel-sprt mcts:new.pt:sims=32 mcts:old.pt:sims=32 --elo0 0 --elo1 20 --alpha 0.05 --beta 0.05

Pairs are played ``--batch-pairs`` at a time (networks see batches), each
pair from its own opening: the variant's opening suite in order (wrapping
round after its last position), or random ones (``--openings random``). The
test is the pentanomial GSPRT (``stapel_rl.eval.sprt``). Exit status: 0 if H1
(A is better by at least elo1) was accepted, 1 for H0, 3 if --max-pairs ran
out undecided.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from stapel_rl._malloc import tune_malloc
from stapel_rl.env import engine, get_variant
from stapel_rl.eval.agents import make_agent
from stapel_rl.eval.arena import play_match
from stapel_rl.eval.openings import SOURCES, opening_fens
from stapel_rl.eval.sprt import SPRT


def run_sprt(a, b, variant, test: SPRT, batch_pairs: int, max_pairs: int, opening_plies: int, seed: int,
             verbose: bool = True, openings: str = "suite") -> str:
    """Play pairs until ``test`` decides; returns "H0", "H1" or "continue" (undecided)."""
    rng = np.random.default_rng(seed)
    batch = 0
    while test.status() == "continue" and len(test.scores) < max_pairs:
        fens = opening_fens(variant, batch_pairs, openings, opening_plies, seed=seed * 7919 + batch,
                            offset=batch * batch_pairs)
        start = engine.from_fens([f for f in fens for _ in range(2)], variant)
        result = play_match(a, b, variant, 2 * batch_pairs, rng, start=start)
        for pair in result.scores.reshape(-1, 2):
            test.add_pair(float(pair.mean()))
        batch += 1
        if verbose:
            low, high = test.bounds
            counts = " ".join(str(int(c)) for c in test.pentanomial().counts)
            print(f"pairs {len(test.scores):>5}  score {100 * np.mean(test.scores):5.1f}%  "
                  f"LLR {test.llr():+.2f}  bounds [{low:.2f}, {high:.2f}]  pentanomial {counts}", flush=True)
    return test.status()


def main(argv: "list[str] | None" = None) -> int:
    tune_malloc()
    parser = argparse.ArgumentParser(prog="stapel-sprt", description=__doc__.split("\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--variant", default="I")
    parser.add_argument("--elo0", type=float, default=0.0)
    parser.add_argument("--elo1", type=float, default=20.0)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--beta", type=float, default=0.05)
    parser.add_argument("--batch-pairs", type=int, default=16)
    parser.add_argument("--max-pairs", type=int, default=2000)
    parser.add_argument("--openings", default="suite", choices=SOURCES,
                        help="the variant's opening suite (default) or random openings")
    parser.add_argument("--opening-plies", type=int, default=4, help="with --openings random: random actions")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        a, b, variant = make_agent(args.a), make_agent(args.b), get_variant(args.variant)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    test = SPRT(args.elo0, args.elo1, args.alpha, args.beta)
    status = run_sprt(a, b, variant, test, args.batch_pairs, args.max_pairs, args.opening_plies, args.seed,
                      openings=args.openings)
    verdict = {"H1": f"H1: {args.a} is stronger by at least {args.elo1} Elo",
               "H0": f"H0: {args.a} is not stronger than {args.elo0} Elo", "continue": "undecided"}[status]
    print(f"{verdict} after {len(test.scores)} pairs")
    return {"H1": 0, "H0": 1, "continue": 3}[status]


if __name__ == "__main__":
    sys.exit(main())
