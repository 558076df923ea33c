"""Score a run's checkpoints against random and greedy, and plot the curve next to TensorBoard's.

    python scripts/eval_checkpoints.py runs/I_default/checkpoints/*.pt --variant I --games 64 --sims 16 \\
        --tb runs/I_default --out docs/training_I.png

Each checkpoint plays as ``mcts:PATH:sims=S`` at temperature 0 (deterministic
search), colours alternated. The in-training evaluation logged to
TensorBoard keeps the search's exploration noise; this one does not.
"""

from __future__ import annotations

import argparse
import csv
import pathlib
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from stapel_rl.eval.agents import make_agent  # noqa: E402
from stapel_rl.eval.arena import play_match  # noqa: E402


def iteration(path: str) -> int:
    """The training iteration in a checkpoint's name (``.../ckpt_00000042.pt``: 42)."""
    match = re.search(r"(\d+)\.pt$", path)
    if match is None:
        raise SystemExit(f"eval_checkpoints: {path} does not end in <iteration>.pt")
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--variant", default="I")
    parser.add_argument("--games", type=int, default=64)
    parser.add_argument("--sims", type=int, default=16)
    parser.add_argument("--tb", type=pathlib.Path, help="run directory whose TensorBoard eval curve to overlay")
    parser.add_argument("--out", default="docs/training.png")
    args = parser.parse_args()
    rows = []
    for path in sorted(args.checkpoints, key=iteration):
        agent = make_agent(f"mcts:{path}:sims={args.sims}")
        row: "dict[str, float]" = {"iteration": iteration(path)}
        for name in ("random", "greedy"):
            result = play_match(agent, make_agent(name), args.variant, args.games, np.random.default_rng(0))
            row[name] = result.score
        rows.append(row)
        print(
            f"iteration {row['iteration']:>4}: vs random {100 * row['random']:.1f}%, "
            f"vs greedy {100 * row['greedy']:.1f}%",
            flush=True,
        )
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.with_suffix(".csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["iteration", "random", "greedy"])
        writer.writeheader()
        writer.writerows(rows)

    fig, ax = plt.subplots(figsize=(6.5, 4))
    its = [r["iteration"] for r in rows]
    for name, colour in (("random", "tab:blue"), ("greedy", "tab:orange")):
        ax.plot(
            its,
            [100 * r[name] for r in rows],
            "o-",
            color=colour,
            label=f"vs {name}: sims={args.sims}, no noise, {args.games} games",
        )
    if args.tb:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        events = EventAccumulator(str(args.tb / "tb"), size_guidance={"scalars": 0})
        events.Reload()
        for name, colour in (("random", "tab:blue"), ("greedy", "tab:orange")):
            tag = f"eval/score_vs_{name}"
            if tag in events.Tags()["scalars"]:
                points = events.Scalars(tag)
                ax.plot(
                    [e.step for e in points],
                    [100 * e.value for e in points],
                    ":",
                    color=colour,
                    alpha=0.7,
                    label=f"vs {name}: in-training eval (TensorBoard, with Gumbel noise)",
                )
    ax.axhline(95, color="tab:blue", lw=0.6, ls="--")
    ax.axhline(75, color="tab:orange", lw=0.6, ls="--")
    ax.set_xlabel("training iteration (4096 self-play positions each)")
    ax.set_ylabel("score (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"Variant {args.variant}: MCTS agent during one hour of training")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out} and {out.with_suffix('.csv')}")


if __name__ == "__main__":
    main()
