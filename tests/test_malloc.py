"""The glibc allocator tuning (stapel_rl._malloc) happens in the programs, never on import."""

from __future__ import annotations

import importlib
import os
import platform
import subprocess
import sys

import pytest

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")

# glibc serves a request from its own mapping (IS_MMAPPED, bit 1 of the chunk's size word just
# before the pointer) when it is above the mmap threshold: 128 KiB by default, rising only as far
# as freed mapped blocks push it (never this far while importing); tune_malloc sets it to 32 MiB.
PROBE = """
import ctypes
{setup}
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
pointer = libc.malloc(24 << 20)
print("mmapped" if ctypes.c_size_t.from_address(pointer - 8).value & 2 else "heap")
"""
LIBRARY = (
    "stapel_rl",
    "stapel_rl.env",
    "stapel_rl.mcts",
    "stapel_rl.models",
    "stapel_rl.eval.agents",
    "stapel_rl.eval.network_agents",
    "stapel_rl.eval.arena",
    "stapel_rl.train.selfplay",
    "stapel_rl.train.workers",
    "stapel_rl.train.app",
)


def _run(code: str) -> str:
    env = {key: value for key, value in os.environ.items() if key != "STAPEL_RL_KEEP_MALLOC"}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()[-1]


@glibc
def test_importing_the_library_leaves_the_allocator_alone():
    imports = "\n".join(f"import {name}" for name in LIBRARY)
    assert _run(PROBE.format(setup=imports)) == "mmapped"


@glibc
def test_tune_malloc_keeps_big_blocks_on_the_heap():
    # The control: the probe sees the tuning when it is applied.
    assert _run(PROBE.format(setup="from stapel_rl._malloc import tune_malloc\nassert tune_malloc()")) == "heap"


class _Called(Exception):
    pass


def _refuse() -> bool:
    raise _Called


@pytest.mark.parametrize(
    "module",
    [
        "stapel_rl.cli.perft",
        "stapel_rl.cli.match",
        "stapel_rl.cli.sprt",
        "stapel_rl.cli.play",
        "stapel_rl.cli.engine",
        "stapel_rl.cli.tournament",
    ],
)
def test_command_line_tools_tune_the_allocator_first(module, monkeypatch):
    cli = importlib.import_module(module)
    monkeypatch.setattr(cli, "tune_malloc", _refuse)
    with pytest.raises(_Called):
        cli.main(["--help"])  # before parsing the arguments, so before any work
