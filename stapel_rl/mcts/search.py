"""Batched MCTS: one evaluator call per simulation for all B games.

Each simulation walks every game's tree from the root to an unexpanded edge
(PUCT or Gumbel selection), steps the engine once for all leaves, evaluates
the new positions in one batch and backs the values up. Values flip sign only
where the player to move changes: the leaps of one capture keep the player.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import torch

from stapel_rl.env import engine
from stapel_rl.env.state import State, take
from stapel_rl.mcts import gumbel, halving, puct
from stapel_rl.mcts.qtransforms import NEG_INF
from stapel_rl.mcts.tree import ILLEGAL_VALUE, Tree, allocate, read_states, write_states
from stapel_rl.models.evaluator import Evaluator


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """Attributes:
    num_simulations: simulations (node expansions) per search.
    algorithm: "puct" (AlphaZero) or "gumbel" (Gumbel AlphaZero).
    c_puct: PUCT exploration constant.
    dirichlet_alpha: concentration of the root Dirichlet noise (PUCT).
    dirichlet_fraction: weight of that noise in the root prior; 0 disables it.
    temperature: move choice. PUCT: from visit counts N^(1/T), 0 plays the most
        visited. Gumbel: 0 drops the Gumbel noise (deterministic top-k by prior
        and value), any other value keeps it (self-play exploration).
    max_considered: Gumbel: actions sampled at the root (sequential halving over them).
    c_visit, c_scale: Gumbel: sigma(q) = (c_visit + max visits) * c_scale * q.
    skip_forced: a new node holds the next decision point: the engine plays
        on through forced actions (``engine.play_forced``: the later leaps of
        the only capture path, an only move) without a node or an evaluator
        call for each. A capture chain then costs one simulation, not one per
        leap, and the tree sees further. Pair it with a self-play or agent
        loop that plays forced actions itself, so roots are decision points
        (a forced root still works: its one child is searched).
    forced_rounds: with ``skip_forced``, the forced actions a new node plays
        on through at most. The engine plays them for all games of a batch
        together, one batched step per round, so the batch's longest forced
        run sets the cost of every expansion; a game still on a forced action
        after this many keeps it as a node of its own (as without skipping).
        ``None`` (agents: one game, nothing to save): no cap; self-play
        passes ``mcts.forced_rounds``.
    """

    num_simulations: int = 64
    algorithm: str = "puct"
    c_puct: float = 1.5
    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25
    temperature: float = 1.0
    max_considered: int = 16
    c_visit: float = 50.0
    c_scale: float = 0.1
    skip_forced: bool = True
    forced_rounds: "int | None" = None

    def __post_init__(self):
        if self.algorithm not in ("puct", "gumbel"):
            raise ValueError(f"algorithm must be 'puct' or 'gumbel', got {self.algorithm!r}")
        if self.num_simulations < 1:
            raise ValueError(f"num_simulations must be at least 1, got {self.num_simulations}")


@dataclasses.dataclass
class SearchOutput:
    """Attributes:
    action: ``int64 [B]`` board action chosen in each game.
    policy: ``float32 [B, 200]`` training target: visit distribution (PUCT)
        or the improved policy softmax(logits + sigma(completed Q)) (Gumbel).
    visits: ``int32 [B, 200]`` root children's visit counts.
    root_value: ``float32 [B]`` the root's mean value, side to move's view.
    search_value: ``float32 [B]`` the value the search gives the root, side to
        move's view, as a training target: the root's mean value (PUCT, whose
        visits follow its best actions), or the improved policy's expectation
        of the completed Q (Gumbel, whose sequential halving visits bad
        actions as often as good ones early on: its mean value understates
        the position). A finished game's result.
    tree: the search trees (pass to ``reuse`` for the next move).
    """

    action: np.ndarray
    policy: np.ndarray
    visits: np.ndarray
    root_value: np.ndarray
    search_value: np.ndarray
    tree: Tree


def _expand(
    tree: Tree,
    games: np.ndarray,
    parents: np.ndarray,
    actions: np.ndarray,
    evaluator: Evaluator,
    interior: "gumbel.Interior | None" = None,
    skip_forced: bool = False,
    forced_rounds: "int | None" = None,
) -> np.ndarray:
    """Create the children reached by ``actions``, evaluate them in one call; their node indices.

    With ``skip_forced`` a child holds the position after the forced actions that follow its action.
    """
    new = tree.num_nodes[games]
    if (new >= tree.capacity).any():
        raise RuntimeError("search tree is full: allocate more nodes than simulations")
    tree.num_nodes[games] = new + 1
    new = new.astype(np.int64)
    states = engine.step(read_states(tree, games, parents), actions, validate=False, in_place=True)
    if skip_forced:
        states, _ = engine.play_forced(states, forced_rounds, in_place=True)  # ``step`` made it: no copy
    forced = write_states(tree, games, new, states)
    tree.parents[games, new] = parents
    tree.action_from_parent[games, new] = actions
    tree.children_index[games, parents, actions] = new
    _evaluate(tree, games, new, states, evaluator, interior, forced)
    return new


def _evaluate(
    tree: Tree,
    games: np.ndarray,
    nodes: np.ndarray,
    states: State,
    evaluator: Evaluator,
    interior: "gumbel.Interior | None" = None,
    forced: "np.ndarray | None" = None,
) -> None:
    """Prior and value of new nodes: the evaluator's, or the true result where the game is over.

    ``interior`` (Gumbel) gets its first choice at the new nodes, ``forced``
    being what ``write_states`` returned for them.
    """
    over = states.terminated | states.truncated
    value = states.rewards[np.arange(states.batch_size), states.current_player]
    live = np.flatnonzero(~over)
    if live.size:
        every = live.size == over.size
        evaluation = evaluator(states if every else take(states, live))
        value[live] = evaluation.value
        legal = states.legal_action_mask if every else states.legal_action_mask[live]
        # 0 where legal, ILLEGAL_VALUE (exactly -1e9 in float32) elsewhere: cheaper than np.where.
        values = np.subtract(legal, np.float32(1), dtype=np.float32)
        values *= -ILLEGAL_VALUE
        prior = _softmax_live(evaluation.logits, values, legal)
        g, n = games[live], nodes[live]
        tree.children_prior[g, n] = prior
        tree.children_values[g, n] = values
    else:
        prior = None
    if live.size < over.size:  # a finished game's node has no children; clear what an earlier search left
        g, n = games[over], nodes[over]
        tree.children_prior[g, n] = 0
        tree.children_values[g, n] = 0
    if interior is not None:
        assert forced is not None  # _expand gives both
        interior.expanded(tree, games, nodes, forced, live, prior)
    tree.raw_values[games, nodes] = value


def _softmax_live(logits: np.ndarray, penalty: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``masked_softmax`` for rows with at least one legal action (``float32 [L, A]``), to float32
    rounding, in a quarter of the time.

    ``penalty`` is 0 on legal actions and ILLEGAL_VALUE elsewhere: adding it
    (one pass, where masking with ``legal`` takes three) keeps the legal
    logits exact, and once the row maximum, a legal logit, is subtracted, exp
    underflows to exactly 0 on the illegal ones. That holds while every logit
    is within 1e8 of 0 (two whole-array reductions check it); otherwise
    ``legal`` masks. torch's softmax runs the row maximum and sum vectorised
    (numpy's reductions over rows of 200 are not): 4x faster at 512 rows.
    """
    logits = np.ascontiguousarray(logits, dtype=np.float32)
    if -1e8 <= logits.min() and logits.max() <= 1e8:
        z = torch.from_numpy(logits) + torch.from_numpy(penalty)
    else:
        z = torch.from_numpy(np.where(legal, logits, NEG_INF))
    return torch.softmax(z, dim=1).numpy()


