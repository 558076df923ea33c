"""Stapeldammen as an OpenSpiel game: ``import stapel_rl.openspiel`` registers ``python_stapeldammen``.

After the import, ``pyspiel.load_game("python_stapeldammen")`` (Variant I) or
``pyspiel.load_game("python_stapeldammen(variant=II)")`` gives a sequential,
deterministic, perfect-information, zero-sum game with terminal rewards that
OpenSpiel's algorithms (``MCTSBot``, AlphaZero, the evaluation tools) and
TorchRL's ``OpenSpielEnv`` can play. Everything about the rules comes from the
project's engine (``stapel_rl.env.engine``); nothing here decides what is legal.

- Players: player 0 is the side that moves first in the variant (White in
  Variant I, Black in Variant II), as ``player_0`` in the PettingZoo env.
- Actions: the engine's 200 board action ids (``4 * (square - 1) + direction``,
  RULES.md), not the canonical ids of the Gymnasium and PettingZoo envs. One
  action is a plain move or a single leap: a multi-leap capture is several
  actions in a row by the same player, so ``current_player()`` stays the same
  until the capture is complete.
- ``action_to_string``: the step in the project's move text, ``32-28`` for a
  plain move and ``28x19`` for a leap (a whole capture is its leaps' texts).
- Returns: +1 / -1 to the winner / loser when the side to move has no move
  (Variant II: points decide; equal points draw, 0 each). A game reaching the
  ply cap (parameter ``ply_cap``, full moves, default 600) ends with 0 each.
- ``observation_tensor(player)``: the env's planes (``observation.encode``,
  ``[18, 10, 10]`` flattened) in ``player``'s canonical view (the board rotated
  180 degrees with colours swapped for Black), whoever is to move.
- ``str(state)`` and ``observation_string``: the position text (RULES.md), with
  the capture under way appended in the middle of a multi-leap capture.
- Serialisation and ``clone`` are OpenSpiel's own; ``pickle`` works for
  games and states. OpenSpiel serialises a Python game's state as its action
  history plus its ``__dict__`` pickled (base64), and
  ``game.deserialize_state`` / ``pyspiel.deserialize_game_and_state`` (and so
  ``pickle.loads`` of a state) unpickle that: text from elsewhere can run
  code. :func:`state_to_text` / :func:`state_from_text` are the safe pair: a
  header line and the action ids, parsed strictly and replayed through the
  engine, nothing unpickled or evaluated.

Game parameters: ``variant`` ("I" or "II", a string) and ``ply_cap`` (an
int). An unknown variant, or an illegal action passed to ``apply_action``,
raises ``ValueError`` naming what is allowed; the state is not changed.
``pyspiel.load_game`` itself checks parameter names and types before the game
is made and raises ``pyspiel.SpielError`` ("Unknown parameter 'x'. Available
parameters are: ply_cap, variant"); :func:`load_game` here checks them first
and raises ``ValueError`` instead.
"""

from __future__ import annotations

import re

import numpy as np
import pyspiel
from open_spiel.python.observation import IIGObserverForPublicInfoGame

from stapel_rl.env import engine
from stapel_rl.env import fen as fen_text
from stapel_rl.env.geometry import JUMP, NEIGHBOR, NUM_ACTIONS
from stapel_rl.env.notation import move_text
from stapel_rl.env.observation import NUM_PLANES, encode
from stapel_rl.env.state import State
from stapel_rl.env.variants import VARIANTS, Variant, get_variant

GAME_NAME = "python_stapeldammen"
NUM_PLAYERS = 2
#: The most leaps one capture can make: each captures one of the opponent's (at most 20) men,
#: which goes under the capturing stack and cannot be captured again in that move.
MAX_LEAPS_PER_MOVE = 20
#: Shape of ``observation_tensor`` before flattening: the env's planes.
OBSERVATION_SHAPE = (NUM_PLANES, 10, 10)
DEFAULT_PARAMS = {"variant": "I", "ply_cap": 600}

GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Python Stapeldammen",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.DETERMINISTIC,
    information=pyspiel.GameType.Information.PERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=NUM_PLAYERS,
    min_num_players=NUM_PLAYERS,
    provides_information_state_string=True,
    provides_information_state_tensor=False,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=DEFAULT_PARAMS,
)


