"""End-to-end training runs through the command line (tiny config, CleanRL-style smoke tests)."""

import dataclasses
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import stapel_rl
from stapel_rl.env import get_variant
from stapel_rl.models import PRESETS, PolicyValueNet, checkpoint

TINY = ["model=tiny", "train=tiny", "mcts.num_simulations=4", "train.threads=1"]


def run_train(run_dir: pathlib.Path, *overrides: str, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "stapel_rl.train", f"hydra.run.dir={run_dir}", *TINY, *overrides]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["I", "II"])
def test_one_iteration_end_to_end(tmp_path, variant):
    start = time.perf_counter()
    extra = ["model.points_head=true"] if variant == "II" else []
    done = run_train(tmp_path / "run", f"variant={variant}", *extra)
    assert done.returncode == 0, done.stderr[-3000:]
    assert time.perf_counter() - start < 60
    run = tmp_path / "run"
    (ckpt,) = checkpoint.list_checkpoints(run / "checkpoints")
    state = checkpoint.load(ckpt)
    assert state["step"] == 1 and state["counters"]["iteration"] == 1
    assert state["config"]["variant"]["name"] == variant and state["code_version"].startswith(stapel_rl.__version__)
    assert state["trainer"]["steps"] >= 1
    assert list((run / "tb").glob("events.out.tfevents.*"))
    assert (run / ".hydra" / "config.yaml").is_file()
    pdn = list((run / "games").glob("*.pdn"))
    assert not pdn or f'[Variant "Stapeldammen {variant}"]' in pdn[0].read_text()


@pytest.mark.slow
def test_killed_run_resumes_from_its_last_checkpoint(tmp_path):
    run = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "stapel_rl.train",
        f"hydra.run.dir={run}",
        *TINY,
        "train.iterations=0",
        "train.eval_every_minutes=0",
        "train.checkpoint_every_minutes=1e-6",  # every iteration
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 90
        while len(checkpoint.list_checkpoints(run / "checkpoints")) < 2 and time.time() < deadline:
            time.sleep(0.2)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    newest = checkpoint.list_checkpoints(run / "checkpoints")[-1]
    saved = checkpoint.load(newest)
    iteration, steps = saved["counters"]["iteration"], saved["trainer"]["steps"]
    with np.load(__import__("io").BytesIO(saved["replay"])) as replay:
        buffer_size = len(replay["value"])
    assert iteration >= 2

    done = run_train(run, f"train.iterations={iteration + 1}", "train.eval_every_minutes=0")
    assert done.returncode == 0, done.stderr[-3000:]
    log = done.stdout + done.stderr
    assert f"resumed from {newest}: iteration {iteration}, {steps} gradient steps, {buffer_size} positions" in log
    # The resumed run names what its command line changed against the checkpoint's config.
    changed = next(line for line in log.splitlines() if line.startswith("the config differs from the checkpoint's"))
    assert f"train.iterations: 0 -> {iteration + 1}" in changed
    assert "train.checkpoint_every_minutes: 1e-06 -> 2.0" in changed
    assert "train.lr" not in changed and "resume" not in changed
    after = checkpoint.load(checkpoint.list_checkpoints(run / "checkpoints")[-1])
    assert after["counters"]["iteration"] == iteration + 1


def run_until_killed(run: pathlib.Path, *overrides: str, past_iteration: int) -> int:
    """Start an endless checkpoint-every-iteration run, SIGKILL it once it has saved a checkpoint past
    ``past_iteration``; the newest checkpoint's iteration."""
    cmd = [sys.executable, "-m", "stapel_rl.train", f"hydra.run.dir={run}", *TINY, *overrides]
    cmd += ["train.iterations=0", "train.eval_every_minutes=0", "train.checkpoint_every_minutes=1e-6"]

    def newest() -> int:
        found = checkpoint.list_checkpoints(run / "checkpoints")
        return checkpoint.load(found[-1])["counters"]["iteration"] if found else 0

    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 90
        while time.time() < deadline and proc.poll() is None:
            try:
                if newest() > past_iteration:
                    break
            except ValueError:  # a checkpoint being renamed into place or pruned under us
                pass
            time.sleep(0.2)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    return newest()


