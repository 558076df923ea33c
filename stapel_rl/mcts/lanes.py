"""Several leaves of one game's tree per evaluator call (``SearchConfig.leaves_per_call``), by virtual loss.

One step sends K lanes down each game's tree and evaluates the leaves they
reach in one evaluator call, as lc0 and KataGo batch one search's leaves.
The lanes descend level by level, all games and lanes at once; lanes that
stand on the same node choose one after another (rounds), each seeing the
earlier ones as visits that lost (virtual loss: the visit counts and a
value of -1 for the mover on each edge taken), so that they spread over
the tree. A lane ends at an unexpanded edge, where it places the new node at
once (not yet evaluated: later lanes stop short of it), or at a finished
game's node. A lane that would enter a node placed in this step collides
and is dropped: it costs no evaluation and counts no visit. Then the
virtual statistics are put back exactly as they were, the new nodes are
stepped and evaluated in one call each, and the lanes' values are backed up.

With K = 1 this is the plain search (``search._simulate`` runs it); with
K > 1 the search differs from K plain simulations in the order of its
updates only: where a plain simulation would see the one before it, a lane
sees its virtual loss.
"""

from __future__ import annotations

import numpy as np

from stapel_rl.env import engine
from stapel_rl.mcts import lanes_compiled, solver
from stapel_rl.mcts.algorithm import Algorithm
from stapel_rl.mcts.expand import evaluate
from stapel_rl.mcts.gumbel import Gumbel
from stapel_rl.mcts.tree import Tree, read_states, write_states
from stapel_rl.models.evaluator import Evaluator

#: What a lane in flight counts for on each edge it takes, from the view of the player choosing there.
VIRTUAL_LOSS = np.float32(-1.0)


