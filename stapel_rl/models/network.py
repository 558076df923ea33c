"""The policy-value network: a small residual tower over the canonical observation planes.

Input is ``encode(state)``: ``float32 [B, NUM_PLANES, 10, 10]`` as the side to
move sees the board. Outputs are policy logits over *canonical* action ids
(``NetworkEvaluator`` maps them back to board ids), a value in [-1, 1] for the
side to move and, optionally, a regression of the final Variant II points
difference (side to move minus opponent).

The masked softmax helpers are here because training needs them as well as
inference: they turn logits plus a legal mask into probabilities that are
exactly 0 on illegal actions and never NaN.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from stapel_rl.env.geometry import NUM_ACTIONS
from stapel_rl.env.observation import NUM_PLANES

BOARD_CELLS = 100  # the 10x10 grid the planes live on


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """Shape of a ``PolicyValueNet``.

    Attributes:
        blocks: number of residual blocks after the stem (the depth of the tower).
        channels: feature channels of the stem and every residual block.
        policy_channels: channels of the 1x1 conv in the policy head; the
            linear layer to the 200 logits reads ``policy_channels * 100`` features.
        value_hidden: width of the hidden layer of the value (and points) head.
        points_head: add the auxiliary head predicting the final Variant II
            points difference; ``forward`` returns None in its place when False.
    """

    blocks: int = 6
    channels: int = 64
    policy_channels: int = 4
    value_hidden: int = 64
    points_head: bool = False


PRESETS: "dict[str, NetworkConfig]" = {
    # For unit tests and smoke runs: trains and evaluates in milliseconds.
    "tiny": NetworkConfig(blocks=2, channels=16, policy_channels=2, value_hidden=32),
    # Quick experiments on a laptop.
    "small": NetworkConfig(blocks=4, channels=32, policy_channels=4, value_hidden=64),
    # Sized to evaluate >= ~3000 positions/s in batches of 512 on 2 CPU cores.
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
    """1x1 conv to one plane, then an MLP to one number per position: ``[B, C, 10, 10] -> [B]``."""

    def __init__(self, channels: int, hidden: int) -> None:
        super().__init__()
        self.reduce = conv_bn(channels, 1, 1)
        self.hidden = nn.Linear(BOARD_CELLS, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.reduce(x)).flatten(1)
        return self.out(F.relu(self.hidden(h))).squeeze(1)


class PolicyValueNet(nn.Module):
    """Residual policy-value network over canonical planes.

    ``forward(obs)`` with ``obs: float32 [B, NUM_PLANES, 10, 10]`` returns
    ``(logits, value, points)``:

    - ``logits``: ``[B, 200]`` unnormalised, over canonical action ids;
    - ``value``: ``[B]`` in [-1, 1] (tanh), expected result for the side to move;
    - ``points``: ``[B]`` unbounded predicted final Variant II points
      difference (side to move minus opponent), or None without that head.
    """

    def __init__(self, config: "NetworkConfig | str" = "default") -> None:
        super().__init__()
        if isinstance(config, str):
            config = PRESETS[config]
        self.config = config
        c = config.channels
        self.stem = nn.Sequential(conv_bn(NUM_PLANES, c, 3), nn.ReLU())
        self.tower = nn.Sequential(*(ResidualBlock(c) for _ in range(config.blocks)))
        self.policy_reduce = nn.Sequential(conv_bn(c, config.policy_channels, 1), nn.ReLU())
        self.policy_out = nn.Linear(config.policy_channels * BOARD_CELLS, NUM_ACTIONS)
        self.value_head = ScalarHead(c, config.value_hidden)
        self.points_head = ScalarHead(c, config.value_hidden) if config.points_head else None

    def forward(self, obs: torch.Tensor) -> "tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]":
        """``obs [B, NUM_PLANES, 10, 10]`` -> ``(logits [B, 200], value [B], points [B] or None)``."""
        x = self.tower(self.stem(obs))
        logits = self.policy_out(self.policy_reduce(x).flatten(1))
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


def masked_softmax(logits: torch.Tensor, mask: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Probabilities over the entries where ``mask`` is True: ``[B, A] -> [B, A]``.

    Illegal entries are exactly 0; each row with a legal entry sums to 1; a
    row with no legal entry is all 0 (never NaN). See ``masked_log_softmax``.
    """
    mask = mask.to(torch.bool)
    return torch.where(mask, masked_log_softmax(logits, mask, dim).exp(), 0.0)
