"""PettingZoo AEC environment: one game of Stapeldammen between two agents.

Agents are ``"player_0"`` and ``"player_1"``; ``player_0`` plays the colour
that moves first in the variant (White in Variant I, Black in Variant II).
As in the Gymnasium env (``gym_env``), an agent is colour-blind: its
observation is the board as it sees it (``observation.encode`` in that
agent's canonical view) and its actions are canonical action ids
(``Discrete(200)``, RULES.md). ``observe(agent)`` returns
``{"observation": float32 [NUM_PLANES, 10, 10], "action_mask": int8 [200]}``;
the mask is all zeros for the agent not to move and once the game is over.

One ``step`` is one action: a plain move or a single leap. During a
multi-leap capture the same agent stays selected until the capture ends.
Rewards come only on the step that ends the game: +1 to the winner, -1 to
the loser, 0 to both on a draw or when the ply cap truncates the game. Then
both agents are terminated (or truncated) and must each ``step(None)``.

``reset(options={"fen": text})`` starts from a position text (RULES.md
format) instead of the variant's start position; the agent to move is the
one playing the side to move in the text. Illegal actions raise
``ValueError``.

Use ``env(variant="I")`` (with PettingZoo's order-enforcing wrapper) or
``raw_env`` for the bare environment.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from stapel_rl.env import engine, render
from stapel_rl.env.geometry import NUM_ACTIONS
from stapel_rl.env.gym_env import observation_space as board_observation_space
from stapel_rl.env.observation import action_ids, canonical_mask, encode, from_canonical_actions
from stapel_rl.env.state import State
from stapel_rl.env.variants import get_variant

COLOUR_NAMES = ("White", "Black")


def env(**kwargs: Any) -> AECEnv:
    """The Stapeldammen AEC env (``raw_env(**kwargs)``) wrapped to enforce the API call order.

    There is no out-of-bounds or illegal-action wrapper: ``raw_env.step``
    itself raises ``ValueError`` on any action that is not legal now.
    """
    return wrappers.OrderEnforcingWrapper(raw_env(**kwargs))


class raw_env(AECEnv, EzPickle):
    """One game of Stapeldammen for two agents, turn by turn.

    Args:
        variant: "I" or "II".
        ply_cap: full moves after which a game is truncated (default: the variant's, 600).
        render_mode: "ansi" (text board) or "rgb_array" (an image).
    """

    metadata: "dict[str, Any]" = {
        "render_modes": ["ansi", "rgb_array"],
        "name": "stapeldammen_v0",
        "is_parallelizable": False,
        "render_fps": 2,
    }

    def __init__(self, variant: str = "I", ply_cap: "int | None" = None, render_mode: "str | None" = None):
        EzPickle.__init__(self, variant, ply_cap, render_mode)
        super().__init__()
        self.variant = get_variant(variant)
        if ply_cap is not None:
            self.variant = self.variant.with_ply_cap(ply_cap)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.render_mode = render_mode

        self.state: State = engine.init(self.variant, 1)
        first = int(self.state.current_player[0])
        self.possible_agents = ["player_0", "player_1"]
        self.agents = self.possible_agents[:]
        #: Colour (0 White, 1 Black) each agent plays, and the agent playing each colour.
        self.agent_colour = {"player_0": first, "player_1": 1 - first}
        self.colour_agent = {c: a for a, c in self.agent_colour.items()}

        self.observation_spaces = {
            agent: spaces.Dict(
                {
                    "observation": board_observation_space(),
                    "action_mask": spaces.Box(0, 1, shape=(NUM_ACTIONS,), dtype=np.int8),
                }
            )
            for agent in self.possible_agents
        }
        self.action_spaces = {agent: spaces.Discrete(NUM_ACTIONS) for agent in self.possible_agents}

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # -- helpers ---------------------------------------------------------

    def _to_move(self) -> str:
        return self.colour_agent[int(self.state.current_player[0])]

    def _mask(self) -> np.ndarray:
        """``bool [200]`` legal canonical actions of the side to move (all False once over)."""
        return canonical_mask(self.state)[0]

    def _update_infos(self) -> None:
        to_move = None if self.state.done[0] else self._to_move()
        legal = int(self._mask().sum())
        for agent in self.agents:
            info: "dict[str, Any]" = {
                "colour": self.agent_colour[agent],
                "legal_moves": legal if agent == to_move else 0,
                # The same keys all game (TorchRL's PettingZooWrapper fixes its info spec at reset):
                # +1 White won, -1 Black won, 0 draw, truncation or still running; the Variant II points now.
                "result": int(self.state.rewards[0, 0]) if self.state.done[0] else 0,
                "points": [int(p) for p in self.state.points[0]],
            }
            self.infos[agent] = info

    # -- AEC API ---------------------------------------------------------

    def observe(self, agent: str) -> "dict[str, np.ndarray]":
        colour = self.agent_colour[agent]
        view = self.state
        if int(view.current_player[0]) != colour:
            view = view.replace(current_player=np.array([colour], dtype=np.int8))
        observation = encode(view)[0]
        if agent == self.agent_selection and not self.state.done[0]:
            action_mask = self._mask().astype(np.int8)
        else:
            action_mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        return {"observation": observation, "action_mask": action_mask}

    def reset(self, seed: "int | None" = None, options: "dict | None" = None) -> None:
        """Start a new game; ``options={"fen": text}`` starts from that position (other keys are ignored)."""
        if seed is not None:
            for i, agent in enumerate(self.possible_agents):
                self.action_spaces[agent].seed(seed + i)
                self.observation_spaces[agent].seed(seed + i)
        fen = (options or {}).get("fen")
        if fen is None:
            self.state = engine.init(self.variant, 1)
        else:
            state = engine.from_fens([fen], self.variant)
            if state.done[0]:
                raise ValueError(f"position {fen!r} has no legal move for the side to move: the game is already over")
            self.state = state
        self.agents = self.possible_agents[:]
        self.rewards = {agent: 0.0 for agent in self.agents}
        self._cumulative_rewards = {agent: 0.0 for agent in self.agents}
        self.terminations = {agent: False for agent in self.agents}
        self.truncations = {agent: False for agent in self.agents}
        self.infos: "dict[str, dict[str, Any]]" = {agent: {} for agent in self.agents}
        self._skip_agent_selection = None
        self.agent_selection = self._to_move()
        self._update_infos()

    def step(self, action: "int | None") -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            return self._was_dead_step(action)
        if action is None:
            raise ValueError(f"{agent} is to move and must play an action, got None (only finished agents step None)")
        a = int(action_ids(action))
        mask = self._mask()
        if not (0 <= a < NUM_ACTIONS and mask[a]):
            colour = COLOUR_NAMES[self.agent_colour[agent]]
            raise ValueError(
                f"illegal action {a} for {agent} ({colour}); legal canonical actions: {np.flatnonzero(mask).tolist()}"
            )

        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        board_action = from_canonical_actions(np.array([a]), self.state.current_player)
        self.state = engine.step(self.state, board_action, validate=False)

        if self.state.done[0]:
            for other in self.agents:
                self.rewards[other] = float(self.state.rewards[0, self.agent_colour[other]])
                self.terminations[other] = bool(self.state.terminated[0])
                self.truncations[other] = bool(self.state.truncated[0])
            # As in the classic board games, the opponent of the last mover is selected first.
            self.agent_selection = self.colour_agent[1 - self.agent_colour[agent]]
        else:
            # The same agent again while its multi-leap capture goes on.
            self.agent_selection = self._to_move()
        self._update_infos()
        self._accumulate_rewards()

    def render(self) -> "str | np.ndarray | None":
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render method without specifying any render mode.")
            return None
        if self.render_mode == "ansi":
            return render.ansi(self.state, 0)
        return render.rgb_array(self.state, 0)

    def close(self) -> None:
        pass
