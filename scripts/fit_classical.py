"""Fit the classical searcher's evaluation weights by logistic regression of game results on features.

The evaluation of ``stapel_rl.classical`` is ``dot(weights, features(position))``
with the weights read from a JSON file (``stapel_rl/classical/weights_<V>.json``).
This script makes such a file from engine games, in rounds:

1. Play ``--games`` games of the classical searcher against itself at a fixed
   node budget (``--nodes``) with the current weights (round 1: the
   ``--start`` file, by default the packaged one; ``--start initial``: the weights
   the packaged fit started from). Each game opens with 2 to
   ``--opening-plies`` uniformly random full moves; afterwards every search
   gets a node budget drawn uniformly from ``[1 - jitter, 1 + jitter] * nodes``
   (which makes the engine pick among moves it rates about equally) and with
   probability ``--epsilon`` a full move is played at random instead, so the
   games, and their positions, differ. The transposition table is cleared
   before every game; with the same ``--seed`` and the same code a run
   replays exactly.
2. Record every quiet position after the opening (the side to move has no
   capture; the games are played in full moves, so no position is in the
   middle of a capture): its ``features`` and the game's result from the side
   to move's view, 1 win, 0 loss, 0.5 draw or truncation at the ply cap.
   Variant I: the side to move without a move loses. Variant II: the back-row
   points decide.
3. Split the games (not the positions: those of a game are alike) into a
   training part and a held-out part (every ``--holdout``-th game) and fit
   ``P(side to move wins) = sigmoid(beta . x)`` by minimising the mean
   log-loss plus ``--l2 / 2 * |beta|^2`` (scipy L-BFGS on standardised
   features; the constant feature ``to_move`` is the intercept and is not
   regularised). Positions of all rounds so far are used.
4. Scale beta to the evaluation's unit, centi-men: ``weights = 100 * beta /
   beta_material`` (so material stays 100), rounded to integers.
5. Log-loss on the held-out games, before and after: each weight vector
   (the round's starting weights, the fitted ones) gets the one scale
   ``k`` that fits the training part best, ``sigmoid(k * weights . x)``,
   and is scored on the held-out part; a constant predictor is the baseline.
6. Write the weights JSON atomically (temporary file, then rename) with the
   procedure, games, positions, seed, node budget, log-losses and the git
   commit in ``metadata``; the next round plays with these weights.
   ``--rounds`` rounds are run; every round's file is kept beside ``--out``
   (``<out stem>.round<k>.json``), the starting weights as
   ``<out stem>.initial.json``, and ``--out`` is the last round's.

Then check the weights play better (colour-swapped pairs from the opening
suite, the same node budget for both, then the same time with ``--time``)::

    stapel-match classical:nodes=2000:eval=runs/fit3_I/weights_I.json \\
        classical:nodes=2000:eval=runs/fit3_I/weights_I.initial.json --variant I --games 300

Usage (one process, about 9 minutes a variant; the runs behind the packaged
weights, whose figures and match results are in docs/classical.md)::

    python scripts/fit_classical.py --variant I --games 1000 --rounds 3 --nodes 2000 --seed 1 \\
        --out runs/fit3_I/weights_I.json
    python scripts/fit_classical.py --variant II --games 1000 --rounds 3 --nodes 2000 --seed 2 \\
        --out runs/fit3_II/weights_II.json

Small settings for a first try: ``--games 50 --rounds 1 --nodes 1000``.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from stapel_rl.classical import FEATURES, Searcher
from stapel_rl.classical.evaluation import read_weights, weights_path
from stapel_rl.classical.selfplay import best_scale, log_loss, play_game
from stapel_rl.cli.options import check_counts
from stapel_rl.env.variants import Variant, get_variant

MATERIAL = FEATURES.index("material")
INTERCEPT = FEATURES.index("to_move")
#: Centi-men: the evaluation's unit, material weighs this much per man.
MATERIAL_UNIT = 100


@dataclasses.dataclass
class Games:
    """Quiet positions of a set of games: features ``x [P, F]``, results ``y [P]`` (side to move's view),
    the game each came from ``game [P]``, and per game its result for White and length."""

    x: np.ndarray
    y: np.ndarray
    game: np.ndarray
    white_scores: np.ndarray
    plies: np.ndarray

    @property
    def num_games(self) -> int:
        return int(self.white_scores.size)


def play_games(
    variant: Variant,
    weights: np.ndarray,
    num_games: int,
    seed: int,
    nodes: int,
    opening_plies: int,
    epsilon: float,
    jitter: float,
    first_game: int = 0,
    desc: str = "games",
    progress: bool = True,
) -> Games:
    """``num_games`` self-play games with ``weights``; game ``first_game + i`` uses seed ``(seed, that index)``."""
    from tqdm import tqdm

    searcher = Searcher(variant, weights=weights, tt_bits=18)
    xs, ys, gs, white, plies = [], [], [], [], []
    bar = tqdm(range(num_games), desc=desc, unit="game", disable=not progress, file=sys.stderr)
    for i in bar:
        index = first_game + i
        rng = np.random.default_rng([seed, index])
        feats, sides, _, white_score, length = play_game(variant, searcher, rng, nodes, opening_plies, epsilon, jitter)
        if feats:
            xs.append(np.stack(feats))
            s = np.array(sides)
            ys.append(np.where(s == 0, white_score, 1.0 - white_score))
            gs.append(np.full(len(feats), index))
        white.append(white_score)
        plies.append(length)
        bar.set_postfix(positions=sum(len(g) for g in gs), white=f"{np.mean(white):.2f}", refresh=False)
    f = len(FEATURES)
    return Games(
        x=np.concatenate(xs).astype(np.float64) if xs else np.zeros((0, f)),
        y=np.concatenate(ys) if ys else np.zeros(0),
        game=np.concatenate(gs) if gs else np.zeros(0, np.int64),
        white_scores=np.array(white),
        plies=np.array(plies),
    )


def merge(a: "Games | None", b: Games) -> Games:
    if a is None:
        return b
    return Games(*(np.concatenate([getattr(a, f.name), getattr(b, f.name)]) for f in dataclasses.fields(Games)))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-4, intercept: "int | None" = INTERCEPT) -> np.ndarray:
    """``beta`` minimising ``mean log-loss(x @ beta, y) + l2 / 2 * |beta_std|^2``.

    Columns are standardised for the optimiser (and so that ``l2`` treats
    features on different scales alike), the result is in ``x``'s units.
    Column ``intercept`` (constant) is not standardised nor regularised; a
    constant column other than that one gets coefficient 0.
    """
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    std = x.std(axis=0)
    free = independent_columns(x, intercept)  # the others get a zero column: their gradient stays 0
    mean = np.where(free, x.mean(axis=0), 0.0)
    std = np.where(free, std, 1.0)
    xs = np.where(free, (x - mean) / std, 0.0)
    if intercept is not None:
        xs[:, intercept] = 1.0
    penalised = free

    def objective(b: np.ndarray) -> "tuple[float, np.ndarray]":
        z = xs @ b
        loss = -np.mean(y * log_expit(z) + (1 - y) * log_expit(-z)) + 0.5 * l2 * np.sum(b[penalised] ** 2)
        grad = xs.T @ (expit(z) - y) / len(y) + l2 * np.where(penalised, b, 0.0)
        return float(loss), grad

    res = minimize(
        objective,
        np.zeros(xs.shape[1]),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 2000, "gtol": 1e-10, "ftol": 1e-14},
    )
    b_std = res.x
    beta = b_std / std
    if intercept is not None:
        # Undo the centring: the means moved into the intercept.
        beta[intercept] = b_std[intercept] - float(np.sum(b_std[free] * mean[free] / std[free]))
    return beta


def independent_columns(x: np.ndarray, intercept: "int | None" = INTERCEPT, tol: float = 1e-9) -> np.ndarray:
    """``bool [F]``: the columns kept, in order, each not a linear combination of the kept ones before it
    (and of the intercept); constant columns are never kept, nor the intercept itself.

    Some features are tied by the rules: every man stays on the board, so
    ``material == 2 * captives`` in every position. Only such a pair's sum
    is identified; giving it all to the first feature keeps the weights readable.
    """
    x = np.asarray(x, np.float64)
    std = x.std(axis=0)
    centred = np.where(std > 0, (x - x.mean(axis=0)) / np.where(std > 0, std, 1.0), 0.0)
    keep = np.zeros(x.shape[1], bool)
    basis = np.zeros((x.shape[0], 0))
    for j in range(x.shape[1]):
        if j == intercept or std[j] == 0:
            continue
        col = centred[:, j]
        if basis.shape[1]:
            col = col - basis @ (basis.T @ col)
        norm = float(np.linalg.norm(col))
        if norm > tol * np.sqrt(x.shape[0]) * 1e3:
            keep[j] = True
            basis = np.column_stack([basis, col / norm])
    return keep


def to_centimen(beta: np.ndarray, fallback_scale: "float | None" = None) -> "tuple[np.ndarray, str]":
    """Logistic coefficients in centi-men, rounded to integers, and how the unit was set.

    Normally scaled so that material weighs ``MATERIAL_UNIT``. When the fit
    gives material no positive weight (too few games, or a variant where men
    matter only through other features) that unit does not exist; then, if
    ``fallback_scale`` (logit per centi-man of the weights the games were
    played with) is given, the coefficients are divided by it, keeping the
    played evaluation's scale.
    """
    if beta[MATERIAL] > 0:
        return np.round(beta * MATERIAL_UNIT / beta[MATERIAL]).astype(np.int64), "material"
    if fallback_scale is not None and fallback_scale > 0:
        return np.round(beta / fallback_scale).astype(np.int64), "played"
    raise RuntimeError(
        f"the fitted material coefficient is {beta[MATERIAL]:.3g}, not positive: the games "
        "do not reward material, so it cannot be the unit (play more or longer games)"
    )


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            cwd=pathlib.Path(__file__).resolve().parent,
        )
        return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def write_json_atomic(path: pathlib.Path, data: dict) -> None:
    """Write ``data`` so that ``path`` is either the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise


def evaluate_split(
    data: Games, holdout: int, weights: "dict[str, np.ndarray]", l2: float
) -> "tuple[np.ndarray, np.ndarray, dict]":
    """Fit on the training games; log-losses on the held-out ones. Returns ``(beta, centi-men weights, figures)``;
    ``weights`` must hold ``played``, the weights the games were played with."""
    test = data.game % holdout == 0 if holdout > 1 else np.zeros(data.y.size, bool)
    train = ~test
    if train.sum() < len(FEATURES) or (holdout > 1 and test.sum() == 0):
        raise RuntimeError(
            f"too few positions to fit ({int(train.sum())} training, {int(test.sum())} held out): play more games"
        )
    beta = fit_logistic(data.x[train], data.y[train], l2)
    fitted, unit = to_centimen(beta, best_scale(weights["played"], data.x[train], data.y[train]))
    candidates = dict(weights, fitted=fitted)
    kept = independent_columns(data.x[train])
    figures: dict = {
        "train_positions": int(train.sum()),
        "heldout_positions": int(test.sum()),
        "not_identified": [f for i, f in enumerate(FEATURES) if not kept[i] and i != INTERCEPT],
        "unit": ("material = 100" if unit == "material" else "material not positive: the played weights' scale"),
    }
    if unit != "material":
        print(
            f"warning: the fitted material coefficient is {beta[MATERIAL]:.3g}; kept the played weights' "
            "scale instead of material = 100",
            file=sys.stderr,
        )
    xt, yt = (data.x[test], data.y[test]) if test.any() else (data.x[train], data.y[train])
    rate = float(np.clip(data.y[train].mean(), 1e-6, 1 - 1e-6))
    figures["logloss_heldout_constant"] = round(log_loss(np.full(yt.size, np.log(rate / (1 - rate))), yt), 5)
    for name, w in candidates.items():
        k = best_scale(w, data.x[train], data.y[train])
        figures[f"logloss_heldout_{name}"] = round(log_loss(k * (xt @ w.astype(np.float64)), yt), 5)
    figures["logloss_heldout_unrounded"] = round(log_loss(xt @ beta, yt), 5)
    return beta, fitted, figures


def starting_weights(start: "str | None", variant: str) -> "tuple[np.ndarray, dict, str]":
    """Round 1's weights, their metadata and their source, from ``--start``; ``ValueError`` says what is wrong.

    ``initial`` names the weights the packaged fit started from: the packaged
    file holds the fitted ones, so the documented runs start from these.
    """
    if start != "initial":
        path = pathlib.Path(start) if start else weights_path(variant)
        weights, metadata = read_weights(path)
        return weights, metadata, str(path)
    packaged = weights_path(variant)
    named = read_weights(packaged)[1].get("initial_weights")
    if not isinstance(named, dict) or sorted(named) != sorted(FEATURES):
        raise ValueError(f"{packaged} has no initial_weights naming every feature")
    weights = np.array([int(named[f]) for f in FEATURES], dtype=np.int64)
    return weights, {"variant": variant, "status": "initial"}, f"{packaged} (metadata.initial_weights)"


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", default="I")
    parser.add_argument("--games", type=int, default=300, help="games per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds: each plays with the previous round's weights")
    parser.add_argument("--nodes", type=int, default=3000, help="node budget per search")
    parser.add_argument("--jitter", type=float, default=0.3, help="node budget drawn from nodes * [1-j, 1+j]")
    parser.add_argument("--epsilon", type=float, default=0.03, help="chance of a random full move")
    parser.add_argument("--opening-plies", type=int, default=6, help="random full moves at the start: 2..this")
    parser.add_argument("--holdout", type=int, default=5, help="every this-th game is held out (1: none)")
    parser.add_argument("--l2", type=float, default=1e-4, help="L2 penalty on the standardised coefficients")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--start",
        default=None,
        help="weights to play round 1 with: a weights file, or 'initial', the weights the packaged fit started "
        "from (its metadata's initial_weights); default: the variant's packaged file",
    )
    parser.add_argument("--out", type=pathlib.Path, required=True, help="the fitted weights JSON to write")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    try:
        check_counts(args, "games", "rounds", "nodes")
    except ValueError as error:
        parser.error(str(error))
    variant = get_variant(args.variant)
    try:
        weights, start_meta, start_path = starting_weights(args.start, variant.name)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = args.out
    stem = out.name[:-5] if out.name.endswith(".json") else out.name
    initial = {
        "metadata": dict(copy.deepcopy(start_meta), source=str(start_path)),
        "weights": {f: int(w) for f, w in zip(FEATURES, weights, strict=True)},
    }
    write_json_atomic(out.with_name(f"{stem}.initial.json"), initial)
    commit = git_commit()
    command = " ".join(["python", "scripts/fit_classical.py", *(argv if argv is not None else sys.argv[1:])])
    data: "Games | None" = None
    history = []
    start_weights = weights
    for r in range(1, args.rounds + 1):
        t0 = time.perf_counter()
        games = play_games(
            variant,
            weights,
            args.games,
            args.seed,
            args.nodes,
            args.opening_plies,
            args.epsilon,
            args.jitter,
            first_game=(r - 1) * args.games,
            desc=f"round {r}/{args.rounds}",
            progress=not args.no_progress,
        )
        data = merge(data, games)
        beta, fitted, figures = evaluate_split(
            data, args.holdout, {"initial": start_weights, "played": weights}, args.l2
        )
        record = {
            "round": r,
            "games": games.num_games,
            "positions": int(games.y.size),
            "white_score": round(float(games.white_scores.mean()), 4),
            "mean_plies": round(float(games.plies.mean()), 1),
            "truncated": int((games.plies >= variant.ply_cap).sum()),
            "played_with": {f: int(w) for f, w in zip(FEATURES, weights, strict=True)},
            "fitted_on_games": data.num_games,
            **figures,
            "seconds": round(time.perf_counter() - t0, 1),
        }
        history.append(record)
        metadata = {
            "variant": variant.name,
            "status": "fitted",
            "description": "logistic regression of game results on stapel_rl.classical.features, "
            f"scaled to centi-men (material = {MATERIAL_UNIT}); see docs/classical.md",
            "procedure": (
                f"{r} round(s) of {args.games} self-play games of the classical searcher at "
                f"nodes={args.nodes} (budget jitter {args.jitter}, epsilon {args.epsilon}, 2-"
                f"{args.opening_plies} random opening moves), each round playing with the previous "
                f"round's weights; quiet positions labelled with the result for the side to move "
                f"(1/0.5/0); L2-regularised (l2={args.l2}) logistic regression on the positions of "
                f"all rounds, every {args.holdout}-th game held out"
            ),
            "command": command,
            "games": data.num_games,
            "positions": int(data.y.size),
            "seed": args.seed,
            "nodes": args.nodes,
            "rounds": r,
            "commit": commit,
            "logistic_coefficients": {f: float(f"{b:.6g}") for f, b in zip(FEATURES, beta, strict=True)},
            **{k: v for k, v in figures.items() if k.startswith("logloss")},
            "history": history,
        }
        result = {"metadata": metadata, "weights": {f: int(w) for f, w in zip(FEATURES, fitted, strict=True)}}
        write_json_atomic(out.with_name(f"{stem}.round{r}.json"), result)
        write_json_atomic(out, result)
        print(
            f"round {r}: {games.num_games} games ({games.y.size} positions, white {record['white_score']:.3f}, "
            f"{record['mean_plies']} plies), fitted on {data.num_games} games; held-out log-loss "
            f"constant {figures['logloss_heldout_constant']:.4f}, initial {figures['logloss_heldout_initial']:.4f}, "
            f"played {figures['logloss_heldout_played']:.4f}, fitted {figures['logloss_heldout_fitted']:.4f}; "
            f"{record['seconds']:.0f} s",
            file=sys.stderr,
            flush=True,
        )
        print(
            "  weights " + ", ".join(f"{f}={int(w)}" for f, w in zip(FEATURES, fitted, strict=True)),
            file=sys.stderr,
            flush=True,
        )
        weights = fitted
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
