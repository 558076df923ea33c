"""A learned evaluation for the compiled search, NNUE-style: a wide sparse first layer kept up to date
as stacks move, then two small dense layers at the leaf.

Inputs: every occupied square contributes one of ``NUM_INPUTS`` features per point of view
(``feature``): the square, seen from that side (Black's view is the board turned by 180
degrees, so both sides advance the same way), whether the stack's top is that side's, its
height (1..5, taller as 5) and the men of the other colour in it (0..3, more as 3, the
prisoners). The first layer's output, the *accumulator* ``int32 [2, W]`` (White's view, Black's
view), is the sum of the embedding rows of the active features plus a bias: a move changes a
few squares, so the search changes a few rows (``add_stack``) instead of recomputing it, as
Stockfish's NNUE does. Embeddings are stored as floats and used as integers scaled by
``QA`` (exact sums: the incremental accumulator equals a full recomputation).

At a leaf: ``x = [clip(acc[mover]), clip(acc[other]), mobility, blocked]`` (clip to [0, 1];
mobility and blocked as in the hand-written evaluation, the side to move's view, over 10),
``y = w2 . clip(w1 x + b1) + b2``. The network is a correction to the hand-written evaluation
it was trained with (``Net.weights``, a skip connection): the position is worth that
evaluation plus ``round(scale * y)`` centi-men, ``scale`` being the inverse of the logistic
scale that fits the hand-written evaluation to game results, so the two terms add as logits
of the side to move's winning chances. ``scripts/train_eval.py`` trains one from the hand-written
engine's games, ``stapel-train loop=minimax`` generation by generation from its own; files are
``.npz`` (``save``/``load``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import tempfile
import zipfile

import numpy as np
from numba import njit

from stapel_rl.classical.board import occupancy, popcount
from stapel_rl.classical.evaluation import NUM_FEATURES, evaluate, mobility_blocked

#: Classes of a stack seen from one side: top (own, other) x height (1..5) x prisoners (0..3).
NUM_CLASSES = 2 * 5 * 4
NUM_INPUTS = 50 * NUM_CLASSES
#: Extra inputs of the dense layer after the two accumulators: mobility and blocked.
NUM_EXTRA = 2
#: The accumulator's integer scale: clip(acc) = min(max(acc, 0), QA) / QA.
QA = 1024
_ONE = np.uint64(1)
_PACKAGED = pathlib.Path(__file__).resolve().parent


@njit(cache=True, nogil=True, inline="always")
def feature(s: int, height: int, col: np.uint64, view: int) -> int:
    """The input index of the stack ``height``/``col`` on square ``s`` from side ``view``'s point of view."""
    height = np.int64(height)
    owner = int(col & _ONE)
    black_men = np.int64(popcount(col))
    own_colour = height - black_men if owner == 0 else black_men
    prisoners = min(height - own_colour, 3)
    square = s if view == 0 else 49 - s
    top = 0 if owner == view else 1
    return square * NUM_CLASSES + top * 20 + (min(height, 5) - 1) * 4 + prisoners


@njit(cache=True, nogil=True, inline="always")
def add_stack(acc: np.ndarray, s: int, height: int, col: np.uint64, emb: np.ndarray, sign: int) -> None:
    """Add (``sign`` 1) or remove (-1) the stack on square ``s`` to/from ``acc`` ``int32 [2, W]``."""
    if height == 0:
        return
    white = feature(s, height, col, 0)
    black = feature(s, height, col, 1)
    for j in range(acc.shape[1]):
        acc[0, j] += sign * emb[white, j]
        acc[1, j] += sign * emb[black, j]


@njit(cache=True, nogil=True)
def refresh(h: np.ndarray, c: np.ndarray, acc: np.ndarray, emb: np.ndarray, bias: np.ndarray) -> None:
    """The accumulator ``acc`` ``int32 [2, W]`` of a whole board, from scratch."""
    for j in range(acc.shape[1]):
        acc[0, j] = bias[j]
        acc[1, j] = bias[j]
    for s in range(50):
        add_stack(acc, s, h[s], c[s], emb, 1)


@njit(cache=True, nogil=True)
def forward(
    acc: np.ndarray,
    side: int,
    mobility: int,
    blocked: int,
    w1: np.ndarray,
    b1: np.ndarray,
    w2: np.ndarray,
    head: np.ndarray,
) -> int:
    """Centi-men for the side to move ``side`` from the accumulator and White's ``mobility``/``blocked``."""
    width = acc.shape[1]
    sign = 1.0 if side == 0 else -1.0
    total = head[0]
    for k in range(b1.shape[0]):
        z = b1[k] + w1[k, 2 * width] * (sign * mobility / 10.0) + w1[k, 2 * width + 1] * (sign * blocked / 10.0)
        for j in range(width):
            a = min(max(acc[side, j], 0), QA)
            b = min(max(acc[1 - side, j], 0), QA)
            z += (w1[k, j] * a + w1[k, width + j] * b) / QA
        total += w2[k] * min(max(z, 0.0), 1.0)
    return int(np.round(head[1] * total))


