import math

import numpy as np
import pytest

from stapel_rl.eval.pentanomial import PAIR_SCORES, Pentanomial, _closest_with_mean, counts_of, elo_of, expected_score


def test_counts_of_pair_points():
    assert counts_of([0, 0.5, 2, 2, 1.5, 1, 1]).tolist() == [1, 1, 2, 1, 2]
    with pytest.raises(ValueError, match="between 0 and 2"):
        counts_of([2.5])


def test_score_and_interval_from_the_pair_spread():
    p = Pentanomial(np.array([2, 3, 10, 20, 15]))  # 50 pairs
    assert p.pairs == 50
    score = (3 * 0.25 + 10 * 0.5 + 20 * 0.75 + 15 * 1.0) / 50
    assert p.score == pytest.approx(score)
    variance = (
        2 * score**2
        + 3 * (0.25 - score) ** 2
        + 10 * (0.5 - score) ** 2
        + 20 * (0.75 - score) ** 2
        + 15 * (1 - score) ** 2
    ) / 50
    assert p.stderr() == pytest.approx(math.sqrt(variance / 50))
    # With 50 pairs the profile likelihood interval is close to the normal one from the pair spread.
    low, high = p.interval()
    half = 1.959964 * p.stderr()
    assert low == pytest.approx(score - half, rel=0.02) and high == pytest.approx(score + half, rel=0.02)
    assert p.elo() == pytest.approx(-400 * math.log10(1 / score - 1))
    elo_low, elo_high = p.elo_interval()
    assert elo_low < p.elo() < elo_high


def test_summary_line():
    line = Pentanomial(np.array([2, 3, 10, 20, 15])).summary()
    assert line == (
        "score 71.5% [63.6%, 78.2%], Elo +160 [+97, +222] (95% CI, pentanomial); pairs 0/0.5/1/1.5/2: 2 3 10 20 15"
    )


def test_one_sided_results_keep_an_honest_interval():
    # Ten lost pairs: the normal interval would be the point 0; the likelihood interval reaches up to
    # about 1 - exp(-z^2 / 2n), as the "rule of three" does for a proportion.
    low, high = Pentanomial(np.array([10, 0, 0, 0, 0])).interval()
    assert low == 0.0 and high == pytest.approx(1 - math.exp(-(1.959964**2) / 20), abs=0.01)
    assert "Elo -inf [-inf, -269]" in Pentanomial(np.array([10, 0, 0, 0, 0])).summary()
    won = Pentanomial(np.array([0, 0, 0, 0, 3])).summary()
    assert won.startswith("score 100.0% [52.5%, 100.0%], Elo +inf [+18, +inf]")
    assert Pentanomial(np.zeros(5, int)).interval() == (0.0, 1.0)


def test_elo_and_expected_score_are_inverse():
    for elo in (-300, -50, 0, 20, 400):
        assert elo_of(expected_score(elo)) == pytest.approx(elo)
    assert elo_of(0.0) == -math.inf and elo_of(1.0) == math.inf


def test_the_constrained_distribution_has_the_mean_and_keeps_the_shape():
    f = np.array([0.05, 0.15, 0.4, 0.3, 0.1])
    for mean in (0.3, 0.5, 0.5914, 0.8):
        p = _closest_with_mean(f, mean)
        assert p.sum() == pytest.approx(1.0) and p @ PAIR_SCORES == pytest.approx(mean) and (p > 0).all()
    own_mean = float(f @ PAIR_SCORES)
    np.testing.assert_allclose(_closest_with_mean(f, own_mean), f, atol=1e-9)


def test_gsprt_llr_sign_and_the_normal_approximation_for_many_pairs():
    p = Pentanomial(np.array([100, 200, 400, 200, 100]))  # score 50%: H0
    elo0, elo1 = 0.0, 20.0
    llr = p.llr(elo0, elo1)
    # Near the hypotheses the normal approximation (Stockfish's older formula) agrees closely.
    x = np.repeat(PAIR_SCORES, p.counts)
    s0, s1 = expected_score(elo0), expected_score(elo1)
    approx = x.size * (s1 - s0) * (2 * x.mean() - s0 - s1) / (2 * x.var())
    assert llr == pytest.approx(approx, rel=0.02)
    assert llr < 0 and Pentanomial(np.array([10, 50, 300, 400, 240])).llr(elo0, elo1) > 0
    assert Pentanomial(np.zeros(5, int)).llr(0, 20) == 0.0
