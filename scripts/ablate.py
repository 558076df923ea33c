"""Ablations: train one config change per row for the same wall-clock budget, then match each row's network.

    python scripts/ablate.py --variant I --minutes 15 --games 200 --out runs/ablate_I
    python scripts/ablate.py --rows old_default new_default puct --minutes 15      # a subset
    python scripts/ablate.py --rows default compact --opponent row:default --time 0.1 --jobs 2  # head to head

Each row is ``stapel-train`` with the row's overrides (``ROWS``), run to the
same budget in ``<out>/<row>/`` (a killed ablation resumes: finished rows are
skipped, a half-trained row continues from its checkpoint), then its final
network plays ``--games`` games against ``--opponent`` with ``stapel-match``
(colour-swapped pairs from the variant's opening suite, pentanomial 95%
interval): with ``--sims`` simulations a move and no noise, or with ``--time``
seconds a move for both sides (equal time: a faster network searches more).
The opponent is an agent spec (default ``alphabeta:2``) or ``row:NAME``, the
final network of another row (trained first, searching as the rows do). The
table, with positions generated, is written to ``<out>/ablations.md`` (and
``ablations.json``) after every row, so it can be read while the rest runs.
Rows train one after another: each needs both cores.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
import sys

from stapel_rl.cli.options import check_counts, check_out_folder
from stapel_rl.models.checkpoint import list_checkpoints, load
from stapel_rl.records import atomic_write_bytes

#: name -> (what changes against the old default, stapel-train overrides)
ROWS = {
    "default": ("the default config, unchanged", []),
    "old_default": (
        "the previous default: 10x10 grid network, fp32 self-play in the training process",
        [
            "model.layout=grid",
            "train.inference_precision=fp32",
            "train.selfplay_workers=0",
            "mcts.skip_forced=false",
            "train.train_precision=fp32",
        ],
    ),
    "new_default": (
        "compact 10x5 network, bf16 self-play in 2 worker processes",
        ["model.layout=compact", "mcts.skip_forced=false", "train.train_precision=fp32"],
    ),
    "grid_bf16": (
        "10x10 grid network, bf16 self-play in 2 worker processes (an earlier default: forced actions "
        "searched, fp32 training)",
        ["mcts.skip_forced=false", "train.train_precision=fp32"],
    ),
    "skip_forced": ("grid_bf16, forced actions played unsearched and unrecorded", ["train.train_precision=fp32"]),
    "skip_forced_bf16_train": ("skip_forced with bf16 training", ["train.train_precision=bf16"]),
    "policy_conv": (
        "skip_forced_bf16_train with the convolutional policy head (a logit per square and direction)",
        ["train.train_precision=bf16", "model.policy_head=conv"],
    ),
    "compact": ("the default with the compact 10x5 network (faster without native bf16)", ["model.layout=compact"]),
    "no_workers": ("self-play in the training process instead of 2 workers", ["train.selfplay_workers=0"]),
    "model_default": ("6x64 network instead of 4x32", ["model=default"]),
    "sims_32": ("32 simulations instead of 16", ["mcts.num_simulations=32"]),
    "puct_64": ("PUCT with 64 simulations instead of Gumbel 16", ["mcts=puct", "mcts.num_simulations=64"]),
    "replay_30k": ("replay window 30k positions instead of 60k", ["train.replay_capacity=30000"]),
    "replay_120k": ("replay window 120k positions", ["train.replay_capacity=120000"]),
    "replay_growing": (
        "KataGo's growing replay window: from 60k positions, growth 0.4, at most 1M",
        ["train.replay_growth=0.4"],
    ),
    "sample_ratio_4": ("4 training samples per new position instead of 2", ["train.sample_ratio=4"]),
    "lr_constant": ("constant learning rate instead of cosine", ["train.lr_schedule=constant"]),
    "lr_hours": (
        "the cosine over the run's time budget (train.hours) instead of train.total_steps gradient steps",
        ["train.lr_schedule=cosine_hours"],
    ),
    "lr_steps": (
        "the cosine over train.total_steps gradient steps (28,000) instead of the run's time budget",
        ["train.lr_schedule=cosine"],
    ),
    "value_mix_05": (
        "value target: half game result, half the search's value (Gumbel: its improved policy's expected Q)",
        ["train.value_mix=0.5"],
    ),
    "playout_cap": (
        "playout-cap randomisation: 25% full searches, the rest 4 simulations",
        ["mcts.fast_simulations=4", "mcts.full_search_prob=0.25"],
    ),
    "points_aux": (
        "auxiliary target: a head regressing the final back-row points difference (Variant II's "
        "score; on by default in Variant II), loss weight 0.25",
        ["model.points_head=true"],
    ),
    "move_planes": (
        "input planes of the moves both sides have: legal move sources, stacks either side could leap, "
        "the opponent's movable stacks",
        ["model.inputs=moves"],
    ),
    "value_pool": ("value head over each channel's mean and maximum (global pooling)", ["model.value_head=pool"]),
    "games_256": ("256 self-play games at once instead of 128", ["train.num_games=256"]),
    "games_512": ("512 self-play games at once instead of 128", ["train.num_games=512"]),
    "bf16_train": (
        "gradient steps under bf16 autocast (the learner bounds the iteration rate)",
        ["train.train_precision=bf16"],
    ),
    "sims32_bf16_train": (
        "32 simulations (the workers' idle time) and bf16 training",
        ["mcts.num_simulations=32", "train.train_precision=bf16"],
    ),
}
_SCORE = re.compile(r"(\d+)-(\d+)-(\d+) \(W-D-L\) of (\d+), score ([\d.]+)% \[([\d.]+)%, ([\d.]+)%\]")
#: The fields of a row's record that describe its training run (beside ``matches``).
TRAINING_FIELDS = ("positions", "iterations", "seconds", "checkpoint")
_PAIRS = re.compile(r"pairs 0/0\.5/1/1\.5/2: (\d+) (\d+) (\d+) (\d+) (\d+)")


def train(row: str, out: pathlib.Path, variant: str, minutes: float, extra: "list[str]") -> pathlib.Path:
    """Train (or finish training) one row; returns its final checkpoint."""
    run = out / row
    cmd = [
        sys.executable,
        "-m",
        "stapel_rl.train",
        f"variant={variant}",
        f"hydra.run.dir={run}",
        f"train.hours={minutes / 60}",
        *ROWS[row][1],
        *extra,
    ]
    print(f"[{row}] " + " ".join(cmd[2:]), flush=True)
    subprocess.run(cmd, check=True)
    return list_checkpoints(run / "checkpoints")[-1]


def network_spec(checkpoint: pathlib.Path, sims: int, seconds: "float | None") -> str:
    """A row's final network as a ``stapel-match`` player: timed (``stapel-match --time``) or ``sims`` a move."""
    return f"mcts:{checkpoint}" if seconds is not None else f"mcts:{checkpoint}:sims={sims}"


