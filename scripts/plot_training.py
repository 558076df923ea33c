"""Plot a training run's TensorBoard curves (win rates against random and greedy, losses) to a PNG.

python scripts/plot_training.py runs/I_default runs/II_default --out docs/training_win_rates.png
"""

from __future__ import annotations

import argparse
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


def scalars(run: pathlib.Path, tag: str) -> "tuple[list[int], list[float], list[float]]":
    """Steps, values and wall-clock minutes since the first event of ``tag`` in ``run``/tb."""
    events = EventAccumulator(str(run / "tb"), size_guidance={"scalars": 0})
    events.Reload()
    if tag not in events.Tags()["scalars"]:
        return [], [], []
    rows = events.Scalars(tag)
    t0 = min(e.wall_time for e in events.Scalars(events.Tags()["scalars"][0]))
    return [e.step for e in rows], [e.value for e in rows], [(e.wall_time - t0) / 60 for e in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=pathlib.Path, help="run directories (with a tb/ folder)")
    parser.add_argument("--out", default="docs/training_win_rates.png")
    args = parser.parse_args()
    fig, axes = plt.subplots(1, len(args.runs), figsize=(5.5 * len(args.runs), 4), squeeze=False)
    for ax, run in zip(axes[0], args.runs, strict=True):
        for tag, label in (("eval/score_vs_random", "vs random"), ("eval/score_vs_greedy", "vs greedy")):
            _, values, minutes = scalars(run, tag)
            ax.plot(minutes, [100 * v for v in values], marker="o", ms=3, label=label)
        ax.set_title(run.name)
        ax.set_xlabel("wall-clock minutes of training")
        ax.set_ylabel("score of the MCTS agent (%)")
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    fig.tight_layout()
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
