"""TorchRL's PettingZooWrapper (with the action mask) on the PettingZoo env: random rollouts and a masked policy."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest
import torch
from torchrl.envs import PettingZooWrapper
from torchrl.envs.utils import ExplorationType, check_env_specs, set_exploration_type

from stapel_rl.env.pettingzoo_env import env as aec_env

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "torchrl_pettingzoo.py"
GROUPS = ("player_0", "player_1")
pytestmark = pytest.mark.filterwarnings("ignore:PettingZoo in TorchRL is tested using version")


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def wrapped(variant: str, seed: int = 0) -> PettingZooWrapper:
    return PettingZooWrapper(env=aec_env(variant=variant), use_mask=True, seed=seed)


def check_game(rollout) -> None:
    """One whole game: one player to move at each step, its action legal, zero-sum result at the end only."""
    n = rollout.batch_size[0]
    acting = torch.stack([rollout[group, "mask"].reshape(n) for group in GROUPS], dim=1)
    assert (acting.sum(dim=1) == 1).all()
    for i, group in enumerate(GROUPS):
        action = rollout[group, "action"].reshape(n)
        legal = rollout[group, "action_mask"].reshape(n, 200).gather(1, action[:, None]).reshape(n)
        assert legal[acting[:, i]].all()
    assert rollout["next", "done"].reshape(n).nonzero().reshape(-1).tolist() == [n - 1]
    rewards = torch.stack([rollout["next", group, "reward"].reshape(n) for group in GROUPS], dim=1)
    assert (rewards[:-1] == 0).all() and rewards[-1].sum() == 0 and rewards[-1].abs().max() <= 1
    result = rollout["next", "player_0", "info", "result"].reshape(n)[-1]  # +1 White won
    colour = int(rollout["player_0", "info", "colour"].reshape(n)[0])  # player_0's colour
    assert rewards[-1, 0] == (result if colour == 0 else -result)


@pytest.mark.parametrize("variant", ["I", "II"])
def test_random_rollouts_play_whole_games_under_the_mask(variant):
    env = wrapped(variant)
    check_env_specs(env)
    assert set(env.group_map) == set(GROUPS)
    assert env.full_observation_spec["player_0", "action_mask"].shape == torch.Size([1, 200])
    for _ in range(2):
        check_game(env.rollout(20_000, break_when_any_done=True))


def test_example_shared_masked_policy_plays_a_game():
    spec = importlib.util.spec_from_file_location("torchrl_pettingzoo_example", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    env = example.make_env("II", seed=1)
    torch.manual_seed(0)
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        rollout = env.rollout(example.MAX_STEPS, policy=example.shared_policy(env), break_when_any_done=True)
    check_game(rollout)
