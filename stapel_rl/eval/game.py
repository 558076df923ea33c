"""One game with history: an agent's full move, a person's move by text, undo, PDN.

The interfaces build on it: ``stapel-play`` (``cli/play.py``) and the web
board (``web/games.py``) keep a ``Game``; ``stapel-engine`` asks
``agent_full_move`` for its ``bestmove``. An agent is called at every
decision point of its turn (between the leaps of a capture too), so a full
move is one or more board actions; ``agent_full_move`` collects them, checks
them and names the move in PDN.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from stapel_rl.env import engine
from stapel_rl.env.notation import FullMoves, expand_full_moves, find_move
from stapel_rl.env.render import SIDE_NAMES
from stapel_rl.env.state import State
from stapel_rl.env.variants import Variant, get_variant
from stapel_rl.eval.agents import Agent
from stapel_rl.eval.pdn import write_game

#: More actions than any full move can take (a capture takes at most 20 men).
MAX_ACTIONS_PER_MOVE = 64


@dataclasses.dataclass
class FullMove:
    """An agent's full move: its board actions, its PDN text and how many times the agent was asked."""

    actions: "list[int]"
    text: str
    decisions: int


def move_actions(moves: FullMoves, index: int) -> "list[int]":
    """The board actions of full move ``index`` of ``moves``."""
    return [int(a) for a in moves.actions[index] if a >= 0]


def agent_full_move(
    agent: Agent,
    state: State,
    rng: np.random.Generator,
    *,
    ask_forced: bool = True,
    before_decision: "Callable[[], None] | None" = None,
    after_decision: "Callable[[], None] | None" = None,
) -> FullMove:
    """``agent``'s full move in game 0 of ``state`` (at the start of a turn); the position is not changed.

    With ``ask_forced=False`` a decision point with one legal action is played
    without asking (a forced leap: there is nothing to choose), and a position
    with one legal full move asks nothing at all. ``before_decision`` runs
    before each call of the agent (``stapel-engine`` gives a timed agent the
    time left there), ``after_decision`` after it (and reads what it
    searched). An illegal action, or actions that end in no legal full move,
    raise ``ValueError`` naming the agent.
    """
    moves = expand_full_moves(state)
    if not ask_forced and moves.parent.size == 1:
        return FullMove(move_actions(moves, 0), moves.texts()[0], 0)
    actions: "list[int]" = []
    current, decisions = state, 0
    for _ in range(MAX_ACTIONS_PER_MOVE):
        legal = current.legal_action_mask[0]
        if not ask_forced and legal.sum() == 1:
            action = int(np.flatnonzero(legal)[0])
        else:
            if before_decision is not None:
                before_decision()
            chosen = np.asarray(agent(current, rng)).reshape(-1)
            decisions += 1
            if after_decision is not None:
                after_decision()
            if chosen.shape != (1,):
                raise ValueError(f"agent {agent.name!r} returned {chosen.shape[0]} actions for one game")
            action = int(chosen[0])
            if not 0 <= action < legal.shape[0] or not legal[action]:
                raise ValueError(f"agent {agent.name!r} chose an illegal action {action}")
        current = engine.step(current, np.array([action], dtype=np.int64), validate=False)
        actions.append(action)
        if int(current.capturing[0]) < 0 or bool(current.done[0]):
            break
    else:
        raise ValueError(f"agent {agent.name!r} did not finish its capture in {MAX_ACTIONS_PER_MOVE} actions")
    for i in range(moves.parent.size):
        if move_actions(moves, i) == actions:
            return FullMove(actions, moves.texts()[i], decisions)
    raise ValueError(f"agent {agent.name!r} played actions {actions}, which make no legal full move")


@dataclasses.dataclass
class Turn:
    """One full move of the game: the position before it, its actions, its text and who played it."""

    before: State
    actions: "list[int]"
    text: str
    by_human: bool


