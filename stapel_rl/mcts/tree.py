"""Search trees for a batch of games as preallocated numpy arrays (mctx's layout).

Node 0 of every game is its root; a node's children are created in the order
the search expands them, so a child's index is always larger than its
parent's. Values are stored from the view of the player to move at the node
that owns them, which in Stapeldammen is not always the other player: a leap
that continues a capture leaves the same player to move.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from stapel_rl.env.engine import count_legal
from stapel_rl.env.geometry import NUM_ACTIONS
from stapel_rl.env.state import ARRAY_FIELDS, State


@dataclasses.dataclass
class Tree:
    """B trees with room for N nodes each; A = 200 actions.

    Attributes:
        node_visits: ``int32 [B, N]`` visits of each node.
        node_values: ``float32 [B, N]`` mean value of each node, from the view
            of the player to move there.
        raw_values: ``float32 [B, N]`` the evaluator's value (or the true result
            at a terminal node) when the node was expanded, same view.
        parents: ``int32 [B, N]`` parent node, -1 for the root and unused nodes.
        action_from_parent: ``int32 [B, N]`` action leading to the node, -1 at the root.
        children_index: ``int32 [B, N, A]`` child node of each action, -1 if not expanded.
        children_prior: ``float32 [B, N, A]`` prior probabilities (0 on illegal actions); like
            ``children_values``, meaningful only in the rows of nodes in use (``num_nodes``).
        children_visits: ``int32 [B, N, A]`` visits of each child.
        children_values: ``float32 [B, N, A]`` mean value of each child from the
            view of the player to move at the parent; 0 before its first visit,
            ``ILLEGAL_VALUE`` for illegal actions of expanded nodes.
        player: ``int8 [B, N]`` player to move at the node (0 White, 1 Black).
        terminal: ``bool [B, N]`` the game is over at the node.
        forced: ``int32 [B, N]`` the only legal action of the node, -1 if it has
            several, -2 if none (the game is over); forced captures make long
            single-move chains. The descent reads it as the action to take
            where it is not -1.
        num_legal: ``int32 [B, N]`` number of legal actions of the node.
        exact: ``float32 [B, N]`` the proven value of the node (``solver``), from the view
            of the player to move there: +1, 0 or -1; NaN where not proven (or not solving).
        states: the engine state of every node, each field shaped ``[B, N, ...]``.
        num_nodes: ``int32 [B]`` nodes in use (the next free index).
    """

    node_visits: np.ndarray
    node_values: np.ndarray
    raw_values: np.ndarray
    parents: np.ndarray
    action_from_parent: np.ndarray
    children_index: np.ndarray
    children_prior: np.ndarray
    children_visits: np.ndarray
    children_values: np.ndarray
    player: np.ndarray
    terminal: np.ndarray
    forced: np.ndarray
    num_legal: np.ndarray
    exact: np.ndarray
    states: State
    num_nodes: np.ndarray

    @property
    def batch_size(self) -> int:
        return int(self.node_visits.shape[0])

    @property
    def capacity(self) -> int:
        return int(self.node_visits.shape[1])

    @property
    def legal(self) -> np.ndarray:
        """``bool [B, N, A]`` legal actions of each node."""
        return self.states.legal_action_mask


#: Value stored for illegal children: PUCT never picks them, without a mask.
ILLEGAL_VALUE = np.float32(-1e9)

_FILL = {
    "node_visits": 0,
    "node_values": 0,
    "raw_values": 0,
    "parents": -1,
    "action_from_parent": -1,
    "children_index": -1,
    "children_prior": 0,
    "children_visits": 0,
    "children_values": 0,
    "player": 0,
    "terminal": False,
    "forced": -1,
    "num_legal": 0,
    "exact": np.nan,
}
PER_NODE = (
    "node_visits",
    "node_values",
    "raw_values",
    "parents",
    "action_from_parent",
    "player",
    "terminal",
    "forced",
    "num_legal",
    "exact",
)
PER_CHILD = ("children_index", "children_prior", "children_visits", "children_values")
#: Per-child arrays whose row a node's expansion writes whole (``search._evaluate``).
WRITTEN_AT_EXPANSION = ("children_prior", "children_values")


def allocate(root: State, capacity: int, out: "Tree | None" = None) -> Tree:
    """Empty trees of ``capacity`` nodes whose node 0 holds ``root`` (not yet expanded).

    With ``out`` (a tree of the same batch size and at least that capacity) its
    arrays are cleared and reused: the [B, N, A] arrays are tens of MB, and
    fresh memory page-faults on first touch, which costs more than clearing.
    The children's priors and values are not cleared: a node's rows of them
    are written whole when it is expanded, before anything reads them.
    """
    b, n = root.batch_size, int(capacity)
    if out is not None and out.batch_size == b and out.capacity >= n and out.states.variant == root.variant:
        for name, fill in _FILL.items():
            if name not in WRITTEN_AT_EXPANSION:
                getattr(out, name).fill(fill)
        out.num_nodes.fill(1)
        write_states(out, np.arange(b), np.zeros(b, np.int64), root)
        return out
    states = State(
        **{f: np.zeros((b, n) + getattr(root, f).shape[1:], getattr(root, f).dtype) for f in ARRAY_FIELDS},
        variant=root.variant,
    )
    tree = Tree(
        node_visits=np.zeros((b, n), np.int32),
        node_values=np.zeros((b, n), np.float32),
        raw_values=np.zeros((b, n), np.float32),
        parents=np.full((b, n), -1, np.int32),
        action_from_parent=np.full((b, n), -1, np.int32),
        children_index=np.full((b, n, NUM_ACTIONS), -1, np.int32),
        children_prior=np.zeros((b, n, NUM_ACTIONS), np.float32),
        children_visits=np.zeros((b, n, NUM_ACTIONS), np.int32),
        children_values=np.zeros((b, n, NUM_ACTIONS), np.float32),
        player=np.zeros((b, n), np.int8),
        terminal=np.zeros((b, n), bool),
        forced=np.full((b, n), -1, np.int32),
        num_legal=np.zeros((b, n), np.int32),
        exact=np.full((b, n), np.nan, np.float32),
        states=states,
        num_nodes=np.ones(b, np.int32),
    )
    write_states(tree, np.arange(b), np.zeros(b, np.int64), root)
    return tree


def grow(tree: Tree, capacity: int) -> Tree:
    """``tree`` with room for ``capacity`` nodes per game: a copy holding the same nodes.

    ``tree`` itself if it already has the room. Lets a search continue where
    an earlier one of the same roots stopped (searching by time, in chunks)
    without allocating for the longest search there could be.
    """
    if tree.capacity >= capacity:
        return tree
    b, n = tree.batch_size, tree.capacity
    out = allocate(read_states(tree, np.arange(b), np.zeros(b, np.int64)), capacity)
    for name in PER_NODE + PER_CHILD:
        getattr(out, name)[:, :n] = getattr(tree, name)
    for f in ARRAY_FIELDS:
        getattr(out.states, f)[:, :n] = getattr(tree.states, f)
    out.num_nodes[:] = tree.num_nodes
    return out


def _rows(array: np.ndarray) -> np.ndarray:
    """``array`` ``[B, N, ...]`` as ``[B * N, ...]``: one flat index per node is cheaper than two."""
    return array.reshape((-1,) + array.shape[2:])


def read_states(tree: Tree, games: np.ndarray, nodes: np.ndarray) -> State:
    """The engine states of nodes ``nodes`` of games ``games`` as one batch."""
    flat = games * tree.capacity + nodes
    return State(
        **{f: np.take(_rows(getattr(tree.states, f)), flat, axis=0) for f in ARRAY_FIELDS},
        variant=tree.states.variant,
    )


def write_states(tree: Tree, games: np.ndarray, nodes: np.ndarray, states: State) -> np.ndarray:
    """Store ``states`` at nodes ``nodes`` of games ``games``; returns what it wrote to ``forced`` ``[G]``."""
    flat = games * tree.capacity + nodes
    for f in ARRAY_FIELDS:
        _rows(getattr(tree.states, f))[flat] = getattr(states, f)
    _rows(tree.player)[flat] = states.current_player
    over = states.terminated | states.truncated
    _rows(tree.terminal)[flat] = over
    mask = states.legal_action_mask
    count = count_legal(mask)
    _rows(tree.num_legal)[flat] = count
    forced = -1 - over.astype(np.int32)  # -1: a choice, -2: the game is over (no legal action)
    only = np.flatnonzero(count == 1)
    forced[only] = mask[only].argmax(axis=1)
    _rows(tree.forced)[flat] = forced
    return forced


def subtree(
    tree: Tree,
    actions: np.ndarray,
    roots: State,
    capacity: int,
    room: int,
    fresh: "np.ndarray | None" = None,
    out: "Tree | None" = None,
) -> "tuple[Tree, np.ndarray]":
    """Trees of ``capacity`` nodes rooted at the child each root reached by ``actions`` (subtree reuse).

    ``roots`` are the positions after ``actions`` (what the chosen children
    hold). A game keeps its subtree only if the child was expanded, it is not
    marked in ``fresh`` (``bool [B]``, e.g. a restarted game) and the subtree
    leaves ``room`` free nodes; the others start from the unexpanded root.
    ``out`` (not ``tree``) may lend its arrays as in ``allocate``. Returns the
    trees and ``bool [B]``: which games kept their subtree.
    """
    b = tree.batch_size
    games = np.arange(b)
    new_root = tree.children_index[games, 0, np.asarray(actions)]
    reused = new_root >= 0
    if fresh is not None:
        reused &= ~np.asarray(fresh, bool)
    reused &= tree.node_visits[games, np.maximum(new_root, 0)] + room <= capacity  # visits >= subtree size
    keep = np.zeros((b, tree.capacity), bool)
    keep[games[reused], new_root[reused]] = True
    for node in range(1, tree.capacity):
        parent = tree.parents[:, node]
        keep[:, node] |= (parent >= 0) & keep[games, np.maximum(parent, 0)] & (node < tree.num_nodes)
    count = keep.sum(axis=1)
    new_index = np.where(keep, np.cumsum(keep, axis=1) - 1, -1).astype(np.int32)

    out = allocate(roots, capacity, out=out)
    g, old = np.nonzero(keep)
    new = new_index[g, old]
    for name in PER_NODE + PER_CHILD:
        getattr(out, name)[g, new] = getattr(tree, name)[g, old]
    for f in ARRAY_FIELDS:
        getattr(out.states, f)[g, new] = getattr(tree.states, f)[g, old]
    children = out.children_index[g, new]
    out.children_index[g, new] = np.where(children >= 0, new_index[g[:, None], np.maximum(children, 0)], -1)
    parents = out.parents[g, new]
    out.parents[g, new] = np.where(parents >= 0, new_index[g, np.maximum(parents, 0)], -1)
    out.parents[:, 0] = -1
    out.action_from_parent[:, 0] = -1
    out.num_nodes = np.maximum(count, 1).astype(np.int32)
    return out, reused