class _Step:
    """One step's lanes: their paths, the virtual statistics to undo, the nodes they placed.

    The lanes' moves (``take``) and Gumbel's root rounds run compiled (``lanes_compiled``): they are made
    one lane at a time, where array code would pay its fixed cost per call for a handful of lanes.
    """

    def __init__(self, tree: Tree, algorithm: "Algorithm", games: np.ndarray, solve: bool) -> None:
        self.tree, self.algorithm = tree, algorithm
        self.n, self.a = tree.capacity, tree.children_index.shape[2]
        self.children = tree.children_index.reshape(-1)
        self.node_visits = tree.node_visits.reshape(-1)
        self.edge_visits = tree.children_visits.reshape(-1)
        self.edge_values = tree.children_values.reshape(-1)
        self.cache = algorithm.node_actions().reshape(-1)
        self.forced = tree.forced.reshape(-1)
        self.game = games  # each lane's game
        self.final = np.full(games.size, -1, np.int64)  # each lane's last node, flat
        self.dropped = np.zeros(games.size, bool)
        self.pending = np.zeros(tree.batch_size * tree.capacity, bool)
        self.saved: "list[list[np.ndarray]]" = []  # what lanes changed: node visits, edge visits, edge values
        self.path_lane: "list[np.ndarray]" = []
        self.path_node: "list[np.ndarray]" = []
        self.path_action: "list[np.ndarray]" = []
        self.placed_games: "list[np.ndarray]" = []
        self.placed_nodes: "list[np.ndarray]" = []
        self.solve = solve and solver.any_proven(tree)
        self.arrays = (
            self.node_visits, self.children, self.edge_visits, self.edge_values, tree.parents,
            tree.action_from_parent, tree.num_nodes, self.pending, self.final, self.dropped, VIRTUAL_LOSS,
        )  # fmt: skip

    def take(self, lanes: np.ndarray, node: np.ndarray, action: np.ndarray) -> "tuple[np.ndarray, np.ndarray]":
        """Lanes ``lanes`` at distinct flat nodes ``node`` take ``action`` (-2: the game is over there).

        A lane ends at a finished game's node; one whose child was placed in this step collides and is
        dropped. The others count a visit of their node and one of their edge with a virtual loss; one
        whose edge is unexpanded places its new node there and ends. Returns the lanes that go on and
        the nodes they enter.
        """
        return self._recorded(lanes_compiled.take_lanes(lanes, node, action, self.n, self.arrays))

    def choose(self, lanes: np.ndarray, node: np.ndarray, first: bool) -> np.ndarray:
        """The actions of lanes at distinct flat nodes below the roots; ``first``: no lane chose there yet."""
        action = self.cache[node].astype(np.int64)
        # The algorithm's cached choice holds until a lane has passed; after that it must see the virtual loss.
        ask = np.flatnonzero(action == -1) if first else np.flatnonzero(self.forced[node] == -1)
        if ask.size:
            g = node[ask] // self.n
            action[ask] = self.algorithm.select_interior(self.tree, g, node[ask] - g * self.n)
        if self.solve:
            action = solver.prefer(self.tree, node, action)
        return action

    def root_rounds(self, lanes: np.ndarray, start_visits: np.ndarray) -> "tuple[np.ndarray, np.ndarray]":
        """The lanes' rounds at the roots, each choice made after the virtual visits of those before it.

        Returns the lanes that go on below the roots and the flat nodes they enter.
        """
        tree, n = self.tree, self.n
        rank = np.arange(self.game.size) - np.repeat(np.cumsum(lanes) - lanes, lanes)
        next_lanes, next_node = [], []
        for j in range(int(lanes.max(initial=0))):
            these = np.flatnonzero(rank == j)
            g = self.game[these]
            action = tree.forced[:, 0].astype(np.int64)
            self.algorithm.select_roots(tree, tree.node_visits[:, 0] - start_visits, action)
            go, node = self.take(these, g * n, action[g])
            self.algorithm.simulated(tree, g.size, g, g * n)
            next_lanes.append(go)
            next_node.append(node)
        return np.concatenate(next_lanes), np.concatenate(next_node)

    def halving_rounds(
        self, gumbel: Gumbel, lanes: np.ndarray, start_visits: np.ndarray
    ) -> "tuple[np.ndarray, np.ndarray]":
        """``root_rounds`` for Gumbel's halving roots, in one compiled call (``lanes_compiled.root_rounds``)."""
        tree, root = self.tree, gumbel.root
        row_of_game = np.full(tree.batch_size, -1, np.int64)
        row_of_game[root.games] = np.arange(root.games.size)
        lanes = lanes.astype(np.int64)
        records = lanes_compiled.root_rounds(
            lanes, np.cumsum(lanes) - lanes, start_visits.astype(np.int64),
            np.ascontiguousarray(tree.forced[:, 0]), row_of_game, self.n, tree.raw_values.reshape(-1), self.arrays,
            root.games, root.score, root.fresh_score, root.targets, root.base_visits, root.inherited, root.prior,
            root.prior_visited, root.visited_prior, root.prior_q, root.q_low, root.q_high, root.num_visited,
            root.num_legal, root.max_visits, root.considered, root.considered_at, root.considered_base,
            root.considered_score, root.has_considered, root.chosen,
            np.float32(root.c_visit), np.float32(root.c_scale), np.float32(root.min_span),
        )  # fmt: skip
        return self._recorded(records)

    def _recorded(self, records: "tuple[np.ndarray, ...]") -> "tuple[np.ndarray, np.ndarray]":
        """Keep what a compiled call recorded (see ``lanes_compiled.take_lanes``). Returns the lanes that go
        on and the nodes they enter."""
        path, go, placed, *saved = records
        self.saved.append(saved)
        self.path_lane.append(path[:, 0])
        self.path_node.append(path[:, 1])
        self.path_action.append(path[:, 2])
        if placed.size:
            self.algorithm.placed(self.tree, placed[:, 0], placed[:, 1])
            self.placed_games.append(placed[:, 0])
            self.placed_nodes.append(placed[:, 1])
        return go[:, 0], go[:, 1]

    def restore(self) -> None:
        """Put the virtual statistics back (latest first, so that the first saved value wins)."""
        if self.saved:
            nodes, edges, values = (np.concatenate(x) for x in zip(*self.saved, strict=True))
            lanes_compiled.restore(self.node_visits, self.edge_visits, self.edge_values, nodes, edges, values)


