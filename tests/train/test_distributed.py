"""Self-play and tournaments on Ray: a local Ray, a killed actor (a cluster: test_ray_cluster.py)."""

import io
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from stapel_rl.cluster import init_ray
from stapel_rl.env import get_variant
from stapel_rl.models import checkpoint

ray = pytest.importorskip("ray", reason="Ray is part of the dev extra: pip install -e '.[dev]'")

TINY = [
    "model=tiny",
    "train=tiny",
    "mcts.num_simulations=4",
    "train.threads=1",
    "train.eval_every_minutes=0",
    "train.image_every_minutes=0",
    "distributed=ray",
    "distributed.actors=2",
]


def train_command(run_dir: pathlib.Path, *overrides: str) -> "list[str]":
    return [sys.executable, "-m", "stapel_rl.train", f"hydra.run.dir={run_dir}", *TINY, *overrides]


def replay_of(run_dir: pathlib.Path) -> "tuple[dict, dict[str, np.ndarray]]":
    state = checkpoint.load(checkpoint.list_checkpoints(run_dir / "checkpoints")[-1])
    with np.load(io.BytesIO(state["replay"])) as replay:
        return state, {k: replay[k] for k in ("actor", "version", "value")}


def test_an_unreachable_cluster_is_a_clear_error_not_a_hang():
    start = time.perf_counter()
    with pytest.raises(ConnectionError, match="cannot reach the Ray cluster at '127.0.0.1:1'"):
        init_ray("127.0.0.1:1", timeout=2.0)
    with pytest.raises(ValueError, match="distributed.address must be"):
        init_ray("no-port-here", timeout=2.0)
    assert time.perf_counter() - start < 10
    assert not ray.is_initialized()


@pytest.mark.slow
def test_two_actors_on_a_local_ray_feed_the_learner(tmp_path):
    run = tmp_path / "run"
    done = subprocess.run(train_command(run, "train.iterations=2"), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    # Run again in the same directory: it resumes and continues its counters.
    done = subprocess.run(train_command(run, "train.iterations=3"), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resumed from" in done.stdout + done.stderr and "iteration 2," in done.stdout + done.stderr
    state, replay = replay_of(run)
    assert state["counters"]["iteration"] == 3
    assert set(np.unique(replay["actor"])) == {0, 1}  # positions from both actors
    # Weights versions: 0 (the initial weights, played during iterations 1 and 2) and 2 (the resumed
    # run's first request, trained on at iteration 3).
    assert set(np.unique(replay["version"])) <= {0, 1, 2} and replay["version"].min() == 0
    assert replay["version"].max() == 2
    assert len(json.loads((run / "selfplay_pids.json").read_text())) == 2


@pytest.mark.slow
def test_too_few_cpus_is_a_clear_error(tmp_path):
    run = tmp_path / "run"
    done = subprocess.run(train_command(run, "distributed.actors=64"), capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "distributed.actors=64 x cpus_per_actor=1 needs 64 CPUs; the Ray cluster has" in done.stderr


@pytest.mark.slow
def test_a_killed_actor_is_restarted_and_the_run_finishes(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen(
        train_command(run, "train.iterations=6", "train.positions_per_iteration=256"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        pids = run / "selfplay_pids.json"
        deadline = time.time() + 120
        while not pids.is_file() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert pids.is_file(), "the run never wrote its actors' pids"
        time.sleep(1.0)  # mid-play
        os.kill(json.loads(pids.read_text())[0], signal.SIGKILL)
        _, stderr = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr[-3000:]
    state, replay = replay_of(run)
    assert state["counters"]["iteration"] == 6
    assert set(np.unique(replay["actor"])) == {0, 1}


@pytest.mark.slow
@pytest.mark.parametrize("one_at_a_time", [False, True])  # a task a pairing; a task a pair
def test_a_tournament_on_ray_plays_the_same_games(tmp_path, one_at_a_time):
    from stapel_rl.eval.tournament import TournamentConfig, run

    config = TournamentConfig(
        ["random", "greedy", "alphabeta:1"], get_variant("I"), pairs=2, seed=7, one_at_a_time=one_at_a_time
    )
    local = run(config, tmp_path / "local")
    distributed = run(config, tmp_path / "ray", use_ray=True)

    def key(g):
        return g["white"], g["black"], g["opening"], g["white_score"], tuple(g["actions"])

    assert len(local) == 12 and sorted(map(key, local)) == sorted(map(key, distributed))
    # Rerun on Ray with everything played: nothing more is played or written.
    again = run(config, tmp_path / "ray", use_ray=True)
    assert len(again) == 12 and len((tmp_path / "ray" / "games.jsonl").read_text().splitlines()) == 12
    assert not ray.is_initialized()  # the tournament shut down the Ray it started
