"""Every command line of the README's bash blocks parses, without running: the front page cannot drift.

Each ``stapel-*`` command's arguments go through that command's own argparse
parser (its ``main`` stops right after parsing), ``stapel-train KEY=VALUE``
overrides compose the Hydra config, and ``python scripts/X.py`` or
``python examples/X.py`` lines go through the script's parser. A README
tournament also meets the resume check of its ``--out``, with the repository's
committed tournament folders in place. Nothing trains or plays.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import pathlib
import re
import shlex
import shutil
import sys
from collections.abc import Callable

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from stapel_rl.bundled import CONFIG_DIR
from stapel_rl.cli import tournament
from stapel_rl.cli.train import LOOPS
from stapel_rl.train.config import check_overrides, register

REPO = pathlib.Path(__file__).resolve().parents[1]

#: Commands of other tools the README shows (installing, testing, the docs site): not the project's to parse.
OTHER_TOOLS = {"pip", "python3 -m venv", ".", "python -m pytest", "mkdocs", "tensorboard", "git", "jupyter", "cd"}


def readme_commands() -> "list[list[str]]":
    """The README's bash commands as argument lists: comments dropped, ``&&`` chains split."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.MULTILINE | re.DOTALL):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            while words:
                end = words.index("&&") if "&&" in words else len(words)
                commands.append(words[:end])
                words = words[end + 1 :]
    return commands


def other_tool(words: "list[str]") -> bool:
    return any(words[: len(tool.split())] == tool.split() for tool in OTHER_TOOLS)


COMMANDS = [words for words in readme_commands() if not other_tool(words)]


class Parsed(Exception):
    """Raised by the patched ``parse_args``: the command's arguments parsed; stop before any work."""

    def __init__(self, namespace: argparse.Namespace) -> None:
        super().__init__("parsed")
        self.namespace = namespace


def stop_after_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    parse_args = argparse.ArgumentParser.parse_args

    def parse_then_stop(
        self: argparse.ArgumentParser, args: "list[str] | None" = None, namespace: None = None
    ) -> argparse.Namespace:
        raise Parsed(parse_args(self, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)


def entry_point(command: str) -> "Callable[..., object]":
    """The function behind a command of pyproject.toml's ``[project.scripts]`` (read there, not from an install
    that may predate a new command)."""
    scripts = (REPO / "pyproject.toml").read_text().split("[project.scripts]")[1].split("\n[")[0]
    targets = dict(re.findall(r'^([\w-]+) = "([\w.]+:\w+)"', scripts, re.MULTILINE))
    assert command in targets, f"{command} is no command of pyproject.toml's [project.scripts]"
    module, function = targets[command].split(":")
    try:
        return getattr(importlib.import_module(module), function)
    except ModuleNotFoundError as missing:  # an optional extra (the web board's fastapi, ...) not installed here
        pytest.skip(f"{command} needs {missing.name!r}")


def script_main(path: pathlib.Path) -> "Callable[..., object]":
    """``main`` of ``scripts/X.py`` or ``examples/X.py``, loaded as the script runs (its folder on the path)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None, f"no script {path}"
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as missing:  # an optional extra (sb3, ray, ...) not installed here
        pytest.skip(f"{path.name} needs {missing.name!r}")
    finally:
        sys.path.remove(str(path.parent))
    return module.main


def parse(
    main: "Callable[..., object]",
    prog: str,
    argv: "list[str]",
    monkeypatch: pytest.MonkeyPatch,
    capsys: "pytest.CaptureFixture[str]",
) -> argparse.Namespace:
    """The namespace ``main`` parses ``argv`` into; fails with argparse's message if it cannot."""
    stop_after_parsing(monkeypatch)
    monkeypatch.setattr(sys, "argv", [prog, *argv])  # for a main that reads sys.argv itself
    try:
        main(argv) if inspect.signature(main).parameters else main()
    except Parsed as done:
        return done.namespace
    except SystemExit as exit:
        pytest.fail(f"{prog} {shlex.join(argv)}: exit {exit.code}: {capsys.readouterr().err.strip()}")
    pytest.fail(f"{prog} {shlex.join(argv)}: returned without parsing its arguments")


def compose_train(overrides: "list[str]") -> None:
    """What ``stapel-train`` does with its overrides before training: a key removed or unknown fails."""
    check_overrides(overrides)
    register()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        config = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    assert isinstance(config.hydra.run.dir, str)  # the run directory resolves
    # The dataclasses themselves, as training gets them: a value of the wrong type fails here.
    OmegaConf.to_object(OmegaConf.masked_copy(config, [str(key) for key in config if key != "hydra"]))
    assert config.loop in LOOPS


def test_the_readme_has_the_commands_of_its_tour():
    names = [words[0] if words[0] != "python" else words[1] for words in COMMANDS]
    # Each tool of the tour is still there (a rewrite that drops a block would make this test vacuous).
    for expected in ("stapel-train", "stapel-match", "stapel-tournament", "stapel-play", "stapel-serve"):
        assert expected in names
    assert "stapel-engine" in names and "stapel-perft" in names and "scripts/elo_vs_time.py" in names
    assert len(COMMANDS) >= 15


@pytest.mark.parametrize("words", COMMANDS, ids=shlex.join)
def test_readme_command_parses(words, monkeypatch, capsys):
    command, argv = words[0], words[1:]
    monkeypatch.setenv("STAPEL_RL_KEEP_MALLOC", "1")  # the commands tune the allocator process-wide
    if command == "stapel-train":
        compose_train(argv)
        return
    if command == "python":
        path = REPO / argv[0]
        assert path.is_file() and path.parent.name in ("scripts", "examples"), f"not a script: {shlex.join(words)}"
        parse(script_main(path), argv[0], argv[1:], monkeypatch, capsys)
        return
    assert command.startswith("stapel-"), f"a README command this test does not know: {shlex.join(words)}"
    parse(entry_point(command), command, argv, monkeypatch, capsys)


def test_readme_tournament_resumes_the_committed_folder_or_starts_one(tmp_path, monkeypatch, capsys):
    """As far as its first game, beside a copy of the committed ``--out`` folder if there is one."""
    (words,) = [w for w in COMMANDS if w[0] == "stapel-tournament"]
    argv = words[1:]
    out = pathlib.Path(argv[argv.index("--out") + 1]) if "--out" in argv else pathlib.Path("tournaments/latest")
    if (REPO / out).is_dir():
        shutil.copytree(REPO / out, tmp_path / out)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STAPEL_RL_KEEP_MALLOC", "1")

    class FirstGame(Exception):
        pass

    def first_game(*args: object, **kwargs: object) -> None:
        raise FirstGame

    monkeypatch.setattr(tournament, "run", first_game)
    try:
        code = tournament.main(argv)
    except FirstGame:
        return
    pytest.fail(f"the README's tournament stops before its first game: exit {code}: {capsys.readouterr().err}")
