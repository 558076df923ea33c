"""scripts/elo_vs_time.py: who meets whom, bad input, and a small resumable run end to end."""

import json
import pathlib

import pytest

from scripts import load_script
from stapel_rl.records import load_jsonl


def test_players_meet_within_reach_cheapest_first():
    script = load_script("elo_vs_time")
    # Two families (players 0-2 and 3-5) at three times: neighbours in time meet, a player never meets itself.
    assert script.schedule(2, 3, reach=1) == [
        (0, 3),
        (0, 1),
        (0, 4),
        (1, 3),
        (1, 4),
        (3, 4),
        (1, 2),
        (1, 5),
        (2, 4),
        (2, 5),
        (4, 5),
    ]
    # Three families at five times: 3 pairs of families at each of 5 times, 9 at each of 4 neighbouring steps.
    assert len(script.schedule(3, 5, reach=1)) == 3 * 5 + 9 * 4
    assert len(script.schedule(1, 4, reach=3)) == 6  # one family, everyone meets everyone


def test_bad_input_is_refused(capsys):
    script = load_script("elo_vs_time")
    assert script.main(["--families", "greedy", "--times", "0.1"]) == 2
    assert "does not take a thinking time" in capsys.readouterr().err
    assert script.main(["--families", "classical", "--times", "0.2", "0.1"]) == 2
    assert "increasing" in capsys.readouterr().err
    assert script.main(["--families", "classical", "--reach", "0"]) == 2
    assert "--reach must be at least 1, got 0" in capsys.readouterr().err
    assert script.main(["--families", "classical", "--pairs", "0"]) == 2
    assert "--pairs must be at least 1, got 0" in capsys.readouterr().err


def test_a_small_run_rates_every_player_and_resumes(tmp_path):
    script = load_script("elo_vs_time")
    out, figure = tmp_path / "out", tmp_path / "elo.png"
    argv = ["--families", "classical:nodes=300", "classical:nodes=30", "--times", "0.01", "0.02"]
    argv += ["--pairs", "1", "--out", str(out), "--plot", str(figure)]
    assert script.main(argv) == 0
    games = load_jsonl(out / "games.jsonl")
    assert len(games) == 2 * len(script.schedule(2, 2, 1))
    result = json.loads((out / "elo_vs_time.json").read_text())
    assert [len(rows) for rows in result["points"].values()] == [2, 2]
    assert result["anchor"] == "classical:nodes=300:time=0.01" and figure.stat().st_size > 0
    for rows in result["points"].values():
        assert all(0 < r["time_used"] <= 2 * r["time"] for r in rows)  # measured, never far past the budget
    assert script.main(argv) == 0  # a rerun plays nothing new
    assert len(load_jsonl(out / "games.jsonl")) == len(games)


def test_by_default_a_run_leaves_the_committed_results_alone(tmp_path, monkeypatch):
    script = load_script("elo_vs_time")
    monkeypatch.chdir(tmp_path)
    folders = []

    def stop(config, out_dir, **kwargs):
        folders.append(out_dir)
        raise KeyboardInterrupt

    monkeypatch.setattr(script, "run", stop)
    with pytest.raises(KeyboardInterrupt):
        script.main(["--variant", "II", "--families", "classical", "--times", "0.1"])
    assert folders == [pathlib.Path("runs/elo_vs_time_II")]
