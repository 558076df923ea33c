"""Positions and search runs shared by the MCTS tests (tests/mcts/)."""

import numpy as np
from boards import fen

from stapel_rl.env import VARIANT_I, from_fens, init, step
from stapel_rl.mcts import SearchConfig, search
from stapel_rl.models.evaluator import UniformEvaluator

ALGORITHMS = ("puct", "gumbel")
UNIFORM = UniformEvaluator()
UL, UR, DL, DR = 0, 1, 2, 3


def action(square, direction):
    """Action id; direction 0 up-left, 1 up-right, 2 down-left, 3 down-right."""
    return 4 * (square - 1) + direction


def mirrored(side, stacks):
    """The same position seen from the other side: board turned 180 degrees, colours swapped."""
    swap = {"w": "b", "b": "w"}
    return {"W": "B", "B": "W"}[side], {51 - n: "".join(swap[m] for m in s) for n, s in stacks.items()}


def mirrored_action(a):
    return action(51 - (a // 4 + 1), 3 - a % 4)


def position(side, stacks, flip, variant=VARIANT_I):
    """(state, action map): the position, or its mirror image with actions mapped to match."""
    if flip:
        side, stacks = mirrored(side, stacks)
        return from_fens([fen(side, stacks)], variant), mirrored_action
    return from_fens([fen(side, stacks)], variant), lambda a: a


def config(algorithm, sims, **kw):
    """Deterministic choice: no Dirichlet noise, PUCT plays the most visited action."""
    kw = {"temperature": 0.0, "dirichlet_fraction": 0.0, **kw}
    return SearchConfig(num_simulations=sims, algorithm=algorithm, **kw)


def run(state, algorithm, sims, seed=0, **kw):
    return search(state, UNIFORM, config(algorithm, sims, **kw), np.random.default_rng(seed))


def legal_ids(state, game=0):
    return np.flatnonzero(state.legal_action_mask[game]).tolist()


def play(state, actions):
    for a in actions:
        state = step(state, np.array([a]))
    return state


def random_positions(variant, batch, plies, seed):
    """``batch`` games after ``plies`` random actions each (live games only, at a decision point)."""
    rng = np.random.default_rng(seed)
    s = init(variant, batch)
    for _ in range(plies):
        live = ~s.done
        acts = np.zeros(batch, np.int64)
        for g in np.flatnonzero(live):
            acts[g] = rng.choice(legal_ids(s, g))
        s = step(s, acts)
    assert not s.done.any()
    return s


def node_path(tree, actions, game=0):
    """Node indices reached from the root by ``actions`` (each must be expanded)."""
    nodes = [0]
    for a in actions:
        child = int(tree.children_index[game, nodes[-1], a])
        assert child > 0, f"action {a} from node {nodes[-1]} not expanded"
        nodes.append(child)
    return nodes
