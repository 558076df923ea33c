"""Gumbel AlphaZero at the roots: sequential halving over the Gumbel top-k actions.

The schedule of visits (``considered_visits``) and ``Root``, which keeps
per-action arrays so that each simulation's root choice reads few columns;
the scores are those of ``gumbel`` (same float32 numbers as the plain
formulas in tests/mcts/test_reference_formulas.py).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from stapel_rl.mcts.qtransforms import NEG_INF, POS_INF, SPAN_FLOOR, log_prior, mixed_value, sigma_coefficient
from stapel_rl.mcts.tree import Tree


# Bounded: searches by time ask for a different simulation count at every move.
@functools.lru_cache(maxsize=256)
def considered_visits(num_considered: int, num_simulations: int) -> np.ndarray:
    """``int [num_simulations]``: the visit count the root action of each simulation must have.

    Sequential halving: each phase gives every remaining action an equal share
    of ``n / (log2 m * remaining)`` visits, then keeps the better half. Choosing,
    at simulation k, the best action among those with exactly ``table[k]``
    visits reproduces that schedule.
    """
    if num_considered <= 1:
        return np.arange(num_simulations)
    phases = max(1, math.ceil(math.log2(num_considered)))
    visits = [0] * num_considered
    sequence: "list[int]" = []
    remaining = num_considered
    while len(sequence) < num_simulations:
        rounds = max(1, num_simulations // (phases * remaining))
        for _ in range(rounds):
            sequence.extend(visits[:remaining])
            visits[:remaining] = [v + 1 for v in visits[:remaining]]
        remaining = max(2, remaining // 2)
    return np.array(sequence[:num_simulations])


@functools.lru_cache(maxsize=256)
def considered_table(max_considered: int, num_simulations: int) -> np.ndarray:
    """``int [max_considered + 1, num_simulations]``: row m is ``considered_visits(m, ...)``."""
    return np.stack([considered_visits(m, num_simulations) for m in range(max_considered + 1)])


@dataclasses.dataclass
class Root:
    """Sequential halving at the roots of the F games with a choice there, for one search.

    Each simulation changes one root child per game, so instead of rescoring
    all A actions every time (what mctx avoids too), the root keeps per-action
    arrays in which ``update`` refreshes only that child. After its first
    phase a game's candidates are among the M actions it has visited
    (``considered``), so scoring reads M columns, not A.

    Attributes:
        games: ``int64 [F]`` the games (root live, with two or more legal actions).
        score: ``float32 [F, A]`` Gumbel noise + prior logits, -inf on illegal actions.
        fresh_score: ``float32 [F, A]`` ``score`` where this search has not visited the action, else -inf.
        targets: ``int64 [F, S]`` this search's visit count required of each simulation's root action.
        base_visits: ``int32 [F, A]`` root child visits inherited from a reused subtree.
        inherited: ``bool [F]`` the game inherited visits.
        prior: ``float32 [F, A]`` the root prior.
        prior_visited: ``float32 [F, A]`` prior of visited children, else 0; ``visited_prior``
            ``float32 [F]`` its row sums.
        prior_q: ``float32 [F, A]`` prior * Q of visited children, else 0.
        q_low, q_high: ``float32 [F, A]`` Q of visited children, else +inf / -inf.
        num_visited, num_legal: ``int64 [F]`` visited children, legal actions.
        max_visits: ``int32 [F]`` most visits of one child.
        considered: ``int64 [F, M]`` the actions this search visited, ascending (ties go to the
            lowest), padded with the last; filled when a game leaves the first phase
            (``has_considered`` ``bool [F]``). ``considered_at`` ``int64 [F, M]``: their flat index
            in the tree's ``[B, N, A]`` arrays; ``considered_base`` ``int32 [F, M]``, ``considered_score``
            ``float32 [F, M]``: ``base_visits``, ``score`` there.
        chosen: ``int64 [F]`` the actions of the last ``select``.
        c_visit, c_scale, min_span: sigma's constants (``SearchConfig``).
    """

    games: np.ndarray
    score: np.ndarray
    fresh_score: np.ndarray
    targets: np.ndarray
    base_visits: np.ndarray
    inherited: np.ndarray
    prior: np.ndarray
    prior_visited: np.ndarray
    visited_prior: np.ndarray
    prior_q: np.ndarray
    q_low: np.ndarray
    q_high: np.ndarray
    num_visited: np.ndarray
    num_legal: np.ndarray
    max_visits: np.ndarray
    considered: np.ndarray
    considered_at: np.ndarray
    considered_base: np.ndarray
    considered_score: np.ndarray
    has_considered: np.ndarray
    chosen: np.ndarray
    c_visit: float
    c_scale: float
    min_span: float = float(SPAN_FLOOR)

    @classmethod
    def start(
        cls,
        tree: Tree,
        gumbel: np.ndarray,
        base_visits: np.ndarray,
        max_considered: int,
        num_simulations: int,
        c_visit: float,
        c_scale: float,
        min_span: float = float(SPAN_FLOOR),
    ) -> "Root":
        """The root state before the first simulation; ``gumbel``: ``[B, A]`` noise, -inf on illegal actions."""
        games = np.flatnonzero(tree.forced[:, 0] == -1)
        visits = tree.children_visits[games, 0]
        q = tree.children_values[games, 0]
        prior = tree.children_prior[games, 0]
        visited = visits > 0
        score = gumbel[games] + log_prior(tree, games, np.zeros(games.size, np.int64))
        num_legal = tree.num_legal[games, 0].astype(np.int64)
        prior_visited = np.where(visited, prior, 0)
        m = (games.size, max(1, min(max_considered, score.shape[1])))
        return cls(
            games=games,
            score=score,
            fresh_score=score.copy(),
            targets=considered_table(max_considered, num_simulations)[np.minimum(num_legal, max_considered)],
            base_visits=base_visits[games],
            inherited=visited.any(axis=1),
            prior=prior,
            prior_visited=prior_visited,
            visited_prior=prior_visited.sum(axis=1),
            prior_q=np.where(visited, prior * q, 0),
            q_low=np.where(visited, q, POS_INF),
            q_high=np.where(visited, q, NEG_INF),
            num_visited=visited.sum(axis=1),
            num_legal=num_legal,
            max_visits=visits.max(axis=1, initial=0),
            considered=np.zeros(m, np.int64),
            considered_at=np.zeros(m, np.int64),
            considered_base=np.zeros(m, np.int32),
            considered_score=np.zeros(m, np.float32),
            has_considered=np.zeros(games.size, bool),
            chosen=np.zeros(games.size, np.int64),
            c_visit=c_visit,
            c_scale=c_scale,
            min_span=min_span,
        )

    def _scales(self, tree: Tree) -> "tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]":
        """Mixed value, min completed Q, its span (at least ``min_span``) and sigma's coefficient, each ``[F]``."""
        total = (tree.node_visits[self.games, 0] - 1).astype(np.float32)
        mixed = mixed_value(tree.raw_values[self.games, 0], total, self.visited_prior, self.prior_q.sum(axis=1))
        some_unvisited = self.num_visited < self.num_legal
        low, high = self.q_low.min(axis=1), self.q_high.max(axis=1)
        low = np.where(some_unvisited, np.minimum(low, mixed), low)
        high = np.where(some_unvisited, np.maximum(high, mixed), high)
        coef = sigma_coefficient(self.c_visit, self.c_scale, self.max_visits.astype(np.float32))
        return mixed, low, np.maximum(high - low, np.float32(self.min_span)), coef

    def select(self, tree: Tree, simulation: "int | np.ndarray") -> np.ndarray:
        """Root action ``[F]`` of simulation number ``simulation`` (or ``int [B]``: each game's): the best
        by ``g + logits + sigma(Q)`` among the actions this search has visited ``targets[:, simulation]`` times."""
        if isinstance(simulation, np.ndarray):
            at = np.minimum(simulation[self.games], self.targets.shape[1] - 1)
            target = self.targets[np.arange(self.games.size), at]
        else:
            target = self.targets[:, simulation]
        mixed, low, span, coef = self._scales(tree)
        first = target == 0
        # First phase without inherited visits: every candidate is unvisited, so all share one sigma.
        plain = np.flatnonzero(first & ~self.inherited)
        if plain.size:
            sigma = coef[plain] * ((mixed[plain] - low[plain]) / span[plain])
            self.chosen[plain] = (self.fresh_score[plain] + sigma[:, None]).argmax(axis=1)
        mixed_rows = np.flatnonzero(first & self.inherited)
        if mixed_rows.size:
            r = mixed_rows
            # q_low holds the visited children's Q (``update`` keeps it), +inf at the others.
            q = self.q_low[r]
            completed = np.where(q == POS_INF, mixed[r, None], q)
            sigma = coef[r, None] * ((completed - low[r, None]) / span[r, None])
            self.chosen[r] = (self.fresh_score[r] + sigma).argmax(axis=1)
        later = np.flatnonzero(~first)
        if later.size:
            self.chosen[later] = self._best_considered(tree, later, target[later], low, span, coef)
        return self.chosen

    def final_action(self, tree: Tree) -> np.ndarray:
        """``[B]`` the best of the root actions this search visited most, by ``g + logits + sigma(Q)``;
        the only one where the root is forced, 0 where the game is over."""
        action = np.maximum(tree.forced[:, 0], 0).astype(np.int64)
        if self.games.size:
            _, low, span, coef = self._scales(tree)
            rows = np.arange(self.games.size)
            self._fill_considered(tree, rows[~self.has_considered])
            most = (tree.children_visits.ravel()[self.considered_at] - self.considered_base).max(axis=1)
            action[self.games] = self._best_considered(tree, rows, most, low, span, coef)
        return action

    def _best_considered(
        self, tree: Tree, rows: np.ndarray, target: np.ndarray, low: np.ndarray, span: np.ndarray, coef: np.ndarray
    ) -> np.ndarray:
        """Of the considered actions of ``rows`` visited ``target`` times by this search, the best by score."""
        self._fill_considered(tree, rows[~self.has_considered[rows]])
        at = self.considered_at[rows]
        this_visits = tree.children_visits.ravel()[at] - self.considered_base[rows]
        # Visited children: their completed Q is their own.
        sigma = coef[rows, None] * ((tree.children_values.ravel()[at] - low[rows, None]) / span[rows, None])
        score = np.where(this_visits == target[:, None], self.considered_score[rows] + sigma, NEG_INF)
        return self.considered[rows, score.argmax(axis=1)]

    def _fill_considered(self, tree: Tree, rows: np.ndarray) -> None:
        """Record the actions ``rows`` visited in this search: no new ones come after the first phase."""
        if not rows.size:
            return
        row, col = np.nonzero(tree.children_visits[self.games[rows], 0] > self.base_visits[rows])  # ascending
        count = np.bincount(row, minlength=rows.size)
        start = np.cumsum(count) - count
        # Padding repeats the last (largest) visited action: the columns stay ascending.
        slot = np.minimum(np.arange(self.considered.shape[1]), np.maximum(count - 1, 0)[:, None])
        cols = col[np.minimum(start[:, None] + slot, col.size - 1)]
        self.considered[rows] = cols
        self.considered_at[rows] = (self.games[rows, None] * tree.capacity) * tree.children_prior.shape[2] + cols
        here = rows[:, None] * self.score.shape[1] + cols  # in the [F, A] arrays
        self.considered_base[rows] = self.base_visits.ravel()[here]
        self.considered_score[rows] = self.score.ravel()[here]
        self.has_considered[rows] = True

    def resync(self, tree: Tree) -> None:
        """All arrays from the tree, as ``update`` keeps them (after ``lanes`` restored virtual visits)."""
        visits = tree.children_visits[self.games, 0]
        q = tree.children_values[self.games, 0]
        visited = visits > 0
        self.prior_visited = np.where(visited, self.prior, 0)
        self.visited_prior = self.prior_visited.sum(axis=1)
        self.prior_q = np.where(visited, self.prior * q, 0)
        self.q_low = np.where(visited, q, POS_INF)
        self.q_high = np.where(visited, q, NEG_INF)
        self.num_visited = visited.sum(axis=1)
        self.max_visits = visits.max(axis=1, initial=0)
        self.fresh_score = np.where(visits > self.base_visits, NEG_INF, self.score)

    def update(self, tree: Tree) -> None:
        """Refresh the arrays at the child each game's last simulation went through (after backup)."""
        num_actions = tree.children_prior.shape[2]
        at = (self.games * tree.capacity) * num_actions + self.chosen  # in the tree's [B, N, A] arrays
        here = np.arange(self.games.size) * num_actions + self.chosen  # in the [F, A] arrays
        q = tree.children_values.ravel()[at]
        prior = self.prior.ravel()[here]
        new = np.flatnonzero(self.q_low.ravel()[here] == POS_INF)
        if new.size:
            self.num_visited[new] += 1
            self.prior_visited.ravel()[here[new]] = prior[new]
            self.visited_prior[new] = self.prior_visited[new].sum(axis=1)
        self.prior_q.ravel()[here] = prior * q
        self.q_low.ravel()[here] = q
        self.q_high.ravel()[here] = q
        self.max_visits = np.maximum(self.max_visits, tree.children_visits.ravel()[at])
        self.fresh_score.ravel()[here] = NEG_INF
