"""Ablations: train one config change per row for the same wall-clock budget, score each against alphabeta:2.

    python scripts/ablate.py --variant I --minutes 15 --games 200 --out runs/ablate_I
    python scripts/ablate.py --rows old_default new_default puct --minutes 15      # a subset

Each row is ``stapel-train`` with the row's overrides (``ROWS``), run to the
same budget in ``<out>/<row>/`` (a killed ablation resumes: finished rows are
skipped, a half-trained row continues from its checkpoint), then its final
network plays ``--games`` games against ``alphabeta:2`` with ``stapel-match``
(colour-swapped pairs from random openings, 64 simulations, no noise). The
table, with positions generated and the score's 95% interval, is written to
``<out>/ablations.md`` (and ``ablations.json``) after every row, so it can be
read while the rest runs. Rows run one after another: each needs both cores.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
import sys

from stapel_rl.models.checkpoint import atomic_write_bytes, list_checkpoints, load

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
    "no_workers": ("self-play in the training process instead of 2 workers", ["train.selfplay_workers=0"]),
    "model_default": ("6x64 network instead of 4x32", ["model=default"]),
    "sims_32": ("32 simulations instead of 16", ["mcts.num_simulations=32"]),
    "puct_64": ("PUCT with 64 simulations instead of Gumbel 16", ["mcts=puct", "mcts.num_simulations=64"]),
    "replay_30k": ("replay window 30k positions instead of 60k", ["train.replay_capacity=30000"]),
    "replay_120k": ("replay window 120k positions", ["train.replay_capacity=120000"]),
    "sample_ratio_4": ("4 training samples per new position instead of 2", ["train.sample_ratio=4"]),
    "lr_constant": ("constant learning rate instead of cosine", ["train.lr_schedule=constant"]),
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


def score(checkpoint: pathlib.Path, variant: str, games: int, sims: int, opponent: str) -> dict:
    """``stapel-match`` of the checkpoint against ``opponent``; wins, draws, losses, score and interval."""
    cmd = [
        sys.executable,
        "-m",
        "stapel_rl.cli.match",
        f"mcts:{checkpoint}:sims={sims}",
        opponent,
        "--games",
        str(games),
        "--variant",
        variant,
    ]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    found = _SCORE.search(done.stdout)
    if not found:
        raise RuntimeError(f"unexpected stapel-match output: {done.stdout!r}")
    w, d, losses, n = (int(x) for x in found.groups()[:4])
    low, high = float(found.group(6)), float(found.group(7))
    return {
        "wins": w,
        "draws": d,
        "losses": losses,
        "games": n,
        "score": float(found.group(5)),
        "ci": [low, high],
        "command": " ".join(["stapel-match", *cmd[3:]]),
    }


def table(results: dict, variant: str, minutes: float, opponent: str) -> str:
    lines = [
        f"Variant {variant}, {minutes:g} minutes of `stapel-train` per row on 2 cores, final network "
        f"with 64 simulations against `{opponent}` (colour-swapped pairs from random openings)",
        "",
        "| row | change against the old default | positions | iterations | score | 95% CI |",
        "|---|---|---|---|---|---|",
    ]
    for row, r in results.items():
        lines.append(
            f"| {row} | {ROWS[row][0]} | {r['positions']:,} | {r['iterations']} | {r['score']:.1f}% "
            f"({r['wins']}-{r['draws']}-{r['losses']}) | [{r['ci'][0]:.1f}, {r['ci'][1]:.1f}] |"
        )
    return "\n".join(lines) + "\n"


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", default="I")
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--minutes", type=float, default=15.0, help="wall-clock training budget of every row")
    parser.add_argument("--games", type=int, default=200, help="games against the opponent")
    parser.add_argument("--sims", type=int, default=64)
    parser.add_argument("--opponent", default="alphabeta:2")
    parser.add_argument("--out", default=None, help="folder of the runs and the table (default runs/ablate_<variant>)")
    parser.add_argument("--extra", nargs="*", default=[], help="overrides added to every row (e.g. train=tiny)")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out or f"runs/ablate_{args.variant}")
    out.mkdir(parents=True, exist_ok=True)
    record = out / "ablations.json"
    results = json.loads(record.read_text()) if record.is_file() else {}
    for row in args.rows:
        if row in results:
            print(f"[{row}] done before: {results[row]['score']:.1f}%")
            continue
        final = train(row, out, args.variant, args.minutes, args.extra)
        counters = load(final)["counters"]
        results[row] = {
            **score(final, args.variant, args.games, args.sims, args.opponent),
            "positions": int(counters["positions"]),
            "iterations": int(counters["iteration"]),
            "seconds": float(counters["seconds"]),
            "checkpoint": str(final),
        }
        print(
            f"[{row}] {results[row]['score']:.1f}% {results[row]['ci']} after {results[row]['positions']:,} positions",
            flush=True,
        )
        atomic_write_bytes(record, json.dumps(results, indent=2).encode())
        atomic_write_bytes(out / "ablations.md", table(results, args.variant, args.minutes, args.opponent).encode())
    print(table(results, args.variant, args.minutes, args.opponent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
