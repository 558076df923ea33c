"""The agents the web server offers: baselines and checkpoints, chosen by name only.

A client names an agent by a spec, as on the command line, but the server
accepts only what it offers:

    random, greedy, alphabeta:1 .. alphabeta:4      the baselines
    classical:time=0.1, 0.5 or 1                    the compiled alpha-beta engine, seconds a move
    classical:time=0.1, 0.5 or 1:eval=nnue          the same with its packaged learned evaluation
    mcts:NAME[:sims=N][:algorithm=puct|gumbel]      a checkpoint with its search
    policy:NAME                                     a checkpoint's raw policy

NAME is one of the checkpoints found at start-up (the committed
``checkpoints/*.pt`` and the ``*.pt`` files under each ``--checkpoints``
directory), never a path: the registry maps names to files, so a client cannot
make the server open a file it names (``mcts:/etc/passwd`` is unknown).
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
import threading
from collections.abc import Sequence

import yaml

from stapel_rl import bundled
from stapel_rl.eval.agents import Agent, make_agent
from stapel_rl.eval.network_agents import MCTSAgent
from stapel_rl.models.checkpoint import load

#: The times a move the classical engine is offered at, with and without its learned evaluation.
CLASSICAL_TIMES = ("0.1", "0.5", "1")
BASELINES = (
    "random",
    "greedy",
    "alphabeta:1",
    "alphabeta:2",
    "alphabeta:3",
    "alphabeta:4",
    *(f"classical:time={seconds}" for seconds in CLASSICAL_TIMES),
    # The strongest player the server has (docs/classical.md, "The packaged network and what it gains").
    *(f"classical:time={seconds}:eval=nnue" for seconds in CLASSICAL_TIMES),
)
NETWORK_KINDS = ("mcts", "policy")
DEFAULT_SIMULATIONS = 64
#: Bounds a client may ask for: a search of more simulations would hold a worker thread for minutes.
MAX_SIMULATIONS = 1024
ALGORITHMS = ("puct", "gumbel")
#: The committed agents, where the package ships them (stapel_rl.bundled).
COMMITTED_DIR = bundled.CHECKPOINT_DIR
#: Most checkpoint files one ``--checkpoints`` directory contributes (a runs/ tree can hold hundreds).
MAX_FILES_PER_DIR = 200
#: Largest checkpoint file read just to learn its variant for the agent list.
MAX_LABEL_READ_BYTES = 32 * 1024 * 1024


class AgentError(ValueError):
    """A spec the server does not offer, or options out of bounds; the message says which."""


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A checkpoint file offered under ``name``; ``variant`` as the file records it (read lazily)."""

    name: str
    path: pathlib.Path


def find_checkpoints(directories: "list[pathlib.Path]") -> "dict[str, Checkpoint]":
    """Offered checkpoints by name: each file's path below its directory without ``.pt``.

    A name taken by an earlier directory gets the directory's own name in front;
    names holding ':' cannot be written in a spec and are skipped.
    """
    found: "dict[str, Checkpoint]" = {}
    for directory in directories:
        directory = pathlib.Path(directory).resolve()
        if not directory.is_dir():
            continue
        files = sorted(p for p in directory.rglob("*.pt") if p.is_file())[:MAX_FILES_PER_DIR]
        for path in files:
            name = path.relative_to(directory).with_suffix("").as_posix()
            if name in found:
                name = f"{directory.name}/{name}"
            if ":" in name or name in found:
                continue
            found[name] = Checkpoint(name, path)
    return found


@dataclasses.dataclass(frozen=True)
class Choice:
    """A parsed, allowed spec: a baseline, or a network kind with a checkpoint and its options."""

    spec: str
    kind: str
    checkpoint: "Checkpoint | None" = None
    simulations: int = DEFAULT_SIMULATIONS
    algorithm: "str | None" = None


