"""Sequential probability ratio test on game pairs: is A at least ``elo1`` stronger than B, or at most ``elo0``?

Uses the pentanomial generalised SPRT (as fishtest does, see
``stapel_rl.eval.pentanomial``): after each pair, the log-likelihood ratio of
elo1 against elo0 of the pair outcomes is compared with Wald's bounds
log(beta / (1 - alpha)) and log((1 - beta) / alpha).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from stapel_rl.env import Variant, engine
from stapel_rl.eval.agents import Agent, clock, make_agent
from stapel_rl.eval.arena import play_match
from stapel_rl.eval.openings import opening_fens
from stapel_rl.eval.parallel import Pool, agent_of, play_in_parallel
from stapel_rl.eval.pentanomial import Pentanomial, expected_score

__all__ = ["SPRT", "expected_score", "run_sprt"]


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

    def pentanomial(self) -> Pentanomial:
        """The pairs so far as pentanomial counts."""
        return Pentanomial.of([2 * x for x in self.scores])

    def llr(self) -> float:
        """Log-likelihood ratio of H1 over H0 (the pentanomial GSPRT)."""
        return self.pentanomial().llr(self.elo0, self.elo1)

    def status(self) -> str:
        """ "H1" (A is better by elo1), "H0" (not better than elo0) or "continue"."""
        low, high = self.bounds
        llr = self.llr()
        return "H1" if llr >= high else "H0" if llr <= low else "continue"


def run_sprt(
    a: "Agent | str",
    b: "Agent | str",
    variant: Variant,
    test: SPRT,
    batch_pairs: int,
    max_pairs: int,
    opening_plies: int,
    seed: int,
    verbose: bool = True,
    openings: str = "suite",
    one_at_a_time: bool = False,
    jobs: int = 1,
    pool: "Pool | None" = None,
    fresh: bool = False,
) -> str:
    """Play pairs until ``test`` decides; returns "H0", "H1" or "continue" (undecided).

    ``a`` and ``b`` are agents or agent specs. ``batch_pairs`` pairs are played between two looks at the
    test, in one batch where neither agent has a clock; with a clock on either side (a ``time=`` budget per
    decision of each game), or with ``one_at_a_time`` (a test at equal time), the agents are called with
    one game at a time (``play_match``). With ``jobs`` > 1, or the workers of ``pool`` (kept across tests),
    each batch's pairs are shared out among processes of one core each (``stapel_rl.eval.parallel``):
    ``a`` and ``b`` must then be specs. Specs name the process's agents (``agent_of``) or, ``fresh``,
    agents built for this test (in workers: for each task), so that node-limited games replay exactly.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    if batch_pairs < 1 or max_pairs < 1:  # no batch would ever end the test
        raise ValueError(f"batch_pairs and max_pairs must be at least 1, got {batch_pairs} and {max_pairs}")
    if pool is None and jobs > 1:
        with Pool(jobs) as workers:
            return run_sprt(
                a,
                b,
                variant,
                test,
                batch_pairs,
                max_pairs,
                opening_plies,
                seed,
                verbose=verbose,
                openings=openings,
                one_at_a_time=one_at_a_time,
                pool=workers,
            )
    if pool is not None and not (isinstance(a, str) and isinstance(b, str)):
        raise ValueError("an SPRT played in worker processes takes the agents as specs")
    build = make_agent if fresh and pool is None else agent_of  # with a pool, only the clocks are read here
    first, second = (build(x) if isinstance(x, str) else x for x in (a, b))
    one_at_a_time = one_at_a_time or (pool is not None and any(clock(x) is not None for x in (first, second)))
    rng = np.random.default_rng(seed)
    batch = 0
    while test.status() == "continue" and len(test.scores) < max_pairs:
        fens = opening_fens(
            variant, batch_pairs, openings, opening_plies, seed=seed * 7919 + batch, offset=batch * batch_pairs
        )
        if pool is not None:
            task_seed = int(rng.integers(1 << 30))
            result, _ = play_in_parallel(
                str(a), str(b), variant.name, fens, task_seed, one_at_a_time, 0, pool=pool, fresh=fresh
            )
        else:
            start = engine.from_fens([f for f in fens for _ in range(2)], variant)
            result = play_match(first, second, variant, 2 * batch_pairs, rng, start=start, one_at_a_time=one_at_a_time)
        for pair in result.scores.reshape(-1, 2):
            test.add_pair(float(pair.mean()))
        batch += 1
        if verbose:
            low, high = test.bounds
            counts = " ".join(str(int(c)) for c in test.pentanomial().counts)
            print(
                f"pairs {len(test.scores):>5}  score {100 * np.mean(test.scores):5.1f}%  "
                f"LLR {test.llr():+.2f}  bounds [{low:.2f}, {high:.2f}]  pentanomial {counts}",
                flush=True,
            )
    return test.status()
