"""stapel-engine: the UCI-like protocol on stdin/stdout (docs/engine_protocol.md).

Most tests drive a real ``python -m stapel_rl.cli.engine`` process line by
line through pipes, with a reader thread so that a silent engine fails the
test after a timeout instead of hanging it. A few check the session object
in-process (nodes for search agents, the position cache).
"""

from __future__ import annotations

import dataclasses
import io
import json
import pathlib
import random
import time

import pytest
from engine_process import TIMEOUT_S, EngineProcess

from stapel_rl import __version__
from stapel_rl.cli.engine import EngineSession
from stapel_rl.env import apply_move, game_result, initial_fen, legal_moves
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.eval.network_agents import UNLIMITED

EMPTY_BUT_ONE_BLACK = "W:b" + "," * 49  # White to move has no man: the game is over


def _engine_process(*args: str):
    """An engine process for one test, closed (pipes too) after it."""
    process = EngineProcess(*args)
    yield process
    try:
        process.close()
    finally:
        process.proc.stdout.close()
        process.proc.stderr.close()


@pytest.fixture
def engine():
    yield from _engine_process()


def test_handshake_isready_and_quit(engine):
    engine.send("stapel")
    assert engine.read() == f"id name stapel-rl {__version__}"
    assert engine.read() == "id agent random"
    assert engine.read() == "stapelok"
    engine.send("isready")
    assert engine.read() == "readyok"
    engine.send("quit")
    assert engine.proc.wait(timeout=TIMEOUT_S) == 0
    assert engine.lines.get(timeout=TIMEOUT_S) is None  # nothing after quit


def test_end_of_input_exits_cleanly(engine):
    engine.send("isready")
    assert engine.read() == "readyok"
    assert engine.close() == 0
    assert "Traceback" not in engine.proc.stderr.read()


ERROR_COMMANDS = [
    ("frobnicate", "unknown command"),
    ("uci", "unknown command"),
    ("position", "position needs"),
    ("position middlegame", "got 'middlegame'"),
    ("position startpos extra", "unexpected 'extra'"),
    ("position fen", "needs a position text"),
    ("position fen W:b,b,b", "malformed position"),  # too few squares
    ("position fen X:" + ",".join(["b"] * 20 + [""] * 10 + ["w"] * 20), "side to move"),  # bad side to move
    ("position fen W:" + ",".join(["q"] + [""] * 49), "'q'"),  # bad letter
    ("position fen W:" + ",".join(["b"] * 21 + [""] * 9 + ["w"] * 20), "21 Black men"),  # 21 black men
    ("position startpos moves 31-26 20-25 26-21 17-21", "illegal move"),  # 17-21 is not a legal move
    ("position startpos moves 32-27 19-24 33-28 24x33", "illegal move"),  # 24x33: no such capture
    ("position startpos moves 32-28 hello", "malformed move"),  # malformed move text
    ("position startpos moves 32-28 0-5", "malformed move"),  # square out of range
    ("variant III", "unknown variant"),
    ("variant", "variant needs"),
    ("agent no-such-agent", "unknown agent"),
    ("agent mcts:/no/such/checkpoint.pt", "does not exist"),
    ("agent", "agent needs"),
    ("go nodes", "needs a number"),
    ("go nodes many", "whole number"),
    ("go movetime -5", "at least 1"),
]


def test_errors_are_one_line_and_the_engine_keeps_running(engine):
    for command, fragment in ERROR_COMMANDS:
        engine.send(command)
        line = engine.read()
        assert line.startswith("info string error: ") and fragment in line, (command, line)
        engine.send("isready")
        assert engine.read() == "readyok", f"after {command!r}"
    assert engine.proc.poll() is None
    engine.send("go")  # still playing, from the start position
    assert engine.bestmove() in legal_moves(initial_fen("I"))
    assert engine.close() == 0
    assert "Traceback" not in engine.proc.stderr.read()


def test_failed_position_leaves_the_position_unchanged(engine):
    engine.send("position startpos moves 32-28")
    engine.send("position startpos moves 32-28 19-23 99-98")
    assert engine.read().startswith("info string error: move 3 (99-98)")
    engine.send("d")
    lines = engine.read_until("info string legal moves")
    fen = apply_move(initial_fen("I"), "32-28")
    assert lines[0] == f"info string fen {fen}"
    assert lines[-1] == f"info string legal moves ({len(legal_moves(fen))}): {' '.join(legal_moves(fen))}"


