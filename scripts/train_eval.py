"""Train the classical searcher's learned evaluation (``stapel_rl.classical.nnue``) from engine games.

The procedure, end to end:

1. Play ``--games`` games of the classical searcher against itself (the packaged hand-written
   evaluation), as ``scripts/fit_classical.py`` does: random openings of 2 to
   ``--opening-plies`` full moves, a node budget of ``--nodes`` per search jittered by
   ``--jitter``, a random move with probability ``--epsilon``. Every quiet position after the
   opening is kept with the game's result (side to move's view: 1 win, 0.5 draw or truncation,
   0 loss) and the search's value of it where it was searched.
2. Label each position ``(1 - --value-mix) * result + --value-mix * sigmoid(k * value)``, ``k``
   being the logistic scale that fits the hand-written evaluation to the results best (without
   a search value: the result alone).
3. Split by game (every ``--holdout``-th game held out for the report, the game after each
   for validation) and train the network (accumulator width ``--width``, ``--hidden`` hidden
   units) with Adam on the binary cross-entropy for at most ``--epochs`` epochs, keeping the
   epoch whose log-loss against the validation games' results is lowest (stopping after
   ``--patience`` epochs without a better one): positions of one game are alike, and the
   network learns the training games' results by heart within a few epochs. The network's
   output is added to ``k`` times the hand-written
   evaluation (a skip connection: it learns a correction, and the search adds the two).
4. Report held-out log-loss against the results: a constant, the hand-written evaluation
   (``sigmoid(k * eval)``) and the network as the search computes it (quantised accumulator);
   write the ``.npz`` atomically with the procedure, data, losses, seed and commit in its
   metadata. The output unit is centi-men through ``1 / k``, so search windows and mate
   bounds mean the same with either evaluation.

Then play it against the hand-written evaluation at equal time::

    stapel-match classical:time=0.1:eval=runs/nnue_I/nnue_I.npz classical:time=0.1 --time 0.1 --games 200

Usage (``--data`` keeps the games' positions, so a second run with other training settings
skips playing them)::

    python scripts/train_eval.py --variant I --games 3000 --nodes 2000 --seed 1 \
        --data runs/nnue_I/positions.npz --out runs/nnue_I/nnue_I.npz
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np
import torch
from fit_classical import git_commit

from stapel_rl.classical import Searcher, nnue
from stapel_rl.classical.evaluation import load_weights
from stapel_rl.classical.selfplay import best_scale, collect, labels, log_loss
from stapel_rl.classical.trainer import FitSettings, Model, corrections, fit, to_net
from stapel_rl.cli.options import check_counts
from stapel_rl.env.variants import get_variant
from stapel_rl.records import save_npz

__all__ = ["Model", "main"]  # Model: the trained network, re-exported for the tests that load this script

#: The arguments that made the games, kept with their positions in a ``--data`` file.
GAME_SETTINGS = ("variant", "games", "nodes", "opening_plies", "epsilon", "jitter", "seed")


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", default="I")
    parser.add_argument("--games", type=int, default=600)
    parser.add_argument("--nodes", type=int, default=2000, help="node budget of each search in the games")
    parser.add_argument("--opening-plies", type=int, default=6)
    parser.add_argument("--epsilon", type=float, default=0.05, help="share of random moves")
    parser.add_argument("--jitter", type=float, default=0.3, help="node budgets drawn from [1 - j, 1 + j] * nodes")
    parser.add_argument("--value-mix", type=float, default=0.8, help="label weight of the search's value")
    parser.add_argument("--width", type=int, default=32, help="accumulator width")
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=30, help="at most this many epochs")
    parser.add_argument("--patience", type=int, default=3, help="epochs without a better validation loss")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--holdout", type=int, default=10, help="every N-th game is held out")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", required=True, help="the .npz to write")
    parser.add_argument("--data", default=None, help="positions file: read if it exists, else written after playing")
    args = parser.parse_args(argv)
    try:
        check_counts(args, "games", "nodes", "width", "hidden", "epochs", "batch_size")
    except ValueError as error:
        parser.error(str(error))
    if not args.out.endswith(".npz"):
        parser.error("--out must end in .npz (the classical agent tells networks from weights files by it)")
    torch.set_num_threads(1)
    start = time.perf_counter()

    if args.data and pathlib.Path(args.data).is_file():
        with np.load(args.data) as saved:
            data = {k: saved[k] for k in saved.files}
        print(f"positions read from {args.data}", file=sys.stderr)
        for name in GAME_SETTINGS:  # how those games were played, not this run's arguments
            setattr(args, name, type(getattr(args, name))(data[name]))
    else:
        data = collect(
            get_variant(args.variant),
            Searcher(get_variant(args.variant), tt_bits=18),
            args.games,
            args.seed,
            args.nodes,
            args.opening_plies,
            args.epsilon,
            args.jitter,
        )
        data.update({name: np.array(getattr(args, name)) for name in GAME_SETTINGS})
        if args.data:
            pathlib.Path(args.data).parent.mkdir(parents=True, exist_ok=True)
            save_npz(args.data, data)
    weights = load_weights(args.variant)
    held, valid = data["game"] % args.holdout == 0, data["game"] % args.holdout == 1
    train_rows, valid_rows, test_rows = np.flatnonzero(~held & ~valid), np.flatnonzero(valid), np.flatnonzero(held)
    x = data["features"].astype(np.float64)
    k = best_scale(weights.astype(np.float64), x[train_rows], data["result"][train_rows])
    searched = np.isfinite(data["value"])
    target = labels(data["result"], data["value"], k, args.value_mix)
    print(
        f"{len(data['result']):,} positions of {args.games} games ({searched.mean():.0%} searched), "
        f"{test_rows.size:,} held out; hand-written evaluation's scale k = {k:.5f} per centi-man",
        file=sys.stderr,
    )

    base = k * (x @ weights)  # the hand-written evaluation as a logit: the skip connection
    settings = FitSettings(args.width, args.hidden, args.epochs, args.patience, args.batch_size, args.lr, args.seed)
    trained = fit(data, base, target, train_rows, valid_rows, settings)
    epoch, valid_loss = trained.epoch, trained.valid_loss
    net = to_net(trained.model, 1.0 / k, weights, {})
    y = data["result"][test_rows]
    # As the search computes it: the hand-written evaluation plus the quantised network, as a logit.
    searched_logit = base[test_rows] + k * corrections(net, data, test_rows)
    losses = {
        "constant": log_loss(np.full(y.size, np.log(y.mean() / (1 - y.mean()))), y),
        "hand_written": log_loss(k * (x[test_rows] @ weights), y),
        "network": log_loss(searched_logit, y),
    }
    net.metadata = {
        "variant": args.variant,
        "procedure": "scripts/train_eval.py: engine self-play games, labels mixing results and search values",
        "games": args.games,
        "positions": int(len(data["result"])),
        "nodes": args.nodes,
        "epsilon": args.epsilon,
        "jitter": args.jitter,
        "value_mix": args.value_mix,
        "width": args.width,
        "hidden": args.hidden,
        "epochs": args.epochs,
        "best_epoch": epoch,
        "validation_log_loss": valid_loss,
        "seed": args.seed,  # of the games; training is seeded with it too
        "scale_k": k,
        "holdout_log_loss": losses,
        "commit": git_commit(),
        "seconds": round(time.perf_counter() - start),
    }
    path = nnue.save(net, pathlib.Path(args.out))
    print(
        "held-out log-loss against the results: "
        + ", ".join(f"{name} {value:.4f}" for name, value in losses.items())
        + f"; wrote {path} in {time.perf_counter() - start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
