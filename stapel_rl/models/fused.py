"""An inference copy of a ``PolicyValueNet``: batch norm folded into the convolutions, lower precision.

Self-play spends most of its time in the network's forward pass, and on a CPU
that pass is already close to the cores' fp32 peak. What is left to gain is
fewer passes over memory (each BatchNorm in eval mode is an affine map, so it
folds into the convolution before it: exact up to rounding) and a cheaper
number format: bfloat16 runs the oneDNN convolutions on the CPU's bf16 dot
product units (AVX512-BF16, AMX) at two to several times the fp32 rate, and
keeps fp32's exponent range, so no calibration is needed (unlike int8).

``precision`` names the format: "fp32", "bf16", "fp16", "onnx" (fp32 as one
fused ONNX Runtime graph, CPU only: ``onnx_runtime``), or "auto": on a CPU
bf16 where it computes it natively, else "onnx" where the optional ``fast``
extra is installed, else fp32 (the order measured fastest: docs/benchmarks.md);
on a CUDA device always half precision (bf16 from compute capability 8, else
fp16), which runs on its tensor cores.
"""

from __future__ import annotations

import copy
import os
import platform
from typing import Any, cast

import torch
from torch import nn

from stapel_rl.models.network import PolicyValueNet

PRECISIONS = ("auto", "fp32", "bf16", "fp16", "onnx")
#: The torch dtype of each precision's inputs and parameters ("onnx" computes in fp32).
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16, "onnx": torch.float32}
#: oneDNN's instruction sets (``ONEDNN_MAX_CPU_ISA``) below AVX512_CORE_BF16: held to one, it emulates bf16.
_ONEDNN_NO_BF16 = ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE", "AVX512_CORE_VNNI")


def _x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def onednn_max_isa() -> "str | None":
    """The instruction set oneDNN is held to for this process (``ONEDNN_MAX_CPU_ISA``), None if not held."""
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA")
    return isa.upper() if isa else None


def bf16_native(device: torch.device) -> bool:
    """Whether ``device`` runs bf16 convolutions natively (CPU: AVX512-BF16 or AMX; CUDA: compute capability 8+).

    On a CPU it honours a process held to an older instruction set, as an AVX2
    machine is emulated: ``ONEDNN_MAX_CPU_ISA`` below AVX512_CORE_BF16 (which
    torch's own check misses for the AVX-512 levels) or torch's kernels held to
    ``ATEN_CPU_CAPABILITY`` avx2 or default (their adds and ReLUs then emulate bf16).
    """
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type != "cpu" or not torch.backends.mkldnn.is_available():
        return False
    if onednn_max_isa() in _ONEDNN_NO_BF16:
        return False
    if _x86() and torch.backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2"):
        return False
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def cpu_isa() -> str:
    """The instruction set this process computes with, as the benchmarks name it: torch's kernels' level,
    ``+bf16`` where bf16 is native, and oneDNN's hold if any (e.g. "AVX512+bf16", "AVX2 (oneDNN AVX2)")."""
    isa = torch.backends.cpu.get_cpu_capability() + ("+bf16" if bf16_native(torch.device("cpu")) else "")
    held = onednn_max_isa()
    return f"{isa} (oneDNN {held})" if held else isa


def fast_extra() -> "tuple[Any, Any]":
    """The optional ``fast`` extra's modules ``(onnx, onnxruntime)``; ImportError where it is not installed."""
    import onnx
    import onnxruntime

    return onnx, onnxruntime


def onnx_available() -> bool:
    """Whether the optional ``onnx`` and ``onnxruntime`` packages (the ``fast`` extra) import."""
    try:
        fast_extra()
    except ImportError:
        return False
    return True


