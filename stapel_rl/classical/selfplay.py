"""Engine self-play for fitting evaluations: games of the compiled searcher with varied openings and some
randomness, their quiet positions with the search's score and the game's result, and the labels mixing the two.

``scripts/fit_classical.py`` (weights), ``scripts/train_eval.py`` (a network, once) and the minimax
generation loop of ``stapel-train`` (``stapel_rl.train.minimax``) all play their games here.

A game opens with 2 to ``opening_plies`` uniformly random full moves; afterwards every search gets a
node budget drawn uniformly from ``[1 - jitter, 1 + jitter] * nodes`` (so the engine picks among moves
it rates about equally) and with probability ``epsilon`` a full move is played at random instead. The
transposition table is cleared before every game: with the same seed and code a game replays exactly.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit, log_expit
from tqdm import tqdm

from stapel_rl.classical import nnue
from stapel_rl.classical.board import MOVE_WIDTH, points
from stapel_rl.classical.evaluation import features
from stapel_rl.classical.movegen import MAX_MOVES, generate, new_move_buffer, new_scratch
from stapel_rl.classical.position import Position
from stapel_rl.classical.searcher import Searcher
from stapel_rl.env import initial_fen
from stapel_rl.env.variants import Variant

#: The arrays of a set of positions (``collect``): one row per quiet position.
POSITION_KEYS = ("inputs", "extra", "features", "side", "result", "value", "game")


def _row(path: "list[int]") -> np.ndarray:
    row = np.zeros(MOVE_WIDTH, np.int8)
    row[0] = len(path)
    row[1 : 1 + len(path)] = path
    return row


def _end_score(variant: Variant, pos: Position) -> float:
    """White's score (1, 0.5, 0) when the side to move has no move."""
    if variant.points_decide:
        diff = points(pos.h, pos.c, 0) - points(pos.h, pos.c, 1)
        return 0.5 if diff == 0 else float(diff > 0)
    return float(pos.side == 1)  # the side to move loses


def play_game(
    variant: Variant,
    searcher: Searcher,
    rng: np.random.Generator,
    nodes: int,
    opening_plies: int,
    epsilon: float,
    jitter: float,
    record: "Callable[[Position], Any]" = lambda pos: features(pos.h, pos.c, pos.side),
) -> "tuple[list[Any], list[int], list[float], float, int]":
    """One self-play game: ``(record(pos) of its quiet positions, their sides to move, their search values,
    White's score, plies)``. A search value is the searcher's score of the position (centi-men, side to
    move's view), NaN where the move was not searched (forced, or played at random). Quiet: the side to
    move has no capture (games are played in full moves, so no position is in the middle of one)."""
    buffer, scratch = new_move_buffer(1)[0], new_scratch()
    while True:  # a random opening that ends the game is replayed
        pos = Position.from_fen(initial_fen(variant))
        for _ in range(int(rng.integers(2, max(opening_plies, 2) + 1))):
            n, _ = generate(pos.h, pos.c, pos.side, -1, -1, buffer, scratch)
            if n == 0:
                break
            pos = pos.after(buffer[int(rng.integers(min(n, MAX_MOVES)))])
        else:
            break
    searcher.clear()
    records: "list[Any]" = []
    sides: "list[int]" = []
    values: "list[float]" = []
    while True:
        n, leaps = generate(pos.h, pos.c, pos.side, -1, -1, buffer, scratch)
        if n == 0:
            return records, sides, values, _end_score(variant, pos), pos.ply
        if pos.ply >= variant.ply_cap:
            return records, sides, values, 0.5, pos.ply
        quiet = leaps == 0
        if quiet:
            records.append(record(pos))
            sides.append(pos.side)
            values.append(float("nan"))
        n = min(n, MAX_MOVES)
        if n == 1:
            row = buffer[0].copy()
        elif rng.random() < epsilon:
            row = buffer[int(rng.integers(n))].copy()
        else:
            budget = max(1, int(round(nodes * rng.uniform(1 - jitter, 1 + jitter))))
            result = searcher.search(pos, nodes=budget)
            row = _row(result.path)
            if quiet:
                values[-1] = float(result.score)
        pos = pos.after(row)


def board_record(pos: Position) -> "tuple[np.ndarray, np.ndarray, np.ndarray]":
    """What a network's training keeps of a position: the active inputs, the extra inputs and the
    hand-written features."""
    inputs, extra = np.empty((2, 50), np.int64), np.empty(2, np.int64)
    nnue.inputs_into(pos.h, pos.c, inputs, extra)
    return inputs, extra, features(pos.h, pos.c, pos.side)


def collect(
    variant: Variant,
    searcher: Searcher,
    games: int,
    seed: "int | Sequence[int]",
    nodes: int,
    opening_plies: int,
    epsilon: float,
    jitter: float,
    first_game: int = 0,
    desc: str = "games",
    progress: bool = True,
) -> "dict[str, np.ndarray]":
    """The quiet positions of ``games`` games (``POSITION_KEYS``): the network's inputs, the hand-written
    features, the side to move, the game's result for it (1 win, 0.5 draw or truncation, 0 loss), the
    search's value (NaN where not searched) and the game's index. Game ``first_game + i`` plays with the
    random stream ``[*seed, first_game + i]``."""
    prefix = [seed] if isinstance(seed, int) else list(seed)
    parts: "dict[str, list]" = {k: [] for k in POSITION_KEYS}
    for g in tqdm(range(first_game, first_game + games), desc=desc, unit="game", disable=not progress, file=sys.stderr):
        rng = np.random.default_rng([*prefix, g])
        records, sides, values, white, _ = play_game(
            variant, searcher, rng, nodes, opening_plies, epsilon, jitter, board_record
        )
        for (inputs, extra, feats), side, value in zip(records, sides, values, strict=True):
            parts["inputs"].append(inputs)
            parts["extra"].append(extra)
            parts["features"].append(feats)
            parts["side"].append(side)
            parts["result"].append(white if side == 0 else 1.0 - white)
            parts["value"].append(value)
            parts["game"].append(g)
    if not parts["game"]:
        raise RuntimeError(f"{games} games left no quiet position to learn from: play more games")
    return {k: np.array(v) for k, v in parts.items()}


def log_loss(z: np.ndarray, y: np.ndarray) -> float:
    """Mean log-loss of logits ``z`` against results ``y`` in [0, 1] (draws 0.5 count half each way)."""
    return float(-np.mean(y * log_expit(z) + (1 - y) * log_expit(-z)))


def best_scale(weights: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    """The ``k`` minimising the log-loss of ``sigmoid(k * x @ weights)`` (a weight vector's best reading as odds)."""
    z = x @ np.asarray(weights, np.float64)
    spread = float(np.std(z)) or 1.0
    res = minimize_scalar(lambda k: log_loss(k * z, y), bounds=(0.0, 20.0 / spread), method="bounded")
    return float(res.x)


def labels(result: np.ndarray, value: np.ndarray, k: float, value_mix: float) -> np.ndarray:
    """Training targets ``(1 - value_mix) * result + value_mix * sigmoid(k * value)``, the result alone where
    the position was not searched (``value`` NaN); ``k`` is the logistic scale, logit per centi-man."""
    if not 0.0 <= value_mix <= 1.0:
        raise ValueError(f"value_mix must be in [0, 1], got {value_mix}")
    searched = np.isfinite(value)
    soft = np.where(searched, expit(k * np.nan_to_num(value)), result)
    return (1 - value_mix) * result + value_mix * soft
