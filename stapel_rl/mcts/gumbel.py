"""Gumbel AlphaZero (Danihelka et al., 2022): Gumbel top-k, sequential halving, completed Q.

At the root, m actions are sampled without replacement by Gumbel top-k on the
prior logits and the simulation budget is spread over them by sequential
halving; inside the tree actions are chosen deterministically to move the
visit distribution towards the improved policy ``softmax(logits + sigma(q))``,
which is also the training target. The policy improves even with a handful
of simulations.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from stapel_rl.mcts.tree import Tree

NEG_INF = np.float32(-np.inf)


@functools.lru_cache(maxsize=None)
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


@functools.lru_cache(maxsize=None)
def considered_table(max_considered: int, num_simulations: int) -> np.ndarray:
    """``int [max_considered + 1, num_simulations]``: row m is ``considered_visits(m, ...)``."""
    return np.stack([considered_visits(m, num_simulations) for m in range(max_considered + 1)])


def log_prior(tree: Tree, games: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Prior logits ``[G, A]`` (log of the stored prior; -inf on illegal actions)."""
    prior = tree.children_prior[games, nodes]
    with np.errstate(divide="ignore"):
        return np.where(tree.legal[games, nodes], np.log(np.maximum(prior, 1e-30)), NEG_INF).astype(np.float32)


def sigma_completed_q(
    tree: Tree, games: np.ndarray, nodes: np.ndarray, c_visit: float, c_scale: float
) -> np.ndarray:
    """``sigma(completed Q)`` ``[G, A]``: visited children keep their Q, the others get the mixed value.

    Q is rescaled to [0, 1] by the node's min and max, then scaled by
    ``(c_visit + max visits) * c_scale`` as in the paper.
    """
    visits = tree.children_visits[games, nodes].astype(np.float32)
    q = tree.children_values[games, nodes]
    prior = tree.children_prior[games, nodes]
    legal = tree.legal[games, nodes]
    total = visits.sum(axis=1)
    visited_prior = np.where(visits > 0, prior, 0).sum(axis=1)
    weighted_q = np.where(visits > 0, prior * q, 0).sum(axis=1)
    policy_q = np.divide(weighted_q, visited_prior, out=np.zeros_like(weighted_q), where=visited_prior > 0)
    mixed = (tree.raw_values[games, nodes] + total * policy_q) / (1.0 + total)
    completed = np.where(visits > 0, q, mixed[:, None])
    low = np.where(legal, completed, np.inf).min(axis=1, keepdims=True)
    high = np.where(legal, completed, -np.inf).max(axis=1, keepdims=True)
    scaled = (completed - low) / np.maximum(high - low, 1e-8)
    return ((c_visit + visits.max(axis=1, keepdims=True)) * c_scale * scaled).astype(np.float32)


def improved_policy(tree: Tree, games: np.ndarray, nodes: np.ndarray, c_visit: float, c_scale: float) -> np.ndarray:
    """``softmax(logits + sigma(completed Q))`` ``[G, A]`` over legal actions (0 elsewhere)."""
    z = log_prior(tree, games, nodes) + sigma_completed_q(tree, games, nodes, c_visit, c_scale)
    z = z - np.max(z, axis=1, keepdims=True, initial=-1e30, where=np.isfinite(z))
    e = np.where(np.isfinite(z), np.exp(z), 0.0)
    total = e.sum(axis=1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0).astype(np.float32)


def select_interior(tree: Tree, games: np.ndarray, nodes: np.ndarray, c_visit: float, c_scale: float) -> np.ndarray:
    """Deterministic in-tree action: argmax of improved policy minus visit share."""
    policy = improved_policy(tree, games, nodes, c_visit, c_scale)
    visits = tree.children_visits[games, nodes].astype(np.float32)
    share = visits / (1.0 + visits.sum(axis=1, keepdims=True))
    return np.where(tree.legal[games, nodes], policy - share, NEG_INF).argmax(axis=1)


def root_scores(tree: Tree, gumbel: np.ndarray, c_visit: float, c_scale: float) -> np.ndarray:
    """``g + logits + sigma(Q)`` ``[B, A]`` at the roots (-inf on illegal actions)."""
    games = np.arange(tree.batch_size)
    roots = np.zeros(tree.batch_size, np.int64)
    return gumbel + log_prior(tree, games, roots) + sigma_completed_q(tree, games, roots, c_visit, c_scale)


def select_root(
    tree: Tree, gumbel: np.ndarray, simulation: int, max_considered: int, num_simulations: int,
    c_visit: float, c_scale: float, base_visits: "np.ndarray | None" = None,
) -> np.ndarray:
    """Sequential-halving root action ``[B]`` for simulation number ``simulation``.

    ``base_visits`` ``[B, A]``: root child visits inherited from a reused
    subtree; the halving schedule counts only the visits of this search.
    """
    table = considered_table(max_considered, num_simulations)
    target = table[np.minimum(tree.legal[:, 0].sum(axis=1), max_considered), simulation]
    visits = tree.children_visits[:, 0]
    if base_visits is not None:
        visits = visits - base_visits
    scores = root_scores(tree, gumbel, c_visit, c_scale)
    return np.where(visits == target[:, None], scores, NEG_INF).argmax(axis=1)


def final_action(
    tree: Tree, gumbel: np.ndarray, c_visit: float, c_scale: float, base_visits: "np.ndarray | None" = None
) -> np.ndarray:
    """The best of the root actions this search visited most, by ``g + logits + sigma(Q)``."""
    visits = tree.children_visits[:, 0] - (0 if base_visits is None else base_visits)
    most = (visits == visits.max(axis=1, keepdims=True)) & tree.legal[:, 0]
    return np.where(most, root_scores(tree, gumbel, c_visit, c_scale), NEG_INF).argmax(axis=1)
