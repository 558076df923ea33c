"""Gymnasium single and vector environments."""

import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from boards import fen as fen_of
from gymnasium.utils.env_checker import check_env

import stapel_rl.env.gym_env  # noqa: F401  (registers the env)
from stapel_rl.env import VARIANT_I, engine, from_fens
from stapel_rl.env.observation import canonical_mask, encode, to_canonical_actions
from stapel_rl.env.sampling import random_legal_actions

ENV_ID = "stapel_rl/Stapeldammen-v0"


@pytest.mark.parametrize("variant", ["I", "II"])
def test_check_env_passes_without_warnings(variant):
    env = gym.make(ENV_ID, variant=variant)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
    env.close()


def test_make_and_make_vec_as_documented():
    env = gym.make(ENV_ID, variant="II")
    obs, info = env.reset(seed=0)
    assert obs.shape == env.observation_space.shape and env.observation_space.contains(obs)
    assert info["current_player"] == 1 and info["legal_moves"] == 9
    envs = gym.make_vec(ENV_ID, num_envs=4, vectorization_mode="vector_entry_point", variant="I")
    obs, info = envs.reset(seed=0)
    assert obs.shape == (4,) + env.observation_space.shape
    assert info["action_mask"].shape == (4, 200)


def play_to_multileap(env):
    """Set up a White two-leap capture (37x28x17) and return the canonical first leap."""
    env.reset(seed=0)
    env.unwrapped.state = from_fens([fen_of("W", {37: "w", 32: "b", 22: "b", 5: "b"})], "I")
    return 4 * 36 + 1  # up-right from square 37 (White's view is the canonical view)


def test_multileap_keeps_current_player_until_capture_ends():
    env = gym.make(ENV_ID, variant="I").unwrapped
    first = play_to_multileap(env)
    obs, reward, term, trunc, info = env.step(first)
    assert info["current_player"] == 0 and not term and reward == 0
    assert info["legal_moves"] == 1 and info["action_mask"][4 * 27 + 0] == 1  # 28 leaps 22 to 17
    obs, reward, term, trunc, info = env.step(4 * 27 + 0)
    # Black's only man (5) is left, it can move: the turn passes to Black.
    assert info["current_player"] == 1 and not term


def test_reward_is_signed_for_the_player_who_acted():
    # White 28 leaps Black's last man on 23 (28x19): Black has no men and loses; White acted: +1.
    env = gym.make(ENV_ID, variant="I").unwrapped
    env.reset(seed=0)
    env.unwrapped.state = from_fens([fen_of("W", {28: "w", 23: "b"})], "I")
    obs, reward, term, trunc, info = env.step(4 * 27 + 1)
    assert term and reward == 1.0 and info["result"] == 1
    # Same from Black's side (canonical ids: Black's move seen rotated): Black acts, Black wins.
    env.reset(seed=0)
    env.unwrapped.state = from_fens([fen_of("B", {23: "b", 28: "w"})], "I")
    board_action = 4 * 22 + 2  # 23x32 is down-left
    canonical = int(to_canonical_actions(np.array([board_action]), np.array([1]))[0])
    obs, reward, term, trunc, info = env.step(canonical)
    assert term and reward == 1.0 and info["result"] == -1


def test_illegal_action_raises_clear_error():
    env = gym.make(ENV_ID, variant="I").unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match="illegal action 0; legal canonical actions"):
        env.step(0)
    legal = int(np.flatnonzero(env._mask())[0])
    for bad in (legal + 0.5, float(legal), "x", np.array([legal])):  # 1.5 played action 1 before
        with pytest.raises(ValueError, match="actions must be one integer canonical action id, got"):
            env.step(bad)
    assert env.state.ply[0] == 0  # nothing was played
    env.step(np.int32(legal))


def test_opponent_turns_are_played_inside_step():
    rng = np.random.default_rng(0)

    def opponent(obs, mask):
        return int(random_legal_actions(mask[None].astype(bool), rng)[0])

    env = gym.make(ENV_ID, variant="II", opponent=opponent, agent_colour=0)
    obs, info = env.reset(seed=1)
    assert info["current_player"] == 0  # Black (the opponent) moved first
    total, done, steps = 0.0, False, 0
    while not done:
        action = int(random_legal_actions(info["action_mask"][None].astype(bool), rng)[0])
        obs, reward, term, trunc, info = env.step(action)
        done = term or trunc
        assert done or info["current_player"] == 0
        total += reward
        steps += 1
    assert total == info["result"]  # agent is White: its reward is White's result
    assert steps > 10


def test_vector_env_matches_engine_and_autoresets():
    envs = gym.make_vec(ENV_ID, num_envs=32, vectorization_mode="vector_entry_point", variant="I", ply_cap=40)
    obs, info = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    ended = np.zeros(32, dtype=bool)
    for _ in range(200):
        actions = random_legal_actions(info["action_mask"].astype(bool), rng)
        obs, rewards, term, trunc, info = envs.step(actions)
        done = term | trunc
        # Rewards belong to the player who acted; the terminal step pays +-1 in Variant I.
        assert (np.abs(rewards[term]) == 1).all() and (rewards[~term] == 0).all()
        ended |= done
        np.testing.assert_array_equal(info["current_player"], envs.unwrapped.state.current_player)
    assert ended.all()  # ply cap 40 forces every game to finish, then autoreset continues
    np.testing.assert_array_equal(obs, encode(envs.unwrapped.state))
    np.testing.assert_array_equal(info["action_mask"], canonical_mask(envs.unwrapped.state))


def test_vector_env_next_step_reset_ignores_action():
    envs = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point", variant="I")
    envs.reset(seed=0)
    # Game 0: White 28 takes Black's last man (28x19); game 1: the start position.
    envs.unwrapped.state = from_fens([fen_of("W", {28: "w", 23: "b"}), VARIANT_I.setup], "I")
    obs, rewards, term, trunc, info = envs.step(np.array([4 * 27 + 1, 4 * 30 + 1]))
    assert term.tolist() == [True, False] and rewards.tolist() == [1.0, 0.0]
    # Next step: game 0 restarts whatever its action (199 is illegal but ignored).
    black_move = int(np.flatnonzero(info["action_mask"][1])[0])
    obs, rewards, term, trunc, info = envs.step(np.array([199, black_move]))
    assert term.tolist() == [False, False] and rewards[0] == 0 and info["current_player"].tolist() == [0, 0]
    np.testing.assert_array_equal(obs[0], encode(engine.init("I", 1))[0])


def test_vector_env_illegal_action_names_the_env():
    envs = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point")
    obs, info = envs.reset(seed=0)
    actions = random_legal_actions(info["action_mask"].astype(bool), np.random.default_rng(0))
    actions[2] = 0
    with pytest.raises(ValueError, match="env 2: action 0"):
        envs.step(actions)
    with pytest.raises(ValueError, match=r"integer canonical action ids of shape \(3,\), got"):
        envs.step(actions.astype(np.float32))
    with pytest.raises(ValueError, match=r"of shape \(3,\)"):
        envs.step(actions[:2])


def test_importing_the_engine_imports_neither_gymnasium_nor_torch():
    code = "import sys, stapel_rl.env.engine, stapel_rl.env; print('gymnasium' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_make_by_module_name_registers_on_the_way():
    code = (
        "import gymnasium as gym; env = gym.make('stapel_rl.env.gym_env:stapel_rl/Stapeldammen-v0', variant='II');"
        "print(env.unwrapped.variant.name, env.spec.version)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["II", "0"]
