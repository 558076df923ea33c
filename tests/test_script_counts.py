"""The documented scripts refuse counts that would play, score or train nothing, by name, before any work."""

import pytest

from scripts import load_script


@pytest.mark.parametrize(
    "script, argv, message",
    [
        ("train_eval", ["--games", "0", "--out", "x.npz"], "--games must be at least 1, got 0"),
        ("train_eval", ["--epochs", "0", "--out", "x.npz"], "--epochs must be at least 1, got 0"),
        ("fit_classical", ["--rounds", "0", "--out", "x.json"], "--rounds must be at least 1, got 0"),
        ("make_openings", ["--count", "0"], "--count must be at least 1, got 0"),
        ("make_openings", ["--min-plies", "9"], "--min-plies and --max-plies must be 0 <= min <= max, got 9 and 8"),
    ],
)
def test_a_count_that_does_nothing_is_refused(script, argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        load_script(script).main(argv)
    assert stop.value.code == 2 and message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written