def simulate(
    tree: Tree,
    evaluator: Evaluator,
    algorithm: "Algorithm",
    lanes: np.ndarray,
    start_visits: np.ndarray,
    skip_forced: bool,
    forced_rounds: "int | None",
    solve: bool,
) -> None:
    """One step: ``lanes`` ``[B]`` lanes in each game (0: none), one engine step and one evaluator call for all.

    ``start_visits`` ``[B]``: the roots' visits before the search's first
    simulation, from which each game's simulation count (the algorithm's
    schedule) is read.
    """
    b, n = tree.batch_size, tree.capacity
    games = np.repeat(np.arange(b), lanes)
    step = _Step(tree, algorithm, games, solve)
    if isinstance(algorithm, Gumbel):
        go, node = step.halving_rounds(algorithm, lanes, start_visits)
    else:
        go, node = step.root_rounds(lanes, start_visits)
    while go.size:
        go, node, rank = lanes_compiled.by_node(go, node)
        next_lanes, next_node = [], []
        for j in range(int(rank.max()) + 1):
            at = np.flatnonzero(rank == j)
            action = step.choose(go[at], node[at], j == 0)
            on, child = step.take(go[at], node[at], action)
            next_lanes.append(on)
            next_node.append(child)
        go, node = np.concatenate(next_lanes), np.concatenate(next_node)
    step.restore()

    if step.placed_games:
        g, new = np.concatenate(step.placed_games), np.concatenate(step.placed_nodes)
        parents = tree.parents[g, new].astype(np.int64)
        actions = tree.action_from_parent[g, new].astype(np.int64)
        states = engine.step(read_states(tree, g, parents), actions, validate=False, in_place=True)
        if skip_forced:
            states, _ = engine.play_forced(states, forced_rounds, in_place=True)
        forced = write_states(tree, g, new, states)
        evaluate(tree, g, new, states, evaluator, algorithm, forced)
    lane, node, action = (np.concatenate(x) for x in (step.path_lane, step.path_node, step.path_action))
    kept = ~step.dropped
    on = kept[lane]
    _backup(tree, step.final[kept], lane[on], node[on], action[on], np.cumsum(kept) - 1)
    if solve and step.placed_games:
        flat = g * n + new
        proven = flat[~np.isnan(tree.exact.reshape(-1)[flat])]
        if proven.size:
            solver.propagate(tree, proven)
    algorithm.resync(tree, np.unique(np.concatenate((node, step.final[kept]))))


def _backup(
    tree: Tree, final: np.ndarray, lane: np.ndarray, node: np.ndarray, action: np.ndarray, lane_row: np.ndarray
) -> None:
    """Back up the values of the kept lanes' leaves (``final``, flat) along their edges, all at once.

    ``lane_row`` maps a lane to its row in ``final``. A node or edge that
    several lanes share takes their values together (the mean of all), the
    arithmetic of ``search._backup`` for a node that one lane passes.
    """
    node_values, node_visits = tree.node_values.reshape(-1), tree.node_visits.reshape(-1)
    player = tree.player.reshape(-1)
    leaf = tree.raw_values.reshape(-1)[final]
    end = final[lane_row[lane]]
    v = leaf[lane_row[lane]]
    v = np.where(player[node] == player[end], v, -v)
    _add_means(node_values, node_visits, np.concatenate((node, final)), np.concatenate((v, leaf)))
    edge = node * tree.children_index.shape[2] + action
    _add_means(tree.children_values.reshape(-1), tree.children_visits.reshape(-1), edge, v)


def _add_means(values: np.ndarray, visits: np.ndarray, at: np.ndarray, value: np.ndarray) -> None:
    """Add one visit of ``value`` at each of flat indices ``at`` (repeats allowed) to means ``values``."""
    if not at.size:
        return
    where, inverse = np.unique(at, return_inverse=True)
    count = np.bincount(inverse)
    total = np.bincount(inverse, value)
    seen = visits[where]
    old = values[where].astype(np.float64)
    values[where] = old + (total - count * old) / (seen + count)
    visits[where] = seen + count
