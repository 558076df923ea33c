"""Elo ratings by maximum likelihood (Bradley-Terry), with bootstrap confidence intervals.

Every game is a Bernoulli trial with P(A beats B) = 1 / (1 + 10^((R_B - R_A) / 400));
a draw counts as half a win each. Ratings maximise the likelihood of all
games together (scipy), with ``anchor`` fixed at 0 (self-play Elo drifts
without a fixed point). Confidence intervals come from resampling game
*pairs* (the two colours of one opening), since the games of a pair are not
independent.
"""

from __future__ import annotations

import dataclasses
import math
import statistics

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize

#: The standard normal, from the stdlib: importing scipy.stats would slow the start of every command.
NORMAL = statistics.NormalDist()

ELO = 400.0 / math.log(10.0)  # logistic scale -> Elo points


@dataclasses.dataclass
class Ratings:
    """Attributes:
    players: names, in the order of the arrays.
    elo: ``float [P]`` maximum-likelihood Elo, ``anchor`` at 0.
    low, high: ``float [P]`` bounds of the confidence interval (``level``).
    games: ``int [P]`` games played by each.
    score: ``float [P]`` mean score of each (draws half).
    """

    players: "list[str]"
    elo: np.ndarray
    low: np.ndarray
    high: np.ndarray
    games: np.ndarray
    score: np.ndarray
    anchor: str
    level: float

    def order(self) -> np.ndarray:
        return np.argsort(-self.elo, kind="stable")

    def likelihood_of_superiority(self, wins_matrix: np.ndarray, a: int, b: int) -> float:
        """LOS of player a over b from their direct games (normal approximation, draws ignored)."""
        wins, losses = wins_matrix[a, b], wins_matrix[b, a]
        if wins + losses == 0:
            return 0.5
        return float(NORMAL.cdf((wins - losses) / math.sqrt(wins + losses)))

    def table(self) -> str:
        """A text table, strongest first."""
        pct = round(100 * self.level)
        lines = [f"{'rank':>4}  {'player':<40} {'Elo':>7} {f'{pct}% CI':>17} {'games':>6} {'score':>6}"]
        for rank, i in enumerate(self.order(), start=1):
            ci = f"[{self.low[i]:+.0f}, {self.high[i]:+.0f}]"
            lines.append(
                f"{rank:>4}  {self.players[i]:<40} {self.elo[i]:>+7.0f} {ci:>17} {self.games[i]:>6} "
                f"{100 * self.score[i]:>5.1f}%"
            )
        return "\n".join(lines)

    def to_rows(self) -> "list[dict]":
        return [
            {
                "player": self.players[i],
                "elo": float(self.elo[i]),
                "ci_low": float(self.low[i]),
                "ci_high": float(self.high[i]),
                "games": int(self.games[i]),
                "score": float(self.score[i]),
            }
            for i in self.order()
        ]


def fit_elo(
    white: np.ndarray, black: np.ndarray, white_score: np.ndarray, num_players: int, anchor: int = 0
) -> np.ndarray:
    """Maximum-likelihood Elo ``[P]`` from games (player indices and White's score 1 / 0.5 / 0).

    A tiny Gaussian prior (sd 2000 Elo) keeps ratings finite for a player who
    won or lost everything.
    """
    white, black, s = np.asarray(white), np.asarray(black), np.asarray(white_score, float)

    def loss(free: np.ndarray) -> "tuple[float, np.ndarray]":
        r = np.insert(free, anchor, 0.0)
        d = r[white] - r[black]
        p = 1.0 / (1.0 + np.exp(-d))
        nll = (
            -np.sum(s * np.log(p + 1e-300) + (1 - s) * np.log(1 - p + 1e-300)) + 0.5 * np.sum(r**2) / (2000 / ELO) ** 2
        )
        g = np.zeros(num_players)
        np.add.at(g, white, p - s)
        np.add.at(g, black, s - p)
        g += r / (2000 / ELO) ** 2
        return nll, np.delete(g, anchor)

    result = minimize(loss, np.zeros(num_players - 1), jac=True, method="L-BFGS-B")
    return np.insert(result.x, anchor, 0.0) * ELO


def rate(
    players: "list[str]",
    white: ArrayLike,
    black: ArrayLike,
    white_score: ArrayLike,
    pair: ArrayLike,
    anchor: str,
    level: float = 0.95,
    bootstrap: int = 200,
    seed: int = 0,
) -> Ratings:
    """Elo of ``players`` with ``anchor`` = 0 and bootstrap intervals over game pairs ``pair`` ``[G]``."""
    if anchor not in players:
        raise ValueError(f"anchor {anchor!r} is not among the players {players}")
    a = players.index(anchor)
    white, black, s, pair = (np.asarray(x) for x in (white, black, white_score, pair))
    elo = fit_elo(white, black, s, len(players), a)
    rng = np.random.default_rng(seed)
    pairs = np.unique(pair)
    members = [np.flatnonzero(pair == p) for p in pairs]
    samples = []
    for _ in range(bootstrap):
        pick = np.concatenate([members[i] for i in rng.integers(0, len(pairs), len(pairs))])
        samples.append(fit_elo(white[pick], black[pick], s[pick], len(players), a))
    tail = (1 - level) / 2
    low, high = np.quantile(np.array(samples), [tail, 1 - tail], axis=0) if samples else (elo, elo)
    games = np.bincount(white, minlength=len(players)) + np.bincount(black, minlength=len(players))
    points = np.bincount(white, s, len(players)) + np.bincount(black, 1 - s, len(players))
    return Ratings(list(players), elo, low, high, games, points / np.maximum(games, 1), anchor, level)


def games_between(players: "list[str]", games: "list[dict]") -> "list[dict]":
    """The game records (``white``, ``black``, as tournaments write them) in which both sides are ``players``."""
    named = set(players)
    return [g for g in games if g["white"] in named and g["black"] in named]


def rate_games(players: "list[str]", games: "list[dict]", anchor: str, seed: int = 0) -> Ratings:
    """``rate`` over game records (``white``, ``black``, ``white_score``, ``pair``), those between
    ``players`` only."""
    index = {p: i for i, p in enumerate(players)}
    games = games_between(players, games)
    return rate(
        players,
        [index[g["white"]] for g in games],
        [index[g["black"]] for g in games],
        [g["white_score"] for g in games],
        [g["pair"] for g in games],
        anchor=anchor,
        seed=seed,
    )


def wilson(score: float, n: int, z: float = 1.96) -> "tuple[float, float]":
    """95% Wilson score interval of a proportion (a mean score over ``n`` games, draws as half)."""
    if n == 0:
        return 0.0, 1.0
    centre = (score + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(score * (1 - score) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def elo_difference(score: float, n: int) -> "tuple[float, float, float]":
    """Elo difference implied by a mean score over ``n`` games, and its 95% interval (Wilson).

    A score of 0 or 1 has no finite estimate: it is taken as half a game from
    the end (1 / 2n), and the interval's open end stays finite the same way.
    """
    if n < 1:
        raise ValueError("an Elo difference needs at least one game")
    edge = 0.5 / n
    to_elo = lambda s: 400.0 * math.log10(min(max(s, edge), 1 - edge) / (1 - min(max(s, edge), 1 - edge)))  # noqa: E731
    low, high = wilson(score, n)
    return to_elo(score), to_elo(low), to_elo(high)
