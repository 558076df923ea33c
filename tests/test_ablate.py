"""scripts/ablate.py: one training run per row, each scored with stapel-match, resumable, a table."""

import json

import pytest

from scripts import load_script


@pytest.mark.slow
def test_two_rows_train_score_and_resume(tmp_path, capsys):
    script = load_script("ablate")
    argv = [
        "--rows",
        "new_default",
        "value_mix_05",
        "--minutes",
        "0.01",
        "--games",
        "2",
        "--sims",
        "2",
        "--opponent",
        "random",
        "--out",
        str(tmp_path),
        "--extra",
        "model=tiny",
        "train=tiny",
        "mcts.num_simulations=4",
        "train.threads=1",
        "train.iterations=1",
        "train.eval_every_minutes=0",
    ]
    assert script.main(argv) == 0
    results = json.loads((tmp_path / "ablations.json").read_text())
    assert list(results) == ["new_default", "value_mix_05"]
    for row in results.values():
        assert list(row["matches"]) == ["random"] and row["positions"] > 0 and row["iterations"] == 1
        match = row["matches"]["random"]
        assert match["games"] == 2 and match["wins"] + match["draws"] + match["losses"] == 2
        assert match["ci"][0] <= match["score"] <= match["ci"][1] and sum(match["pairs"]) == 1
        assert match["command"].startswith("stapel-match mcts:")
        assert match["command"].endswith(":sims=2 random --games 2 --variant I")
    table = (tmp_path / "ablations.md").read_text()
    assert (
        "| value_mix_05 | value target: half game result, half the search's value (Gumbel: its improved "
        "policy's expected Q) |" in table
    )
    # The value_mix row really trained with its override.
    config = (tmp_path / "value_mix_05" / ".hydra" / "config.yaml").read_text()
    assert "value_mix: 0.5" in config
    capsys.readouterr()
    assert script.main(argv) == 0  # resumed: both rows are done, nothing is trained again
    assert capsys.readouterr().out.count("done before") == 2

    # Head to head at equal time: the trained rows play again, one against the other's network.
    opponent = argv.index("--opponent")
    timed = [*argv[:opponent], "--opponent", "row:new_default", "--time", "0.02", *argv[opponent + 2 :]]
    assert script.main(timed) == 0
    out = capsys.readouterr().out
    assert "hydra.run.dir" not in out  # no row trained again
    results = json.loads((tmp_path / "ablations.json").read_text())
    assert list(results["new_default"]["matches"]) == ["random"]  # the opponent row keeps its match
    match = results["value_mix_05"]["matches"]["row:new_default at 0.02 s"]
    assert match["games"] == 2 and "random" in results["value_mix_05"]["matches"]
    new_default = results["new_default"]["checkpoint"]
    assert match["command"].endswith(f"mcts:{new_default} --games 2 --variant I --time 0.02")
    table = (tmp_path / "ablations.md").read_text()
    assert "at 0.02 s a move, both sides against `row:new_default at 0.02 s`" in table
    assert "| new_default |" in table and " opponent | | |" in table and "| value_mix_05 |" in table


def test_records_of_one_match_are_read_as_a_row_with_matches():
    script = load_script("ablate")
    old = {"positions": 5, "iterations": 1, "seconds": 9.0, "checkpoint": "c.pt", "games": 2, "score": 50.0}
    assert script.upgrade(old) == {
        "positions": 5,
        "iterations": 1,
        "seconds": 9.0,
        "checkpoint": "c.pt",
        "matches": {"alphabeta:2": {"games": 2, "score": 50.0}},
    }
    assert script.upgrade(script.upgrade(old)) == script.upgrade(old)


def test_an_unknown_opponent_row_is_refused(tmp_path, capsys):
    assert load_script("ablate").main(["--opponent", "row:nope", "--out", str(tmp_path)]) == 2
    assert "unknown row 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("--minutes", "0", "--minutes must be a positive number, got 0.0"),  # 0: a training run without a limit
        ("--games", "0", "--games must be at least 1, got 0"),
        ("--jobs", "0", "--jobs must be at least 1, got 0"),
    ],
)
def test_a_budget_the_rows_cannot_use_is_refused(tmp_path, capsys, flag, value, message):
    assert load_script("ablate").main([flag, value, "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_a_file_as_the_results_folder_is_refused(tmp_path, capsys):
    (tmp_path / "taken").write_text("")
    for script, argv in [
        ("ablate", []),
        ("learning_curve", [str(tmp_path)]),
        ("elo_vs_time", ["--families", "classical"]),
    ]:
        assert load_script(script).main([*argv, "--out", str(tmp_path / "taken")]) == 2
        assert f"--out '{tmp_path / 'taken'}' is a file: name a folder for the results" in capsys.readouterr().err
