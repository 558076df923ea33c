"""Gumbel AlphaZero (Danihelka et al., 2022): Gumbel top-k, sequential halving, completed Q.

At the root, m actions are sampled without replacement by Gumbel top-k on the
prior logits and the simulation budget is spread over them by sequential
halving; inside the tree actions are chosen deterministically to move the
visit distribution towards the improved policy ``softmax(logits + sigma(q))``,
which is also the training target. The policy improves even with a handful
of simulations.

Selection runs at every simulation, so it is written for speed (``Root``,
``Interior``), yet computes the very same float32 numbers as the plain
formulas (the paper's, kept in tests/test_mcts.py as the reference): sums run
over the same 200-wide rows in the same order, and only order-free steps
(min, max, argmax, elementwise arithmetic) are done on the few visited
children alone, the unvisited ones sharing one completed Q.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from stapel_rl.mcts.tree import Tree

NEG_INF = np.float32(-np.inf)
POS_INF = np.float32(np.inf)
TINY_PRIOR = np.float32(1e-30)
SMALLEST = np.finfo(np.float32).smallest_subnormal


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
) -> "tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]":
    """``softmax(logits + sigma(completed Q))`` ``[G, A]`` at expanded live nodes ``node`` (game * N + node).

    Needs their ``children_log_prior``. Also returns what selection needs
    besides: the log prior ``[G, A]``, the visited children's flat positions
    in it and their visit shares ``visits / node visits``.
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
    return policy, logits, flat, visits_visited / node_visits[rows]


def select_interior(tree: Tree, games: np.ndarray, nodes: np.ndarray, c_visit: float, c_scale: float) -> np.ndarray:
    """Deterministic in-tree action ``[G]``: argmax over legal actions of improved policy minus visit share.

    Needs the nodes' ``children_log_prior``.
    """
    policy, logits, flat, share = _improved_rows(tree, games * tree.capacity + nodes, c_visit, c_scale)
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


def root_policy(tree: Tree, c_visit: float, c_scale: float) -> np.ndarray:
    """The training target ``[B, A]``: the roots' improved policy (all 0 where the game is over).

    Needs the roots' ``children_log_prior`` (``Interior.start`` writes them).
    """
    policy = np.zeros((tree.batch_size, tree.children_prior.shape[2]), np.float32)
    live = np.flatnonzero(tree.num_legal[:, 0] > 0)
    policy[live] = _improved_rows(tree, live * tree.capacity, c_visit, c_scale)[0]
    return policy


