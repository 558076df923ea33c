"""stapel-tournament: rate agents by playing them against each other.

    stapel-tournament random greedy alphabeta:2 "mcts:runs/I/x/snapshots/*.pt:sims=32" --pairs 20 --out tournaments/x
    stapel-tournament mcts:new.pt:sims=64 random greedy --gauntlet --out tournaments/g   # one against a list
    stapel-tournament random greedy alphabeta:2 --ray --address auto --out tournaments/r   # pairings on a Ray cluster

Writes into --out: games.jsonl (appended game by game; rerunning with the same
--out resumes), games.pdn, ratings.csv, ratings.json (with the config and code
version), and elo_vs_step.png when checkpoints of one run take part.
"""

from __future__ import annotations

import argparse
import csv
import json
import pathlib
import sys

import numpy as np
from matplotlib.figure import Figure  # no pyplot: a file needs no display backend
from tqdm import tqdm

from stapel_rl._malloc import tune_malloc
from stapel_rl.cli.options import add_match_options, check_counts, check_match_options, check_out_folder
from stapel_rl.env import get_variant
from stapel_rl.eval.arena import timed_spec
from stapel_rl.eval.pdn import write_game
from stapel_rl.eval.ratings import games_between, rate_games
from stapel_rl.eval.tournament import TournamentConfig, checkpoint_step, expand_specs, foreign_games, run
from stapel_rl.records import code_version, load_jsonl


