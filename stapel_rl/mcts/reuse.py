"""Search trees kept between moves and found again by position (``TreeCache``), for agents in matches.

Self-play knows which action each game played and reuses the chosen child's
subtree (``tree.subtree``). An agent does not: it is called with whatever
games are to move, one at a time in a match at equal time, interleaved over
the match's games, and the opponent's reply is unseen. So after each search
the agent keeps the subtree of the action it chose, and at its next call
looks for each game's position among the nodes of what it kept: a node
holding the same engine state (every field: board, side to move, capture in
progress, ply, last action, results) has the same future, so its subtree is
valid for that position whichever line led there. A position found nowhere
gets a fresh tree.
"""

from __future__ import annotations

import numpy as np

from stapel_rl.env.state import ARRAY_FIELDS, State
from stapel_rl.mcts.tree import PER_CHILD, PER_NODE, Tree, allocate, read_states

#: Nodes a ``TreeCache`` keeps at most, over all its trees (a few KB each): the oldest go first.
MAX_NODES = 32768


def descendants(tree: Tree, game: int, node: int) -> np.ndarray:
    """``int64 [M]``: node ``node`` of game ``game`` and all nodes below it, ascending (``node`` first)."""
    used = int(tree.num_nodes[game])
    parents = tree.parents[game, :used]
    has_parent = parents >= 0
    up = np.maximum(parents, 0)
    keep = np.zeros(used, bool)
    keep[node] = True
    while True:  # one pass per level of the subtree
        grown = keep | (has_parent & keep[up])
        if np.array_equal(grown, keep):
            return np.flatnonzero(keep)
        keep = grown


def copy_subtree(source: Tree, game: int, node: int, out: Tree, row: int) -> int:
    """Write the subtree of ``node`` of ``source``'s game ``game`` into row ``row`` of ``out``, rooted at
    node 0 (``out`` must have the room); returns its node count."""
    nodes = descendants(source, game, node)
    m = nodes.size
    if m > out.capacity:
        raise ValueError(f"a subtree of {m} nodes does not fit a tree of {out.capacity}")
    new_index = np.full(source.capacity, -1, np.int32)
    new_index[nodes] = np.arange(m, dtype=np.int32)
    for name in PER_NODE + PER_CHILD:
        getattr(out, name)[row, :m] = getattr(source, name)[game, nodes]
    for f in ARRAY_FIELDS:
        getattr(out.states, f)[row, :m] = getattr(source.states, f)[game, nodes]
    children = out.children_index[row, :m]
    out.children_index[row, :m] = np.where(children >= 0, new_index[np.maximum(children, 0)], -1)
    parents = out.parents[row, :m]
    out.parents[row, :m] = np.where(parents >= 0, new_index[np.maximum(parents, 0)], -1)
    out.parents[row, 0] = -1
    out.action_from_parent[row, 0] = -1
    out.num_nodes[row] = m
    return m


def find(tree: Tree, game: int, state: State, index: int) -> int:
    """The node of ``tree``'s game ``game`` holding game ``index`` of ``state`` exactly, -1 if none."""
    used = int(tree.num_nodes[game])
    s = tree.states
    candidates = np.flatnonzero(
        (s.white[game, :used] == state.white[index])
        & (s.black[game, :used] == state.black[index])
        & (s.ply[game, :used] == state.ply[index])
        & (s.current_player[game, :used] == state.current_player[index])
    )
    for node in candidates:
        if all(np.array_equal(getattr(s, f)[game, node], getattr(state, f)[index]) for f in ARRAY_FIELDS):
            return int(node)
    return -1


class TreeCache:
    """The subtrees of an agent's last searches, one game each, found again by position.

    ``store(tree, actions)`` keeps, for each game, the subtree of the action
    played (where it was expanded); ``take(state, room)`` returns trees for
    the games of ``state`` with each position's subtree where one holds it,
    a fresh root elsewhere, and room for ``room`` more nodes per game. A
    subtree used once is dropped: the next search's own is stored instead.
    """

    def __init__(self, max_nodes: int = MAX_NODES) -> None:
        self.max_nodes = max_nodes
        self.trees: "list[Tree]" = []

    def clear(self) -> None:
        self.trees = []

    def store(self, tree: Tree, actions: np.ndarray) -> None:
        """Keep the subtree below each game's root reached by ``actions`` ``[B]``."""
        for game, action in enumerate(np.asarray(actions)):
            child = int(tree.children_index[game, 0, action]) if tree.num_legal[game, 0] > 0 else -1
            if child < 0:
                continue
            nodes = descendants(tree, game, child)
            kept = allocate(read_states(tree, np.array([game]), np.array([child])), nodes.size)
            copy_subtree(tree, game, child, kept, 0)
            self.trees.append(kept)
        total = sum(t.capacity for t in self.trees)
        while self.trees and total > self.max_nodes:
            total -= self.trees.pop(0).capacity

    def take(self, state: State, room: int) -> "tuple[Tree, np.ndarray]":
        """Trees for the games of ``state`` (``room`` free nodes each) and ``bool [B]``: which reuse a subtree."""
        found: "list[tuple[int, int, int]]" = []  # (game, cached tree, node)
        for index in range(state.batch_size):
            for t, cached in enumerate(self.trees):
                node = find(cached, 0, state, index)
                if node >= 0:
                    found.append((index, t, node))
                    break
        sizes = {(t, node): descendants(self.trees[t], 0, node).size for _, t, node in found}
        out = allocate(state, max(sizes.values(), default=1) + room)
        reused = np.zeros(state.batch_size, bool)
        for index, t, node in found:
            copy_subtree(self.trees[t], 0, node, out, index)
            reused[index] = True
        used = {t for _, t, _ in found}
        self.trees = [cached for t, cached in enumerate(self.trees) if t not in used]
        return out, reused