def _game_params(params: "dict | None") -> "tuple[dict, Variant]":
    """The full parameters (defaults filled in) and the engine variant they name; ValueError if bad."""
    params = dict(params or {})
    unknown = sorted(set(params) - set(DEFAULT_PARAMS))
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {unknown} for {GAME_NAME}: expected {sorted(DEFAULT_PARAMS)} "
            f"(variant one of {sorted(VARIANTS)}, ply_cap a positive int)"
        )
    full = {**DEFAULT_PARAMS, **params}
    try:
        variant = get_variant(str(full["variant"]))
    except ValueError:
        raise ValueError(
            f"unknown variant {full['variant']!r} for {GAME_NAME}: expected one of {sorted(VARIANTS)}"
        ) from None
    ply_cap = full["ply_cap"]
    if isinstance(ply_cap, bool) or not isinstance(ply_cap, (int, np.integer)) or ply_cap < 1:
        raise ValueError(f"ply_cap must be a positive int (full moves), got {ply_cap!r}")
    variant = variant.with_ply_cap(int(ply_cap))
    return {"variant": variant.name, "ply_cap": int(ply_cap)}, variant


def load_game(variant: str = "I", **params: object) -> "StapeldammenGame":
    """``pyspiel.load_game("python_stapeldammen", ...)`` with the parameters checked here first (ValueError)."""
    params, _ = _game_params({"variant": variant, **params})
    return pyspiel.load_game(GAME_NAME, params)


class StapeldammenGame(pyspiel.Game):
    """Stapeldammen (Variant I or II) for OpenSpiel; see the module docstring."""

    def __init__(self, params: "dict | None" = None):
        params, self.variant = _game_params(params)
        info = pyspiel.GameInfo(
            num_distinct_actions=NUM_ACTIONS,
            max_chance_outcomes=0,
            num_players=NUM_PLAYERS,
            min_utility=-1.0,
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=MAX_LEAPS_PER_MOVE * self.variant.ply_cap,
        )
        super().__init__(GAME_TYPE, info, params)
        #: The engine's start state (batch of one), copied by every new state.
        self.start: State = engine.init(self.variant, 1)
        #: The colour (0 White, 1 Black) player 0 plays: the one that moves first.
        self.first_colour = int(self.start.current_player[0])

    def new_initial_state(self) -> "StapeldammenState":
        return StapeldammenState(self)

    def make_py_observer(
        self, iig_obs_type: "pyspiel.IIGObservationType | None" = None, params: "dict | None" = None
    ) -> "BoardObserver | IIGObserverForPublicInfoGame":
        if iig_obs_type is None or (iig_obs_type.public_info and not iig_obs_type.perfect_recall):
            return BoardObserver(self, params)
        return IIGObserverForPublicInfoGame(iig_obs_type, params)


class StapeldammenState(pyspiel.State):
    """One game: the engine state of a batch of one, stepped by ``engine.step``."""

    def __init__(self, game: StapeldammenGame):
        super().__init__(game)
        self._first_colour = game.first_colour
        self.engine_state: State = game.start

    # -- the engine's view -------------------------------------------------

    def colour(self, player: int) -> int:
        """The colour (0 White, 1 Black) ``player`` plays."""
        return int(player) ^ self._first_colour

    def player(self, colour: int) -> int:
        """The player who plays ``colour``."""
        return int(colour) ^ self._first_colour

    # -- OpenSpiel API -----------------------------------------------------

    def current_player(self) -> int:
        if self.engine_state.done[0]:
            return pyspiel.PlayerId.TERMINAL
        return self.player(self.engine_state.current_player[0])

    def _legal_actions(self, player: int) -> "list[int]":
        if player != self.current_player():
            return []
        return np.flatnonzero(self.engine_state.legal_action_mask[0]).tolist()

    def _apply_action(self, action: int) -> None:
        action = int(action)
        mask = self.engine_state.legal_action_mask[0]
        if not (0 <= action < NUM_ACTIONS and mask[action]):
            legal = {a: self._action_to_string(0, a) for a in np.flatnonzero(mask).tolist()}
            raise ValueError(f"illegal action {action} in {self}; legal actions: {legal}")
        self.engine_state = engine.step(self.engine_state, np.array([action]), validate=False)

    def _action_to_string(self, player: int, action: int) -> str:
        """The step in move text (``32-28``, ``28x19``) as it would be played in this state."""
        action = int(action)
        if not 0 <= action < NUM_ACTIONS:
            return f"action {action} (not an action id: expected 0..{NUM_ACTIONS - 1})"
        src, d = divmod(action, 4)
        near = int(NEIGHBOR[src, d])
        if near < 0:
            return f"action {action} (off the board)"
        dst = int(JUMP[src, d]) if self.engine_state.height[0, near] > 0 else near
        if dst < 0:
            return f"action {action} (off the board)"
        return move_text([src, dst])

    def is_terminal(self) -> bool:
        return bool(self.engine_state.done[0])

    def returns(self) -> "list[float]":
        s = self.engine_state
        return [float(s.rewards[0, self.colour(p)]) + 0.0 for p in range(NUM_PLAYERS)]  # + 0.0: no -0.0

    def __str__(self) -> str:
        s = self.engine_state
        text = fen_text.format_fen(s.height[0].tolist(), s.colours[0].tolist(), int(s.current_player[0]))
        if s.capturing[0] >= 0:
            text += f" (capturing from {int(s.capturing[0]) + 1}, last leapt {int(s.last_leapt[0]) + 1})"
        return text


