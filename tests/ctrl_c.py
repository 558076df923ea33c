"""Ctrl-C as a terminal sends it, for the tests of the commands that handle it: SIGINT to the whole
process group of a command started as a job of its own."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import signal
import subprocess
import time
from collections.abc import Callable


@dataclasses.dataclass
class Stopped:
    """A command stopped by Ctrl-C: its exit status, output, and its child processes just before."""

    returncode: int
    out: str
    err: str
    children: "list[int]"


def children(pid: int) -> "list[int]":
    """The processes whose parent is ``pid`` (read from /proc)."""
    found = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended while being read
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"  # ended, not reaped


def assert_all_end(pids: "list[int]") -> None:
    """Every process of ``pids`` ends within seconds."""
    deadline = time.monotonic() + 10
    while not all(map(gone, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(map(gone, pids))


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ctrl_c(
    command: "list[str]", folder: pathlib.Path, ready: "Callable[[str, str], bool]", settle: float = 0.0
) -> Stopped:
    """Start ``command`` in a session of its own, wait until ``ready(stdout, stderr)`` (then ``settle``
    seconds more), press Ctrl-C, and wait for it to end; its output goes through files in ``folder``."""
    out_file, err_file = folder / "ctrl_c.out", folder / "ctrl_c.err"
    with open(out_file, "w") as out, open(err_file, "w") as err:
        # SIGINT as a terminal leaves it: a shell's background job (pytest started with `&`) ignores it.
        process = subprocess.Popen(
            command, stdout=out, stderr=err, text=True, start_new_session=True, preexec_fn=_default_sigint
        )
    try:
        deadline = time.monotonic() + 90
        while not ready(out_file.read_text(), err_file.read_text()) and time.monotonic() < deadline:
            assert process.poll() is None, f"ended before it was ready: {err_file.read_text()[-2000:]}"
            time.sleep(0.1)
        assert ready(out_file.read_text(), err_file.read_text()), err_file.read_text()[-2000:]
        time.sleep(settle)
        workers = children(process.pid)
        os.killpg(process.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole process group
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return Stopped(process.returncode, out_file.read_text(), err_file.read_text(), workers)