@dataclasses.dataclass
class Root:
    """Sequential halving at the roots of the F games with a choice there, for one search.

    Each simulation changes one root child per game, so instead of rescoring
    all A actions every time (what mctx avoids too), the root keeps per-action
    arrays in which ``update`` refreshes only that child. After its first
    phase a game's candidates are among the M actions it has visited
    (``considered``), so scoring reads M columns, not A.

    Attributes:
        games: ``int64 [F]`` the games (root live, with two or more legal actions).
        score: ``float32 [F, A]`` Gumbel noise + prior logits, -inf on illegal actions.
        fresh_score: ``float32 [F, A]`` ``score`` where this search has not visited the action, else -inf.
        targets: ``int64 [F, S]`` this search's visit count required of each simulation's root action.
        base_visits: ``int32 [F, A]`` root child visits inherited from a reused subtree.
        inherited: ``bool [F]`` the game inherited visits.
        prior: ``float32 [F, A]`` the root prior.
        prior_visited: ``float32 [F, A]`` prior of visited children, else 0; ``visited_prior``
            ``float32 [F]`` its row sums.
        prior_q: ``float32 [F, A]`` prior * Q of visited children, else 0.
        q_low, q_high: ``float32 [F, A]`` Q of visited children, else +inf / -inf.
        num_visited, num_legal: ``int64 [F]`` visited children, legal actions.
        max_visits: ``int32 [F]`` most visits of one child.
        considered: ``int64 [F, M]`` the actions this search visited, ascending (ties go to the
            lowest), padded with the last; filled when a game leaves the first phase
            (``has_considered`` ``bool [F]``). ``considered_at`` ``int64 [F, M]``: their flat index
            in the tree's ``[B, N, A]`` arrays; ``considered_base`` ``int32 [F, M]``, ``considered_score``
            ``float32 [F, M]``: ``base_visits``, ``score`` there.
        chosen: ``int64 [F]`` the actions of the last ``select``.
    """

    games: np.ndarray
    score: np.ndarray
    fresh_score: np.ndarray
    targets: np.ndarray
    base_visits: np.ndarray
    inherited: np.ndarray
    prior: np.ndarray
    prior_visited: np.ndarray
    visited_prior: np.ndarray
    prior_q: np.ndarray
    q_low: np.ndarray
    q_high: np.ndarray
    num_visited: np.ndarray
    num_legal: np.ndarray
    max_visits: np.ndarray
    considered: np.ndarray
    considered_at: np.ndarray
    considered_base: np.ndarray
    considered_score: np.ndarray
    has_considered: np.ndarray
    chosen: np.ndarray
    c_visit: float
    c_scale: float

    @classmethod
    def start(
        cls, tree: Tree, gumbel: np.ndarray, base_visits: np.ndarray, max_considered: int, num_simulations: int,
        c_visit: float, c_scale: float,
    ) -> "Root":
        """The root state before the first simulation; ``gumbel``: ``[B, A]`` noise, -inf on illegal actions."""
        games = np.flatnonzero(tree.forced[:, 0] == -1)
        visits = tree.children_visits[games, 0]
        q = tree.children_values[games, 0]
        prior = tree.children_prior[games, 0]
        visited = visits > 0
        score = gumbel[games] + log_prior(tree, games, np.zeros(games.size, np.int64))
        num_legal = tree.num_legal[games, 0].astype(np.int64)
        prior_visited = np.where(visited, prior, 0)
        m = (games.size, max(1, min(max_considered, score.shape[1])))
        return cls(
            games=games, score=score, fresh_score=score.copy(),
            targets=considered_table(max_considered, num_simulations)[np.minimum(num_legal, max_considered)],
            base_visits=base_visits[games], inherited=visited.any(axis=1), prior=prior,
            prior_visited=prior_visited, visited_prior=prior_visited.sum(axis=1),
            prior_q=np.where(visited, prior * q, 0),
            q_low=np.where(visited, q, POS_INF), q_high=np.where(visited, q, NEG_INF),
            num_visited=visited.sum(axis=1), num_legal=num_legal, max_visits=visits.max(axis=1, initial=0),
            considered=np.zeros(m, np.int64), considered_at=np.zeros(m, np.int64),
            considered_base=np.zeros(m, np.int32), considered_score=np.zeros(m, np.float32),
            has_considered=np.zeros(games.size, bool), chosen=np.zeros(games.size, np.int64),
            c_visit=c_visit, c_scale=c_scale,
        )

    def _scales(self, tree: Tree) -> "tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]":
        """Mixed value, min completed Q, its span (at least 1e-8) and sigma's coefficient, each ``[F]``."""
        total = (tree.node_visits[self.games, 0] - 1).astype(np.float32)
        mixed = _mixed_value(tree.raw_values[self.games, 0], total, self.visited_prior, self.prior_q.sum(axis=1))
        some_unvisited = self.num_visited < self.num_legal
        low, high = self.q_low.min(axis=1), self.q_high.max(axis=1)
        low = np.where(some_unvisited, np.minimum(low, mixed), low)
        high = np.where(some_unvisited, np.maximum(high, mixed), high)
        coef = _sigma_coefficient(self.c_visit, self.c_scale, self.max_visits.astype(np.float32))
        return mixed, low, np.maximum(high - low, 1e-8), coef

    def select(self, tree: Tree, simulation: int) -> np.ndarray:
        """Root action ``[F]`` of simulation number ``simulation``: the best by ``g + logits + sigma(Q)``
        among the actions this search has visited ``targets[:, simulation]`` times."""
        target = self.targets[:, simulation]
        mixed, low, span, coef = self._scales(tree)
        first = target == 0
        # First phase without inherited visits: every candidate is unvisited, so all share one sigma.
        plain = np.flatnonzero(first & ~self.inherited)
        if plain.size:
            sigma = coef[plain] * ((mixed[plain] - low[plain]) / span[plain])
            self.chosen[plain] = (self.fresh_score[plain] + sigma[:, None]).argmax(axis=1)
        mixed_rows = np.flatnonzero(first & self.inherited)
        if mixed_rows.size:
            r = mixed_rows
            completed = np.where(np.isfinite(self.q_low[r]), tree.children_values[self.games[r], 0], mixed[r, None])
            sigma = coef[r, None] * ((completed - low[r, None]) / span[r, None])
            self.chosen[r] = (self.fresh_score[r] + sigma).argmax(axis=1)
        later = np.flatnonzero(~first)
        if later.size:
            self.chosen[later] = self._best_considered(tree, later, target[later], low, span, coef)
        return self.chosen

    def final_action(self, tree: Tree) -> np.ndarray:
        """``[B]`` the best of the root actions this search visited most, by ``g + logits + sigma(Q)``;
        the only one where the root is forced, 0 where the game is over."""
        action = np.maximum(tree.forced[:, 0], 0).astype(np.int64)
        if self.games.size:
            _, low, span, coef = self._scales(tree)
            rows = np.arange(self.games.size)
            self._fill_considered(tree, rows[~self.has_considered])
            most = (tree.children_visits.ravel()[self.considered_at] - self.considered_base).max(axis=1)
            action[self.games] = self._best_considered(tree, rows, most, low, span, coef)
        return action

    def _best_considered(
        self, tree: Tree, rows: np.ndarray, target: np.ndarray, low: np.ndarray, span: np.ndarray, coef: np.ndarray
    ) -> np.ndarray:
        """Of the considered actions of ``rows`` visited ``target`` times by this search, the best by score."""
        self._fill_considered(tree, rows[~self.has_considered[rows]])
        at = self.considered_at[rows]
        this_visits = tree.children_visits.ravel()[at] - self.considered_base[rows]
        # Visited children: their completed Q is their own.
        sigma = coef[rows, None] * ((tree.children_values.ravel()[at] - low[rows, None]) / span[rows, None])
        score = np.where(this_visits == target[:, None], self.considered_score[rows] + sigma, NEG_INF)
        return self.considered[rows, score.argmax(axis=1)]

    def _fill_considered(self, tree: Tree, rows: np.ndarray) -> None:
        """Record the actions ``rows`` visited in this search: no new ones come after the first phase."""
        if not rows.size:
            return
        row, col = np.nonzero(tree.children_visits[self.games[rows], 0] > self.base_visits[rows])  # ascending
        count = np.bincount(row, minlength=rows.size)
        start = np.cumsum(count) - count
        # Padding repeats the last (largest) visited action: the columns stay ascending.
        slot = np.minimum(np.arange(self.considered.shape[1]), np.maximum(count - 1, 0)[:, None])
        cols = col[np.minimum(start[:, None] + slot, col.size - 1)]
        self.considered[rows] = cols
        self.considered_at[rows] = (self.games[rows, None] * tree.capacity) * tree.children_prior.shape[2] + cols
        self.considered_base[rows] = np.take_along_axis(self.base_visits[rows], cols, axis=1)
        self.considered_score[rows] = np.take_along_axis(self.score[rows], cols, axis=1)
        self.has_considered[rows] = True

    def update(self, tree: Tree) -> None:
        """Refresh the arrays at the child each game's last simulation went through (after backup)."""
        num_actions = tree.children_prior.shape[2]
        at = (self.games * tree.capacity) * num_actions + self.chosen  # in the tree's [B, N, A] arrays
        here = np.arange(self.games.size) * num_actions + self.chosen  # in the [F, A] arrays
        q = tree.children_values.ravel()[at]
        prior = self.prior.ravel()[here]
        new = np.flatnonzero(self.q_low.ravel()[here] == POS_INF)
        if new.size:
            self.num_visited[new] += 1
            self.prior_visited.ravel()[here[new]] = prior[new]
            self.visited_prior[new] = self.prior_visited[new].sum(axis=1)
        self.prior_q.ravel()[here] = prior * q
        self.q_low.ravel()[here] = q
        self.q_high.ravel()[here] = q
        self.max_visits = np.maximum(self.max_visits, tree.children_visits.ravel()[at])
        self.fresh_score.ravel()[here] = NEG_INF
