"""In-training evaluation: the current network, searching without noise, against fixed opponents.

Random and greedy play are beaten within minutes, so a curve against them
stops moving early; the default opponents are ``greedy`` and ``alphabeta:2``,
which a one-hour agent does not yet beat reliably. Games are colour-swapped
pairs from random openings (both sides of each opening), and each score is
turned into an Elo difference to that opponent with a 95% interval (finite
at a perfect score, for TensorBoard's curves); the printed line is
``stapel-match``'s, with the pentanomial interval.
"""

from __future__ import annotations

import dataclasses
import re
import time

import numpy as np

from stapel_rl.env.variants import Variant
from stapel_rl.eval.agents import Agent, make_agent
from stapel_rl.eval.arena import paired_openings, play_match
from stapel_rl.eval.ratings import elo_difference


@dataclasses.dataclass
class EvalResult:
    """Attributes:
    opponent: the opponent's agent spec.
    score: mean score of the network's agent in [0, 1] (draws half).
    games: games played.
    elo, elo_low, elo_high: Elo difference to the opponent and its 95% interval (``elo_difference``).
    seconds: wall time of the match.
    text: the result as ``MatchResult.summary`` writes it.
    """

    opponent: str
    score: float
    games: int
    elo: float
    elo_low: float
    elo_high: float
    seconds: float
    text: str = ""

    def scalars(self) -> "dict[str, float]":
        """TensorBoard scalars ``eval/score_vs_<opponent>``, ``eval/elo_vs_<opponent>`` (+ interval)."""
        name = tag_name(self.opponent)
        return {
            f"eval/score_vs_{name}": self.score,
            f"eval/elo_vs_{name}": self.elo,
            f"eval/elo_vs_{name}_low": self.elo_low,
            f"eval/elo_vs_{name}_high": self.elo_high,
        }


def tag_name(spec: str) -> str:
    """An agent spec as a TensorBoard tag part (``alphabeta:2`` -> ``alphabeta_2``)."""
    return re.sub(r"[^\w.\-]", "_", spec)


def make_opponents(specs: "list[str]") -> "dict[str, Agent]":
    """Agents for the opponent specs; a bad spec raises ``ValueError`` naming it (checked at start-up)."""
    opponents = {}
    for spec in specs:
        try:
            opponents[spec] = make_agent(spec)
        except ValueError as error:
            raise ValueError(f"train.eval_opponents: {error}") from None
    return opponents


def evaluate(
    agent: Agent,
    opponents: "dict[str, Agent]",
    variant: Variant,
    games: int,
    rng: np.random.Generator,
    opening_plies: int = 4,
) -> "list[EvalResult]":
    """``agent`` against each opponent: ``games`` games (rounded up to pairs) from random openings."""
    pairs = max(1, (games + 1) // 2)
    results = []
    for spec, opponent in opponents.items():
        start = time.perf_counter()
        openings, colour = paired_openings(variant, pairs, opening_plies, rng)
        match = play_match(agent, opponent, variant, 2 * pairs, rng, start=openings, agent_colour=colour)
        pair = np.arange(2 * pairs) % pairs  # paired_openings: game k and game k + pairs
        elo, low, high = elo_difference(match.score, 2 * pairs)
        seconds = time.perf_counter() - start
        results.append(EvalResult(spec, match.score, 2 * pairs, elo, low, high, seconds, match.summary(pair)))
    return results
