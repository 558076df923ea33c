"""Training the learned evaluation (``stapel_rl.classical.nnue``) in torch, and the conversions both ways.

``Model`` is the network as trained (floats, the accumulator clipped to [0, 1]: ``nnue.forward``'s
layers); ``to_net`` quantises it into the ``nnue.Net`` the compiled search reads and ``from_net`` turns
a ``Net`` back into a ``Model`` (warm starts). ``fit`` trains on positions of ``selfplay.collect``
with Adam on the binary cross-entropy against the labels, keeping the epoch whose log-loss against the
validation games' results is lowest. ``scripts/train_eval.py`` and the minimax generation loop of
``stapel-train`` (``stapel_rl.train.minimax``) use them.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import torch
from tqdm import tqdm

from stapel_rl.classical import nnue


class Model(torch.nn.Module):
    """The network as trained: floats, the accumulator clipped to [0, 1] (``nnue.forward``'s layers)."""

    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(nnue.NUM_INPUTS + 1, width, padding_idx=nnue.NUM_INPUTS)
        torch.nn.init.uniform_(self.emb.weight, -0.02, 0.05)
        with torch.no_grad():
            self.emb.weight[nnue.NUM_INPUTS] = 0
        self.bias = torch.nn.Parameter(torch.full((width,), 0.1))
        self.hidden = torch.nn.Linear(2 * width + nnue.NUM_EXTRA, hidden)
        self.out = torch.nn.Linear(hidden, 1)

    def forward(
        self, inputs: torch.Tensor, extra: torch.Tensor, side: torch.Tensor, base: "torch.Tensor | None" = None
    ) -> torch.Tensor:
        """The logit of the side to move's winning chances: ``base`` (k times the hand-written
        evaluation) plus the network's correction."""
        acc = self.emb(inputs).sum(dim=2) + self.bias  # [B, 2, W]: White's view, Black's
        black = side.bool()[:, None]
        mover = torch.where(black, acc[:, 1], acc[:, 0]).clamp(0, 1)
        other = torch.where(black, acc[:, 0], acc[:, 1]).clamp(0, 1)
        sign = (1 - 2 * side.float())[:, None]
        x = torch.cat([mover, other, sign * extra.float() / 10.0], dim=1)
        correction = self.out(self.hidden(x).clamp(0, 1)).squeeze(1)
        return correction if base is None else base + correction


def to_net(model: Model, scale: float, weights: np.ndarray, metadata: dict) -> nnue.Net:
    """The ``nnue.Net`` of ``model`` (quantised accumulator), correcting the hand-written evaluation of
    ``weights``, its output times ``scale`` (``1 / k``) in centi-men."""
    return nnue.from_float(
        model.emb.weight.detach().numpy()[: nnue.NUM_INPUTS],
        model.bias.detach().numpy(),
        model.hidden.weight.detach().numpy(),
        model.hidden.bias.detach().numpy(),
        model.out.weight.detach().numpy()[0],
        float(model.out.bias.item()),
        scale,
        weights,
        metadata,
    )


def from_net(net: nnue.Net) -> Model:
    """A ``Model`` computing what ``net`` computes (up to its quantisation): where a new network starts
    from the current one."""
    model = Model(net.width, int(net.b1.shape[0]))
    with torch.no_grad():
        model.emb.weight[: nnue.NUM_INPUTS] = torch.from_numpy(net.emb.astype(np.float32) / nnue.QA)
        model.emb.weight[nnue.NUM_INPUTS] = 0
        model.bias.copy_(torch.from_numpy(net.bias.astype(np.float32) / nnue.QA))
        model.hidden.weight.copy_(torch.from_numpy(np.asarray(net.w1, np.float32)))
        model.hidden.bias.copy_(torch.from_numpy(np.asarray(net.b1, np.float32)))
        model.out.weight.copy_(torch.from_numpy(np.asarray(net.w2, np.float32))[None])
        model.out.bias.fill_(float(net.head[0]))
    return model


@dataclasses.dataclass
class FitSettings:
    """How ``fit`` trains: a new network's shape, and the optimiser's settings."""

    width: int = 32  # accumulator width of a new network (a warm start keeps its network's)
    hidden: int = 16  # hidden units of a new network
    epochs: int = 30  # at most this many epochs
    patience: int = 3  # stop after this many epochs without a better validation loss
    batch_size: int = 512
    lr: float = 3e-3  # Adam's learning rate
    seed: int = 1  # the new network's initialisation and the batches' order


@dataclasses.dataclass
class FitResult:
    """The trained model, the epoch it is from (0: the starting network) and its validation log-loss;
    ``start_loss``: the starting network's (``nan`` for a new network)."""

    model: Model
    epoch: int
    valid_loss: float
    start_loss: float = float("nan")


def fit(
    data: "dict[str, np.ndarray]",
    base: np.ndarray,
    target: np.ndarray,
    train_rows: np.ndarray,
    valid_rows: np.ndarray,
    settings: FitSettings,
    start: "Model | None" = None,
    progress: bool = True,
) -> FitResult:
    """The model of the epoch with the lowest validation log-loss against the results of ``valid_rows``.

    ``data`` holds ``selfplay.POSITION_KEYS``; ``base`` is the skip connection per position (k times the
    hand-written evaluation, a logit), ``target`` the labels. ``start`` (a warm start) is trained in
    place of a new ``Model``, and is itself the epoch-0 candidate. Positions of one game are alike: the
    network learns the training games' results by heart within a few epochs, hence the early stop."""
    torch.manual_seed(settings.seed)
    model = start if start is not None else Model(settings.width, settings.hidden)
    optimiser = torch.optim.Adam(model.parameters(), lr=settings.lr)
    tensors = [torch.from_numpy(data[k]) for k in ("inputs", "extra", "side")]
    tensors += [torch.from_numpy(base).float(), torch.from_numpy(target).float()]
    rng = np.random.default_rng(settings.seed)
    valid = [t[torch.from_numpy(valid_rows)] for t in tensors[:4]]
    results = torch.from_numpy(data["result"][valid_rows]).float()

    def valid_loss() -> float:
        with torch.no_grad():
            return torch.nn.functional.binary_cross_entropy_with_logits(model(*valid), results).item()

    start_loss = valid_loss() if start is not None else float("nan")
    # An untrained network is no candidate.
    best = (start_loss if start is not None else float("inf"), 0, {k: v.clone() for k, v in model.state_dict().items()})
    bar = tqdm(range(1, settings.epochs + 1), desc="epochs", unit="epoch", file=sys.stderr, disable=not progress)
    for epoch in bar:
        order = rng.permutation(train_rows)
        losses = []
        for first in range(0, order.size, settings.batch_size):
            rows = torch.from_numpy(order[first : first + settings.batch_size])
            inputs, extra, side, prior, y = (t[rows] for t in tensors)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(model(inputs, extra, side, prior), y)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
        loss_now = valid_loss()
        if loss_now < best[0]:
            best = (loss_now, epoch, {k: v.clone() for k, v in model.state_dict().items()})
        bar.set_postfix(loss=f"{np.mean(losses):.4f}", valid=f"{loss_now:.4f}", best=best[1], refresh=False)
        if epoch - best[1] >= settings.patience:
            break
    model.load_state_dict(best[2])
    return FitResult(model, best[1], best[0], start_loss)


def accumulator(net: nnue.Net, inputs: np.ndarray) -> np.ndarray:
    """The search's accumulator ``int32 [2, W]`` from a position's active inputs."""
    acc = np.tile(net.bias, (2, 1)).astype(np.int32)
    for view in range(2):
        active = inputs[view][inputs[view] < nnue.NUM_INPUTS]
        acc[view] += net.emb[active].sum(axis=0, dtype=np.int64).astype(np.int32)
    return acc


def corrections(net: nnue.Net, data: "dict[str, np.ndarray]", rows: np.ndarray) -> np.ndarray:
    """The network's correction in centi-men of each position of ``rows``, as the search computes it."""
    return np.array(
        [
            nnue.forward(
                accumulator(net, data["inputs"][i]), int(data["side"][i]), *data["extra"][i], *net.arrays()[2:]
            )
            for i in rows
        ],
        np.float64,
    )
