"""The policy-value network: a small residual tower over the canonical observation planes.

Input is ``encode(state, layout, inputs)`` as the side to move sees the board:
``float32 [B, C, 10, 10]`` in the ``grid`` layout, or ``[B, C, 10, 5]`` in the
``compact`` layout (``C = num_planes(inputs)``), which keeps only the 50 dark squares and so
halves every convolution. On the 10x5 grid the diagonal neighbours of a square
in row r, slot k sit in rows r +- 1 at slots (k, k+1) for even rows and (k-1, k)
for odd rows: a 3x3 kernel reaches both, and a fixed row-parity plane, added
to the input by the network itself, tells it which pair is which. Outputs are policy logits over *canonical* action ids
(``NetworkEvaluator`` maps them back to board ids), a value in [-1, 1] for the
side to move and, optionally, a regression of the final Variant II points
difference (side to move minus opponent).

``masked_log_softmax`` is here for the training loss: log-probabilities over the
legal actions that are finite and never NaN (the search's probabilities are
numpy's, ``stapel_rl.mcts.qtransforms.masked_softmax``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from stapel_rl.env.geometry import NUM_ACTIONS, NUM_DIRECTIONS, NUM_SQUARES
from stapel_rl.env.observation import CELL, INPUTS, LAYOUTS, num_planes
from stapel_rl.env.variants import Variant

POLICY_HEADS = ("fc", "conv")
VALUE_HEADS = ("plane", "pool")


@dataclasses.dataclass
class NetworkConfig:
    """Shape of a ``PolicyValueNet``: the ``model`` group of the training config (``PRESETS`` are its options).

    Attributes:
        blocks: number of residual blocks after the stem (the depth of the tower).
        channels: feature channels of the stem and every residual block.
        policy_channels: channels of the 1x1 conv in the policy head; the
            linear layer to the 200 logits reads ``policy_channels * 100`` features.
        value_hidden: width of the hidden layer of the value (and points) head.
        points_head: add the auxiliary head predicting the final Variant II
            points difference; ``forward`` returns None in its place when False.
            None: decided by the variant (``for_variant``: on where points decide
            the game); a network built from None has no such head.
        layout: board layout of the input planes, "grid" (10x10, every square)
            or "compact" (10x5, dark squares only: half the FLOPs).
        policy_head: "fc": a 1x1 conv to ``policy_channels`` planes, then a
            linear layer to the 200 logits; "conv": a 3x3 conv, then a 1x1
            conv to 4 planes, one per direction, and the logit of action
            ``4 * sq + d`` is plane ``d`` at square ``sq``. The conv head
            scores a move from the features where the moving stack stands,
            the same way on every square, instead of learning each of the 200
            outputs from every cell (``policy_channels`` is then unused).
        value_head: "plane": a 1x1 conv to one plane, then an MLP over its
            cells (``ScalarHead``); "pool": a 1x1 conv keeping the channels,
            then their mean and maximum over the board (global pooling, as
            KataGo's value head), then the MLP (``PoolHead``): every channel
            reaches the value, not one plane's worth. The points head has the
            same form.
        inputs: the input planes (``stapel_rl.env.observation.INPUTS``): "base"
            (the 18 planes of the stacks and the game), or "moves" (also the
            squares the side to move's legal actions start from, the stacks
            either side could leap, and the opponent's movable stacks).
    """

    blocks: int = 6
    channels: int = 64
    policy_channels: int = 4
    value_hidden: int = 64
    points_head: "bool | None" = None
    layout: str = "grid"
    policy_head: str = "fc"
    value_head: str = "plane"
    inputs: str = "base"

    def __post_init__(self):
        if self.blocks < 0 or min(self.channels, self.policy_channels, self.value_hidden) < 1:
            raise ValueError(
                "blocks must be at least 0, and channels, policy_channels and value_hidden at least 1, got "
                f"{self.blocks}, {self.channels}, {self.policy_channels} and {self.value_hidden}"
            )
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {sorted(LAYOUTS)}, got {self.layout!r}")
        if self.policy_head not in POLICY_HEADS:
            raise ValueError(f"policy_head must be one of {POLICY_HEADS}, got {self.policy_head!r}")
        if self.value_head not in VALUE_HEADS:
            raise ValueError(f"value_head must be one of {VALUE_HEADS}, got {self.value_head!r}")
        if self.inputs not in INPUTS:
            raise ValueError(f"inputs must be one of {sorted(INPUTS)}, got {self.inputs!r}")

    def for_variant(self, variant: Variant) -> NetworkConfig:
        """This shape with ``points_head`` decided for ``variant`` if it is None."""
        if self.points_head is not None:
            return self
        return dataclasses.replace(self, points_head=variant.points_decide)

    @property
    def cells(self) -> int:
        """Cells of one plane in this layout (100 or 50)."""
        rows, cols = LAYOUTS[self.layout]
        return rows * cols


PRESETS: "dict[str, NetworkConfig]" = {
    # For unit tests and smoke runs: trains and evaluates in milliseconds.
    "tiny": NetworkConfig(blocks=2, channels=16, policy_channels=2, value_hidden=32),
    # Quick experiments on a laptop.
    "small": NetworkConfig(blocks=4, channels=32, policy_channels=4, value_hidden=64),
    # The larger network: its speed is in docs/benchmarks.md (scripts/bench_net.py).
    "default": NetworkConfig(blocks=6, channels=64, policy_channels=4, value_hidden=64),
}


def conv_bn(in_channels: int, out_channels: int, kernel_size: int) -> nn.Sequential:
    """Conv (no bias: BN's shift replaces it) followed by batch norm; spatial size kept."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=False),
        nn.BatchNorm2d(out_channels),
    )


class ResidualBlock(nn.Module):
    """conv-BN-ReLU-conv-BN, plus the input, then ReLU: ``[B, C, 10, 10] -> [B, C, 10, 10]``."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.first = conv_bn(channels, channels, 3)
        self.second = conv_bn(channels, channels, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.second(F.relu(self.first(x))))


class ScalarHead(nn.Module):
    """1x1 conv to one plane, then an MLP to one number per position: ``[B, C, H, W] -> [B]``."""

    def __init__(self, channels: int, hidden: int, cells: int) -> None:
        super().__init__()
        self.reduce = conv_bn(channels, 1, 1)
        self.hidden = nn.Linear(cells, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.reduce(x)).flatten(1)
        return self.out(F.relu(self.hidden(h))).squeeze(1)


class PoolHead(nn.Module):
    """1x1 conv, then each channel's mean and maximum over the cells, then an MLP: ``[B, C, H, W] -> [B]``."""

    def __init__(self, channels: int, hidden: int) -> None:
        super().__init__()
        self.reduce = conv_bn(channels, channels, 1)
        self.hidden = nn.Linear(2 * channels, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.reduce(x)).flatten(2)
        pooled = torch.cat([h.mean(dim=2), h.amax(dim=2)], dim=1)
        return self.out(F.relu(self.hidden(pooled))).squeeze(1)


def scalar_head(config: NetworkConfig) -> nn.Module:
    """The value (or points) head of ``config.value_head``'s form."""
    if config.value_head == "pool":
        return PoolHead(config.channels, config.value_hidden)
    return ScalarHead(config.channels, config.value_hidden, config.cells)


class PolicyValueNet(nn.Module):
    """Residual policy-value network over canonical planes.

    ``forward(obs)`` with ``obs: float32 [B, C, H, W]`` (``encode(state, net.layout,
    net.inputs)``: ``H, W`` of ``config.layout``, ``C`` planes of ``config.inputs``) returns
    ``(logits, value, points)``:

    - ``logits``: ``[B, 200]`` unnormalised, over canonical action ids;
    - ``value``: ``[B]`` in [-1, 1] (tanh), expected result for the side to move;
    - ``points``: ``[B]`` unbounded predicted final Variant II points
      difference (side to move minus opponent), or None without that head.
    """

    # Buffers registered in __init__ (parity: compact layout; square_cells: conv policy head).
    parity: torch.Tensor
    square_cells: torch.Tensor

    def __init__(self, config: "NetworkConfig | str" = "default") -> None:
        super().__init__()
        if isinstance(config, str):
            config = PRESETS[config]
        self.config = config
        c, cells = config.channels, config.cells
        rows, cols = LAYOUTS[config.layout]
        extra = 0
        if config.layout == "compact":
            # [1, 1, 10, 5]: 1 on even rows (0 = Black's back row), whose diagonal neighbours are slots k, k+1.
            parity = (torch.arange(rows) % 2 == 0).float()[None, None, :, None].expand(1, 1, rows, cols)
            self.register_buffer("parity", parity.contiguous(), persistent=False)
            extra = 1
        self.stem = nn.Sequential(conv_bn(num_planes(config.inputs) + extra, c, 3), nn.ReLU())
        self.tower = nn.Sequential(*(ResidualBlock(c) for _ in range(config.blocks)))
        if config.policy_head == "fc":
            self.policy_reduce = nn.Sequential(conv_bn(c, config.policy_channels, 1), nn.ReLU())
            self.policy_out = nn.Linear(config.policy_channels * cells, NUM_ACTIONS)
        else:
            self.policy_conv = nn.Sequential(conv_bn(c, c, 3), nn.ReLU(), nn.Conv2d(c, NUM_DIRECTIONS, 1))
            # [50]: the cell of each square in this layout (the compact grid lists the squares in order).
            cell = torch.as_tensor(CELL if config.layout == "grid" else np.arange(NUM_SQUARES))
            self.register_buffer("square_cells", cell, persistent=False)
        self.value_head = scalar_head(config)
        self.points_head = scalar_head(config) if config.points_head else None

    @property
    def layout(self) -> str:
        """The input layout, "grid" or "compact" (``encode(state, net.layout, net.inputs)``)."""
        return self.config.layout

    @property
    def inputs(self) -> str:
        """The input planes, "base" or "moves" (``encode(state, net.layout, net.inputs)``)."""
        return self.config.inputs

    def forward(self, obs: torch.Tensor) -> "tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]":
        """``obs [B, C, H, W]`` -> ``(logits [B, 200], value [B], points [B] or None)``."""
        shape = (num_planes(self.config.inputs), *LAYOUTS[self.config.layout])
        if obs.shape[-3:] != shape:
            raise ValueError(
                f"a {self.config.layout} network of {self.config.inputs} inputs takes planes "
                f"[B, {', '.join(map(str, shape))}], got {tuple(obs.shape)}"
            )
        if self.config.layout == "compact":
            parity = self.parity.to(obs.dtype).expand(obs.shape[0], -1, -1, -1)
            obs = torch.cat([obs, parity], dim=1)
        x = self.tower(self.stem(obs))
        if self.config.policy_head == "fc":
            logits = self.policy_out(self.policy_reduce(x).flatten(1))
        else:
            planes = self.policy_conv(x).flatten(2)  # [B, 4, cells]
            logits = planes[:, :, self.square_cells].transpose(1, 2).reshape(obs.shape[0], NUM_ACTIONS)
        value = torch.tanh(self.value_head(x))
        points = self.points_head(x) if self.points_head is not None else None
        return logits, value, points

    def num_parameters(self) -> int:
        """Number of trainable parameters."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


def masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Log-probabilities over the entries where ``mask`` is True; never NaN.

    Args:
        logits: ``float [B, A]`` (any shape broadcastable with ``mask``); may
            hold huge values or +-inf.
        mask: ``bool [B, A]``, True where the action is legal.

    Returns:
        ``[B, A]`` log-probabilities. Illegal entries hold ``finfo.min``, a
        finite stand-in for log 0: its ``exp`` is exactly 0, and ``target *
        log_probs`` stays finite (0, not NaN) where the target is 0. A row with
        no legal entry is ``finfo.min`` throughout. Among legal entries, +inf
        logits share the mass and -inf logits get none; a row whose legal
        logits are all -inf is uniform over them. Gradients reach legal
        logits only.
    """
    mask = mask.to(torch.bool)
    floor = torch.finfo(logits.dtype).min
    # Clamping to a quarter of the range keeps +-inf comparable and every
    # difference below finite; real logits are nowhere near it.
    limit = torch.finfo(logits.dtype).max / 4
    x = logits.clamp(-limit, limit)
    peak = torch.where(mask, x, -limit).amax(dim=dim, keepdim=True)
    shifted = torch.where(mask, x - peak, -torch.inf)
    # The largest legal entry contributes exp(0) = 1, so the sum is >= 1 when
    # any entry is legal; the clamp only guards the all-illegal rows.
    log_total = shifted.exp().sum(dim=dim, keepdim=True).clamp_min(1.0).log()
    return torch.where(mask, shifted - log_total, floor)
