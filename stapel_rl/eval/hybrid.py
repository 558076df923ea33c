"""An MCTS-minimax hybrid: the network's value at each leaf blended with a shallow alpha-beta search's.

Draughts is decided by forced capture chains, where a value network judges a position whose exchange is
still running, and where MCTS with a network alone is known to be weak (Baier and Winands' MCTS-minimax
hybrids). ``BlendedEvaluator`` wraps any evaluator: for every live leaf it also runs the compiled
alpha-beta engine (``stapel_rl.classical``) to ``depth`` plies, whose capture extension plays every
pending capture out, and returns ``(1 - weight) * network value + weight * (2 * sigmoid(k * score) - 1)``,
``k`` the logistic scale of the engine's score (``nnue.packaged_scale``). The priors stay the network's.

The engine evaluates with its hand-written evaluation, with its packaged learned one (``eval="nnue"``),
or with the network of a file (``eval=PATH``: a generation of the minimax loop, ``stapel-train
loop=minimax``, in its own scale ``k``). With the first two a hybrid uses the engine's knowledge, so it is
no agent learned from zero; an AlphaZero network with the leaves of a minimax run from zero is. Agent
specs: ``mcts:variant_I:ab_depth=1:ab_weight=0.5[:ab_eval=hand|nnue|PATH]``
(``stapel_rl.eval.network_agents``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from stapel_rl.classical import nnue
from stapel_rl.classical.position import Position
from stapel_rl.classical.searcher import Searcher
from stapel_rl.env.state import State
from stapel_rl.models.evaluator import Evaluation, Evaluator

__all__ = ["EVALS", "BlendedEvaluator"]

EVALS = nnue.EVALS


class BlendedEvaluator:
    """``inner``'s priors, and its values blended with a depth-``depth`` alpha-beta search's (see module).

    ``eval``: ``"hand"``, ``"nnue"`` or the path of a network file (``nnue.save``'s format), read here:
    a missing or corrupt file, or one of the other variant at the first leaf, raises ``ValueError``.
    """

    def __init__(self, inner: Evaluator, depth: int, weight: float, eval: str = "hand") -> None:
        if depth < 1:
            raise ValueError(f"the leaves' alpha-beta depth must be at least 1, got {depth}")
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"the alpha-beta value's weight must be in [0, 1], got {weight}")
        if not eval:
            raise ValueError("the leaves' alpha-beta evaluation must be hand, nnue or a network file's path, got ''")
        self.inner, self.depth, self.weight, self.eval = inner, depth, weight, eval
        # Not ``net``: agents read the inner evaluator's network under that name.
        self.leaf_net = None if eval in EVALS else nnue.load(eval)
        self._searchers: "dict[str, tuple[Searcher, float]]" = {}

    def __getattr__(self, name: str) -> object:  # the inner evaluator's net, device, ... (agents read them)
        return getattr(self.inner, name)

    def searcher(self, variant: str) -> "tuple[Searcher, float]":
        """The engine the leaves of ``variant`` are searched with, and ``k``, its score's logistic scale."""
        if variant not in self._searchers:
            net, k = nnue.engine_eval(self.leaf_net or self.eval, variant)
            self._searchers[variant] = (Searcher(variant, tt_bits=16, net=net), k)
        return self._searchers[variant]

    def scores(self, state: State) -> "tuple[np.ndarray, np.ndarray]":
        """The engine's value of each game's position (side to move's view, in [-1, 1]) and whether it was
        searched (not where the game is over or no move is left)."""
        searcher, k = self.searcher(state.variant.name)
        values = np.zeros(state.batch_size, np.float32)
        searched = np.zeros(state.batch_size, bool)
        for g in np.flatnonzero(~state.done):
            pos = Position.from_state(state, int(g))
            if not len(pos.move_rows()):
                continue
            score = searcher.search(pos, depth=self.depth).score
            values[g], searched[g] = 2.0 * expit(k * score) - 1.0, True
        return values, searched

    def __call__(self, state: State) -> Evaluation:
        out = self.inner(state)
        values, searched = self.scores(state)
        blended = np.where(searched, (1 - self.weight) * out.value + self.weight * values, out.value)
        return Evaluation(out.logits, blended.astype(np.float32), out.points)
