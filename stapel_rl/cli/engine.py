"""stapel-engine: a UCI-like text protocol around one agent.

    stapel-engine --agent mcts:runs/I_default/checkpoints/ckpt_00000004.pt:sims=64 --variant I
    stapel-engine --agent mcts:variant_II:time=1 --variant II     # the shipped agent, a second a move

Reads one command a line on stdin and answers on stdout, flushing after every
answer, so that a GUI, a match runner or a person at a terminal can play
against any agent ``make_agent`` builds. The protocol is described in
docs/engine_protocol.md. In short:

    stapel                       -> id name ..., id agent ..., stapelok
    isready                      -> readyok
    variant I|II                 set the variant, position back to its start
    agent SPEC                   switch the agent
    position startpos [moves M1 M2 ...]
    position fen FEN [moves M1 M2 ...]
    go [nodes N] [movetime MS]   -> bestmove MOVE | bestmove none (search agents: N simulations, MS ms)
    go [depth D] [infinite]      classical agent: info depth ... pv ... per iteration, searched in a thread
    stop                         a running classical search answers at once with its best move so far
    (docs/engine_protocol.md: "go with the classical agent")
    d                            position, board and legal moves as info strings
    quit                         exit 0 (so does end of input)

A command that cannot be carried out answers one line
``info string error: <message>`` and the engine keeps running.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

import numpy as np

from stapel_rl import __version__
from stapel_rl._malloc import tune_malloc
from stapel_rl.classical.position import Position
from stapel_rl.classical.searcher import MAX_DEPTH, Searcher
from stapel_rl.cli.go_limits import CLASSICAL_MARGIN, CommandError, SearchLimits, positive_int, searches, with_limits
from stapel_rl.cli.threads import add_threads_option, apply_threads_option
from stapel_rl.env import engine as rules
from stapel_rl.env import expand_full_moves, from_fens, get_variant, to_fens
from stapel_rl.env.notation import find_move
from stapel_rl.env.render import ansi, status
from stapel_rl.env.state import State, take
from stapel_rl.env.variants import Variant
from stapel_rl.eval.agents import Agent, make_agent
from stapel_rl.eval.classical_agent import ClassicalAgent
from stapel_rl.eval.game import agent_full_move


class EngineSession:
    """The protocol state: variant, agent, position; one ``handle`` call per input line.

    Args:
        agent_spec: spec of the agent to build (ignored when ``agent`` is given).
        variant: "I" or "II".
        seed: seed of the random generator the agent draws from.
        out: where answers go (flushed after every line).
        agent: an agent object to use instead of building one from ``agent_spec``.
    """

    def __init__(
        self,
        agent_spec: str = "random",
        variant: "Variant | str" = "I",
        seed: "int | None" = 0,
        out: "TextIO | None" = None,
        agent: "Agent | None" = None,
    ):
        self.out = out if out is not None else sys.stdout
        self.rng = np.random.default_rng(seed)
        self.agent_spec = agent_spec if agent is None else getattr(agent, "name", agent_spec)
        self.agent = agent if agent is not None else self._build_agent(agent_spec)
        self.variant = get_variant(variant)
        self._set_start()
        self._lock = threading.Lock()  # a search thread writes too
        self._search: "threading.Thread | None" = None
        self._searcher: "Searcher | None" = None  # the Searcher of the running search, to stop it
        self._infinite = False
        self.commands: "dict[str, Callable[[list[str], str], bool]]" = {
            "stapel": self._stapel,
            "isready": self._isready,
            "variant": self._variant,
            "agent": self._agent,
            "position": self._position,
            "go": self._go,
            "d": self._display,
            "stop": self._stop,
            "quit": self._quit,
        }

    # ------------------------------------------------------------ output

    def send(self, line: str) -> None:
        with self._lock:
            self.out.write(line + "\n")
            self.out.flush()

    def info(self, text: str) -> None:
        self.send(f"info string {text}")

    def error(self, text: str) -> None:
        # One line, whatever the message holds.
        self.info("error: " + " ".join(str(text).split()))

    # ------------------------------------------------------------ dispatch

    def handle(self, line: str) -> bool:
        """Carry out one input line; False once the engine should stop."""
        tokens = line.split()
        if not tokens:
            return True
        command = self.commands.get(tokens[0])
        if command is None:
            self.error(f"unknown command {tokens[0]!r}; commands: {', '.join(self.commands)}")
            return True
        rest = line.strip()[len(tokens[0]) :].strip()
        if self.searching():
            if tokens[0] == "isready":  # answered at once, the search goes on (as in UCI)
                self.send("readyok")
                return True
            # Anything else waits for the search's bestmove; one without limits is stopped first.
            self.wait(stop=tokens[0] in ("stop", "quit") or self._infinite)
        try:
            return command(tokens[1:], rest)
        except CommandError as problem:
            self.error(str(problem))
        except Exception as problem:  # noqa: BLE001 - the engine must keep running
            self.error(f"{tokens[0]} failed: {type(problem).__name__}: {problem}")
        return True

    # ------------------------------------------------------------ positions

    def _set_start(self) -> None:
        self.state = rules.init(self.variant)
        # Cache of the last 'position' line: its base, its moves and the state
        # after each prefix, so that a GUI resending the whole game each turn
        # only pays for the new moves.
        self._line_base: "tuple[str, str] | None" = None
        self._line_moves: "list[str]" = []
        self._line_states: "list[State]" = []

    @staticmethod
    def _play(state: State, text: str) -> State:
        moves = expand_full_moves(state)
        try:
            index = find_move(moves, text)
        except ValueError as problem:
            raise CommandError(str(problem)) from None
        return take(moves.state, [index])

    def _position(self, args: "list[str]", rest: str) -> bool:
        if not args:
            raise CommandError("position needs 'startpos' or 'fen <position text>', optionally followed by 'moves ...'")
        if "moves" in args:
            cut = args.index("moves")
            head, moves = args[:cut], args[cut + 1 :]
        else:
            head, moves = args, []
        if head[0] == "startpos":
            if len(head) > 1:
                raise CommandError(f"unexpected {' '.join(head[1:])!r} after 'position startpos' (expected 'moves')")
            fen = self.variant.setup
        elif head[0] == "fen":
            if len(head) < 2:
                raise CommandError("position fen needs a position text such as 'W:b,b,...' (50 squares)")
            fen = " ".join(head[1:])
        else:
            raise CommandError(f"position needs 'startpos' or 'fen', got {head[0]!r}")

        base = (self.variant.name, fen)
        if base == self._line_base:
            keep = 0
            while keep < min(len(moves), len(self._line_moves)) and moves[keep] == self._line_moves[keep]:
                keep += 1
            states = self._line_states[: keep + 1]
        else:
            try:
                states = [from_fens([fen], self.variant)]
            except ValueError as problem:
                raise CommandError(f"malformed position: {problem}") from None
            keep = 0
        for number in range(keep, len(moves)):
            try:
                states.append(self._play(states[-1], moves[number]))
            except CommandError as problem:
                raise CommandError(f"move {number + 1} ({moves[number]}): {problem}; position unchanged") from None
        self._line_base, self._line_moves, self._line_states = base, list(moves), states
        self.state = states[-1]
        return True

    # ------------------------------------------------------------ commands

    def _stapel(self, args: "list[str]", rest: str) -> bool:
        self.send(f"id name stapel-rl {__version__}")
        self.send(f"id agent {self.agent_spec}")
        self.send("stapelok")
        return True

    def _isready(self, args: "list[str]", rest: str) -> bool:
        self.send("readyok")
        return True

    def _quit(self, args: "list[str]", rest: str) -> bool:
        return False

    def _stop(self, args: "list[str]", rest: str) -> bool:
        return True  # a running search was stopped before this; without one there is nothing to do

    def searching(self) -> bool:
        return self._search is not None and self._search.is_alive()

    def wait(self, stop: bool = False) -> None:
        """Wait for a running search to answer its ``bestmove`` (``stop``: make it answer now)."""
        if self._search is None:
            return
        while stop and self._search.is_alive():
            # Again and again: a search that has not started yet clears the flag when it starts.
            assert self._searcher is not None  # set with the search
            self._searcher.stop()
            self._search.join(0.005)
        self._search.join()
        self._search = None

    def _variant(self, args: "list[str]", rest: str) -> bool:
        if len(args) != 1:
            raise CommandError("variant needs one argument: I or II")
        try:
            variant = get_variant(args[0])
        except ValueError as problem:
            raise CommandError(str(problem)) from None
        self.variant = variant
        self._set_start()
        return True

    def _build_agent(self, spec: str) -> Agent:
        # Whatever loading prints must not end up in the protocol stream.
        with contextlib.redirect_stdout(sys.stderr):
            return make_agent(spec)

    def _agent(self, args: "list[str]", rest: str) -> bool:
        if not rest:
            raise CommandError("agent needs a spec, e.g. 'random', 'greedy', 'mcts:PATH:sims=64', 'policy:PATH'")
        try:
            agent = self._build_agent(rest)
        except (ValueError, OSError) as problem:
            raise CommandError(f"cannot build agent {rest!r}: {problem}; keeping {self.agent_spec!r}") from None
        except Exception as problem:  # noqa: BLE001 - e.g. a checkpoint that does not unpickle
            raise CommandError(
                f"cannot build agent {rest!r}: {type(problem).__name__}: {problem}; keeping {self.agent_spec!r}"
            ) from None
        self.agent, self.agent_spec = agent, rest
        self.info(f"agent {rest}")
        return True

    def _go(self, args: "list[str]", rest: str) -> bool:
        nodes = movetime = depth = None
        infinite = False
        i = 0
        while i < len(args):
            key = args[i]
            if key == "infinite" and isinstance(self.agent, ClassicalAgent):
                infinite = True
                i += 1
            elif key == "depth" and isinstance(self.agent, ClassicalAgent):
                if i + 1 >= len(args):
                    raise CommandError("go depth needs a number")
                depth = positive_int("go depth", args[i + 1])
                i += 2
            elif key in ("nodes", "movetime"):
                if i + 1 >= len(args):
                    raise CommandError(f"go {key} needs a number")
                value = positive_int(f"go {key}", args[i + 1])
                if key == "nodes":
                    nodes = value
                else:
                    movetime = value
                i += 2
            else:
                # Parameters this engine has no use for (wtime 1000, infinite, ...), value included.
                takes_value = i + 1 < len(args) and args[i + 1].lstrip("-").isdigit()
                ignored = " ".join(args[i : i + 1 + takes_value])
                self.info(f"ignoring go parameter {ignored!r}")
                i += 1 + takes_value

        state = self.state
        if bool(state.done[0]):
            self.info(f"game over: {status(state)}")
            self.send("bestmove none")
            return True

        agent = self.agent
        if isinstance(agent, ClassicalAgent):
            self._go_classical(state, nodes, movetime, depth, infinite)
            return True
        simulates = searches(agent)
        timed = movetime is not None and simulates and hasattr(agent, "seconds")
        seconds = movetime / 1000 if movetime is not None and timed else None  # the go's time, for a timed agent
        if nodes is not None and not simulates:
            self.info(f"nodes ignored: agent {self.agent_spec!r} has no simulation count")
        if movetime is not None and not timed:
            self.info(f"movetime ignored: agent {self.agent_spec!r} has no time control")
        if searches(agent) and (nodes is not None or timed):
            agent = with_limits(agent, nodes, seconds)
        start = time.perf_counter()
        deadline = start + seconds if seconds is not None else None
        try:
            move, simulations = self._choose(agent, state, deadline)
        except Exception as problem:  # noqa: BLE001 - answer the go anyway
            self.error(f"agent {self.agent_spec!r} failed: {type(problem).__name__}: {problem}")
            self.send("bestmove none")
            return True
        elapsed_ms = int(round(1000 * (time.perf_counter() - start)))
        self.send(f"info time {elapsed_ms}" + (f" nodes {simulations}" if simulations is not None else ""))
        self.send(f"bestmove {move}")
        return True

    def _go_classical(
        self, state: State, nodes: "int | None", movetime: "int | None", depth: "int | None", infinite: bool
    ) -> None:
        """Search with the classical agent's searcher in a thread: one ``info depth`` line per
        iteration, then ``bestmove``; ``stop`` ends it early. The ``go`` limits replace the
        agent's own; without any the agent's apply; ``infinite`` searches until ``stop``."""
        agent = self.agent
        assert isinstance(agent, ClassicalAgent)  # _go sends only the classical agent here
        searcher = agent.searcher(self.variant)  # built before this move's clock starts
        start = time.perf_counter()
        moves = expand_full_moves(state)
        if moves.parent.size == 1:  # the only move: nothing to think about
            self.send("info time 0")
            self.send(f"bestmove {moves.texts()[0]}")
            return
        limits: SearchLimits
        if infinite:
            limits = {"depth": MAX_DEPTH}
        elif nodes is None and movetime is None and depth is None:
            limits = {
                "depth": agent.depth,
                "nodes": agent.nodes,
                "time_limit": None if agent.time_per_move is None else agent.time_per_move - CLASSICAL_MARGIN,
            }
        else:
            limits = {
                "depth": depth,
                "nodes": nodes,
                "time_limit": None if movetime is None else movetime / 1000 - CLASSICAL_MARGIN,
            }
        time_limit = limits.pop("time_limit", None)
        if time_limit is not None:
            limits["deadline"] = start + max(time_limit, 0.0)
        pos = Position.from_state(state, 0)

        def run() -> None:
            try:
                result = searcher.search(pos, on_info=lambda info: self.send(info.line()), **limits)
                elapsed_ms = int(round(1000 * (time.perf_counter() - start)))
                self.send(f"info time {elapsed_ms} nodes {result.nodes}")
                self.send(f"bestmove {result.move}")
            except Exception as problem:  # noqa: BLE001 - answer the go anyway
                self.error(f"agent {self.agent_spec!r} failed: {type(problem).__name__}: {problem}")
                self.send("bestmove none")

        self._searcher, self._infinite = searcher, infinite
        self._search = threading.Thread(target=run, name="stapel-search", daemon=True)
        self._search.start()

    def _choose(self, agent: Agent, start: State, deadline: "float | None" = None) -> "tuple[str, int | None]":
        """The agent's full move from ``start`` as text, and the simulations it searched (None if it
        does not search or was not asked). Forced leaps are played without asking.

        With ``deadline`` (a ``time.perf_counter()`` value), each decision point
        gives a timed agent the time left, so the whole move keeps to it."""
        searched: "list[int]" = []

        def before_decision() -> None:
            if deadline is not None and hasattr(agent, "seconds"):  # a deadline is given to timed agents only
                agent.seconds = max(0.0, deadline - time.perf_counter())

        def after_decision() -> None:
            if searches(agent):
                searched.append(getattr(agent, "simulations", agent.config.num_simulations))

        with contextlib.redirect_stdout(sys.stderr):
            move = agent_full_move(
                agent, start, self.rng, ask_forced=False, before_decision=before_decision, after_decision=after_decision
            )
        return move.text, (sum(searched) if searched else None)

    def _display(self, args: "list[str]", rest: str) -> bool:
        state = self.state
        self.info(f"fen {to_fens(state)[0]}")
        for line in ansi(state, full=True).splitlines():
            self.info(line)
        texts = [] if bool(state.done[0]) else expand_full_moves(state).texts()
        self.info(f"legal moves ({len(texts)}): {' '.join(texts) if texts else 'none'}")
        return True

    # ------------------------------------------------------------ main loop

    def run(self, lines: TextIO) -> int:
        """Read commands until ``quit`` or end of input; the exit status."""
        try:
            while True:
                line = lines.readline()
                if not line or not self.handle(line):
                    return 0
        finally:
            self.wait(stop=self._infinite)  # a timed search still answers; an endless one is stopped


def main(argv: "list[str] | None" = None) -> int:
    tune_malloc()
    parser = argparse.ArgumentParser(
        prog="stapel-engine",
        description="UCI-like engine protocol on stdin/stdout around a stapel-rl agent (docs/engine_protocol.md)",
    )
    parser.add_argument(
        "--agent",
        default="random",
        help="agent spec: random, greedy, alphabeta[:DEPTH], classical[:time=S][:eval=nnue|FILE], "
        "mcts:PATH[:sims=N][:time=S], policy:PATH, sb3:PATH; "
        "PATH variant_I or variant_II: the strongest agents shipped with stapel-rl, variant_I_zero or "
        "variant_II_zero: those learned from zero (docs/evaluation.md lists every option)",
    )
    parser.add_argument("--variant", default="I", help="I or II (default I)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the agent's random generator (default 0)")
    add_threads_option(parser)
    args = parser.parse_args(argv)
    for stream in (sys.stdin, sys.stdout):
        reconfigure = getattr(stream, "reconfigure", None)  # TextIOWrapper's; typing.TextIO has none
        if reconfigure is not None:
            with contextlib.suppress(AttributeError, ValueError):
                reconfigure(errors="replace")
    try:
        apply_threads_option(args)
        get_variant(args.variant)
        session = EngineSession(args.agent, args.variant, args.seed)
    except Exception as problem:  # noqa: BLE001 - bad command-line arguments
        print(f"stapel-engine: error: {problem}", file=sys.stderr)
        return 2
    try:
        return session.run(sys.stdin)
    except BrokenPipeError:
        # The other side went away; stop quietly (and keep Python from complaining at exit).
        with contextlib.suppress(Exception):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
