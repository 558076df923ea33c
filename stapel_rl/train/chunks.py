"""Games played in chunks that survive a kill: each chunk's rows saved as it ends, read back by the next run.

A phase of many games (the minimax loop's generation games, ``scripts/warm_start.py``'s engine games) is
cut into tasks of a few games each. ``played`` runs the tasks whose file is missing and saves each one's
rows as it ends (``games_FIRST_COUNT.npz``, written atomically), so a kill loses only the chunks in play.
Game ``i`` plays from its own random stream in both callers, so a chunk's rows depend on its first game
and its count, not on the run that played it, and a resumed phase ends as an uninterrupted one.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Sequence

import numpy as np
from tqdm import tqdm

from stapel_rl.eval.parallel import Pool
from stapel_rl.records import save_npz

#: The rows of a chunk: field name -> array with one row per decision.
Rows = dict[str, np.ndarray]


def chunk_path(folder: pathlib.Path, first: int, count: int) -> pathlib.Path:
    """The file of the chunk of ``count`` games from game ``first`` (both in the name: a run with other
    ``jobs`` may cut other chunks, whose files are then not taken for these)."""
    return folder / f"games_{first:06d}_{count:04d}.npz"


def played(
    fn: "Callable[..., Rows]",
    tasks: "Sequence[tuple]",
    spans: "Sequence[tuple[int, int]]",
    folder: pathlib.Path,
    pool: "Pool | None",
    desc: str,
) -> "list[Rows]":
    """The rows of ``fn(*task)`` for every task, in order: read back from ``folder`` or played now.

    ``spans[i]`` is task ``i``'s (first game, games). The missing chunks run in ``pool``'s workers (in
    this process if None), each saved as it ends; a progress bar counts games with their rate and ETA,
    those read back included.
    """
    folder.mkdir(parents=True, exist_ok=True)
    paths = [chunk_path(folder, first, count) for first, count in spans]
    todo = [i for i, path in enumerate(paths) if not path.is_file()]
    total = sum(count for _, count in spans)
    done = total - sum(spans[i][1] for i in todo)
    if done:
        tqdm.write(f"{done} of {total} games read back from {folder}")
    bar = tqdm(total=total, initial=done, desc=desc, unit="game", leave=False)
    results = pool.map(fn, [tasks[i] for i in todo]) if pool else (fn(*tasks[i]) for i in todo)
    for i, rows in zip(todo, results, strict=True):
        save_npz(paths[i], rows)
        bar.update(spans[i][1])
    bar.close()
    parts = []
    for path in paths:
        with np.load(path) as part:
            parts.append({k: part[k] for k in part.files})
    return parts
