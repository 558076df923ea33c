"""The trained agents and configs shipped in the package (stapel_rl.bundled), and agent specs naming them."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import stapel_rl
from stapel_rl import bundled
from stapel_rl.env import init
from stapel_rl.eval.agents import make_agent
from stapel_rl.models import checkpoint
from stapel_rl.train.app import CONFIG_DIR

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_in_a_checkout_the_package_reads_the_top_level_directories():
    # stapel_rl/configs and stapel_rl/checkpoints are symlinks: people edit configs/ and checkpoints/.
    assert CONFIG_DIR == str(REPO / "configs") == str(bundled.CONFIG_DIR)
    assert bundled.CHECKPOINT_DIR == REPO / "checkpoints"
    assert (REPO / "stapel_rl" / "configs").is_symlink() and (REPO / "stapel_rl" / "checkpoints").is_symlink()


@pytest.mark.parametrize("variant, name", [("I", "I"), ("II", "II"), ("1", "I"), ("2", "II"), (" ii ", "II")])
def test_pretrained_returns_the_shipped_checkpoint_of_the_variant(variant, name):
    path = stapel_rl.pretrained(variant)
    assert path == bundled.CHECKPOINT_DIR / f"variant_{name}.pt"
    assert checkpoint.load(path)["variant"] == name
    assert path.with_suffix(".md").is_file()  # the model card beside it


@pytest.mark.parametrize("variant", ["I", "II"])
def test_the_agent_learned_from_zero_ships_beside_the_strongest(variant):
    path = stapel_rl.pretrained(variant, from_zero=True)
    assert path == bundled.CHECKPOINT_DIR / f"variant_{variant}_zero.pt"
    data = checkpoint.load(path)
    assert data["variant"] == variant and "warm_start" not in data
    assert path.with_suffix(".md").is_file()
    assert bundled.resolve_checkpoint(f"variant_{variant}_zero") == str(path)


def test_pretrained_rejects_an_unknown_variant():
    with pytest.raises(ValueError, match="unknown variant 'III'"):
        stapel_rl.pretrained("III")


def test_names_resolve_to_the_bundled_agents_unless_a_file_of_that_name_exists(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert bundled.resolve_checkpoint("variant_I") == str(stapel_rl.pretrained("I"))
    assert bundled.resolve_checkpoint("variant_II") == str(stapel_rl.pretrained("II"))
    # Anything else is a path, as given.
    for path in (
        "variant_III",
        "variant_I.pt",
        "variant_I_warm",
        "runs/x/ckpt_00000001.pt",
        "checkpoints/variant_I.pt",
    ):
        assert bundled.resolve_checkpoint(path) == path
    (tmp_path / "variant_I").write_bytes(b"mine")
    assert bundled.resolve_checkpoint("variant_I") == "variant_I"
    assert bundled.resolve_checkpoint(pathlib.Path("variant_II")) == str(stapel_rl.pretrained("II"))


@pytest.mark.parametrize("variant", ["I", "II"])
def test_agent_specs_accept_the_names_from_any_directory(tmp_path, monkeypatch, variant):
    monkeypatch.chdir(tmp_path)
    state = init(variant, 3)
    for spec in (f"mcts:variant_{variant}:sims=4", f"policy:variant_{variant}", f"mcts:variant_{variant}_zero:sims=4"):
        agent = make_agent(spec)
        assert agent.name == spec
        actions = agent(state, np.random.default_rng(0))
        assert state.legal_action_mask[np.arange(3), actions].all()


def test_a_file_of_that_name_in_the_working_directory_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "variant_I").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="'variant_I' is corrupt or truncated"):
        make_agent("mcts:variant_I:sims=4")
    make_agent("policy:variant_II")  # the other name still means the bundled agent
