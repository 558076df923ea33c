"""Sequential probability ratio test on game pairs: is A at least ``elo1`` stronger than B, or at most ``elo0``?

Uses the generalised SPRT with a normal approximation of the pair scores
(as chess engine testing does): after each pair, the log-likelihood ratio of
elo1 against elo0 is compared with Wald's bounds log(beta / (1 - alpha)) and
log((1 - beta) / alpha).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np


def expected_score(elo: float) -> float:
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


@dataclasses.dataclass
class SPRT:
    """Attributes:
    elo0, elo1: the two hypotheses (Elo difference of A over B).
    alpha, beta: error rates: accepting H1 when H0 holds, and H0 when H1 holds.
    scores: per-pair mean scores of A collected so far (0, 0.25, 0.5, 0.75, 1).
    """

    elo0: float = 0.0
    elo1: float = 20.0
    alpha: float = 0.05
    beta: float = 0.05
    scores: "list[float]" = dataclasses.field(default_factory=list)

    @property
    def bounds(self) -> "tuple[float, float]":
        return math.log(self.beta / (1 - self.alpha)), math.log((1 - self.beta) / self.alpha)

    def add_pair(self, score: float) -> None:
        self.scores.append(float(score))

    def llr(self) -> float:
        """Log-likelihood ratio of H1 over H0 (normal approximation of pair scores)."""
        n = len(self.scores)
        if n < 2:
            return 0.0
        x = np.asarray(self.scores)
        mean, var = float(x.mean()), float(x.var())
        if var <= 0:
            var = 1e-3  # all pairs identical so far: keep the ratio finite
        s0, s1 = expected_score(self.elo0), expected_score(self.elo1)
        return n * (s1 - s0) * (2 * mean - s0 - s1) / (2 * var)

    def status(self) -> str:
        """"H1" (A is better by elo1), "H0" (not better than elo0) or "continue"."""
        low, high = self.bounds
        llr = self.llr()
        return "H1" if llr >= high else "H0" if llr <= low else "continue"