def _backup(tree: Tree, final: np.ndarray, games: np.ndarray, nodes: np.ndarray, actions: np.ndarray) -> None:
    """Add each game's leaf value to the nodes and edges of its path, flipping sign at changes of player.

    ``final`` ``[B]``: each game's last node, flat (game * N + node); ``games``,
    ``nodes`` (flat), ``actions``: the edges of all paths, in any order. With
    two players, the value seen from a node is the leaf's where the same player
    moves at both, else its negation, however often the turn changed between.
    The nodes of one path are distinct, so all are updated at once, with the
    arithmetic (and float rounding) of one update at a time.
    """
    node_values, node_visits = tree.node_values.reshape(-1), tree.node_visits.reshape(-1)
    player = tree.player.reshape(-1)
    leaf_value = tree.raw_values.reshape(-1)[final]
    v = leaf_value[games]
    v = np.where(player[nodes] == player[final][games], v, -v)
    at = np.concatenate((nodes, final))
    value = np.concatenate((v, leaf_value))
    visits = node_visits[at]
    old = node_values[at]
    node_values[at] = old + (value - old) / (visits + 1)
    node_visits[at] = visits + 1
    edge = nodes * tree.children_index.shape[2] + actions
    children_values, children_visits = tree.children_values.reshape(-1), tree.children_visits.reshape(-1)
    visits = children_visits[edge]
    old = children_values[edge]
    children_values[edge] = old + (v - old) / (visits + 1)
    children_visits[edge] = visits + 1


