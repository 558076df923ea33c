"""sb3-contrib's MaskablePPO on VersusAgent, and the agent over a saved policy (spec ``sb3:PATH``)."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

from stapel_rl.env import engine
from stapel_rl.env.gym_env import StapelEnv
from stapel_rl.env.observation import canonical_mask, encode, to_canonical_actions
from stapel_rl.env.sampling import random_positions
from stapel_rl.eval.agents import make_agent
from stapel_rl.eval.arena import play_match
from stapel_rl.eval.sb3_agent import SB3Agent, from_spec_args
from stapel_rl.eval.versus import VersusAgent

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def untrained_policy(tmp_path, variant: str = "I") -> pathlib.Path:
    """A MaskablePPO made on VersusAgent and saved untrained (no learning: fast)."""
    model = MaskablePPO(
        "MlpPolicy",
        VersusAgent(StapelEnv(variant), opponent="random"),
        n_steps=64,
        policy_kwargs={"net_arch": [32]},
        seed=0,
        device="cpu",
    )
    path = tmp_path / "policy.zip"
    model.save(path)
    return path


def test_agent_plays_the_policy_under_the_mask_in_board_ids(tmp_path):
    path = untrained_policy(tmp_path)
    agent = from_spec_args([str(path)])
    assert isinstance(agent, SB3Agent) and agent.deterministic
    state = random_positions("I", 16, 12, np.random.default_rng(0))
    actions = agent(state, np.random.default_rng(0))
    engine.check_actions(state, actions)  # all legal
    expected, _ = agent.model.predict(encode(state), action_masks=canonical_mask(state), deterministic=True)
    np.testing.assert_array_equal(to_canonical_actions(actions, state.current_player), expected)


@pytest.mark.parametrize("variant", ["I", "II"])
def test_agent_plays_whole_matches(tmp_path, variant):
    agent = from_spec_args([str(untrained_policy(tmp_path, variant)), "deterministic=false"])
    assert not agent.deterministic
    result = play_match(agent, make_agent("greedy"), variant, 4, np.random.default_rng(0))
    assert result.scores.shape == (4,) and (result.plies > 0).all()


def test_spec_errors_name_what_is_allowed(tmp_path):
    with pytest.raises(ValueError, match=r"needs a path: sb3:PATH\[:deterministic=true\|false\]"):
        from_spec_args([])
    path = str(untrained_policy(tmp_path))
    with pytest.raises(ValueError, match=r"unknown sb3 agent option 'sims=4'.*deterministic=true\|false"):
        from_spec_args([path, "sims=4"])
    with pytest.raises(ValueError, match="must be true or false"):
        from_spec_args([path, "deterministic=maybe"])
    with pytest.raises(FileNotFoundError, match="no saved MaskablePPO policy"):
        from_spec_args([str(tmp_path / "missing.zip")])
    assert from_spec_args([path[: -len(".zip")]]).model is not None  # SB3's own convention: .zip may be left off


@pytest.mark.slow
def test_maskable_ppo_learns_on_versus_agent_and_its_policy_plays(tmp_path, monkeypatch):
    """A short MaskablePPO run (a few hundred steps) on VersusAgent, then the saved policy as an agent."""
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path / "sb3_log"))  # SB3's default: a folder in /tmp, left behind
    env = VersusAgent(StapelEnv("I"), opponent="greedy", colour="random")
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=2, policy_kwargs={"net_arch": [64]}, seed=0, device="cpu"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256
    model.save(tmp_path / "ppo")
    agent = from_spec_args([str(tmp_path / "ppo.zip")])
    result = play_match(agent, make_agent("random"), "I", 2, np.random.default_rng(0))
    assert result.scores.shape == (2,)


@pytest.mark.slow
def test_example_trains_saves_and_scores(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "sb3_maskable_ppo.py"),
            "--timesteps",
            "64",
            "--envs",
            "2",
            "--n-steps",
            "64",
            "--pairs",
            "1",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "maskable_ppo.zip").exists()
    assert "time/total_timesteps" in (tmp_path / "progress.csv").read_text().splitlines()[0].split(",")
    assert "vs random : " in out.stdout and "vs greedy : " in out.stdout
