"""A wrapper that fits the Gymnasium environment to single-agent learners.

``VersusAgent`` turns the two-player, turn-based Gymnasium env into a
single-agent env for standard learners (Stable-Baselines3, sb3-contrib's
``MaskablePPO``, CleanRL-style loops): the other side is played inside
``step`` by any agent of ``stapel_rl.eval.agents`` (a spec such as
``"greedy"``, ``"random"``, ``"alphabeta:2"``, or an agent object)::

    from sb3_contrib import MaskablePPO
    from stapel_rl.env.gym_env import StapelEnv
    from stapel_rl.eval.versus import VersusAgent

    env = VersusAgent(StapelEnv(variant="I"), opponent="greedy", colour="random")
    model = MaskablePPO("MlpPolicy", env).learn(50_000)  # uses env.action_masks()

It was ``stapel_rl.env.wrappers`` up to 0.2.0 (that path still works, with a ``DeprecationWarning``,
until the next version): the env layer may not import agents.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from stapel_rl.env.geometry import NUM_ACTIONS
from stapel_rl.env.gym_env import StapelEnv, result_info
from stapel_rl.env.observation import canonical_mask, encode, to_canonical_actions
from stapel_rl.env.state import State
from stapel_rl.eval.agents import Agent, make_agent

#: The values ``colour`` accepts, and the colour index (0 White, 1 Black) each names; None: drawn at each reset.
COLOURS: "dict[Any, int | None]" = {0: 0, 1: 1, "white": 0, "black": 1, "random": None}


class VersusAgent(gym.Wrapper):
    """One colour of a :class:`~stapel_rl.env.gym_env.StapelEnv`; an agent plays the other inside ``step``.

    Observations and actions are those of the env: the planes of
    ``observation.encode`` and canonical action ids, in the learner's view
    (the board as its colour sees it). ``step`` plays the learner's action
    (one plain move or one leap: a multi-leap capture takes several steps),
    then the opponent's turns, and returns when the learner is to move again
    or the game is over. The reward is the learner's: +1 win, -1 loss, 0 draw
    or truncation, on the step that ends the game.

    ``action_masks()`` (``bool [200]``) marks the learner's legal canonical
    actions, as sb3-contrib's ``MaskablePPO`` expects; ``info["action_mask"]``
    holds the same. A finished game's info also holds ``result`` (+1 White won,
    -1 Black won, 0 draw or truncation), ``points`` and ``agent_result`` (the
    learner's +1 / -1 / 0).

    Args:
        env: a ``StapelEnv`` (bare or from ``gymnasium.make``) without an ``opponent`` of its own.
        opponent: an agent spec for ``stapel_rl.eval.agents.make_agent`` (default ``"greedy"``)
            or an agent object (called with a batched ``State`` and an rng, returns board action ids).
        colour: the learner's colour: 0 or ``"white"``, 1 or ``"black"``, or ``"random"``
            (drawn at each reset from the env's seeded generator, which the opponent uses too).

    Raises:
        ValueError: an unknown opponent spec or colour, or an env that is not a
            ``StapelEnv`` or already has an opponent.
    """

    def __init__(self, env: gym.Env, opponent: "str | Agent" = "greedy", colour: "int | str" = "random"):
        super().__init__(env)
        base = env.unwrapped
        if not isinstance(base, StapelEnv):
            raise ValueError(f"VersusAgent wraps a StapelEnv (stapel_rl.env.gym_env), got {type(base).__name__}")
        if base.opponent is not None:
            raise ValueError("the env already plays an opponent of its own (StapelEnv(opponent=...)); pass one without")
        key = colour.lower() if isinstance(colour, str) else colour
        if isinstance(key, bool) or key not in COLOURS:
            raise ValueError(f"colour must be one of {list(COLOURS)}, got {colour!r}")
        self.colour = colour
        self.opponent: Agent = make_agent(opponent) if isinstance(opponent, str) else opponent
        if not callable(self.opponent):
            raise ValueError(f"opponent must be an agent spec (str) or an agent (callable), got {opponent!r}")
        #: The learner's colour in the game under way (0 White, 1 Black).
        self.agent_colour = 0 if COLOURS[key] is None else COLOURS[key]
        self._fixed_colour = COLOURS[key]

    @property
    def state(self) -> State:
        """The engine state of the game under way (batch of one)."""
        base = self.env.unwrapped
        assert isinstance(base, StapelEnv)  # checked in __init__
        return base.state

    def action_masks(self) -> np.ndarray:
        """``bool [200]`` the learner's legal canonical actions now (all False once the game is over)."""
        state = self.state
        if state.done[0] or int(state.current_player[0]) != self.agent_colour:
            return np.zeros(NUM_ACTIONS, dtype=bool)
        return canonical_mask(state)[0]

    def _observe(self) -> "tuple[np.ndarray, dict[str, Any]]":
        state = self.state
        view = state
        if int(state.current_player[0]) != self.agent_colour:
            view = state.replace(current_player=np.array([self.agent_colour], dtype=np.int8))
        mask = self.action_masks()
        info: "dict[str, Any]" = {
            "action_mask": mask.astype(np.int8),
            "legal_moves": int(mask.sum()),
            "current_player": int(state.current_player[0]),
            "agent_colour": self.agent_colour,
        }
        if state.done[0]:
            info.update(result_info(state, 0))
            info["agent_result"] = int(state.rewards[0, self.agent_colour])
        return encode(view)[0], info

    def _opponent_turns(self) -> "tuple[float, bool, bool]":
        """Play the opponent until the learner is to move or the game is over: the learner's reward, and the
        terminated and truncated flags of the last step (False, False if the opponent did not move)."""
        reward, terminated, truncated = 0.0, False, False
        base = self.env.unwrapped
        while not self.state.done[0] and int(self.state.current_player[0]) != self.agent_colour:
            state = self.state
            board = np.asarray(self.opponent(state, base.np_random)).reshape(-1)[:1]
            canonical = int(to_canonical_actions(board, state.current_player)[0])
            _, _, terminated, truncated, _ = self.env.step(canonical)
            reward += float(self.state.rewards[0, self.agent_colour])
        return reward, terminated, truncated

    def reset(self, *, seed: "int | None" = None, options: "dict | None" = None) -> "tuple[np.ndarray, dict[str, Any]]":
        self.env.reset(seed=seed, options=options)
        if self._fixed_colour is None:
            self.agent_colour = int(self.env.unwrapped.np_random.integers(2))
        else:
            self.agent_colour = self._fixed_colour
        self._opponent_turns()
        return self._observe()

    def step(self, action: int) -> "tuple[np.ndarray, float, bool, bool, dict[str, Any]]":
        if self.state.done[0]:
            raise RuntimeError("the game is over: call reset() before step()")
        _, _, terminated, truncated, _ = self.env.step(action)  # ValueError if illegal, nothing changed
        reward = float(self.state.rewards[0, self.agent_colour])
        more, opp_terminated, opp_truncated = self._opponent_turns()
        obs, info = self._observe()
        return obs, reward + more, terminated or opp_terminated, truncated or opp_truncated, info
