"""stapel_rl.classical.selfplay and trainer: the games, labels, conversions and fit that train_eval.py and the
minimax loop share."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.special import expit

from stapel_rl.classical import nnue
from stapel_rl.classical.evaluation import load_weights
from stapel_rl.classical.searcher import Searcher
from stapel_rl.classical.selfplay import POSITION_KEYS, collect, labels, play_game
from stapel_rl.classical.trainer import FitSettings, Model, fit, from_net, to_net
from stapel_rl.env.variants import get_variant


def games(seed: "list[int]", first: int = 0, count: int = 2) -> "dict[str, np.ndarray]":
    variant = get_variant("I")
    return collect(variant, Searcher(variant, tt_bits=12), count, seed, 60, 4, 0.1, 0.3, first, progress=False)


def test_collect_plays_game_i_with_the_stream_seed_then_i():
    data = games([5, 6], first=3)
    assert set(data) == set(POSITION_KEYS) and set(np.unique(data["game"])) == {3, 4}
    variant = get_variant("I")
    _, sides, values, white, _ = play_game(
        variant, Searcher(variant, tt_bits=12), np.random.default_rng([5, 6, 3]), 60, 4, 0.1, 0.3
    )
    first = data["game"] == 3
    np.testing.assert_array_equal(data["side"][first], sides)
    np.testing.assert_array_equal(data["value"][first], values)
    np.testing.assert_array_equal(data["result"][first], np.where(np.array(sides) == 0, white, 1 - white))
    again = games([5, 6], first=3)
    assert all(np.array_equal(data[k], again[k], equal_nan=True) for k in POSITION_KEYS)


def test_labels_mix_result_and_search_value():
    result, value = np.array([1.0, 0.0, 0.5]), np.array([np.nan, 0.0, 100.0])
    np.testing.assert_allclose(
        labels(result, value, 0.01, 0.8), [1.0, 0.8 * 0.5, 0.2 * 0.5 + 0.8 * expit(1.0)], rtol=0, atol=1e-12
    )
    np.testing.assert_array_equal(labels(result, value, 0.01, 0.0), result)
    with pytest.raises(ValueError, match=r"value_mix must be in \[0, 1\]"):
        labels(result, value, 0.01, 1.5)


def test_a_network_goes_to_torch_and_back_unchanged():
    torch.manual_seed(0)
    net = to_net(Model(8, 4), 400.0, load_weights("I"), {"variant": "I"})
    back = to_net(from_net(net), float(net.head[1]), net.weights, net.metadata)
    for a, b in zip(net.arrays(), back.arrays(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_warm_start_that_does_not_improve_is_kept_as_epoch_0():
    data = games([1], count=3)
    rows = np.arange(data["result"].size)
    target = labels(data["result"], data["value"], 0.002, 0.5)
    torch.manual_seed(0)
    start = from_net(to_net(Model(8, 4), 500.0, load_weights("I"), {}))
    before = {k: v.clone() for k, v in start.state_dict().items()}
    frozen = FitSettings(epochs=2, patience=5, batch_size=64, lr=0.0)  # no step changes the network
    result = fit(data, np.zeros(rows.size), target, rows, rows, frozen, start=start, progress=False)
    assert result.epoch == 0 and np.isfinite(result.valid_loss)
    assert all(torch.equal(v, result.model.state_dict()[k]) for k, v in before.items())
    # A new network is never its untrained self: the first epoch is the first candidate.
    trained = fit(data, np.zeros(rows.size), target, rows, rows, FitSettings(8, 4, 2, 5, 64), progress=False)
    assert trained.epoch >= 1 and trained.model.emb.weight.shape == (nnue.NUM_INPUTS + 1, 8)