def _simulate(
    tree: Tree,
    evaluator: Evaluator,
    config: SearchConfig,
    k: int,
    noise: np.ndarray,
    root: "halving.Root | None",
    interior: "gumbel.Interior | None",
) -> None:
    """One simulation in every game: select, expand (one engine step and one evaluator call), back up.

    ``root``, ``interior``: Gumbel's choices at the roots and inside the trees (None for PUCT).
    The descent works on flat node indices (game * N + node) and reads the
    action of each node from one array: ``tree.forced`` (PUCT) or Gumbel's
    cached choices, where -2 ends the path (game over) and -1 asks for a choice.
    """
    b, capacity = tree.batch_size, tree.capacity
    num_actions = tree.children_index.shape[2]
    children = tree.children_index.reshape(-1)
    games = np.arange(b)
    node = games * capacity
    final = node.copy()  # each game's last node on its path
    action = tree.forced[:, 0].astype(np.int64)
    if root is None:
        cache = tree.forced.reshape(-1)
        free = np.flatnonzero(action == -1)
        if free.size:
            action[free] = puct.select(tree, free, np.zeros(free.size, np.int64), config.c_puct, noise)
    else:
        assert interior is not None  # Gumbel has both
        cache = interior.next_action.reshape(-1)
        if root.games.size:
            action[root.games] = root.select(tree, k)
    path_games, path_nodes, path_actions, path_children = [], [], [], []
    while True:
        if action.min() < 0:
            over = action == -2
            if over.any():
                final[games[over]] = node[over]
                keep = ~over
                games, node, action = games[keep], node[keep], action[keep]
                if not games.size:
                    break
            missing = np.flatnonzero(action == -1)
            if missing.size:
                g = games[missing]
                nodes_here = node[missing] - g * capacity
                if root is None:
                    action[missing] = puct.select(tree, g, nodes_here, config.c_puct, noise)
                else:
                    assert interior is not None  # Gumbel has both
                    action[missing] = interior.choose(tree, g, nodes_here)
        child = children[node * num_actions + action]
        path_games.append(games)
        path_nodes.append(node)
        path_actions.append(action)
        path_children.append(child)
        # Some game reaches an unexpanded edge at nearly every level: filter without checking first.
        keep = child >= 0
        games, child = games[keep], child[keep]
        if not games.size:
            break
        node = games * capacity + child
        action = cache[node].astype(np.int64, copy=False)
    if path_games:
        games, nodes = np.concatenate(path_games), np.concatenate(path_nodes)
        actions = np.concatenate(path_actions)
        leaf = np.flatnonzero(np.concatenate(path_children) < 0)  # at most one per game
        if leaf.size:
            order = leaf[games[leaf].argsort()]  # the games in order, as the evaluator always saw them
            expanding = games[order]
            parents = nodes[order] - expanding * capacity
            new = _expand(
                tree, expanding, parents, actions[order], evaluator, interior, config.skip_forced, config.forced_rounds
            )
            final[expanding] = expanding * capacity + new
        _backup(tree, final, games, nodes, actions)
    else:
        _backup(tree, final, final[:0], final[:0], final[:0])
    if root is not None:
        root.update(tree)
        if len(path_nodes) > 1:
            # The nodes below the roots where the path chose: their children changed.
            below = path_games[0].size + np.flatnonzero(tree.forced.reshape(-1)[nodes[path_games[0].size :]] == -1)
            assert interior is not None  # Gumbel has both
            interior.refresh(tree, games[below], nodes[below] - games[below] * capacity)


