"""Pairs played in worker processes: the same games as in this process, a pool kept across matches, and
``stapel-sprt --jobs``."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pathlib
import signal
import time

import numpy as np
import pytest

from stapel_rl.cli import sprt as sprt_cli
from stapel_rl.env import get_variant
from stapel_rl.eval.agents import make_agent
from stapel_rl.eval.openings import opening_fens
from stapel_rl.eval.parallel import (
    DeferredInterrupt,
    Pool,
    deaf_to_ctrl_c,
    play_in_parallel,
    starting_deaf_children,
)
from stapel_rl.eval.sprt import SPRT, run_sprt

A, B = "classical:nodes=40", "classical:nodes=90"


@pytest.mark.slow
def test_fresh_node_limited_pairs_in_workers_replay_this_processs_games():
    fens = opening_fens(get_variant("I"), 3, "random", 4, seed=5)
    here, pair_here = play_in_parallel(A, B, "I", fens, seed=1, one_at_a_time=True, jobs=1, fresh=True)
    with Pool(2) as pool:
        there, pair_there = play_in_parallel(A, B, "I", fens, seed=1, one_at_a_time=True, jobs=2, pool=pool, fresh=True)
        # The same pool plays a second match: no pair of the first is counted in it.
        again, pair_again = play_in_parallel("alphabeta:1", "random", "II", fens[:2], 0, False, 2, pool=pool)
        test = SPRT(0.0, 400.0)
        status = run_sprt("alphabeta:1", "random", get_variant("I"), test, 2, 4, 4, seed=0, verbose=False, pool=pool)
    np.testing.assert_array_equal(pair_here, [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(pair_there, pair_here)
    np.testing.assert_array_equal(there.scores, here.scores)
    np.testing.assert_array_equal(there.plies, here.plies)
    np.testing.assert_array_equal(pair_again, [0, 0, 1, 1])
    assert again.scores.size == 4 and again.scores.mean() > 0.5  # one ply of search beats random moves
    assert status in ("H1", "continue") and len(test.scores) in (2, 4) and np.mean(test.scores) > 0.5


def test_an_sprt_in_workers_takes_specs():
    with pytest.raises(ValueError, match="takes the agents as specs"):
        run_sprt(make_agent("greedy"), "random", get_variant("I"), SPRT(), 2, 2, 4, seed=0, pool=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        run_sprt("greedy", "random", get_variant("I"), SPRT(), 2, 2, 4, seed=0, jobs=0)


@pytest.mark.slow
def test_stapel_sprt_plays_in_two_processes(capsys):
    argv = ["alphabeta:1", "random", "--jobs", "2", "--batch-pairs", "2", "--max-pairs", "2", "--elo1", "400"]
    assert sprt_cli.main(argv) in (0, 3)
    assert "after 2 pairs" in capsys.readouterr().out
    for flag in ("--jobs", "--batch-pairs", "--max-pairs"):  # --batch-pairs 0 looked at no pair forever
        assert sprt_cli.main(["greedy", "random", flag, "0"]) == 2
        assert f"{flag} must be at least 1, got 0" in capsys.readouterr().err
    with pytest.raises(ValueError, match="batch_pairs and max_pairs must be at least 1, got 0 and 4"):
        run_sprt("greedy", "random", get_variant("I"), SPRT(), 0, 4, 4, seed=0)


def test_ctrl_c_while_waiting_on_workers_is_raised_only_where_checked(python_sigint):
    # Raised anywhere, it can leave an executor's lock held and the interpreter's exit waiting forever.
    with pytest.raises(KeyboardInterrupt), DeferredInterrupt() as ctrl_c:
        ctrl_c.check()  # nothing pressed yet
        signal.raise_signal(signal.SIGINT)
        assert ctrl_c.pressed  # the handler ran, and raised nothing
        ctrl_c.check()
        pytest.fail("check() raises once Ctrl-C was pressed")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt), DeferredInterrupt():
        signal.raise_signal(signal.SIGINT)  # after the last check: raised on leaving
    with DeferredInterrupt() as ctrl_c:
        pass
    assert not ctrl_c.pressed and signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_process_that_ignores_ctrl_c_keeps_ignoring_it_while_waiting(python_sigint):
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell starts a job in the background
    with DeferredInterrupt() as ctrl_c:
        signal.raise_signal(signal.SIGINT)
        assert not ctrl_c.pressed and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def _child_that_starts_slowly(started: str) -> None:
    """A worker still importing torch when the Ctrl-C comes, then setting itself up."""
    pathlib.Path(started).touch()
    time.sleep(1.5)
    deaf_to_ctrl_c()


def _ctrl_c_while_starting(tmp_path: pathlib.Path, deaf: bool) -> "int | None":
    started = tmp_path / f"started_{deaf}"
    context = multiprocessing.get_context("spawn")
    with starting_deaf_children() if deaf else contextlib.nullcontext():
        child = context.Process(target=_child_that_starts_slowly, args=(str(started),))
        child.start()
    while not started.exists():
        assert child.is_alive(), "the child ended before it ran"
        time.sleep(0.02)
    assert child.pid is not None
    os.kill(child.pid, signal.SIGINT)  # a terminal's Ctrl-C, before the child could ignore it
    child.join(timeout=30)
    return child.exitcode


def test_a_child_started_deaf_survives_a_ctrl_c_before_its_set_up(tmp_path, python_sigint):
    assert _ctrl_c_while_starting(tmp_path, deaf=False) == 1  # KeyboardInterrupt, with its traceback
    assert _ctrl_c_while_starting(tmp_path, deaf=True) == 0


def test_a_ctrl_c_while_children_start_reaches_the_parent_after(python_sigint):
    with pytest.raises(KeyboardInterrupt):
        with starting_deaf_children():
            signal.raise_signal(signal.SIGINT)  # held back while children start
            held = True
    assert held
