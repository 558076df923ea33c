"""int8 inference, measured and held to the fp32 path's accuracy: why it is not an inference precision.

Static int8 quantisation of the trained network (ONNX Runtime's QDQ format:
uint8 activations, int8 weights per output channel, scales calibrated on
real positions from random play at several game stages) is run through two
runtimes, against the fp32 network as trained, in one run with the paths
interleaved (medians of ``--rounds`` rounds, batch 512):

- ONNX Runtime, fp32 graph (the ``onnx`` precision) and the int8 graph;
- OpenVINO, fp32 and the same int8 graph, where ``openvino`` is installed
  (``pip install openvino``; it is not a dependency of the package). Its
  convolutions are oneDNN's, so ``ONEDNN_MAX_CPU_ISA=AVX2`` holds them to
  AVX2 (no VNNI): the int8 figure a CPU without bf16 and VNNI would see,
  which ONNX Runtime cannot show (it picks its kernels from the CPU's flags).

For each quantisation recipe it prints the accuracy against fp32 on held-out
positions (max and mean |dvalue|, mean policy KL over the legal moves), the
bounds a fast path must meet being max |dvalue| <= 0.05 and mean KL <= 0.01.

Usage: python scripts/bench_int8.py [--checkpoint PATH] [--threads 1] [--rounds 5]
       ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 python scripts/bench_int8.py
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from bench_net import BASELINE, TRAINED, measure

from stapel_rl.env.observation import canonical_mask, encode
from stapel_rl.env.sampling import random_positions
from stapel_rl.env.state import State
from stapel_rl.models import NetworkEvaluator
from stapel_rl.models.accuracy import policy_kl
from stapel_rl.models.checkpoint import load_network
from stapel_rl.models.fused import cpu_isa
from stapel_rl.models.onnx_runtime import INPUT, OnnxNetwork

#: Game stages (random plies) of the calibration and the accuracy positions.
STAGES = (10, 30, 60)
#: Quantisation recipes: the parts of the graph (node names contain them) left in fp32; "LAST" is the
#: tower's last block.
RECIPES: "dict[str, tuple[str, ...]]" = {
    "int8 all": (),
    "int8, value head fp32": ("/value_head/",),
    "int8, stem+last conv+value head fp32": ("/value_head/", "/stem/", "/tower.LAST/second/"),
}


def quantise(fp32_path: str, out_path: str, calibration: np.ndarray, keep: "list[str]") -> None:
    """Write the static int8 QDQ graph of ``fp32_path`` to ``out_path``, scales from ``calibration`` planes."""
    from onnxruntime import quantization as q

    class Reader(q.CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter(np.array_split(calibration, max(1, len(calibration) // 128)))

        def get_next(self) -> "dict[str, np.ndarray] | None":
            return next(({INPUT: b} for b in self.batches), None)

    q.quantize_static(
        fp32_path,
        out_path,
        Reader(),
        quant_format=q.QuantFormat.QDQ,
        activation_type=q.QuantType.QUInt8,
        weight_type=q.QuantType.QInt8,
        per_channel=True,
        nodes_to_exclude=keep,
    )


def onnxruntime_session(path: str, threads: int) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return lambda planes: session.run(None, {INPUT: planes})[:2]


def openvino_request(path: str, threads: int) -> "Any | None":
    try:
        import openvino
    except ImportError:
        return None
    core = openvino.Core()
    config = {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32", "NUM_STREAMS": 1}
    request = core.compile_model(core.read_model(path), "CPU", config).create_infer_request()

    def run(planes: np.ndarray) -> "list[np.ndarray]":
        outputs = request.infer({0: planes})
        return [outputs[request.model_outputs[i]] for i in range(2)]

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", default=str(TRAINED["grid"]), help="trained network (default: Variant I agent)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    net, _ = load_network(args.checkpoint)
    variant = "II" if net.points_head is not None else "I"
    test = random_positions(variant, args.batch, 30, np.random.default_rng(0))
    # Accuracy on held-out positions from three game stages (the value errors grow as stacks get taller).
    stages = {
        plies: random_positions(variant, args.batch, plies, np.random.default_rng(100 + plies)) for plies in STAGES
    }
    # Calibration positions are others than the test's, from the opening, middle game and late game.
    calibration = np.concatenate(
        [
            encode(random_positions(variant, 512, plies, np.random.default_rng(plies)), net.layout, net.inputs)
            for plies in STAGES
        ]
    ).astype(np.float32)

    fp32 = OnnxNetwork(net, args.threads)
    folder = pathlib.Path(tempfile.mkdtemp())
    (folder / "fp32.onnx").write_bytes(fp32._model.SerializeToString())
    names = [node.name for node in fp32._model.graph.node]
    references = {
        plies: (fp32(encode(state, net.layout, net.inputs)), canonical_mask(state)) for plies, state in stages.items()
    }
    print(
        f"bench_int8 | {args.checkpoint} ({net.config.blocks}x{net.config.channels}, {net.layout}), "
        f"isa {cpu_isa()}, {args.threads} thread(s), batch {args.batch}\n"
    )
    print("accuracy against fp32, max |dvalue| / mean |dvalue| / mean policy KL, by random plies:")
    print(f"{'recipe':>40} " + " ".join(f"{f'{plies} plies':>26}" for plies in STAGES))
    runners: "dict[str, Callable[[np.ndarray], Any]]" = {"onnxruntime fp32": fp32}
    if (ov := openvino_request(str(folder / "fp32.onnx"), args.threads)) is not None:
        runners["openvino fp32"] = ov
    for i, (recipe, keep) in enumerate(RECIPES.items()):
        path = str(folder / f"int8_{i}.onnx")
        parts = [part.replace("LAST", str(net.config.blocks - 1)) for part in keep]
        quantise(str(folder / "fp32.onnx"), path, calibration, [n for n in names if any(p in n for p in parts)])
        session = onnxruntime_session(path, args.threads)
        cells = []
        for plies, state in stages.items():
            (reference_logits, reference_value, _), legal = references[plies]
            logits, value = session(encode(state, net.layout, net.inputs).astype(np.float32))
            dvalue = np.abs(value.ravel() - reference_value.ravel())
            kl = policy_kl(reference_logits, logits, legal).mean()
            cells.append(f"{dvalue.max():.4f} / {dvalue.mean():.4f} / {kl:.1e}")
        print(f"{recipe:>40} " + " ".join(f"{cell:>26}" for cell in cells))
        runners[f"onnxruntime {recipe}"] = session
        if (ov := openvino_request(path, args.threads)) is not None:
            runners[f"openvino {recipe}"] = ov

    def encoding(run: "Callable[[np.ndarray], Any]") -> "Callable[[State], Any]":
        # Each path encodes its planes, as the evaluator does: only the rotation of Black's policy is left out.
        return lambda state: run(encode(state, net.layout, net.inputs).astype(np.float32))

    evaluators: "dict[str, Callable[[State], Any]]" = {
        BASELINE: NetworkEvaluator(net, "cpu", precision="fp32", fold=False)
    }
    evaluators.update({name: encoding(run) for name, run in runners.items()})
    rates = measure(evaluators, test, args.rounds, calls=8)
    print(f"\n{'path':>49} {'positions/s':>12} {'vs fp32':>8}")
    for name, rate in rates.items():
        print(f"{name:>49} {rate:>12,.0f} {rate / rates[BASELINE]:>7.2f}x")
    if "openvino fp32" not in runners:
        print("(openvino is not installed: pip install openvino for its rows)")


if __name__ == "__main__":
    main()
