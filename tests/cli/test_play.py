"""stapel-play driven as a person at a terminal would: through stdin/stdout pipes."""

from __future__ import annotations

import os
import pathlib
import re
import select
import subprocess
import sys
import time

import pytest

from stapel_rl.eval.pdn import read_games

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROMPT = "your move> "
OVER_PROMPT = "game over> "
MOVE = re.compile(r"^\d+(?:-\d+|(?:x\d+)+)$")


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _command(*args: str) -> "list[str]":
    return [sys.executable, "-m", "stapel_rl.cli.play", "--agent", "random", "--seed", "0", *args]


def run_script(lines: "list[str]", *args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
    """The program fed ``lines`` in one go (then end of input)."""
    return subprocess.run(
        _command(*args),
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=_env(),
    )


def legal_moves(text: str) -> "list[str]":
    """The moves of the last ``legal moves:`` line in ``text``."""
    lines = [line for line in text.splitlines() if line.startswith("legal moves: ")]
    assert lines, f"no legal-moves line in:\n{text}"
    moves = lines[-1][len("legal moves: ") :].split(", ")
    assert all(MOVE.match(m) for m in moves), lines[-1]
    return moves


def boards(text: str) -> "list[str]":
    """Every board drawn in ``text``: from its header line to the end of the stack list."""
    out, current = [], None
    for line in text.splitlines():
        if line.startswith("Variant "):
            current = [line]
        elif current is not None:
            if line.startswith(("legal moves:", PROMPT, OVER_PROMPT, "result:")):
                out.append("\n".join(current))
                current = None
            else:
                current.append(line)
    return out


class Terminal:
    """The program behind pipes: read until a prompt, answer a line."""

    def __init__(self, *args: str, cwd: pathlib.Path):
        self.stderr = open(cwd / "stderr.txt", "w+b")
        self.proc = subprocess.Popen(
            _command(*args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, cwd=cwd, env=_env()
        )
        self.pending = b""
        self.transcript = ""

    def read_until(self, *markers: str, timeout: float = 20.0) -> str:
        """Output up to and including the first of ``markers`` to appear."""
        wanted = [m.encode() for m in markers]
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            hits = [(self.pending.find(m), m) for m in wanted if m in self.pending]
            if hits:
                at, marker = min(hits)
                cut = at + len(marker)
                chunk, self.pending = self.pending[:cut].decode(), self.pending[cut:]
                self.transcript += chunk
                return chunk
            left = deadline - time.monotonic()
            assert left > 0, f"timed out waiting for {markers}; output so far:\n{self.pending.decode()[-3000:]}"
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                data = os.read(fd, 1 << 16)
                assert data, f"program ended before {markers}; output:\n{self.pending.decode()[-3000:]}"
                self.pending += data

    def send(self, line: str) -> None:
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()

    def finish(self) -> "tuple[int, str]":
        """Close stdin, wait for the exit; returns (status, the rest of stdout)."""
        self.proc.stdin.close()
        rest = self.proc.stdout.read().decode()
        self.transcript += self.pending.decode() + rest
        code = self.proc.wait(timeout=20)
        self.stderr.seek(0)
        errors = self.stderr.read().decode()
        self.stderr.close()
        assert "Traceback" not in errors, errors
        return code, rest

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if not self.stderr.closed:
            self.stderr.close()


def play_to_the_end(term: Terminal) -> "tuple[str, list[str]]":
    """Answer every prompt with the first legal move until the result appears; (result line, our moves)."""
    ours = []
    for _ in range(400):
        chunk = term.read_until(PROMPT, OVER_PROMPT)
        if chunk.endswith(OVER_PROMPT):
            results = [line for line in chunk.splitlines() if line.startswith("result: ")]
            assert results, chunk
            return results[-1], ours
        move = legal_moves(chunk)[0]
        ours.append(move)
        term.send(move)
    raise AssertionError("no result after 400 of our moves")


def test_bad_input_hint_undo_and_save(tmp_path):
    script = [
        "46-41",  # blocked at the start
        "19-23",  # Black's man: White to move
        "hello",
        "32-",
        "28x10",  # no capture exists
        "",
        "undo",  # nothing to undo yet
        "hint",
        "32-28",
        "moves",
        "save game.pdn",
        "undo",
        "save",  # no file name
        "help",
    ]
    done = run_script(script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and not done.stderr.strip()
    out = done.stdout
    start_moves = ["31-26", "31-27", "32-27", "32-28", "33-28", "33-29", "34-29", "34-30", "35-30"]
    # One prompt per input line, and every bad line answered before the next prompt.
    assert out.count(PROMPT) == len(script) + 1
    pieces = out.split(PROMPT)[1:]
    assert pieces[0].startswith("46-41\nillegal move '46-41'; legal moves: " + ", ".join(start_moves))
    assert pieces[1].startswith("19-23\nillegal move '19-23'")
    assert pieces[2].startswith("hello\nmalformed move 'hello'")
    assert pieces[3].startswith("32-\nmalformed move '32-'")
    assert pieces[4].startswith("28x10\nillegal move '28x10'")
    assert "nothing to undo" in pieces[6]
    hint = re.search(r"^hint: random would play (\S+)$", pieces[7], re.M)
    assert hint and hint.group(1) in start_moves
    # 32-28 is played and Black answers; the new board lists White's moves.
    assert "White (Human) plays 32-28" in pieces[8]
    reply = re.search(r"^Black \(random\) plays (\S+)$", pieces[8], re.M).group(1)
    assert "Variant I | White to move | ply 2 | last" in pieces[8]
    after = legal_moves(pieces[8])
    assert after != start_moves and legal_moves(pieces[9]) == after
    # The saved game holds both moves and reads back.
    assert "saved 2 moves to game.pdn" in pieces[10]
    (game,) = read_games((tmp_path / "game.pdn").read_text())
    assert game["moves"] == ["32-28", reply]
    assert game["tags"]["White"] == "Human" and game["tags"]["Black"] == "random"
    assert game["result"] == "*"
    # Undo takes back both moves: the start board and moves again, White to move.
    assert f"undone: 32-28 {reply}" in pieces[11]
    all_boards = boards(out)
    assert all_boards[-1] == all_boards[0]
    assert all_boards[0].startswith("Variant I | White to move | ply 0 |")
    assert legal_moves(pieces[11]) == start_moves
    assert "usage: save FILE" in pieces[12]
    assert "commands:" in pieces[13] and "undo" in pieces[13]
    assert out.rstrip().endswith("end of input: bye")


def test_board_shows_stack_contents(tmp_path):
    done = run_script(["quit"], "--variant", "II", "--colour", "black", cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    # Variant II: stacks of two, and Black (the person) moves first.
    assert "Variant II | Black to move | ply 0 | points White 0 Black 0" in done.stdout
    assert " 1: bb" in done.stdout and "50: ww" in done.stdout
    assert "White (random) plays" not in done.stdout
    assert done.stdout.rstrip().endswith("bye")


def test_full_game_as_white_then_undo_and_save(tmp_path):
    term = Terminal(cwd=tmp_path)
    try:
        result, ours = play_to_the_end(term)
        assert re.match(r"result: (White|Black) wins \((White|Black) cannot move\) - you (win|lose)$", result)
        term.send("save end.pdn")
        saved = term.read_until(OVER_PROMPT)
        assert "saved" in saved
        # Undo after the end brings the person's turn back.
        term.send("undo")
        back = term.read_until(PROMPT, OVER_PROMPT)
        assert back.endswith(PROMPT) and "undone: " + ours[-1] in back
        legal_moves(back)
        term.send("quit")
        code, rest = term.finish()
    finally:
        term.kill()
    assert code == 0 and "bye" in rest
    (game,) = read_games((tmp_path / "end.pdn").read_text())
    white_won = result.startswith("result: White wins")
    assert game["result"] == ("2-0" if white_won else "0-2")
    assert game["moves"][0::2] == ours  # White's moves are ours
    assert ("you win" in result) == white_won


def test_full_game_as_black_agent_moves_first(tmp_path):
    term = Terminal("--colour", "black", cwd=tmp_path)
    try:
        first = term.read_until(PROMPT)
        # The agent (White) opened before the first prompt.
        opening = re.search(r"^White \(random\) plays (\d+-\d+)$", first, re.M)
        assert opening, first
        assert "Variant I | Black to move | ply 1 | last " + opening.group(1) in first
        moves = legal_moves(first)
        assert all(int(m.split("-")[0]) <= 20 for m in moves)  # Black's men
        term.send(moves[0])
        result, ours = play_to_the_end(term)
        ours.insert(0, moves[0])
        assert re.match(r"result: (White|Black) wins \((White|Black) cannot move\) - you (win|lose)$", result)
        assert ("you win" in result) == result.startswith("result: Black wins")
        term.send("save end.pdn")
        term.read_until(OVER_PROMPT)
        code, rest = term.finish()  # end of input after the game: clean exit
    finally:
        term.kill()
    assert code == 0 and "end of input" in rest
    (game,) = read_games((tmp_path / "end.pdn").read_text())
    assert game["moves"][0] == opening.group(1)
    assert game["moves"][1::2] == ours
    assert game["tags"]["White"] == "random" and game["tags"]["Black"] == "Human"


def test_bad_agent_spec_is_reported(tmp_path):
    done = run_script([], "--agent", "nonsense", cwd=tmp_path)
    assert done.returncode == 2
    assert "cannot build agent 'nonsense'" in done.stderr and "Traceback" not in done.stderr


def test_capture_accepted_in_short_form(tmp_path):
    """A capture typed ``from x to`` (one legal capture matches) is played with its full path."""
    term = Terminal(cwd=tmp_path)
    try:
        for _ in range(60):
            chunk = term.read_until(PROMPT, OVER_PROMPT)
            if chunk.endswith(OVER_PROMPT):
                pytest.skip("game ended before a capture came up")
            moves = legal_moves(chunk)
            captures = [m for m in moves if "x" in m]
            singles = [
                m
                for m in captures
                if sum(c.split("x")[0] == m.split("x")[0] and c.split("x")[-1] == m.split("x")[-1] for c in captures)
                == 1
            ]
            if singles:
                full = singles[0]
                short = f"{full.split('x')[0]}x{full.split('x')[-1]}"
                term.send(short)
                played = term.read_until(PROMPT, OVER_PROMPT)
                assert f"White (Human) plays {full}" in played
                break
            term.send(moves[0])
        else:
            pytest.skip("no capture came up")
        term.send("quit")
        code, _ = term.finish()
    finally:
        term.kill()
    assert code == 0


def test_session_starts_from_a_position_text():
    import io

    from stapel_rl.cli.play import PlaySession
    from stapel_rl.env import to_fens
    from stapel_rl.eval.agents import make_agent

    #        a   b   c   d   e   f   g   h   i   j
    #   5  26      27      b       29      30
    #   4      31      w       33      34      35
    # White to move must take: 32x23 is the only move.
    fen = "W:" + ",".join({32: "w", 28: "b", 1: "b"}.get(n, "") for n in range(1, 51))
    session = PlaySession(make_agent("random"), "I", human=0, seed=0, out=io.StringIO(), start_fen=fen)
    assert to_fens(session.state) == [fen]
    assert session.legal().texts() == ["32x23"]
    with pytest.raises(ValueError):
        PlaySession(make_agent("random"), "I", start_fen="W:not a position")