def plot_elo_vs_step(rows: "list[dict]", path: pathlib.Path) -> bool:
    """Elo with its interval against training iteration for checkpoint players; False if none."""
    # By step alone: two players may share one (the same checkpoint at two search sizes).
    points = sorted(
        ((step, r) for r in rows if (step := checkpoint_step(r["player"])) is not None), key=lambda point: point[0]
    )
    if not points:
        return False
    steps = [s for s, _ in points]
    elo = np.array([r["elo"] for _, r in points])
    err = np.array([[r["elo"] - r["ci_low"] for _, r in points], [r["ci_high"] - r["elo"] for _, r in points]])
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    ax.errorbar(steps, elo, yerr=err, marker="o", capsize=3, label="checkpoints")
    for r in rows:
        if checkpoint_step(r["player"]) is None:
            ax.axhline(r["elo"], ls="--", lw=0.8, color="gray")
            ax.annotate(r["player"], (steps[0], r["elo"]), fontsize=8, color="gray", va="bottom")
    ax.set_xlabel("training iteration")
    ax.set_ylabel("Elo (random = 0), 95% CI")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def main(argv: "list[str] | None" = None) -> int:
    tune_malloc()
    parser = argparse.ArgumentParser(prog="stapel-tournament", description=__doc__.split("\n")[0])
    parser.add_argument("players", nargs="+", help="agent specs; checkpoint globs allowed")
    parser.add_argument(
        "--pairs", type=int, default=10, help="openings per pairing (the suite's first), each played with both colours"
    )
    add_match_options(parser)
    parser.add_argument("--gauntlet", action="store_true", help="the first player meets each other; no round robin")
    parser.add_argument("--anchor", default="random", help="the player rated 0 (default random; added if absent)")
    parser.add_argument("--out", default="tournaments/latest", help="output folder; rerun with it to resume")
    parser.add_argument("--ray", action="store_true", help="play the pairings as Ray tasks (pip install -e '.[ray]')")
    parser.add_argument(
        "--address",
        default=None,
        help="with --ray: join this cluster ('auto', host:port, ray://host:port); default: a local Ray",
    )
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    try:
        check_match_options(args)
        check_counts(args, "pairs")
        players = [timed_spec(p, args.time) for p in expand_specs(args.players)]
        if args.anchor not in players:
            players.append(args.anchor)
        if len(set(players)) != len(players):
            raise ValueError("a player is named twice")
        config = TournamentConfig(
            players,
            get_variant(args.variant),
            args.pairs,
            args.opening_plies,
            args.gauntlet,
            args.seed,
            openings=args.openings,
            one_at_a_time=args.time is not None,
        )
        _check_resume(out, config)
        total = 2 * config.pairs * len(config.pairings())
        with tqdm(total=total, desc="games", unit="game") as bar:
            bar.update(min(total, len(load_jsonl(out / "games.jsonl"))))
            games = run(config, out, progress=bar, ray_address=args.address, use_ray=args.ray)
    except (ValueError, ConnectionError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # every game finished is in games.jsonl already
        print(f"stopped by Ctrl-C with {len(load_jsonl(out / 'games.jsonl'))} games in {out}: the same command resumes")
        return 130

    index = {p: i for i, p in enumerate(players)}
    games = games_between(players, games)
    ratings = rate_games(players, games, args.anchor, args.seed)
    print(f"\nVariant {config.variant.name}, {len(games)} games\n" + ratings.table())
    wins = np.zeros((len(players), len(players)))
    for g in games:
        w, b = index[g["white"]], index[g["black"]]
        wins[w, b] += g["white_score"] == 1
        wins[b, w] += g["white_score"] == 0
    order = ratings.order()
    los = [
        {"better": players[a], "worse": players[b], "los": ratings.likelihood_of_superiority(wins, a, b)}
        for a, b in zip(order[:-1], order[1:], strict=True)
    ]
    print(
        "likelihood of superiority over the next in rank (direct games): "
        + ", ".join(f"{x['better']} > {x['worse']}: {100 * x['los']:.1f}%" for x in los)
    )
    rows = ratings.to_rows()
    with (out / "ratings.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (out / "ratings.json").write_text(
        json.dumps(
            {
                "config": _config_dict(config),
                "code_version": code_version(),
                "games": len(games),
                "ratings": rows,
                "likelihood_of_superiority": los,
            },
            indent=2,
        )
    )
    (out / "games.pdn").write_text(
        "\n".join(
            write_game(
                config.variant,
                g["actions"],
                {"Event": "stapel-tournament", "White": g["white"], "Black": g["black"]},
                fen=g["opening"],
            )
            for g in games
        )
    )
    if plot_elo_vs_step(rows, out / "elo_vs_step.png"):
        print(f"plot: {out / 'elo_vs_step.png'}")
    print(f"results: {out}")
    return 0


def _config_dict(config: TournamentConfig) -> dict:
    return {
        "players": config.players,
        "variant": config.variant.name,
        "pairs": config.pairs,
        "opening_plies": config.opening_plies,
        "gauntlet": config.gauntlet,
        "seed": config.seed,
        "openings": config.openings,
    }


# What a resumed tournament must share with the one in its folder, by option name.
_RESUME_OPTIONS = {
    "variant": "--variant",
    "openings": "--openings",
    "opening_plies": "--opening-plies",
    "seed": "--seed",
}


def _check_resume(out: pathlib.Path, config: TournamentConfig) -> None:
    """Refuse to mix games of a different tournament into an existing folder (or a file's path for one)."""
    check_out_folder(out)
    saved = out / "tournament.json"
    mine = _config_dict(config)
    if saved.is_file():
        theirs = json.loads(saved.read_text())
        # Written before the opening suite existed (4491ae9): those tournaments played random openings.
        theirs.setdefault("openings", "random")
        random = "random" in (mine["openings"], theirs["openings"])  # the suite ignores --opening-plies
        keys = [k for k in _RESUME_OPTIONS if k != "opening_plies" or random]
        differ = [k for k in keys if theirs.get(k) != mine[k]]
        if differ:
            options = ", ".join(f"{_RESUME_OPTIONS[k]} {theirs.get(k)}, not {mine[k]}" for k in differ)
            raise ValueError(
                f"{out} holds another tournament ({options}): rerun with its options to resume it, or use another --out"
            )
        foreign = foreign_games(config, load_jsonl(out / "games.jsonl"))
        if foreign:
            raise ValueError(
                f"{out} holds {len(foreign)} games of this tournament's pairings ({foreign[0]['white']} vs "
                f"{foreign[0]['black']}, ...) from openings it does not play: they come from other --pairs or "
                "players, or from a version of the code with other random openings; use another --out"
            )
    try:
        out.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(mine, indent=2))
    except OSError as error:  # before any game is played
        raise ValueError(f"--out {str(out)!r}: {error.strerror or error}") from None


if __name__ == "__main__":
    sys.exit(main())
