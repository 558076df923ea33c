"""Refit one generation of a minimax run with other training settings: what limits the fit.

    python scripts/refit.py runs/mm_II --generation 3                        # the run's own fit, again
    python scripts/refit.py runs/mm_II --generation 3 --lr 3e-4 --epochs 30
    python scripts/refit.py runs/mm_II --generation 3 --scratch --width 64   # a new, wider network
    python scripts/refit.py runs/mm_II --generation 3 --pool runs/mm_II_zero  # and another run's positions

Trains generation G's network as the loop did (``stapel_rl.train.minimax.train``: the positions of
its ``window`` newest generations, the same labels, held-out games, seed and starting network: the
current evaluation when G was trained), with the settings given on the command line in place of the
run's. With none given it reproduces the run's ``candidate.npz``. Prints the epoch kept and the
held-out log-loss against the games' results beside the starting network's, and saves the network
(``--out``, default ``refits/gen_NNNN.npz`` in the run) for ``stapel-match classical:eval=PATH``: a
lower log-loss is a hint, a match at equal time the verdict. ``--pool RUN ...`` trains on every
generation's positions of other minimax runs of the variant too, each labelled in its own run's scale
``k``; the held-out games stay the refitted run's.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys

import numpy as np
import torch

from stapel_rl.classical import nnue
from stapel_rl.env import get_variant
from stapel_rl.records import code_version
from stapel_rl.train.config import MinimaxConfig
from stapel_rl.train.minimax import STATE_FILE, load_net, positions_of, train

#: Fit settings that may be changed (``MinimaxConfig`` fields).
SETTINGS = ("lr", "epochs", "patience", "batch_size", "window", "value_mix", "width", "hidden")


def parent(run: pathlib.Path, state: dict, g: int) -> "pathlib.Path | None":
    """The network generation ``g`` started from: the current evaluation after generation ``g - 1``
    (``None``: the hand-written evaluation, no network yet)."""
    if g == 1:
        start = run / "generations" / "gen_0000" / "net.npz"
        return start if start.is_file() else None
    current = state["history"][g - 2]["current"]
    return run / current if current else None


def pooled_positions(runs: "list[str]", variant: str) -> "list[tuple[dict[str, np.ndarray], float]]":
    """Every generation's positions of each minimax run of ``runs`` with its scale ``k``; ``ValueError`` for a
    folder that is no minimax run of ``variant`` or has no scale yet."""
    pooled = []
    for name in runs:
        other = pathlib.Path(name)
        if not (other / STATE_FILE).is_file():
            raise ValueError(f"--pool {other} has no {STATE_FILE}: not a minimax run")
        state = json.loads((other / STATE_FILE).read_text())
        if state["variant"] != variant or state["scale_k"] is None:
            raise ValueError(f"--pool {other}: a Variant {state['variant']} run with scale {state['scale_k']}")
        pooled += [(positions_of(other, g), float(state["scale_k"])) for g in range(1, state["generation"] + 1)]
    return pooled


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", help="a minimax run's folder (with loop.json)")
    parser.add_argument("--generation", type=int, required=True, help="the generation to refit")
    for name in SETTINGS:
        kind = float if name in ("lr", "value_mix") else int
        parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=None, help=f"minimax.{name}")
    parser.add_argument("--scratch", action="store_true", help="a new network (--width, --hidden), no warm start")
    parser.add_argument("--pool", nargs="+", default=[], metavar="RUN", help="other minimax runs to train on too")
    parser.add_argument("--out", default=None, help="the network file (default refits/gen_NNNN.npz in the run)")
    args = parser.parse_args(argv)
    run = pathlib.Path(args.run)
    try:
        if not (run / STATE_FILE).is_file():
            raise ValueError(f"{run} has no {STATE_FILE}: not a minimax run")
        state = json.loads((run / STATE_FILE).read_text())
        g = args.generation
        if not 1 <= g <= state["generation"]:
            raise ValueError(f"--generation must be one of the run's 1..{state['generation']}, got {g}")
        changes = {name: getattr(args, name) for name in SETTINGS if getattr(args, name) is not None}
        if not args.scratch and {"width", "hidden"} & set(changes):
            raise ValueError("--width and --hidden shape a new network: give --scratch too")
        # the settings given are checked in the loop's own ranges (minimax.NAME is --NAME here)
        m = dataclasses.replace(MinimaxConfig(**state["config"]["minimax"]), **changes)
        from_file = None if args.scratch else parent(run, state, g)
        if from_file is None and state["scale_k"] is None:
            raise ValueError("the run has no scale k yet (no generation trained): nothing to refit against")
        best = load_net(from_file, get_variant(state["variant"])) if from_file is not None else None
        pooled = pooled_positions(args.pool, state["variant"])
    except (ValueError, KeyError, TypeError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    torch.set_num_threads(m.threads)
    meta = {"variant": state["variant"], "procedure": "scripts/refit.py", "run": str(run), "refit_of": g}
    meta.update(settings=changes, scratch=args.scratch, pool=args.pool, code_version=code_version())
    weights = np.asarray(state["weights"], np.int64)
    net, _ = train(m, state, best, weights, state["seed"], g, run, meta, pooled)
    out = pathlib.Path(args.out) if args.out else run / "refits" / f"gen_{g:04d}.npz"
    nnue.save(net, out)
    start = net.metadata["start_log_loss"]
    how = ", ".join(f"{k}={v}" for k, v in changes.items()) or "the run settings"
    how += ", from scratch" if args.scratch else ""
    how += f", {len(pooled)} generations of other runs pooled" if pooled else ""
    print(
        f"generation {g} refitted ({how}): epoch {net.metadata['best_epoch']} kept, held-out log-loss "
        f"{net.metadata['validation_log_loss']:.5f}"
        + (f" (starting network {start:.5f})" if start is not None else "")
        + f"; saved {out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
