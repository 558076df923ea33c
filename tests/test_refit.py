"""scripts/refit.py: a generation of a minimax run trained again, with the run's settings or others."""

import json
import pathlib

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from scripts import load_script
from stapel_rl.classical import nnue
from stapel_rl.train import minimax
from stapel_rl.train.app import CONFIG_DIR

refit = load_script("refit")
ARRAYS = ("emb", "bias", "w1", "b1", "w2", "head", "weights")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        cfg = compose(
            config_name="config",
            overrides=["loop=minimax", "minimax=tiny", "minimax.panel_pairs=0", "minimax.start=zero"],
        )
    run_dir = tmp_path_factory.mktemp("run")
    minimax.run(cfg, run_dir)
    return run_dir


@pytest.mark.parametrize("g", [1, 2])
def test_the_runs_own_settings_train_the_runs_network_again(run, tmp_path, g, capsys):
    out = tmp_path / "again.npz"
    assert refit.main([str(run), "--generation", str(g), "--out", str(out)]) == 0
    again, made = nnue.load(out), nnue.load(run / "generations" / f"gen_{g:04d}" / "candidate.npz")
    for key in ARRAYS:
        np.testing.assert_array_equal(getattr(again, key), getattr(made, key))
    assert again.metadata["best_epoch"] == made.metadata["best_epoch"]
    assert again.metadata["refit_of"] == g and again.metadata["settings"] == {}
    printed = capsys.readouterr().out
    assert f"generation {g} refitted (the run settings): epoch {made.metadata['best_epoch']} kept" in printed
    assert "(starting network 0." in printed  # from zero, every generation starts from a network


def test_other_settings_train_another_network(run, tmp_path, capsys):
    out = tmp_path / "wide.npz"
    assert (
        refit.main([str(run), "--generation", "2", "--scratch", "--width", "12", "--lr", "0.01", "--out", str(out)])
        == 0
    )
    wide = nnue.load(out)
    assert wide.width == 12 and wide.metadata["settings"] == {"lr": 0.01, "width": 12} and wide.metadata["scratch"]
    assert "(lr=0.01, width=12, from scratch)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--generation", "3"], "--generation must be one of the run's 1..2, got 3"),
        (["--generation", "1", "--width", "64"], "--width and --hidden shape a new network: give --scratch too"),
        (["--generation", "1", "--epochs", "0"], "minimax.epochs must be at least 1, got 0"),
        (["--generation", "1", "--value-mix", "1.5"], "minimax.epsilon and minimax.value_mix in [0, 1]"),
    ],
)
def test_bad_arguments_are_refused(run, args, message, capsys):
    assert refit.main([str(run), *args]) == 2
    assert message in capsys.readouterr().err
    assert not (run / "refits").exists()


def test_a_folder_without_a_run_is_refused(tmp_path, capsys):
    assert refit.main([str(tmp_path), "--generation", "1"]) == 2
    assert "has no loop.json: not a minimax run" in capsys.readouterr().err


def test_pooled_positions_train_in_their_own_scale_and_never_validate(run, monkeypatch):
    seen = {}

    def fit(data, base, target, train_rows, valid_rows, settings, start=None):
        seen.update(data=data, target=target, train_rows=train_rows, valid_rows=valid_rows)
        raise StopIteration  # the arguments are the test

    monkeypatch.setattr(minimax, "fit", fit)
    state = json.loads((run / "loop.json").read_text())
    m = minimax.MinimaxConfig(**state["config"]["minimax"])
    other = minimax.positions_of(run, 1)
    k_other = 10 * state["scale_k"]
    with pytest.raises(StopIteration):
        minimax.train(m, state, None, np.asarray(state["weights"]), 0, 2, run, {}, [(other, k_other)])
    own = len(seen["target"]) - len(other["result"])
    tail = seen["target"][own:]
    np.testing.assert_allclose(tail, minimax.labels(other["result"], other["value"], k_other, m.value_mix))
    assert (seen["valid_rows"] < own).all() and set(range(own, own + len(tail))) <= set(seen["train_rows"])
    np.testing.assert_array_equal(seen["data"]["inputs"][own:], other["inputs"])


def test_refit_pools_other_runs(run, tmp_path, capsys):
    out = tmp_path / "pooled.npz"
    assert refit.main([str(run), "--generation", "2", "--pool", str(run), "--out", str(out)]) == 0
    pooled = nnue.load(out)
    total = sum(len(minimax.positions_of(run, g)["result"]) for g in (1, 2))
    assert pooled.metadata["pooled_positions"] == total and pooled.metadata["pool"] == [str(run)]
    assert "2 generations of other runs pooled" in capsys.readouterr().out
    assert refit.main([str(run), "--generation", "2", "--pool", str(tmp_path)]) == 2
    assert f"--pool {tmp_path} has no loop.json: not a minimax run" in capsys.readouterr().err