def test_go_in_a_finished_position_answers_bestmove_none(engine):
    engine.send(f"position fen {EMPTY_BUT_ONE_BLACK}")
    engine.send("go")
    assert engine.bestmove() == "none"
    engine.send("variant II")
    engine.send(f"position fen {EMPTY_BUT_ONE_BLACK}")
    engine.send("go movetime 100")
    assert engine.bestmove() == "none"


def _play_game(
    engine: EngineProcess, variant: str, rng: random.Random, max_plies: int = 600
) -> "tuple[str, list[str]]":
    """The engine plays the side that moves first, the test a random mover; final fen and the moves."""
    fen, moves = initial_fen(variant), []
    while game_result(fen, variant) is None and len(moves) < max_plies:
        legal = legal_moves(fen, variant)
        if len(moves) % 2 == 0:
            engine.send("position startpos" + (" moves " + " ".join(moves) if moves else ""))
            engine.send("go")
            move = engine.bestmove()
            assert move in legal, f"ply {len(moves) + 1}: engine played {move!r}, legal {legal} in {fen}"
        else:
            move = rng.choice(legal)
        fen = apply_move(fen, move, variant)
        moves.append(move)
    return fen, moves


def test_full_game_variant_i_against_a_random_mover(engine):
    # 600 plies is the ply cap: a game that long is truncated, and the engine then has no move either.
    fen, moves = _play_game(engine, "I", random.Random(7))
    assert len(moves) > 10
    engine.send("position startpos moves " + " ".join(moves))
    engine.send("go")
    assert engine.bestmove() == "none"
    engine.send("d")
    lines = engine.read_until("info string legal moves")
    assert lines[0] == f"info string fen {fen}"
    assert lines[-1] == "info string legal moves (0): none"


def test_variant_ii_game_prefix(engine):
    engine.send("variant II")
    engine.send("position startpos")
    engine.send("d")
    lines = engine.read_until("info string legal moves")
    assert lines[0] == f"info string fen {initial_fen('II')}"
    assert "Variant II | Black to move" in lines[1]
    fen, moves = _play_game(engine, "II", random.Random(11), max_plies=40)
    assert len(moves) == 40 or game_result(fen, "II") is not None


# ---------------------------------------------------------------- in-process


@dataclasses.dataclass
class _Config:
    num_simulations: int = 64


@dataclasses.dataclass
class _SearchLikeAgent:
    """Stands in for an mcts agent: records the simulation count of every call."""

    config: _Config = dataclasses.field(default_factory=_Config)
    name: str = "fake-mcts"
    seen: list = dataclasses.field(default_factory=list)

    def __call__(self, state, rng):
        self.seen.append(self.config.num_simulations)
        return random_legal_actions(state.legal_action_mask, rng)


def _session(**kwargs) -> "tuple[EngineSession, io.StringIO]":
    out = io.StringIO()
    return EngineSession(out=out, **kwargs), out


def test_go_nodes_sets_the_simulations_of_that_search_only():
    agent = _SearchLikeAgent()
    session, out = _session(agent=agent)
    session.handle("go nodes 5")
    session.handle("go")
    lines = out.getvalue().splitlines()
    times = [line for line in lines if line.startswith("info time")]
    assert times[0].endswith(" nodes 5") and times[1].endswith(" nodes 64")
    assert agent.seen == [5, 64]  # the searching copy shares the list
    assert session.agent.config.num_simulations == 64
    assert sum(line.startswith("bestmove ") for line in lines) == 2
    assert "error" not in out.getvalue()


@dataclasses.dataclass
class _TimedAgent(_SearchLikeAgent):
    """A search-like agent with a time control: records (simulations, seconds) of every call."""

    seconds: "float | None" = None
    simulations: int = 3  # what it says it searched

    def __call__(self, state, rng):
        self.seen.append((self.config.num_simulations, self.seconds))
        return random_legal_actions(state.legal_action_mask, rng)


def test_go_movetime_gives_a_timed_agent_the_time_of_that_search_only():
    agent = _TimedAgent()
    session, out = _session(agent=agent)
    for line in ("go movetime 250", "go movetime 250 nodes 7", "go nodes 7", "go"):
        session.handle(line)
    (unlimited, first), (seven, second), *rest = agent.seen
    assert unlimited == UNLIMITED and seven == 7 and rest == [(7, None), (64, None)]
    # The time left of the move when the agent is asked.
    assert 0.2 < first <= 0.25 and 0.2 < second <= 0.25
    assert session.agent.seconds is None and session.agent.config.num_simulations == 64
    times = [line for line in out.getvalue().splitlines() if line.startswith("info time")]
    assert [line.split()[-2:] for line in times] == [["nodes", "3"]] * 4  # the agent's own count
    assert "error" not in out.getvalue() and "ignored" not in out.getvalue()


