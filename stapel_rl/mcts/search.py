"""Batched MCTS: one evaluator call per simulation for all B games.

Each simulation walks every game's tree from the root to an unexpanded edge
(PUCT or Gumbel selection), steps the engine once for all leaves, evaluates
the new positions in one batch and backs the values up. Values flip sign only
where the player to move changes: the leaps of one capture keep the player.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from stapel_rl.env import engine
from stapel_rl.env.state import State, take
from stapel_rl.mcts import gumbel, puct
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
    tree: the search trees (pass to ``reuse`` for the next move).
    """

    action: np.ndarray
    policy: np.ndarray
    visits: np.ndarray
    root_value: np.ndarray
    tree: Tree


def masked_softmax(logits: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Probabilities ``[B, A]`` over legal actions; rows without legal actions are all 0."""
    z = np.where(legal, logits, -np.inf)
    top = np.max(z, axis=1, keepdims=True, initial=-np.inf)
    e = np.where(legal, np.exp(z - np.where(np.isfinite(top), top, 0)), 0.0)
    total = e.sum(axis=1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0).astype(np.float32)


def _expand(
    tree: Tree,
    games: np.ndarray,
    parents: np.ndarray,
    actions: np.ndarray,
    evaluator: Evaluator,
    interior: "gumbel.Interior | None" = None,
) -> np.ndarray:
    """Create the children reached by ``actions``, evaluate them in one call; their node indices."""
    if (tree.num_nodes[games] >= tree.capacity).any():
        raise RuntimeError("search tree is full: allocate more nodes than simulations")
    states = engine.step(read_states(tree, games, parents), actions, validate=False)
    new = tree.num_nodes[games].astype(np.int64)
    tree.num_nodes[games] += 1
    write_states(tree, games, new, states)
    tree.parents[games, new] = parents
    tree.action_from_parent[games, new] = actions
    tree.children_index[games, parents, actions] = new
    _evaluate(tree, games, new, states, evaluator, interior)
    return new


def _evaluate(
    tree: Tree,
    games: np.ndarray,
    nodes: np.ndarray,
    states: State,
    evaluator: Evaluator,
    interior: "gumbel.Interior | None" = None,
) -> None:
    """Prior and value of new nodes: the evaluator's, or the true result where the game is over.

    ``interior`` (Gumbel) gets its first choice at the live ones.
    """
    over = states.terminated | states.truncated
    value = states.rewards[np.arange(states.batch_size), states.current_player].astype(np.float32)
    live = np.flatnonzero(~over)
    if live.size:
        evaluation = evaluator(take(states, live))
        value[live] = evaluation.value
        legal = states.legal_action_mask[live]
        prior = masked_softmax(evaluation.logits, legal)
        tree.children_prior[games[live], nodes[live]] = prior
        tree.children_values[games[live], nodes[live]] = np.where(legal, 0, ILLEGAL_VALUE)
        if interior is not None:
            interior.expanded(tree, games[live], nodes[live], prior, legal)
    tree.raw_values[games, nodes] = value


def _backup(tree: Tree, leaves: np.ndarray) -> None:
    """Add each game's leaf value to the leaf and its ancestors, flipping sign at changes of player."""
    games = np.arange(tree.batch_size)
    node = leaves.astype(np.int64)
    value = tree.raw_values[games, node]
    while games.size:
        n = node[games]
        v = value[games]
        visits = tree.node_visits[games, n]
        tree.node_values[games, n] += (v - tree.node_values[games, n]) / (visits + 1)
        tree.node_visits[games, n] = visits + 1
        parent = tree.parents[games, n]
        up = parent >= 0
        games, n, v, parent = games[up], n[up], v[up], parent[up]
        v = np.where(tree.player[games, parent] == tree.player[games, n], v, -v)
        a = tree.action_from_parent[games, n]
        visits = tree.children_visits[games, parent, a]
        tree.children_values[games, parent, a] += (v - tree.children_values[games, parent, a]) / (visits + 1)
        tree.children_visits[games, parent, a] = visits + 1
        node[games] = parent
        value[games] = v


def _simulate(
    tree: Tree,
    evaluator: Evaluator,
    config: SearchConfig,
    k: int,
    noise: np.ndarray,
    root: "gumbel.Root | None",
    interior: "gumbel.Interior | None",
) -> None:
    """One simulation in every game: select, expand (one engine step and one evaluator call), back up.

    ``root``, ``interior``: Gumbel's choices at the roots and inside the trees (None for PUCT).
    """
    b = tree.batch_size
    node = np.zeros(b, np.int64)
    leaf_action = np.full(b, -1, np.int64)
    active = np.arange(b)
    at_root = True
    chose_games, chose_nodes = [], []  # where Gumbel chose inside the tree: to choose again after backup
    while active.size:
        active = active[~tree.terminal[active, node[active]]]
        if not active.size:
            break
        n = node[active]
        a = tree.forced[active, n].astype(np.int64)
        free = np.flatnonzero(a < 0)  # nodes with a choice; the others have one legal action
        if free.size and config.algorithm == "puct":
            a[free] = puct.select(tree, active[free], n[free], config.c_puct, noise)
        elif free.size and at_root:
            a[free] = root.select(tree, k)
        elif free.size:
            chose_games.append(active[free])
            chose_nodes.append(n[free])
            a[free] = interior.choose(tree, chose_games[-1], chose_nodes[-1])
        at_root = False
        child = tree.children_index[active, n, a]
        stop = child < 0
        leaf_action[active[stop]] = a[stop]
        node[active[~stop]] = child[~stop]
        active = active[~stop]
    expanding = np.flatnonzero(leaf_action >= 0)
    if expanding.size:
        node[expanding] = _expand(tree, expanding, node[expanding], leaf_action[expanding], evaluator, interior)
    _backup(tree, node)
    if root is not None:
        root.update(tree)
        interior.refresh(tree, np.concatenate(chose_games or [node[:0]]), np.concatenate(chose_nodes or [node[:0]]))


def search(
    state: State,
    evaluator: Evaluator,
    config: SearchConfig,
    rng: np.random.Generator,
    tree: "Tree | None" = None,
    buffer: "Tree | None" = None,
) -> SearchOutput:
    """Search every game of ``state`` (at a decision point) and choose an action.

    ``tree`` continues from an earlier search's subtree (see ``reuse``); its
    root must hold ``state``. Otherwise a new tree is made, in ``buffer``'s
    arrays if given (e.g. the previous search's tree). Games already over get
    a meaningless action.
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
        root = gumbel.Root.start(
            tree, noise, base_visits, config.max_considered, config.num_simulations, config.c_visit, config.c_scale
        )
        interior = gumbel.Interior.start(tree, config.c_visit, config.c_scale)
    for k in range(config.num_simulations):
        _simulate(tree, evaluator, config, k, noise, root, interior)

    visits = tree.children_visits[:, 0].copy()
    if config.algorithm == "puct":
        policy = puct.visit_policy(visits, 1.0)
        choice = puct.visit_policy(visits, config.temperature)
        u = rng.random((b, 1))
        action = np.minimum((np.cumsum(choice, axis=1) < u).sum(axis=1), legal.shape[1] - 1)
        action = np.where(choice.sum(axis=1) > 0, action, legal.argmax(axis=1))
    else:
        policy = gumbel.root_policy(tree, config.c_visit, config.c_scale)
        action = root.final_action(tree)
    return SearchOutput(action.astype(np.int64), policy, visits, tree.node_values[:, 0].copy(), tree)
