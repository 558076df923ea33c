"""A ``stapel-engine`` process driven through pipes, for the protocol and wheel tests."""

from __future__ import annotations

import contextlib
import queue
import subprocess
import sys
import threading

#: Seconds an answer line may take before the test fails (instead of hanging).
TIMEOUT_S = 20.0


class EngineProcess:
    """A running engine; ``send`` a line, ``read`` the next answer line.

    ``command`` runs another engine program (e.g. an installed ``stapel-engine``) in ``cwd``
    with environment ``env``.
    """

    def __init__(
        self,
        *args: str,
        command: "list[str] | None" = None,
        cwd: "str | None" = None,
        env: "dict[str, str] | None" = None,
    ):
        self.proc = subprocess.Popen(
            [*(command or [sys.executable, "-m", "stapel_rl.cli.engine"]), "--agent", "random", "--seed", "1", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.lines: "queue.Queue[str | None]" = queue.Queue()
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read(self) -> str:
        try:
            line = self.lines.get(timeout=TIMEOUT_S)
        except queue.Empty:
            raise AssertionError(f"engine silent for {TIMEOUT_S} s") from None
        assert line is not None, f"engine closed its output; stderr: {self.proc.stderr.read()}"
        return line

    def read_until(self, prefix: str) -> "list[str]":
        """Lines up to and including the first that starts with ``prefix``."""
        seen = []
        while True:
            seen.append(self.read())
            if seen[-1].startswith(prefix):
                return seen

    def ask(self, line: str, prefix: str) -> str:
        self.send(line)
        return self.read_until(prefix)[-1]

    def bestmove(self) -> str:
        lines = self.read_until("bestmove ")
        for line in lines[:-1]:
            assert line.startswith("info "), line
            assert not line.startswith("info string error"), line
        return lines[-1].split(maxsplit=1)[1]

    def close(self) -> int:
        """Close the engine's input (end of input) and wait for it; its exit status."""
        if not self.proc.stdin.closed:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            status = self.proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("engine did not exit at end of input") from None
        self.pump.join(timeout=TIMEOUT_S)
        return status