def test_go_limits_of_agents_without_them_are_ignored_with_a_note():
    session, out = _session(agent=_SearchLikeAgent())
    session.handle("go movetime 100")
    assert "info string movetime ignored: agent 'fake-mcts' has no time control" in out.getvalue().splitlines()
    session, out = _session(agent_spec="greedy")
    session.handle("go nodes 5 movetime 100")
    assert out.getvalue().splitlines()[:2] == [
        "info string nodes ignored: agent 'greedy' has no simulation count",
        "info string movetime ignored: agent 'greedy' has no time control",
    ]


def test_go_movetime_with_the_bundled_network_uses_the_time():
    session, out = _session(agent_spec="mcts:variant_I:sims=1")
    # The network's first calls and the search's first halving rounds (compiled on first use) are slow:
    # a search of a few rounds pays for them before the timed one.
    session.handle("go nodes 32")
    session.handle("go movetime 400")
    info, best = out.getvalue().splitlines()[-2:]
    _, _, elapsed, _, nodes = info.split()
    elapsed, nodes = int(elapsed), int(nodes)
    # Not the spec's one simulation: the search stops once less than its mean time per simulation
    # is left, or at the deadline, and starts none after it (generous bound: a busy machine).
    assert elapsed * (nodes + 1) / nodes >= 400 - 1 and elapsed < 400 + 3000
    assert best.split()[1] in legal_moves(initial_fen("I"))


def test_position_cache_follows_branches_and_bases():
    session, out = _session()
    mine = random.Random(3)
    fens, moves = [initial_fen("I")], []
    for _ in range(12):
        move = mine.choice(legal_moves(fens[-1]))
        fens.append(apply_move(fens[-1], move))
        moves.append(move)
    session.handle("position startpos moves " + " ".join(moves))
    assert int(session.state.ply[0]) == 12
    # Take back three moves and play another line from there.
    other = legal_moves(fens[9])[-1]
    session.handle("position startpos moves " + " ".join(moves[:9] + [other]))
    session.handle("d")
    assert out.getvalue().splitlines()[0] == f"info string fen {apply_move(fens[9], other)}"
    assert int(session.state.ply[0]) == 10
    # The same move from a fen base is another line: ply counts from that position.
    session.handle(f"position fen {fens[9]} moves {other}")
    assert int(session.state.ply[0]) == 1
    session.handle("position startpos")
    assert int(session.state.ply[0]) == 0
    assert "error" not in out.getvalue()


def _cases(variant: str, tag: str) -> "list[dict]":
    path = pathlib.Path(__file__).parents[1] / "data" / "rules_cases.jsonl"
    cases = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [case for case in cases if case["variant"] == variant and case["tag"] == tag]


def _display_fen(session: EngineSession, out: io.StringIO) -> str:
    out.seek(0)
    out.truncate(0)
    session.handle("d")
    return out.getvalue().splitlines()[0].removeprefix("info string fen ")


def test_capture_paths_in_and_out():
    session, out = _session(agent_spec="greedy")
    cases = _cases("I", "multi-capture")
    # Two captures from 12 ending on different squares: 'from x to' names one of them.
    forked = next(case for case in cases if {"12x23x32x41", "12x23x32x43"} <= set(case["moves"]))
    session.handle(f"position fen {forked['fen']} moves 12x41")
    assert _display_fen(session, out) == forked["moves"]["12x23x32x41"]
    # Two paths with the same start and end: the short form is ambiguous, the full path is not.
    twins = next(case for case in cases if "22x13x4x15x24x13x22" in case["moves"])
    session.handle(f"position fen {twins['fen']} moves 22x22")
    assert "ambiguous" in out.getvalue().splitlines()[-1]
    session.handle(f"position fen {twins['fen']} moves 22x13x24x15x4x13x22")
    assert _display_fen(session, out) == twins["moves"]["22x13x24x15x4x13x22"]
    # The engine answers captures with their full paths, in both variants.
    for variant in ("I", "II"):
        session.handle(f"variant {variant}")
        for case in _cases(variant, "multi-capture")[:5]:
            out.seek(0)
            out.truncate(0)
            session.handle(f"position fen {case['fen']}")
            session.handle("go")
            answer = out.getvalue().splitlines()[-1].split()
            assert answer[0] == "bestmove" and answer[1] in case["moves"], (case["fen"], answer)


# ---------------------------------------------------------------- the classical agent

