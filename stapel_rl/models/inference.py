"""``NetworkEvaluator``: a ``PolicyValueNet`` behind the search's ``Evaluator`` protocol.

It encodes states into canonical planes, runs the network in chunks without
autograd, and rotates the canonical policy back to board action ids for the
games where Black is to move. It also counts positions and seconds, so
self-play can report network throughput separately from the search.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from stapel_rl.env.geometry import NUM_ACTIONS, ROTATE_ACTION
from stapel_rl.env.observation import encode
from stapel_rl.env.state import State
from stapel_rl.models.evaluator import Evaluation
from stapel_rl.models.network import PolicyValueNet


def resolve_device(device: "str | torch.device" = "auto") -> torch.device:
    """``"auto"`` picks CUDA when available, else CPU; anything else is passed to ``torch.device``."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


class NetworkEvaluator:
    """Evaluate batches of states with a ``PolicyValueNet`` (implements ``Evaluator``).

    The network is moved to ``device`` (and, on CPU, to channels-last memory
    format, which the oneDNN convolutions run markedly faster). It is shared,
    not copied: pass a copy if another device trains the original. Each call
    runs it in eval mode under ``torch.inference_mode()`` and restores the
    previous train/eval mode afterwards, so a trainer may share it.

    Attributes:
        net: the network.
        device: the ``torch.device`` it runs on.
        max_batch: largest number of positions per forward pass.
        positions: positions evaluated since the last ``reset_stats()``.
        seconds: wall time spent inside ``__call__`` since then.
    """

    def __init__(self, net: PolicyValueNet, device: "str | torch.device" = "auto", max_batch: int = 1024) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be positive, got {max_batch}")
        self.device = resolve_device(device)
        self.channels_last = self.device.type == "cpu"
        memory_format = torch.channels_last if self.channels_last else torch.preserve_format
        self.net = net.to(self.device, memory_format=memory_format)
        self.max_batch = int(max_batch)
        self._rotate = torch.as_tensor(ROTATE_ACTION, dtype=torch.long, device=self.device)
        self.reset_stats()

    def reset_stats(self) -> None:
        """Zero the position and time counters."""
        self.positions = 0
        self.seconds = 0.0

    @property
    def positions_per_second(self) -> float:
        """Positions evaluated per second spent inside the evaluator (0 before any call)."""
        return self.positions / self.seconds if self.seconds > 0 else 0.0

    def __call__(self, state: State) -> Evaluation:
        """Evaluate every game of ``state`` (finished ones too).

        Returns ``Evaluation`` with numpy float32 ``logits [B, 200]`` over
        board action ids, ``value [B]`` and ``points [B]`` (None without a
        points head), all from the view of each game's side to move.
        """
        start = time.perf_counter()
        planes = encode(state)
        black = np.asarray(state.current_player) == 1
        was_training = self.net.training
        self.net.eval()
        try:
            with torch.inference_mode():
                outputs = [
                    self._forward(planes[i : i + self.max_batch], black[i : i + self.max_batch])
                    for i in range(0, len(planes), self.max_batch)
                ]
        finally:
            self.net.train(was_training)
        evaluation = self._concatenate(outputs)
        self.positions += len(planes)
        self.seconds += time.perf_counter() - start
        return evaluation

    def _forward(self, planes: np.ndarray, black: np.ndarray) -> "tuple[np.ndarray, np.ndarray, np.ndarray | None]":
        """One chunk: planes ``[b, NUM_PLANES, 10, 10]`` -> numpy board logits ``[b, 200]``, value, points."""
        obs = torch.from_numpy(planes).to(self.device)
        if self.channels_last:
            obs = obs.contiguous(memory_format=torch.channels_last)
        logits, value, points = self.net(obs)
        # The rotation is an involution, so board id a reads canonical id ROTATE_ACTION[a].
        flip = torch.from_numpy(black).to(self.device)[:, None]
        logits = torch.where(flip, logits.index_select(1, self._rotate), logits)
        return (
            logits.float().cpu().numpy(),
            value.float().cpu().numpy(),
            None if points is None else points.float().cpu().numpy(),
        )

    def _concatenate(self, outputs: list) -> Evaluation:
        if not outputs:  # an empty batch
            empty = np.zeros(0, np.float32)
            has_points = self.net.points_head is not None
            return Evaluation(np.zeros((0, NUM_ACTIONS), np.float32), empty, empty.copy() if has_points else None)
        logits, value, points = zip(*outputs)
        return Evaluation(
            np.concatenate(logits),
            np.concatenate(value),
            None if points[0] is None else np.concatenate(points),
        )
