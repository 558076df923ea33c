"""The command lines of the README's and the docs' bash blocks, parsed without running (their tests).

Each ``stapel-*`` command's arguments go through that command's own argparse
parser (its ``main`` stops right after parsing), ``stapel-train KEY=VALUE``
overrides compose the Hydra config (a ``-m`` sweep: each of its values), and
``python scripts/X.py`` or ``python examples/X.py`` lines go through the
script's parser. Nothing trains or plays.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import pathlib
import re
import shlex
import sys
from collections.abc import Callable

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from stapel_rl.bundled import CONFIG_DIR
from stapel_rl.cli.train import LOOPS
from stapel_rl.train.config import check_overrides, register

REPO = pathlib.Path(__file__).resolve().parents[1]

#: Commands of other tools the pages show (installing, testing, the docs site, a Ray cluster's set-up, shell
#: steps): not the project's to parse.
OTHER_TOOLS = {
    "pip",
    "python3 -m venv",
    ".",
    "python -m pytest",
    "mkdocs",
    "tensorboard",
    "git",
    "jupyter",
    "cd",
    "cp",
    "mkdir",
    "scp",
    "export",
    "ray",
}

#: ``NAME=value`` before a command: an environment variable for that command alone.
ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def bash_commands(text: str) -> "list[list[str]]":
    """The commands of ``text``'s bash blocks as argument lists: lines continued with ``\\`` joined,
    comments dropped, ``&&`` chains split, leading environment assignments dropped."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.MULTILINE | re.DOTALL):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            words = shlex.split(line, comments=True)
            while words:
                end = words.index("&&") if "&&" in words else len(words)
                command = words[:end]
                while command and ENV_ASSIGNMENT.match(command[0]):
                    command = command[1:]
                commands.append(command)
                words = words[end + 1 :]
    return commands


def other_tool(words: "list[str]") -> bool:
    return any(words[: len(tool.split())] == tool.split() for tool in OTHER_TOOLS)


def project_commands(path: pathlib.Path) -> "list[list[str]]":
    """The project's own commands in the bash blocks of the page at ``path``."""
    return [words for words in bash_commands(path.read_text(encoding="utf-8")) if not other_tool(words)]


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


def sweep(overrides: "list[str]") -> "list[list[str]]":
    """The runs of a Hydra sweep (``-m``): one override list for each combination of the comma-separated
    values (brackets and quotes are values of their own, not sweeps)."""
    runs: "list[list[str]]" = [[]]
    for override in overrides:
        key, _, value = override.partition("=")
        values = value.split(",") if "," in value and not re.search(r"[\[\]{}()'\"]", value) else [value]
        runs = [run + [f"{key}={v}" if _ else override] for run in runs for v in values]
    return runs


def compose_train(overrides: "list[str]") -> None:
    """What ``stapel-train`` does with its overrides before training: a key removed or unknown fails."""
    if overrides[:1] in (["-m"], ["--multirun"]):
        for run in sweep(overrides[1:]):
            compose_train(run)
        return
    check_overrides(overrides)
    register()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        config = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    assert isinstance(config.hydra.run.dir, str)  # the run directory resolves
    # The dataclasses themselves, as training gets them: a value of the wrong type fails here.
    OmegaConf.to_object(OmegaConf.masked_copy(config, [str(key) for key in config if key != "hydra"]))
    assert config.loop in LOOPS


def check_command(words: "list[str]", monkeypatch: pytest.MonkeyPatch, capsys: "pytest.CaptureFixture[str]") -> None:
    """``words`` parse as the command they name (a ``stapel-*`` command, ``python scripts/X.py`` or
    ``python examples/X.py``), without running it."""
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
    assert command.startswith("stapel-"), f"a command these tests do not know: {shlex.join(words)}"
    parse(entry_point(command), command, argv, monkeypatch, capsys)
