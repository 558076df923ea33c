"""Elo fit, confidence intervals and SPRT on synthetic results with known strengths."""

import numpy as np

from stapel_rl.eval.ratings import rate, rate_games
from stapel_rl.eval.sprt import SPRT, expected_score


def synthetic_games(true_elo, pairs_per_pairing, rng):
    """Colour-swapped pairs between every two players, results drawn from the Elo model (5% draws)."""
    white, black, score, pair = [], [], [], []
    n = len(true_elo)
    for i in range(n):
        for j in range(i + 1, n):
            for k in range(pairs_per_pairing):
                for w, b in ((i, j), (j, i)):
                    p = expected_score(true_elo[w] - true_elo[b])
                    u = rng.random()
                    s = 0.5 if u < 0.05 else float(rng.random() < p)
                    white.append(w), black.append(b), score.append(s), pair.append(f"{i}-{j}-{k}")
    return np.array(white), np.array(black), np.array(score), np.array(pair)


def test_fit_recovers_known_elo_gaps_within_the_interval():
    true = np.array([0.0, 100.0, 250.0, 400.0])
    rng = np.random.default_rng(0)
    w, b, s, pair = synthetic_games(true, 150, rng)
    r = rate(["random", "a", "b", "c"], w, b, s, pair, anchor="random", bootstrap=100)
    assert r.elo[0] == 0
    inside = (r.low <= true + 1e-9) & (true - 1e-9 <= r.high)
    assert inside.all(), (r.elo, r.low, r.high)
    assert np.abs(r.elo - true).max() < 60
    assert list(np.argsort(-r.elo)) == [3, 2, 1, 0]


def test_interval_shrinks_with_more_games():
    true = np.array([0.0, 150.0, 300.0])
    widths = []
    for pairs in (20, 80, 320):
        w, b, s, pair = synthetic_games(true, pairs, np.random.default_rng(1))
        r = rate(["random", "a", "b"], w, b, s, pair, anchor="random", bootstrap=100)
        widths.append(float(np.mean(r.high[1:] - r.low[1:])))
    assert widths[0] > widths[1] > widths[2]
    assert widths[2] < widths[0] / 3  # ~1/sqrt(n): 16x the games, about a quarter of the width


def test_rate_games_rates_records_and_leaves_out_games_of_other_players():
    w, b, s, pair = synthetic_games(np.array([0.0, 200.0, 400.0]), 20, np.random.default_rng(2))
    names = ["random", "a", "b"]
    records = [
        {"white": names[i], "black": names[j], "white_score": float(x), "pair": str(p)}
        for i, j, x, p in zip(w, b, s, pair, strict=True)
    ]
    outsider = [{"white": "a", "black": "stranger", "white_score": 0.0, "pair": f"x{k}"} for k in range(50)]
    by_records = rate_games(names, records + outsider, "random", seed=3)
    by_indices = rate(names, w, b, s, pair, anchor="random", seed=3)
    np.testing.assert_allclose(by_records.elo, by_indices.elo)
    np.testing.assert_allclose(by_records.low, by_indices.low)
    assert list(by_records.games) == list(by_indices.games) == [80, 80, 80]


def play_pairs(test: SPRT, elo_diff: float, rng, max_pairs=5000):
    p = expected_score(elo_diff)
    while test.status() == "continue" and len(test.scores) < max_pairs:
        test.add_pair(float(np.mean(rng.random(2) < p)))
    return test.status(), len(test.scores)


def test_sprt_stops_early_on_a_clearly_stronger_player():
    status, pairs = play_pairs(SPRT(0, 20), 200.0, np.random.default_rng(2))
    assert status == "H1" and pairs < 150


def test_sprt_accepts_h0_for_identical_players_most_of_the_time():
    outcomes = [play_pairs(SPRT(0, 30, 0.05, 0.05), 0.0, np.random.default_rng(seed))[0] for seed in range(40)]
    assert outcomes.count("H0") >= 34  # alpha = 0.05: about 2 of 40 may wrongly accept H1
    assert outcomes.count("continue") == 0


def test_likelihood_of_superiority():
    w, b, s, pair = synthetic_games(np.array([0.0, 300.0]), 30, np.random.default_rng(3))
    r = rate(["random", "a"], w, b, s, pair, anchor="random", bootstrap=10)
    wins = np.zeros((2, 2))
    wins[1, 0], wins[0, 1] = 20, 2
    assert r.likelihood_of_superiority(wins, 1, 0) > 0.99
    assert r.likelihood_of_superiority(wins, 0, 1) < 0.01
    assert r.likelihood_of_superiority(np.zeros((2, 2)), 0, 1) == 0.5
