"""The training config: the groups are the library's dataclasses, each default declared once."""

import dataclasses
import subprocess
import sys

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from stapel_rl import bundled
from stapel_rl.models import PRESETS, NetworkConfig
from stapel_rl.train.app import CONFIG_DIR  # registers the schema
from stapel_rl.train.config import (
    Config,
    DistributedConfig,
    MinimaxConfig,
    TrainConfig,
    VariantConfig,
    check_overrides,
    config_changes,
)
from stapel_rl.train.selfplay import SelfPlayConfig
from stapel_rl.train.trainer import OptimConfig

SCHEMAS = {
    "variant": VariantConfig,
    "model": NetworkConfig,
    "mcts": SelfPlayConfig,
    "train": TrainConfig,
    "distributed": DistributedConfig,
    "minimax": MinimaxConfig,
}

#: The field each group's options are named for.
IDENTITY = {"variant": "name", "mcts": "algorithm", "distributed": "backend"}


def composed(*overrides: str) -> Config:
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return OmegaConf.to_object(compose(config_name="config", overrides=list(overrides)))


def test_the_composed_config_is_made_of_the_library_dataclasses():
    config = composed()
    assert type(config.model) is NetworkConfig and config.model == PRESETS["small"]
    assert type(config.mcts) is SelfPlayConfig and (config.mcts.algorithm, config.mcts.num_simulations) == (
        "gumbel",
        16,
    )
    assert isinstance(config.train, OptimConfig) and config.train.total_steps == 28000
    assert config.train.lr_schedule == "cosine_hours" and config.train.hours == 1.0
    assert config.train.train_precision == "auto" and config.train.selfplay_workers == 2


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_model_options_are_the_presets(name):
    assert composed(f"model={name}").model == PRESETS[name]


def test_option_files_set_only_what_differs_from_the_declared_defaults():
    files = sorted((bundled.CONFIG_DIR).glob("*/*.yaml"))
    assert {f.parent.name for f in files} == set(SCHEMAS) - {"model"}  # model options are PRESETS
    for path in files:
        defaults = {f.name: f.default for f in dataclasses.fields(SCHEMAS[path.parent.name])}
        values = yaml.safe_load(path.read_text())
        assert values.pop("defaults") == ["schema"], path
        for key, value in values.items():
            assert key in defaults, f"{path}: {key} is not a field"
            if key != IDENTITY.get(path.parent.name):  # the key an option is named for may state it
                assert value != defaults[key], f"{path}: {key}: {value!r} restates the default"


def test_a_removed_key_names_its_replacement():
    check_overrides(["train.eval_every_minutes=5", "model=tiny"])
    with pytest.raises(ValueError, match=r"train.eval_every was removed in 0.2.0.*use train.eval_every_minutes"):
        check_overrides(["model=tiny", "train.eval_every=5"])
    with pytest.raises(ValueError, match="train.checkpoint_every_minutes"):
        check_overrides(["+train.checkpoint_every=1"])


def test_config_changes_lists_each_changed_leaf_and_ignores_resume():
    saved = {"seed": 0, "resume": None, "train": {"hours": 1.0, "lr_schedule": "cosine", "eval_opponents": ["greedy"]}}
    current = {
        "seed": 0,
        "resume": "runs/a/checkpoints/ckpt_00000003.pt",
        "train": {"hours": 3.0, "lr_schedule": "cosine", "eval_opponents": ["greedy", "alphabeta:2"], "new": 1},
    }
    assert config_changes(saved, current) == [
        "train.eval_opponents: ['greedy'] -> ['greedy', 'alphabeta:2']",
        "train.hours: 1.0 -> 3.0",
        "train.new: <absent> -> 1",
    ]
    assert config_changes(current, current) == []


def test_the_search_constants_are_checked_where_the_config_is_read():
    assert composed("mcts.c_scale=0.01").mcts.c_scale == 0.01
    with pytest.raises(ValueError, match="c_scale must be positive"):
        composed("mcts.c_scale=0")


@pytest.mark.parametrize(
    "override, message",
    [
        ("train.hours=-1", r"train.hours must be 0 \(none\) or a positive number, got -1.0"),
        ("train.replay_capacity=0", "train.replay_capacity must be at least 1, got 0"),
        ("train.min_replay=100000", r"train.min_replay \(100000\) is more than train.replay_capacity \(60000\)"),
        ("train.value_mix=1.5", r"train.value_mix must be in \[0, 1\], got 1.5"),
        ("train.replay_growth=2", r"train.replay_growth must be 0 \(a fixed window\) or in \(0, 1\], got 2.0"),
        ("train.sample_ratio=0", "train.sample_ratio and train.gate_every_minutes must be positive, got 0.0"),
        ("train.lr=-1e-3", "train.lr must be a finite number >= 0, got -0.001"),
        ("train.keep_checkpoints=0", "train.keep_checkpoints must be at least 1, got 0"),
        ("train.eval_every_minutes=nan", "train.eval_every_minutes must be 0"),
        ("train.inference_precision=fp8", "train.inference_precision must be one of auto, fp32, bf16, fp16, onnx"),
        ("train.train_precision=fp16", "train.train_precision must be one of auto, fp32, bf16, got 'fp16'"),
        ("train.lr_schedule=linear", "train.lr_schedule must be one of constant, cosine, cosine_hours"),
        ("mcts.temperature_plies=-3", r"temperature_plies and fast_simulations \(0: off\) must be at least 0"),
        ("mcts.full_search_prob=2", r"full_search_prob must be in \[0, 1\], got 2.0"),
        ("model.channels=0", "channels, policy_channels and value_hidden at least 1"),
        ("variant.ply_cap=0", "variant.ply_cap must be at least 1, got 0"),
        ("variant.name=III", "unknown variant 'III'"),
        ("device=tpu", "device must be cpu, cuda, cuda:N or auto, got 'tpu'"),
        ("minimax.holdout=1", "minimax.holdout must be at least 2"),
        ("minimax.start=scratch", "minimax.start must be one of hand_written, zero, nnue or a network .npz"),
    ],
)
def test_a_train_value_the_run_cannot_use_is_refused_by_name(override, message):
    with pytest.raises(ValueError, match=message):
        composed(override)


def test_a_growing_window_must_be_able_to_grow():
    assert composed("train.replay_max=1000").train.replay_max == 1000  # a fixed window ignores it
    with pytest.raises(ValueError, match=r"train.replay_max \(1000\) is less than train.replay_capacity \(60000\)"):
        composed("train.replay_growth=0.4", "train.replay_max=1000")


def test_stapel_train_says_which_value_is_wrong_without_a_traceback(tmp_path):
    # A process of its own: Hydra's main takes over logging and the standard streams of the one it runs in.
    command = [sys.executable, "-m", "stapel_rl.cli.train", "train.hours=-1", f"hydra.run.dir={tmp_path / 'run'}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip() == "stapel-train: train.hours must be 0 (none) or a positive number, got -1.0"
    assert not (tmp_path / "run" / "checkpoints").exists()