def score(agent: str, variant: str, games: int, opponent: str, seconds: "float | None" = None, jobs: int = 1) -> dict:
    """``stapel-match`` of ``agent`` against ``opponent``: wins, draws, losses, score, interval, pentanomial pairs."""
    cmd = [sys.executable, "-m", "stapel_rl.cli.match", agent, opponent, "--games", str(games), "--variant", variant]
    if seconds is not None:
        cmd += ["--time", f"{seconds:g}"]
    if jobs > 1:
        cmd += ["--jobs", str(jobs)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    found = _SCORE.search(done.stdout)
    if not found:
        raise RuntimeError(f"unexpected stapel-match output: {done.stdout!r}")
    w, d, losses, n = (int(x) for x in found.groups()[:4])
    low, high = float(found.group(6)), float(found.group(7))
    pairs = _PAIRS.search(done.stdout)
    return {
        "wins": w,
        "draws": d,
        "losses": losses,
        "games": n,
        "score": float(found.group(5)),
        "ci": [low, high],
        "pairs": [int(x) for x in pairs.groups()] if pairs else None,
        "command": " ".join(["stapel-match", *cmd[3:]]),
    }


def match_label(opponent: str, seconds: "float | None") -> str:
    """The key of a match in a row's record: the opponent, and the time a move if the match was timed."""
    return opponent if seconds is None else f"{opponent} at {seconds:g} s"


def table(results: dict, variant: str, minutes: float, label: str, search: str, reference: "str | None") -> str:
    """The rows trained so far, each with its match ``label`` (the opponent row ``reference`` marked as such)."""
    lines = [
        f"Variant {variant}, {minutes:g} minutes of `stapel-train` per row on 2 cores, final network {search} "
        f"against `{label}` (colour-swapped pairs from the opening suite, pentanomial 95% interval)",
        "",
        "| row | change against the old default | positions | iterations | score | pairs 0/0.5/1/1.5/2 | 95% CI |",
        "|---|---|---|---|---|---|---|",
    ]
    for row, r in results.items():
        first = f"| {row} | {ROWS[row][0]} | {r['positions']:,} | {r['iterations']} |"
        if row == reference:
            lines.append(f"{first} opponent | | |")
        elif (m := r["matches"].get(label)) is not None:
            pairs = " ".join(str(x) for x in m["pairs"]) if m.get("pairs") else ""
            lines.append(
                f"{first} {m['score']:.1f}% ({m['wins']}-{m['draws']}-{m['losses']}) | {pairs} | "
                f"[{m['ci'][0]:.1f}, {m['ci'][1]:.1f}] |"
            )
    return "\n".join(lines) + "\n"


def trained(row: str, out: pathlib.Path, args: argparse.Namespace, results: dict) -> dict:
    """The row's record, training the row first if ``results`` has none: training counters and ``matches``."""
    if row in results:
        return results[row]
    final = train(row, out, args.variant, args.minutes, args.extra)
    counters = load(final)["counters"]
    return {
        "positions": int(counters["positions"]),
        "iterations": int(counters["iteration"]),
        "seconds": float(counters["seconds"]),
        "checkpoint": str(final),
        "matches": {},
    }


def upgrade(record: dict) -> dict:
    """A row's record as written before rows kept several matches (one match against ``alphabeta:2``)."""
    if "matches" in record:
        return record
    training = {k: record[k] for k in TRAINING_FIELDS}
    return {**training, "matches": {"alphabeta:2": {k: v for k, v in record.items() if k not in training}}}


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", default="I")
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--minutes", type=float, default=15.0, help="wall-clock training budget of every row")
    parser.add_argument("--games", type=int, default=200, help="games against the opponent")
    parser.add_argument("--sims", type=int, default=64, help="simulations a move (without --time)")
    parser.add_argument("--time", type=float, default=None, help="seconds a move for both sides (equal time)")
    parser.add_argument("--jobs", type=int, default=1, help="processes of each match (2 for a timed one on 2 cores)")
    parser.add_argument("--opponent", default="alphabeta:2", help="agent spec, or row:NAME (that row's network)")
    parser.add_argument("--out", default=None, help="folder of the runs and the table (default runs/ablate_<variant>)")
    parser.add_argument("--extra", nargs="*", default=[], help="overrides added to every row (e.g. train=tiny)")
    args = parser.parse_args(argv)
    reference = args.opponent.removeprefix("row:") if args.opponent.startswith("row:") else None
    if reference is not None and reference not in ROWS:
        print(f"error: unknown row {reference!r} in --opponent; rows: {', '.join(ROWS)}", file=sys.stderr)
        return 2
    if args.time is not None and args.time <= 0:
        print(f"error: --time must be positive, got {args.time}", file=sys.stderr)
        return 2
    if not 0 < args.minutes < float("inf"):  # 0 would be train.hours=0: no limit at all
        print(f"error: --minutes must be a positive number, got {args.minutes}", file=sys.stderr)
        return 2
    out = pathlib.Path(args.out or f"runs/ablate_{args.variant}")
    try:
        check_counts(args, "games", "sims", "jobs")
        check_out_folder(out)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    record = out / "ablations.json"
    results = {row: upgrade(r) for row, r in json.loads(record.read_text()).items()} if record.is_file() else {}
    label = match_label(args.opponent, args.time)
    search = f"at {args.time:g} s a move, both sides" if args.time is not None else f"with {args.sims} simulations"

    def save() -> None:
        atomic_write_bytes(record, json.dumps(results, indent=2).encode())
        text = table(results, args.variant, args.minutes, label, search, reference)
        atomic_write_bytes(out / "ablations.md", text.encode())

    opponent = args.opponent
    if reference is not None:  # the opponent row trains first, and plays as the rows do
        results[reference] = trained(reference, out, args, results)
        opponent = network_spec(pathlib.Path(results[reference]["checkpoint"]), args.sims, args.time)
        save()
    for row in (r for r in args.rows if r != reference):
        if (done := results.get(row, {}).get("matches", {}).get(label)) is not None:
            print(f"[{row}] done before: {done['score']:.1f}%")
            continue
        results[row] = trained(row, out, args, results)
        agent = network_spec(pathlib.Path(results[row]["checkpoint"]), args.sims, args.time)
        match = score(agent, args.variant, args.games, opponent, args.time, args.jobs)
        results[row]["matches"][label] = match
        print(f"[{row}] {match['score']:.1f}% {match['ci']} after {results[row]['positions']:,} positions", flush=True)
        save()
    print(table(results, args.variant, args.minutes, label, search, reference))
    return 0


if __name__ == "__main__":
    sys.exit(main())
