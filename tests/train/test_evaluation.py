"""In-training evaluation: colour-swapped openings, scores turned into Elo with intervals."""

import math

import numpy as np
import pytest

from stapel_rl.env import get_variant
from stapel_rl.eval.agents import make_agent
from stapel_rl.eval.arena import paired_openings
from stapel_rl.eval.ratings import elo_difference, wilson
from stapel_rl.train.evaluation import evaluate, make_opponents, tag_name


def test_elo_difference_of_known_scores():
    assert elo_difference(0.5, 100)[0] == pytest.approx(0.0)
    # 75% is odds of 3: 400 log10(3) = 190.8 Elo.
    assert elo_difference(0.75, 200)[0] == pytest.approx(400 * math.log10(3))
    elo, low, high = elo_difference(0.75, 200)
    w_low, w_high = wilson(0.75, 200)
    assert low == pytest.approx(400 * math.log10(w_low / (1 - w_low)))
    assert high == pytest.approx(400 * math.log10(w_high / (1 - w_high)))
    assert low < elo < high
    # A clean sweep has no finite estimate: half a game from the end, 400 log10(31) over 16 games.
    assert elo_difference(1.0, 16)[0] == pytest.approx(400 * math.log10(31))
    assert elo_difference(0.0, 16)[0] == pytest.approx(-400 * math.log10(31))
    with pytest.raises(ValueError):
        elo_difference(0.5, 0)


def test_wilson_interval_of_a_known_proportion():
    # 8 of 10: the textbook 95% Wilson interval is [0.490, 0.943].
    low, high = wilson(0.8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)


def test_paired_openings_play_each_opening_with_both_colours():
    start, colour = paired_openings(get_variant("I"), 5, 4, np.random.default_rng(0))
    assert start.batch_size == 10
    np.testing.assert_array_equal(colour, [0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(start.colours[:5], start.colours[5:])
    np.testing.assert_array_equal(start.height[:5], start.height[5:])
    assert (start.ply > 0).all()  # 4 random actions in: not the start position


def test_evaluate_reports_scores_and_elo_per_opponent():
    variant = get_variant("I").with_ply_cap(40)
    opponents = make_opponents(["random", "alphabeta:1"])
    results = evaluate(make_agent("greedy"), opponents, variant, 5, np.random.default_rng(0))
    assert [r.opponent for r in results] == ["random", "alphabeta:1"]
    for r in results:
        assert r.games == 6  # rounded up to whole pairs
        assert 0.0 <= r.score <= 1.0 and r.seconds > 0
        assert r.elo_low <= r.elo <= r.elo_high
        assert (r.elo, r.elo_low, r.elo_high) == pytest.approx(elo_difference(r.score, 6))
    scalars = results[1].scalars()
    assert set(scalars) == {
        "eval/score_vs_alphabeta_1",
        "eval/elo_vs_alphabeta_1",
        "eval/elo_vs_alphabeta_1_low",
        "eval/elo_vs_alphabeta_1_high",
    }


def test_bad_opponent_spec_names_the_config_field():
    with pytest.raises(ValueError, match="train.eval_opponents.*nonsense"):
        make_opponents(["greedy", "nonsense"])
    assert tag_name("mcts:runs/a.pt:sims=8") == "mcts_runs_a.pt_sims_8"
