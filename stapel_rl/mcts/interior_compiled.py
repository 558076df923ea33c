"""Gumbel's in-tree choice (``gumbel.Interior.choose``), compiled (numba).

Compiled because the choice is made at every level where a step's lanes meet
(each later lane chooses again after the earlier ones' virtual loss): array
code would pay a few dozen calls per choice whatever the number of nodes.
Each node's choice is a loop over its few children in float32: sums over the
visited children in float64 in the order of their node index, the row of
unvisited priors summed pairwise, ``exp``/``log`` in float64 rounded once
(``numpy_rounding``). tests/mcts/test_reference_formulas.py holds every choice
within 1e-6 of the best score of the plain formulas (the paper's, over the
whole row) and the counts it keeps equal to a recount.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from stapel_rl.mcts.numpy_rounding import exp32_scalar, log32_scalar, mixed_value_scalar, pairwise_sum
from stapel_rl.mcts.qtransforms import NEG_INF, POS_INF, TINY_PRIOR


@njit(cache=True, nogil=True)
def _children(x, a, children_index, actions, nodes):
    """The children of flat node ``x`` into ``actions``/``nodes`` (local), by node index; their count."""
    count = 0
    for action in range(a):
        child = children_index[x * a + action]
        if child >= 0:
            # Insertion by node index, the order the children were made in: sums do not depend on actions.
            i = count
            while i > 0 and nodes[i - 1] > child:
                nodes[i], actions[i] = nodes[i - 1], actions[i - 1]
                i -= 1
            nodes[i], actions[i] = child, action
            count += 1
    return count


@njit(cache=True, nogil=True)
def _recount_unvisited(x, a, count, actions, children_prior, num_legal, legal, best, best_prior, mass, row):
    """At flat node ``x``: the first unvisited child of highest prior (where every unvisited legal prior
    underflowed to 0, the first unvisited legal one), its prior and the unvisited children's total prior;
    ``row`` is scratch of ``a`` float32."""
    for action in range(a):
        row[action] = children_prior[x * a + action]
    for k in range(count):
        row[actions[k]] = 0
    top = 0
    for action in range(1, a):
        if row[action] > row[top]:
            top = action
    best_prior[x] = row[top]
    mass[x] = pairwise_sum(row, 0, a)
    if row[top] == 0 and count < num_legal[x]:  # every unvisited legal prior underflowed: the first such
        for k in range(count):
            row[actions[k]] = -1  # visited
        top = 0
        for action in range(a):
            if legal[x * a + action] and row[action] >= 0:
                top = action
                break
    best[x] = top


@njit(cache=True, nogil=True)
def choose(
    node, capacity, children_index, children_prior, children_values, node_visits, raw_values,
    num_legal, legal, best, best_prior, mass, stale, next_action, c_visit, c_scale, min_span,
):  # fmt: skip
    """``gumbel.Interior.choose`` at distinct flat nodes ``node`` with a choice: the tree's arrays and
    ``Interior``'s, all flat over ``[B, N]`` (or ``[B, N, A]``); ``c_visit``, ``c_scale``, ``min_span`` float32.
    Recounts the stale nodes' unvisited children, remembers and returns the actions ``int64 [G]``."""
    a = children_index.size // node_visits.size
    out = np.empty(node.size, np.int64)
    actions = np.empty(a, np.int64)
    nodes = np.empty(a, np.int64)
    z = np.empty(a, np.float32)
    row = np.empty(a, np.float32)
    for i in range(node.size):
        x = node[i]
        base = x - x % capacity
        count = _children(x, a, children_index, actions, nodes)
        if stale[x]:
            _recount_unvisited(x, a, count, actions, children_prior, num_legal, legal, best, best_prior, mass, row)
            stale[x] = False
        # The visited children's completed Q (gumbel._Visited.of), its range and sigma's coefficient.
        visits = np.float32(node_visits[x])
        prior_sum, weighted_sum = 0.0, 0.0
        for k in range(count):
            at = x * a + actions[k]
            prior_sum += np.float64(children_prior[at])
            weighted_sum += np.float64(children_prior[at] * children_values[at])
        total = visits - np.float32(1.0)
        mixed = mixed_value_scalar(raw_values[x], total, np.float32(prior_sum), np.float32(weighted_sum))
        has_unvisited = count < num_legal[x]
        low = mixed if has_unvisited else POS_INF
        high = mixed if has_unvisited else NEG_INF
        most = np.float32(0.0)
        for k in range(count):
            q = children_values[x * a + actions[k]]
            low, high = min(low, q), max(high, q)
            most = max(most, np.float32(node_visits[base + nodes[k]]))
        span = max(high - low, min_span)
        coef = (c_visit + most) * c_scale
        # Improved policy minus visit share, over the visited children and the best unvisited one.
        unvisited_sigma = coef * ((mixed - low) / span)
        clamped = max(best_prior[x], TINY_PRIOR)
        z_unvisited = log32_scalar(clamped) + unvisited_sigma if has_unvisited else NEG_INF
        top = z_unvisited
        for k in range(count):
            at = x * a + actions[k]
            z[k] = log32_scalar(max(children_prior[at], TINY_PRIOR)) + coef * ((children_values[at] - low) / span)
            top = max(top, z[k])
        exp_sum = 0.0
        for k in range(count):
            z[k] = exp32_scalar(z[k] - top)
            exp_sum += np.float64(z[k])
        weight = (exp32_scalar(unvisited_sigma - top) if has_unvisited else np.float32(0.0)) * max(mass[x], clamped)
        norm = np.float32(exp_sum) + weight
        score_unvisited = exp32_scalar(z_unvisited - top) / norm
        best_score = score_unvisited if has_unvisited else NEG_INF
        for k in range(count):
            z[k] = z[k] / norm - np.float32(node_visits[base + nodes[k]]) / visits
            best_score = max(best_score, z[k])
        choice = best[x] if has_unvisited and score_unvisited >= best_score else a
        for k in range(count):
            if z[k] >= best_score:
                choice = min(choice, actions[k])
        out[i] = choice
        next_action[x] = choice
    return out
