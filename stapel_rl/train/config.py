"""The training config schema (Hydra structured config): one dataclass per group, each the library's own.

- ``variant``: ``VariantConfig`` (here); options in ``configs/variant/``.
- ``model``: ``stapel_rl.models.NetworkConfig``; options ``stapel_rl.models.PRESETS``.
- ``mcts``: ``stapel_rl.train.selfplay.SelfPlayConfig``, a ``stapel_rl.mcts.SearchConfig``
  with self-play's move choice; options in ``configs/mcts/``.
- ``train``: ``TrainConfig`` (here), an ``stapel_rl.train.trainer.OptimConfig`` with the
  run's budget, replay buffer and schedules; options in ``configs/train/``.
- ``distributed``: ``DistributedConfig`` (here); options in ``configs/distributed/``.
- ``minimax``: ``MinimaxConfig`` (here), the generation loop of the classical engine's learned
  evaluation (``loop: minimax``, ``stapel_rl.train.minimax``); options in ``configs/minimax/``.

Each field has one default, where it is declared; the YAML options set only what
they choose differently. A key not declared is rejected by Hydra ("Key 'x' not in
'TrainConfig'"); keys removed in 0.2.0 are named with their replacement
(``REMOVED_KEYS``). The run's periodic work (evaluation, checkpoints, snapshots,
gating, images) is scheduled in minutes of the run, ``0`` turning it off.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from hydra.core.config_store import ConfigStore

from stapel_rl.env import get_variant
from stapel_rl.models.fused import PRECISIONS
from stapel_rl.models.network import PRESETS, NetworkConfig
from stapel_rl.train.selfplay import SelfPlayConfig
from stapel_rl.train.trainer import LR_SCHEDULES, TRAIN_PRECISIONS, OptimConfig


@dataclasses.dataclass
class VariantConfig:
    name: str = "I"  # "I" (blocked side loses) or "II" (back-row points decide)
    ply_cap: int = 600  # full moves after which a game is truncated (counts as a draw in training)

    def __post_init__(self) -> None:
        get_variant(self.name)  # an unknown name is refused, naming the variants
        if self.ply_cap < 1:
            raise ValueError(f"variant.ply_cap must be at least 1, got {self.ply_cap}")


@dataclasses.dataclass
class TrainConfig(OptimConfig):
    """The run: its budget, self-play batch, replay buffer, schedules; the optimiser's fields are
    ``OptimConfig``'s (``lr``, ``weight_decay``, ``warmup_steps``, ``lr_schedule``, ``total_steps``,
    ``lr_min_factor``, ``points_weight``, ``points_scale``, ``train_precision``)."""

    hours: float = 1.0  # wall-clock budget of the run (0 = no limit)
    iterations: int = 0  # stop after this many iterations (0 = no limit)
    num_games: int = 128  # self-play games played at once (the network's batch)
    positions_per_iteration: int = 4096  # new positions per iteration before training on them
    first_positions: int = 2048  # new positions of a run's first iteration, at most positions_per_iteration
    # (0 = positions_per_iteration): with first_simulations, the first line with losses comes sooner
    first_simulations: int = 4  # simulations per search in a run's first iteration, whose network is
    # untrained (0 = mcts.num_simulations)
    replay_capacity: int = 60000  # positions kept in the replay buffer (sliding window); with replay_growth, the
    # window's size before it starts to grow
    replay_growth: float = 0.0  # 0: a fixed window; in (0, 1]: KataGo's growing window, which samples the newest
    # c * (1 + g * ((n / c) ** 0.75 - 1) / 0.75) of the n positions played (c = replay_capacity, g = this), at
    # most replay_max (each position about 1.5 kB of memory; checkpoints save the window)
    replay_max: int = 1000000  # positions the growing window holds at most (with replay_growth)
    min_replay: int = 2048  # positions needed before the first gradient step
    batch_size: int = 256  # positions per gradient step
    sample_ratio: float = 2.0  # training samples drawn per new self-play position
    value_mix: float = 0.5  # value target: (1 - value_mix) * game result + value_mix * the search's value
    # (SearchOutput.search_value: Gumbel's improved policy's expected Q, PUCT's root mean)
    engine_positions: str | None = None  # positions.npz of scripts/warm_start.py (the classical engine's games):
    # every gradient step also draws engine_fraction of its batch from them, so self-play from a warm start keeps
    # learning the engine's moves and results beside its own games (None: self-play positions only)
    engine_fraction: float = 0.25  # share of each batch drawn from engine_positions (with engine_positions set)
    eval_every_minutes: float = 10.0  # minutes of the run between evaluations, and one at its end (0 = none)
    eval_opponents: list[str] = dataclasses.field(default_factory=lambda: ["greedy", "alphabeta:2"])  # agent specs
    eval_games: int = 16  # games per opponent: colour-swapped pairs from random openings
    eval_simulations: int = 16  # simulations of the evaluated MCTS agent (no noise)
    checkpoint_every_minutes: float = 2.0  # minutes of the run between checkpoints (0: only the last one, which
    # every run writes); a save with a full replay buffer takes a second or so
    keep_checkpoints: int = 2  # newest checkpoints kept on disk
    keep_every_minutes: float = 5.0  # also keep the network alone in snapshots/ every this many minutes (0 = never)
    gate: bool = False  # self-play keeps the best network; a new one replaces it only after an SPRT accepts it
    gate_every_minutes: float = 0.5  # minutes of the run between gating tests (with gate)
    gate_elo1: float = 20.0  # SPRT H1: the candidate is at least this much stronger (H0: not stronger)
    gate_max_pairs: int = 100  # colour-swapped pairs at most per gating test (undecided: keep the old one)
    gate_simulations: int = 8  # simulations of both agents in gating games (with gate_time 0)
    gate_time: float = 0.0  # seconds both agents search each move of each gating game, one game per call, with
    # no simulation limit (equal time, as stapel-sprt --time); 0 = by gate_simulations, the games in one batch
    image_every_minutes: float = 1.0  # minutes of the run between TensorBoard images of a self-play game halfway
    threads: int = 0  # torch threads of this process (0 = torch's default; 1 with selfplay_workers)
    selfplay_workers: int = 2  # 0: self-play in this process; N: N worker processes play while this one trains
    inference_precision: str = "auto"  # self-play/evaluation network: fp32, bf16, fp16, onnx (fp32 as one ONNX
    # Runtime graph, CPU) or auto (CPU: bf16 where native, else onnx with the extra "fast", else fp32; CUDA: bf16
    # or fp16)

    def __post_init__(self) -> None:
        """A value the run cannot use is refused here, before any game: named, with what it takes."""
        if not (self.gate_time >= 0 and math.isfinite(self.gate_time)):
            raise ValueError(
                f"train.gate_time must be 0 (gating games by train.gate_simulations) or a positive number of "
                f"seconds a move, got {self.gate_time}"
            )
        for name, least in _AT_LEAST.items():
            if getattr(self, name) < least:
                raise ValueError(f"train.{name} must be at least {least}, got {getattr(self, name)}")
        for name in _OFF_OR_POSITIVE:
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"train.{name} must be 0 (none) or a positive number, got {value}")
        if not (self.sample_ratio > 0 and self.gate_every_minutes > 0):
            raise ValueError(
                "train.sample_ratio and train.gate_every_minutes must be positive, got "
                f"{self.sample_ratio} and {self.gate_every_minutes}"
            )
        if not (self.lr >= 0 and math.isfinite(self.lr)):  # 0: the network stays as it starts (tests)
            raise ValueError(f"train.lr must be a finite number >= 0, got {self.lr}")
        if not 0.0 <= self.value_mix <= 1.0:
            raise ValueError(f"train.value_mix must be in [0, 1], got {self.value_mix}")
        if not 0.0 < self.engine_fraction < 1.0:
            raise ValueError(f"train.engine_fraction must be in (0, 1), got {self.engine_fraction}")
        choices = {"inference_precision": PRECISIONS, "train_precision": TRAIN_PRECISIONS, "lr_schedule": LR_SCHEDULES}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"train.{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        if not 0.0 <= self.replay_growth <= 1.0:
            raise ValueError(f"train.replay_growth must be 0 (a fixed window) or in (0, 1], got {self.replay_growth}")
        if self.replay_growth and self.replay_max < self.replay_capacity:
            raise ValueError(
                f"train.replay_max ({self.replay_max}) is less than train.replay_capacity ({self.replay_capacity}), "
                "the size the growing window starts from"
            )
        if self.min_replay > self.replay_capacity:
            raise ValueError(
                f"train.min_replay ({self.min_replay}) is more than train.replay_capacity ({self.replay_capacity}): "
                "the buffer would never hold enough positions to train on"
            )


#: ``TrainConfig`` counts and their smallest values.
_AT_LEAST = {
    "iterations": 0,
    "num_games": 1,
    "positions_per_iteration": 1,
    "first_positions": 0,
    "first_simulations": 0,
    "replay_capacity": 1,
    "replay_max": 1,
    "min_replay": 1,
    "batch_size": 1,
    "eval_games": 0,
    "eval_simulations": 1,
    "keep_checkpoints": 1,
    "gate_max_pairs": 1,
    "gate_simulations": 1,
    "threads": 0,
    "selfplay_workers": 0,
}
#: ``TrainConfig`` budgets and schedules where 0 means none (no limit, never).
_OFF_OR_POSITIVE = (
    "hours",
    "eval_every_minutes",
    "checkpoint_every_minutes",
    "keep_every_minutes",
    "image_every_minutes",
)


@dataclasses.dataclass
class DistributedConfig:
    """Self-play on Ray (stapel_rl/train/distributed.py); ``backend: none`` is the single-machine run."""

    backend: str = "none"  # "none": self-play in this process or train.selfplay_workers; "ray": Ray actors
    actors: int = 2  # Ray self-play actors (each a SelfPlay of train.num_games games)
    address: str | None = None  # null: start a local Ray here; "auto" or "host:port" or "ray://host:port": join
    cpus_per_actor: float = 1.0  # CPUs Ray reserves per actor; its torch threads = max(1, floor of this)
    gpus_per_actor: float = 0.0  # GPUs per actor (> 0: the actor's network runs on its CUDA device)
    learner_device: str | None = None  # device the learner trains on (null: the run's `device`)
    connect_timeout_s: float = 10.0  # seconds to reach a cluster's address before giving up with an error


#: ``minimax.start``'s named starting points (besides a network file).
MINIMAX_STARTS = ("hand_written", "zero", "nnue")


@dataclasses.dataclass
class MinimaxConfig:
    """The minimax generation loop (``stapel-train loop=minimax``, ``stapel_rl.train.minimax``): the classical
    engine plays itself with its current learned evaluation, a new one is trained on those games and promoted
    when an SPRT at equal time accepts it."""

    start: str = "hand_written"  # generation 0: "hand_written" (a network correcting the hand-written
    # evaluation), "zero" (a random network, no hand-written terms), "nnue" (the packaged network) or a .npz
    generations: int = 10  # generations to run (a resumed run goes on to this many)
    games: int = 200  # self-play games per generation
    nodes: int = 2000  # node budget of each self-play search
    jitter: float = 0.3  # node budgets drawn from [1 - jitter, 1 + jitter] * nodes
    epsilon: float = 0.05  # chance of a random full move in self-play
    opening_plies: int = 6  # self-play games open with 2 to this many random full moves
    value_mix: float = 0.8  # label: (1 - value_mix) * game result + value_mix * sigmoid(k * search score)
    window: int = 2  # the positions of this many newest generations are trained on
    holdout: int = 10  # every this-th game is kept for validation (early stopping)
    zero_scale: float = 0.002  # from zero: k, logit of the winning chances per centi-man (hand-written:
    # fitted to the first generation's games); the unit of search scores and of the network's output
    width: int = 32  # accumulator width of a new network (generations after the first keep their parent's)
    hidden: int = 16  # hidden units of a new network
    epochs: int = 30  # at most this many epochs per generation
    patience: int = 3  # epochs without a better validation loss before training stops
    batch_size: int = 512  # positions per gradient step
    lr: float = 3e-3  # Adam's learning rate
    match_time: float = 0.1  # seconds a move of both engines in gating and panel games (equal time)
    match_nodes: int = 0  # > 0: a node budget a search instead of match_time (deterministic: tests)
    gate_elo1: float = 20.0  # SPRT H1: the new network is at least this much stronger (H0: not stronger)
    gate_max_pairs: int = 200  # colour-swapped pairs at most per gating test (undecided: not promoted); at
    # 100 a 0.1-s gate left undecided generations that beat their parents by +78 to +89 Elo (docs/results.md)
    gate_batch_pairs: int = 10  # pairs played between two looks at the SPRT
    panel: list[str] = dataclasses.field(
        default_factory=lambda: ["classical:time=0.1", "classical:time=0.1:eval=nnue", "alphabeta:2"]
    )  # agent specs every generation's network is rated against (a fixed panel; configs/minimax/default.yaml
    # adds the run's variant's shipped MCTS agent; its timed agents think minimax.match_time seconds a move)
    panel_pairs: int = 4  # colour-swapped pairs per panel opponent, from random 4-ply openings
    threads: int = 1  # torch threads (1: training is reproducible from the seed)
    jobs: int = 2  # processes of one core each that play the self-play games, gate and panel pairs (the
    # positions a generation plays do not depend on it; timed matches do, as any timed game does)

    def __post_init__(self) -> None:
        """A value the loop cannot use is refused here, before any game: the first one out of its range."""
        if self.start not in MINIMAX_STARTS and not self.start.endswith(".npz"):
            raise ValueError(
                f"minimax.start must be one of {', '.join(MINIMAX_STARTS)} or a network .npz, got {self.start!r}"
            )
        positive = ("generations", "games", "nodes", "window", "holdout", "width", "hidden", "epochs", "patience")
        for name in (*positive, "batch_size", "gate_max_pairs", "gate_batch_pairs", "threads", "jobs"):
            if getattr(self, name) < 1:
                raise ValueError(f"minimax.{name} must be at least 1, got {getattr(self, name)}")
        if self.holdout < 2:
            raise ValueError(
                f"minimax.holdout must be at least 2 (every holdout-th game validates), got {self.holdout}"
            )
        if not 0 <= self.jitter < 1 or not 0 <= self.epsilon <= 1 or not 0 <= self.value_mix <= 1:
            raise ValueError("minimax.jitter must be in [0, 1), minimax.epsilon and minimax.value_mix in [0, 1]")
        if self.match_nodes < 0 or (self.match_nodes == 0 and self.match_time <= 0):
            raise ValueError("minimax.match_time must be > 0 seconds (or minimax.match_nodes > 0)")
        if self.zero_scale <= 0 or self.lr <= 0 or self.panel_pairs < 0:
            raise ValueError("minimax.zero_scale and minimax.lr must be > 0, minimax.panel_pairs >= 0")


@dataclasses.dataclass
class Config:
    variant: VariantConfig = dataclasses.field(default_factory=VariantConfig)
    model: NetworkConfig = dataclasses.field(default_factory=NetworkConfig)
    mcts: SelfPlayConfig = dataclasses.field(default_factory=SelfPlayConfig)
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)
    distributed: DistributedConfig = dataclasses.field(default_factory=DistributedConfig)
    minimax: MinimaxConfig = dataclasses.field(default_factory=MinimaxConfig)
    loop: str = "alphazero"  # "alphazero": MCTS self-play training; "minimax": the classical engine's
    # evaluation learned generation by generation (the minimax group)
    seed: int = 0  # seeds numpy and torch; the same seed and config replay the same run
    device: str = "cpu"  # "cpu", "cuda" or "auto" for the network during training
    # a checkpoint to continue from (default: the newest in this run's directory; once this run has saved its
    # own, whichever of the two has more iterations, so the same command after a kill loses nothing)
    resume: str | None = None
    init_weights: str | None = None  # a new run's network starts from this checkpoint's (a run's checkpoint, an
    # agent file, or variant_I / variant_II); optimiser, replay buffer, counters and schedule start anew
    # (fine-tuning, a longer training in stretches); a run that resumes ignores it

    def __post_init__(self) -> None:
        if self.device != "auto":
            try:
                torch.device(self.device)
            except RuntimeError:
                raise ValueError(f"device must be cpu, cuda, cuda:N or auto, got {self.device!r}") from None


def register() -> None:
    """Register the schema as ``schema`` (the root) and per group, for Hydra to validate against."""
    store = ConfigStore.instance()
    store.store(name="schema", node=Config)
    store.store(group="variant", name="schema", node=VariantConfig)
    store.store(group="model", name="schema", node=NetworkConfig)
    for name, preset in PRESETS.items():
        store.store(group="model", name=name, node=preset)
    store.store(group="mcts", name="schema", node=SelfPlayConfig)
    store.store(group="train", name="schema", node=TrainConfig)
    store.store(group="distributed", name="schema", node=DistributedConfig)
    store.store(group="minimax", name="schema", node=MinimaxConfig)


#: Keys of the ``train`` group removed in 0.2.0, and what replaces each (the schedules went to minutes).
REMOVED_KEYS = {
    "train.eval_every": "train.eval_every_minutes",
    "train.checkpoint_every": "train.checkpoint_every_minutes",
    "train.gate_every": "train.gate_every_minutes",
    "train.image_every": "train.image_every_minutes",
}


def check_overrides(overrides: "list[str]") -> None:
    """Raise ``ValueError`` naming the replacement of any removed key among command-line ``overrides``."""
    for text in overrides:
        key = text.split("=", 1)[0].lstrip("+~")
        if key in REMOVED_KEYS:
            raise ValueError(
                f"{key} was removed in 0.2.0: the run's schedules are in minutes, use {REMOVED_KEYS[key]} "
                "(a tiny value such as 1e-6 acts every iteration; 0 turns it off)"
            )


def config_changes(saved: dict, current: dict, prefix: str = "") -> "list[str]":
    """The leaves where ``current`` differs from ``saved`` (nested dicts, as checkpoints store configs),
    each as ``"key: saved -> current"``; a key only one side has shows ``<absent>`` on the other.
    ``resume`` and ``init_weights`` are left out: they name where a run starts from, not how it trains."""
    changes = []
    for key in sorted(set(saved) | set(current), key=str):
        name = f"{prefix}{key}"
        if name in ("resume", "init_weights"):
            continue
        old, new = saved.get(key, "<absent>"), current.get(key, "<absent>")
        if isinstance(old, dict) and isinstance(new, dict):
            changes += config_changes(old, new, f"{name}.")
        elif old != new:
            changes.append(f"{name}: {old} -> {new}")
    return changes