class BoardObserver:
    """Observer for OpenSpiel (the ``PyObserver`` protocol): the env's planes from a player's view."""

    def __init__(self, game: StapeldammenGame, params: "dict | None"):
        if params:
            raise ValueError(f"observation parameters are not supported; got {params}")
        self.tensor = np.zeros(int(np.prod(OBSERVATION_SHAPE)), np.float32)
        self.dict = {"observation": self.tensor.reshape(OBSERVATION_SHAPE)}

    def set_from(self, state: StapeldammenState, player: int) -> None:
        view = state.engine_state
        colour = state.colour(player)
        if int(view.current_player[0]) != colour:
            view = view.replace(current_player=np.array([colour], dtype=np.int8))
        self.dict["observation"][...] = encode(view)[0]

    def string_from(self, state: StapeldammenState, player: int) -> str:
        return str(state)


TEXT_HEADER = "stapeldammen"
_HEADER_RE = re.compile(r"stapeldammen variant=(?P<variant>[A-Za-z]{1,8})(?: ply_cap=(?P<ply_cap>[0-9]{1,7}))?")
_ACTION_RE = re.compile(r"[0-9]{1,3}")


def state_to_text(state: StapeldammenState) -> str:
    """The state as plain text: ``stapeldammen variant=I ply_cap=600``, then the action ids played, one line.

    :func:`state_from_text` rebuilds it by replaying the actions; unlike OpenSpiel's serialisation,
    nothing in the text is unpickled.
    """
    if not isinstance(state, StapeldammenState):
        raise ValueError(f"expected a {GAME_NAME} state, got {type(state).__name__}")
    params = state.get_game().get_parameters()
    header = f"{TEXT_HEADER} variant={params['variant']} ply_cap={params['ply_cap']}"
    return f"{header}\n{' '.join(str(a) for a in state.history())}\n"


def state_from_text(text: str) -> StapeldammenState:
    """The state :func:`state_to_text` wrote: the header's game, the actions replayed from the start.

    The first line is ``stapeldammen variant=V`` with an optional `` ply_cap=N`` (default 600); the
    rest are action ids (0..199, ASCII digits) separated by spaces or newlines. Anything else (bytes, a
    wrong header, a token that is not an action id, an illegal action, actions after the game ended)
    raises ``ValueError`` naming the problem. The text is only matched and parsed as ints, never
    unpickled or evaluated, so it is safe to take from untrusted sources.
    """
    if not isinstance(text, str):
        raise ValueError(f"state text must be str, got {type(text).__name__}")
    header, _, body = text.partition("\n")
    match = _HEADER_RE.fullmatch(header.rstrip("\r"))
    if match is None:
        raise ValueError(
            f"bad state text header {header[:80]!r}: expected '{TEXT_HEADER} variant=I' or "
            f"'{TEXT_HEADER} variant=II ply_cap=600' on the first line"
        )
    params: dict = {"variant": match["variant"]}
    if match["ply_cap"] is not None:
        params["ply_cap"] = int(match["ply_cap"])
    game = load_game(**params)
    tokens = body.split()
    if len(tokens) > game.max_game_length():
        raise ValueError(f"{len(tokens)} actions: more than a game can last ({game.max_game_length()})")
    state = game.new_initial_state()
    for i, token in enumerate(tokens, 1):
        if _ACTION_RE.fullmatch(token) is None:
            raise ValueError(f"action {i} is {token[:20]!r}: expected an action id (0..{NUM_ACTIONS - 1})")
        if state.is_terminal():
            raise ValueError(f"action {i} ({token}) comes after the end of the game")
        try:
            state.apply_action(int(token))
        except ValueError as err:
            raise ValueError(f"action {i}: {err}") from None
    return state


pyspiel.register_game(GAME_TYPE, StapeldammenGame)
