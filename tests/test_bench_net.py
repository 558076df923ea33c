"""scripts/bench_net.py's arithmetic count, which its roofline (GFLOP/s against the ceiling) rests on."""

import dataclasses

import pytest
import torch

from scripts import load_script
from stapel_rl.env.observation import LAYOUTS
from stapel_rl.models import PRESETS, PolicyValueNet


@pytest.mark.parametrize("layout", ["grid", "compact"])
@pytest.mark.parametrize("size", ["tiny", "small"])
def test_flops_per_position_counts_every_weight_once_per_output_cell(size, layout):
    # Counted from the weights instead of the forward pass: a dense layer makes two operations per
    # weight, and a stride-1 "same" convolution makes them at every cell of the board.
    net = PolicyValueNet(dataclasses.replace(PRESETS[size], layout=layout))
    cells = LAYOUTS[layout][0] * LAYOUTS[layout][1]
    expected = sum(
        2 * m.weight.numel() * (cells if isinstance(m, torch.nn.Conv2d) else 1)
        for m in net.modules()
        if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))
    )
    assert load_script("bench_net").flops_per_position(net) == expected


def test_the_compact_layout_halves_the_arithmetic_but_for_its_parity_plane():
    flops = load_script("bench_net").flops_per_position
    grid, compact = (PolicyValueNet(dataclasses.replace(PRESETS["small"], layout=x)) for x in ("grid", "compact"))
    assert 0.5 < flops(compact) / flops(grid) < 0.51
