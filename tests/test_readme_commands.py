"""Every command line of the README's bash blocks parses, without running: the front page cannot drift.

How each kind of command is parsed: tests/commands.py. A README tournament also
meets the resume check of its ``--out``, with the repository's committed
tournament folders in place. Nothing trains or plays.
"""

from __future__ import annotations

import pathlib
import shlex
import shutil

import pytest
from commands import REPO, check_command, project_commands

from stapel_rl.cli import tournament

COMMANDS = project_commands(REPO / "README.md")


def test_the_readme_has_the_commands_of_its_tour():
    names = [words[0] if words[0] != "python" else words[1] for words in COMMANDS]
    # Each tool of the tour is still there (a rewrite that drops a block would make this test vacuous).
    for expected in ("stapel-train", "stapel-match", "stapel-tournament", "stapel-play", "stapel-serve"):
        assert expected in names
    assert "stapel-engine" in names and "stapel-perft" in names and "scripts/elo_vs_time.py" in names
    assert len(COMMANDS) >= 15


@pytest.mark.parametrize("words", COMMANDS, ids=shlex.join)
def test_readme_command_parses(words, monkeypatch, capsys):
    check_command(words, monkeypatch, capsys)


def test_readme_tournament_resumes_the_committed_folder_or_starts_one(tmp_path, monkeypatch, capsys):
    """As far as its first game, beside a copy of the committed ``--out`` folder if there is one."""
    (words,) = [w for w in COMMANDS if w[0] == "stapel-tournament"]
    argv = words[1:]
    out = pathlib.Path(argv[argv.index("--out") + 1]) if "--out" in argv else pathlib.Path("tournaments/latest")
    if (REPO / out).is_dir():
        shutil.copytree(REPO / out, tmp_path / out)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STAPEL_RL_KEEP_MALLOC", "1")

    class FirstGame(Exception):
        pass

    def first_game(*args: object, **kwargs: object) -> None:
        raise FirstGame

    monkeypatch.setattr(tournament, "run", first_game)
    try:
        code = tournament.main(argv)
    except FirstGame:
        return
    pytest.fail(f"the README's tournament stops before its first game: exit {code}: {capsys.readouterr().err}")
