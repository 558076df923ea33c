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
import sys
from collections.abc import Callable
from typing import TextIO

from stapel_rl._malloc import tune_malloc
from stapel_rl.cli.threads import add_threads_option, apply_threads_option
from stapel_rl.env.render import SIDE_NAMES, ansi
from stapel_rl.env.variants import Variant, get_variant
from stapel_rl.eval.agents import Agent, make_agent
from stapel_rl.eval.game import Game

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


class PlaySession(Game):
    """A ``Game`` played in the terminal: a person reading and typing lines against an agent.

    The arguments are ``Game``'s, and ``out``: where the transcript goes
    (flushed after every line).
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
        super().__init__(agent, variant, human=human, seed=seed, start_fen=start_fen)
        self.out = out if out is not None else sys.stdout
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
        rest = line.strip()[len(words[0]) :].strip()
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
        self.say(f"hint: {self.agent.name} would play {self.hint()}")
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
            text = self.pdn(tags)
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
        self.say(
            f"Stapeldammen, Variant {self.variant.name}: you ({HUMAN_NAME}) play "
            f"{SIDE_NAMES[self.human]}, {self.agent.name} plays {SIDE_NAMES[1 - self.human]}."
        )
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
    parser = argparse.ArgumentParser(
        prog="stapel-play",
        description=__doc__.split("\n")[0],
        epilog="Commands at the prompt: moves, board, hint, undo, save FILE, help, quit.",
    )
    parser.add_argument(
        "--agent",
        default="greedy",
        help="opponent spec: random, greedy, alphabeta[:DEPTH], classical[:time=S][:eval=nnue|FILE], "
        "mcts:PATH[:sims=N][:time=S], policy:PATH, sb3:PATH (default greedy; docs/evaluation.md has every option)",
    )
    parser.add_argument("--variant", default="I", help="I or II (default I)")
    parser.add_argument(
        "--colour",
        "--color",
        dest="colour",
        default="white",
        type=str.lower,
        choices=["white", "black"],
        help="your colour (default white)",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed of the agent's random choices")
    add_threads_option(parser)
    args = parser.parse_args(argv)
    try:
        variant = get_variant(args.variant)
        apply_threads_option(args)
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
