"""Ctrl-C in stapel-match and stapel-sprt: they stop at once, with what was played so far, and leave no worker."""

import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import pytest

from stapel_rl.records import load_jsonl


def children(pid: int) -> "list[int]":
    """The processes whose parent is ``pid`` (read from /proc)."""
    found = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended while being read
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"  # ended, not reaped


def assert_all_end(pids: "list[int]") -> None:
    """Every process of ``pids`` ends within seconds."""
    deadline = time.monotonic() + 10
    while not all(map(gone, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(map(gone, pids))


@pytest.mark.slow
@pytest.mark.skipif(not pathlib.Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_prints_the_pairs_played_exits_130_and_ends_the_workers(tmp_path, jobs):
    record = tmp_path / "match.jsonl"
    command = [sys.executable, "-m", "stapel_rl.cli.match", "alphabeta:1", "greedy", "--games", "2000"]
    command += ["--time", "0.01", "--jobs", jobs, "--record", str(record)]
    # A session of its own: Ctrl-C in a terminal reaches the whole process group, workers included.
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 90
        while len(load_jsonl(record)) < 2 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = children(process.pid)
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 130, err[-2000:]
    recorded = len(load_jsonl(record))
    stop = re.search(
        r"alphabeta:1 vs greedy: stopped by Ctrl-C after (\d+) of 1000 pairs: \d+-\d+-\d+ \(W-D-L\) of (\d+)", out
    )
    assert stop, out[-2000:]
    # A Ctrl-C between a pair's end and its line in the record leaves the two one pair apart.
    assert recorded >= 2 and abs(int(stop[1]) - recorded) <= 1 and int(stop[2]) == 2 * int(stop[1])
    assert f"the same command resumes it from {record}" in out and "Traceback" not in err
    assert len(workers) >= (2 if jobs == "2" else 0)  # the jobs (and multiprocessing's resource tracker)
    assert_all_end(workers)


@pytest.mark.slow
@pytest.mark.skipif(not pathlib.Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
def test_ctrl_c_stops_an_sprt_with_its_state(tmp_path):
    out_file = tmp_path / "out.txt"
    # Two equal engines: the test would go on for its 2,000 pairs.
    command = [sys.executable, "-m", "stapel_rl.cli.sprt", "alphabeta:1", "alphabeta:1", "--time", "0.01"]
    command += ["--jobs", "2", "--batch-pairs", "4"]
    with open(out_file, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while "pairs " not in out_file.read_text() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = children(process.pid)
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 130, err[-2000:]
    assert re.search(r"stopped by Ctrl-C: undecided after \d+ pairs, score [\d.]+%, LLR [-+]\d", out_file.read_text())
    assert len(workers) >= 2 and "Traceback" not in err
    assert_all_end(workers)


@pytest.mark.slow
def test_ctrl_c_stops_a_tournament_that_the_same_command_resumes(tmp_path):
    out = tmp_path / "t"
    command = [sys.executable, "-m", "stapel_rl.cli.tournament", "alphabeta:1", "greedy", "--pairs", "500"]
    command += ["--time", "0.01", "--anchor", "greedy", "--out", str(out)]
    log = tmp_path / "stderr.txt"
    with open(log, "w") as err:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while "games:" not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # playing (a pairing's games end together, so none may be on disk yet)
        os.killpg(process.pid, signal.SIGINT)
        stdout, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 130, log.read_text()[-2000:]
    games = len(load_jsonl(out / "games.jsonl"))
    assert f"stopped by Ctrl-C with {games} games in {out}: the same command resumes" in stdout
    assert "Traceback" not in log.read_text()
