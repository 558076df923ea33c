"""stapel-match --record: each finished pair on disk, a killed match resumed where it stopped."""

import json
import subprocess
import sys
import time

import numpy as np

from stapel_rl.cli import match
from stapel_rl.eval.arena import MatchResult
from stapel_rl.records import load_jsonl

# One pair a task (``--time``); neither agent searches by time, so the games depend on the seed only.
COMMAND = ["alphabeta:1", "greedy", "--games", "6", "--time", "0.05", "--variant", "I"]


def _summary(out: str) -> str:
    """The result line without the clock (time per move and seconds differ from run to run)."""
    line = [x for x in out.splitlines() if x.startswith("alphabeta:1 vs greedy (Variant I)")][-1]
    return line.split("; time per move")[0]


def test_a_killed_match_resumes_from_its_record(tmp_path, capsys):
    whole = tmp_path / "whole.jsonl"
    assert match.main([*COMMAND, "--record", str(whole)]) == 0
    uninterrupted = _summary(capsys.readouterr().out)
    lines = whole.read_text().splitlines()
    assert len(lines) == 3 and [json.loads(x)["pairs"] for x in lines] == [[0], [1], [2]]
    assert json.loads(lines[0])["code_version"]

    # Killed after one pair, in the middle of writing the second: the torn line is dropped, pairs 1 and 2 replayed.
    killed = tmp_path / "killed.jsonl"
    killed.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])
    assert match.main([*COMMAND, "--record", str(killed)]) == 0
    out = capsys.readouterr().out
    assert "1 of 3 pairs from" in out
    assert _summary(out) == uninterrupted
    resumed = [json.loads(x) for x in killed.read_text().splitlines()]
    assert sorted(r["pairs"][0] for r in resumed) == [0, 1, 2]
    assert [r["result"]["scores"] for r in sorted(resumed, key=lambda r: r["pairs"])] == [
        json.loads(x)["result"]["scores"] for x in lines
    ]

    # Nothing left to play: the record is read, not extended.
    assert match.main([*COMMAND, "--record", str(killed)]) == 0
    out = capsys.readouterr().out
    assert "3 of 3 pairs from" in out and _summary(out) == uninterrupted
    assert len(killed.read_text().splitlines()) == 3


def test_a_record_of_another_match_is_not_this_ones():
    fens = ["f0", "f1"]
    result = MatchResult(np.array([1.0, 0.5]), np.array([0, 1]), np.array([40, 52])).to_dict()
    base = {"agent": "a", "opponent": "b", "variant": "I", "seed": 0, "pairs": [1], "fens": ["f1"], "result": result}
    records = [
        base,
        {**base, "opponent": "c"},
        {**base, "seed": 1},
        {**base, "fens": ["another opening"]},
        {**base, "pairs": [5], "fens": ["f5"]},
        base,  # the same pair twice counts once
    ]
    played = match.resumed(records, "a", "b", "I", fens, seed=0)
    assert len(played) == 1 and played[0][0].tolist() == [1]
    assert played[0][1].scores.tolist() == [1.0, 0.5] and played[0][1].plies.tolist() == [40, 52]


def test_a_damaged_record_is_a_clear_error_and_is_left_alone(tmp_path, capsys):
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text('{"agent": "alphabeta:1"}\nnot json\n{"agent": "x"}\n')
    assert match.main([*COMMAND, "--record", str(damaged)]) == 2
    assert "line 2 is not JSON" in capsys.readouterr().err
    assert damaged.read_text() == '{"agent": "alphabeta:1"}\nnot json\n{"agent": "x"}\n'

    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text('{"agent": "alphabeta:1", "opponent": "greedy", "variant": "I", "seed": 0}\n')
    assert match.main([*COMMAND, "--record", str(wrong)]) == 2
    assert "record 1 is not a stapel-match pair record" in capsys.readouterr().err


# Batched: neither agent has a clock and there is no --time, so each job plays its pairs in one batch.
BATCHED = ["alphabeta:1", "greedy", "--games", "8", "--variant", "I"]


def test_a_batched_match_records_each_pair_as_it_finishes_and_resumes(tmp_path, monkeypatch, capsys):
    path = tmp_path / "batched.jsonl"
    record_pairs = match.record_pairs
    recorded: "list[int]" = []

    def interrupted(*args):
        record_pairs(*args)
        recorded.append(int(args[-2][0]))
        if len(recorded) == 2:
            raise KeyboardInterrupt  # Ctrl-C with two of the batch's four pairs played

    monkeypatch.setattr(match, "record_pairs", interrupted)
    assert match.main([*BATCHED, "--record", str(path)]) == 130
    assert "stopped by Ctrl-C after 2 of 4 pairs: " in capsys.readouterr().out
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [r["pairs"] for r in lines] == [[i] for i in recorded]  # one line a pair, as it finished
    assert all(len(r["result"]["scores"]) == 2 for r in lines)

    monkeypatch.setattr(match, "record_pairs", record_pairs)
    assert match.main([*BATCHED, "--record", str(path)]) == 0
    assert "alphabeta:1 vs greedy: 2 of 4 pairs from" in capsys.readouterr().out
    resumed = [json.loads(x) for x in path.read_text().splitlines()]
    assert resumed[:2] == lines and sorted(r["pairs"][0] for r in resumed) == [0, 1, 2, 3]


def test_a_killed_batched_match_with_jobs_keeps_the_pairs_its_jobs_finished(tmp_path):
    """``--jobs 2`` without a clock: each job plays its half of the pairs in one batch, and every pair
    reaches the record as it ends, not when its job's batch does; the same command resumes."""
    path = tmp_path / "jobs.jsonl"
    # Depth 3, so that a job's batch of 10 pairs lasts seconds: its pairs end one by one, well apart.
    command = [sys.executable, "-m", "stapel_rl.cli.match", "alphabeta:3", "greedy", "--games", "40", "--jobs", "2",
               "--variant", "I", "--record", str(path)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not load_jsonl(path) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
    finally:
        process.kill()
        process.wait()
    kept = load_jsonl(path)
    assert kept, "no pair was recorded before the kill"
    assert all(len(r["pairs"]) == 1 for r in kept) and len(kept) < 20  # single pairs, the batches unfinished
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{len(kept)} of 20 pairs from" in done.stdout
    pairs = [i for r in load_jsonl(path) for i in r["pairs"]]
    assert sorted(pairs) == list(range(20))
