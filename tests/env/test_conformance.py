"""The engine against the published conformance cases and the perft table of RULES.md."""

import json
import pathlib

import pytest

from stapel_rl.env import expand_full_moves, from_fens, game_result, initial_fen, perft, to_fens

CASES = [json.loads(line) for line in (pathlib.Path(__file__).parents[1] / "data" / "rules_cases.jsonl").open()]


def test_all_cases_are_loaded():
    assert len(CASES) == 395


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c['variant']}-{c['tag']}" for i, c in enumerate(CASES)])
def test_rules_case(case):
    moves = expand_full_moves(from_fens([case["fen"]], case["variant"]))
    assert dict(zip(moves.texts(), to_fens(moves.state), strict=True)) == case["moves"]
    assert game_result(case["fen"], case["variant"]) == case["result"]


PERFT = {
    "I": [9, 81, 658, 4265, 27117],
    "II": [9, 81, 810, 8100, 87120],
}


@pytest.mark.parametrize("variant", ["I", "II"])
def test_perft_table(variant):
    fen = initial_fen(variant)
    assert [perft(fen, d, variant) for d in range(1, 6)] == PERFT[variant]


def test_perft_command(capsys):
    from stapel_rl.cli.perft import main

    assert main(["--variant", "II", "--depth", "4"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in out[2:]]
    assert [(int(r[0]), int(r[1].replace(",", ""))) for r in rows] == [(1, 9), (2, 81), (3, 810), (4, 8100)]


def test_perft_command_rejects_bad_fen(capsys):
    from stapel_rl.cli.perft import main

    assert main(["--fen", "W:w,b", "--depth", "1"]) == 2
    assert "expected 50 comma-separated squares" in capsys.readouterr().err
    assert main(["--depth", "0"]) == 2
    captured = capsys.readouterr()
    assert "--depth must be at least 1, got 0" in captured.err and not captured.out
