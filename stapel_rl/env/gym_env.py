"""Gymnasium environment: one game, turn-based, in the side to move's canonical view.

Observations are the planes of ``observation.encode``; actions are canonical
action ids (the board as the side to move sees it, RULES.md), so an agent is
colour-blind. ``info["action_mask"]`` marks the legal ones, and
``action_space.sample()`` draws among them. Each ``step`` plays one action of
the current player (one plain move or one leap: a multi-leap capture takes
several steps by the same player) and rewards the player who acted.

With ``opponent=`` (a callable from a single observation and mask to a
canonical action) the opponent's turns are played inside ``step`` and the env
becomes a single-agent env for the colour ``agent_colour``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from stapel_rl.env import engine, render
from stapel_rl.env.geometry import NUM_ACTIONS
from stapel_rl.env.observation import NUM_PLANES, action_ids, canonical_mask, encode, from_canonical_actions
from stapel_rl.env.state import State
from stapel_rl.env.variants import get_variant

Opponent = Callable[[np.ndarray, np.ndarray], int]
#: Largest value a plane can take (a 40-man stack's height / 20).
OBSERVATION_HIGH = 2.0


class LegalActions(gym.spaces.Discrete):
    """``Discrete(200)`` whose ``sample()`` without a mask draws a legal action of the env now."""

    def __init__(self, legal: Callable[[], np.ndarray], seed: "int | None" = None):
        super().__init__(NUM_ACTIONS, seed=seed)
        self._legal = legal

    def sample(self, mask: "np.ndarray | None" = None, probability: "np.ndarray | None" = None) -> np.int64:
        if mask is None and probability is None:
            mask = self._legal().astype(np.int8)
            if not mask.any():  # game over: any action is ignored until reset
                mask = None
        return super().sample(mask=mask, probability=probability)


def observation_space() -> gym.spaces.Box:
    return gym.spaces.Box(0.0, OBSERVATION_HIGH, shape=(NUM_PLANES, 10, 10), dtype=np.float32)


def result_info(state: State, index: int) -> "dict[str, Any]":
    """``result`` (+1 White won, -1 Black won, 0 draw or truncated) and ``points`` of a finished game."""
    return {"result": int(state.rewards[index, 0]), "points": state.points[index].astype(np.int64).copy()}


class StapelEnv(gym.Env):
    """One game of Stapeldammen (``gymnasium.make("stapel_rl/Stapeldammen-v0", variant="I")``).

    Args:
        variant: "I" or "II".
        ply_cap: full moves after which a game is truncated (default: the variant's, 600).
        opponent: optional callable ``(observation, action_mask) -> canonical action``
            that plays the other colour inside ``step``.
        agent_colour: with an opponent, the colour the agent plays: 0 White,
            1 Black, or "random" (drawn at each reset from the env's seed).
        render_mode: "ansi" (text board) or "rgb_array" (an image).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 2}

    def __init__(
        self,
        variant: str = "I",
        ply_cap: "int | None" = None,
        opponent: "Opponent | None" = None,
        agent_colour: "int | str" = 0,
        render_mode: "str | None" = None,
    ):
        self.variant = get_variant(variant)
        if ply_cap is not None:
            self.variant = self.variant.with_ply_cap(ply_cap)
        if agent_colour not in (0, 1, "random"):
            raise ValueError(f"agent_colour must be 0 (White), 1 (Black) or 'random', got {agent_colour!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.opponent = opponent
        self.agent_colour = agent_colour
        self.render_mode = render_mode
        self.observation_space = observation_space()
        self.action_space = LegalActions(lambda: self._mask())
        self.state: State = engine.init(self.variant, 1)
        self.agent = 0

    def _mask(self) -> np.ndarray:
        return canonical_mask(self.state)[0]

    def _observe(self) -> "tuple[np.ndarray, dict[str, Any]]":
        mask = self._mask()
        info: "dict[str, Any]" = {
            "action_mask": mask.astype(np.int8),
            "current_player": int(self.state.current_player[0]),
            "legal_moves": int(mask.sum()),
        }
        if self.state.done[0]:
            info.update(result_info(self.state, 0))
        return encode(self.state)[0], info

    def _play(self, canonical_action: int) -> float:
        """Play one canonical action of the side to move; its reward for ``self.agent``."""
        mask = self._mask()
        if not (0 <= int(canonical_action) < NUM_ACTIONS and mask[int(canonical_action)]):
            legal = np.flatnonzero(mask).tolist()
            raise ValueError(f"illegal action {canonical_action!r}; legal canonical actions: {legal}")
        action = from_canonical_actions(np.array([int(canonical_action)]), self.state.current_player)
        self.state = engine.step(self.state, action, validate=False)
        return float(self.state.rewards[0, self.agent])

    def _opponent_turns(self) -> float:
        reward = 0.0
        while self.opponent is not None and not self.state.done[0] and self.state.current_player[0] != self.agent:
            obs, info = self._observe()
            reward += self._play(int(self.opponent(obs, info["action_mask"])))
        return reward

    def reset(self, *, seed: "int | None" = None, options: "dict | None" = None) -> "tuple[np.ndarray, dict[str, Any]]":
        super().reset(seed=seed)
        self.state = engine.init(self.variant, 1)
        if self.agent_colour == "random":
            self.agent = int(self.np_random.integers(2))
        else:
            self.agent = int(self.agent_colour)
        self._opponent_turns()
        return self._observe()

    def step(self, action: int) -> "tuple[np.ndarray, float, bool, bool, dict[str, Any]]":
        if self.state.done[0]:
            raise RuntimeError("the game is over: call reset() before step()")
        actor = int(self.state.current_player[0])
        if self.opponent is None:
            self.agent = actor
        reward = self._play(int(action_ids(action)))
        reward += self._opponent_turns()
        obs, info = self._observe()
        return obs, reward, bool(self.state.terminated[0]), bool(self.state.truncated[0]), info

    def render(self) -> "str | np.ndarray | None":
        if self.render_mode == "ansi":
            return render.ansi(self.state, 0)
        if self.render_mode == "rgb_array":
            return render.rgb_array(self.state, 0)
        return None


#: The registered id: ``gymnasium.make(ENV_ID, variant="I")``, ``gymnasium.make_vec(ENV_ID, num_envs=N,
#: vectorization_mode="vector_entry_point")``. Importing this module registers it.
ENV_ID = "stapel_rl/Stapeldammen-v0"

if ENV_ID not in gym.registry:
    gym.register(
        id=ENV_ID,
        entry_point="stapel_rl.env.gym_env:StapelEnv",
        vector_entry_point="stapel_rl.env.vector_env:StapelVectorEnv",
    )
