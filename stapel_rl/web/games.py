"""Live games of the web server: one ``Game`` per game, a lock each, a bounded store.

The rules, the move texts and the history (for undo) are those of
``stapel_rl.eval.game.Game``, which ``stapel-play`` keeps too; this module
adds what a server needs around it: a start from any position, a lock so
that one game's agent move never interleaves with another request on the
same game, the JSON view the API returns, and a store that drops the least
recently used games beyond its size.
"""

from __future__ import annotations

import collections
import secrets
import threading

from stapel_rl.env import expand_full_moves, to_fens
from stapel_rl.env.fen import format_stack
from stapel_rl.env.notation import parse_move
from stapel_rl.env.render import status
from stapel_rl.env.state import State
from stapel_rl.env.variants import get_variant
from stapel_rl.eval.agents import Agent
from stapel_rl.eval.game import Game
from stapel_rl.eval.pdn import RESULTS

COLOURS = ("white", "black")


class GameError(ValueError):
    """A request the game cannot carry out (nothing was changed); the message says why."""


def board(state: State) -> "list[str]":
    """The 50 stacks of game 0, top man first (``""`` for a vacant square), as the page draws them."""
    return [format_stack(int(h), int(c)) for h, c in zip(state.height[0], state.colours[0], strict=True)]


def squares_of(text: str) -> "list[int]":
    """Square numbers (1..50) a move text passes through, e.g. ``[28, 19, 10]``."""
    return parse_move(text)[0]


def result_code(state: State) -> "str | None":
    """PDN result of a finished game ("2-0", "0-2", "1-1", "*" when truncated), None while it runs."""
    if bool(state.truncated[0]):
        return "*"
    if bool(state.terminated[0]):
        return RESULTS[int(state.rewards[0, 0])]
    return None


def position_view(state: State) -> dict:
    """What the page needs to draw and play a position (every rule answered by the engine)."""
    over = bool(state.done[0])
    texts = [] if over else expand_full_moves(state).texts()
    view = {
        "fen": to_fens(state)[0],
        "variant": state.variant.name,
        "to_move": COLOURS[int(state.current_player[0])],
        "ply": int(state.ply[0]),
        "board": board(state),
        "legal_moves": texts,
        "legal_paths": [squares_of(t) for t in texts],
        "result": result_code(state),
        "status": status(state),
    }
    if state.variant.points_decide:
        view["points"] = {"white": int(state.points[0, 0]), "black": int(state.points[0, 1])}
    return view


class WebGame:
    """A person against an agent, from the variant's start or from ``fen``.

    Args:
        agent: the opponent, already built from an offered spec.
        variant: "I" or "II".
        human: the person's colour, "white" or "black".
        fen: a start position (position text of RULES.md); None for the variant's start.
        seed: seeds the agent's random choices.
    """

    def __init__(
        self,
        agent: Agent,
        variant: str = "I",
        human: str = "white",
        fen: "str | None" = None,
        seed: "int | None" = None,
    ):
        if human not in COLOURS:
            raise GameError(f"human must be 'white' or 'black', got {human!r}")
        try:
            self.variant = get_variant(variant)
        except ValueError as problem:
            raise GameError(str(problem)) from None
        if seed is not None and seed < 0:
            raise GameError(f"seed must be a whole number >= 0, got {seed}")
        self.id = secrets.token_hex(8)
        try:
            self.session = Game(agent, self.variant, human=COLOURS.index(human), seed=seed, start_fen=fen)
        except ValueError as problem:
            raise GameError(f"malformed FEN: {problem}") from None
        self.start_fen = to_fens(self.session.start)[0]
        self.lock = threading.Lock()
        self.agent_move: "str | None" = None  # the agent's reply in the last request

    # ------------------------------------------------------------ actions (call with ``lock`` held)

    def agent_turns(self) -> "list[str]":
        """Let the agent move while it is its turn; the texts it played."""
        played = []
        while not self.session.over and not self.session.human_to_move:
            played.append(self.session.play_agent())
        self.agent_move = played[-1] if played else None
        return played

    def play(self, text: object) -> None:
        """The person's move, then the agent's reply; nothing changes if the move is refused."""
        if not isinstance(text, str):
            raise GameError(f"move must be a string such as '32-28', got {text!r}")
        if self.session.over:
            raise GameError(f"the game is over ({status(self.session.state)}): no more moves")
        if not self.session.human_to_move:
            raise GameError("it is not your turn")
        try:
            self.session.play_human(text)
        except ValueError as problem:
            raise GameError(str(problem)) from None
        try:
            self.agent_turns()
        except Exception:
            # An agent that fails takes the person's move back with it: the request changed nothing.
            self.session.undo()
            raise

    def undo(self) -> None:
        """Take back the person's last move and the agent's reply."""
        if not self.session.undo():
            raise GameError("nothing to undo: you have not moved yet")
        self.agent_move = None

    def pdn(self) -> str:
        """The game so far in PDN (with a FEN tag when it did not start at the variant's start)."""
        names = [self.session.agent.name] * 2
        names[self.session.human] = "Human"
        tags = {"Event": "stapel-serve", "White": names[0], "Black": names[1]}
        return self.session.pdn(tags, fen=self.start_fen)

    def view(self) -> dict:
        """The API's answer: id, position (board, legal moves and paths), moves so far, result."""
        history = self.session.history
        out = {
            "id": self.id,
            "agent": self.session.agent.name,
            "human": COLOURS[self.session.human],
            "start_fen": self.start_fen,
            **position_view(self.session.state),
            "moves": [turn.text for turn in history],
            "last_move": squares_of(history[-1].text) if history else None,
            "agent_move": self.agent_move,
        }
        # The banner in words, from the person's side ("result: White wins (...) - you win").
        out["banner"] = self.session.result_line().removeprefix("result: ") if self.session.over else None
        return out


class GameStore:
    """Games by id, at most ``limit``: adding one more drops the least recently used."""

    def __init__(self, limit: int = 64):
        if limit < 1:
            raise ValueError(f"the game limit must be at least 1, got {limit}")
        self.limit = limit
        self._games: "collections.OrderedDict[str, WebGame]" = collections.OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._games)

    def add(self, game: WebGame) -> "list[str]":
        """Keep ``game``; the ids dropped to make room."""
        with self._lock:
            self._games[game.id] = game
            dropped = []
            while len(self._games) > self.limit:
                dropped.append(self._games.popitem(last=False)[0])
            return dropped

    def get(self, game_id: str) -> WebGame:
        """The game ``game_id`` (now the most recently used); ``KeyError`` if unknown or dropped."""
        with self._lock:
            game = self._games.get(game_id)
            if game is None:
                raise KeyError(f"unknown game id {game_id!r} (never created, or dropped as the oldest idle game)")
            self._games.move_to_end(game_id)
            return game
