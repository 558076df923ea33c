"""Self-play worker processes: positions come back, a failing worker is reported, not waited for."""

import dataclasses

import numpy as np
import pytest
from test_selfplay import replay_game

from stapel_rl.env import get_variant
from stapel_rl.models import PRESETS, PolicyValueNet
from stapel_rl.train.replay import FIELDS
from stapel_rl.train.selfplay import SelfPlayConfig
from stapel_rl.train.workers import SelfPlayWorkers, WorkerSpec

CONFIG = dataclasses.replace(PRESETS["tiny"], layout="compact")


def spec(index: int, **changes) -> WorkerSpec:
    base = WorkerSpec(
        "I",
        60,
        dataclasses.asdict(CONFIG),
        "fp32",
        SelfPlayConfig(2, "gumbel"),
        4,
        (0, index, 0),
    )
    return dataclasses.replace(base, **changes)


def weights() -> "dict[str, np.ndarray]":
    return {k: v.numpy() for k, v in PolicyValueNet(CONFIG).state_dict().items()}


@pytest.mark.slow
def test_two_workers_return_positions_of_finished_games():
    workers = SelfPlayWorkers([spec(0), spec(1)])
    try:
        workers.request(weights(), 40)
        batch = workers.collect()
    finally:
        workers.close()
    assert len(batch.positions) >= 40 and set(batch.positions.arrays) == set(FIELDS)
    # Every decision point recorded (forced actions are played unsearched and not recorded).
    variant = get_variant("I").with_ply_cap(60)
    assert sum(len(replay_game(variant, g.actions)[0]) for g in batch.games) == len(batch.positions)
    assert 0 < batch.network_seconds < batch.seconds
    # Different seeds, different games.
    assert len({tuple(g.actions) for g in batch.games}) == len(batch.games)


@pytest.mark.slow
def test_a_failing_worker_is_reported_with_its_traceback():
    workers = SelfPlayWorkers([spec(0, variant="III")])
    try:
        with pytest.raises(RuntimeError, match="(?s)self-play worker 0 failed.*unknown variant 'III'"):
            workers.request(weights(), 10)
            workers.collect()
    finally:
        workers.close()
