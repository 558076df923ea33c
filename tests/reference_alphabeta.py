"""The alpha-beta search the agent used before it went full width: a reference for the tests.

One game at a time, negamax with alpha-beta pruning and move ordering, a
Python call per node. ``ReferenceAlphaBeta`` shares the agent's evaluation
and capture extension rule and must choose exactly as the batched agent does
with the same ``rng``: at the root each move is searched with a window just
below the best value so far, so every move as good as the best gets its exact
value and the ties are the same set.
"""

from __future__ import annotations

import math

import numpy as np

from stapel_rl.env.geometry import NEIGHBOR
from stapel_rl.env.notation import FullMoves, expand_full_moves
from stapel_rl.env.state import State, take
from stapel_rl.eval.alphabeta import TOLERANCE, AlphaBetaAgent


def _capture_lengths(node: State, moves: FullMoves) -> np.ndarray:
    """``int [M]`` leaps in each move (0 for a plain move)."""
    first = moves.actions[:, 0]
    over = NEIGHBOR[first // 4, first % 4]
    is_capture = node.height[moves.parent, over] > 0
    return np.where(is_capture, (moves.actions >= 0).sum(axis=1), 0)


class ReferenceAlphaBeta(AlphaBetaAgent):
    def __call__(self, state: State, rng: np.random.Generator) -> np.ndarray:
        actions = np.zeros(state.batch_size, np.int64)
        for g in np.flatnonzero(~state.done):
            actions[g] = self.choose(take(state, [g]), rng)
        return actions

    def _expand(self, node: State, ply: int):
        self.nodes += 1
        moves = expand_full_moves(node)
        scores = -self.evaluate(moves.state, ply + 1)
        order = np.lexsort((-scores, -_capture_lengths(node, moves)))  # captures, longest first, then best
        return moves, scores, order

    def _negamax(self, node: State, depth: int, alpha: float, beta: float, ply: int, quiescence: int) -> float:
        """Value of a live node (side to move's view), fail-soft: exact inside (alpha, beta)."""
        moves, scores, order = self._expand(node, ply)
        children = moves.state
        deeper = self._searched(children, depth, quiescence)
        if not deeper.any():
            return float(scores.max())
        next_depth, next_q = (depth - 1, quiescence) if depth > 1 else (1, quiescence - 1)
        best = -math.inf
        for i in order:
            if not deeper[i]:
                value = scores[i]
            else:
                value = -self._negamax(take(children, [i]), next_depth, -beta, -max(alpha, best), ply + 1, next_q)
            if value > best:
                best = value
                if best >= beta:
                    break
        return float(best)

    def root(self, state: State) -> "tuple[np.ndarray, np.ndarray]":
        """(first action, value or upper bound below the best) of each root move of one game."""
        moves, scores, order = self._expand(state, 0)
        first = moves.actions[:, 0]
        children = moves.state
        deeper = self._searched(children, self.depth, self.quiescence)
        next_depth, next_q = (self.depth - 1, self.quiescence) if self.depth > 1 else (1, self.quiescence - 1)
        values = np.full(first.size, -math.inf)
        best = -math.inf
        for i in order:
            if not deeper[i]:
                value = scores[i]
            else:
                value = -self._negamax(take(children, [i]), next_depth, -math.inf, -(best - TOLERANCE), 1, next_q)
            values[i] = value
            best = max(best, value)
        return first, values

    def choose(self, state: State, rng: np.random.Generator) -> int:
        first = expand_full_moves(state).actions[:, 0]
        if (first == first[0]).all():
            return int(first[0])
        first, values = self.root(state)
        ties = np.flatnonzero(values > values.max() - TOLERANCE)
        return int(first[rng.choice(ties)])
