"""The training config schema (Hydra structured config). Every field is documented here.

The YAML files under ``configs/`` fill these groups; a key not declared here
is rejected by Hydra ("Key 'x' not in 'TrainConfig'").
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from hydra.core.config_store import ConfigStore


@dataclasses.dataclass
class VariantConfig:
    name: str = "I"  # "I" (blocked side loses) or "II" (back-row points decide)
    ply_cap: int = 600  # full moves after which a game is truncated (counts as a draw in training)


@dataclasses.dataclass
class ModelConfig:
    blocks: int = 6  # residual blocks
    channels: int = 64  # convolution channels in the trunk
    policy_channels: int = 4  # 1x1-conv channels feeding the policy head
    value_hidden: int = 64  # hidden units of the value (and points) head
    points_head: bool | None = None  # auxiliary head predicting the final points difference; None: on for Variant II
    layout: str = "grid"  # input planes: "grid" (10x10 board) or "compact" (10x5, dark squares only: half the FLOPs)
    policy_head: str = "fc"  # "fc" (linear layer to the 200 logits) or "conv" (per square and direction; NetworkConfig)


@dataclasses.dataclass
class MCTSConfig:
    algorithm: str = "puct"  # "puct" (AlphaZero) or "gumbel" (Gumbel AlphaZero, good with few simulations)
    num_simulations: int = 32  # simulations per decision (a move or leap with a choice) in self-play
    c_puct: float = 1.5  # PUCT exploration constant
    dirichlet_alpha: float = 0.3  # root Dirichlet noise concentration (PUCT)
    dirichlet_fraction: float = 0.25  # weight of the root noise; 0 disables it
    max_considered: int = 16  # Gumbel: actions sampled at the root
    c_visit: float = 50.0  # Gumbel: sigma(q) = (c_visit + max visits) * c_scale * q
    c_scale: float = 0.1  # Gumbel: see c_visit
    temperature_plies: int = 20  # PUCT: sample moves from visit counts for this many plies, then play the best
    fast_simulations: int = 0  # playout-cap randomisation: simulations of fast (unrecorded) searches; 0 = off
    full_search_prob: float = 0.25  # with fast_simulations > 0: share of decisions given the full search
    reuse_tree: bool = True  # keep the chosen subtree for the next decision
    skip_forced: bool = True  # play forced actions (later leaps of the only capture, an only move) unsearched
    forced_rounds: int | None = 2  # with skip_forced: forced actions a search node plays on through at most
    # (the batch's longest forced run costs every expansion a batched engine step per action; null: no cap)


@dataclasses.dataclass
class TrainConfig:
    hours: float = 1.0  # wall-clock budget of the run (0 = no limit)
    iterations: int = 0  # stop after this many iterations (0 = no limit)
    num_games: int = 128  # self-play games played at once (the network's batch)
    positions_per_iteration: int = 4096  # new positions per iteration before training on them
    first_positions: int = 2048  # new positions of a run's first iteration, at most positions_per_iteration
    # (0 = positions_per_iteration): with first_simulations, the first line with losses comes sooner
    first_simulations: int = 4  # simulations per search in a run's first iteration, whose network is
    # untrained (0 = mcts.num_simulations)
    replay_capacity: int = 60000  # positions kept in the replay buffer (sliding window)
    min_replay: int = 2048  # positions needed before the first gradient step
    batch_size: int = 256  # positions per gradient step
    sample_ratio: float = 2.0  # training samples drawn per new self-play position
    lr: float = 2e-3  # peak AdamW learning rate
    weight_decay: float = 1e-4  # AdamW weight decay
    warmup_steps: int = 100  # linear learning-rate warm-up, in gradient steps
    lr_schedule: str = "cosine"  # "cosine" or "constant"
    total_steps: int = 10000  # gradient steps the cosine schedule spans
    train_precision: str = "fp32"  # gradient steps: fp32, bf16 (autocast forward, fp32 weights), auto (bf16 if native)
    points_weight: float = 0.25  # weight of the auxiliary points loss (models with points_head)
    value_mix: float = 0.0  # value target: (1 - value_mix) * game result + value_mix * the search's value
    # (SearchOutput.search_value: Gumbel's improved policy's expected Q, PUCT's root mean)
    eval_every: int = 0  # iterations between evaluations (0 = only by eval_every_minutes)
    eval_every_minutes: float = 10.0  # minutes of the run between evaluations (0 = only by eval_every)
    eval_opponents: list[str] = dataclasses.field(default_factory=lambda: ["greedy", "alphabeta:2"])  # agent specs
    eval_games: int = 16  # games per opponent: colour-swapped pairs from random openings
    eval_simulations: int = 16  # simulations of the evaluated MCTS agent (no noise)
    checkpoint_every: int = 1  # iterations between checkpoints (0 = only by checkpoint_every_minutes)
    checkpoint_every_minutes: float = 0.0  # also save when this many minutes of the run passed (0 = off)
    keep_checkpoints: int = 2  # newest checkpoints kept on disk
    keep_every_minutes: float = 5.0  # also keep the network alone in snapshots/ every this many minutes (0 = never)
    gate: bool = False  # self-play keeps the best network; a new one replaces it only after an SPRT accepts it
    gate_every: int = 5  # iterations between gating tests (with gate)
    gate_elo1: float = 20.0  # SPRT H1: the candidate is at least this much stronger (H0: not stronger)
    gate_max_pairs: int = 100  # colour-swapped pairs at most per gating test (undecided: keep the old one)
    gate_simulations: int = 8  # simulations of both agents in gating games
    image_every: int = 10  # iterations between self-play position images in TensorBoard (0 = never)
    threads: int = 0  # torch threads of this process (0 = torch's default; 1 with selfplay_workers)
    selfplay_workers: int = 0  # 0: self-play in this process; N: N worker processes play while this one trains
    inference_precision: str = "auto"  # self-play/evaluation network: fp32, bf16, fp16, auto (CPU: bf16 where
    # native, else fp32; CUDA: bf16 or fp16)


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


@dataclasses.dataclass
class Config:
    variant: VariantConfig = dataclasses.field(default_factory=VariantConfig)
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    mcts: MCTSConfig = dataclasses.field(default_factory=MCTSConfig)
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)
    distributed: DistributedConfig = dataclasses.field(default_factory=DistributedConfig)
    seed: int = 0  # seeds numpy and torch; the same seed and config replay the same run
    device: str = "cpu"  # "cpu", "cuda" or "auto" for the network during training
    resume: str | None = None  # a checkpoint to continue from (default: the newest in this run's directory)


def register() -> None:
    """Register the schema as ``schema`` (the root) and per group, for Hydra to validate against."""
    store = ConfigStore.instance()
    store.store(name="schema", node=Config)
    store.store(group="variant", name="schema", node=VariantConfig)
    store.store(group="model", name="schema", node=ModelConfig)
    store.store(group="mcts", name="schema", node=MCTSConfig)
    store.store(group="train", name="schema", node=TrainConfig)
    store.store(group="distributed", name="schema", node=DistributedConfig)


T = TypeVar("T")


def from_fields(cls: "type[T]", *nodes: Any, **overrides: Any) -> T:
    """A ``cls`` dataclass from the same-named fields of config ``nodes`` (later nodes win), then ``overrides``.

    The training schema's groups name their fields as the library's settings do
    (``SearchConfig``, ``SelfPlayConfig``, ``OptimConfig``), so one call replaces a
    hand-written copy of each field; a field none of them names keeps the class's default.
    """
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    values: "dict[str, Any]" = {}
    for node in nodes:
        values.update({name: node[name] for name in names if name in node})
    values.update(overrides)
    return cls(**values)
