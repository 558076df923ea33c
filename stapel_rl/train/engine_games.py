"""Training positions for the policy-value network from the classical engine's games (a warm start).

``scripts/warm_start.py`` trains a first network on them; ``stapel-train init_weights=PATH`` then starts AlphaZero
self-play from it. A game opens with random full moves, then the compiled engine (``stapel_rl.classical``, with the
hand-written evaluation or a learned one) plays both sides at a jittered node budget, with a random full move now and
then so that games differ. Every decision point (more than one legal action: capture continuations too) becomes a row
of ``stapel_rl.train.replay.FIELDS``, as self-play writes them:

- ``policy``: the engine's action, one-hot over canonical actions (Black's rotated, as in self-play);
- ``value``: the game's result for the player to move; ``points_diff`` its final Variant II points;
- ``root_value``: the engine's score read as winning chances, ``2 * sigmoid(k * score) - 1`` (``k`` the
  logit per centi-man; the leaps after a capture's first carry its full move's score), 0 where the move
  was random or forced, so that ``train.value_mix`` means what it means for self-play positions.

Game ``i`` draws from the random stream ``[*seed, i]`` and clears the engine's table first: the positions
are the same however the games are shared out among processes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import expit

from stapel_rl.classical import nnue
from stapel_rl.classical.position import Position, row_path, step_actions
from stapel_rl.classical.searcher import Searcher
from stapel_rl.env import engine
from stapel_rl.env.geometry import NUM_ACTIONS, ROTATE_ACTION
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.env.state import State
from stapel_rl.env.variants import Variant
from stapel_rl.train.replay import FIELDS, STATE_FIELDS, Positions

__all__ = ["play_games"]


def _full_move(state: State, rng: np.random.Generator) -> State:
    """One random full move: random legal actions until the other side is to move or the game ends."""
    side = int(state.current_player[0])
    while not state.done[0] and int(state.current_player[0]) == side:
        state = engine.step(state, random_legal_actions(state.legal_action_mask, rng))
    return state


def play_game(
    variant: Variant,
    searcher: Searcher,
    rng: np.random.Generator,
    nodes: int,
    opening_plies: int,
    epsilon: float,
    jitter: float,
    k: float,
) -> "dict[str, np.ndarray]":
    """One game's rows (``FIELDS``)."""
    while True:  # an opening that ends the game is drawn again
        state = engine.init(variant, 1)
        for _ in range(int(rng.integers(2, max(opening_plies, 2) + 1))):
            state = _full_move(state, rng)
        if not state.done[0]:
            break
    searcher.clear()
    rows: "dict[str, list]" = {k: [] for k in (*STATE_FIELDS, "policy", "root_value")}
    plan: "list[int]" = []
    score = 0.0
    while not state.done[0]:
        mask = state.legal_action_mask[0]
        if not plan:  # the start of a full move
            pos = Position.from_state(state, 0)
            moves = pos.move_rows()
            if len(moves) > 1 and rng.random() >= epsilon:
                budget = max(1, int(round(nodes * rng.uniform(1 - jitter, 1 + jitter))))
                result = searcher.search(pos, nodes=budget)
                plan, score = step_actions(result.path), 2.0 * float(expit(k * result.score)) - 1.0
            else:
                plan, score = step_actions(row_path(moves[int(rng.integers(len(moves)))])), 0.0
        action = plan.pop(0)
        if not mask[action]:  # never expected: the tests hold the engine's generator to the rules engine
            raise RuntimeError(f"the classical engine's action {action} is not legal here")
        if mask.sum() > 1:
            for key in STATE_FIELDS:
                rows[key].append(getattr(state, key)[0].copy())
            canonical = int(ROTATE_ACTION[action]) if int(state.current_player[0]) == 1 else action
            policy = np.zeros(NUM_ACTIONS, np.float32)
            policy[canonical] = 1.0
            rows["policy"].append(policy)
            rows["root_value"].append(score)
        state = engine.step(state, np.array([action]))
    white = float(state.rewards[0, 0])
    points = float(state.points[0, 0]) - float(state.points[0, 1])
    n = len(rows["policy"])
    out: "dict[str, np.ndarray]" = {
        key: np.array(rows[key], dtype=FIELDS[key][1]).reshape((n, *FIELDS[key][0])) for key in rows
    }
    sign = np.where(out["current_player"] == 0, 1.0, -1.0)
    out["value"] = (sign * white).astype(np.float32)
    out["points_diff"] = (sign * points).astype(np.float32)
    out["version"] = np.zeros(n, np.int32)
    out["actor"] = np.full(n, -1, np.int16)
    return out


def play_games(
    variant: Variant,
    games: int,
    seed: "int | Sequence[int]",
    nodes: int,
    opening_plies: int = 6,
    epsilon: float = 0.05,
    jitter: float = 0.3,
    first_game: int = 0,
    k: "float | None" = None,
    eval: str = "hand",
) -> Positions:
    """The rows of games ``first_game`` to ``first_game + games - 1`` (``play_game``), in order, the engine
    searching with ``eval`` (``nnue.engine_eval``: ``hand``, ``nnue`` or a network file's path); ``k``
    (default: that evaluation's) reads its scores as winning chances."""
    prefix = [seed] if isinstance(seed, int) else list(seed)
    net, own_k = nnue.engine_eval(eval, variant.name)
    k = own_k if k is None else k
    searcher = Searcher(variant, tt_bits=18, net=net)
    parts = [
        play_game(variant, searcher, np.random.default_rng([*prefix, g]), nodes, opening_plies, epsilon, jitter, k)
        for g in range(first_game, first_game + games)
    ]
    return Positions({key: np.concatenate([p[key] for p in parts]) for key in FIELDS})


def game_rows(*args: object) -> "dict[str, np.ndarray]":
    """``play_games(*args)``'s rows as arrays: a task of ``stapel_rl.train.chunks.played``."""
    return play_games(*args).arrays  # type: ignore[arg-type]
