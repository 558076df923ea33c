"""Self-play: many games at once through the batched search, recorded for training.

Every decision point (each plain move and each leap of a capture with a
choice) is searched for all live games together; forced actions (the only
move, the next leap of the only capture path) are played without a search
and are not recorded (``SearchConfig.skip_forced``). The search tree's chosen
subtree is kept for the next decision. Finished games are written out with their final result and
restarted at once, so the batch stays full.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from stapel_rl.env import Variant, engine
from stapel_rl.env.geometry import ROTATE_ACTION
from stapel_rl.env.state import State
from stapel_rl.mcts import SearchConfig, Tree, allocate, search, subtree
from stapel_rl.mcts.puct import visit_policy
from stapel_rl.models.evaluator import Evaluator
from stapel_rl.train.replay import FIELDS, STATE_FIELDS, Positions


@dataclasses.dataclass
class SelfPlayConfig(SearchConfig):
    """The search self-play runs (``SearchConfig``'s fields) and how its moves are chosen and recorded:
    the ``mcts`` group of the training config.

    Attributes (besides ``SearchConfig``'s):
    temperature_plies: PUCT: moves are sampled from visit counts (T = 1) for
        this many plies of each game, then the most visited move is played.
    fast_simulations: playout-cap randomisation (KataGo): when > 0, a share
        ``1 - full_search_prob`` of decisions use this many simulations and are
        not used as policy targets; 0 turns it off.
    full_search_prob: with ``fast_simulations``: probability that a decision gets the full search.
    reuse_tree: keep the chosen subtree between decisions.
    """

    temperature_plies: int = 20
    fast_simulations: int = 0
    full_search_prob: float = 0.25
    reuse_tree: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.temperature_plies < 0 or self.fast_simulations < 0:
            raise ValueError(
                "temperature_plies and fast_simulations (0: off) must be at least 0, got "
                f"{self.temperature_plies} and {self.fast_simulations}"
            )
        if not 0.0 <= self.full_search_prob <= 1.0:
            raise ValueError(f"full_search_prob must be in [0, 1], got {self.full_search_prob}")


@dataclasses.dataclass
class GameRecord:
    """A finished game: its board actions, result (+1 White won, -1 Black, 0 draw/truncated)."""

    actions: "list[int]"
    result: int
    plies: int


class SelfPlay:
    """Plays games forever; ``play(n)`` returns at least ``n`` positions of finished games.

    Recording is batched: every decision appends the rows of all live games
    (position, search policy, the game's serial number) to a pending list in a
    few array operations, and ``play`` turns the rows of finished games into
    training positions at once, joining each to its game's result by serial
    number. (A loop over games at every decision cost ~5% of self-play.)
    """

    def __init__(
        self,
        variant: "Variant | str",
        evaluator: Evaluator,
        config: SelfPlayConfig,
        num_games: int,
        rng: np.random.Generator,
    ):
        """``num_games`` games are played at once: the batch every network call sees."""
        self.variant, self.evaluator, self.config, self.rng = variant, evaluator, config, rng
        self.state = engine.init(variant, num_games)
        # Two sets of tree arrays used in turn: the kept subtree is copied from one into the other.
        self.capacity = 2 * (config.num_simulations + 1)
        self.tree = allocate(self.state, self.capacity)
        self.spare: "Tree | None" = None
        self.serial = np.arange(num_games)  # serial number of the game in each slot
        self.next_serial = num_games
        self.recorded = np.zeros(num_games, np.int64)  # positions recorded so far by each slot's game
        self.pending: "list[dict[str, np.ndarray]]" = []  # per full search: rows of the live games
        self.moves: "list[tuple[np.ndarray, np.ndarray]]" = []  # per decision: (serials, board actions)
        self.outcomes: "dict[int, tuple[int, float, int]]" = {}  # serial -> (result, W-B points, plies)
        self.finished_games: "list[GameRecord]" = []
        self.version = 0  # weights version the evaluator holds; recorded with each position
        self.actor = -1  # this self-play's process index; recorded with each position

    def play(self, min_positions: int, simulations: int = 0) -> Positions:
        """Step all games until the finished ones hold ``min_positions`` recorded positions.

        ``simulations`` > 0 replaces the full searches' simulation count for this call.
        """
        collected = 0
        while collected < min_positions:
            final = self._decide(simulations)
            done = np.flatnonzero(final.done)
            collected += int(self.recorded[done].sum())
            for g in done:
                self.outcomes[int(self.serial[g])] = (
                    int(final.rewards[g, 0]),
                    float(final.points[g, 0]) - float(final.points[g, 1]),
                    int(final.ply[g]),
                )
            self.serial[done] = self.next_serial + np.arange(done.size)
            self.next_serial += done.size
            self.recorded[done] = 0
        return self._collect()

    def _decide(self, simulations: int = 0) -> State:
        """One search and one action in every game; returns the games after it (``done``: just ended).

        ``simulations`` > 0 replaces the full searches' simulation count.
        """
        cfg, state = self.config, self.state
        full = cfg.fast_simulations <= 0 or self.rng.random() < cfg.full_search_prob
        sims = (simulations or cfg.num_simulations) if full else cfg.fast_simulations
        search_config = dataclasses.replace(
            cfg, num_simulations=sims, dirichlet_fraction=cfg.dirichlet_fraction if full else 0.0
        )
        out = search(state, self.evaluator, search_config, self.rng, tree=self.tree)
        action = out.action
        if search_config.algorithm == "puct":
            greedy = visit_policy(out.visits, 0.0).argmax(axis=1)
            action = np.where(state.ply < cfg.temperature_plies, out.action, greedy)
        live = np.flatnonzero(~state.done)
        if full:
            rows = {k: getattr(state, k)[live] for k in STATE_FIELDS}
            black = rows["current_player"] == 1
            policy = out.policy[live]
            rows["policy"] = np.where(black[:, None], policy[:, ROTATE_ACTION], policy)
            rows["root_value"] = out.search_value[live]
            rows["serial"] = self.serial[live]
            rows["version"] = np.full(live.size, self.version, np.int32)
            rows["actor"] = np.full(live.size, self.actor, np.int16)
            self.pending.append(rows)
            self.recorded[live] += 1
        self.moves.append((self.serial[live], action[live]))
        new_state = engine.step(state, action)  # no game was over before: finished ones restart below
        fresh = new_state.done.copy() if cfg.reuse_tree else np.ones(state.batch_size, bool)
        if search_config.skip_forced:
            # The search's children hold the position after at most forced_rounds forced actions: the
            # same here keeps the chosen subtree's root matching. A game that still has forced actions
            # plays them too and starts a fresh tree at its next decision point.
            new_state, forced = engine.play_forced(new_state, search_config.forced_rounds)
            new_state, more = engine.play_forced(new_state)
            if more:  # more[0][0]: the games whose chosen child stopped on a forced action
                forced += more
                fresh[more[0][0]] = True
            self.moves.extend((self.serial[g], a) for g, a in forced)
        fresh |= new_state.done
        restarted = engine.reset_games(new_state, new_state.done)
        self.tree, _ = subtree(
            out.tree,
            action,
            restarted,
            self.capacity,
            cfg.num_simulations + 1,
            fresh=fresh,
            out=self.spare,
        )
        self.spare = out.tree
        self.state = restarted
        return new_state

    def _collect(self) -> Positions:
        """Training positions of the finished games (and their ``GameRecord``s); other rows stay pending."""
        finished = np.array(sorted(self.outcomes), dtype=np.int64)
        outcome = np.array([self.outcomes[s] for s in finished], dtype=np.float64).reshape(-1, 3)
        self.outcomes = {}

        serials, actions = (np.concatenate(parts) for parts in zip(*self.moves, strict=True))
        ended = np.isin(serials, finished)
        order = np.argsort(serials[ended], kind="stable")  # each game's actions, in the order played
        bounds = np.searchsorted(serials[ended][order], finished, side="right")
        for i, game_actions in enumerate(np.split(actions[ended][order], bounds[:-1])):
            self.finished_games.append(GameRecord(game_actions.tolist(), int(outcome[i, 0]), int(outcome[i, 2])))
        self.moves = [(serials[~ended], actions[~ended])]

        if not self.pending:
            return Positions({k: np.zeros((0,) + shape, dtype) for k, (shape, dtype) in FIELDS.items()})
        rows = {k: np.concatenate([p[k] for p in self.pending]) for k in self.pending[0]}
        ended = np.isin(rows["serial"], finished)
        self.pending = [{k: v[~ended] for k, v in rows.items()}]
        rows = {k: v[ended] for k, v in rows.items()}
        game = np.searchsorted(finished, rows.pop("serial"))
        sign = np.where(rows["current_player"] == 0, 1.0, -1.0)
        rows["value"] = sign * outcome[game, 0]
        rows["points_diff"] = sign * outcome[game, 1]
        return Positions({k: rows[k].astype(FIELDS[k][1]) for k in FIELDS})

    def take_finished_games(self) -> "list[GameRecord]":
        games, self.finished_games = self.finished_games, []
        return games
