"""``NetworkEvaluator``: a ``PolicyValueNet`` behind the search's ``Evaluator`` protocol.

It encodes states into canonical planes in the network's layout, runs a fast
inference copy of the network (batch norm folded, bf16 where the device has
it: see ``fused``; or one fused ONNX Runtime graph: see ``onnx_runtime``) in
chunks without autograd, and rotates the canonical
policy back to board action ids for the games where Black is to move. It also
counts positions and seconds, so self-play can report network throughput
separately from the search.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from stapel_rl.env.geometry import NUM_ACTIONS, ROTATE_ACTION
from stapel_rl.env.observation import encode
from stapel_rl.env.state import State
from stapel_rl.models.evaluator import Evaluation
from stapel_rl.models.fused import DTYPES, inference_copy, resolve_precision, weights_version
from stapel_rl.models.network import PolicyValueNet
from stapel_rl.models.onnx_runtime import OnnxNetwork


def resolve_device(device: "str | torch.device" = "auto") -> torch.device:
    """``"auto"`` picks CUDA when available, else CPU; anything else is passed to ``torch.device``."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


class NetworkEvaluator:
    """Evaluate batches of states with a ``PolicyValueNet`` (implements ``Evaluator``).

    ``net`` is shared, not copied: the evaluator runs an inference copy of it
    on ``device`` (see ``fused.inference_copy``; for "onnx" an
    ``onnx_runtime.OnnxNetwork``, whose threads are torch's at its first
    call) and rebuilds that copy whenever ``net``'s weights have changed since
    (an optimizer step, a ``load_state_dict``), so a trainer may keep
    training ``net``. (Replacing a layer of ``net`` by a new module is not
    seen: make a new evaluator.)

    Attributes:
        net: the network (its weights are what the evaluator answers with).
        device: the ``torch.device`` inference runs on.
        precision: "fp32", "bf16", "fp16" or "onnx", what "auto" resolved to on ``device``.
        fold: whether batch norm is folded into the convolutions (False runs
            the layers exactly as trained: the reference path; "onnx" always folds).
        max_batch: largest number of positions per forward pass.
        positions: positions evaluated since the last ``reset_stats()``.
        calls: calls since then (``positions / calls`` is the average batch).
        seconds: wall time spent inside ``__call__`` since then.
    """

    def __init__(
        self,
        net: PolicyValueNet,
        device: "str | torch.device" = "auto",
        max_batch: int = 1024,
        precision: str = "auto",
        fold: bool = True,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be positive, got {max_batch}")
        self.net = net
        self.device = resolve_device(device)
        # The graph is traced from PolicyValueNet.forward: a subclass computing something else stays in torch.
        exportable = type(net).forward is PolicyValueNet.forward
        self.precision = resolve_precision(precision, self.device, onnx=exportable)
        if self.precision == "onnx" and not exportable:
            raise ValueError(f"precision 'onnx' traces PolicyValueNet.forward, which {type(net).__name__} replaces")
        self.fold = fold
        self.max_batch = int(max_batch)
        self._rotate = torch.as_tensor(ROTATE_ACTION, dtype=torch.long, device=self.device)
        self._fast: "PolicyValueNet | None" = None
        self._onnx: "OnnxNetwork | None" = None
        # Looked up once: walking the modules on every call would cost more than the check.
        self._tensors = [*net.parameters(), *net.buffers()]
        self._version: "tuple | None" = None
        # CUDA: the planes go through one page-locked host buffer (grown as needed), so the copy to the
        # device is a DMA transfer rather than a staged one.
        self._pinned: "torch.Tensor | None" = None
        self.reset_stats()

    def reset_stats(self) -> None:
        """Zero the position and time counters."""
        self.positions = 0
        self.calls = 0
        self.seconds = 0.0

    @property
    def positions_per_second(self) -> float:
        """Positions evaluated per second spent inside the evaluator (0 before any call)."""
        return self.positions / self.seconds if self.seconds > 0 else 0.0

    def inference_net(self) -> PolicyValueNet:
        """The inference copy of ``net``'s current weights (rebuilt only when they changed)."""
        version = weights_version(self._tensors)
        if self._fast is None or version != self._version:
            self._fast = inference_copy(self.net, self.precision, self.device, fold=self.fold)
            self._version = version
        return self._fast

    def onnx_network(self) -> OnnxNetwork:
        """The ONNX Runtime graph of ``net``'s current weights (precision "onnx"): traced on the first
        call, its weights swapped in only when they changed."""
        version = weights_version(self._tensors)
        if self._onnx is None:
            self._onnx = OnnxNetwork(self.net, torch.get_num_threads())
        elif version != self._version:
            self._onnx.load(self.net)
        self._version = version
        return self._onnx

    def __call__(self, state: State) -> Evaluation:
        """Evaluate every game of ``state`` (finished ones too).

        Returns ``Evaluation`` with numpy float32 ``logits [B, 200]`` over
        board action ids, ``value [B]`` and ``points [B]`` (None without a
        points head), all from the view of each game's side to move.
        """
        start = time.perf_counter()
        planes = encode(state, self.net.layout, self.net.inputs)
        black = np.asarray(state.current_player) == 1
        if self.precision == "onnx":
            onnx = self.onnx_network()
            outputs = [
                self._rotate_numpy(*onnx(planes[i : i + self.max_batch]), black[i : i + self.max_batch])
                for i in range(0, len(planes), self.max_batch)
            ]
            return self._finish(outputs, len(planes), start)
        net = self.inference_net()
        with torch.inference_mode():
            outputs = [
                self._forward(net, planes[i : i + self.max_batch], black[i : i + self.max_batch])
                for i in range(0, len(planes), self.max_batch)
            ]
        return self._finish(outputs, len(planes), start)

    def _finish(self, outputs: list, positions: int, start: float) -> Evaluation:
        evaluation = self._concatenate(outputs)
        self.positions += positions
        self.calls += 1
        self.seconds += time.perf_counter() - start
        return evaluation

    @staticmethod
    def _rotate_numpy(
        logits: np.ndarray, value: np.ndarray, points: "np.ndarray | None", black: np.ndarray
    ) -> "tuple[np.ndarray, np.ndarray, np.ndarray | None]":
        """Canonical logits -> board logits where Black is to move (as ``_forward`` does in torch)."""
        return np.where(black[:, None], logits[:, ROTATE_ACTION], logits), value, points

    def _forward(
        self, net: PolicyValueNet, planes: np.ndarray, black: np.ndarray
    ) -> "tuple[np.ndarray, np.ndarray, np.ndarray | None]":
        """One chunk: planes ``[b, C, H, W]`` -> numpy board logits ``[b, 200]``, value, points."""
        if self.device.type == "cuda":
            obs = self._to_device(planes).to(DTYPES[self.precision])
        else:
            obs = torch.from_numpy(planes).to(self.device, DTYPES[self.precision], memory_format=torch.channels_last)
        logits, value, points = net(obs)
        # The rotation is an involution, so board id a reads canonical id ROTATE_ACTION[a].
        flip = torch.from_numpy(black).to(self.device)[:, None]
        logits = torch.where(flip, logits.index_select(1, self._rotate), logits)
        return (
            logits.float().cpu().numpy(),
            value.float().cpu().numpy(),
            None if points is None else points.float().cpu().numpy(),
        )

    def _to_device(self, planes: np.ndarray) -> torch.Tensor:
        """``planes`` on the CUDA device through the pinned buffer (the caller's ``.cpu()`` syncs before reuse)."""
        n = planes.shape[0]
        if self._pinned is None or self._pinned.shape[0] < n or self._pinned.shape[1:] != planes.shape[1:]:
            self._pinned = torch.empty(
                (max(n, self.max_batch),) + planes.shape[1:], dtype=torch.float32, pin_memory=True
            )
        staged = self._pinned[:n]
        staged.copy_(torch.from_numpy(planes))
        return staged.to(self.device, non_blocking=True)

    def _concatenate(self, outputs: list) -> Evaluation:
        if not outputs:  # an empty batch
            empty = np.zeros(0, np.float32)
            has_points = self.net.points_head is not None
            return Evaluation(np.zeros((0, NUM_ACTIONS), np.float32), empty, empty.copy() if has_points else None)
        logits, value, points = zip(*outputs, strict=True)
        return Evaluation(
            np.concatenate(logits),
            np.concatenate(value),
            None if points[0] is None else np.concatenate(points),
        )