@pytest.mark.slow
def test_a_run_resumed_from_a_path_and_killed_twice_loses_nothing(tmp_path):
    source = tmp_path / "source"
    start = run_until_killed(source, past_iteration=1)
    named = checkpoint.list_checkpoints(source / "checkpoints")[-1]
    run, resume = tmp_path / "run", f"resume={named}"
    first = run_until_killed(run, resume, past_iteration=start + 1)
    assert first > start + 1
    # The same command again goes on from the run's own newest checkpoint, not from resume=PATH.
    second = run_until_killed(run, resume, past_iteration=first)
    assert second > first
    done = run_train(run, resume, f"train.iterations={second + 1}", "train.eval_every_minutes=0")
    assert done.returncode == 0, done.stderr[-3000:]
    own = checkpoint.list_checkpoints(run / "checkpoints")
    assert f"resumed from {own[-2]}: iteration {second}," in done.stdout + done.stderr
    assert checkpoint.load(own[-1])["counters"]["iteration"] == second + 1
    # A resume= further on than the run's own checkpoints wins, and says so.
    ahead = tmp_path / "ahead"
    ahead_iteration = run_until_killed(ahead, resume, past_iteration=second + 2)
    newer = checkpoint.list_checkpoints(ahead / "checkpoints")[-1]
    done = run_train(run, f"resume={newer}", f"train.iterations={ahead_iteration + 1}", "train.eval_every_minutes=0")
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"resumed from {newer}: iteration {ahead_iteration}," in done.stdout + done.stderr


@pytest.mark.slow
def test_a_resumed_run_sets_aside_the_snapshots_of_the_continuation_it_does_not_follow(tmp_path):
    run = tmp_path / "run"
    every = ["train.eval_every_minutes=0", "train.keep_every_minutes=1e-6"]  # a snapshot every iteration
    done = run_train(run, "train.iterations=2", *every)
    assert done.returncode == 0, done.stderr[-3000:]
    # Killed between a snapshot and the next checkpoint: the stopped process's snapshot of iteration 7.
    (run / "snapshots" / "ckpt_00000007.pt").write_bytes((run / "snapshots" / "ckpt_00000002.pt").read_bytes())
    done = run_train(run, "train.iterations=3", *every)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "1 snapshots saved after that checkpoint by the stopped process moved to" in done.stdout
    assert [p.name for p in checkpoint.list_checkpoints(run / "snapshots")] == [
        "ckpt_00000001.pt",
        "ckpt_00000002.pt",
        "ckpt_00000003.pt",
    ]
    assert [p.name for p in (run / "snapshots_abandoned").iterdir()] == ["ckpt_00000007.pt"]


def test_set_aside_keeps_what_an_earlier_kill_set_aside(tmp_path):
    for step in (1, 2, 3):
        checkpoint.save(tmp_path / "s", step, {"model": {}}, keep=0)
    assert [p.name for p in checkpoint.set_aside(tmp_path / "s", 1, tmp_path / "a")] == [
        "ckpt_00000002.pt",
        "ckpt_00000003.pt",
    ]
    checkpoint.save(tmp_path / "s", 2, {"model": {}}, keep=0)
    assert [p.name for p in checkpoint.set_aside(tmp_path / "s", 1, tmp_path / "a")] == ["ckpt_00000002.1.pt"]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [
        "ckpt_00000002.1.pt",
        "ckpt_00000002.pt",
        "ckpt_00000003.pt",
    ]
    assert checkpoint.set_aside(tmp_path / "missing", 0, tmp_path / "a") == []


def test_truncated_checkpoint_raises_clear_error(tmp_path):
    path = checkpoint.save(tmp_path, 3, {"model": {"w": np.zeros(1000)}, "counters": {}})
    assert checkpoint.load(path)["step"] == 3
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="corrupt or truncated"):
        checkpoint.load(path)
    with pytest.raises(ValueError, match="does not exist"):
        checkpoint.load(tmp_path / "missing.pt")