def search(
    state: State,
    evaluator: Evaluator,
    config: SearchConfig,
    rng: np.random.Generator,
    tree: "Tree | None" = None,
    buffer: "Tree | None" = None,
    deadline: "float | None" = None,
) -> SearchOutput:
    """Search every game of ``state`` (at a decision point) and choose an action.

    ``tree`` continues from an earlier search's subtree (see ``reuse``), or
    from an earlier search of the same roots (grown with ``tree.grow``); its
    root must hold ``state``. Otherwise a new tree is made, in ``buffer``'s
    arrays if given (e.g. the previous search's tree). Games already over get
    a meaningless action. ``deadline`` (a ``time.perf_counter()`` value) stops
    the search early: no simulation starts after it, but the first always runs.
    """
    b = state.batch_size
    if tree is None:
        tree = allocate(state, config.num_simulations + 1, out=buffer)
    roots = np.zeros(b, np.int64)
    fresh = np.flatnonzero(tree.node_visits[:, 0] == 0)
    if fresh.size:
        _evaluate(tree, fresh, roots[fresh], take(state, fresh), evaluator)
        tree.node_values[fresh, 0] = tree.raw_values[fresh, 0]
        tree.node_visits[fresh, 0] = 1
    legal = tree.legal[:, 0]
    if config.algorithm == "puct":
        noise = (rng.random((b, legal.shape[1]), dtype=np.float32) * 1e-6).astype(np.float32)
        if config.dirichlet_fraction > 0:
            tree.children_prior[:, 0] = puct.dirichlet_noise(
                tree.children_prior[:, 0], legal, config.dirichlet_alpha, config.dirichlet_fraction, rng
            )
    else:
        scale = 1.0 if config.temperature > 0 else 0.0
        noise = np.where(legal, scale * rng.gumbel(size=legal.shape), -np.inf).astype(np.float32)
    base_visits = tree.children_visits[:, 0].copy()  # inherited from a reused subtree
    root = interior = None
    if config.algorithm == "gumbel":
        root = halving.Root.start(
            tree, noise, base_visits, config.max_considered, config.num_simulations, config.c_visit, config.c_scale
        )
        interior = gumbel.Interior.start(tree, config.c_visit, config.c_scale)
    for k in range(config.num_simulations):
        if deadline is not None and k and time.perf_counter() >= deadline:
            break
        _simulate(tree, evaluator, config, k, noise, root, interior)

    visits = tree.children_visits[:, 0].copy()
    root_value = tree.node_values[:, 0].copy()
    if config.algorithm == "puct":
        search_value = root_value
        policy = puct.visit_policy(visits, 1.0)
        choice = puct.visit_policy(visits, config.temperature)
        u = rng.random((b, 1))
        action = np.minimum((np.cumsum(choice, axis=1) < u).sum(axis=1), legal.shape[1] - 1)
        action = np.where(choice.sum(axis=1) > 0, action, legal.argmax(axis=1))
    else:
        policy, search_value = gumbel.root_policy(tree, config.c_visit, config.c_scale)
        search_value = np.where(tree.num_legal[:, 0] > 0, search_value, root_value)
        assert root is not None  # made for Gumbel above
        action = root.final_action(tree)
    return SearchOutput(action.astype(np.int64), policy, visits, root_value, search_value, tree)
