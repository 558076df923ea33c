"""Learning curves: rate the network snapshots of training runs on a fixed ladder, Elo against hours.

    python scripts/learning_curve.py runs/I/new runs/I/old --variant I --out tournaments/curve_I
    python scripts/learning_curve.py tournaments/curve_I/learning_curve.json --replot --plot docs/curve_I.png
    python scripts/learning_curve.py runs/I/az runs/mm_I --time 0.1 --cores 2   # AlphaZero beside minimax

A run is an AlphaZero run (``stapel-train``: its snapshots) or a minimax run
(``stapel-train loop=minimax``, a folder with ``loop.json``): the evaluation it
had after each generation (generation 0, its start, at 0 hours) plays as
``classical:time=<--time>:eval=<net>``, the hand-written one as
``classical:time=<--time>``; a generation's hours are the sum of the
generations' seconds so far. With ``--time`` the snapshots search that many
seconds a move instead of ``--sims`` simulations (equal time for both ways to
learn; minimax runs need it), and ``--cores N`` reads hours as CPU-hours, N
times the wall-clock (runs trained with N cores busy).

Every run's ``snapshots/`` (``train.keep_every_minutes``) and its final
checkpoint are played, with ``--sims`` simulations and no noise, against each
member of a fixed ladder of anchors that spans the range from random play to
the classical engine at one second a move (``DEFAULT_LADDER``), and the ladder
members against each other, in colour-swapped pairs from the variant's opening
suite (the tournament machinery: ``games.jsonl`` in ``--out``, so a killed
rating resumes and a rerun with more snapshots plays only the new games).
One Bradley-Terry fit over all games puts every snapshot on one scale with
``alphabeta:2`` at 0, with 95% bootstrap intervals over game pairs; the plot
shows Elo against the run's wall-clock hours, all runs on one figure, the
ladder as horizontal lines (``learning_curve.png`` in ``--out`` by default). The committed
curves were made with ``--out tournaments/learning_curve_<name> --plot docs/learning_curve_<name>.png``
(docs/results.md).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import TYPE_CHECKING

from tqdm import tqdm

from stapel_rl.cli.options import check_counts, check_out_folder
from stapel_rl.env import get_variant
from stapel_rl.eval.ratings import games_between, rate_games
from stapel_rl.eval.tournament import TournamentConfig, run
from stapel_rl.models.checkpoint import list_checkpoints, load
from stapel_rl.records import code_version, load_jsonl

if TYPE_CHECKING:  # matplotlib is imported where the figure is drawn, after its backend is chosen
    from matplotlib.axes import Axes

#: Anchors from random play to the classical engine at 1 s a move, so that the scale does not saturate.
DEFAULT_LADDER = [
    "random",
    "greedy",
    "alphabeta:2",
    "alphabeta:4",
    "classical:time=0.05",
    "classical:time=0.25",
    "classical:time=1",
]


def hours(path: pathlib.Path) -> float:
    """The run's wall-clock hours when ``path`` was saved."""
    return float(load(path)["counters"]["seconds"]) / 3600.0


def snapshots(run_dir: pathlib.Path, every: int, until: float = float("inf")) -> "list[tuple[pathlib.Path, float]]":
    """Every ``every``-th snapshot of a run saved by ``until`` wall-clock hours (the last of them always)
    with its hours, and the run's newest checkpoint where it is later than that and still by ``until``
    (the network the run ended with, or had then)."""
    if not run_dir.is_dir():
        raise ValueError(f"run folder {str(run_dir)!r} does not exist")
    timed = [(p, hours(p)) for p in list_checkpoints(run_dir / "snapshots")]
    by = f" saved by {until:g} hours" if until < float("inf") else ""
    timed = [(p, h) for p, h in timed if h <= until]
    if not timed:
        raise ValueError(f"{run_dir} has no snapshots{by}: was it trained with train.keep_every_minutes > 0?")
    points = timed[::every] + ([timed[-1]] if (len(timed) - 1) % every else [])
    for final in list_checkpoints(run_dir / "checkpoints")[-1:]:
        final_hours = hours(final)  # a training checkpoint holds the replay buffer: load it once
        if points[-1][1] < final_hours <= until:
            points.append((final, final_hours))
    return points


