"""Play batches of games between two agents, colours alternated."""

from __future__ import annotations

import dataclasses

import numpy as np

from stapel_rl.env import engine
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.env.state import State, take
from stapel_rl.env.variants import Variant, get_variant
from stapel_rl.eval.agents import Agent


@dataclasses.dataclass
class MatchResult:
    """Results of ``agent`` against ``opponent`` from ``agent``'s side.

    Attributes:
        scores: ``float [G]`` per game: 1 win, 0.5 draw or truncation, 0 loss.
        agent_colour: ``int [G]`` colour ``agent`` played (0 White, 1 Black).
        plies: ``int [G]`` game lengths in full moves.
    """

    scores: np.ndarray
    agent_colour: np.ndarray
    plies: np.ndarray

    @property
    def score(self) -> float:
        """Mean score in [0, 1] (draws count half)."""
        return float(self.scores.mean())

    def summary(self) -> str:
        wins, draws = int((self.scores == 1).sum()), int((self.scores == 0.5).sum())
        losses = self.scores.size - wins - draws
        return f"{wins}-{draws}-{losses} (W-D-L) of {self.scores.size}, score {100 * self.score:.1f}%"


def opening_positions(variant: Variant, num_games: int, random_plies: int, rng: np.random.Generator) -> State:
    """Start positions after ``random_plies`` random actions (games that ended are restarted)."""
    state = engine.init(variant, num_games)
    for _ in range(random_plies):
        state = engine.step(state, random_legal_actions(state.legal_action_mask, rng))
        state = engine.reset_games(state, state.done)
    return state


def play_match(
    agent: Agent,
    opponent: Agent,
    variant: "Variant | str",
    num_games: int,
    rng: np.random.Generator,
    start: "State | None" = None,
) -> MatchResult:
    """Play ``num_games`` games at once; ``agent`` is White in even games, Black in odd ones."""
    variant = get_variant(variant)
    state = start if start is not None else engine.init(variant, num_games)
    colour = np.arange(state.batch_size) % 2
    white_result = np.zeros(state.batch_size)  # +1 White won, -1 Black won, 0 draw / truncated
    while not state.done.all():
        actions = np.zeros(state.batch_size, np.int64)
        for player, who in ((agent, colour), (opponent, 1 - colour)):
            turn = np.flatnonzero(~state.done & (state.current_player == who))
            if turn.size:
                actions[turn] = player(take(state, turn), rng)
        was_done = state.done
        state = engine.step(state, actions)
        ended = state.done & ~was_done
        white_result[ended] = state.rewards[ended, 0]
    agent_result = np.where(colour == 0, white_result, -white_result)
    return MatchResult(scores=(agent_result + 1) / 2, agent_colour=colour, plies=state.ply.copy())
