"""Play batches of games between two agents, colours alternated.

A batch of games goes to the agents in one call only where neither has a
clock (``stapel_rl.eval.agents.clock``): with a ``time=`` on either side
every call is for one game, so that the budget is each game's and
decision's own and the time each side used is measured game by game.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np

from stapel_rl.env import engine
from stapel_rl.env.state import State, concatenate, take
from stapel_rl.env.variants import Variant, get_variant
from stapel_rl.eval.agents import Agent, clock
from stapel_rl.eval.openings import random_opening_states
from stapel_rl.eval.pentanomial import Pentanomial

#: Agent kinds that search by time, and so take a match's time per move.
TIMED_KINDS = ("mcts", "classical")


def timed_spec(spec: str, seconds: "float | None") -> str:
    """``spec`` with ``:time=SECONDS`` added where the agent searches by time and sets no time of its own."""
    kind, *options = spec.split(":")
    if seconds is None or kind not in TIMED_KINDS or any(o.startswith("time=") for o in options):
        return spec
    return f"{spec}:time={seconds:g}"


@dataclasses.dataclass
class MatchResult:
    """Results of ``agent`` against ``opponent`` from ``agent``'s side.

    Attributes:
        scores: ``float [G]`` per game: 1 win, 0.5 draw or truncation, 0 loss.
        agent_colour: ``int [G]`` colour ``agent`` played (0 White, 1 Black).
        plies: ``int [G]`` game lengths in full moves.
        seconds: ``float [2]`` time spent in calls of ``agent`` and of ``opponent``.
        moves: ``int [2]`` full moves each of them chose (the later leaps of a capture are part of one).
    """

    scores: np.ndarray
    agent_colour: np.ndarray
    plies: np.ndarray
    seconds: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(2))
    moves: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(2, np.int64))

    @property
    def score(self) -> float:
        """Mean score in [0, 1] (draws count half)."""
        return float(self.scores.mean())

    def time_per_move(self) -> np.ndarray:
        """``float [2]`` mean seconds per full move of ``agent`` and of ``opponent``."""
        return self.seconds / np.maximum(self.moves, 1)

    def pentanomial(self, pair: np.ndarray) -> Pentanomial:
        """The outcomes of the pairs ``pair`` ``int [G]`` groups the games into (two games each)."""
        pair = np.asarray(pair)
        return Pentanomial.of(np.bincount(pair, weights=self.scores, minlength=int(pair.max(initial=-1)) + 1))

    def record(self) -> str:
        """``wins-draws-losses (W-D-L) of games``."""
        wins, draws = int((self.scores == 1).sum()), int((self.scores == 0.5).sum())
        return f"{wins}-{draws}-{self.scores.size - wins - draws} (W-D-L) of {self.scores.size}"

    def to_dict(self) -> "dict[str, list]":
        """The fields as JSON-ready lists (``from_dict`` reads them back)."""
        return {f.name: getattr(self, f.name).tolist() for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, fields: "dict[str, list]") -> MatchResult:
        return cls(**{f.name: np.asarray(fields[f.name]) for f in dataclasses.fields(cls)})

    def summary(self, pair: "np.ndarray | None" = None) -> str:
        """The result as every command prints it: the record, then, with the games' pairs ``pair``
        ``int [G]`` (colour-swapped openings), the pentanomial score and Elo with their intervals."""
        if pair is None:
            return f"{self.record()}, score {100 * self.score:.1f}%"
        return f"{self.record()}, {self.pentanomial(pair).summary()}"


def paired_openings(
    variant: Variant, pairs: int, random_plies: int, rng: np.random.Generator
) -> "tuple[State, np.ndarray]":
    """Colour-swapped pairs: ``pairs`` random openings, each played once with the agent as White and once as Black.

    Returns the start positions ``[2 * pairs]`` and the agent's colour in each
    game (``play_match``'s ``start`` and ``agent_colour``). Playing both sides
    of an opening cancels most of its luck.
    """
    openings = random_opening_states(variant, pairs, random_plies, rng)
    return concatenate([openings, openings]), np.repeat([0, 1], pairs)


def paired_start(variant: Variant, fens: "list[str]") -> "tuple[State, np.ndarray]":
    """Each position of ``fens`` twice, the agent White in the first ``len(fens)`` games, Black in the rest.

    Returns ``play_match``'s ``start`` and ``agent_colour``; game ``k`` and game
    ``k + len(fens)`` are a pair (``np.arange(2 * len(fens)) % len(fens)``).
    """
    openings = engine.from_fens(list(fens), variant)
    return concatenate([openings, openings]), np.repeat([0, 1], len(fens))


def play_match(
    agent: Agent,
    opponent: Agent,
    variant: "Variant | str",
    num_games: int,
    rng: np.random.Generator,
    start: "State | None" = None,
    on_game_end: "Callable[[int, float, int, list[int], tuple[float, float]], None] | None" = None,
    agent_colour: "np.ndarray | None" = None,
    one_at_a_time: bool = False,
    on_game_result: "Callable[[int, MatchResult], None] | None" = None,
) -> MatchResult:
    """Play ``num_games`` games at once; ``agent`` is White in even games, Black in odd ones.

    ``start`` gives each game's starting position (default: the variant's
    start) and ``agent_colour`` ``[G]`` (0 White, 1 Black) overrides the
    alternation. ``on_game_end(game, agent_score, plies, actions, seconds)`` is
    called as each game ends, with the board actions played from its start and
    the mean seconds per full move ``agent`` and ``opponent`` took in it (a
    call for several games is shared out evenly among them);
    ``on_game_result(game, result)`` then gets that game's ``MatchResult``
    alone. The agents are called with one game at a time where either has a
    clock (a time budget per decision: it is each game's own), and with
    ``one_at_a_time`` also where neither has (a match at equal time).
    """
    variant = get_variant(variant)
    state = start if start is not None else engine.init(variant, num_games)
    colour = np.arange(state.batch_size) % 2 if agent_colour is None else np.asarray(agent_colour)
    white_result = np.zeros(state.batch_size)  # +1 White won, -1 Black won, 0 draw / truncated
    played: "list[list[int]]" = [[] for _ in range(state.batch_size)]
    seconds, moves = np.zeros((state.batch_size, 2)), np.zeros((state.batch_size, 2), np.int64)  # per game and side
    one_at_a_time = one_at_a_time or clock(agent) is not None or clock(opponent) is not None
    while not state.done.all():
        actions = np.zeros(state.batch_size, np.int64)
        for side, (player, who) in enumerate(((agent, colour), (opponent, 1 - colour))):
            turn = np.flatnonzero(~state.done & (state.current_player == who))
            moves[turn, side] += state.capturing[turn] < 0
            for games in np.split(turn, np.arange(1, turn.size)) if one_at_a_time else [turn]:
                if games.size:
                    called = time.perf_counter()
                    actions[games] = player(take(state, games), rng)
                    seconds[games, side] += (time.perf_counter() - called) / games.size
        was_done = state.done
        for g in np.flatnonzero(~was_done):
            played[g].append(int(actions[g]))
        state = engine.step(state, actions)
        ended = state.done & ~was_done
        white_result[ended] = state.rewards[ended, 0]
        for g in np.flatnonzero(ended):
            score = (white_result[g] if colour[g] == 0 else -white_result[g]) / 2 + 0.5
            if on_game_end is not None:
                mine, theirs = seconds[g] / np.maximum(moves[g], 1)
                on_game_end(int(g), float(score), int(state.ply[g]), played[g], (float(mine), float(theirs)))
            if on_game_result is not None:
                alone = MatchResult(
                    scores=np.array([score]),
                    agent_colour=colour[g : g + 1].copy(),
                    plies=state.ply[g : g + 1].copy(),
                    seconds=seconds[g].copy(),
                    moves=moves[g].copy(),
                )
                on_game_result(int(g), alone)
    agent_result = np.where(colour == 0, white_result, -white_result)
    return MatchResult(
        scores=(agent_result + 1) / 2,
        agent_colour=colour,
        plies=state.ply.copy(),
        seconds=seconds.sum(axis=0),
        moves=moves.sum(axis=0),
    )
