"""The compiled (numba) parts of a leaf-batching step (``lanes``): the roots' rounds under Gumbel's
sequential halving, and the lanes' moves from node to child below.

A step sends its K lanes from each root one after another, each choosing
after the virtual loss of those before it, then level by level down the
tree. In numpy each round and each level costs a few dozen calls whatever
the number of games, which for one game's search (an agent's) is most of the
step's time besides the network. ``root_rounds`` runs all roots' rounds in
one call (``halving.Root.select`` and ``update`` and a lane's move there)
and ``take_lanes`` one level's moves (``lanes._Step.take``). The root rounds
keep ``halving.Root``'s arithmetic (float32 as numpy rounds it, its pairwise
sums included) in its order, so that a step of K lanes leaves the roots'
arrays as K rounds of ``halving.Root`` would (tests/mcts/test_lanes_compiled.py
holds both, and the lanes' moves, equal to plain numpy statements of them).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from stapel_rl.mcts.numpy_rounding import mixed_value_scalar, pairwise_sum
from stapel_rl.mcts.qtransforms import NEG_INF, POS_INF


@njit(cache=True, nogil=True)
def _scales(
    f, root_visits, raw, prior_q, visited_prior, q_low, q_high, num_visited, num_legal, max_visits, c_visit, c_scale,
    min_span,
):  # fmt: skip
    """``halving.Root._scales`` for root row ``f``: mixed value, low, span, sigma's coefficient."""
    a = prior_q.shape[1]
    total = np.float32(root_visits - 1)
    weighted = pairwise_sum(prior_q[f], 0, a)
    mixed = mixed_value_scalar(raw, total, visited_prior[f], weighted)
    low, high = POS_INF, NEG_INF
    for i in range(a):
        low = min(low, q_low[f, i])
        high = max(high, q_high[f, i])
    if num_visited[f] < num_legal[f]:
        low, high = min(low, mixed), max(high, mixed)
    coef = (c_visit + np.float32(max_visits[f])) * c_scale
    return mixed, low, max(high - low, min_span), coef


@njit(cache=True, nogil=True)
def _fill_considered(f, game, capacity, children_visits, root):
    """``halving.Root._fill_considered`` for row ``f`` (its actions visited by this search, ascending)."""
    score, base_visits, considered, considered_at, considered_base, considered_score = root
    a, m = score.shape[1], considered.shape[1]
    count = 0
    for i in range(a):
        if children_visits[game * capacity * a + i] > base_visits[f, i]:
            if count < m:
                considered[f, count] = i
            count += 1
    for slot in range(min(count, m), m):  # padded with the last
        considered[f, slot] = considered[f, max(min(count, m) - 1, 0)]
    for slot in range(m):
        col = considered[f, slot]
        considered_at[f, slot] = game * capacity * a + col
        considered_base[f, slot] = base_visits[f, col]
        considered_score[f, slot] = score[f, col]


