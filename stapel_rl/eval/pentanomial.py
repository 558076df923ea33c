"""Pentanomial statistics of colour-swapped game pairs, as engine testing (fishtest) uses them.

The two games of a pair share an opening, so they are not independent: what
is independent is the pair. A pair scores 0, 0.5, 1, 1.5 or 2 points, and the
counts of the five outcomes (the *pentanomial*) carry all the match says:

- the score is the mean per game; its interval holds the means whose most
  likely pentanomial distribution the counts do not reject (a profile
  likelihood interval: for many pairs it is the normal interval from the
  variance of the pair scores, smaller than the game-by-game trinomial one
  when openings favour one colour, which is the point of pairing; for few
  pairs or one-sided results it stays honest where the normal one collapses
  to a point);
- the Elo difference is the logistic transform of the score, its interval the
  transform of the score's;
- the generalised SPRT compares the likelihood of the counts under the two
  hypotheses, each the multinomial of greatest likelihood whose mean is the
  hypothesis' expected score (fishtest's GSPRT).
"""

from __future__ import annotations

import dataclasses
import math
import statistics

import numpy as np
from scipy.optimize import brentq

#: The standard normal, from the stdlib: importing scipy.stats would slow the start of every command.
NORMAL = statistics.NormalDist()

#: Points a pair can score, as the mean per game of its two games.
PAIR_SCORES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
#: Pseudo-count added to every outcome in the GSPRT, so that an outcome not seen yet keeps a
#: probability above 0 (fishtest regularises the same way).
PRIOR = 1e-3


def expected_score(elo: float) -> float:
    """Expected score per game of a player ``elo`` points stronger (logistic)."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def elo_of(score: float) -> float:
    """Logistic Elo difference of a score per game, +-inf at 1 and 0."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def counts_of(pair_points: "np.ndarray | list[float]") -> np.ndarray:
    """``int [5]`` pairs scoring 0, 0.5, 1, 1.5, 2 points, from each pair's points (0..2)."""
    index = np.rint(2 * np.asarray(pair_points, dtype=float)).astype(int)
    if index.size and (index.min() < 0 or index.max() > 4):
        raise ValueError("a pair scores between 0 and 2 points")
    return np.bincount(index, minlength=5)


@dataclasses.dataclass(frozen=True)
class Pentanomial:
    """Outcomes of colour-swapped pairs.

    Attributes:
        counts: ``int [5]`` pairs that scored 0, 0.5, 1, 1.5, 2 points.
    """

    counts: np.ndarray

    @classmethod
    def of(cls, pair_points: "np.ndarray | list[float]") -> "Pentanomial":
        return cls(counts_of(pair_points))

    @property
    def pairs(self) -> int:
        return int(self.counts.sum())

    @property
    def score(self) -> float:
        """Mean score per game, in [0, 1]."""
        return float(self.counts @ PAIR_SCORES / max(self.pairs, 1))

    def stderr(self) -> float:
        """Standard error of ``score`` from the spread of the pair scores."""
        n = self.pairs
        if n < 2:
            return 0.5
        variance = float(self.counts @ (PAIR_SCORES - self.score) ** 2) / n
        return math.sqrt(variance / n)

    def interval(self, level: float = 0.95) -> "tuple[float, float]":
        """Confidence interval of ``score``: the means ``m`` with 2 log LR(observed / best with mean m) <= z^2."""
        if self.pairs == 0:
            return 0.0, 1.0
        z2 = float(NORMAL.inv_cdf(0.5 + level / 2)) ** 2
        frequencies = self._regularised()
        centre = float(frequencies @ PAIR_SCORES)

        def excess(mean: float) -> float:
            p = _closest_with_mean(frequencies, mean)
            return 2.0 * self.pairs * float(frequencies @ np.log(frequencies / p)) - z2

        ends = []
        for edge in (1e-9, 1.0 - 1e-9):
            ends.append(edge if excess(edge) <= 0 else brentq(excess, min(edge, centre), max(edge, centre)))
        low, high = ends
        # The pseudo-counts pull the centre a hair off the observed score: keep it inside.
        return min(low, self.score), max(high, self.score)

    def elo(self) -> float:
        return elo_of(self.score)

    def elo_interval(self, level: float = 0.95) -> "tuple[float, float]":
        low, high = self.interval(level)
        return elo_of(low), elo_of(high)

    def llr(self, elo0: float, elo1: float) -> float:
        """Log-likelihood ratio of H1 (Elo difference ``elo1``) over H0 (``elo0``): the GSPRT."""
        if self.pairs == 0:
            return 0.0
        frequencies = self._regularised()
        p0 = _closest_with_mean(frequencies, expected_score(elo0))
        p1 = _closest_with_mean(frequencies, expected_score(elo1))
        return float(self.pairs * frequencies @ (np.log(p1) - np.log(p0)))

    def _regularised(self) -> np.ndarray:
        """Outcome frequencies with ``PRIOR`` added to every count (none exactly 0)."""
        return (self.counts + PRIOR) / (self.pairs + 5 * PRIOR)

    def summary(self, level: float = 0.95) -> str:
        """One line: the score and the Elo difference with their intervals, then the counts."""
        low, high = self.interval(level)
        elo_low, elo_high = self.elo_interval(level)
        return (
            f"score {100 * self.score:.1f}% [{100 * low:.1f}%, {100 * high:.1f}%], Elo {_signed(self.elo())} "
            f"[{_signed(elo_low)}, {_signed(elo_high)}] ({round(100 * level)}% CI, pentanomial); "
            f"pairs 0/0.5/1/1.5/2: {' '.join(str(int(c)) for c in self.counts)}"
        )


def _signed(elo: float) -> str:
    if not math.isfinite(elo):
        return "+inf" if elo > 0 else "-inf"
    text = f"{elo:+.0f}"
    return "+0" if text == "-0" else text


def _closest_with_mean(frequencies: np.ndarray, mean: float) -> np.ndarray:
    """The distribution over ``PAIR_SCORES`` with mean ``mean`` that makes ``frequencies`` most likely.

    Maximising sum f_i log p_i under sum p_i = 1 and sum p_i a_i = mean gives
    p_i = f_i / (1 + lam (a_i - mean)), with lam the root of sum p_i (a_i - mean) = 0.
    """
    d = PAIR_SCORES - mean
    # lam keeps every 1 + lam d_i > 0: between -1/max(d) and -1/min(d) (d has both signs for 0 < mean < 1).
    low, high = -1.0 / d.max(), -1.0 / d.min()
    margin = 1e-9 * (high - low)
    lam = brentq(lambda x: float(np.sum(frequencies * d / (1.0 + x * d))), low + margin, high - margin)
    p = frequencies / (1.0 + lam * d)
    return p / p.sum()
