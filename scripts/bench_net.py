"""Network inference speed: the fp32 10x10 path against every fast path, and what self-play runs, in one run.

For each network size, on real positions from random play (batch 512 by
default, the threads given), positions/s through ``NetworkEvaluator``
(encoding, forward pass, policy rotation) of each path, measured in
interleaved rounds so that a busy machine slows them alike:

- ``fp32 grid as trained``: the network on the 10x10 planes in fp32, layers as trained (the baseline);
- ``<precision> <layout>``: batch norm folded, in that precision ("fp32", "bf16",
  "onnx": one fused fp32 ONNX Runtime graph, where the ``fast`` extra is
  installed) on the 10x10 grid or the 10x5 compact layout (dark squares only).

Each path's arithmetic rate (GFLOP/s: its positions/s times the
network's multiply-adds per position) is set against a ceiling measured in
the same process: the best fp32 rate torch's own convolutions reach on this
CPU and instruction set, on shapes large enough to keep the vector units
busy. The baseline's share of that ceiling bounds what any fp32 path on the
same layout can gain (a fused graph saves passes over memory, not
arithmetic); past it only fewer operations (the compact layout) or a
cheaper number format (bf16, int8) go.

The headline compares what self-play runs, the ``precision="auto"`` path (as
resolved on this CPU) of the layout the default config trains, with the
baseline. Its accuracy: that path against the same network (same layout, the
trained weights) evaluated in fp32 as trained, the largest value difference
and the mean KL divergence of the policy over the legal moves.

To see what a CPU without native bf16 sees, hold the process to AVX2:
``ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 python scripts/bench_net.py``
(ONNX Runtime picks its own kernels from the CPU's feature flags: see docs/benchmarks.md).

Usage: python scripts/bench_net.py [--sizes small default] [--batch 512] [--threads 2] [--checkpoint PATH]
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import statistics
import time
from collections.abc import Callable, Mapping

import numpy as np
import torch

from stapel_rl._malloc import tune_malloc
from stapel_rl.env.observation import LAYOUTS, num_planes
from stapel_rl.env.sampling import random_positions
from stapel_rl.env.state import State
from stapel_rl.models import PRESETS, NetworkEvaluator, PolicyValueNet
from stapel_rl.models.accuracy import compare
from stapel_rl.models.checkpoint import load_network
from stapel_rl.models.fused import cpu_isa, onnx_available, resolve_precision

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: Trained 4x32 networks by layout: the committed Variant I agent learned from zero (10x10 grid) and a compact one
#: trained for 12 minutes on Variant I (both are the tests' references too).
TRAINED = {
    "grid": ROOT / "checkpoints" / "variant_I_zero.pt",
    "compact": ROOT / "tests" / "data" / "small_compact_I.pt",
}


def default_model() -> "tuple[str, str]":
    """The model preset and layout the default training config selects (configs/config.yaml)."""
    from hydra import compose, initialize_config_dir

    from stapel_rl.train.app import CONFIG_DIR

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        cfg = compose(config_name="config")
    fields = {k: v for k, v in cfg.model.items() if k not in ("points_head", "layout")}
    return next(
        name for name, preset in PRESETS.items() if all(getattr(preset, k) == v for k, v in fields.items())
    ), cfg.model.layout


BASELINE = "fp32 grid as trained"


def paths(size: str) -> "dict[str, NetworkEvaluator]":
    """The baseline and every (precision, layout) path this machine has, for network size ``size``."""
    precisions = ["fp32", "bf16"] + (["onnx"] if onnx_available() else [])
    nets = {layout: PolicyValueNet(dataclasses.replace(PRESETS[size], layout=layout)) for layout in ("grid", "compact")}
    evaluators = {BASELINE: NetworkEvaluator(nets["grid"], "cpu", precision="fp32", fold=False)}
    for layout, net in nets.items():
        for precision in precisions:
            evaluators[f"{precision} {layout}"] = NetworkEvaluator(net, "cpu", precision=precision)
    return evaluators


#: Shapes of the ceiling's convolutions: (batch, channels, side), 3x3 kernels, 2.4-4.8 GFLOP a call.
CEILING_SHAPES = ((32, 64, 32), (32, 128, 16), (16, 256, 16))


def flops_per_position(net: PolicyValueNet) -> float:
    """Floating-point operations (two per multiply-add) of ``net``'s convolutions and linear layers, one position."""
    total = 0

    def count(module: torch.nn.Module, _inputs: object, output: torch.Tensor) -> None:
        nonlocal total
        if isinstance(module, torch.nn.Conv2d):
            kernel = module.kernel_size[0] * module.kernel_size[1]
            total += 2 * output.numel() * kernel * module.in_channels // module.groups
        elif isinstance(module, torch.nn.Linear):
            total += 2 * output.numel() * module.in_features

    hooks = [m.register_forward_hook(count) for m in net.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    try:
        with torch.no_grad():
            net.eval()(torch.zeros(1, num_planes(net.inputs), *LAYOUTS[net.layout]))
    finally:
        for hook in hooks:
            hook.remove()
    return float(total)


def conv_ceiling(rounds: int) -> float:
    """GFLOP/s of torch's fastest fp32 3x3 convolution over ``CEILING_SHAPES`` (best call of each), on this CPU."""
    best = 0.0
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for batch, channels, side in CEILING_SHAPES:
            x = torch.randn(batch, channels, side, side, generator=generator)
            w = torch.randn(channels, channels, 3, 3, generator=generator)
            flops = 2 * batch * channels * channels * 9 * side * side
            torch.nn.functional.conv2d(x, w, padding=1)  # warm-up: oneDNN picks and builds its kernel
            for _ in range(rounds):
                start = time.perf_counter()
                torch.nn.functional.conv2d(x, w, padding=1)
                best = max(best, flops / (time.perf_counter() - start) / 1e9)
    return best


def measure(
    evaluators: "Mapping[str, Callable[[State], object]]", state: State, rounds: int, calls: int
) -> "dict[str, float]":
    """Median positions/s of each evaluator over ``rounds`` interleaved rounds of ``calls`` calls."""
    rates: "dict[str, list[float]]" = {name: [] for name in evaluators}
    for evaluator in evaluators.values():
        evaluator(state)  # warm-up: builds the inference copy and oneDNN's kernels for this shape
    for _ in range(rounds):
        for name, evaluator in evaluators.items():
            start = time.perf_counter()
            for _ in range(calls):
                evaluator(state)
            rates[name].append(calls * state.batch_size / (time.perf_counter() - start))
    return {name: statistics.median(r) for name, r in rates.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["small", "default"], choices=sorted(PRESETS))
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--checkpoint",
        default=None,
        help="trained network of the default config's size and layout, for the accuracy check",
    )
    args = parser.parse_args()
    tune_malloc()  # as the CLIs and self-play workers do: multi-MB temporaries stay mapped
    torch.set_num_threads(args.threads)
    state = random_positions("I", args.batch, 30, np.random.default_rng(0))
    auto = resolve_precision("auto", torch.device("cpu"))
    isa = cpu_isa()
    runtime = "onnxruntime " + _onnxruntime_version() if onnx_available() else "no onnxruntime (the fast extra)"
    print(
        f"bench_net | torch {torch.__version__}, {runtime}, {torch.get_num_threads()} threads, isa {isa}, "
        f"auto precision {auto} | batch {args.batch} positions after 30 random plies"
    )

    trained_size, layout = default_model()
    new_path = f"{auto} {layout}"  # what self-play runs with the default config
    rates: "dict[str, dict[str, float]]" = {}
    ceiling = conv_ceiling(args.rounds)
    print(f"ceiling: torch's fp32 3x3 convolution at {ceiling:,.0f} GFLOP/s on this CPU, {args.threads} threads")
    print(f"\n{'size':>8} {'path':>21} {'positions/s':>12} {'vs fp32 grid':>13} {'GFLOP/s':>8} {'of fp32 ceiling':>15}")
    for size in args.sizes:
        flops = {
            layout: flops_per_position(PolicyValueNet(dataclasses.replace(PRESETS[size], layout=layout)))
            for layout in ("grid", "compact")
        }
        rates[size] = measure(paths(size), state, args.rounds, calls=max(2, 4096 // args.batch))
        for name, rate in rates[size].items():
            gflops = rate * flops[name.split()[1]] / 1e9
            print(
                f"{size:>8} {name:>21} {rate:>12,.0f} {rate / rates[size][BASELINE]:>12.2f}x "
                f"{gflops:>8,.0f} {100 * gflops / ceiling:>14.0f}%",
                flush=True,
            )
        bound = ceiling / (rates[size][BASELINE] * flops["grid"] / 1e9)
        print(f"{size:>8} an fp32 path on the 10x10 grid can gain at most about {bound:.1f}x here (the ceiling)")

    net, _ = load_network(args.checkpoint or TRAINED[layout])
    same_size = (net.config.blocks, net.config.channels) == (
        PRESETS[trained_size].blocks,
        PRESETS[trained_size].channels,
    )
    accuracy = compare(net, state, precision="auto")
    print(
        f"\naccuracy of the auto path ({auto}) against fp32 as trained, "
        f"trained weights {args.checkpoint or TRAINED[layout]} "
        f"({net.config.blocks}x{net.config.channels}, {net.config.layout}"
        f"{'' if same_size else ', NOT the default size'}):"
    )
    print(
        f"max |dvalue| {accuracy['max_dvalue']:.4f}, mean |dvalue| {accuracy['mean_dvalue']:.4f}, "
        f"mean policy KL {accuracy['mean_kl']:.2e}, max policy KL {accuracy['max_kl']:.2e}, "
        f"same best move {100 * accuracy['same_argmax']:.1f}%"
    )
    r = rates.get(trained_size) or measure(paths(trained_size), state, args.rounds, max(2, 4096 // args.batch))
    print(f"\n[size {trained_size}, {layout} layout, as the default config trains]")
    print(
        f"bench_net: speedup {r[new_path] / r[BASELINE]:.2f}x (auto={auto} {layout}, {r[new_path]:,.0f} pos/s; "
        f"fp32 10x10 {r[BASELINE]:,.0f} pos/s; isa {isa}; max |dvalue| {accuracy['max_dvalue']:.4f}, "
        f"mean policy KL {accuracy['mean_kl']:.2e})"
    )


def _onnxruntime_version() -> str:
    import onnxruntime

    return str(onnxruntime.__version__)


if __name__ == "__main__":
    main()