class AgentRegistry:
    """Parses client specs against what is offered and builds (and caches) the agents."""

    def __init__(self, checkpoint_dirs: "Sequence[str | pathlib.Path]" = (), include_committed: bool = True):
        dirs = ([COMMITTED_DIR] if include_committed else []) + [pathlib.Path(d) for d in checkpoint_dirs]
        self.checkpoints = find_checkpoints(dirs)
        self._lock = threading.Lock()
        self._variants: "dict[str, str | None]" = {}

    # ------------------------------------------------------------ parsing

    def offered(self) -> "list[str]":
        """Every spec the page lists (network agents with their default options)."""
        return list(BASELINES) + [f"{kind}:{name}" for name in self.checkpoints for kind in NETWORK_KINDS]

    def _unknown(self, spec: str) -> AgentError:
        names = ", ".join(self.checkpoints) or "none found"
        return AgentError(
            f"unknown agent {spec!r}: this server offers {', '.join(BASELINES)}, "
            f"mcts:NAME[:sims=N][:algorithm=puct|gumbel] and policy:NAME with NAME one of: {names}"
        )

    def parse(self, spec: object) -> Choice:
        """The offered agent ``spec`` names; ``AgentError`` for anything else."""
        if not isinstance(spec, str) or not spec.strip():
            raise AgentError(f"agent must be a non-empty string such as 'greedy', got {spec!r}")
        spec = spec.strip()
        if spec in BASELINES:
            return Choice(spec, spec)
        kind, _, rest = spec.partition(":")
        name, *options = rest.split(":") if rest else [""]
        if kind not in NETWORK_KINDS or name not in self.checkpoints:
            raise self._unknown(spec)
        simulations, algorithm = DEFAULT_SIMULATIONS, None
        for item in options:
            key, sep, value = item.partition("=")
            if kind == "mcts" and sep and key == "sims":
                simulations = parse_simulations(value)
            elif kind == "mcts" and sep and key == "algorithm" and value in ALGORITHMS:
                algorithm = value
            else:
                usage = (
                    "mcts:NAME takes sims=N and algorithm=puct|gumbel" if kind == "mcts" else "policy:NAME takes none"
                )
                raise AgentError(f"agent {spec!r}: unexpected option {item!r} ({usage})")
        return Choice(spec, kind, self.checkpoints[name], simulations, algorithm)

    # ------------------------------------------------------------ building

    def build(self, spec: object) -> Agent:
        """The agent for an offered spec (network agents share one loaded network per checkpoint)."""
        choice = self.parse(spec)
        if choice.checkpoint is None:
            agent = make_agent(choice.spec)
        else:
            base = self._load(choice.kind, str(choice.checkpoint.path))
            agent = base
            if choice.kind == "mcts":
                assert isinstance(base, MCTSAgent)  # what make_agent("mcts:...") builds
                config = dataclasses.replace(
                    base.config, num_simulations=choice.simulations, algorithm=choice.algorithm or base.config.algorithm
                )
                agent = dataclasses.replace(base, config=config)
        agent.name = choice.spec
        return agent

    @functools.lru_cache(maxsize=32)  # noqa: B019 - the registry lives as long as the app
    def _load(self, kind: str, path: str) -> Agent:
        # make_agent with the server's own path: the client's text never reaches the file system.
        return make_agent(f"{kind}:{path}")

    def checkpoint_variant(self, name: str) -> "str | None":
        """The variant checkpoint ``name`` was trained on ("I", "II"), None if that is not cheap to tell."""
        with self._lock:
            if name not in self._variants:
                self._variants[name] = recorded_variant(self.checkpoints[name].path)
            return self._variants[name]

    def describe(self) -> dict:
        """What ``GET /api/agents`` answers: the offered specs, checkpoints with variants, defaults."""
        checkpoints = [{"name": name, "variant": self.checkpoint_variant(name)} for name in self.checkpoints]
        analysis = {}
        for variant in ("I", "II"):
            match = [c["name"] for c in checkpoints if c["variant"] == variant]
            analysis[variant] = f"mcts:{match[0]}" if match else None
        return {
            "agents": self.offered(),
            "baselines": list(BASELINES),
            "checkpoints": checkpoints,
            "analysis": analysis,
            "max_simulations": MAX_SIMULATIONS,
        }


def recorded_variant(path: pathlib.Path) -> "str | None":
    """The variant a checkpoint was trained on: from its run's ``.hydra/config.yaml`` when the file
    lies in a run directory, else from the file itself if it is small (an exported agent or a snapshot;
    a training checkpoint with its replay buffer is ~100 MB, too much to read for a label)."""
    for directory in list(path.parents)[:3]:
        config = directory / ".hydra" / "config.yaml"
        if config.is_file():
            try:
                name = (yaml.safe_load(config.read_text()) or {}).get("variant", {}).get("name")
            except (OSError, yaml.YAMLError, AttributeError):
                name = None
            return str(name) if name else None
    if path.stat().st_size > MAX_LABEL_READ_BYTES:
        return None
    try:
        data = load(path)
    except ValueError:
        return None
    name = data.get("variant") or (data.get("config") or {}).get("variant", {}).get("name")
    return str(name) if name else None


def parse_simulations(value: "str | int") -> int:
    """A simulation count within ``1 .. MAX_SIMULATIONS``; ``AgentError`` otherwise."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise AgentError(f"simulations must be a whole number, got {value!r}") from None
    if not 1 <= number <= MAX_SIMULATIONS:
        raise AgentError(f"simulations must be between 1 and {MAX_SIMULATIONS}, got {number}")
    return number
