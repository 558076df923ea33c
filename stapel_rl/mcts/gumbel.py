"""Gumbel AlphaZero (Danihelka et al., 2022): Gumbel top-k, sequential halving, completed Q.

At the root, m actions are sampled without replacement by Gumbel top-k on the
prior logits and the simulation budget is spread over them by sequential
halving; inside the tree actions are chosen deterministically to move the
visit distribution towards the improved policy ``softmax(logits + sigma(q))``,
which is also the training target. The policy improves even with a handful
of simulations.

Selection runs at every simulation, so it is written for speed (``Interior``
here, ``halving.Root`` at the roots), yet computes the very same float32
numbers as the plain formulas (the paper's, kept in tests/test_mcts.py as the reference): sums run
over the same 200-wide rows in the same order, and only order-free steps
(min, max, argmax, elementwise arithmetic) are done on the few visited
children alone, the unvisited ones sharing one completed Q.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from stapel_rl.mcts.tree import Tree

NEG_INF = np.float32(-np.inf)
POS_INF = np.float32(np.inf)
TINY_PRIOR = np.float32(1e-30)
SMALLEST = np.finfo(np.float32).smallest_subnormal


def log_prior(tree: Tree, games: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Prior logits ``[G, A]`` (log of the stored prior; -inf on illegal actions)."""
    prior = tree.children_prior[games, nodes]
    with np.errstate(divide="ignore"):
        return np.where(tree.legal[games, nodes], np.log(np.maximum(prior, 1e-30)), NEG_INF).astype(np.float32)


def _mixed_value(raw: np.ndarray, total: np.ndarray, visited_prior: np.ndarray, weighted_q: np.ndarray) -> np.ndarray:
    """The completed Q of unvisited children ``[G]``: raw value and prior-weighted visited Q, mixed by visits.

    ``weighted_q`` is 0 wherever ``visited_prior`` is (priors are >= 0), so
    dividing by at least the smallest float32 is the guarded division without
    a slower masked ``np.divide``.
    """
    return (raw + total * (weighted_q / np.maximum(visited_prior, SMALLEST))) / (1 + total)


def _sigma_coefficient(c_visit: float, c_scale: float, max_visits: np.ndarray) -> np.ndarray:
    """``(c_visit + max visits) * c_scale`` ``[G]``, in float32 (``max_visits`` float32) as sigma's reference."""
    return (c_visit + max_visits) * c_scale


def _improved_rows(
    tree: Tree, node: np.ndarray, c_visit: float, c_scale: float
) -> "tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]":
    """``softmax(logits + sigma(completed Q))`` ``[G, A]`` at expanded live nodes ``node`` (game * N + node).

    Needs their ``children_log_prior``. Also returns what selection needs
    besides: the log prior ``[G, A]``, the visited children's flat positions
    in it and their visit shares ``visits / node visits``; and the completed
    Q: the unvisited children's ``[G]`` and the visited ones' (at those flat positions).
    """
    g, a = node.size, tree.children_prior.shape[2]
    visits = tree.children_visits.reshape(-1, a)[node]
    logits = tree.children_log_prior.reshape(-1, a)[node]
    node_visits = tree.node_visits.reshape(-1)[node].astype(np.float32)  # 1 + the children's visits
    flat = (visits > 0).ravel().nonzero()[0]
    rows = flat // a
    at = node[rows] * a + (flat - rows * a)  # the visited children in the tree's [B, N, A] arrays
    q_visited = tree.children_values.ravel()[at]
    prior_visited = tree.children_prior.ravel()[at]
    visits_visited = visits.ravel()[flat].astype(np.float32)

    # Sums over full rows holding 0 where unvisited, so that the float32 rounding is the reference's.
    work = np.zeros((g, a), np.float32)
    work.ravel()[flat] = prior_visited
    visited_prior = work.sum(axis=1)
    work.ravel()[flat] = prior_visited * q_visited
    mixed = _mixed_value(tree.raw_values.reshape(-1)[node], node_visits - 1, visited_prior, work.sum(axis=1))

    # min and max of the completed Q over legal children: the mixed value counts if one is unvisited.
    some_unvisited = np.bincount(rows, minlength=g) < tree.num_legal.reshape(-1)[node]
    low = np.where(some_unvisited, mixed, POS_INF)
    high = np.where(some_unvisited, mixed, NEG_INF)
    np.minimum.at(low, rows, q_visited)
    np.maximum.at(high, rows, q_visited)
    span = np.maximum(high - low, 1e-8)
    max_visits = np.zeros(g, np.float32)
    np.maximum.at(max_visits, rows, visits_visited)
    coef = _sigma_coefficient(c_visit, c_scale, max_visits)

    # The unvisited children's sigma for all, then the visited ones'; illegal ones stay -inf.
    z = logits + (coef * ((mixed - low) / span))[:, None]
    z.ravel()[flat] = logits.ravel()[flat] + coef[rows] * ((q_visited - low[rows]) / span[rows])
    z -= z.max(axis=1, keepdims=True)
    policy = np.exp(z, out=z)
    policy /= policy.sum(axis=1, keepdims=True)
    return policy, logits, flat, visits_visited / node_visits[rows], mixed, q_visited


def select_interior(tree: Tree, games: np.ndarray, nodes: np.ndarray, c_visit: float, c_scale: float) -> np.ndarray:
    """Deterministic in-tree action ``[G]``: argmax over legal actions of improved policy minus visit share.

    Needs the nodes' ``children_log_prior``.
    """
    policy, logits, flat, share, _, _ = _improved_rows(tree, games * tree.capacity + nodes, c_visit, c_scale)
    policy.ravel()[flat] -= share
    choice = policy.argmax(axis=1)
    # Illegal children score 0 here, not -inf: one wins only if no legal child scores above 0.
    picked = logits[np.arange(games.size), choice] > NEG_INF
    if not picked.all():
        wrong = np.flatnonzero(~picked)
        choice[wrong] = np.where(logits[wrong] > NEG_INF, policy[wrong], NEG_INF).argmax(axis=1)
    return choice