@njit(cache=True, nogil=True, inline="always")
def _take_one(lane, node, action, capacity, arrays, records, counts):
    """``lanes._Step.take`` for one lane at flat ``node`` taking ``action`` (-2: the game is over there)."""
    node_visits, children_index, children_visits, children_values = arrays[:4]
    parents, action_from_parent, num_nodes, pending, final, dropped, virtual_loss = arrays[4:]
    path, go, placed, saved_nodes, saved_edges, saved_values = records
    a = children_visits.size // node_visits.size
    game = node // capacity
    base = game * capacity
    if action == -2:
        saved_nodes[counts[3], 0] = node
        saved_nodes[counts[3], 1] = node_visits[node]
        counts[3] += 1
        node_visits[node] += 1
        final[lane] = node
        return
    child = children_index[node * a + action]
    if child >= 0 and pending[base + child]:
        dropped[lane] = True  # it would enter a node placed in this step: no evaluation, no visit
        return
    path[counts[0], 0] = lane
    path[counts[0], 1] = node
    path[counts[0], 2] = action
    counts[0] += 1
    saved_nodes[counts[3], 0] = node
    saved_nodes[counts[3], 1] = node_visits[node]
    counts[3] += 1
    node_visits[node] += 1
    edge = node * a + action
    visits, old = children_visits[edge], children_values[edge]
    saved_edges[counts[4], 0] = edge
    saved_edges[counts[4], 1] = visits
    saved_values[counts[4]] = old
    counts[4] += 1
    # numpy's promotion: a float32 difference over an int32 count is float64, stored as float32.
    children_values[edge] = np.float32(np.float64(old) + np.float64(virtual_loss - old) / (visits + 1))
    children_visits[edge] = visits + 1
    if child >= 0:
        go[counts[1], 0] = lane
        go[counts[1], 1] = base + child
        counts[1] += 1
        return
    new = num_nodes[game]
    if new >= capacity:
        raise RuntimeError("search tree is full: allocate more nodes than simulations")
    num_nodes[game] += 1
    parents[game, new] = node - base
    action_from_parent[game, new] = action
    children_index[edge] = new
    pending[base + new] = True
    saved_nodes[counts[3], 0] = base + new
    saved_nodes[counts[3], 1] = node_visits[base + new]
    counts[3] += 1
    node_visits[base + new] += 1
    final[lane] = base + new
    placed[counts[2], 0] = game
    placed[counts[2], 1] = new
    counts[2] += 1


@njit(cache=True, nogil=True)
def _records(lanes):
    """Room for what ``lanes`` lanes' moves record, and the counts of each."""
    return (
        (
            np.empty((lanes, 3), np.int64),  # path: lane, node, action
            np.empty((lanes, 2), np.int64),  # go: lane, the node it enters
            np.empty((lanes, 2), np.int64),  # placed: game, node
            np.empty((2 * lanes, 2), np.int64),  # saved node visits: index, old
            np.empty((lanes, 2), np.int64),  # saved edge visits: index, old
            np.empty(lanes, np.float32),  # saved edge values: old
        ),
        np.zeros(5, np.int64),
    )


@njit(cache=True, nogil=True)
def _trimmed(records, counts):
    """The records, each cut to its count."""
    path, go, placed, saved_nodes, saved_edges, saved_values = records
    return (
        path[: counts[0]],
        go[: counts[1]],
        placed[: counts[2]],
        saved_nodes[: counts[3]],
        saved_edges[: counts[4]],
        saved_values[: counts[4]],
    )


@njit(cache=True, nogil=True)
def take_lanes(lanes, node, action, capacity, arrays):
    """Lanes ``lanes`` at distinct flat nodes ``node`` take ``action`` (``lanes._Step.take``); ``arrays``:
    the tree's flat node visits, children, edge visits and values, its parents, actions from parents and
    node counts, the step's pending, final and dropped, and the virtual loss. Returns ``root_rounds``'s records."""
    records, counts = _records(lanes.size)
    for i in range(lanes.size):
        _take_one(lanes[i], node[i], action[i], capacity, arrays, records, counts)
    return _trimmed(records, counts)


