"""AlphaZero's PUCT: in-tree selection, root Dirichlet noise, visit-count policy; ``PUCT`` for ``search``."""

from __future__ import annotations

import dataclasses

import numpy as np

from stapel_rl.mcts.config import SearchConfig
from stapel_rl.mcts.tree import Tree


def select(tree: Tree, games: np.ndarray, nodes: np.ndarray, c_puct: float, tie_noise: np.ndarray) -> np.ndarray:
    """PUCT action ``[G]`` at ``nodes`` of ``games``: argmax Q + c P sqrt(N) / (1 + n).

    Unvisited children take the node's own value (first-play urgency), which
    keeps a strong node exploring its best-looking children first.
    ``tie_noise`` ``[B, A]`` (tiny, per search) breaks ties reproducibly.
    """
    visits = tree.children_visits[games, nodes].astype(np.float32)  # float32 throughout: float64 is 2x slower
    # Illegal children hold ILLEGAL_VALUE (set at expansion), which keeps them out without a mask.
    score = tree.children_values[games, nodes]
    score += (visits == 0) * tree.node_values[games, nodes][:, None]
    coef = (c_puct * np.sqrt(np.maximum(tree.node_visits[games, nodes], 1))).astype(np.float32)[:, None]
    visits += np.float32(1)
    score += coef * tree.children_prior[games, nodes] / visits
    score += tie_noise[games]
    return score.argmax(axis=1)


def dirichlet_noise(
    prior: np.ndarray, legal: np.ndarray, alpha: float, fraction: float, rng: np.random.Generator
) -> np.ndarray:
    """``(1 - fraction) * prior + fraction * Dir(alpha)`` over each row's legal actions."""
    gamma = rng.gamma(alpha, size=prior.shape).astype(np.float32) * legal
    total = gamma.sum(axis=1, keepdims=True)
    noise = np.divide(gamma, total, out=np.zeros_like(gamma), where=total > 0)
    return ((1.0 - fraction) * prior + fraction * noise).astype(np.float32)


def visit_policy(visits: np.ndarray, temperature: float) -> np.ndarray:
    """Visit counts ``[B, A]`` to probabilities ``N^(1/T)``; T = 0 puts all mass on the most visited."""
    visits = visits.astype(np.float64)
    if temperature <= 0:
        best = visits == visits.max(axis=1, keepdims=True)
        policy = best & (visits > 0)
    else:
        policy = visits ** (1.0 / temperature)
    total = policy.sum(axis=1, keepdims=True)
    return np.divide(policy, total, out=np.zeros(visits.shape), where=total > 0).astype(np.float32)


@dataclasses.dataclass
class PUCT:
    """PUCT's selection functions for ``search``: the same rule at the roots and inside the trees.

    Attributes:
        c_puct: the exploration constant.
        temperature: of the final move choice (``visit_policy``).
        tie_noise: ``float32 [B, A]`` tiny per-search noise that breaks ties.
        forced: ``tree.forced`` (each node's only action, -1 where there is a choice, -2 over).
    """

    c_puct: float
    temperature: float
    tie_noise: np.ndarray
    forced: np.ndarray

    @classmethod
    def start(cls, tree: Tree, config: SearchConfig, rng: np.random.Generator, base_visits: np.ndarray) -> "PUCT":
        """Tie noise, and Dirichlet noise mixed into the roots' prior (``config.dirichlet_fraction`` > 0)."""
        legal = tree.legal[:, 0]
        noise = (rng.random((tree.batch_size, legal.shape[1]), dtype=np.float32) * 1e-6).astype(np.float32)
        if config.dirichlet_fraction > 0:
            tree.children_prior[:, 0] = dirichlet_noise(
                tree.children_prior[:, 0], legal, config.dirichlet_alpha, config.dirichlet_fraction, rng
            )
        return cls(config.c_puct, config.temperature, noise, tree.forced)

    def node_actions(self) -> np.ndarray:
        return self.forced

    def select_roots(self, tree: Tree, simulation: "int | np.ndarray", action: np.ndarray) -> None:
        free = np.flatnonzero(action == -1)
        if free.size:
            action[free] = select(tree, free, np.zeros(free.size, np.int64), self.c_puct, self.tie_noise)

    def select_interior(self, tree: Tree, games: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        return select(tree, games, nodes, self.c_puct, self.tie_noise)

    def expanded(
        self,
        tree: Tree,
        games: np.ndarray,
        nodes: np.ndarray,
        forced: np.ndarray,
        live: np.ndarray,
        prior: "np.ndarray | None",
    ) -> None:
        """PUCT keeps nothing per node beyond the tree."""

    def simulated(self, tree: Tree, first: int, games: np.ndarray, nodes: np.ndarray) -> None:
        """PUCT keeps nothing per node beyond the tree."""

    def placed(self, tree: Tree, games: np.ndarray, nodes: np.ndarray) -> None:
        """The descent reads ``tree.forced``; the node's own ``write_states`` sets it when it is expanded."""
        self.forced[games, nodes] = -2

    def resync(self, tree: Tree, nodes: np.ndarray) -> None:
        """PUCT keeps nothing per node beyond the tree."""

    def choose(self, tree: Tree, rng: np.random.Generator) -> "tuple[np.ndarray, np.ndarray, np.ndarray]":
        """A move sampled from the visits at the temperature; the policy target is the visit distribution."""
        visits = tree.children_visits[:, 0]
        legal = tree.legal[:, 0]
        policy = visit_policy(visits, 1.0)
        choice = visit_policy(visits, self.temperature)
        u = rng.random((tree.batch_size, 1))
        action = np.minimum((np.cumsum(choice, axis=1) < u).sum(axis=1), legal.shape[1] - 1)
        action = np.where(choice.sum(axis=1) > 0, action, legal.argmax(axis=1))
        return action, policy, tree.node_values[:, 0].copy()