def test_checkpoints_keep_the_newest(tmp_path):
    for step in range(1, 6):
        checkpoint.save(tmp_path, step, {"model": {}}, keep=2)
    assert [p.name for p in checkpoint.list_checkpoints(tmp_path)] == ["ckpt_00000004.pt", "ckpt_00000005.pt"]
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.slow
def test_checkpoints_by_time_still_save_the_last_iteration(tmp_path):
    # An hour between saves: the only checkpoint is the final iteration's, and its counters include
    # the time spent saving it, so a budgeted run cannot overrun by its saves.
    done = run_train(
        tmp_path / "run",
        "train.iterations=3",
        "train.eval_every_minutes=0",
        "train.checkpoint_every_minutes=60",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (ckpt,) = checkpoint.list_checkpoints(tmp_path / "run" / "checkpoints")
    state = checkpoint.load(ckpt)
    assert state["counters"]["iteration"] == 3 and state["counters"]["saved_at"] > 0


def test_unknown_config_key_fails_with_hydra_error(tmp_path):
    done = run_train(tmp_path / "run", "train.no_such_key=1", timeout=60)
    assert done.returncode != 0
    assert "no_such_key" in done.stderr and "not in" in done.stderr


def test_a_removed_config_key_names_its_replacement(tmp_path):
    done = run_train(tmp_path / "run", "train.eval_every=5", timeout=60)
    assert done.returncode != 0 and not (tmp_path / "run").exists()
    assert "train.eval_every was removed in 0.2.0" in done.stderr and "use train.eval_every_minutes" in done.stderr


@pytest.mark.slow
def test_gated_run_records_the_sprt(tmp_path):
    done = run_train(
        tmp_path / "run",
        "train.gate=true",
        "train.gate_every_minutes=1e-6",
        "train.gate_max_pairs=4",
        "train.gate_simulations=2",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    events = EventAccumulator(str(tmp_path / "run" / "tb"))
    events.Reload()
    assert {"gate/accepted", "gate/llr", "gate/pairs"} <= set(events.Tags()["scalars"])
    state = checkpoint.load(checkpoint.list_checkpoints(tmp_path / "run" / "checkpoints")[-1])
    assert state["best_model"] is not None


@pytest.mark.slow
def test_evaluation_scores_and_snapshots_are_recorded(tmp_path):
    run = tmp_path / "run"
    done = run_train(
        run,
        "train.iterations=2",
        "train.keep_every_minutes=1e-6",
        "train.eval_every_minutes=60",  # an hour between evaluations: only the run's end has one
        "train.eval_opponents=[random,alphabeta:1]",
        "train.eval_games=2",
        "variant.ply_cap=40",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "eval at iteration 2: vs random" in done.stdout and "vs alphabeta:1" in done.stdout
    # One snapshot per iteration (the schedule is tiny), each the network alone with the run's clock.
    snapshots = checkpoint.list_checkpoints(run / "snapshots")
    assert [checkpoint.load(p)["step"] for p in snapshots] == [1, 2]
    saved = checkpoint.load(snapshots[-1])
    assert "replay" not in saved and "trainer" not in saved and saved["counters"]["seconds"] > 0
    events = EventAccumulator(str(run / "tb"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    for name in ("random", "alphabeta_1"):
        assert {f"eval/score_vs_{name}", f"eval/elo_vs_{name}", f"eval/elo_vs_{name}_low"} <= tags
    assert {"eval/seconds", "eval/share_of_run"} <= tags
    assert [e.step for e in events.Scalars("eval/score_vs_random")] == [2]  # the last iteration's, not the first's


def test_cosine_hours_without_a_time_budget_anneals_over_total_steps(tmp_path):
    run = tmp_path / "run"
    steps = ["train.warmup_steps=1", "train.total_steps=2", "train.iterations=2"]
    done = run_train(run, "train.lr_schedule=cosine_hours", *steps)  # train=tiny: hours 0
    assert done.returncode == 0, done.stderr[-3000:]
    events = EventAccumulator(str(run / "tb"))
    events.Reload()
    first, second = (e.value for e in events.Scalars("train/lr"))
    # The first iteration's steps (mean rate) run down the cosine; every later step is past total_steps.
    assert 2e-4 < first < 2e-3 and second == pytest.approx(2e-4)


@pytest.mark.slow
def test_cosine_hours_anneals_by_the_runs_end(tmp_path):
    run = tmp_path / "run"
    budget = ["train.hours=0.0025", "train.iterations=0", "train.eval_every_minutes=0", "train.warmup_steps=1"]
    done = run_train(run, "train.lr_schedule=cosine_hours", "train.lr_min_factor=0.1", *budget)
    assert done.returncode == 0, done.stderr[-3000:]
    events = EventAccumulator(str(run / "tb"))
    events.Reload()
    rates = [e.value for e in events.Scalars("train/lr")]
    assert len(rates) >= 3 and rates == sorted(rates, reverse=True)  # down with the run's clock
    assert rates[0] > 1.5e-3 and rates[-1] < 0.4e-3  # from near the peak (2e-3) to near the floor (2e-4)


def test_unknown_evaluation_opponent_is_a_clear_error(tmp_path):
    done = run_train(tmp_path / "run", "train.eval_opponents=[greedy,alphabta:2]")
    assert done.returncode != 0
    assert "train.eval_opponents" in done.stderr and "alphabta:2" in done.stderr


@pytest.mark.slow
def test_selfplay_workers_feed_the_learner_and_a_resumed_run_continues(tmp_path):
    run = tmp_path / "run"
    done = run_train(run, "train.iterations=2", "train.selfplay_workers=2", "train.eval_every_minutes=0")
    assert done.returncode == 0, done.stderr[-3000:]
    # Board images come from the games the workers finished (tiny: one every iteration that finished one).
    events = EventAccumulator(str(run / "tb"), size_guidance={"images": 0})
    events.Reload()
    (image, *_) = events.Images("selfplay/position")
    assert (image.width, image.height) == (400, 400)
    first = checkpoint.load(checkpoint.list_checkpoints(run / "checkpoints")[-1])
    assert first["counters"]["iteration"] == 2 and first["counters"]["positions"] >= 2 * 64
    assert first["trainer"]["steps"] >= 1
    done = run_train(run, "train.iterations=3", "train.selfplay_workers=2", "train.eval_every_minutes=0")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resumed from" in done.stdout + done.stderr
    final = checkpoint.load(checkpoint.list_checkpoints(run / "checkpoints")[-1])
    assert final["counters"]["iteration"] == 3 and final["counters"]["positions"] > first["counters"]["positions"]
    # The workers are gone with the run.
    leftover = subprocess.run(["pgrep", "-f", f"hydra.run.dir={run}"], capture_output=True, text=True).stdout
    assert not leftover.strip()


@pytest.mark.slow
def test_a_run_from_init_weights_starts_from_that_network(tmp_path):
    # A network of the tiny config, saved as a checkpoint of another run; with a learning rate of 0 the
    # new run's trained parameters are still exactly that network's (batch norm's running statistics
    # move with the data), so its weights were the start.
    torch.manual_seed(1)  # not the run's seed: its own initial network differs
    source = PolicyValueNet(PRESETS["tiny"].for_variant(get_variant("I")))
    path = checkpoint.save(
        tmp_path / "other",
        7,
        {"model": source.state_dict(), "model_config": dataclasses.asdict(source.config), "variant": "I"},
    )
    run = tmp_path / "run"
    done = run_train(run, f"init_weights={path}", "train.lr=0", "train.weight_decay=0", "train.eval_every_minutes=0")
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"a new run from the network of {path}" in done.stdout + done.stderr
    after = checkpoint.load(checkpoint.list_checkpoints(run / "checkpoints")[-1])
    assert after["counters"]["iteration"] == 1 and after["trainer"]["steps"] > 0
    for name, tensor in source.named_parameters():
        assert torch.equal(after["model"][name], tensor), name


def test_init_weights_of_another_variant_or_network_is_a_clear_error():
    small = PRESETS["small"].for_variant(get_variant("I"))
    weights = checkpoint.load_weights("variant_I_zero", small, "I")
    assert weights.keys() == PolicyValueNet(small).state_dict().keys()
    with pytest.raises(ValueError, match="plays Variant I, this run Variant II"):
        checkpoint.load_weights("variant_I_zero", PRESETS["small"].for_variant(get_variant("II")), "II")
    with pytest.raises(ValueError, match=r"another network .*blocks: 4 \(checkpoint\) != 2 \(run\)"):
        checkpoint.load_weights("variant_I_zero", PRESETS["tiny"].for_variant(get_variant("I")), "I")
    # The agent learned from zero predates value_head: its network has the default head, not a pooling one.
    pooled = dataclasses.replace(small, value_head="pool")
    with pytest.raises(ValueError, match=r"value_head: plane \(checkpoint\) != pool \(run\)"):
        checkpoint.load_weights("variant_I_zero", pooled, "I")
    # The strongest shipped agent is the warm start's 6x64 compact network with a pooling value head.
    warm = dataclasses.replace(PRESETS["default"].for_variant(get_variant("I")), layout="compact", value_head="pool")
    assert checkpoint.load_weights("variant_I", warm, "I").keys() == PolicyValueNet(warm).state_dict().keys()
    with pytest.raises(
        ValueError, match=r"blocks: 6 \(checkpoint\) != 4 \(run\); channels: 64 \(checkpoint\)"
    ) as error:
        checkpoint.load_weights("variant_I", small, "I")
    overrides = "model.blocks=6 model.channels=64 model.layout=compact model.value_head=pool"
    assert str(error.value).endswith(f"(to start from it, add {overrides})")


@pytest.mark.slow
def test_a_run_of_move_planes_trains_and_plays(tmp_path):
    from stapel_rl.env import engine
    from stapel_rl.eval.agents import make_agent

    run = tmp_path / "run"
    done = run_train(run, "model.inputs=moves", "model.layout=compact")
    assert done.returncode == 0, done.stderr[-3000:]
    (ckpt,) = checkpoint.list_checkpoints(run / "checkpoints")
    state = checkpoint.load(ckpt)
    assert state["model_config"]["inputs"] == "moves" and state["model"]["stem.0.0.weight"].shape[1] == 23
    agent = make_agent(f"mcts:{ckpt}:sims=4")
    game = engine.init("I", 2)
    actions = agent(game, np.random.default_rng(0))
    assert game.legal_action_mask[np.arange(2), actions].all()
    wrong = run_train(tmp_path / "wrong", "model.inputs=rich")
    assert wrong.returncode != 0 and "inputs must be one of ['base', 'moves'], got 'rich'" in wrong.stderr


def test_a_run_with_a_growing_window_saves_the_window_it_samples(tmp_path):
    import io

    from stapel_rl.train.replay import growing_window

    run = tmp_path / "run"
    growth = ["train.replay_capacity=40", "train.replay_growth=0.5", "train.replay_max=100", "train.min_replay=32"]
    done = run_train(run, "train.iterations=3", *growth)
    assert done.returncode == 0, done.stderr[-3000:]
    state = checkpoint.load(checkpoint.list_checkpoints(run / "checkpoints")[-1])
    with np.load(io.BytesIO(state["replay"])) as saved:
        added, kept = int(saved["added"]), len(saved["value"])
    assert added == state["counters"]["positions"] > 100 and kept == min(100, growing_window(40, 0.5)(added)) > 40


def test_a_checkpoint_the_run_cannot_start_from_is_named_in_one_line(tmp_path):
    from hydra import compose, initialize_config_dir

    from stapel_rl.train import app

    source = PolicyValueNet(PRESETS["tiny"].for_variant(get_variant("II")))
    snapshot = checkpoint.save(
        tmp_path / "other",
        7,
        {"model": source.state_dict(), "config": {"variant": {"name": "II"}}, "variant": "II"},
    )
    mine = [o for o in TINY if not o.startswith("train.threads")]  # leave this process's threads alone
    for overrides, message in [
        ([f"resume={tmp_path / 'missing.pt'}"], f"checkpoint '{tmp_path / 'missing.pt'}' does not exist"),
        ([f"resume={snapshot}"], f"{snapshot} is a Variant II run's; this run is Variant I (variant=II)"),
        (["variant=II", f"resume={snapshot}"], f"start a new run from it with init_weights={snapshot}"),
    ]:
        with initialize_config_dir(config_dir=str(app.CONFIG_DIR), version_base=None):
            cfg = compose(config_name="config", overrides=[*mine, *overrides])
        with torch.random.fork_rng(), pytest.raises(app.CannotStart) as refused:
            app.train(cfg, tmp_path / "run")
        assert message in str(refused.value)
        assert not (tmp_path / "run" / "checkpoints").exists()
    # The command says it in one line (a process of its own: Hydra's main takes over the streams).
    done = run_train(tmp_path / "run", f"resume={snapshot}")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip() == f"stapel-train: {snapshot} is a Variant II run's; this run is Variant I (variant=II)"
