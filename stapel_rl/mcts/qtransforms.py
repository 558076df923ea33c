"""Shared numbers and transforms of the search's values: infinities, the masked softmax of a
policy, the prior's logits, and Gumbel's completed Q (its value of unvisited children and sigma's scale).

PUCT, Gumbel's interior selection and the halving root all read them from here.
"""

from __future__ import annotations

import numpy as np

from stapel_rl.mcts.tree import Tree

NEG_INF = np.float32(-np.inf)
POS_INF = np.float32(np.inf)
TINY_PRIOR = np.float32(1e-30)
SMALLEST = np.finfo(np.float32).smallest_subnormal
#: The least span of completed Q that sigma divides by, unless the search says another (``SearchConfig.min_span``).
SPAN_FLOOR = np.float32(1e-8)


def log_prior(tree: Tree, games: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Prior logits ``[G, A]`` (log of the stored prior; -inf on illegal actions)."""
    prior = tree.children_prior[games, nodes]
    with np.errstate(divide="ignore"):
        return np.where(tree.legal[games, nodes], np.log(np.maximum(prior, TINY_PRIOR)), NEG_INF).astype(np.float32)


def mixed_value(raw: np.ndarray, total: np.ndarray, visited_prior: np.ndarray, weighted_q: np.ndarray) -> np.ndarray:
    """The completed Q of unvisited children ``[G]``: raw value and prior-weighted visited Q, mixed by visits.

    ``weighted_q`` is 0 wherever ``visited_prior`` is (priors are >= 0), so
    dividing by at least the smallest float32 is the guarded division without
    a slower masked ``np.divide``.
    """
    return (raw + total * (weighted_q / np.maximum(visited_prior, SMALLEST))) / (1 + total)


def sigma_coefficient(c_visit: float, c_scale: float, max_visits: np.ndarray) -> np.ndarray:
    """``(c_visit + max visits) * c_scale`` ``[G]``, in float32 (``max_visits`` float32) as sigma's reference."""
    return (c_visit + max_visits) * c_scale


def masked_softmax(logits: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Probabilities ``[B, A]`` over legal actions; rows without legal actions are all 0."""
    z = np.where(legal, logits, -np.inf)
    top = np.max(z, axis=1, keepdims=True, initial=-np.inf)
    e = np.where(legal, np.exp(z - np.where(np.isfinite(top), top, 0)), 0.0)
    total = e.sum(axis=1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0).astype(np.float32)
