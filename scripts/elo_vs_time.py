"""Elo against thinking time: the MCTS agent and both classical evaluations, one figure per variant.

    python scripts/elo_vs_time.py --variant I --ray

Every family of players (``--families``: by default the committed MCTS agent,
the classical engine with its hand-written evaluation and with the packaged
learned one) plays at every thinking time (``--times``, seconds a move) as
``<family>:time=<t>``, in colour-swapped pairs from the variant's opening
suite. Each player meets every other whose time is at most ``--reach`` steps
of ``--times`` away (the same family at the neighbouring times, so each
family's own slope is measured directly, and the other families at the same
and the neighbouring times, which put the families on one scale). One
Bradley-Terry fit rates them all, the first family at the first time at 0
Elo, with 95% bootstrap intervals over game pairs. The figure shows Elo
against time per family (a log time axis): the steeper line scales better.

Games go to ``--out``'s games.jsonl as they finish, so a killed run resumes
where it stopped (``--ray`` plays the pairs in parallel on every core, a Ray
task each), and the figure can be redrawn from a partial run. The committed
results were made with ``--out tournaments/elo_vs_time_<variant> --plot
docs/elo_vs_time_<variant>.png`` (docs/results.md).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from learning_curve import draw_curve
from tqdm import tqdm

from stapel_rl.cli.options import check_counts, check_out_folder
from stapel_rl.env import get_variant
from stapel_rl.eval.arena import timed_spec
from stapel_rl.eval.ratings import games_between, rate_games
from stapel_rl.eval.tournament import TournamentConfig, run
from stapel_rl.records import code_version, load_jsonl

TIMES = [0.1, 0.25, 0.5, 1.0, 2.0]


def default_families(variant: str) -> "list[str]":
    """The committed MCTS agent and the classical engine with each of its evaluations."""
    return ["classical", "classical:eval=nnue", f"mcts:variant_{variant}"]


def schedule(families: int, times: int, reach: int) -> "list[tuple[int, int]]":
    """Pairings of players ``family * times + t``: every two whose times are at most ``reach`` steps apart
    (a player never meets itself), the cheapest (shortest times) first, so a partial run has a whole scale."""
    pairs = [
        (f * times + t, g * times + u)
        for f in range(families)
        for g in range(families)
        for t in range(times)
        for u in range(times)
        if (f, t) < (g, u) and abs(t - u) <= reach
    ]
    return sorted(pairs, key=lambda p: (max(p[0] % times, p[1] % times), p))


def time_used(player: str, games: "list[dict]") -> "float | None":
    """``player``'s mean seconds per move over the games whose records keep time (None if none do)."""
    per_game = [
        g["seconds_per_move"][side]
        for g in games
        if "seconds_per_move" in g
        for side, colour in enumerate(("white", "black"))
        if g[colour] == player
    ]
    return sum(per_game) / len(per_game) if per_game else None


def plot(points: "dict[str, list[dict]]", variant: str, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for family, rows in points.items():
        draw_curve(ax, [r["time"] for r in rows], rows, family)
    ax.set_xscale("log")
    ax.set_xticks([r["time"] for r in next(iter(points.values()))])
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.get_xaxis().set_minor_formatter(matplotlib.ticker.NullFormatter())  # the times are the only labels
    ax.set_xlabel("thinking time per move (s)")
    ax.set_ylabel("Elo")
    ax.set_title(f"Variant {variant}: Elo against thinking time (95% intervals)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", default="I")
    parser.add_argument("--families", nargs="+", default=None, help="agent specs without time= (default: see above)")
    parser.add_argument("--times", nargs="+", type=float, default=TIMES, help="seconds a move, increasing")
    parser.add_argument("--reach", type=int, default=1, help="players meet when their times are this many steps apart")
    parser.add_argument("--pairs", type=int, default=5, help="openings per pairing (each played with both colours)")
    parser.add_argument("--seed", type=int, default=0)
    # Not the committed results by default: resuming them would re-rate their games and redraw the tracked figure.
    parser.add_argument("--out", default=None, help="results folder (default runs/elo_vs_time_<variant>)")
    parser.add_argument("--plot", default=None, help="figure (default elo_vs_time.png in --out)")
    parser.add_argument("--ray", action="store_true", help="play the pairs as Ray tasks on every core")
    args = parser.parse_args(argv)
    families = args.families or default_families(args.variant)
    out = pathlib.Path(args.out or f"runs/elo_vs_time_{args.variant}")
    figure = pathlib.Path(args.plot) if args.plot else out / "elo_vs_time.png"
    try:
        if sorted(args.times) != args.times or len(set(args.times)) != len(args.times) or args.times[0] <= 0:
            raise ValueError(f"--times must be positive and increasing, got {args.times}")
        check_counts(args, "reach", "pairs")
        check_out_folder(out)
        for family in families:
            if timed_spec(family, 1.0) == family:
                raise ValueError(f"{family!r} does not take a thinking time here (or sets time= itself)")
        players = [timed_spec(family, t) for family in families for t in args.times]
        variant = get_variant(args.variant)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    pairings = schedule(len(families), len(args.times), args.reach)
    config = TournamentConfig(players, variant, args.pairs, seed=args.seed, schedule=pairings, one_at_a_time=True)
    with tqdm(total=2 * args.pairs * len(pairings), desc="games", unit="game") as bar:
        # Games of players outside this run (other --times or --families in the same folder) are not its own.
        bar.update(len(games_between(players, load_jsonl(out / "games.jsonl"))))
        games = run(config, out, progress=bar, use_ray=args.ray)
    games = games_between(players, games)
    names = {g["white"] for g in games} | {g["black"] for g in games}
    played = [p for p in players if p in names]
    ratings = rate_games(played, games, played[0], args.seed)
    rows = {r["player"]: r for r in ratings.to_rows()}
    points = {
        family: [
            {**rows[spec], "time": t, "time_used": time_used(spec, games)}
            for t in args.times
            if (spec := timed_spec(family, t)) in rows
        ]
        for family in families
    }
    print(f"Variant {args.variant}, {len(games)} games, Elo with {played[0]} = 0 (95% bootstrap interval)")
    for family, rows_ in points.items():
        print(f"{family}:")
        for r in rows_:
            used = "" if r["time_used"] is None else f", {r['time_used']:.3f} s a move used"
            interval = f"[{r['ci_low']:+.0f}, {r['ci_high']:+.0f}]"
            print(f"  {r['time']:5.2f} s  {r['elo']:+6.0f} {interval}  of {r['games']}{used}")
    (out / "elo_vs_time.json").write_text(
        json.dumps(
            {
                "variant": args.variant,
                "families": families,
                "times": args.times,
                "points": points,
                "anchor": played[0],
                "pairs": args.pairs,
                "reach": args.reach,
                "code_version": code_version(),
            },
            indent=2,
        )
    )
    plot(points, args.variant, figure)
    print(f"plot: {figure}\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
