"""Ctrl-C in stapel-match, stapel-sprt and stapel-tournament: they stop at once, say what was played so
far and how to go on, exit with status 130 and leave no worker."""

import pathlib
import re
import sys

import pytest
from ctrl_c import assert_all_end, ctrl_c

from stapel_rl.records import load_jsonl

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not pathlib.Path("/proc/self/stat").exists(), reason="reads the process table from /proc"),
]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_match_prints_the_pairs_played_and_ends_its_workers(tmp_path, jobs):
    record = tmp_path / "match.jsonl"
    command = [sys.executable, "-m", "stapel_rl.cli.match", "alphabeta:1", "greedy", "--games", "2000"]
    command += ["--time", "0.01", "--jobs", jobs, "--record", str(record)]
    stopped = ctrl_c(command, tmp_path, lambda out, err: len(load_jsonl(record)) >= 2)
    assert stopped.returncode == 130, stopped.err[-2000:]
    recorded = len(load_jsonl(record))
    line = r"alphabeta:1 vs greedy: stopped by Ctrl-C after (\d+) of 1000 pairs: \d+-\d+-\d+ \(W-D-L\) of (\d+)"
    stop = re.search(line, stopped.out)
    assert stop, stopped.out[-2000:]
    # A Ctrl-C between a pair's end and its line in the record leaves the two one pair apart.
    assert recorded >= 2 and abs(int(stop[1]) - recorded) <= 1 and int(stop[2]) == 2 * int(stop[1])
    assert f"the same command resumes it from {record}" in stopped.out and "Traceback" not in stopped.err
    assert len(stopped.children) >= (2 if jobs == "2" else 0)  # the jobs (and multiprocessing's resource tracker)
    assert_all_end(stopped.children)


def test_an_sprt_prints_its_state(tmp_path):
    # Two equal engines: the test would go on for its 2,000 pairs.
    command = [sys.executable, "-m", "stapel_rl.cli.sprt", "alphabeta:1", "alphabeta:1", "--time", "0.01"]
    command += ["--jobs", "2", "--batch-pairs", "4"]
    stopped = ctrl_c(command, tmp_path, lambda out, err: "pairs " in out)
    assert stopped.returncode == 130, stopped.err[-2000:]
    assert re.search(r"stopped by Ctrl-C: undecided after \d+ pairs, score [\d.]+%, LLR [-+]\d", stopped.out)
    assert len(stopped.children) >= 2 and "Traceback" not in stopped.err
    assert_all_end(stopped.children)


def test_a_tournament_says_what_the_same_command_resumes(tmp_path):
    out = tmp_path / "t"
    command = [sys.executable, "-m", "stapel_rl.cli.tournament", "alphabeta:1", "greedy", "--pairs", "500"]
    command += ["--time", "0.01", "--anchor", "greedy", "--out", str(out)]
    # Playing for a second (a pairing's games move in step, so none may have ended yet).
    stopped = ctrl_c(command, tmp_path, lambda _, err: "games:" in err, settle=1.0)
    assert stopped.returncode == 130, stopped.err[-2000:]
    games = len(load_jsonl(out / "games.jsonl"))
    assert f"stopped by Ctrl-C with {games} games in {out}: the same command resumes" in stopped.out
    assert "Traceback" not in stopped.err
