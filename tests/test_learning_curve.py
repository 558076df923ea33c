"""scripts/learning_curve.py: snapshots of runs rated on a fixed ladder, Elo against hours, resumable."""

import importlib.util
import json
import pathlib

import pytest

from stapel_rl.eval.tournament import load_results
from stapel_rl.train import checkpoint

ROOT = pathlib.Path(__file__).resolve().parent.parent
TRAINED = ROOT / "tests" / "data" / "small_compact_I.pt"


def load_script():
    spec = importlib.util.spec_from_file_location("learning_curve", ROOT / "scripts" / "learning_curve.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_run(directory: pathlib.Path, minutes: "list[float]") -> pathlib.Path:
    """A run directory whose snapshots/ hold the trained test network at the given run times."""
    saved = checkpoint.load(TRAINED)
    for step, m in enumerate(minutes, start=1):
        checkpoint.save(directory / "snapshots", step, {
            "model": saved["model"], "model_config": saved["model_config"], "counters": {"seconds": 60.0 * m}},
            keep=0)
    return directory


@pytest.mark.slow
def test_curves_of_two_runs_on_one_ladder(tmp_path):
    script = load_script()
    runs = [fake_run(tmp_path / "a", [5, 10]), fake_run(tmp_path / "b", [5])]
    out, figure = tmp_path / "out", tmp_path / "curve.png"
    argv = [*map(str, runs), "--ladder", "random", "greedy", "--anchor", "greedy", "--sims", "2", "--pairs", "1",
            "--out", str(out), "--plot", str(figure)]
    assert script.main(argv) == 0
    result = json.loads((out / "learning_curve.json").read_text())
    assert [r["hours"] for r in result["curves"]["a"]] == pytest.approx([5 / 60, 10 / 60])
    assert len(result["curves"]["b"]) == 1
    ladder = {r["player"]: r for r in result["ladder"]}
    assert ladder["greedy"]["elo"] == 0.0
    for row in result["curves"]["a"] + result["curves"]["b"]:
        assert row["ci_low"] <= row["elo"] <= row["ci_high"] and row["games"] == 4  # 2 ladder members x 1 pair
    games = load_results(out / "games.jsonl")
    assert len(games) == 2 + 3 * 4  # the ladder pair, then each snapshot against each member
    assert figure.is_file() and figure.stat().st_size > 10_000
    # Rerun: everything is in games.jsonl already, no game is played again.
    assert script.main(argv) == 0
    assert len(load_results(out / "games.jsonl")) == len(games)


def test_a_run_without_snapshots_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert load_script().main([str(tmp_path / "empty")]) == 2
    assert "no snapshots/" in capsys.readouterr().err