@njit(cache=True, nogil=True)
def root_rounds(
    lanes, first_lane, start_visits, forced_root, row_of_game, capacity, node_raw, arrays,
    games, score, fresh_score, targets, base_visits, inherited, prior, prior_visited, visited_prior,
    prior_q, q_low, q_high, num_visited, num_legal, max_visits,
    considered, considered_at, considered_base, considered_score, has_considered, chosen,
    c_visit, c_scale, min_span,
):  # fmt: skip
    """All roots' rounds of one step; ``arrays`` as ``take_lanes`` takes them, the others the roots' and the
    ``halving.Root``'s, all changed in place as the numpy rounds change them.

    Returns, in the numpy rounds' order (round by round, games ascending): the path entries
    ``(lane, node, action)``, the lanes that go on and the flat nodes they enter, the placed
    ``(game, node)`` pairs, and the saved ``(index, old value)`` of node visits, edge visits and
    edge values (first save first).
    """
    node_visits, children_visits, children_values = arrays[0], arrays[2], arrays[3]
    a = children_visits.size // node_visits.size
    records, counts = _records(int(lanes.sum()))
    considered_arrays = (score, base_visits, considered, considered_at, considered_base, considered_score)
    for j in range(lanes.max()):
        for game in range(lanes.size):
            if lanes[game] <= j:
                continue
            lane = first_lane[game] + j
            root = game * capacity
            action = np.int64(forced_root[game])
            f = row_of_game[game]
            if f >= 0:
                simulation = min(node_visits[root] - start_visits[game], targets.shape[1] - 1)
                target = targets[f, simulation]
                mixed, low, span, coef = _scales(
                    f, node_visits[root], node_raw[game * capacity], prior_q, visited_prior,
                    q_low, q_high, num_visited, num_legal, max_visits, c_visit, c_scale, min_span,
                )  # fmt: skip
                best, best_score = 0, NEG_INF
                if target == 0:
                    plain = coef * ((mixed - low) / span)
                    for i in range(a):
                        sigma = plain
                        if inherited[f]:
                            q = mixed if q_low[f, i] == POS_INF else q_low[f, i]
                            sigma = coef * ((q - low) / span)
                        s = fresh_score[f, i] + sigma
                        if s > best_score:
                            best, best_score = i, s
                else:
                    if not has_considered[f]:
                        _fill_considered(f, games[f], capacity, children_visits, considered_arrays)
                        has_considered[f] = True
                    pick = 0
                    for slot in range(considered.shape[1]):
                        at = considered_at[f, slot]
                        s = NEG_INF
                        if children_visits[at] - considered_base[f, slot] == target:
                            s = considered_score[f, slot] + coef * ((children_values[at] - low) / span)
                        if s > best_score:
                            pick, best_score = slot, s
                    best = considered[f, pick]
                chosen[f] = best
                action = best
            _take_one(lane, root, action, capacity, arrays, records, counts)
            if f >= 0:  # halving.Root.update at the chosen child
                at = root * a + action
                q = children_values[at]
                if q_low[f, action] == POS_INF:
                    num_visited[f] += 1
                    prior_visited[f, action] = prior[f, action]
                    visited_prior[f] = pairwise_sum(prior_visited[f], 0, a)
                prior_q[f, action] = prior[f, action] * q
                q_low[f, action] = q
                q_high[f, action] = q
                max_visits[f] = max(max_visits[f], children_visits[at])
                fresh_score[f, action] = NEG_INF
    return _trimmed(records, counts)


@njit(cache=True, nogil=True)
def by_node(lanes, node):
    """Lanes ``lanes`` at flat nodes ``node`` sorted by node (stably) and each one's rank among those at its
    node: the order in which lanes at one node choose."""
    order = np.argsort(node, kind="mergesort")
    lanes, node = lanes[order], node[order]
    rank = np.zeros(node.size, np.int64)
    for i in range(1, node.size):
        if node[i] == node[i - 1]:
            rank[i] = rank[i - 1] + 1
    return lanes, node, rank


@njit(cache=True, nogil=True)
def restore(node_visits, edge_visits, edge_values, saved_nodes, saved_edges, saved_values):
    """Put back what ``take_lanes`` and ``root_rounds`` saved (in the order saved): latest first, so that
    each index ends with its first saved value."""
    for i in range(saved_nodes.shape[0] - 1, -1, -1):
        node_visits[saved_nodes[i, 0]] = saved_nodes[i, 1]
    for i in range(saved_edges.shape[0] - 1, -1, -1):
        edge_visits[saved_edges[i, 0]] = saved_edges[i, 1]
        edge_values[saved_edges[i, 0]] = saved_values[i]
