"""scripts/fit_classical.py and the ``classical:eval=PATH`` option: a tiny fitting run, the logistic fit
on synthetic data, reproducibility, and clear errors for bad weights files."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from scripts import load_script
from stapel_rl.classical import FEATURES
from stapel_rl.classical.evaluation import read_weights, weights_path
from stapel_rl.env import engine
from stapel_rl.env.variants import get_variant
from stapel_rl.eval.agents import make_agent

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fit():
    return load_script("fit_classical")


@pytest.mark.parametrize("variant", ["I", "II"])
def test_tiny_run_writes_weights_the_agent_loads(fit, tmp_path, variant):
    out = tmp_path / "fit" / f"weights_{variant}.json"
    assert (
        fit.main(
            [
                "--variant",
                variant,
                "--games",
                "5",
                "--rounds",
                "2",
                "--nodes",
                "150",
                "--seed",
                "3",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    data = json.loads(out.read_text())
    assert set(data["weights"]) == set(FEATURES)
    assert all(isinstance(w, int) for w in data["weights"].values())
    meta = data["metadata"]
    assert meta["variant"] == variant and meta["status"] == "fitted"
    assert (meta["games"], meta["seed"], meta["nodes"], meta["rounds"]) == (10, 3, 150, 2)
    assert meta["positions"] > 0 and meta["commit"]
    for key in ("logloss_heldout_initial", "logloss_heldout_fitted", "logloss_heldout_constant"):
        assert 0 < meta[key] < 5
    assert "captives" in meta["history"][0]["not_identified"]  # material == 2 * captives always
    assert sorted(p.name for p in out.parent.iterdir()) == sorted(
        [
            out.name,
            f"weights_{variant}.initial.json",
            f"weights_{variant}.round1.json",
            f"weights_{variant}.round2.json",
        ]
    )
    assert (
        json.loads(out.with_name(f"weights_{variant}.initial.json").read_text())["weights"]
        == json.loads(weights_path(variant).read_text())["weights"]
    )

    agent = make_agent(f"classical:nodes=300:eval={out}")
    assert list(agent.weights) == [data["weights"][f] for f in FEATURES]
    state = engine.init(variant, 1)
    assert state.legal_action_mask[0, agent(state)[0]]
    other = "II" if variant == "I" else "I"
    with pytest.raises(ValueError, match=f"weights are for Variant {variant}"):
        agent(engine.init(other, 1))


def test_self_play_is_reproducible(fit):
    variant = get_variant("I")
    weights, _ = read_weights(weights_path("I"))
    runs = [fit.play_games(variant, weights, 2, 7, 150, 6, 0.1, 0.3, progress=False) for _ in range(2)]
    assert np.array_equal(runs[0].x, runs[1].x) and np.array_equal(runs[0].y, runs[1].y)
    assert set(np.unique(runs[0].y)) <= {0.0, 0.5, 1.0}
    other = fit.play_games(variant, weights, 2, 8, 150, 6, 0.1, 0.3, progress=False)
    assert not np.array_equal(other.x[:50], runs[0].x[:50])


def test_logistic_fit_recovers_known_coefficients(fit):
    rng = np.random.default_rng(0)
    n = 40_000
    a = rng.integers(-6, 7, n).astype(float)
    x = np.column_stack([a, rng.normal(2.0, 3.0, n), 2 * a, np.zeros(n), np.ones(n)])
    beta = np.array([0.4, -0.25, 0.0, 0.0, 0.3])
    y = (rng.random(n) < 1 / (1 + np.exp(-x @ beta))).astype(float)
    got = fit.fit_logistic(x, y, l2=0.0, intercept=4)
    # Column 2 repeats column 0 (twice): the first gets the whole effect, as material does captives'.
    np.testing.assert_allclose(got, beta, atol=0.03)
    assert got[2] == 0 and got[3] == 0
    assert list(fit.independent_columns(x, intercept=4)) == [True, True, False, False, False]
    # Regularisation shrinks towards 0, the intercept excepted.
    shrunk = fit.fit_logistic(x, y, l2=1.0, intercept=4)
    assert abs(shrunk[0]) < abs(got[0]) and abs(shrunk[1]) < abs(got[1])


def test_centimen_scaling(fit):
    beta = np.zeros(len(FEATURES))
    beta[fit.MATERIAL], beta[FEATURES.index("mobility")] = 0.02, 0.003
    weights, unit = fit.to_centimen(beta)
    assert unit == "material" and weights[fit.MATERIAL] == 100 and weights[FEATURES.index("mobility")] == 15
    beta[fit.MATERIAL] = -0.01
    weights, unit = fit.to_centimen(beta, fallback_scale=0.001)
    assert unit == "played" and weights[fit.MATERIAL] == -10
    with pytest.raises(RuntimeError, match="material coefficient"):
        fit.to_centimen(beta)


def test_atomic_write_leaves_only_the_file(fit, tmp_path):
    path = tmp_path / "w.json"
    fit.write_json_atomic(path, {"a": 1})
    fit.write_json_atomic(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["w.json"]


def _weights_file(tmp_path: pathlib.Path, weights: object, name: str = "w.json") -> pathlib.Path:
    path = tmp_path / name
    path.write_text(json.dumps({"metadata": {}, "weights": weights}))
    return path


def test_packaged_files_load_through_eval(tmp_path):
    for variant in ("I", "II"):
        agent = make_agent(f"classical:nodes=100:eval={weights_path(variant)}")
        assert agent.weights_variant == variant and agent.nodes == 100 and agent.time_per_move is None
    assert make_agent(f"classical:eval={weights_path('I')}").time_per_move == 1.0  # eval= is no limit


@pytest.mark.parametrize(
    "content,words",
    [
        (None, ["does not exist"]),
        ("{not json", ["not valid JSON"]),
        ("[1, 2]", ['no "weights" object']),
        (
            json.dumps({"metadata": {}, "weights": dict.fromkeys(FEATURES, 1) | {"speed": 3}}),
            ["unknown features", "speed"],
        ),
        (json.dumps({"weights": {"material": 100}}), ["missing features", "stacks", "to_move"]),
        (json.dumps({"weights": dict.fromkeys(FEATURES, 1) | {"race": "fast"}}), ["race", "finite number"]),
        (json.dumps({"metadata": 3, "weights": dict.fromkeys(FEATURES, 1)}), ["metadata"]),
    ],
)
def test_bad_eval_files_give_clear_errors(tmp_path, content, words):
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError) as err:
        make_agent(f"classical:nodes=100:eval={path}")
    message = str(err.value)
    assert "classical:nodes=100:eval=" in message and str(path) in message
    for word in words:
        assert word in message


def test_eval_option_errors():
    with pytest.raises(ValueError, match="eval needs a weights file path"):
        make_agent("classical:eval=")
    with pytest.raises(ValueError, match="time, depth, nodes, eval"):
        make_agent("classical:evaluation=x")
    with pytest.raises(ValueError, match="twice"):
        make_agent(f"classical:eval={weights_path('I')}:eval={weights_path('I')}")
    with pytest.raises(ValueError, match="cannot be read"):
        make_agent(f"classical:eval={ROOT}")