def minimax_points(run_dir: pathlib.Path, seconds: float, until: float = float("inf")) -> "list[tuple[str, float]]":
    """The agent spec of a minimax run's current evaluation at its start and after each generation that
    ended by ``until`` wall-clock hours, with the run's hours then."""
    try:
        state = json.loads((run_dir / "loop.json").read_text())
        history = state["history"]
    except (OSError, ValueError, KeyError, IndexError) as error:
        raise ValueError(f"{run_dir} is not a minimax run with a readable loop.json ({error!r})") from None

    def spec(current: "str | None") -> str:
        return f"classical:time={seconds:g}" + (f":eval={run_dir / current}" if current else "")

    first = run_dir / "generations" / "gen_0000" / "net.npz"
    points = [(spec(str(first.relative_to(run_dir)) if first.is_file() else None), 0.0)]
    elapsed = 0.0
    for record in history:
        elapsed += float(record["seconds"])
        if elapsed / 3600.0 > until:
            break
        points.append((spec(record["current"]), elapsed / 3600.0))
    return points


def draw_curve(ax: Axes, xs: "list[float]", rows: "list[dict]", label: str) -> None:
    """One curve of Elo (``rows``' ``elo``) against ``xs`` on ``ax``, its 95% interval as a band."""
    (line,) = ax.plot(xs, [r["elo"] for r in rows], marker="o", ms=4, label=label)
    ax.fill_between(xs, [r["ci_low"] for r in rows], [r["ci_high"] for r in rows], color=line.get_color(), alpha=0.2)


def ladder_lines(ladder: "list[dict]", gap: float = 40.0) -> "list[tuple[float, str]]":
    """The ladder's horizontal lines as (Elo, label), members less than ``gap`` Elo apart on one line
    with their names joined, so that labels do not print over each other (random and greedy both
    lose every game to the rest of the ladder and sit at the same Elo)."""
    lines: "list[tuple[float, str]]" = []
    for row in sorted(ladder, key=lambda r: r["elo"]):
        if lines and row["elo"] - lines[-1][0] < gap:
            lines[-1] = (lines[-1][0], f"{lines[-1][1]}, {row['player']}")
        else:
            lines.append((row["elo"], row["player"]))
    return lines


