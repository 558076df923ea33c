"""A ``PolicyValueNet`` as one ONNX Runtime graph: the fast CPU path where bf16 is not native.

Where the CPU has no bf16 dot products, torch runs the small tower layer by
layer: each convolution, batch norm, add and ReLU is its own oneDNN call with
its own pass over memory, and at 32-64 channels on a 10x10 board that overhead
and the layout reorders cost more than the arithmetic. ONNX Runtime takes the
whole network as one graph, fuses convolution, bias, residual add and ReLU
into single kernels and keeps the activations in its blocked NCHWc layout
from the stem to the heads, in plain fp32 (so no calibration, and the numbers
stay fp32's up to summation order). The measurements that chose it are in
docs/benchmarks.md.

The graph is traced once per network structure (``torch.onnx.export``); new
weights (an optimizer step, ``load_state_dict``) only replace the graph's
initializers and open a new session, a small fraction of the trace's cost, so
self-play can reload its network every iteration. The ``onnx`` and
``onnxruntime`` packages are the ``fast`` extra (``pip install
"stapel-rl[fast]"``, wheels only, no compiler): ``fused.onnx_available`` says
whether they import, and ``precision="auto"`` falls back to torch without them.
"""

from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np
import torch

from stapel_rl.env.observation import LAYOUTS, num_planes
from stapel_rl.models.fused import fast_extra, inference_copy
from stapel_rl.models.network import PolicyValueNet

#: The graph's input and output names (``points`` only for a network with a points head).
INPUT = "obs"
OUTPUTS = ("logits", "value", "points")


def folded_weights(net: PolicyValueNet) -> "dict[str, np.ndarray]":
    """``net``'s weights with batch norm folded into the convolutions, as the graph's fp32 initializers."""
    folded = inference_copy(net, "fp32", "cpu", fold=True)
    return {name: np.ascontiguousarray(t.detach().float().numpy()) for name, t in folded.state_dict().items()}


def export(net: PolicyValueNet) -> Any:
    """The ``onnx.ModelProto`` of ``net`` with batch norm folded, any batch size; ``net`` is not changed."""
    onnx, _ = fast_extra()
    folded = inference_copy(net, "fp32", "cpu", fold=True)
    # The exporter merges initializers of equal values (a fresh network's zero biases) under one name, which
    # would leave no place for new weights: the graph is traced with distinct random ones (``load`` sets them).
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for tensor in folded.state_dict().values():
            if tensor.is_floating_point():
                tensor.copy_(torch.rand(tensor.shape, generator=generator))
    outputs = list(OUTPUTS if net.points_head is not None else OUTPUTS[:2])
    example = torch.zeros(2, num_planes(net.inputs), *LAYOUTS[net.layout])
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        # The tracer warns about the layout check in forward (a constant for a traced graph) and
        # about the TorchScript exporter's deprecation; the graph is checked against torch by the tests.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            folded.to(memory_format=torch.contiguous_format),  # type: ignore[call-overload]
            (example,),
            buffer,  # type: ignore[arg-type]
            input_names=[INPUT],
            output_names=outputs,
            dynamic_axes={name: {0: "batch"} for name in [INPUT, *outputs]},
            opset_version=17,
            dynamo=False,
        )
    model = onnx.load_from_string(buffer.getvalue())
    missing = set(folded.state_dict()) - {i.name for i in model.graph.initializer}
    if missing:  # the exporter renamed or folded a weight away: new weights could not be swapped in
        raise RuntimeError(f"the exported graph has no initializer for {sorted(missing)}")
    return model


class OnnxNetwork:
    """An ONNX Runtime session computing a ``PolicyValueNet`` in fp32, with its weights swappable.

    ``OnnxNetwork(net, threads)(planes)`` takes ``float32 [B, C, H, W]``
    numpy planes in ``net``'s layout and returns numpy ``(logits [B, 200],
    value [B], points [B] or None)`` over canonical action ids, as ``net``
    does. ``load(net)`` takes new weights of the same structure.
    """

    def __init__(self, net: PolicyValueNet, threads: int) -> None:
        _, onnxruntime = fast_extra()
        self.has_points = net.points_head is not None
        self._model = export(net)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        # Between two calls the search runs on the same cores: threads spinning for work would steal them.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._options = options
        self._session: Any = None
        self.load(net)

    def load(self, net: PolicyValueNet) -> None:
        """Answer with ``net``'s current weights from now on (same structure as the network exported)."""
        onnx, onnxruntime = fast_extra()
        weights = folded_weights(net)
        for initializer in self._model.graph.initializer:
            if initializer.name in weights:
                initializer.CopyFrom(onnx.numpy_helper.from_array(weights[initializer.name], initializer.name))
        self._session = onnxruntime.InferenceSession(
            self._model.SerializeToString(), self._options, providers=["CPUExecutionProvider"]
        )

    def __call__(self, planes: np.ndarray) -> "tuple[np.ndarray, np.ndarray, np.ndarray | None]":
        """``planes float32 [B, C, H, W]`` -> ``(logits [B, 200], value [B], points [B] or None)``."""
        outputs = self._session.run(None, {INPUT: np.ascontiguousarray(planes, dtype=np.float32)})
        return outputs[0], outputs[1], outputs[2] if self.has_points else None
