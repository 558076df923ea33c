"""stapel-play: play Stapeldammen against an agent in the terminal.

    stapel-play                                  # you are White against greedy, Variant I
    stapel-play --agent random --colour black --variant II --seed 1
    stapel-play --agent mcts:runs/I_default/checkpoints/ckpt_00000004.pt:sims=64

Before each of your moves the board is drawn (owner and height per square,
then every stack's men top first) and the legal moves are listed on one line
starting ``legal moves:``. Type a move in PDN at the ``your move> `` prompt:
``32-28`` for a plain move, ``28x19x10`` (the full path) for a capture, or
``28x10`` when exactly one legal capture goes from 28 to 10. A multi-leap
capture is played whole; the agent's reply is printed as PDN too.

Commands at the prompt:

    moves          list the legal moves again
    board          draw the board again
    hint           what the agent would play for you here (not played)
    undo           take back your last move and the agent's reply to it
    save FILE      write the game so far as PDN (tags White, Black, Result)
    help           this list
    quit           leave (so does end of input, e.g. Ctrl-D)

An illegal or malformed move prints why and asks again. When the game ends
the result is printed (Variant II with the points) and the prompt becomes
``game over> ``: ``undo``, ``save FILE``, ``board``, ``help`` and ``quit``
still work there, and end of input exits with status 0.

Input is read line by line, so a script can play through a pipe; the lines
read are then echoed after the prompt to keep the transcript readable.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Callable, TextIO

import numpy as np

from stapel_rl._malloc import tune_malloc
from stapel_rl.env import engine
from stapel_rl.env.notation import FullMoves, expand_full_moves, find_move
from stapel_rl.env.render import SIDE_NAMES, ansi
from stapel_rl.env.state import State
from stapel_rl.env.variants import Variant, get_variant
from stapel_rl.eval.agents import Agent, make_agent
from stapel_rl.eval.pdn import write_game

#: More actions than any full move can take (a capture takes at most 20 men).
MAX_ACTIONS_PER_MOVE = 64
HUMAN_NAME = "Human"
PROMPT = "your move> "
GAME_OVER_PROMPT = "game over> "

COMMANDS_HELP = """\
commands:
  32-28, 28x19x10   play a move (PDN; a capture as its full path, or from x to
                    when only one legal capture matches)
  moves             list the legal moves
  board             draw the board again
  hint              what the agent would play for you here
  undo              take back your last move and the agent's reply
  save FILE         write the game so far as PDN
  help              this list
  quit              leave (end of input does too)"""


@dataclasses.dataclass
class Turn:
    """One full move of the game: the position before it, its actions, its text and who played it."""

    before: State
    actions: "list[int]"
    text: str
    by_human: bool


def _actions_of(moves: FullMoves, index: int) -> "list[int]":
    return [int(a) for a in moves.actions[index] if a >= 0]


class PlaySession:
    """A game between a person (reading lines) and an agent, with history for undo.

    Args:
        agent: the opponent, called at every decision point of its turns.
        variant: "I" or "II".
        human: the person's colour, 0 = White, 1 = Black.
        seed: seeds the agent's moves and, separately, the hints.
        out: where the transcript goes (flushed after every line).
        start_fen: the position to start from (default: the variant's start);
            malformed text raises ``ValueError``.
    """

    def __init__(
        self,
        agent: Agent,
        variant: "Variant | str" = "I",
        human: int = 0,
        seed: "int | None" = None,
        out: "TextIO | None" = None,
        start_fen: "str | None" = None,
    ):
        self.agent = agent
        self.variant = get_variant(variant)
        self.human = int(human)
        self.out = out if out is not None else sys.stdout
        game_seed, hint_seed = np.random.SeedSequence(seed).spawn(2)
        self.rng = np.random.default_rng(game_seed)
        self.hint_rng = np.random.default_rng(hint_seed)
        self.start = engine.init(self.variant) if start_fen is None else engine.from_fens([start_fen], self.variant)
        self.history: "list[Turn]" = []
        self._moves: "tuple[State, FullMoves] | None" = None
        # The position after the last turn, kept so that reading `state` does not replay it.
        self._cached_state: "State | None" = None
        self._need_board = True  # draw the board before the next prompt
        self._announced = False  # the result of the finished game has been printed
        self.commands: "dict[str, Callable[[str], bool]]" = {
            "moves": self._cmd_moves,
            "board": self._cmd_board,
            "hint": self._cmd_hint,
            "undo": self._cmd_undo,
            "save": self._cmd_save,
            "help": self._cmd_help,
            "quit": self._cmd_quit,
            "exit": self._cmd_quit,
        }

    # ------------------------------------------------------------ game state

    @staticmethod
    def _after(turn: Turn) -> State:
        state = turn.before
        for a in turn.actions:
            state = engine.step(state, np.array([a]), validate=False)
        return state

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

    @property
    def state(self) -> State:
        """The current position (always at the start of a turn)."""
        if not self.history:
            return self.start
        if self._cached_state is None:
            self._cached_state = self._after(self.history[-1])
        return self._cached_state

    def agent_full_move(self, state: State, rng: np.random.Generator) -> "tuple[list[int], str]":
        """The agent's full move in ``state``: its actions and PDN text (the position is not changed)."""
        moves = expand_full_moves(state)
        actions: "list[int]" = []
        current = state
        for _ in range(MAX_ACTIONS_PER_MOVE):
            action = int(np.asarray(self.agent(current, rng)).reshape(-1)[0])
            try:
                current = engine.step(current, np.array([action]))
            except ValueError:
                raise RuntimeError(f"agent {self.agent.name!r} chose an illegal action {action}") from None
            actions.append(action)
            if int(current.capturing[0]) < 0:
                break
        else:
            raise RuntimeError(f"agent {self.agent.name!r} did not finish its capture in {MAX_ACTIONS_PER_MOVE} actions")
        for i in range(moves.parent.size):
            if _actions_of(moves, i) == actions:
                return actions, moves.texts()[i]
        raise RuntimeError(f"agent {self.agent.name!r} played actions {actions}, which make no legal full move")

    def play_agent(self) -> str:
        """Let the agent play its full move; returns the move text."""
        before = self.state
        actions, text = self.agent_full_move(before, self.rng)
        self._push(before, actions, text, by_human=False)
        return text

    def play_human(self, text: str) -> str:
        """Play the person's move written ``text``; raises ``ValueError`` (with the legal moves) if it is not legal."""
        moves = self.legal()
        index = find_move(moves, text.strip().lower())
        self._push(self.state, _actions_of(moves, index), moves.texts()[index], by_human=True)
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

    # ------------------------------------------------------------ output

    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def show_board(self) -> None:
        self.say()
        self.say(ansi(self.state, 0, full=True))

    def show_moves(self) -> None:
        texts = self.legal().texts()
        self.say(f"legal moves: {', '.join(texts) if texts else 'none'}")

    def _name(self, colour: int) -> str:
        return HUMAN_NAME if colour == self.human else self.agent.name

    # ------------------------------------------------------------ commands

    def handle(self, line: str) -> bool:
        """Carry out one input line; False once the session should end."""
        words = line.split()
        if not words:
            return True
        word = words[0].lower()
        rest = line.strip()[len(words[0]):].strip()
        command = self.commands.get(word)
        if command is not None:
            return command(rest)
        if self.over:
            self.say("the game is over; commands here: undo, save FILE, board, help, quit")
            return True
        try:
            text = self.play_human(line)
        except ValueError as problem:
            self.say(str(problem))
            if not any(c.isdigit() for c in word):
                self.say("(type 'help' for the commands)")
            return True
        self.say(f"{SIDE_NAMES[self.human]} ({HUMAN_NAME}) plays {text}")
        self._need_board = True
        return True

    def _cmd_moves(self, rest: str) -> bool:
        if self.over:
            self.say("the game is over: no legal moves")
        else:
            self.show_moves()
        return True

    def _cmd_board(self, rest: str) -> bool:
        self.show_board()
        if not self.over:
            self.show_moves()
        return True

    def _cmd_hint(self, rest: str) -> bool:
        if self.over:
            self.say("the game is over: no hint")
            return True
        _, text = self.agent_full_move(self.state, self.hint_rng)
        self.say(f"hint: {self.agent.name} would play {text}")
        return True

    def _cmd_undo(self, rest: str) -> bool:
        removed = self.undo()
        if not removed:
            self.say("nothing to undo: you have not moved yet")
            return True
        self.say(f"undone: {' '.join(turn.text for turn in removed)}")
        self._need_board = True
        self._announced = False
        return True

    def _cmd_save(self, rest: str) -> bool:
        if not rest:
            self.say("usage: save FILE.pdn")
            return True
        tags = {"Event": "stapel-play", "White": self._name(0), "Black": self._name(1)}
        try:
            text = write_game(self.variant, self.actions(), tags)
            with open(rest, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as problem:
            self.say(f"could not save to {rest!r}: {problem.strerror or problem}")
            return True
        self.say(f"saved {len(self.history)} moves to {rest}")
        return True

    def _cmd_help(self, rest: str) -> bool:
        self.say(COMMANDS_HELP)
        return True

    def _cmd_quit(self, rest: str) -> bool:
        self.say("bye")
        return False

    # ------------------------------------------------------------ main loop

    def run(self, read: "Callable[[str], str]" = input, echo: bool = False) -> int:
        """Play until ``quit`` or end of input; returns the exit status (0)."""
        self.say(f"Stapeldammen, Variant {self.variant.name}: you ({HUMAN_NAME}) play "
                 f"{SIDE_NAMES[self.human]}, {self.agent.name} plays {SIDE_NAMES[1 - self.human]}.")
        self.say("White moves up the board (towards 1-5), Black down (towards 46-50). Type 'help' for the commands.")
        while True:
            if not self.over and not self.human_to_move:
                mover = int(self.state.current_player[0])
                text = self.play_agent()
                self.say(f"{SIDE_NAMES[mover]} ({self.agent.name}) plays {text}")
                self._need_board = True
                continue
            if self.over and not self._announced:
                self.show_board()
                self.say(self.result_line())
                self.say("game over: 'undo', 'save FILE' and 'quit' still work (end of input exits)")
                self._announced = True
                self._need_board = False
            elif self._need_board and not self.over:
                self.show_board()
                self.show_moves()
                self._need_board = False
            self.out.flush()
            try:
                line = read(GAME_OVER_PROMPT if self.over else PROMPT)
            except EOFError:
                self.say()
                self.say("end of input: bye")
                return 0
            if echo:
                self.say(line)
            try:
                if not self.handle(line):
                    return 0
            except ValueError as problem:  # anything the rules layer rejects: report, keep going
                self.say(f"error: {problem}")


def main(argv: "list[str] | None" = None) -> int:
    tune_malloc()
    parser = argparse.ArgumentParser(prog="stapel-play", description=__doc__.split("\n")[0],
                                     epilog="Commands at the prompt: moves, board, hint, undo, save FILE, help, quit.")
    parser.add_argument("--agent", default="greedy", help="opponent spec: random, greedy, mcts:PATH:sims=N, "
                        "policy:PATH, alphabeta:N (default greedy)")
    parser.add_argument("--variant", default="I", help="I or II (default I)")
    parser.add_argument("--colour", "--color", dest="colour", default="white", type=str.lower,
                        choices=["white", "black"], help="your colour (default white)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the agent's random choices")
    args = parser.parse_args(argv)
    try:
        variant = get_variant(args.variant)
    except ValueError as problem:
        parser.error(str(problem))
    try:
        agent = make_agent(args.agent)
    except Exception as problem:  # a bad spec or an unreadable checkpoint
        print(f"stapel-play: cannot build agent {args.agent!r}: {problem}", file=sys.stderr)
        return 2
    session = PlaySession(agent, variant, human=0 if args.colour == "white" else 1, seed=args.seed)
    interactive = sys.stdin.isatty()
    if interactive:
        try:
            import readline  # noqa: F401  line editing and history for input()
        except ImportError:
            pass
    try:
        return session.run(input, echo=not interactive)
    except KeyboardInterrupt:
        print("\ninterrupted", flush=True)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as problem:  # an agent that fails mid-game: say so without a traceback
        print(f"stapel-play: error: {problem}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
