"""``ClassicalAgent``: the compiled searcher behind the Agent protocol, spec
``classical[:time=SECONDS][:depth=N][:nodes=N][:eval=PATH]``.

``eval=PATH`` names a weights file in the format of the packaged
``weights_I.json`` / ``weights_II.json`` (``{"metadata": {...}, "weights":
{feature: centi-men}}``, every feature of ``FEATURES`` named once), or a
learned evaluation network (``.npz``, ``stapel_rl.classical.nnue``), or
``nnue`` for the network packaged for the game's variant; without it each
variant uses its packaged weights file. ``scripts/fit_classical.py`` writes
weights files, ``scripts/train_eval.py`` networks (see ``docs/classical.md``).

Every live game of a batch is searched in turn. A multi-leap capture is one
full move to the search but several actions to the environment: the agent
returns the first leap and remembers the rest, so when called again in the
middle of that capture it continues the chosen path without searching (a
state it did not plan for is searched from where it stands).
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from typing import TypedDict

import numpy as np

from stapel_rl.classical import nnue
from stapel_rl.classical.board import OVER, leap
from stapel_rl.classical.evaluation import read_weights
from stapel_rl.classical.nnue import Net
from stapel_rl.classical.position import Position, row_path, step_actions
from stapel_rl.classical.searcher import MAX_DEPTH, Searcher, load_compiled
from stapel_rl.env.state import State
from stapel_rl.env.variants import Variant

DEFAULT_TIME = 1.0
#: Seconds kept back from each move's budget for the work around the search (conversions, timer).
TIME_MARGIN = 0.003
_OPTIONS = ("time", "depth", "nodes", "eval")
_USAGE = (
    "use 'classical[:time=SECONDS][:depth=N][:nodes=N][:eval=PATH]' with SECONDS > 0, N >= 1, "
    "PATH a weights JSON file, an evaluation network .npz or nnue (the packaged network) "
    "(e.g. 'classical:time=0.5' or 'classical:depth=8:nodes=100000')"
)


def _plan_key(h: np.ndarray, c: np.ndarray, side: int, capturing: int, last_leapt: int) -> tuple:
    return h.tobytes(), c.tobytes(), side, capturing, last_leapt


@dataclasses.dataclass
class ClassicalAgent:
    """Alpha-beta over full moves with the first of the limits hit ending each search.

    Attributes:
        time_per_move: seconds per decision and game (``None``: no time limit);
            a match harness may set it. It is the agent's clock
            (``seconds_per_decision``, ``stapel_rl.eval.agents.clock``).
        depth: deepest iteration (plies of full moves), ``None`` for no limit.
        nodes: positions visited per search, ``None`` for no limit (makes play deterministic).
        tt_bits: the transposition table holds ``2 ** tt_bits`` entries per variant.
        weights: ``int64 [len(FEATURES)]`` evaluation weights for every variant,
            ``None`` for each variant's packaged file.
        net: a learned correction of the evaluation (``nnue.Net``) for every variant.
        packaged_net: each variant's packaged network (``eval=nnue``).
        weights_variant: the variant ``weights`` or ``net`` were fitted for (from the
            file's metadata), ``None`` if unknown; playing another variant raises.
            It is the agent's ``variant`` (``stapel_rl.eval.agents.check_variant``).
        last: the last search's result (``SearchResult``) or ``None`` (diagnostics).
    """

    time_per_move: "float | None" = DEFAULT_TIME
    depth: "int | None" = None
    nodes: "int | None" = None
    tt_bits: int = 20
    name: str = "classical"
    weights: "np.ndarray | None" = None
    weights_variant: "str | None" = None
    net: "Net | None" = None
    packaged_net: bool = False
    last: object = dataclasses.field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._searchers: "dict[Variant, Searcher]" = {}
        self._plans: "dict[tuple, int]" = {}
        load_compiled()  # here, off every move's clock and out of the time a match counts per move

    @property
    def seconds_per_decision(self) -> "float | None":
        return self.time_per_move

    @property
    def variant(self) -> "str | None":
        return self.weights_variant

    def searcher(self, variant: Variant) -> Searcher:
        if variant not in self._searchers:
            if self.weights_variant is not None and self.weights_variant != variant.name:
                raise ValueError(
                    f"classical: the evaluation weights are for Variant {self.weights_variant}, "
                    f"this game is Variant {variant.name}; pass that variant's weights file with eval="
                )
            net = nnue.load_packaged(variant.name) if self.packaged_net else self.net
            self._searchers[variant] = Searcher(variant, weights=self.weights, tt_bits=self.tt_bits, net=net)
        return self._searchers[variant]

    def __call__(self, state: State, rng: "np.random.Generator | None" = None) -> np.ndarray:
        """The next action of every live game (0 for finished ones)."""
        self.searcher(state.variant)  # built before any move's clock starts
        actions = np.zeros(state.batch_size, np.int64)
        for g in np.flatnonzero(~state.done):
            actions[g] = self._decide(state, int(g), time.perf_counter())
        return actions

    def _decide(self, state: State, g: int, start: float) -> int:
        pos = Position.from_state(state, g)
        legal = state.legal_action_mask[g]
        if pos.capturing >= 0:
            planned = self._plans.pop(_plan_key(pos.h, pos.c, pos.side, pos.capturing, pos.last_leapt), None)
            if planned is not None and legal[planned]:
                return planned
        rows = pos.move_rows()
        if len(rows) == 1:
            path = row_path(rows[0])
        else:
            deadline = None if self.time_per_move is None else start + self.time_per_move - TIME_MARGIN
            self.last = self.searcher(state.variant).search(pos, depth=self.depth, nodes=self.nodes, deadline=deadline)
            path = self.last.path
        actions = step_actions(path)
        self._remember(pos, path, actions)
        if not legal[actions[0]]:  # never expected: the tests hold the generator to the engine
            warnings.warn(f"classical: move {path} is not legal here; playing the first legal action", stacklevel=2)
            return int(np.flatnonzero(legal)[0])
        return actions[0]

    def _remember(self, pos: Position, path: "list[int]", actions: "list[int]") -> None:
        """Store the leaps after the first of a capture, keyed by the state each is played from."""
        if len(self._plans) > 10_000:  # plans of abandoned games
            self._plans.clear()
        h, c = pos.h.copy(), pos.c.copy()
        for i in range(len(path) - 2):
            p, q = path[i], path[i + 1]
            leap(h, c, p, int(OVER[p, q]), q)
            self._plans[_plan_key(h, c, pos.side, q, int(OVER[p, q]))] = actions[i + 1]


class _SpecOptions(TypedDict, total=False):
    """The options of a ``classical`` spec (``_OPTIONS``), parsed."""

    time: float
    depth: int
    nodes: int
    eval: str


def from_spec_args(args: "list[str]") -> ClassicalAgent:
    """The agent of spec ``classical[:time=SECONDS][:depth=N][:nodes=N][:eval=PATH]`` from the parts after
    ``classical``.

    With no limit the agent thinks ``time=1.0`` s per move; with some, only
    those limits apply. Raises ``ValueError`` naming the allowed options, or
    what is wrong with the weights file.
    """
    spec = ":".join(["classical", *args])
    options: _SpecOptions = {}
    for item in args:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in _OPTIONS:
            raise ValueError(
                f"agent spec {spec!r}: unknown option {item!r}; options are {', '.join(_OPTIONS)}; {_USAGE}"
            )
        if key in options:
            raise ValueError(f"agent spec {spec!r}: {key} given twice; {_USAGE}")
        if key == "eval":
            if not value.strip():
                raise ValueError(f"agent spec {spec!r}: eval needs a weights file path; {_USAGE}")
            options["eval"] = value.strip()
        elif key == "time":
            options["time"] = _seconds(value, spec)
        elif key == "depth":
            options["depth"] = _count(value, spec, key)
        else:
            options["nodes"] = _count(value, spec, key)
    weights, weights_variant, net = None, None, None
    packaged_net = options.get("eval") == "nnue"
    if "eval" in options and not packaged_net:
        try:
            if str(options["eval"]).endswith(".npz"):
                net = nnue.load(options["eval"])
                metadata = net.metadata
            else:
                weights, metadata = read_weights(str(options["eval"]))
        except ValueError as err:
            raise ValueError(f"agent spec {spec!r}: {err}") from None
        variant = metadata.get("variant")
        weights_variant = str(variant) if variant in ("I", "II") else None
    if not set(options) - {"eval"}:
        options["time"] = DEFAULT_TIME
    if options.get("depth", 0) > MAX_DEPTH:
        raise ValueError(f"agent spec {spec!r}: depth must be at most {MAX_DEPTH}; {_USAGE}")
    return ClassicalAgent(
        time_per_move=options.get("time"),
        depth=options.get("depth"),
        nodes=options.get("nodes"),
        weights=weights,
        weights_variant=weights_variant,
        net=net,
        packaged_net=packaged_net,
    )


def _seconds(text: str, spec: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"agent spec {spec!r}: time {text!r} is not a number of seconds; {_USAGE}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"agent spec {spec!r}: time must be a positive number of seconds, got {text!r}; {_USAGE}")
    return value


def _count(text: str, spec: str, what: str) -> int:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value != int(value) or value < 1:
        raise ValueError(f"agent spec {spec!r}: {what} must be a whole number >= 1, got {text!r}; {_USAGE}")
    return int(value)
