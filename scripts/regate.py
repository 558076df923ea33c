"""Decide a minimax run's gates again, with other gate settings, without playing its games again.

    python scripts/regate.py runs/mm_I
    stapel-train loop=minimax ... minimax.match_time=0.1 minimax.gate_max_pairs=200 hydra.run.dir=runs/mm_I

Rewinds the run of ``stapel-train loop=minimax`` in RUN to generation 0: ``loop.json`` back to its
starting evaluation with an empty history (the history before is kept as ``loop_before_regate.json``),
each generation's ``gate.json`` and ``net.npz`` and the run's ``best.npz`` removed, and the gate and
panel seconds dropped from each ``seconds.json``. The games (``positions.npz``) and the trained
networks (``candidate.npz``) stay, so the loop run again on RUN, with the run's command and the new
gate settings, reads them back and plays only the gates and panels.

The games and networks of each generation were made with the evaluation its predecessors' gates had
promoted. Where a gate now decides otherwise, the generations after it are not what a run with the
new settings would have played and trained: compare the new history with the one kept.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from stapel_rl.records import atomic_write_bytes
from stapel_rl.train.minimax import SECONDS_FILE, STATE_FILE, write_json

KEPT_PHASES = ("games", "fit")  # the phases whose work is read back on the next run


def regate(run: pathlib.Path) -> int:
    """Rewind the run in ``run`` as the module says; returns the number of generations rewound."""
    state_path = run / STATE_FILE
    if not state_path.is_file():
        raise ValueError(f"{run} holds no {STATE_FILE}: not a run of stapel-train loop=minimax")
    text = state_path.read_text()
    state = json.loads(text)
    start = run / "generations" / "gen_0000" / "net.npz"  # none: the hand-written evaluation is generation 0
    atomic_write_bytes(run / "loop_before_regate.json", text.encode())
    for gdir in sorted(g for g in (run / "generations").glob("gen_*") if g.name != "gen_0000"):
        for name in ("gate.json", "net.npz"):
            (gdir / name).unlink(missing_ok=True)
        seconds = gdir / SECONDS_FILE
        if seconds.is_file():
            kept = {k: v for k, v in json.loads(seconds.read_text()).items() if k in KEPT_PHASES}
            write_json(seconds, kept)
    (run / "best.npz").unlink(missing_ok=True)
    done = int(state["generation"])
    state.update(generation=0, best=str(start.relative_to(run)) if start.is_file() else None, history=[])
    write_json(state_path, state)
    return done


def main(argv: "list[str] | None" = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=pathlib.Path, help="the directory of a minimax run (its loop.json)")
    args = parser.parse_args(argv)
    try:
        done = regate(args.run)
    except ValueError as error:
        sys.exit(f"regate: {error}")
    print(f"{args.run}: {done} generation(s) rewound; run the loop on it again to replay their gates")


if __name__ == "__main__":
    main()
