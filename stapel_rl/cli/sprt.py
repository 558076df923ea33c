"""stapel-sprt: is agent A stronger than agent B? Play colour-swapped pairs until the SPRT decides.

    stapel-sprt mcts:new.pt:sims=32 mcts:old.pt:sims=32 --elo0 0 --elo1 20 --alpha 0.05 --beta 0.05
    stapel-sprt mcts:new.pt mcts:old.pt --time 0.2     # equal time: 0.2 s a move each side
    stapel-sprt classical:eval=new.npz classical --time 0.1 --jobs 2   # two processes, one core each

Pairs are played ``--batch-pairs`` at a time, each pair from its own opening:
the variant's opening suite in order (wrapping round after its last
position), or random ones (``--openings random``). Where neither agent has a
clock networks see batches; a spec's ``time=`` is a budget for each decision
of each game, so with one on either side the agents are called with one game
at a time. ``--time SECONDS`` gives both sides that budget per move, as in
``stapel-match``: agents that search by time (``mcts``, ``classical``) get
``:time=SECONDS`` unless their spec sets its own, and every agent is called
with one game at a time. ``--jobs N`` shares each batch's pairs out among N
processes of one core each (as ``stapel-match --jobs``). An agent made for the other variant is refused. The
test is the pentanomial GSPRT (``stapel_rl.eval.sprt``). Exit status: 0 if H1
(A is better by at least elo1) was accepted, 1 for H0, 3 if --max-pairs ran
out undecided, 2 for bad options.
"""

from __future__ import annotations

import argparse
import sys

from stapel_rl._malloc import tune_malloc
from stapel_rl.cli.options import add_match_options, check_counts, check_match_options
from stapel_rl.env import get_variant
from stapel_rl.eval.agents import check_variant
from stapel_rl.eval.arena import timed_spec
from stapel_rl.eval.parallel import agent_of
from stapel_rl.eval.sprt import SPRT, run_sprt


def main(argv: "list[str] | None" = None) -> int:
    tune_malloc()
    parser = argparse.ArgumentParser(prog="stapel-sprt", description=__doc__.split("\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--elo0", type=float, default=0.0)
    parser.add_argument("--elo1", type=float, default=20.0)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--beta", type=float, default=0.05)
    parser.add_argument("--batch-pairs", type=int, default=16)
    parser.add_argument("--max-pairs", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=1, help="processes that play each batch's pairs (default 1)")
    add_match_options(parser)
    args = parser.parse_args(argv)
    try:
        check_match_options(args)
        check_counts(args, "jobs", "batch_pairs", "max_pairs")
        variant = get_variant(args.variant)
        specs = [timed_spec(spec, args.time) for spec in (args.a, args.b)]
        for spec in specs:
            check_variant(agent_of(spec), variant)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    test = SPRT(args.elo0, args.elo1, args.alpha, args.beta)
    try:
        status = run_sprt(
            specs[0],
            specs[1],
            variant,
            test,
            args.batch_pairs,
            args.max_pairs,
            args.opening_plies,
            args.seed,
            openings=args.openings,
            one_at_a_time=args.time is not None,
            jobs=args.jobs,
        )
    except KeyboardInterrupt:  # the batches looked at so far are the test's state
        score = f", score {100 * sum(test.scores) / len(test.scores):.1f}%" if test.scores else ""
        print(f"stopped by Ctrl-C: undecided after {len(test.scores)} pairs{score}, LLR {test.llr():+.2f}")
        return 130
    verdict = {
        "H1": f"H1: {args.a} is stronger by at least {args.elo1} Elo",
        "H0": f"H0: {args.a} is not stronger than {args.elo0} Elo",
        "continue": "undecided",
    }[status]
    print(f"{verdict} after {len(test.scores)} pairs")
    return {"H1": 0, "H0": 1, "continue": 3}[status]


if __name__ == "__main__":
    sys.exit(main())