@njit(cache=True, nogil=True)
def inputs_into(h: np.ndarray, c: np.ndarray, out: np.ndarray, extra: np.ndarray) -> None:
    """A board's active inputs, ``out`` ``int64 [2, 50]`` (White's view, Black's; ``NUM_INPUTS`` pads),
    and White's mobility and blocked counts, ``extra`` ``int64 [2]``: what training reads."""
    out[:] = NUM_INPUTS
    k = 0
    for s in range(50):
        if h[s] != 0:
            out[0, k] = feature(s, h[s], c[s], 0)
            out[1, k] = feature(s, h[s], c[s], 1)
            k += 1
    white, black = occupancy(h, c)
    extra[0], extra[1] = mobility_blocked(white, black)


@njit(cache=True, nogil=True)
def evaluate_board(h: np.ndarray, c: np.ndarray, side: int, net_arrays: tuple, weights: np.ndarray) -> int:
    """The whole evaluation of a board from scratch, hand-written part and correction (what the search
    computes incrementally)."""
    emb, bias, w1, b1, w2, head = net_arrays
    acc = np.zeros((2, bias.shape[0]), np.int32)
    refresh(h, c, acc, emb, bias)
    white, black = occupancy(h, c)
    mobility, blocked = mobility_blocked(white, black)
    base = evaluate(h, c, side, weights, np.zeros(NUM_FEATURES, np.int64))
    return base + forward(acc, side, mobility, blocked, w1, b1, w2, head)


@dataclasses.dataclass
class Net:
    """The arrays the search reads (shapes: ``W`` accumulator width, ``H`` hidden units).

    Attributes:
        emb: ``int32 [NUM_INPUTS, W]`` embeddings times ``QA``, rounded.
        bias: ``int32 [W]`` the accumulator's bias times ``QA``, rounded.
        w1: ``float32 [H, 2 W + NUM_EXTRA]``, b1 ``float32 [H]``, w2 ``float32 [H]``: the dense layers.
        head: ``float64 [2]``: the output bias and the scale to centi-men.
        weights: ``int64 [NUM_FEATURES]`` the hand-written evaluation the net corrects.
        metadata: how the net was made (variant, data, losses, code version).
    """

    emb: np.ndarray
    bias: np.ndarray
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    head: np.ndarray
    weights: np.ndarray
    metadata: dict

    @staticmethod
    def off() -> Net:
        """Placeholder arrays for a search with the hand-written evaluation (width 1, never read)."""
        return Net(
            np.zeros((1, 1), np.int32),
            np.zeros(1, np.int32),
            np.zeros((1, 2 + NUM_EXTRA), np.float32),
            np.zeros(1, np.float32),
            np.zeros(1, np.float32),
            np.zeros(2, np.float64),
            np.zeros(NUM_FEATURES, np.int64),
            {},
        )

    @property
    def width(self) -> int:
        return int(self.emb.shape[1])

    def arrays(self) -> tuple:
        """``(emb, bias, w1, b1, w2, head)``, as ``evaluate_board`` takes them."""
        return self.emb, self.bias, self.w1, self.b1, self.w2, self.head

    def evaluate(self, h: np.ndarray, c: np.ndarray, side: int) -> int:
        """Centi-men of the board ``h``/``c`` for ``side`` to move (hand-written part and correction)."""
        h, c = np.asarray(h, np.uint8), np.asarray(c, np.uint64)
        return int(evaluate_board(h, c, int(side), self.arrays(), self.weights))


def from_float(
    emb: np.ndarray,
    bias: np.ndarray,
    w1: np.ndarray,
    b1: np.ndarray,
    w2: np.ndarray,
    b2: float,
    scale: float,
    weights: np.ndarray,
    metadata: dict,
) -> Net:
    """A ``Net`` from trained float weights (embeddings and bias in accumulator units, 1 = clip's top)
    correcting the hand-written evaluation of ``weights``."""
    emb, bias = np.asarray(emb, np.float64), np.asarray(bias, np.float64)
    w1 = np.asarray(w1, np.float32)
    if emb.shape != (NUM_INPUTS, bias.shape[0]) or w1.shape != (len(b1), 2 * bias.shape[0] + NUM_EXTRA):
        raise ValueError(f"inconsistent shapes: emb {emb.shape}, bias {bias.shape}, w1 {w1.shape}, b1 {np.shape(b1)}")
    return Net(
        np.round(emb * QA).astype(np.int32),
        np.round(bias * QA).astype(np.int32),
        np.ascontiguousarray(w1),
        np.asarray(b1, np.float32),
        np.asarray(w2, np.float32),
        np.array([b2, scale], np.float64),
        np.asarray(weights, np.int64),
        dict(metadata),
    )


