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
from typing import Protocol

import numpy as np
import torch

from stapel_rl.env import engine
from stapel_rl.env.state import State, take
from stapel_rl.mcts.config import ALGORITHM_NAMES, SearchConfig
from stapel_rl.mcts.gumbel import Gumbel
from stapel_rl.mcts.puct import PUCT
from stapel_rl.mcts.qtransforms import NEG_INF
from stapel_rl.mcts.tree import ILLEGAL_VALUE, Tree, allocate, read_states, write_states
from stapel_rl.models.evaluator import Evaluator


class Algorithm(Protocol):
    """What ``search`` asks of an algorithm: its selection functions and its answer (mctx passes the
    same as ``root_action_selection_fn`` / ``interior_action_selection_fn``). Made per search by
    ``ALGORITHMS[config.algorithm](tree, config, rng, base_visits)`` once the roots are evaluated.
    """

    def node_actions(self) -> np.ndarray:
        """``int [B, N]`` each node's next action where it is known (-1: ask ``select_interior``, -2: over)."""
        ...

    def select_roots(self, tree: Tree, simulation: int, action: np.ndarray) -> None:
        """Fill ``action`` ``[B]`` (the roots' forced actions, -1 where there is a choice) for this simulation."""
        ...

    def select_interior(self, tree: Tree, games: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """The action ``[G]`` at ``nodes`` of ``games``, nodes below the roots with a choice."""
        ...

    def expanded(
        self,
        tree: Tree,
        games: np.ndarray,
        nodes: np.ndarray,
        forced: np.ndarray,
        live: np.ndarray,
        prior: "np.ndarray | None",
    ) -> None:
        """New nodes were evaluated (``forced``: their forced actions; ``live``: rows not over)."""
        ...

    def simulated(self, tree: Tree, first: int, games: np.ndarray, nodes: np.ndarray) -> None:
        """A simulation backed up along the path nodes ``games``/``nodes`` (flat; the first ``first`` are roots)."""
        ...

    def choose(self, tree: Tree, rng: np.random.Generator) -> "tuple[np.ndarray, np.ndarray, np.ndarray]":
        """The search's answer: ``(action [B], policy [B, A], search_value [B])``."""
        ...


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
    _evaluate(tree, games, new, states, evaluator, algorithm, forced)
    return new


def _evaluate(
    tree: Tree,
    games: np.ndarray,
    nodes: np.ndarray,
    states: State,
    evaluator: Evaluator,
    algorithm: "Algorithm | None" = None,
    forced: "np.ndarray | None" = None,
) -> None:
    """Prior and value of new nodes: the evaluator's, or the true result where the game is over.

    ``algorithm`` learns of the new nodes (Gumbel makes its first choice
    there), ``forced`` being what ``write_states`` returned for them.
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
    if algorithm is not None:
        assert forced is not None  # _expand gives both
        algorithm.expanded(tree, games, nodes, forced, live, prior)
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
    (numpy's reductions over rows of 200 are not).
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
                action[missing] = algorithm.select_interior(tree, g, nodes_here)
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
        _evaluate(tree, fresh, roots[fresh], take(state, fresh), evaluator)
        tree.node_values[fresh, 0] = tree.raw_values[fresh, 0]
        tree.node_visits[fresh, 0] = 1
    base_visits = tree.children_visits[:, 0].copy()  # inherited from a reused subtree
    algorithm = ALGORITHMS[config.algorithm](tree, config, rng, base_visits)
    for k in range(config.num_simulations):
        if deadline is not None and k and time.perf_counter() >= deadline:
            break
        _simulate(tree, evaluator, config, k, algorithm)

    visits = tree.children_visits[:, 0].copy()
    root_value = tree.node_values[:, 0].copy()
    action, policy, search_value = algorithm.choose(tree, rng)
    return SearchOutput(action.astype(np.int64), policy, visits, root_value, search_value, tree)
