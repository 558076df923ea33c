"""Vector environment: N games stepped by one engine call, with next-step autoreset.

Same conventions as ``StapelEnv`` (canonical observations and actions, reward
for the player who acted, ``info["action_mask"]`` / ``"current_player"``), but
batched: there is no Python loop over games. A game that ended on step t is
reset on step t+1 (Gymnasium's ``AutoresetMode.NEXT_STEP``): its action is
ignored, its reward is 0 and the observation is the new start position.

    envs = gymnasium.make_vec("stapel_rl/Stapeldammen-v0", num_envs=1024,
                              vectorization_mode="vector_entry_point")
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from stapel_rl.env import engine
from stapel_rl.env.geometry import NUM_ACTIONS
from stapel_rl.env.gym_env import observation_space
from stapel_rl.env.observation import action_ids, canonical_mask, encode, from_canonical_actions
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.env.state import State
from stapel_rl.env.variants import get_variant


class LegalActionsBatch(gym.spaces.MultiDiscrete):
    """``MultiDiscrete([200] * N)`` whose ``sample()`` draws a legal action in every game."""

    def __init__(self, env: "StapelVectorEnv"):
        super().__init__(np.full(env.num_envs, NUM_ACTIONS))
        self._env = env

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        return random_legal_actions(canonical_mask(self._env.state), self.np_random)


class StapelVectorEnv(VectorEnv):
    """``num_envs`` games of one variant; see the module docstring."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, variant: str = "I", ply_cap: "int | None" = None, **kwargs: Any):
        if kwargs:
            raise TypeError(f"unexpected arguments for the vector env: {sorted(kwargs)}")
        self.num_envs = int(num_envs)
        self.variant = get_variant(variant)
        if ply_cap is not None:
            self.variant = self.variant.with_ply_cap(ply_cap)
        self.single_observation_space = observation_space()
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.single_action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self.action_space = LegalActionsBatch(self)
        self.state: State = engine.init(self.variant, self.num_envs)
        self._np_random = None

    def _observe(self) -> "tuple[np.ndarray, dict[str, Any]]":
        s = self.state
        info = {
            "action_mask": canonical_mask(s).astype(np.int8),
            "current_player": s.current_player.astype(np.int64),
        }
        if s.done.any():
            info["result"] = s.rewards[:, 0].astype(np.int64)
            info["_result"] = s.done.copy()
        return encode(s), info

    def reset(self, *, seed: "int | None" = None, options: "dict | None" = None) -> "tuple[np.ndarray, dict[str, Any]]":
        super().reset(seed=seed)
        self.state = engine.init(self.variant, self.num_envs)
        return self._observe()

    def step(self, actions: np.ndarray) -> "tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]":
        actions = action_ids(np.asarray(actions).reshape(-1), (self.num_envs,))  # [N] or [N, 1]
        s = self.state
        restarted = s.done
        board = from_canonical_actions(np.clip(actions, 0, NUM_ACTIONS - 1), s.current_player)
        legal = s.legal_action_mask[np.arange(self.num_envs), board] & (actions >= 0) & (actions < NUM_ACTIONS)
        bad = np.flatnonzero(~restarted & ~legal)
        if bad.size:
            shown = ", ".join(f"env {i}: action {int(actions[i])}" for i in bad[:10])
            raise ValueError(f"illegal canonical action(s) in {bad.size} env(s): {shown}")
        actor = s.current_player.astype(np.int64)
        # Finished games ignore their action in the engine, then start afresh.
        self.state = engine.reset_games(engine.step(s, board, validate=False), restarted)
        rewards = self.state.rewards[np.arange(self.num_envs), actor]
        obs, info = self._observe()
        return obs, rewards.astype(np.float64), self.state.terminated.copy(), self.state.truncated.copy(), info
