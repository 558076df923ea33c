"""Self-play: many games at once through the batched search, recorded for training.

Every decision point (each plain move and each leap of a capture) is searched
for all live games together; the search tree's chosen subtree is kept for the
next decision. Finished games are written out with their final result and
restarted at once, so the batch stays full.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from stapel_rl.env import engine
from stapel_rl.env.geometry import ROTATE_ACTION
from stapel_rl.env.state import State
from stapel_rl.mcts import SearchConfig, Tree, allocate, search, subtree
from stapel_rl.mcts.puct import visit_policy
from stapel_rl.models.evaluator import Evaluator
from stapel_rl.train.replay import FIELDS, STATE_FIELDS, Positions


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """Attributes:
    num_games: games played at once (the batch every network call sees).
    temperature_plies: PUCT: moves are sampled from visit counts (T = 1) for
        this many plies of each game, then the most visited move is played.
    fast_simulations: playout-cap randomisation (KataGo): when > 0, a share
        ``1 - full_search_prob`` of decisions use this many simulations and are
        not used as policy targets.
    full_search_prob: probability that a decision gets the full search.
    reuse_tree: keep the chosen subtree between decisions.
    """

    num_games: int = 64
    temperature_plies: int = 20
    fast_simulations: int = 0
    full_search_prob: float = 0.25
    reuse_tree: bool = True


@dataclasses.dataclass
class GameRecord:
    """A finished game: its board actions, result (+1 White won, -1 Black, 0 draw/truncated)."""

    actions: "list[int]"
    result: int
    plies: int


class SelfPlay:
    """Plays games forever; ``play(n)`` returns at least ``n`` positions of finished games."""

    def __init__(self, variant, evaluator: Evaluator, search_config: SearchConfig, config: SelfPlayConfig,
                 rng: np.random.Generator):
        self.variant, self.evaluator, self.search_config, self.config, self.rng = (
            variant, evaluator, search_config, config, rng)
        self.state = engine.init(variant, config.num_games)
        # Two sets of tree arrays used in turn: the kept subtree is copied from one into the other.
        self.capacity = 2 * (search_config.num_simulations + 1)
        self.tree = allocate(self.state, self.capacity)
        self.spare: "Tree | None" = None
        self.records: "list[list[dict]]" = [[] for _ in range(config.num_games)]
        self.actions: "list[list[int]]" = [[] for _ in range(config.num_games)]
        self.finished_games: "list[GameRecord]" = []

    def play(self, min_positions: int) -> Positions:
        """Step all games until the finished ones hold ``min_positions`` recorded positions."""
        parts: "list[Positions]" = []
        collected = 0
        while collected < min_positions:
            final = self._decide()
            for g in np.flatnonzero(final.done):
                part = self._finish(g, final)
                if part is not None:
                    parts.append(part)
                    collected += len(part)
        return Positions.concatenate(parts)

    def _decide(self) -> State:
        """One search and one action in every game; returns the games after it (``done``: just ended)."""
        cfg, state = self.config, self.state
        full = cfg.fast_simulations <= 0 or self.rng.random() < cfg.full_search_prob
        sims = self.search_config.num_simulations if full else cfg.fast_simulations
        search_config = dataclasses.replace(self.search_config, num_simulations=sims,
                                            dirichlet_fraction=self.search_config.dirichlet_fraction if full else 0.0)
        out = search(state, self.evaluator, search_config, self.rng, tree=self.tree)
        action = out.action
        if search_config.algorithm == "puct":
            greedy = visit_policy(out.visits, 0.0).argmax(axis=1)
            action = np.where(state.ply < cfg.temperature_plies, out.action, greedy)
        if full:
            black = state.current_player == 1
            policy = np.where(black[:, None], out.policy[:, ROTATE_ACTION], out.policy)
            for g in np.flatnonzero(~state.done):
                self.records[g].append({
                    **{k: getattr(state, k)[g] for k in STATE_FIELDS}, "policy": policy[g]})
        for g in np.flatnonzero(~state.done):
            self.actions[g].append(int(action[g]))
        new_state = engine.step(state, action)  # no game was over before: finished ones restart below
        restarted = engine.reset_games(new_state, new_state.done)
        fresh = new_state.done if cfg.reuse_tree else np.ones(state.batch_size, bool)
        self.tree, _ = subtree(out.tree, action, restarted, self.capacity, self.search_config.num_simulations + 1,
                               fresh=fresh, out=self.spare)
        self.spare = out.tree
        self.state = restarted
        return new_state

    def _finish(self, g: int, final: State) -> "Positions | None":
        """Turn game ``g``'s records into training positions and start it afresh."""
        records, self.records[g] = self.records[g], []
        result, points = int(final.rewards[g, 0]), final.points[g].astype(np.float32)
        self.finished_games.append(GameRecord(self.actions[g], result, int(final.ply[g])))
        self.actions[g] = []
        if not records:
            return None
        arrays = {k: np.stack([r[k] for r in records]) for k in STATE_FIELDS + ("policy",)}
        player = arrays["current_player"].astype(np.int64)
        sign = np.where(player == 0, 1.0, -1.0).astype(np.float32)
        arrays["value"] = sign * result
        arrays["points_diff"] = sign * (points[0] - points[1])
        return Positions({k: arrays[k].astype(FIELDS[k][1]) for k in FIELDS})

    def take_finished_games(self) -> "list[GameRecord]":
        games, self.finished_games = self.finished_games, []
        return games
