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
        assert row["games"] == 2 and row["wins"] + row["draws"] + row["losses"] == 2
        assert row["ci"][0] <= row["score"] <= row["ci"][1] and row["positions"] > 0 and row["iterations"] == 1
        assert row["command"].startswith("stapel-match mcts:")
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
