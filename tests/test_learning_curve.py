"""scripts/learning_curve.py: snapshots of runs rated on a fixed ladder, Elo against hours, resumable."""

import json
import pathlib

import pytest

from scripts import load_script
from stapel_rl.models import checkpoint
from stapel_rl.records import load_jsonl

ROOT = pathlib.Path(__file__).resolve().parent.parent
TRAINED = ROOT / "tests" / "data" / "small_compact_I.pt"


def fake_run(directory: pathlib.Path, minutes: "list[float]", final: "float | None" = None) -> pathlib.Path:
    """A run directory whose snapshots/ hold the trained test network at the given run times, and
    whose checkpoints/ hold it at ``final`` minutes."""
    saved = checkpoint.load(TRAINED)
    for step, m in enumerate(minutes + ([final] if final is not None else []), start=1):
        folder = "snapshots" if step <= len(minutes) else "checkpoints"
        checkpoint.save(
            directory / folder,
            step,
            {"model": saved["model"], "model_config": saved["model_config"], "counters": {"seconds": 60.0 * m}},
            keep=0,
        )
    return directory


def test_the_final_checkpoint_joins_the_snapshots_when_later(tmp_path):
    script = load_script("learning_curve")
    run = fake_run(tmp_path / "a", [5, 10, 15], final=17)
    points = script.snapshots(run, every=2)
    assert [p.parent.name for p, _ in points] == ["snapshots", "snapshots", "checkpoints"]
    assert [h for _, h in points] == pytest.approx([5 / 60, 15 / 60, 17 / 60])
    # A run that stopped right after its last snapshot: the checkpoint adds nothing.
    assert len(script.snapshots(fake_run(tmp_path / "b", [5], final=5), every=1)) == 1


def test_snapshots_after_the_hours_cap_are_left_out(tmp_path):
    script = load_script("learning_curve")
    run = fake_run(tmp_path / "a", [5, 10, 15, 20], final=23)
    # By 16 minutes: every second of the three snapshots saved by then (the last always), no final checkpoint.
    points = script.snapshots(run, every=2, until=16 / 60)
    assert [h for _, h in points] == pytest.approx([5 / 60, 15 / 60])
    assert all(p.parent.name == "snapshots" for p, _ in points)
    assert [h for _, h in script.snapshots(run, every=2, until=1.0)] == pytest.approx(
        [5 / 60, 15 / 60, 20 / 60, 23 / 60]
    )
    with pytest.raises(ValueError, match="no snapshots saved by 0.05 hours"):
        script.snapshots(run, every=1, until=0.05)


@pytest.mark.slow
def test_curves_of_two_runs_on_one_ladder(tmp_path):
    script = load_script("learning_curve")
    runs = [fake_run(tmp_path / "a", [5, 10]), fake_run(tmp_path / "b", [5])]
    out, figure = tmp_path / "out", tmp_path / "curve.png"
    argv = [
        *map(str, runs),
        "--ladder",
        "random",
        "greedy",
        "--anchor",
        "greedy",
        "--sims",
        "2",
        "--pairs",
        "1",
        "--out",
        str(out),
        "--plot",
        str(figure),
        "--labels",
        "new",
        "old",
    ]
    assert script.main(argv) == 0
    result = json.loads((out / "learning_curve.json").read_text())
    assert [r["hours"] for r in result["curves"]["new"]] == pytest.approx([5 / 60, 10 / 60])
    assert len(result["curves"]["old"]) == 1
    ladder = {r["player"]: r for r in result["ladder"]}
    assert ladder["greedy"]["elo"] == 0.0
    for row in result["curves"]["new"] + result["curves"]["old"]:
        assert row["ci_low"] <= row["elo"] <= row["ci_high"] and row["games"] == 4  # 2 ladder members x 1 pair
    games = load_jsonl(out / "games.jsonl")
    assert len(games) == 2 + 3 * 4  # the ladder pair, then each snapshot against each member
    assert figure.is_file() and figure.stat().st_size > 10_000
    # Rerun: everything is in games.jsonl already, no game is played again.
    assert script.main(argv) == 0
    assert len(load_jsonl(out / "games.jsonl")) == len(games)


def test_a_run_without_snapshots_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert load_script("learning_curve").main([str(tmp_path / "empty")]) == 2
    assert "empty has no snapshots: was it trained with" in capsys.readouterr().err
    assert load_script("learning_curve").main([str(tmp_path / "missing")]) == 2
    assert f"run folder '{tmp_path / 'missing'}' does not exist" in capsys.readouterr().err
    run = fake_run(tmp_path / "a", [5])
    assert load_script("learning_curve").main([str(run), "--labels", "x", "y"]) == 2
    assert "--labels names 2 curves for 1 runs" in capsys.readouterr().err
    for flag in ("--pairs", "--every", "--cores"):  # --pairs 0 ended in a traceback, --every 0 in numpy's words
        assert load_script("learning_curve").main([str(run), flag, "0"]) == 2
        assert f"{flag} must be at least 1, got 0" in capsys.readouterr().err


def test_ladder_members_at_one_elo_share_a_labelled_line():
    script = load_script("learning_curve")
    ladder = [
        {"player": "greedy", "elo": -1227.0},
        {"player": "alphabeta:2", "elo": 0.0},
        {"player": "random", "elo": -1227.0},
        {"player": "alphabeta:4", "elo": 296.0},
    ]
    assert script.ladder_lines(ladder) == [(-1227.0, "greedy, random"), (0.0, "alphabeta:2"), (296.0, "alphabeta:4")]


