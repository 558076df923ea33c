"""What the search asks of a model: prior logits and a value for a batch of states.

An evaluator is any callable ``evaluator(state) -> Evaluation``. Logits are
over *board* action ids (the search works on the engine's actions); the
search itself masks illegal actions, so an evaluator need not. Values are from
the view of the side to move in each state, in [-1, 1].
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import numpy as np

from stapel_rl.env.geometry import NUM_ACTIONS
from stapel_rl.env.state import State


@dataclasses.dataclass
class Evaluation:
    """Attributes:
    logits: ``float32 [B, 200]`` prior logits over board action ids.
    value: ``float32 [B]`` expected result for the side to move, in [-1, 1].
    points: ``float32 [B]`` or None: predicted final Variant II points
        difference (side to move minus opponent), if the model has that head.
    """

    logits: np.ndarray
    value: np.ndarray
    points: "np.ndarray | None" = None


class Evaluator(Protocol):
    def __call__(self, state: State) -> Evaluation: ...


class UniformEvaluator:
    """Uniform policy and zero value: search driven by the rules alone (tests, benchmarks)."""

    def __call__(self, state: State) -> Evaluation:
        b = state.batch_size
        return Evaluation(np.zeros((b, NUM_ACTIONS), np.float32), np.zeros(b, np.float32))
