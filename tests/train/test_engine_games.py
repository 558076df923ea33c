"""The classical engine's games as policy-value training rows, and scripts/warm_start.py."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from scripts import load_script
from stapel_rl.classical import nnue
from stapel_rl.classical.position import Position, row_path, step_actions
from stapel_rl.env import get_variant
from stapel_rl.env.geometry import ROTATE_ACTION
from stapel_rl.env.observation import canonical_mask
from stapel_rl.models import checkpoint
from stapel_rl.records import save_npz
from stapel_rl.train.engine_games import play_games
from stapel_rl.train.replay import FIELDS, ReplayBuffer, read_positions


@pytest.mark.parametrize("name", ["I", "II"])
def test_each_row_is_a_decision_with_the_engines_legal_move_and_the_games_result(name):
    variant = get_variant(name)
    positions = play_games(variant, 3, seed=4, nodes=150, k=0.01)
    rows = positions.arrays
    assert set(rows) == set(FIELDS) and len(positions) > 50
    buffer = ReplayBuffer(len(positions), variant)
    buffer.add(positions)
    state = buffer.states(np.arange(len(positions)))
    mask = canonical_mask(state)
    assert (mask.sum(axis=1) > 1).all()  # forced actions are no training rows
    assert (rows["policy"].sum(axis=1) == 1).all() and (rows["policy"].max(axis=1) == 1).all()
    assert mask[np.arange(len(positions)), rows["policy"].argmax(axis=1)].all()  # the engine's move is legal
    actions = rows["policy"].argmax(axis=1)
    actions = np.where(rows["current_player"] == 1, ROTATE_ACTION[actions], actions)
    game = np.cumsum(np.diff(rows["ply"], prepend=0) < 0)  # a new game starts at a lower ply
    assert game[-1] == 2
    # Where a row's action is a whole full move and the next row is the game's next ply, from the start of
    # a full move, the next row is the position after it (the classical generator's, held to the rules).
    checked = 0
    for i in np.flatnonzero((rows["ply"][1:] == rows["ply"][:-1] + 1) & (game[1:] == game[:-1])):
        pos = Position.from_state(state, int(i))
        whole = [m for m in pos.move_rows() if step_actions(row_path(m)) == [int(actions[i])]]
        if whole and rows["capturing"][i + 1] < 0:
            after = pos.after(whole[0])
            np.testing.assert_array_equal(after.h, rows["height"][i + 1])
            np.testing.assert_array_equal(after.c, rows["colours"][i + 1])
            checked += 1
    assert checked > 20
    assert np.isin(np.unique(np.abs(rows["value"])), [0.0, 1.0]).all()
    # The result is one game's, signed by the player to move: rows of one game with the same mover agree.
    for g in np.unique(game):
        white = rows["value"][game == g] * np.where(rows["current_player"][game == g] == 0, 1, -1)
        assert np.unique(white).size == 1
    assert (np.abs(rows["root_value"]) <= 1).all() and (rows["root_value"] != 0).mean() > 0.5


def test_games_are_the_same_however_they_are_shared_out():
    variant = get_variant("I")
    whole = play_games(variant, 3, seed=[9], nodes=100, k=0.01)
    parts = [play_games(variant, 1, seed=[9], nodes=100, k=0.01, first_game=g) for g in range(3)]
    for key in FIELDS:
        np.testing.assert_array_equal(np.concatenate([p.arrays[key] for p in parts]), whole.arrays[key])


def test_the_engine_plays_with_the_evaluation_it_is_given():
    variant = get_variant("I")
    hand = play_games(variant, 1, seed=[3], nodes=150).arrays
    learned = play_games(variant, 1, seed=[3], nodes=150, eval="nnue").arrays
    np.testing.assert_array_equal(hand["height"][0], learned["height"][0])  # one opening, two evaluations
    assert hand["root_value"][0] != learned["root_value"][0]
    # A file read by path is the same engine as its name when it is the packaged network (the same scale k).
    by_path = play_games(variant, 1, seed=[3], nodes=150, eval=str(nnue.packaged_path("I"))).arrays
    for key in FIELDS:
        np.testing.assert_array_equal(by_path[key], learned[key])
    with pytest.raises(ValueError, match="is for Variant II, not I"):
        play_games(variant, 1, seed=[3], nodes=150, eval=str(nnue.packaged_path("II")))
    with pytest.raises(ValueError, match="does not exist"):
        play_games(variant, 1, seed=[3], nodes=150, eval="no_such_net.npz")


@pytest.mark.slow
def test_warm_start_learns_the_engines_moves_and_resumes_its_games(tmp_path, capsys):
    script = load_script("warm_start")
    argv = ["--games", "12", "--chunk", "1", "--nodes", "100", "--steps", "40", "--jobs", "2", "--holdout", "3"]
    argv += ["--out", str(tmp_path / "w"), "train.batch_size=64", "train.lr=3e-3"]
    assert script.main(argv) == 0
    out = capsys.readouterr().out
    saved = checkpoint.load(tmp_path / "w" / "warm_start.pt")
    figures = saved["warm_start"]
    assert figures["agreement_after"] > figures["agreement_before"]
    assert saved["variant"] == "I" and saved["code_version"] and saved["config"]["train"]["batch_size"] == 64
    assert "policy agrees with the engine" in out and figures["held_out_positions"] > 0
    assert script.main(argv) == 0  # again: the games are read back
    assert "positions read back" in capsys.readouterr().out
    assert script.main([*argv[:-2], "--nodes", "120"]) == 2  # games of other options are not read back
    assert "holds games of" in capsys.readouterr().err
    # A kill in the games: the chunks saved are read back, the others played, the same games as before.
    folder = tmp_path / "w"
    with np.load(folder / "positions.npz") as saved:
        before = {k: saved[k] for k in saved.files}
    (folder / "positions.npz").unlink()
    for first in (3, 7):
        (folder / "games" / f"games_{first:06d}_0001.npz").unlink()
    assert script.main(argv) == 0
    assert "10 of 12 games read back" in capsys.readouterr().out
    with np.load(folder / "positions.npz") as saved:
        assert all(np.array_equal(saved[k], before[k]) for k in FIELDS)
    # More games of the same options: only the new ones are played.
    assert script.main(["--games", "14", *argv[2:]]) == 0
    assert "12 of 14 games read back" in capsys.readouterr().out
    with np.load(folder / "positions.npz") as saved:
        assert saved["value"].size > before["value"].size
        assert np.array_equal(saved["value"][: before["value"].size], before["value"])
    # Chunks of other options are refused too, before any game.
    (folder / "positions.npz").unlink()
    assert script.main([*argv[:-2], "--nodes", "120"]) == 2
    assert f"{folder / 'games'} holds games of" in capsys.readouterr().err
    assert script.main(["--games", "20", "--out", str(tmp_path / "x")]) == 2  # one chunk of 20: all held out
    assert "which is held out" in capsys.readouterr().err
    assert script.main(["--games", "0", "--out", str(tmp_path / "x")]) == 2
    assert script.main(["--eval", "no_such_net.npz", "--out", str(tmp_path / "x")]) == 2
    assert script.main(["--out", str(tmp_path / "x"), "train.no_such_key=1"]) == 2


@pytest.mark.slow
def test_warm_start_training_goes_on_after_a_kill_with_the_same_batches(tmp_path, capsys, monkeypatch):
    from stapel_rl.train.trainer import Trainer

    script = load_script("warm_start")
    argv = ["--games", "6", "--chunk", "1", "--nodes", "100", "--steps", "30", "--save-every", "10", "--holdout", "3"]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert script.main([*argv, "--out", str(whole), "train.batch_size=32"]) == 0
    cut.mkdir()
    (cut / "positions.npz").write_bytes((whole / "positions.npz").read_bytes())  # the same games, not replayed
    step, calls = Trainer.step, []

    def killed_at_step_26(self, batch):
        calls.append(1)
        if len(calls) > 25:
            raise KeyboardInterrupt
        return step(self, batch)

    monkeypatch.setattr(Trainer, "step", killed_at_step_26)
    with pytest.raises(KeyboardInterrupt):
        script.main([*argv, "--out", str(cut), "train.batch_size=32"])
    monkeypatch.setattr(Trainer, "step", step)
    assert [p.name for p in checkpoint.list_checkpoints(cut / "training")] == ["ckpt_00000020.pt"]
    capsys.readouterr()
    assert script.main([*argv, "--out", str(cut), "train.batch_size=64"]) == 2  # other options: refused
    assert "holds training of other options" in capsys.readouterr().err
    assert script.main([*argv, "--out", str(cut), "train.batch_size=32"]) == 0
    assert "training resumed at step 20" in capsys.readouterr().out
    assert not (cut / "training").exists()
    one, other = (checkpoint.load(folder / "warm_start.pt") for folder in (whole, cut))
    assert one["warm_start"]["agreement_before"] == other["warm_start"]["agreement_before"]
    for name, weights in one["model"].items():
        assert torch.equal(weights, other["model"][name]), name


def test_engine_positions_are_read_back_and_refused_clearly(tmp_path):
    positions = play_games(get_variant("I"), 2, seed=5, nodes=100, k=0.01)
    path = tmp_path / "positions.npz"
    save_npz(path, {**positions.arrays, "settings": np.array(json.dumps({"variant": "I"}))})
    back = read_positions(path, "I")
    for name in FIELDS:
        assert np.array_equal(back.arrays[name], positions.arrays[name]), name
    with pytest.raises(ValueError, match="holds Variant I games, not Variant II"):
        read_positions(path, "II")
    with pytest.raises(ValueError, match="cannot read training positions"):
        read_positions(tmp_path / "missing.npz", "I")
    np.savez(tmp_path / "other.npz", value=np.zeros(3))
    with pytest.raises(ValueError, match="not a file of training positions: it lacks height"):
        read_positions(tmp_path / "other.npz", "I")
    (tmp_path / "cut.npz").write_bytes(path.read_bytes()[:500])
    with pytest.raises(ValueError, match="cannot read training positions"):
        read_positions(tmp_path / "cut.npz", "I")


@pytest.mark.slow
def test_a_run_with_engine_positions_draws_their_share_of_every_batch(tmp_path, monkeypatch):
    from hydra import compose, initialize_config_dir

    from stapel_rl.train import app

    positions = play_games(get_variant("I"), 2, seed=5, nodes=100, k=0.01)
    path = tmp_path / "positions.npz"
    save_npz(path, positions.arrays)
    drawn: "list[tuple[int, int]]" = []  # (buffer capacity, batch size) of each draw
    sample = ReplayBuffer.sample

    def recorded(self, batch_size, *args, **kwargs):
        drawn.append((self.capacity, batch_size))
        return sample(self, batch_size, *args, **kwargs)

    monkeypatch.setattr(ReplayBuffer, "sample", recorded)
    tiny = ["model=tiny", "train=tiny", "mcts.num_simulations=4", "train.eval_every_minutes=0"]
    overrides = [*tiny, f"train.engine_positions={path}", "train.engine_fraction=0.25"]
    with initialize_config_dir(config_dir=str(app.CONFIG_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    with torch.random.fork_rng():
        app.train(cfg, tmp_path / "run")
    ours = [size for capacity, size in drawn if capacity == 2000]  # train=tiny's replay_capacity
    engine = [size for capacity, size in drawn if capacity == len(positions)]
    assert ours and ours == [24] * len(ours) and engine == [8] * len(ours)  # 32 a batch, a quarter of it the engine's
    saved = checkpoint.load(checkpoint.list_checkpoints(tmp_path / "run" / "checkpoints")[-1])
    assert saved["config"]["train"]["engine_positions"] == str(path) and saved["trainer"]["steps"] == len(ours)
    with initialize_config_dir(config_dir=str(app.CONFIG_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[*tiny, f"train.engine_positions={tmp_path / 'none.npz'}"])
    with pytest.raises(app.CannotStart, match="cannot read training positions"):
        app.train(cfg, tmp_path / "refused")
    with pytest.raises(ValueError, match=r"train.engine_fraction must be in \(0, 1\), got 1.0"):
        with initialize_config_dir(config_dir=str(app.CONFIG_DIR), version_base=None):
            OmegaConf.to_object(compose(config_name="config", overrides=["train.engine_fraction=1"]))
