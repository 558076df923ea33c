"""The opening suites and the equal-time match harness."""

import contextlib
import pathlib
import subprocess
import sys
import time

import numpy as np
import pytest

from stapel_rl.env import from_fens, legal_moves
from stapel_rl.eval.agents import make_agent
from stapel_rl.eval.arena import paired_start, play_match, timed_spec
from stapel_rl.eval.openings import opening_fens, random_opening_states, random_openings, suite


@pytest.mark.parametrize("variant", ["I", "II"])
def test_each_suite_holds_distinct_playable_positions_of_its_variant(variant):
    fens = suite(variant)
    assert len(fens) == 300 and len(set(fens)) == 300
    state = from_fens(list(fens), variant)  # every line parses
    assert not state.done.any() and (state.capturing < 0).all()
    men = state.height.astype(int).sum(axis=1)
    assert (men == 40).all()  # men are never removed, only stacked
    stacked_start = variant == "II"
    # A few plies from the start: Variant II's stacks of two are still there, Variant I's men mostly single.
    assert ((state.height >= 2).sum(axis=1) >= 5).all() == stacked_start
    assert all(legal_moves(fen, variant) for fen in fens[:20])


def test_opening_fens_wrap_round_the_suite_and_make_random_ones():
    fens = suite("I")
    assert opening_fens("I", 3, offset=299) == [fens[299], fens[0], fens[1]]
    random = opening_fens("I", 4, "random", plies=6, seed=1)
    assert random == opening_fens("I", 4, "random", plies=6, seed=1) and len(set(random)) == 4
    with pytest.raises(ValueError, match="unknown opening source 'book': expected one of suite, random"):
        opening_fens("I", 2, "book")


@pytest.mark.parametrize("variant", ["I", "II"])
@pytest.mark.parametrize("count", [4, 300])
def test_random_openings_are_as_deep_as_asked_in_a_batch_of_any_size(variant, count):
    # A game whose capture was under way after the random actions finishes it; the others stay put.
    # (Stepping the whole batch while any game was capturing played hundreds of plies in a large batch.)
    state = random_opening_states(variant, count, 4, np.random.default_rng(0))
    assert not state.done.any() and (state.capturing < 0).all()
    assert state.ply.max() == 4 and state.ply.min() >= 1  # ply counts whole turns; a turn may be several leaps
    men = from_fens(random_openings(variant, count, 4, seed=0), variant).height.astype(int).sum(axis=1)
    assert (men == 40).all()


def test_timed_spec_gives_time_only_to_searchers_without_their_own():
    assert timed_spec("classical", 0.5) == "classical:time=0.5"
    assert timed_spec("mcts:variant_I:sims=800", 0.25) == "mcts:variant_I:sims=800:time=0.25"
    assert timed_spec("classical:time=0.05", 0.5) == "classical:time=0.05"  # time odds stay
    assert timed_spec("greedy", 0.5) == "greedy" and timed_spec("classical", None) == "classical"


def test_one_game_at_a_time_counts_moves_and_time_per_side():
    start, colour = paired_start("I", opening_fens("I", 2))
    calls = []

    def counting(state, rng):
        calls.append(state.batch_size)
        return greedy(state, rng)

    greedy = make_agent("greedy")
    counting.name = "counting"
    result = play_match(
        counting,
        make_agent("random"),
        "I",
        4,
        np.random.default_rng(0),
        start=start,
        agent_colour=colour,
        one_at_a_time=True,
    )
    assert set(calls) == {1}
    assert result.moves[0] <= len(calls) and result.moves.sum() == result.plies.sum()
    assert (result.seconds > 0).all() and (result.time_per_move() > 0).all()
    p = result.pentanomial(np.arange(4) % 2)
    assert p.pairs == 2 and p.score == pytest.approx(result.score)


def test_stapel_match_at_equal_time_reports_pentanomial_counts_and_time_per_move(capsys):
    from stapel_rl.cli.match import main

    assert main(["classical:nodes=300", "greedy", "--games", "4", "--variant", "II", "--time", "0.05"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("classical:nodes=300:time=0.05 vs greedy (Variant II): ")
    assert " of 4, score " in line and "(95% CI, pentanomial); pairs 0/0.5/1/1.5/2: " in line
    assert "time per move " in line and "suite openings, 0.05 s a move" in line
    for bad, message in (
        (["--time", "-1"], "--time must be a positive"),
        (["--jobs", "0"], "--jobs must be"),
        (["--openings", "book"], None),
    ):
        with pytest.raises(SystemExit) if message is None else contextlib.nullcontext():
            assert main(["greedy", "random", *bad]) == 2
        if message:
            assert message in capsys.readouterr().err


def test_a_killed_match_takes_its_job_processes_with_it():
    """``stapel-match --jobs 2`` killed from outside: its job processes exit too (they would play on)."""
    command = [sys.executable, "-m", "stapel_rl.cli.match", "classical:nodes=2000", "greedy", "--time", "0.05",
               "--games", "200", "--jobs", "2"]  # fmt: skip
    match = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children_file = pathlib.Path(f"/proc/{match.pid}/task/{match.pid}/children")
    try:
        deadline = time.monotonic() + 60
        jobs: "list[int]" = []
        while len(jobs) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            jobs = [int(p) for p in children_file.read_text().split()] if children_file.exists() else []
        assert len(jobs) >= 2, "the match never started its jobs"
        time.sleep(1.0)
    finally:
        match.kill()
        match.wait()
    deadline = time.monotonic() + 15
    alive = jobs
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [p for p in jobs if pathlib.Path(f"/proc/{p}").exists() and "zombie" not in _state(p)]
    assert not alive, f"job processes {alive} outlived the match"


def _state(pid: int) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0].lower()
    except (OSError, IndexError):
        return "zombie"
