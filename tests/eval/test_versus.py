"""VersusAgent: the single-agent Gymnasium view with an agent playing the other side."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from boards import fen
from gymnasium.utils import env_checker
from gymnasium.utils.passive_env_checker import env_reset_passive_checker, env_step_passive_checker

from stapel_rl.env import engine, from_fens
from stapel_rl.env.gym_env import StapelEnv
from stapel_rl.env.observation import canonical_mask, encode
from stapel_rl.eval.agents import GreedyAgent
from stapel_rl.eval.versus import VersusAgent


def play_out(env: VersusAgent, rng: np.random.Generator, max_steps: int = 3000):
    """Random legal learner actions to the end of the game: the rewards and the last info."""
    rewards = []
    for _ in range(max_steps):
        mask = env.action_masks()
        assert mask.any() and env.state.current_player[0] == env.agent_colour
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        assert env.observation_space.contains(obs)
        rewards.append(reward)
        if terminated or truncated:
            return rewards, info
    raise AssertionError("game did not finish")


@pytest.mark.parametrize("variant", ["I", "II"])
def test_learner_moves_only_on_its_turns_and_gets_its_result(variant):
    env = VersusAgent(StapelEnv(variant), opponent="greedy", colour="random")
    rng = np.random.default_rng(0)
    colours = set()
    for seed in range(4):
        obs, info = env.reset(seed=seed)
        colours.add(info["agent_colour"])
        state = env.state
        assert state.current_player[0] == env.agent_colour == info["current_player"]
        np.testing.assert_array_equal(obs, encode(state)[0])
        np.testing.assert_array_equal(env.action_masks(), canonical_mask(state)[0])
        np.testing.assert_array_equal(info["action_mask"], env.action_masks())
        rewards, info = play_out(env, rng)
        assert all(r == 0 for r in rewards[:-1])
        assert rewards[-1] == info["agent_result"] == env.state.rewards[0, env.agent_colour]
        assert info["result"] == env.state.rewards[0, 0]
        assert not env.action_masks().any()
    assert colours == {0, 1}


def test_fixed_colours_and_the_opponent_opening():
    env = VersusAgent(StapelEnv("I"), opponent="random", colour="black")
    _, info = env.reset(seed=1)
    assert info["agent_colour"] == 1 and env.state.ply[0] == 1  # White (the opponent) has moved
    env = VersusAgent(StapelEnv("II"), opponent="random", colour=0)
    _, info = env.reset(seed=1)
    assert info["agent_colour"] == 0 and env.state.ply[0] == 1  # Black moves first in Variant II
    env = VersusAgent(StapelEnv("II"), opponent="random", colour="Black")
    env.reset(seed=1)
    assert env.state.ply[0] == 0


def test_seeded_reset_is_reproducible():
    def run(seed):
        env = VersusAgent(StapelEnv("I"), opponent="greedy", colour="random")
        obs, _ = env.reset(seed=seed)
        trace = [obs]
        rng = np.random.default_rng(5)
        for _ in range(10):
            obs, *_ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            trace.append(obs)
        return np.stack(trace)

    np.testing.assert_array_equal(run(3), run(3))


def test_gymnasium_checks():
    env = VersusAgent(StapelEnv("II"), opponent="greedy", colour="random")
    env_checker.check_reset_return_type(env)
    env_checker.check_reset_seed_determinism(env)
    env_checker.check_reset_options(env)
    env_reset_passive_checker(env)
    env_step_passive_checker(env, env.action_space.sample())  # samples a legal action of the learner


def test_wraps_a_gymnasium_make_env_and_an_agent_object():
    env = VersusAgent(gym.make("stapel_rl/Stapeldammen-v0", variant="I"), opponent=GreedyAgent(), colour="white")
    env.reset(seed=0)
    play_out(env, np.random.default_rng(1))


def test_multi_leaps_of_both_sides():
    env = VersusAgent(StapelEnv("I"), opponent="greedy", colour="white")
    env.reset(seed=0)
    # White's 37x28x17, then Black's 16x27x36 over White's 21 and 31 (Black keeps a man on 5).
    env.unwrapped.state = from_fens([fen("W", {37: "w", 32: "b", 22: "b", 16: "b", 21: "w", 31: "w", 5: "b"})], "I")
    legal = np.flatnonzero(env.action_masks()).tolist()
    assert legal == [4 * 36 + 1]  # 37 up-right over 32
    _, reward, terminated, _, info = env.step(legal[0])
    assert info["current_player"] == 0 and env.state.capturing[0] == 27 and reward == 0  # mid-capture, still White
    _, reward, terminated, _, info = env.step(int(np.flatnonzero(env.action_masks())[0]))
    # Black's whole turn, both leaps, was played inside that step: White is to move again.
    assert info["current_player"] == 0 and not terminated and reward == 0
    height = env.state.height[0]
    assert height[16] == 3 and height[35] == 3 and height[20] == height[30] == height[15] == 0
    assert env.state.ply[0] == 2


def test_bad_input_names_what_is_allowed_and_changes_nothing():
    with pytest.raises(ValueError, match=r"unknown agent 'nobody'.*expected one of.*greedy"):
        VersusAgent(StapelEnv("I"), opponent="nobody")
    with pytest.raises(ValueError, match="agent spec 'random' takes no options, got 'random:3'"):
        VersusAgent(StapelEnv("I"), opponent="random:3")
    with pytest.raises(ValueError, match=r"colour must be one of \[0, 1, 'white', 'black', 'random'\]"):
        VersusAgent(StapelEnv("I"), colour="green")
    with pytest.raises(ValueError, match="colour must be one of"):
        VersusAgent(StapelEnv("I"), colour=True)
    with pytest.raises(ValueError, match="already plays an opponent"):
        VersusAgent(StapelEnv("I", opponent=lambda obs, mask: int(np.flatnonzero(mask)[0])))
    with pytest.raises(ValueError, match="wraps a StapelEnv"):
        VersusAgent(gym.make("CartPole-v1"))

    env = VersusAgent(StapelEnv("I"), opponent="random", colour="white")
    env.reset(seed=0)
    before = engine.to_fens(env.state)
    with pytest.raises(ValueError, match=r"illegal action 0; legal canonical actions: \["):
        env.step(0)
    assert engine.to_fens(env.state) == before and env.state.ply[0] == 0


def test_the_old_path_still_gives_the_class_with_a_warning():
    import stapel_rl.env.wrappers as old

    with pytest.warns(DeprecationWarning, match="moved to stapel_rl.eval.versus.VersusAgent"):
        assert old.VersusAgent is VersusAgent
    with pytest.raises(AttributeError):
        old.Nothing  # noqa: B018