def plot(
    curves: "dict[str, list[dict]]", ladder: "list[dict]", variant: str, path: pathlib.Path, cores: int = 1
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for name, rows in curves.items():
        draw_curve(ax, [r["hours"] for r in rows], rows, name)
    for elo, label in ladder_lines(ladder):
        ax.axhline(elo, color="grey", ls="--", lw=0.8)
        ax.annotate(
            label,
            (0, elo),
            xytext=(2, 2),
            textcoords="offset points",
            color="grey",
            fontsize=8,
            xycoords=("axes fraction", "data"),
        )
    ax.set_xlabel(f"training CPU-hours ({cores} cores x wall-clock)" if cores > 1 else "training wall-clock (hours)")
    ax.set_ylabel("Elo (alphabeta:2 = 0), 95% interval")
    ax.set_title(f"Variant {variant}: strength against training time")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def replot(results: "list[pathlib.Path]", figure: "pathlib.Path | None") -> int:
    """Draw the curves of saved ``learning_curve.json`` files on one figure, the first one's ladder
    (``figure`` by default learning_curve.png beside the first of them)."""
    try:
        saved = [json.loads(path.read_text()) for path in results]
        variants = {s["variant"] for s in saved}
        curves = {name: rows for s in saved for name, rows in s["curves"].items()}
        ladder = saved[0]["ladder"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        print(f"error: --replot needs learning_curve.json files: {error!r}", file=sys.stderr)
        return 2
    if len(variants) > 1:
        print("error: --replot: the results are of different variants", file=sys.stderr)
        return 2
    variant = variants.pop()
    figure = figure or results[0].parent / "learning_curve.png"
    plot(curves, ladder, variant, figure, int(saved[0].get("cores", 1)))
    print(f"plot: {figure}")
    return 0


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "runs", nargs="+", help="training run directories (with snapshots/); with --replot, learning_curve.json files"
    )
    parser.add_argument("--variant", default="I")
    parser.add_argument("--ladder", nargs="+", default=DEFAULT_LADDER, help="fixed opponents (agent specs)")
    parser.add_argument("--anchor", default="alphabeta:2", help="ladder member rated 0")
    parser.add_argument("--sims", type=int, default=64, help="simulations of the snapshots' search")
    parser.add_argument(
        "--time", type=float, default=None, help="seconds a move of every rated network instead (minimax runs need it)"
    )
    parser.add_argument("--cores", type=int, default=1, help="hours are CPU-hours: wall-clock times this many cores")
    parser.add_argument("--pairs", type=int, default=10, help="openings per pairing (each played with both colours)")
    parser.add_argument("--every", type=int, default=1, help="rate every n-th snapshot of each run")
    parser.add_argument(
        "--max-hours",
        type=float,
        default=None,
        help="leave out what a run saved later than this (the figure's hours: CPU-hours with --cores), so that "
        "runs still going, or of unequal length, are rated up to equal compute",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--labels", nargs="+", default=None, help="legend names of the runs (default: folder names)")
    # Not the committed results by default: resuming them would re-rate their games and redraw the tracked figure.
    parser.add_argument("--out", default=None, help="results folder (default runs/learning_curve_<variant>)")
    parser.add_argument("--plot", default=None, help="figure (default learning_curve.png in --out)")
    parser.add_argument(
        "--replot",
        action="store_true",
        help="redraw the figure from the learning_curve.json files named as runs, without playing",
    )
    parser.add_argument(
        "--ray",
        action="store_true",
        help="play the pairings as Ray tasks (a local Ray uses every core; pip install -e '.[ray]')",
    )
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out or f"runs/learning_curve_{args.variant}")
    if args.replot:
        return replot([pathlib.Path(r) for r in args.runs], pathlib.Path(args.plot) if args.plot else None)
    figure = pathlib.Path(args.plot) if args.plot else out / "learning_curve.png"
    try:
        if args.anchor not in args.ladder:
            raise ValueError(f"the anchor {args.anchor!r} must be on the ladder {args.ladder}")
        if args.labels and len(args.labels) != len(args.runs):
            raise ValueError(f"--labels names {len(args.labels)} curves for {len(args.runs)} runs")
        labels = args.labels or [pathlib.Path(r).name for r in args.runs]
        if args.time is not None and not args.time > 0:
            raise ValueError(f"--time must be a positive number of seconds, got {args.time}")
        check_counts(args, "cores", "pairs", "every")
        check_out_folder(out)
        if args.max_hours is not None and not args.max_hours > 0:
            raise ValueError(f"--max-hours must be a positive number of hours, got {args.max_hours}")
        until = float("inf") if args.max_hours is None else args.max_hours / args.cores  # wall-clock hours
        entries = []  # (curve, hours, agent spec)
        for label, run_dir in zip(labels, map(pathlib.Path, args.runs), strict=True):
            if (run_dir / "loop.json").is_file():
                if args.time is None:
                    raise ValueError(f"{run_dir} is a minimax run: its engines are rated at equal time, give --time")
                entries += [(label, h, spec) for spec, h in minimax_points(run_dir, args.time, until)]
            else:
                limit = f"time={args.time:g}" if args.time is not None else f"sims={args.sims}"
                entries += [(label, h, f"mcts:{path}:{limit}") for path, h in snapshots(run_dir, args.every, until)]
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    specs = list(dict.fromkeys(spec for _, _, spec in entries))  # a generation not promoted repeats its parent
    players = list(args.ladder) + list(specs)
    n = len(args.ladder)
    # The ladder among itself (fixes its spacing), then every snapshot against every ladder member.
    schedule = [(i, j) for i in range(n) for j in range(i + 1, n)] + [
        (k, i) for k in range(n, len(players)) for i in range(n)
    ]
    config = TournamentConfig(players, get_variant(args.variant), args.pairs, seed=args.seed, schedule=schedule)
    with tqdm(total=2 * args.pairs * len(schedule), desc="games", unit="game") as bar:
        bar.update(len(games_between(players, load_jsonl(out / "games.jsonl"))))
        games = run(config, out, progress=bar, use_ray=args.ray)
    games = games_between(players, games)
    ratings = rate_games(players, games, args.anchor, args.seed)
    rows = {r["player"]: r for r in ratings.to_rows()}
    curves: "dict[str, list[dict]]" = {}
    for name, hours, spec in entries:
        curves.setdefault(name, []).append({**rows[spec], "hours": hours * args.cores, "spec": spec})
    ladder = [rows[p] for p in args.ladder]
    print(f"Variant {args.variant}, {len(games)} games, Elo with {args.anchor} = 0 (95% bootstrap interval)")
    for row in ladder:
        print(f"  {row['player']:<14} {row['elo']:+6.0f} [{row['ci_low']:+.0f}, {row['ci_high']:+.0f}]")
    for name, rows_ in curves.items():
        print(f"run {name}:")
        for r in sorted(rows_, key=lambda r: r["hours"]):
            print(
                f"  {r['hours']:5.2f} h  {r['elo']:+6.0f} [{r['ci_low']:+.0f}, {r['ci_high']:+.0f}]  "
                f"score {100 * r['score']:.0f}% of {r['games']}"
            )
    (out / "learning_curve.json").write_text(
        json.dumps(
            {
                "variant": args.variant,
                "ladder": ladder,
                "curves": curves,
                "anchor": args.anchor,
                "sims": args.sims,
                "time": args.time,
                "cores": args.cores,
                "pairs": args.pairs,
                "max_hours": args.max_hours,
                "runs": args.runs,
                "code_version": code_version(),
            },
            indent=2,
        )
    )
    plot(curves, ladder, args.variant, figure, args.cores)
    print(f"plot: {figure}\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
