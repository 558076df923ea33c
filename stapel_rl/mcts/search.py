"""Batched MCTS: one evaluator call per simulation for all B games.

Each simulation walks every game's tree from the root to an unexpanded edge
(the algorithm's selection functions: ``puct.PUCT``, ``gumbel.Gumbel``), steps the engine once for all leaves, evaluates
the new positions in one batch and backs the values up. Values flip sign only
where the player to move changes: the leaps of one capture keep the player.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np

from stapel_rl.env import engine
from stapel_rl.env.state import State, take
from stapel_rl.mcts import lanes, solver
from stapel_rl.mcts.algorithm import Algorithm
from stapel_rl.mcts.config import ALGORITHM_NAMES, SearchConfig
from stapel_rl.mcts.expand import evaluate
from stapel_rl.mcts.gumbel import Gumbel
from stapel_rl.mcts.puct import PUCT
from stapel_rl.mcts.tree import Tree, allocate, read_states, write_states
from stapel_rl.models.evaluator import Evaluator

#: The algorithm of each ``SearchConfig.algorithm``: a callable ``(tree, config, rng, base_visits) -> Algorithm``.
ALGORITHMS: "dict[str, Callable[[Tree, SearchConfig, np.random.Generator, np.ndarray], Algorithm]]" = {
    "puct": PUCT.start,
    "gumbel": Gumbel.start,
}
assert set(ALGORITHMS) == set(ALGORITHM_NAMES), "SearchConfig validates against ALGORITHM_NAMES"


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
    algorithm: "Algorithm | None" = None,
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
    evaluate(tree, games, new, states, evaluator, algorithm, forced)
    return new


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


def _simulate(tree: Tree, evaluator: Evaluator, config: SearchConfig, k: int, algorithm: "Algorithm") -> None:
    """Simulation ``k`` in every game: select, expand (one engine step and one evaluator call), back up.

    The descent works on flat node indices (game * N + node) and reads the
    action of each node from the algorithm's ``node_actions`` (-2 ends the
    path: game over; -1 asks the algorithm for a choice).
    """
    b, capacity = tree.batch_size, tree.capacity
    num_actions = tree.children_index.shape[2]
    children = tree.children_index.reshape(-1)
    games = np.arange(b)
    node = games * capacity
    final = node.copy()  # each game's last node on its path
    action = tree.forced[:, 0].astype(np.int64)
    cache = algorithm.node_actions().reshape(-1)
    algorithm.select_roots(tree, k, action)
    path_games: "list[np.ndarray]" = []
    path_nodes: "list[np.ndarray]" = []
    path_actions: "list[np.ndarray]" = []
    path_children: "list[np.ndarray]" = []
    solve = config.solver and solver.any_proven(tree)
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
                action[missing] = algorithm.select_interior(tree, g, nodes_here)
        if solve and path_games:  # below the roots, whose choice is the algorithm's (and ``final_actions``')
            action = solver.prefer(tree, node, action)
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
                tree, expanding, parents, actions[order], evaluator, algorithm, config.skip_forced, config.forced_rounds
            )
            final[expanding] = expanding * capacity + new
        _backup(tree, final, games, nodes, actions)
        if config.solver and leaf.size:
            flat = expanding * capacity + new
            proven = flat[~np.isnan(tree.exact.reshape(-1)[flat])]
            if proven.size:
                solver.propagate(tree, proven)
    else:
        games = nodes = final[:0]
        _backup(tree, final, games, nodes, games)
    algorithm.simulated(tree, path_games[0].size if path_games else 0, games, nodes)


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
        evaluate(tree, fresh, roots[fresh], take(state, fresh), evaluator)
        tree.node_values[fresh, 0] = tree.raw_values[fresh, 0]
        tree.node_visits[fresh, 0] = 1
    base_visits = tree.children_visits[:, 0].copy()  # inherited from a reused subtree
    algorithm = ALGORITHMS[config.algorithm](tree, config, rng, base_visits)
    if config.leaves_per_call == 1:
        for k in range(config.num_simulations):
            if deadline is not None and k and time.perf_counter() >= deadline:
                break
            if config.solver and k and solved(tree):
                break
            _simulate(tree, evaluator, config, k, algorithm)
    else:
        _simulate_in_steps(tree, evaluator, config, algorithm, deadline)

    visits = tree.children_visits[:, 0].copy()
    root_value = tree.node_values[:, 0].copy()
    action, policy, search_value = algorithm.choose(tree, rng)
    if config.solver:
        action = solver.final_actions(tree, action)
        search_value = np.where(np.isnan(tree.exact[:, 0]), search_value, tree.exact[:, 0])
    return SearchOutput(action.astype(np.int64), policy, visits, root_value, search_value, tree)


def solved(tree: Tree) -> bool:
    """Every root is proven (or its game over): more simulations could not change the answer."""
    return not bool(np.isnan(tree.exact[:, 0]).any())


def _simulate_in_steps(
    tree: Tree, evaluator: Evaluator, config: SearchConfig, algorithm: "Algorithm", deadline: "float | None"
) -> None:
    """``config.num_simulations`` per game in steps of ``config.leaves_per_call`` (``lanes``); the first
    step always runs, none starts after ``deadline``. A lane that collides counts no simulation, so a
    step may add fewer than K; each adds one at least."""
    start = tree.node_visits[:, 0].copy()
    first = True
    while True:
        left = config.num_simulations - (tree.node_visits[:, 0] - start)
        if left.max() <= 0 or not first and deadline is not None and time.perf_counter() >= deadline:
            return
        if config.solver and not first and solved(tree):
            return
        first = False
        count = np.clip(left, 0, config.leaves_per_call)
        lanes.simulate(
            tree, evaluator, algorithm, count, start, config.skip_forced, config.forced_rounds, config.solver
        )
