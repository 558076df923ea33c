"""A tournament folder is resumed only by the same tournament; the committed ones say how they were played."""

import json
import pathlib
import shutil

import pytest

from stapel_rl.cli import tournament as cli
from stapel_rl.env import VARIANT_I
from stapel_rl.eval.openings import suite
from stapel_rl.eval.tournament import TournamentConfig, foreign_games

REPO = pathlib.Path(__file__).resolve().parents[2]
BASELINES = ["random", "greedy", "alphabeta:2", "alphabeta:4"]


@pytest.fixture
def committed_I(tmp_path):
    out = tmp_path / "I"
    shutil.copytree(REPO / "tournaments" / "I", out)
    return out


def test_committed_tournaments_name_their_random_openings():
    for variant in ("I", "II"):
        saved = json.loads((REPO / "tournaments" / variant / "tournament.json").read_text())
        assert (saved["variant"], saved["openings"], saved["opening_plies"], saved["seed"]) == (variant, "random", 4, 0)


def test_a_suite_tournament_does_not_resume_a_random_one(committed_I, capsys):
    argv = [*BASELINES, "mcts:variant_I:sims=64", "--variant", "I", "--pairs", "10", "--out", str(committed_I)]
    before = (committed_I / "tournament.json").read_text()
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == (
        f"error: {committed_I} holds another tournament (--openings random, not suite): "
        "rerun with its options to resume it, or use another --out\n"
    )
    assert (committed_I / "tournament.json").read_text() == before


def test_a_tournament_file_without_openings_was_played_from_random_ones(tmp_path):
    # As stapel-tournament wrote it before the opening suite existed.
    (tmp_path / "tournament.json").write_text(
        json.dumps({"players": ["random", "greedy"], "variant": "I", "pairs": 2, "opening_plies": 4, "seed": 0})
    )
    suite_config = TournamentConfig(["random", "greedy"], VARIANT_I, pairs=2)
    with pytest.raises(ValueError, match=r"\(--openings random, not suite\)"):
        cli._check_resume(tmp_path, suite_config)
    cli._check_resume(tmp_path, TournamentConfig(["random", "greedy"], VARIANT_I, pairs=2, openings="random"))
    assert json.loads((tmp_path / "tournament.json").read_text())["openings"] == "random"


def test_the_suite_ignores_opening_plies_on_resume(tmp_path):
    cli._check_resume(tmp_path, TournamentConfig(["random", "greedy"], VARIANT_I, pairs=2, opening_plies=4))
    cli._check_resume(tmp_path, TournamentConfig(["random", "greedy"], VARIANT_I, pairs=2, opening_plies=6))
    random = tmp_path / "random"
    cli._check_resume(random, TournamentConfig(["random", "greedy"], VARIANT_I, opening_plies=4, openings="random"))
    with pytest.raises(ValueError, match=r"\(--opening-plies 4, not 6, --seed 0, not 1\)"):
        config = TournamentConfig(["random", "greedy"], VARIANT_I, opening_plies=6, seed=1, openings="random")
        cli._check_resume(random, config)


def test_games_from_other_random_openings_are_not_resumed(committed_I, capsys):
    # The stored config, but the random openings of Variant I changed after it was played (a capture under way
    # at the end of the random plies is now finished): 54 of its games start elsewhere.
    argv = [*BASELINES, "mcts:checkpoints/variant_I.pt:sims=64", "--variant", "I", "--openings", "random"]
    assert cli.main([*argv, "--out", str(committed_I)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {committed_I} holds 54 games of this tournament's pairings (greedy vs random, ...)")


def test_foreign_games_are_those_of_a_pairing_off_its_openings():
    config = TournamentConfig(["random", "greedy", "alphabeta:2"], VARIANT_I, pairs=2)
    first, third = suite(VARIANT_I)[0], suite(VARIANT_I)[2]
    games = [
        {"white": "random", "black": "greedy", "opening": first},
        {"white": "greedy", "black": "random", "opening": third},  # the suite's third: not among 2 pairs
        {"white": "greedy", "black": "policy:x.pt", "opening": third},  # no pairing of this tournament
    ]
    assert foreign_games(config, games) == [games[1]]


def test_a_tournament_of_no_pairs_is_refused(tmp_path, capsys):
    assert cli.main(["greedy", "random", "--pairs", "0", "--out", str(tmp_path / "t")]) == 2
    assert "--pairs must be at least 1, got 0" in capsys.readouterr().err and not (tmp_path / "t").exists()
    with pytest.raises(ValueError, match="at least 1 pair, got pairs=-1"):
        TournamentConfig(["greedy", "random"], VARIANT_I, pairs=-1)


def test_a_file_as_the_tournaments_folder_is_refused_before_any_game(tmp_path, capsys):
    (tmp_path / "taken").write_text("not a folder")
    assert cli.main(["greedy", "random", "--pairs", "1", "--out", str(tmp_path / "taken")]) == 2
    assert "is a file: name a folder for the results" in capsys.readouterr().err
    assert (tmp_path / "taken").read_text() == "not a folder"