@dataclasses.dataclass
class Interior:
    """The in-tree choice at every node, kept up to date for one search.

    The choice at a node depends on that node's children alone, which change
    only when a simulation passes through it. Choosing again right after
    backup at the nodes on the simulations' paths, for all games in one call,
    gives the very actions the next descent would choose, without one call
    per tree level there (numpy's fixed cost per call dominates those).

    Attributes:
        next_action: ``int64 [B, N]`` the action the descent takes at each node: the one
            ``select_interior`` gives where there are two or more legal actions (-1 until
            this search has computed it), else ``tree.forced`` (the only one, or -2: game over).
    """

    next_action: np.ndarray
    c_visit: float
    c_scale: float

    @classmethod
    def start(cls, tree: Tree, c_visit: float, c_scale: float) -> "Interior":
        """The choices at the nodes of a reused subtree (below the roots) and the roots' log priors
        (for the final policy).

        A node's choice stays what it is now until a simulation passes
        through it, so all are made in one call here rather than level by
        level when the descents first reach them.
        """
        games = np.arange(tree.batch_size)
        tree.children_log_prior[:, 0] = log_prior(tree, games, np.zeros_like(games))
        interior = cls(tree.forced.astype(np.int64), c_visit, c_scale)
        games, nodes = np.nonzero((tree.forced == -1) & (np.arange(tree.capacity) < tree.num_nodes[:, None]))
        inner = np.flatnonzero(nodes > 0)
        if inner.size:
            interior.choose(tree, games[inner], nodes[inner])
        return interior

    def choose(self, tree: Tree, games: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Choose (and remember) the action ``[G]`` at ``nodes`` of ``games``, where ``next_action``
        has none yet (-1): nodes of a reused subtree (``start`` chooses at all of them)."""
        tree.children_log_prior[games, nodes] = log_prior(tree, games, nodes)
        action = select_interior(tree, games, nodes, self.c_visit, self.c_scale)
        self.next_action[games, nodes] = action
        return action

    def refresh(self, tree: Tree, games: np.ndarray, nodes: np.ndarray) -> None:
        """Choose again at ``nodes`` of ``games`` (two or more legal actions), whose children changed."""
        if games.size:
            self.next_action[games, nodes] = select_interior(tree, games, nodes, self.c_visit, self.c_scale)

    def expanded(
        self, tree: Tree, games: np.ndarray, nodes: np.ndarray, forced: np.ndarray, live: np.ndarray,
        prior: "np.ndarray | None", legal: "np.ndarray | None",
    ) -> None:
        """Next actions at new nodes ``nodes`` of ``games``, whose ``tree.forced`` is ``forced`` ``[G]``;
        for the ``live`` ones (indices into them) also the log prior, from their ``prior`` and ``legal`` ``[L, A]``.

        With no child visited, sigma is exactly 0, so ``select_interior``
        reduces to the argmax of ``softmax(log prior)``: the first action of
        highest log prior, unless another one is so close below it (1e-5)
        that exp and the division could round the two alike. exp is accurate
        to a few ulps (1e-7), so only those rows need the softmax itself.
        """
        action = forced.astype(np.int64)
        if live.size:
            with np.errstate(divide="ignore"):
                logits = np.log(np.maximum(prior, legal * TINY_PRIOR))  # log_prior's, -inf on illegal actions
            tree.children_log_prior[games[live], nodes[live]] = logits
            best = logits.argmax(axis=1)
            top = logits[np.arange(live.size), best][:, None]
            close = np.flatnonzero(((logits > top - 1e-5) & (logits < top)).any(axis=1))
            if close.size:
                z = logits[close] - top[close]
                policy = np.exp(z, out=z)
                policy /= policy.sum(axis=1, keepdims=True)
                best[close] = policy.argmax(axis=1)  # legal ones are > 0
            choice = np.flatnonzero(action[live] == -1)
            action[live[choice]] = best[choice]
        self.next_action[games, nodes] = action


def root_policy(tree: Tree, c_visit: float, c_scale: float) -> "tuple[np.ndarray, np.ndarray]":
    """The training targets at the roots: the improved policy ``[B, A]`` and its value ``[B]`` (0 where
    the game is over).

    The value is the improved policy's expectation of the completed Q, from
    the side to move's view. The roots' mean value averages every considered
    action's simulations, bad ones included (sequential halving visits all
    of them), so it understates what the search found; this one weighs each
    action by how much the search recommends it.

    Needs the roots' ``children_log_prior`` (``Interior.start`` writes them).
    """
    policy = np.zeros((tree.batch_size, tree.children_prior.shape[2]), np.float32)
    value = np.zeros(tree.batch_size, np.float32)
    live = np.flatnonzero(tree.num_legal[:, 0] > 0)
    if live.size:
        rows, _, flat, _, mixed, q_visited = _improved_rows(tree, live * tree.capacity, c_visit, c_scale)
        on_visited = rows.ravel()[flat]
        visited_mass = np.bincount(flat // rows.shape[1], on_visited, minlength=live.size)
        visited_value = np.bincount(flat // rows.shape[1], on_visited * q_visited, minlength=live.size)
        value[live] = mixed * (1.0 - visited_mass) + visited_value
        policy[live] = rows
    return policy, value
