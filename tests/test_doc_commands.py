"""Every command line of the docs' bash blocks parses, without running: a page cannot drift from the code.

The commands that made a page's figures stay runnable as written (how each kind
is parsed: tests/commands.py); a page's other tools (pip, ray, shell steps) are
left alone. Nothing trains or plays.
"""

from __future__ import annotations

import shlex

import pytest
from commands import REPO, bash_commands, check_command, project_commands, sweep

PAGES = sorted((REPO / "docs").glob("*.md"))
COMMANDS = [(page.name, words) for page in PAGES for words in project_commands(page)]


def test_the_docs_show_the_commands_that_made_their_figures():
    per_page = {name: sum(1 for page, _ in COMMANDS if page == name) for name in {p.name for p in PAGES}}
    # The pages of results and how they were made (a rewrite that drops their blocks would make this vacuous).
    assert per_page["results.md"] >= 30 and per_page["ablations.md"] >= 10 and per_page["training.md"] >= 10
    assert len(COMMANDS) >= 120


@pytest.mark.parametrize(("page", "words"), COMMANDS, ids=[f"{page}:{shlex.join(w)}" for page, w in COMMANDS])
def test_doc_command_parses(page, words, monkeypatch, capsys):
    check_command(words, monkeypatch, capsys)


def test_bash_blocks_join_continued_lines_and_drop_environment_and_comments():
    text = "```bash\nA=1 B=x stapel-match greedy \\\n    random --games 2   # a comment\ncd x && stapel-perft\n```\n"
    assert bash_commands(text) == [["stapel-match", "greedy", "random", "--games", "2"], ["cd", "x"], ["stapel-perft"]]


def test_a_sweep_is_each_combination_of_its_values():
    assert sweep(["mcts=puct,gumbel", "train.hours=0.5", "a=[1,2]"]) == [
        ["mcts=puct", "train.hours=0.5", "a=[1,2]"],
        ["mcts=gumbel", "train.hours=0.5", "a=[1,2]"],
    ]


@pytest.mark.parametrize(
    "words",
    [["stapel-match", "greedy", "random", "--no-such-option"], ["stapel-train", "train.no_such_key=1"]],
    ids=shlex.join,
)
def test_a_command_that_drifted_fails(words, monkeypatch, capsys):
    with pytest.raises(BaseException) as failure:  # pytest.fail's Failed, or Hydra's error for an unknown key
        check_command(words, monkeypatch, capsys)
    assert "no-such-option" in str(failure.value) or "no_such_key" in str(failure.value)
