"""The wheel works on its own: built from the sources, installed (not editable) in a fresh virtual
environment, the commands run from a directory that is not the checkout, with the configs and the
trained agents that ship inside the package.

The environment sees the site-packages of the interpreter running the tests (torch and the other
dependencies are installed there, and nothing needs the network) through a ``.pth`` file that
lists those directories after its own: this works for the system interpreter, a virtual environment
and conda alike (``system_site_packages`` would give the *base* interpreter's packages, which inside
a virtual environment are not the ones the README's commands installed). Plain directory lines in a
``.pth`` file do not run the other ``.pth`` files they hold, so the editable install of the
checkout stays out of sight; ``--ignore-installed`` puts the wheel into the environment without
touching it, and the first check makes sure the environment imports its own copy.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import site
import subprocess
import sys
import venv

import pytest
from engine_process import EngineProcess

from stapel_rl.env import apply_move, initial_fen, legal_moves

REPO = pathlib.Path(__file__).resolve().parents[1]
# What building the wheel reads: the package (configs/ and checkpoints/ inside it are symlinks to
# the top-level directories) and the project files.
SOURCES = ["pyproject.toml", "README.md", "stapel_rl", "configs", "checkpoints"]
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")
# One torch thread: on a busy machine torch's thread pool made the match 30x slower (137 s against 4 s).
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _run(command: "list[str]", cwd: pathlib.Path, timeout: float = 120) -> str:
    done = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _running_site_packages() -> "list[str]":
    """The site-packages directories of the interpreter running the tests, in its search order."""
    dirs = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    return [d for d in dict.fromkeys(dirs) if pathlib.Path(d).is_dir()]


def _see_running_packages(python: pathlib.Path) -> None:
    """Make the environment of ``python`` import the running interpreter's packages after its own."""
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (pathlib.Path(own) / "_running_interpreter.pth").write_text("".join(d + "\n" for d in _running_site_packages()))


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> "tuple[pathlib.Path, pathlib.Path]":
    """(bin directory of a fresh environment with the wheel installed, an empty working directory)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    source.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, symlinks=True, ignore=IGNORE)
        else:
            shutil.copy2(path, source / name)
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(root / "dist"),
            str(source),
        ],
        cwd=root,
        timeout=300,
    )
    (wheel,) = (root / "dist").glob("stapel_rl-*.whl")
    venv.create(root / "env", with_pip=False)
    bin_dir = root / "env" / "bin"
    _see_running_packages(bin_dir / "python")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(bin_dir / "python"),
            "install",
            "--no-deps",
            "--ignore-installed",
            "--no-index",
            "-q",
            str(wheel),
        ],
        cwd=root,
    )
    work = root / "work"
    work.mkdir()
    return bin_dir, work


@pytest.mark.slow
def test_the_environment_imports_the_installed_package(installed):
    bin_dir, work = installed
    out = _run(
        [
            str(bin_dir / "python"),
            "-c",
            "import stapel_rl, stapel_rl.bundled as b, stapel_rl.train.app as a; "
            "print(stapel_rl.__file__, a.CONFIG_DIR, stapel_rl.pretrained('II'), sep='\\n')",
        ],
        cwd=work,
    )
    module, config_dir, agent = (pathlib.Path(line) for line in out.splitlines())
    package = (
        bin_dir.parent
        / "lib"
        / f"python{sys.version_info.major}.{sys.version_info.minor}"
        / "site-packages"
        / "stapel_rl"
    )
    assert module == package / "__init__.py"
    assert config_dir == package / "configs" and not config_dir.is_symlink()
    assert sorted(p.relative_to(config_dir).as_posix() for p in config_dir.rglob("*.yaml")) == sorted(
        p.relative_to(REPO / "configs").as_posix() for p in (REPO / "configs").rglob("*.yaml")
    )
    assert agent == package / "checkpoints" / "variant_II.pt"
    assert agent.read_bytes() == (REPO / "checkpoints" / "variant_II.pt").read_bytes()
    assert (package / "checkpoints" / "variant_I.md").read_text() == (REPO / "checkpoints" / "variant_I.md").read_text()


@pytest.mark.slow
def test_stapel_train_runs_from_another_directory(installed):
    bin_dir, work = installed
    _run(
        [
            str(bin_dir / "stapel-train"),
            "train=tiny",
            "model=tiny",
            "mcts.num_simulations=4",
            "train.threads=1",
            "hydra.run.dir=run",
        ],
        cwd=work,
        timeout=180,
    )
    assert sorted(p.name for p in (work / "run" / "checkpoints").glob("*.pt")) == ["ckpt_00000001.pt"]
    # A user's own config directory adds to the packaged one.
    mine = work / "mine" / "model"
    mine.mkdir(parents=True)
    (mine / "narrow.yaml").write_text("defaults:\n  - tiny\nchannels: 8\n")
    out = _run(
        [str(bin_dir / "stapel-train"), "--config-dir", str(work / "mine"), "model=narrow", "--cfg", "job"], cwd=work
    )
    assert re.search(r"^model:\n(  .*\n)*  channels: 8\n", out, re.M) and re.search(r"^  blocks: 2$", out, re.M)


@pytest.mark.slow
def test_stapel_match_plays_the_bundled_agent_by_name(installed):
    bin_dir, work = installed
    out = _run(
        [str(bin_dir / "stapel-match"), "mcts:variant_I:sims=8", "random", "--games", "4", "--variant", "I"], cwd=work
    )
    line = re.fullmatch(r"mcts:variant_I:sims=8 vs random \(Variant I\): (\d+)-(\d+)-(\d+)\b.*\n", out)
    assert line and sum(int(n) for n in line.groups()) == 4, out


@pytest.mark.slow
def test_stapel_engine_plays_the_bundled_agent_by_name(installed):
    bin_dir, work = installed
    engine = EngineProcess(
        "--agent",
        "mcts:variant_II:sims=8",
        "--variant",
        "II",
        command=[str(bin_dir / "stapel-engine")],
        cwd=str(work),
        env=ENV,
    )
    try:
        engine.send("stapel")
        assert engine.read_until("stapelok")[-2] == "id agent mcts:variant_II:sims=8"
        fen, moves = initial_fen("II"), []
        for _ in range(4):
            engine.send("position startpos" + (" moves " + " ".join(moves) if moves else ""))
            engine.send("go")
            lines = engine.read_until("bestmove ")
            move = lines[-1].split()[1]
            assert move in legal_moves(fen, "II"), (fen, lines)
            assert re.fullmatch(r"info time \d+( nodes 8)?", lines[-2]), lines
            fen = apply_move(fen, move, "II")
            moves.append(move)
        engine.send("quit")
        assert engine.proc.wait(timeout=30) == 0
    finally:
        engine.close()
        engine.proc.stdout.close()
        engine.proc.stderr.close()