def resolve_precision(precision: str, device: torch.device, onnx: bool = True) -> str:
    """``"auto"`` -> bf16 where native on ``device``; else on CUDA fp16, on a CPU "onnx" where ``onnx``
    (the network can be exported) and ``onnx_available()``, else fp32. The others are checked and returned."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "onnx" and device.type != "cpu":
        raise ValueError(f"precision 'onnx' runs on the CPU only, not on {device}")
    if precision != "auto":
        return precision
    if bf16_native(device):
        return "bf16"
    if device.type == "cuda":
        return "fp16"
    return "onnx" if device.type == "cpu" and onnx and onnx_available() else "fp32"


def fold_batch_norm(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> nn.Conv2d:
    """A convolution computing ``bn(conv(x))`` of the eval-mode ``bn``: a new module, inputs untouched."""
    assert bn.running_mean is not None and bn.running_var is not None, "batch norm without running statistics"
    scale = bn.weight.detach() / torch.sqrt(bn.running_var + bn.eps)
    # A Conv2d's sizes are pairs; torch types them as _ConvNd's, tuples of any length.
    kernel_size, stride, padding, dilation = cast(
        "tuple[tuple[int, int], tuple[int, int], str | tuple[int, int], tuple[int, int]]",
        (conv.kernel_size, conv.stride, conv.padding, conv.dilation),
    )
    fused = nn.Conv2d(
        conv.in_channels,
        conv.out_channels,
        kernel_size,
        stride,
        padding,
        dilation,
        conv.groups,
        bias=True,
        device=conv.weight.device,
    )
    assert fused.bias is not None  # made with bias=True
    bias = conv.bias.detach() if conv.bias is not None else torch.zeros_like(bn.running_mean)
    with torch.no_grad():
        fused.weight.copy_(conv.weight.detach() * scale[:, None, None, None])
        fused.bias.copy_((bias - bn.running_mean) * scale + bn.bias.detach())
    return fused


def _fold_all(module: nn.Module) -> None:
    """Replace every ``Sequential(Conv2d, BatchNorm2d, ...)`` pair below ``module`` in place."""
    for child in module.children():
        if isinstance(child, nn.Sequential):
            layers = list(child)
            for i in range(len(layers) - 1):
                conv, bn = layers[i], layers[i + 1]
                if isinstance(conv, nn.Conv2d) and isinstance(bn, nn.BatchNorm2d):
                    child[i] = fold_batch_norm(conv, bn)
                    child[i + 1] = nn.Identity()
        _fold_all(child)


def inference_copy(
    net: PolicyValueNet, precision: str = "fp32", device: "str | torch.device" = "cpu", fold: bool = True
) -> PolicyValueNet:
    """An eval-mode copy of ``net`` on ``device`` for inference; ``net`` itself is not changed.

    ``fold`` folds batch norm into the convolutions; ``precision`` ("fp32",
    "bf16" or "auto"; "onnx" gives the fp32 copy its graph is made from) sets
    the parameter dtype, and inputs must be cast to it.
    On the CPU the copy is in channels-last memory format, which oneDNN's
    convolutions run markedly faster.
    """
    device = torch.device(device)
    dtype = DTYPES[resolve_precision(precision, device)]
    fast = copy.deepcopy(net).eval()
    if fold:
        _fold_all(fast)
    memory_format = torch.channels_last if device.type == "cpu" else torch.preserve_format
    # The heads stay in the same format: running them in fp32 cut the largest
    # value error only from 0.049 to 0.043 (trained Variant I net) for 10% of the speed.
    # Module.to takes memory_format (its docstring's last form); torch's overloads leave it out.
    fast = fast.to(device=device, dtype=dtype, memory_format=memory_format)  # type: ignore[call-overload]
    for p in fast.parameters():
        p.requires_grad_(False)
    return fast


def weights_version(tensors: "list[torch.Tensor]") -> "tuple[int, ...]":
    """Changes whenever one of ``tensors`` (a network's parameters and buffers) is modified in place
    (an optimizer step, ``load_state_dict``) or given new storage; a few microseconds for a network."""
    return tuple(v for t in tensors for v in (t._version, t.data_ptr()))