class Game:
    """A person against an agent, one game, with history for undo.

    Args:
        agent: the opponent, called at every decision point of its turns.
        variant: "I" or "II".
        human: the person's colour, 0 = White, 1 = Black.
        seed: seeds the agent's moves and, separately, the hints.
        start_fen: the position to start from (default: the variant's start);
            malformed text raises ``ValueError``.
    """

    def __init__(
        self,
        agent: Agent,
        variant: "Variant | str" = "I",
        human: int = 0,
        seed: "int | None" = None,
        start_fen: "str | None" = None,
    ):
        self.agent = agent
        self.variant = get_variant(variant)
        self.human = int(human)
        game_seed, hint_seed = np.random.SeedSequence(seed).spawn(2)
        self.rng = np.random.default_rng(game_seed)
        self.hint_rng = np.random.default_rng(hint_seed)
        self.start = engine.init(self.variant) if start_fen is None else engine.from_fens([start_fen], self.variant)
        self.history: "list[Turn]" = []
        self._moves: "tuple[State, FullMoves] | None" = None
        # The position after the last turn, kept so that reading `state` does not replay it.
        self._cached_state: "State | None" = None

    @staticmethod
    def _after(turn: Turn) -> State:
        state = turn.before
        for a in turn.actions:
            state = engine.step(state, np.array([a]), validate=False)
        return state

    @property
    def state(self) -> State:
        """The current position (always at the start of a turn)."""
        if not self.history:
            return self.start
        if self._cached_state is None:
            self._cached_state = self._after(self.history[-1])
        return self._cached_state

    @property
    def over(self) -> bool:
        return bool(self.state.done[0])

    @property
    def human_to_move(self) -> bool:
        return not self.over and int(self.state.current_player[0]) == self.human

    def legal(self) -> FullMoves:
        """The full moves of the current position (cached per position)."""
        state = self.state
        if self._moves is None or self._moves[0] is not state:
            self._moves = (state, expand_full_moves(state))
        return self._moves[1]

    def actions(self) -> "list[int]":
        """Every board action of the game so far, as ``write_game`` wants them."""
        return [a for turn in self.history for a in turn.actions]

    def _push(self, before: State, actions: "list[int]", text: str, by_human: bool) -> None:
        turn = Turn(before, actions, text, by_human)
        after = self._after(turn)
        self.history.append(turn)
        self._moves = None
        self._cached_state = after

    def hint(self) -> str:
        """What the agent would play for the side to move (not played)."""
        return agent_full_move(self.agent, self.state, self.hint_rng).text

    def play_agent(self) -> str:
        """Let the agent play its full move; returns the move text."""
        before = self.state
        move = agent_full_move(self.agent, before, self.rng)
        self._push(before, move.actions, move.text, by_human=False)
        return move.text

    def play_human(self, text: str) -> str:
        """Play the person's move written ``text``; raises ``ValueError`` (with the legal moves) if it is not legal."""
        moves = self.legal()
        index = find_move(moves, text.strip().lower())
        self._push(self.state, move_actions(moves, index), moves.texts()[index], by_human=True)
        return moves.texts()[index]

    def undo(self) -> "list[Turn]":
        """Take back the person's last full move and everything after it; returns the turns removed."""
        last = max((i for i, turn in enumerate(self.history) if turn.by_human), default=None)
        if last is None:
            return []
        removed = self.history[last:]
        del self.history[last:]
        self._moves = None
        self._cached_state = None
        return removed

    def result_line(self) -> str:
        """``result: ...`` in words, for a finished game."""
        state = self.state
        if bool(state.truncated[0]):
            return f"result: unfinished - stopped at the ply cap ({state.variant.ply_cap} plies), no winner"
        stuck = SIDE_NAMES[int(state.current_player[0])]
        score = float(state.rewards[0, 0])
        winner = None if score == 0 else (0 if score > 0 else 1)
        outcome = "draw" if winner is None else f"{SIDE_NAMES[winner]} wins"
        if self.variant.points_decide:
            white, black = (int(p) for p in state.points[0])
            outcome += f" on points, White {white} - Black {black}"
        you = "a draw" if winner is None else ("you win" if winner == self.human else "you lose")
        return f"result: {outcome} ({stuck} cannot move) - {you}"

    def pdn(self, tags: "dict[str, str]", fen: "str | None" = None) -> str:
        """The game so far in PDN, with ``tags`` (and a FEN tag for a ``fen`` start)."""
        return write_game(self.variant, self.actions(), tags, fen=fen)