MIDDLEGAME_MOVES = "32-28 19-23 28x19 14x23 37-32 17-22"


def _info_fields(line: str) -> "tuple[dict[str, int], list[str]]":
    """The numeric fields of an ``info depth ...`` line and its pv."""
    head, _, pv = line.partition(" pv ")
    tokens = head.split()[1:]
    return {key: int(value) for key, value in zip(tokens[::2], tokens[1::2], strict=True)}, pv.split()


def _assert_legal_line(fen: str, moves: "list[str]", variant: str = "I") -> None:
    for move in moves:
        assert move in legal_moves(fen, variant), (move, fen)
        fen = apply_move(fen, move, variant)


@pytest.fixture
def classical_engine():
    yield from _engine_process("--agent", "classical:time=0.5")


def test_classical_go_prints_an_info_line_per_iteration_ending_in_bestmove(classical_engine):
    fen = initial_fen("I")
    for move in MIDDLEGAME_MOVES.split():
        fen = apply_move(fen, move, "I")
    for go in ("go movetime 300", "go depth 5", "go nodes 3000", "go"):
        classical_engine.send(f"position startpos moves {MIDDLEGAME_MOVES}")
        classical_engine.send(go)
        lines = classical_engine.read_until("bestmove ")
        infos = [_info_fields(line) for line in lines if line.startswith("info depth ")]
        assert infos, (go, lines)
        depths = [fields["depth"] for fields, _ in infos]
        assert depths == sorted(depths) and depths[0] == 1, (go, depths)
        for fields, pv in infos:
            assert {"depth", "nodes", "nps", "score"} <= set(fields) and pv, (go, fields)
            _assert_legal_line(fen, pv)
        best = lines[-1].split()[1]
        assert infos[-1][1][0] == best and best in legal_moves(fen, "I"), (go, lines[-3:])
        assert lines[-2].startswith("info time ") and " nodes " in lines[-2]
        if go == "go depth 5":
            assert depths[-1] == 5
        if go == "go nodes 3000":
            assert int(lines[-2].split()[-1]) <= 3000


def test_classical_stop_answers_a_running_search_at_once(classical_engine):
    classical_engine.send(f"position startpos moves {MIDDLEGAME_MOVES}")
    fen = initial_fen("I")
    for move in MIDDLEGAME_MOVES.split():
        fen = apply_move(fen, move, "I")
    for go in ("go infinite", "go movetime 60000"):
        classical_engine.send(go)
        assert classical_engine.read().startswith("info depth 1 ")  # the search is under way
        time.sleep(0.3)
        classical_engine.send("isready")  # answered during the search, which goes on
        assert classical_engine.read_until("readyok")[-1] == "readyok"
        classical_engine.send("stop")
        sent = time.perf_counter()
        lines = classical_engine.read_until("bestmove ")
        assert time.perf_counter() - sent < 0.2, lines[-3:]
        assert lines[-1].split()[1] in legal_moves(fen, "I")
    classical_engine.send("stop")  # no search: nothing to stop, no answer
    classical_engine.send("isready")
    assert classical_engine.read() == "readyok"


def test_classical_in_process_wait_and_quit_during_a_search():
    from stapel_rl.eval.classical_agent import ClassicalAgent

    session, out = _session(agent=ClassicalAgent(time_per_move=None, depth=4))
    session.handle("variant II")
    session.handle("go")
    session.wait()
    lines = out.getvalue().splitlines()
    assert [_info_fields(line)[0]["depth"] for line in lines if line.startswith("info depth")] == [1, 2, 3, 4]
    assert lines[-1].split()[1] in legal_moves(initial_fen("II"), "II")
    session.handle("go infinite")
    assert session.handle("quit") is False  # quit stops the search first, which still answers
    assert not session.searching() and out.getvalue().splitlines()[-1].startswith("bestmove ")


def test_threads_option(monkeypatch, capsys):
    """One torch thread by default (an engine shares the machine with its opponent), more on request,
    and a count below one is refused before any protocol starts."""
    import torch

    from stapel_rl.cli import engine as engine_cli

    monkeypatch.setattr(engine_cli.sys, "stdin", io.StringIO("quit\n"))
    before = torch.get_num_threads()
    try:
        assert engine_cli.main([]) == 0 and torch.get_num_threads() == 1
        assert engine_cli.main(["--threads", "2"]) == 0 and torch.get_num_threads() == 2
        assert engine_cli.main(["--threads", "0"]) == 2
        assert "--threads must be at least 1" in capsys.readouterr().err
    finally:
        torch.set_num_threads(before)
