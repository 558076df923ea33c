"""Where evaluations misjudge positions: each one's winning chances against the games' results, by kind of position.

    python scripts/eval_errors.py runs/mm_II/generations/gen_0002/positions.npz --variant II \
        --eval hand --eval nnue --eval runs/mm_II/best.npz

Reads engine self-play positions (a minimax run's ``positions.npz``, ``stapel_rl.classical.selfplay``:
each quiet position with its hand-written features, network inputs, the game's result and the search's
score) and reads every evaluation as winning chances of the side to move: the hand-written one
(``hand``) through the logistic scale that fits it best to these results, a network (``nnue``: the
packaged one, or a file) through its own scale, as the search reads it. Prints, per evaluation, the
log-loss against the results (lower is better) over all positions and per kind of position, and the
mean residual (result minus predicted chance, in points of percent: positive where the evaluation is too
pessimistic for the side to move). Kinds: the game's phase (stacks on the board), and the sign of the
hand-written terms where they differ most between the variants (``points``: men on the scoring row;
``captives``; ``rescue``; ``mobility``). ``--markdown`` prints the tables for docs/results.md.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np
import torch
from scipy.special import expit, log_expit

from stapel_rl.classical import nnue
from stapel_rl.classical.evaluation import FEATURES, load_weights
from stapel_rl.classical.selfplay import best_scale
from stapel_rl.classical.trainer import from_net

#: The hand-written terms whose sign splits the positions.
TERMS = ("points", "captives", "rescue", "mobility")


def chances(spec: str, variant: str, data: "dict[str, np.ndarray]") -> np.ndarray:
    """The side to move's winning chances in each position by the evaluation ``spec``."""
    x = data["features"].astype(np.float64)
    if spec == "hand":
        weights = load_weights(variant).astype(np.float64)
        return expit(best_scale(weights, x, data["result"]) * (x @ weights))
    net = nnue.load_packaged(variant) if spec == "nnue" else nnue.load(spec)
    if net.metadata.get("variant") not in (None, variant):
        raise ValueError(f"{spec} is an evaluation of Variant {net.metadata['variant']}, not {variant}")
    k = 1.0 / float(net.head[1])
    model = from_net(net)
    base = torch.from_numpy(k * (x @ net.weights.astype(np.float64))).float()
    with torch.no_grad():
        logits = [
            model(*(torch.from_numpy(data[key][rows]) for key in ("inputs", "extra", "side")), base[rows]).numpy()
            for rows in np.array_split(np.arange(len(x)), max(1, len(x) // 8192))
        ]
    return expit(np.concatenate(logits).astype(np.float64))


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    z = np.log(p.clip(1e-9, 1 - 1e-9)) - np.log1p(-p.clip(1e-9, 1 - 1e-9))
    return float(-np.mean(y * log_expit(z) + (1 - y) * log_expit(-z)))


def kinds(data: "dict[str, np.ndarray]") -> "dict[str, np.ndarray]":
    """Boolean masks of the kinds of position."""
    stacks = (data["inputs"][:, 0] < nnue.NUM_INPUTS).sum(axis=1)
    low, high = (int(q) for q in np.quantile(stacks, [1 / 3, 2 / 3]))
    high = max(high, low + 1)
    out = {
        f"opening (>= {high} stacks)": stacks >= high,
        f"middlegame ({low + 1}-{high - 1} stacks)": (stacks > low) & (stacks < high),
        f"ending (<= {low} stacks)": stacks <= low,
    }
    for term in TERMS:
        column = data["features"][:, FEATURES.index(term)]
        out[f"{term} > 0"] = column > 0
        out[f"{term} < 0"] = column < 0
    return out


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("positions", help="a positions.npz of engine self-play (minimax run, scripts/train_eval.py)")
    parser.add_argument("--variant", default="I", choices=("I", "II"))
    parser.add_argument("--eval", action="append", default=None, help="hand, nnue or a network .npz (repeatable)")
    parser.add_argument("--markdown", action="store_true", help="print markdown tables")
    args = parser.parse_args(argv)
    specs = args.eval or ["hand", "nnue"]
    try:
        with np.load(pathlib.Path(args.positions)) as saved:
            data = {key: saved[key] for key in ("inputs", "extra", "side", "features", "result")}
        predicted = {spec: chances(spec, args.variant, data) for spec in specs}
    except (OSError, KeyError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    y = data["result"].astype(np.float64)
    rows = [("all positions", np.ones(len(y), bool)), *kinds(data).items()]
    names = [s if s in ("hand", "nnue") else "/".join(pathlib.Path(s).parts[-2:]) for s in specs]
    header = ["positions", "share", "result"] + [f"{name}: loss / residual" for name in names]
    lines = []
    for name, mask in rows:
        if not mask.any():
            continue
        cells = [name, str(int(mask.sum())), f"{100 * mask.mean():.0f}%", f"{100 * y[mask].mean():.1f}%"]
        for spec in specs:
            p = predicted[spec][mask]
            cells.append(f"{log_loss(p, y[mask]):.4f} / {100 * np.mean(y[mask] - p):+.1f}")
        lines.append(cells)
    print(f"Variant {args.variant}: {len(y)} positions of {args.positions}; log-loss against the results and the")
    print("mean residual (result - predicted chance, points of percent) of each evaluation")
    if args.markdown:
        print("| " + " | ".join(["kind", *header]) + " |")
        print("|" + "---|" * (len(header) + 1))
        for cells in lines:
            print("| " + " | ".join(cells) + " |")
    else:
        widths = [max(len(str(c)) for c in column) for column in zip(["kind", *header], *lines, strict=True)]
        for cells in [["kind", *header], *lines]:
            print("  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