def test_replot_draws_saved_results_without_playing(tmp_path, capsys):
    script = load_script("learning_curve")
    row = {"elo": 100.0, "ci_low": 50.0, "ci_high": 150.0, "hours": 0.5}
    saved = {
        "variant": "II",
        "ladder": [{"player": "greedy", "elo": 0.0}],
        "curves": {"run": [row, {**row, "hours": 1.0}]},
    }
    results, figure = tmp_path / "learning_curve.json", tmp_path / "curve.png"
    results.write_text(json.dumps(saved))
    assert script.main([str(results), "--replot", "--plot", str(figure)]) == 0
    assert figure.is_file() and figure.stat().st_size > 10_000
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**saved, "variant": "I"}))
    assert script.main([str(results), str(other), "--replot", "--plot", str(figure)]) == 2
    assert "different variants" in capsys.readouterr().err
    assert script.main([str(tmp_path / "missing.json"), "--replot"]) == 2
    assert "needs learning_curve.json files" in capsys.readouterr().err


def test_by_default_a_rating_and_a_replot_leave_the_committed_results_alone(tmp_path, monkeypatch):
    script = load_script("learning_curve")
    run = fake_run(tmp_path / "a", [5])
    monkeypatch.chdir(tmp_path)
    folders = []

    def stop(config, out_dir, **kwargs):
        folders.append(out_dir)
        raise KeyboardInterrupt

    monkeypatch.setattr(script, "run", stop)
    with pytest.raises(KeyboardInterrupt):
        script.main([str(run), "--variant", "I", "--ladder", "random", "greedy", "--anchor", "greedy"])
    assert folders == [pathlib.Path("runs/learning_curve_I")]
    row = {"elo": 1.0, "ci_low": 0.0, "ci_high": 2.0, "hours": 0.5}
    saved = tmp_path / "saved" / "learning_curve.json"
    saved.parent.mkdir()
    saved.write_text(json.dumps({"variant": "I", "ladder": [{"player": "greedy", "elo": 0.0}], "curves": {"r": [row]}}))
    assert script.main([str(saved), "--replot"]) == 0
    assert (saved.parent / "learning_curve.png").is_file() and not (tmp_path / "docs").exists()


def fake_minimax_run(directory: pathlib.Path, from_file: bool) -> pathlib.Path:
    """A minimax run's loop.json: generation 1 not promoted, generation 2 promoted."""
    history = [
        {"generation": 1, "seconds": 1800.0, "current": "generations/gen_0000/net.npz" if from_file else None},
        {"generation": 2, "seconds": 900.0, "current": "generations/gen_0002/net.npz"},
    ]
    (directory / "generations" / "gen_0000").mkdir(parents=True)
    if from_file:
        (directory / "generations" / "gen_0000" / "net.npz").write_bytes(b"")
    (directory / "loop.json").write_text(json.dumps({"generation": 2, "history": history}))
    return directory


@pytest.mark.parametrize("from_file", [False, True], ids=["hand_written", "network"])
def test_a_minimax_run_is_its_current_evaluation_after_each_generation(tmp_path, from_file):
    script = load_script("learning_curve")
    run = fake_minimax_run(tmp_path / "mm", from_file)
    start = f"classical:time=0.1:eval={run}/generations/gen_0000/net.npz" if from_file else "classical:time=0.1"
    assert script.minimax_points(run, 0.1) == [
        (start, 0.0),
        (start, 0.5),  # not promoted: the starting evaluation again
        (f"classical:time=0.1:eval={run}/generations/gen_0002/net.npz", 0.75),
    ]
    assert script.minimax_points(run, 0.1, until=0.6) == [(start, 0.0), (start, 0.5)]  # generation 2 ended later


def test_a_minimax_run_needs_equal_time(tmp_path, capsys):
    script = load_script("learning_curve")
    run = fake_minimax_run(tmp_path / "mm", False)
    assert script.main([str(run), "--out", str(tmp_path / "out")]) == 2
    assert "is a minimax run: its engines are rated at equal time, give --time" in capsys.readouterr().err
    assert script.main([str(run), "--time", "0", "--out", str(tmp_path / "out")]) == 2
    assert script.main([str(tmp_path), "--out", str(tmp_path / "out")]) == 2  # neither kind of run
    assert script.main([str(run), "--time", "0.1", "--max-hours", "0", "--out", str(tmp_path / "out")]) == 2
    assert "--max-hours must be a positive number of hours, got 0.0" in capsys.readouterr().err


@pytest.mark.slow
def test_alphazero_and_minimax_runs_on_one_ladder_by_cpu_hours(tmp_path):
    from hydra import compose, initialize_config_dir

    from stapel_rl.train import minimax
    from stapel_rl.train.app import CONFIG_DIR

    script = load_script("learning_curve")
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["loop=minimax", "minimax=tiny", "minimax.panel_pairs=0"])
    minimax.run(cfg, tmp_path / "mm")
    az = fake_run(tmp_path / "az", [30])
    out = tmp_path / "out"
    argv = [str(az), str(tmp_path / "mm"), "--time", "0.01", "--cores", "2", "--pairs", "1", "--max-hours", "50"]
    assert script.main([*argv, "--ladder", "random", "greedy", "--anchor", "greedy", "--out", str(out)]) == 0
    saved = json.loads((out / "learning_curve.json").read_text())
    assert saved["cores"] == 2 and saved["time"] == 0.01 and saved["max_hours"] == 50
    assert [r["hours"] for r in saved["curves"]["az"]] == pytest.approx([1.0])  # 30 minutes on 2 cores
    assert saved["curves"]["az"][0]["spec"].endswith(":time=0.01")
    mm = saved["curves"]["mm"]
    assert len(mm) == 3 and mm[0]["hours"] == 0 and mm[0]["spec"] == "classical:time=0.01"
    assert mm[1]["hours"] < mm[2]["hours"] and all(r["games"] == 4 for r in mm)
    assert (out / "learning_curve.png").stat().st_size > 0