def save(net: Net, path: "str | pathlib.Path") -> pathlib.Path:
    """Write ``net`` to ``path`` (``.npz``) atomically: a temporary file, then a rename."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as out:
        np.savez(
            out,
            emb=net.emb,
            bias=net.bias,
            w1=net.w1,
            b1=net.b1,
            w2=net.w2,
            head=net.head,
            weights=net.weights,
            metadata=np.array(json.dumps(net.metadata)),
        )
    os.chmod(tmp, 0o644)  # mkstemp's file is private; a network is data to share, like a checkpoint
    os.replace(tmp, path)
    return path


def load(path: "str | pathlib.Path") -> Net:
    """The ``Net`` of an ``.npz`` file ``save`` wrote; ``ValueError`` saying what is wrong otherwise."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"evaluation network {str(path)!r} does not exist")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in ("emb", "bias", "w1", "b1", "w2", "head", "weights", "metadata")}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        raise ValueError(
            f"evaluation network {str(path)!r} cannot be read (corrupt, or not a net file): {err}"
        ) from None
    net = Net(
        arrays["emb"].astype(np.int32),
        arrays["bias"].astype(np.int32),
        np.ascontiguousarray(arrays["w1"], np.float32),
        arrays["b1"].astype(np.float32),
        arrays["w2"].astype(np.float32),
        arrays["head"].astype(np.float64),
        arrays["weights"].astype(np.int64),
        json.loads(str(arrays["metadata"])),
    )
    width, hidden = net.bias.shape[0], net.b1.shape[0]
    shapes_ok = (
        net.emb.shape == (NUM_INPUTS, width)
        and net.w1.shape == (hidden, 2 * width + NUM_EXTRA)
        and net.w2.shape == (hidden,)
        and net.head.shape == (2,)
        and net.weights.shape == (NUM_FEATURES,)
    )
    if not shapes_ok:
        raise ValueError(f"evaluation network {str(path)!r} has inconsistent shapes")
    return net


def packaged_path(variant_name: str) -> pathlib.Path:
    """Where the packaged network of a variant is (``classical:eval=nnue``)."""
    return _PACKAGED / f"nnue_{variant_name}.npz"


def load_packaged(variant_name: str) -> Net:
    """The packaged network of a variant; ``ValueError`` if the package ships none for it."""
    path = packaged_path(variant_name)
    if not path.is_file():
        shipped = sorted(p.stem.removeprefix("nnue_") for p in _PACKAGED.glob("nnue_*.npz"))
        raise ValueError(f"no packaged evaluation network for Variant {variant_name} (packaged: {shipped})")
    return load(path)


#: The engine's evaluations by name; any other evaluation spec is a network file's path.
EVALS = ("hand", "nnue")


def engine_eval(spec: "str | Net", variant_name: str) -> "tuple[Net | None, float]":
    """The learned network an evaluation spec names (``None``: the hand-written evaluation alone) and ``k``,
    the logistic scale of the engine's score with it (``sigmoid(k * score)``, the side to move's winning
    chances): ``"hand"`` and ``"nnue"`` (the packaged network) in the packaged network's scale, a network
    file's path (or a ``Net`` read already) in its own. ``ValueError`` for a missing or corrupt file or a
    network of another variant."""
    if isinstance(spec, str) and spec in EVALS:
        return (load_packaged(variant_name) if spec == "nnue" else None), packaged_scale(variant_name)
    if isinstance(spec, str) and not spec:
        raise ValueError("an engine evaluation is hand, nnue or a network file's path, got ''")
    net = load(spec) if isinstance(spec, str) else spec
    made_for = net.metadata.get("variant")
    if made_for is not None and made_for != variant_name:
        named = f" {spec}" if isinstance(spec, str) else ""
        raise ValueError(f"the evaluation network{named} is for Variant {made_for}, not {variant_name}")
    return net, 1.0 / float(net.head[1])  # the network's output is in its own centi-men


def packaged_scale(variant_name: str) -> float:
    """``k``, the logit of the side to move's winning chances per centi-man of the engine's score, as the
    packaged network reads it (fitted to the hand-written evaluation's games): ``sigmoid(k * score)``."""
    return 1.0 / float(load_packaged(variant_name).head[1])
