"""Gumbel AlphaZero (Danihelka et al., 2022): Gumbel top-k, sequential halving, completed Q.

At the root, m actions are sampled without replacement by Gumbel top-k on the
prior logits and the simulation budget is spread over them by sequential
halving; inside the tree actions are chosen deterministically to move the
visit distribution towards the improved policy ``softmax(logits + sigma(q))``,
which is also the training target. The policy improves even with a handful
of simulations.

Selection runs at every simulation, so it is written for speed (``Interior``
here, compiled in ``interior_compiled``; ``halving.Root`` at the roots). The
root choices compute the very same float32 numbers as the plain formulas (the
paper's, kept in tests/mcts/test_reference_formulas.py as the reference).
Inside the tree only the visited children and the best unvisited one are
scored, and sums over the visited children run in another order, so in-tree
choices agree with the formulas up to near-ties (within 1e-6 of the best
score) and the final policy within float32 rounding.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from stapel_rl.mcts import halving, interior_compiled
from stapel_rl.mcts.config import SearchConfig
from stapel_rl.mcts.qtransforms import (
    NEG_INF,
    POS_INF,
    SPAN_FLOOR,
    log_prior,
    mixed_value,
    sigma_coefficient,
)
from stapel_rl.mcts.tree import Tree


@functools.lru_cache(maxsize=8)
def _parent_slots(b: int, n: int) -> np.ndarray:
    """``int64 [B * N]``: game * (N + 1) + 1 for every flat node of B trees of N nodes (read-only).

    Added to a node's parent index, its parent's slot in a ``[B, N + 1]`` array whose column 0
    stands for "no parent" (index -1).
    """
    slots = np.repeat(np.arange(b, dtype=np.int64) * (n + 1) + 1, n)
    slots.flags.writeable = False
    return slots


def visited_children(tree: Tree, node: np.ndarray) -> "tuple[np.ndarray, np.ndarray, np.ndarray]":
    """The visited children of distinct nodes ``node`` (flat: game * N + node): for each, ``int64 [V]``
    its node's row (index into ``node``), its action and itself (flat), in no set order.

    A node's visited children are its expanded ones (a simulation that creates a node backs it up), so
    they are the nodes whose parent is in ``node``: found in the [B, N] parent links, not by reading
    rows of 200 visit counts.
    """
    b, n = tree.batch_size, tree.capacity
    slots = _parent_slots(b, n)
    row_of = np.full(b * (n + 1), -1, np.int32)  # a node's row, by its slot; -1 if none
    row_of[slots[node] + node % n] = np.arange(node.size, dtype=np.int32)
    row_of_parent = row_of[slots + tree.parents.reshape(-1)]
    child = (row_of_parent >= 0).nonzero()[0]
    return row_of_parent[child].astype(np.int64), tree.action_from_parent.reshape(-1)[child].astype(np.int64), child


@dataclasses.dataclass
class _Visited:
    """The visited children of G nodes and their completed Q, all from the tree.

    Attributes:
        rows: ``int64 [V]`` each visited child's row (its node's index among the G), in no set order.
        flat: ``int64 [V]`` its position in a ``[G, A]`` row-major array.
        q: ``float32 [V]`` its mean value (its completed Q).
        visits: ``float32 [V]`` its visit count.
        prior: ``float32 [V]`` its prior.
        node_visits: ``float32 [G]`` the nodes' visits (1 + their children's).
        has_unvisited: ``bool [G]`` some legal child is unvisited.
        visited_prior: ``float32 [G]`` the visited children's total prior.
        mixed: ``float32 [G]`` the completed Q of every unvisited child.
        low, span: ``float32 [G]`` the least completed Q over legal children and the range (at least ``min_span``).
        coef: ``float32 [G]`` ``(c_visit + max visits) * c_scale``: sigma(q) = coef * (q - low) / span.
    """

    rows: np.ndarray
    flat: np.ndarray
    q: np.ndarray
    visits: np.ndarray
    prior: np.ndarray
    node_visits: np.ndarray
    has_unvisited: np.ndarray
    visited_prior: np.ndarray
    mixed: np.ndarray
    low: np.ndarray
    span: np.ndarray
    coef: np.ndarray

    @classmethod
    def of(
        cls,
        tree: Tree,
        node: np.ndarray,
        c_visit: float,
        c_scale: float,
        min_span: float,
    ) -> "_Visited":
        """At distinct expanded nodes ``node`` (flat: game * N + node)."""
        g, a = node.size, tree.children_prior.shape[2]
        rows, actions, child = visited_children(tree, node)
        flat = rows * a + actions
        at = node[rows] * a + actions  # the visited children in the tree's [B, N, A] arrays
        q = tree.children_values.ravel()[at]
        prior = tree.children_prior.ravel()[at]
        node_visits = tree.node_visits.reshape(-1)[node].astype(np.float32)
        # bincount sums in float64: a few ulps from a float32 row sum, which only near-ties notice.
        visited_prior = np.bincount(rows, prior, minlength=g).astype(np.float32)
        weighted_q = np.bincount(rows, prior * q, minlength=g).astype(np.float32)
        mixed = mixed_value(tree.raw_values.reshape(-1)[node], node_visits - 1, visited_prior, weighted_q)
        # min and max of the completed Q over legal children: the mixed value counts if one is unvisited.
        has_unvisited = np.bincount(rows, minlength=g) < tree.num_legal.reshape(-1)[node]
        low = np.where(has_unvisited, mixed, POS_INF)
        high = np.where(has_unvisited, mixed, NEG_INF)
        np.minimum.at(low, rows, q)
        np.maximum.at(high, rows, q)
        counts = tree.node_visits.reshape(-1)[child].astype(np.float32)  # a child's visits are its edge's
        max_visits = np.zeros(g, np.float32)
        np.maximum.at(max_visits, rows, counts)
        return cls(
            rows,
            flat,
            q,
            counts,
            prior,
            node_visits,
            has_unvisited,
            visited_prior,
            mixed,
            low,
            np.maximum(high - low, np.float32(min_span)),
            sigma_coefficient(c_visit, c_scale, max_visits),
        )

    def sigma(self, q: np.ndarray, rows: "np.ndarray | slice" = slice(None)) -> np.ndarray:
        """sigma of completed Q values ``q`` at nodes ``rows``."""
        return self.coef[rows] * ((q - self.low[rows]) / self.span[rows])


def _improved_rows(
    tree: Tree, games: np.ndarray, nodes: np.ndarray, c_visit: float, c_scale: float, min_span: float
) -> "tuple[np.ndarray, _Visited]":
    """``softmax(logits + sigma(completed Q))`` ``[G, A]`` at expanded live nodes ``nodes`` of ``games``,
    and their visited children."""
    node = games * tree.capacity + nodes
    logits = log_prior(tree, games, nodes)
    seen = _Visited.of(tree, node, c_visit, c_scale, min_span)
    # The unvisited children's sigma for all, then the visited ones'; illegal ones stay -inf.
    z = logits + seen.sigma(seen.mixed)[:, None]
    z.ravel()[seen.flat] = logits.ravel()[seen.flat] + seen.sigma(seen.q, seen.rows)
    z -= z.max(axis=1, keepdims=True)
    policy = np.exp(z, out=z)
    policy /= policy.sum(axis=1, keepdims=True)
    return policy, seen


@dataclasses.dataclass
class Interior:
    """The in-tree choice at every node, kept up to date for one search.

    The choice at a node depends on that node's children alone, which change
    only when a simulation passes through it. Choosing again right after
    backup at the nodes on the simulations' paths, for all games in one call,
    gives the very actions the next descent would choose, without one call
    per tree level there (numpy's fixed cost per call dominates those).

    A choice scores the node's visited children and its best unvisited child
    (the first of highest prior: the unvisited children share one completed Q,
    so the improved policy ranks them by prior), weighing the unvisited ones by
    their total prior. That child and that total need a pass over the node's
    200-wide prior row; they change only when a child is first visited, that
    is expanded, so they are kept per node and recounted only where a child
    was expanded since (``stale``): about one node per game and simulation,
    the last on the path, instead of the whole path.

    Attributes:
        next_action: ``int64 [B, N]`` the action the descent takes at each node: the one
            ``choose`` gives where there are two or more legal actions (-1 until
            this search has computed it), else ``tree.forced`` (the only one, or -2: game over).
        best: ``int64 [B, N]`` the best unvisited child, at nodes where it was counted (where every
            unvisited legal prior underflowed to 0: the first unvisited legal one).
        best_prior: ``float32 [B, N]`` its prior.
        mass: ``float32 [B, N]`` the unvisited children's total prior.
        stale: ``bool [B, N]`` ``best``, ``best_prior`` and ``mass`` are to be recounted.
    """

    next_action: np.ndarray
    best: np.ndarray
    best_prior: np.ndarray
    mass: np.ndarray
    stale: np.ndarray
    c_visit: float
    c_scale: float
    min_span: float = float(SPAN_FLOOR)

    @classmethod
    def empty(cls, tree: Tree, c_visit: float, c_scale: float, min_span: float = float(SPAN_FLOOR)) -> "Interior":
        """No choice made yet: every node's unvisited children to be counted when first chosen at."""
        shape = tree.forced.shape
        return cls(
            tree.forced.astype(np.int64),
            np.zeros(shape, np.int64),
            np.zeros(shape, np.float32),
            np.zeros(shape, np.float32),
            np.ones(shape, bool),
            c_visit,
            c_scale,
            min_span,
        )

    @classmethod
    def start(cls, tree: Tree, c_visit: float, c_scale: float, min_span: float = float(SPAN_FLOOR)) -> "Interior":
        """The choices at the nodes of a reused subtree (below the roots).

        A node's choice stays what it is now until a simulation passes
        through it, so all are made in one call here rather than level by
        level when the descents first reach them.
        """
        interior = cls.empty(tree, c_visit, c_scale, min_span)
        games, nodes = np.nonzero((tree.forced == -1) & (np.arange(tree.capacity) < tree.num_nodes[:, None]))
        inner = np.flatnonzero(nodes > 0)
        if inner.size:
            interior.choose(tree, games[inner], nodes[inner])
        return interior

    def choose(self, tree: Tree, games: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Choose (and remember) the action ``[G]`` at distinct ``nodes`` of ``games``, below the roots
        with two or more legal actions: argmax over legal actions of the improved policy minus the visit
        share (compiled: ``interior_compiled.choose``)."""
        return interior_compiled.choose(
            (games * tree.capacity + nodes).astype(np.int64), tree.capacity,
            tree.children_index.reshape(-1), tree.children_prior.reshape(-1), tree.children_values.reshape(-1),
            tree.node_visits.reshape(-1), tree.raw_values.reshape(-1), tree.num_legal.reshape(-1),
            tree.legal.reshape(-1), self.best.reshape(-1), self.best_prior.reshape(-1), self.mass.reshape(-1),
            self.stale.reshape(-1), self.next_action.reshape(-1), np.float32(self.c_visit), np.float32(self.c_scale),
            np.float32(self.min_span),
        )  # fmt: skip

    def refresh(self, tree: Tree, games: np.ndarray, nodes: np.ndarray) -> None:
        """Choose again at ``nodes`` of ``games`` (two or more legal actions), whose children changed."""
        if games.size:
            self.choose(tree, games, nodes)

    def expanded(
        self,
        tree: Tree,
        games: np.ndarray,
        nodes: np.ndarray,
        forced: np.ndarray,
        live: np.ndarray,
        prior: "np.ndarray | None",
    ) -> None:
        """Next actions at new nodes ``nodes`` of ``games``, whose ``tree.forced`` is ``forced`` ``[G]``,
        the ``live`` ones (indices into them) with children priors ``prior`` ``[L, A]``.

        With no child visited, ``choose`` takes the first action of highest prior. The new
        nodes' unvisited children are counted when first chosen at, their parents' again.
        """
        action = forced.astype(np.int64)
        if live.size:
            assert prior is not None  # given for the live nodes
            choice = np.flatnonzero(action[live] == -1)
            action[live[choice]] = prior[choice].argmax(axis=1)
        self.next_action[games, nodes] = action
        self.stale[games, nodes] = True
        self.stale[games, tree.parents[games, nodes]] = True


def root_policy(
    tree: Tree, c_visit: float, c_scale: float, min_span: float = float(SPAN_FLOOR)
) -> "tuple[np.ndarray, np.ndarray]":
    """The training targets at the roots: the improved policy ``[B, A]`` and its value ``[B]`` (0 where
    the game is over).

    The value is the improved policy's expectation of the completed Q, from
    the side to move's view. The roots' mean value averages every considered
    action's simulations, bad ones included (sequential halving visits all
    of them), so it understates what the search found; this one weighs each
    action by how much the search recommends it.
    """
    policy = np.zeros((tree.batch_size, tree.children_prior.shape[2]), np.float32)
    value = np.zeros(tree.batch_size, np.float32)
    live = np.flatnonzero(tree.num_legal[:, 0] > 0)
    if live.size:
        rows, seen = _improved_rows(tree, live, np.zeros_like(live), c_visit, c_scale, min_span)
        on_visited = rows.ravel()[seen.flat]
        visited_mass = np.bincount(seen.rows, on_visited, minlength=live.size)
        visited_value = np.bincount(seen.rows, on_visited * seen.q, minlength=live.size)
        value[live] = seen.mixed * (1.0 - visited_mass) + visited_value
        policy[live] = rows
    return policy, value


@dataclasses.dataclass
class Gumbel:
    """Gumbel AlphaZero's selection functions for ``search``: sequential halving at the roots
    (``halving.Root``), the improved policy's deterministic choice inside the trees (``Interior``)."""

    root: halving.Root
    interior: Interior
    c_visit: float
    c_scale: float
    min_span: float = float(SPAN_FLOOR)

    @classmethod
    def start(cls, tree: Tree, config: SearchConfig, rng: np.random.Generator, base_visits: np.ndarray) -> "Gumbel":
        """Gumbel noise on the roots' legal actions (none at temperature 0), the halving schedule, the first choices."""
        legal = tree.legal[:, 0]
        scale = 1.0 if config.temperature > 0 else 0.0
        noise = np.where(legal, scale * rng.gumbel(size=legal.shape), -np.inf).astype(np.float32)
        c = config.c_visit, config.c_scale, config.min_span
        root = halving.Root.start(tree, noise, base_visits, config.max_considered, config.num_simulations, *c)
        return cls(root, Interior.start(tree, *c), *c)

    def node_actions(self) -> np.ndarray:
        return self.interior.next_action

    def select_roots(self, tree: Tree, simulation: "int | np.ndarray", action: np.ndarray) -> None:
        if self.root.games.size:
            action[self.root.games] = self.root.select(tree, simulation)

    def select_interior(self, tree: Tree, games: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        return self.interior.choose(tree, games, nodes)

    def expanded(
        self,
        tree: Tree,
        games: np.ndarray,
        nodes: np.ndarray,
        forced: np.ndarray,
        live: np.ndarray,
        prior: "np.ndarray | None",
    ) -> None:
        self.interior.expanded(tree, games, nodes, forced, live, prior)

    def simulated(self, tree: Tree, first: int, games: np.ndarray, nodes: np.ndarray) -> None:
        """The roots' arrays take the backed-up values; the path's nodes below the roots with a choice choose again."""
        self.root.update(tree)
        if games.size > first:
            below = first + np.flatnonzero(tree.forced.reshape(-1)[nodes[first:]] == -1)
            self.interior.refresh(tree, games[below], nodes[below] - games[below] * tree.capacity)

    def placed(self, tree: Tree, games: np.ndarray, nodes: np.ndarray) -> None:
        self.interior.next_action[games, nodes] = -2
        self.interior.stale[games, tree.parents[games, nodes]] = True

    def resync(self, tree: Tree, nodes: np.ndarray) -> None:
        """The roots' arrays from the tree; the nodes below them with a choice choose again."""
        self.root.resync(tree)
        below = nodes[(nodes % tree.capacity > 0) & (tree.forced.reshape(-1)[nodes] == -1)]
        games = below // tree.capacity
        self.interior.refresh(tree, games, below - games * tree.capacity)

    def choose(self, tree: Tree, rng: np.random.Generator) -> "tuple[np.ndarray, np.ndarray, np.ndarray]":
        """Sequential halving's pick; the policy target is the improved policy, the value its expected Q."""
        policy, search_value = root_policy(tree, self.c_visit, self.c_scale, self.min_span)
        search_value = np.where(tree.num_legal[:, 0] > 0, search_value, tree.node_values[:, 0])
        return self.root.final_action(tree), policy, search_value
