"""MCTS-solver (Winands et al., 2008): proven wins, draws and losses in the search tree.

``tree.exact`` holds a node's proven value from the view of the player to
move there: a terminal node's result (the engine's reward: Variant I, the
side that cannot move loses; Variant II, points decide, equal points draw;
a game cut at the ply cap counts 0, as the engine reports it), a node with a
child that wins for its player (+1), or a node whose legal children are all
expanded and proven (the best of their values). The values flip sign only
where the player changes, as everywhere in the tree.

The statistics of the tree stay those of the plain search (``tests/trees.py``'s
bookkeeping holds): what the solver changes is the descent, which below the
roots takes a proven win and steps around proven losses, and the final
choice, which plays a proven win (and avoids a proven loss where it can).
"""

from __future__ import annotations

import numpy as np

from stapel_rl.mcts.tree import Tree


def _parent_view(tree: Tree, parent: np.ndarray, child: np.ndarray) -> np.ndarray:
    """``exact`` of flat nodes ``child`` seen from flat nodes ``parent`` (same shape; NaN: unproven)."""
    exact, player = tree.exact.reshape(-1), tree.player.reshape(-1)
    value = exact[child]
    return np.where(player[child] == player[parent], value, -value)


def _children(tree: Tree, node: np.ndarray) -> "tuple[np.ndarray, np.ndarray]":
    """Flat child nodes ``[G, A]`` of flat nodes ``node`` (any node where not expanded) and which are expanded."""
    n, a = tree.capacity, tree.children_index.shape[2]
    index = tree.children_index.reshape(-1, a)[node]
    expanded = index >= 0
    return (node // n)[:, None] * n + np.maximum(index, 0), expanded


def children_values(tree: Tree, node: np.ndarray) -> np.ndarray:
    """Proven values ``float32 [G, A]`` of the children of flat nodes ``node``, their parent's view (NaN: unproven)."""
    child, expanded = _children(tree, node)
    value = _parent_view(tree, np.broadcast_to(node[:, None], child.shape), child)
    return np.where(expanded, value, np.float32(np.nan))


def propagate(tree: Tree, node: np.ndarray) -> None:
    """Flat nodes ``node`` were just proven: prove their ancestors where that settles them."""
    exact, parents, num_legal = tree.exact.reshape(-1), tree.parents.reshape(-1), tree.num_legal.reshape(-1)
    n = tree.capacity
    while node.size:
        up = parents[node]
        keep = up >= 0
        parent = np.unique(node[keep] - node[keep] % n + up[keep])
        parent = parent[np.isnan(exact[parent])]
        if not parent.size:
            return
        value = children_values(tree, parent)
        proven = ~np.isnan(value)
        best = np.where(proven, value, -np.inf).max(axis=1)
        settled = (best > 0) | (proven.sum(axis=1) == num_legal[parent])
        node = parent[settled]
        exact[node] = best[settled]


def any_proven(tree: Tree) -> bool:
    """Some node in use is proven (the descent then checks its choices)."""
    used = int(tree.num_nodes.max())
    return not bool(np.isnan(tree.exact[:, :used]).all())


def prefer(tree: Tree, node: np.ndarray, action: np.ndarray) -> np.ndarray:
    """The descent's actions ``[G]`` at flat nodes ``node``, with proven wins taken and proven losses avoided.

    At a proven win the winning child (the most visited of them) replaces the
    choice; elsewhere, a choice whose child is a proven loss for the mover is
    replaced by the legal action of highest prior that is not (unless all are:
    then the node is a proven loss and the choice stands). ``action`` -2 (over) stays.
    """
    exact = tree.exact.reshape(-1)
    a = tree.children_index.shape[2]
    live = action >= 0
    child = np.where(live, tree.children_index.reshape(-1)[node * a + np.maximum(action, 0)], -1)
    has_child = child >= 0
    child_flat = node - node % tree.capacity + np.maximum(child, 0)
    value = np.where(has_child, _parent_view(tree, node, child_flat), np.float32(np.nan))
    here = exact[node]
    change = np.flatnonzero(live & (((here > 0) & ~(value > 0)) | ((value < 0) & ~(here < 0))))
    if not change.size:
        return action
    action = action.copy()
    rows = node[change]
    values = children_values(tree, rows)
    winning = values > 0
    visits = tree.children_visits.reshape(-1, a)[rows]
    win = winning.any(axis=1)
    best_win = np.where(winning, visits + 1, 0).argmax(axis=1)
    open_ = tree.legal.reshape(-1, a)[rows] & ~(values < 0)
    open_prior = np.where(open_, tree.children_prior.reshape(-1, a)[rows] + 1, 0)
    action[change] = np.where(win, best_win, open_prior.argmax(axis=1))
    return action


def final_actions(tree: Tree, action: np.ndarray) -> np.ndarray:
    """The search's answer ``[B]`` at the roots: a proven win where one is known, else ``action`` unless
    it is a proven loss and another legal action is not (then the most visited of those)."""
    b, a = tree.batch_size, tree.children_index.shape[2]
    roots = np.arange(b) * tree.capacity
    live = tree.num_legal[:, 0] > 0
    if not live.any():
        return action
    values = children_values(tree, roots)
    legal = tree.legal[:, 0]
    visits = tree.children_visits[:, 0]
    chosen = values[np.arange(b), np.clip(action, 0, a - 1)]
    winning = values > 0
    open_ = legal & ~(values < 0)
    win = live & winning.any(axis=1)
    dodge = live & ~win & (chosen < 0) & open_.any(axis=1)
    out = action.copy()
    out[win] = np.where(winning, visits + 1, 0).argmax(axis=1)[win]
    score = np.where(open_, visits.astype(np.float64) + tree.children_prior[:, 0], -1.0)
    out[dodge] = score.argmax(axis=1)[dodge]
    return out
