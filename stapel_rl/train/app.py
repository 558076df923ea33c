"""stapel-train: AlphaZero-style self-play training, read top to bottom.

    stapel-train                                   # Variant I, default config
    stapel-train variant=II mcts=gumbel model=small train.hours=2
    stapel-train -m mcts=puct,gumbel               # a sweep
    stapel-train hydra.run.dir=runs/a              # run again in the same dir: it resumes
    stapel-train distributed=ray distributed.actors=4   # self-play in Ray actors

Each iteration: self-play until enough new positions (in this process, or in
``train.selfplay_workers`` processes or ``distributed.actors`` Ray actors
that play the next batch while this one trains), train on the replay buffer,
log to TensorBoard, evaluate against fixed opponents every
``eval_every_minutes``, write a checkpoint (atomically, every
``checkpoint_every_minutes``; the newest ``keep_checkpoints`` stay) and,
every ``keep_every_minutes``, a snapshot of the network for learning curves.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time
from typing import TypedDict, cast

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm

from stapel_rl import bundled
from stapel_rl.env import Variant, engine, get_variant
from stapel_rl.env.render import rgb_array
from stapel_rl.eval.network_agents import UNLIMITED, MCTSAgent
from stapel_rl.eval.pdn import write_game
from stapel_rl.eval.sprt import SPRT, run_sprt
from stapel_rl.models import NetworkEvaluator, PolicyValueNet, checkpoint
from stapel_rl.train.config import Config, config_changes, register
from stapel_rl.train.distributed import RaySelfPlayActors
from stapel_rl.train.evaluation import evaluate, make_opponents
from stapel_rl.train.interrupt import RunStopped, StopRequest
from stapel_rl.train.replay import ReplayBuffer, TrainingBatch, growing_window, read_positions
from stapel_rl.train.selfplay import SelfPlay
from stapel_rl.train.trainer import Trainer, mean_metrics
from stapel_rl.train.workers import SelfPlayWorkers, WorkerSpec

register()


class _RunTotals(TypedDict):
    iteration: int
    positions: int
    games: int
    seconds: float  # of the run, checkpoint saves included


class RunCounters(_RunTotals, total=False):
    """The run's progress, saved in every checkpoint as ``"counters"``; the marks ``counters["seconds"]``
    at the last evaluation, gating test, image, checkpoint and snapshot appear once each has happened."""

    eval_at: float
    eval_seconds: float
    gated_at: float
    imaged_at: float
    saved_at: float
    kept_at: float


def due(last: float, minutes: float, now: float) -> bool:
    """Whether work scheduled every ``minutes`` of the run (0: never) is due at run time ``now``, its last
    time being ``last`` (seconds of the run; never yet: 0, the run's start)."""
    return bool(minutes) and now >= last + 60.0 * minutes


def halfway_picture(variant: Variant, actions: "list[int]") -> np.ndarray:
    """``uint8 [400, 400, 3]`` picture of a self-play game halfway through its ``actions``: made from a finished
    game's record, so runs whose self-play is in workers or Ray actors show positions as well."""
    state = engine.init(variant)
    for action in actions[: len(actions) // 2]:
        state = engine.step(state, np.array([action]))
    return rgb_array(state, 0)


#: Hydra's primary config directory: the repository's configs/ in a checkout, the packaged copy in a wheel.
CONFIG_DIR = str(bundled.CONFIG_DIR)


def selfplay_device(train_device: torch.device) -> torch.device:
    """Where self-play and evaluation run the network: the training GPU if there is one, else the CPU."""
    return torch.device(train_device) if torch.device(train_device).type == "cuda" else torch.device("cpu")


def gate(
    config: Config, net: PolicyValueNet, best: NetworkEvaluator, variant: Variant, rng: np.random.Generator
) -> "dict[str, float]":
    """SPRT of the trained network against self-play's; the self-play network is replaced if H1 holds.

    Both search ``gate_simulations`` per move, or with ``gate_time`` that many seconds per move of each
    game (no simulation limit; ``run_sprt`` then calls them with one game at a time)."""
    t = config.train
    candidate = PolicyValueNet(net.config)
    candidate.load_state_dict(net.state_dict())
    seconds = t.gate_time or None
    simulations = t.gate_simulations if seconds is None else UNLIMITED
    search_config = dataclasses.replace(config.mcts, num_simulations=simulations)
    test = SPRT(0.0, t.gate_elo1)
    candidate_evaluator = NetworkEvaluator(candidate, device=best.device, precision=best.precision)
    status = run_sprt(
        MCTSAgent(candidate_evaluator, search_config, seconds=seconds),
        MCTSAgent(best, search_config, seconds=seconds),
        variant,
        test,
        batch_pairs=16,
        max_pairs=t.gate_max_pairs,
        opening_plies=4,
        openings="random",
        seed=int(rng.integers(1 << 30)),
        verbose=False,
    )
    if status == "H1":
        best.net.load_state_dict(net.state_dict())
    return {
        "gate/accepted": float(status == "H1"),
        "gate/llr": test.llr(),
        "gate/pairs": len(test.scores),
        "gate/score": float(np.mean(test.scores)),
    }


class CannotStart(ValueError):
    """The run cannot start as configured: a checkpoint to resume or start from that is missing, corrupt
    or holds another network, an unknown backend. ``stapel-train`` says which in one line."""


def resume_point(named: "str | None", found: "list[pathlib.Path]") -> "tuple[pathlib.Path | None, dict | None]":
    """Where a run starts: the checkpoint ``resume=`` names, or the newest of the run's own (``found``,
    oldest first), whichever has more iterations behind it, loaded; (None, None) for a new run.

    A run started with ``resume=PATH`` writes its own checkpoints; the same command after a kill must go
    on from those, not from ``PATH`` again (that would throw the progress since away). The run's own
    win ties: they were written after ``PATH`` was read."""
    own = found[-1] if found else None
    if named is None or own is None:
        path = pathlib.Path(named) if named is not None else own
        return path, (checkpoint.load(path) if path is not None else None)
    theirs, ours = checkpoint.load(named), checkpoint.load(own)
    done_theirs, done_ours = theirs["counters"]["iteration"], ours["counters"]["iteration"]
    if done_theirs > done_ours:
        tqdm.write(f"resume={named} (iteration {done_theirs}) is further on than {own} (iteration {done_ours})")
        return pathlib.Path(named), theirs
    tqdm.write(f"this run's own {own} (iteration {done_ours}) goes on, not resume={named} (iteration {done_theirs})")
    return own, ours


def check_resumable(path: pathlib.Path, state: dict, variant: str) -> None:
    """Raise ``ValueError`` unless ``state`` (loaded from ``path``) is a training checkpoint of ``variant``."""
    made_for = state.get("variant") or (state.get("config") or {}).get("variant", {}).get("name")
    if made_for is not None and made_for != variant:
        raise ValueError(f"{path} is a Variant {made_for} run's; this run is Variant {variant} (variant={made_for})")
    if "trainer" not in state or "replay" not in state:
        raise ValueError(
            f"{path} holds a network alone (a snapshot or an agent), not a run's state: "
            f"start a new run from it with init_weights={path}"
        )


def train(cfg: DictConfig, out_dir: pathlib.Path) -> "pathlib.Path | None":
    """Run (or resume) training in ``out_dir``; returns the newest checkpoint's path (None if it has none:
    a run resumed from another directory's checkpoint with nothing left to do saves none)."""
    config = cast(Config, OmegaConf.to_object(cfg))  # the groups' own dataclasses, validated
    t = config.train
    version = checkpoint.code_version()  # of the code this run starts with
    if t.threads:
        torch.set_num_threads(t.threads)
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    variant = get_variant(config.variant.name).with_ply_cap(config.variant.ply_cap)
    dist = config.distributed
    if dist.backend not in ("none", "ray"):
        raise CannotStart(f"distributed.backend must be 'none' or 'ray', got {dist.backend!r}")
    learner_device = dist.learner_device or cfg.device
    device = torch.device(
        "cuda"
        if learner_device == "auto" and torch.cuda.is_available()
        else ("cpu" if learner_device == "auto" else learner_device)
    )

    # --- the network, its optimizer and the replay buffer ---------------------------------
    model_config = config.model.for_variant(variant)
    net = PolicyValueNet(model_config).to(device)
    trainer = Trainer(net, t, device)  # the train group holds the optimiser's settings
    # Self-play runs an inference copy on the training device (a GPU if the run has one, in half
    # precision there); it gets fresh weights every iteration.
    actor = PolicyValueNet(model_config)
    evaluator = NetworkEvaluator(actor, device=selfplay_device(device), precision=t.inference_precision)
    buffer = (
        ReplayBuffer(t.replay_max, variant, growing_window(t.replay_capacity, t.replay_growth))
        if t.replay_growth
        else ReplayBuffer(t.replay_capacity, variant)
    )
    engine = None  # the engine's games, a share of every batch (train.engine_positions)
    if t.engine_positions:
        try:
            games_of_engine = read_positions(t.engine_positions, variant.name)
        except ValueError as problem:
            raise CannotStart(str(problem)) from None
        engine = ReplayBuffer(len(games_of_engine), variant)
        engine.add(games_of_engine)
    engine_share = min(t.batch_size - 1, max(1, round(t.engine_fraction * t.batch_size))) if engine else 0
    opponents = make_opponents(list(t.eval_opponents))
    counters: RunCounters = {"iteration": 0, "positions": 0, "games": 0, "seconds": 0.0}

    # --- resume from the newest checkpoint of this run (or cfg.resume), or start from init_weights ---
    ckpt_dir = out_dir / "checkpoints"
    resume: "pathlib.Path | None" = None
    try:
        resume, state = resume_point(cfg.resume, checkpoint.list_checkpoints(ckpt_dir))
        if resume:
            assert state is not None  # loaded with its path
            check_resumable(resume, state, variant.name)
            net.load_state_dict(state["model"])
        elif config.init_weights:  # a new run from a trained network: only the weights carry over
            net.load_state_dict(checkpoint.load_weights(config.init_weights, model_config, variant.name))
    except ValueError as problem:  # missing, corrupt, another variant's
        raise CannotStart(str(problem)) from None
    except RuntimeError as problem:  # torch's, for a network of another shape
        detail = " ".join(line.strip() for line in str(problem).splitlines()[:2])
        raise CannotStart(f"{resume}: the network is not the config's model ({detail})") from None
    best_model = None  # with gating: the network self-play uses, if not the trained one
    if resume:
        assert state is not None
        best_model = state.get("best_model")
        trainer.load_state_dict(state["trainer"])
        buffer.load_bytes(state["replay"])
        counters = state["counters"]
        rng.bit_generator.state = state["numpy_rng"]
        torch.set_rng_state(state["torch_rng"])
        tqdm.write(
            f"resumed from {resume}: iteration {counters['iteration']}, {trainer.steps} gradient steps, "
            f"{len(buffer)} positions in the replay buffer"
        )
        later = checkpoint.set_aside(out_dir / "snapshots", counters["iteration"], out_dir / "snapshots_abandoned")
        if later:  # a learning curve must not mix them with the snapshots of the run that goes on
            tqdm.write(
                f"{len(later)} snapshots saved after that checkpoint by the stopped process moved to "
                f"{later[0].parent}: the run goes on from the checkpoint"
            )
        # A resumed run trains with the command line's config; say where it departs from the checkpoint's
        # (a longer budget is meant, a changed default of a newer commit may not be).
        # The minimax loop's group is no part of this loop's config (and absent from checkpoints before it).
        saved = {"loop": "alphazero", **(state.get("config") or {})}
        current = cast(dict, OmegaConf.to_container(cfg))
        changes = config_changes(
            {k: v for k, v in saved.items() if k != "minimax"}, {k: v for k, v in current.items() if k != "minimax"}
        )
        if changes:
            tqdm.write("the config differs from the checkpoint's, the run goes on with the new: " + "; ".join(changes))
    elif config.init_weights:
        tqdm.write(f"a new run from the network of {config.init_weights}")
    evaluator.net.load_state_dict(best_model if best_model is not None else net.state_dict())
    selfplay: "SelfPlay | None" = None
    workers: "RaySelfPlayActors | SelfPlayWorkers | None" = None
    if dist.backend == "ray" or t.selfplay_workers:
        # Each worker's random stream depends on the run seed, its index and the iteration it starts
        # at, so a resumed run is as reproducible as a fresh one.
        count = dist.actors if dist.backend == "ray" else t.selfplay_workers
        specs = [
            WorkerSpec(
                variant.name,
                variant.ply_cap,
                dataclasses.asdict(model_config),
                t.inference_precision,
                config.mcts,
                t.num_games,
                (cfg.seed, i, counters["iteration"]),
                str(selfplay_device(device)),
            )
            for i in range(count)
        ]
        if dist.backend == "ray":
            workers = RaySelfPlayActors(specs, dist)
        else:
            workers = SelfPlayWorkers(specs)
        (out_dir / "selfplay_pids.json").write_text(json.dumps(workers.pids()))  # to watch (or kill) them
        if not t.threads and not dist.address:
            torch.set_num_threads(1)  # the workers have the other cores; oversubscribed OpenMP threads stall
    else:
        selfplay = SelfPlay(variant, evaluator, config.mcts, t.num_games, rng)

    def weights() -> "dict[str, np.ndarray]":
        """The weights self-play should use now, for the workers."""
        return {k: v.detach().cpu().numpy() for k, v in evaluator.net.state_dict().items()}

    writer = SummaryWriter(str(out_dir / "tb"), purge_step=counters["iteration"] or None)
    if counters["iteration"] == 0:
        writer.add_text("config", f"```\n{OmegaConf.to_yaml(cfg)}\n```\ncode {version}")
    budget = t.hours * 3600.0
    bar = tqdm(
        total=round(budget) if budget else (t.iterations or None),
        initial=0,
        unit="s" if budget else "it",
        desc=f"Variant {variant.name}",
        dynamic_ncols=True,
    )
    bar.update(round(counters["seconds"]) if budget else counters["iteration"])
    path = None
    stop = StopRequest("Ctrl-C: the run stops after this iteration, with a checkpoint (Ctrl-C again: at once)")

    # --- the loop ----------------------------------------------------------------------------
    stop.install()
    try:
        while True:
            if (budget and counters["seconds"] >= budget) or (t.iterations and counters["iteration"] >= t.iterations):
                break
            start = time.perf_counter()
            it = counters["iteration"] + 1

            # 1. self-play with the latest weights (workers: those of the previous iteration). A run's
            # first iteration plays fewer positions with shorter searches where its network is untrained,
            # and the first line with losses comes sooner.
            per_worker = []
            count, simulations = t.positions_per_iteration, 0
            if counters["iteration"] == 0 and not config.init_weights:
                count, simulations = min(t.first_positions or count, count), t.first_simulations
            if workers is not None:
                if not workers.pending:
                    workers.request(weights(), count, counters["iteration"], simulations)
                batch = workers.collect()
                # played while this process trains
                workers.request(weights(), t.positions_per_iteration, counters["iteration"])
                positions, games, per_worker = batch.positions, batch.games, batch.per_worker
                selfplay_seconds = batch.seconds / len(per_worker)  # each worker's own play time
                network_share = batch.network_seconds / max(batch.seconds, 1e-9)
            else:
                assert selfplay is not None  # made when there are no workers
                selfplay.version = counters["iteration"]
                evaluator.reset_stats()
                positions = selfplay.play(count, simulations)
                games = selfplay.take_finished_games()
                selfplay_seconds = time.perf_counter() - start
                network_share = evaluator.seconds / selfplay_seconds
            buffer.add(positions)
            counters["positions"] += len(positions)
            counters["games"] += len(games)

            # 2. train on the replay buffer
            train_start = time.perf_counter()
            trainer.run_fraction = (counters["seconds"] + train_start - start) / budget if budget else None
            history = []
            if len(buffer) >= t.min_replay:
                for _ in range(max(1, round(t.sample_ratio * len(positions) / t.batch_size))):
                    sample = buffer.sample(
                        t.batch_size - engine_share, rng, model_config.layout, t.value_mix, model_config.inputs
                    )
                    if engine is not None and engine_share:
                        drawn = engine.sample(engine_share, rng, model_config.layout, t.value_mix, model_config.inputs)
                        sample = TrainingBatch.concatenate([sample, drawn])
                    history.append(trainer.step(sample))
            train_seconds = time.perf_counter() - train_start
            scalars = mean_metrics(history) if history else {}
            now = counters["seconds"] + time.perf_counter() - start  # the run's clock, which the schedules read
            ending = (budget and now >= budget) or (t.iterations and it >= t.iterations)
            if not t.gate:
                evaluator.net.load_state_dict(net.state_dict())
            elif due(counters.get("gated_at", 0.0), t.gate_every_minutes, now):
                counters["gated_at"] = now
                scalars.update(gate(config, net, evaluator, variant, rng))

            # 3. log
            scalars.update(
                {
                    "selfplay/positions_per_s": len(positions) / selfplay_seconds,
                    "selfplay/network_share": network_share,
                    "run/positions_per_s": len(positions) / (time.perf_counter() - start),
                    "selfplay/game_length": float(np.mean([g.plies for g in games])) if games else 0.0,
                    "selfplay/white_score": float(np.mean([(g.result + 1) / 2 for g in games])) if games else 0.5,
                    "train/steps_per_s": len(history) / train_seconds if history else 0.0,
                    "train/replay_size": buffer.sampled(),
                    # iterations between the weights that played a position and its first training
                    "selfplay/policy_lag": float(np.mean(it - 1 - positions.arrays["version"]))
                    if len(positions)
                    else 0.0,
                }
            )
            for i, (count, seconds) in enumerate(per_worker):
                scalars[f"selfplay/worker_{i}_positions_per_s"] = count / max(seconds, 1e-9)
            eval_due = ending or due(counters.get("eval_at", 0.0), t.eval_every_minutes, now)
            if opponents and t.eval_every_minutes and eval_due:
                search_config = dataclasses.replace(config.mcts, num_simulations=t.eval_simulations)
                agent = MCTSAgent(evaluator, search_config)  # temperature 0: no noise
                results = evaluate(agent, opponents, variant, t.eval_games, rng)
                seconds = sum(r.seconds for r in results)
                counters["eval_at"] = now
                counters["eval_seconds"] = counters.get("eval_seconds", 0.0) + seconds
                share = counters["eval_seconds"] / max(1e-9, counters["seconds"] + time.perf_counter() - start)
                for r in results:
                    scalars.update(r.scalars())
                scalars.update({"eval/seconds": seconds, "eval/share_of_run": share})
                tqdm.write(
                    f"eval at iteration {it}: "
                    + "; ".join(f"vs {r.opponent}: {r.text}" for r in results)
                    + f"; {seconds:.0f} s, {100 * share:.0f}% of the run so far"
                )
            for key, value in scalars.items():
                writer.add_scalar(key, value, it)
            if games and due(counters.get("imaged_at", 0.0), t.image_every_minutes, now):
                counters["imaged_at"] = now
                writer.add_image("selfplay/position", halfway_picture(variant, games[0].actions), it, dataformats="HWC")
            if games:
                game_dir = out_dir / "games"
                game_dir.mkdir(exist_ok=True)
                tags = {"Event": f"self-play iteration {it}", "White": "self", "Black": "self"}
                (game_dir / f"iter_{it:05d}.pdn").write_text(write_game(variant, games[0].actions, tags))

            counters["iteration"] = it
            counters["seconds"] += time.perf_counter() - start
            bar.update(round(time.perf_counter() - start) if budget else 1)
            shown = {
                k.split("/")[-1]: f"{v:.3g}"
                for k, v in scalars.items()
                if k in ("loss/policy", "loss/value", "selfplay/positions_per_s") or k.startswith("eval/score_vs_")
            }
            bar.set_postfix(it=it, games=counters["games"], **shown)

            # 4. checkpoint (atomic: temp file + rename), by time and always at the end: with a full replay
            # buffer a save costs a good share of an iteration.
            last = ending or (budget and counters["seconds"] >= budget) or stop.requested
            if last or due(counters.get("saved_at", 0.0), t.checkpoint_every_minutes, counters["seconds"]):
                save_start = time.perf_counter()
                counters["saved_at"] = counters["seconds"]
                path = checkpoint.save(
                    ckpt_dir,
                    it,
                    {
                        "model": net.state_dict(),
                        "model_config": dataclasses.asdict(model_config),
                        "trainer": trainer.state_dict(),
                        "replay": buffer.to_bytes(),
                        "counters": dict(counters),
                        "numpy_rng": rng.bit_generator.state,
                        "torch_rng": torch.get_rng_state(),
                        "config": OmegaConf.to_container(cfg),
                        "seed": cfg.seed,
                        "variant": variant.name,
                        "code_version": version,
                        "best_model": evaluator.net.state_dict() if t.gate else None,
                    },
                    keep=t.keep_checkpoints,
                )
                # Saving is part of the run's budget (the checkpoint itself cannot count its own save).
                counters["seconds"] += time.perf_counter() - save_start
            # Snapshots for learning curves: the network alone, every keep_every_minutes of the run, all kept.
            if due(counters.get("kept_at", 0.0), t.keep_every_minutes, counters["seconds"]):
                counters["kept_at"] = counters["seconds"]
                checkpoint.save(
                    out_dir / "snapshots",
                    it,
                    {
                        "model": net.state_dict(),
                        "model_config": dataclasses.asdict(model_config),
                        "counters": dict(counters),
                        "config": OmegaConf.to_container(cfg),
                        "seed": cfg.seed,
                        "variant": variant.name,
                        "code_version": version,
                    },
                    keep=0,
                )
            if stop.requested:
                break
    finally:
        stop.restore()
        if workers is not None:
            workers.close()
    bar.close()
    writer.close()
    if stop.requested:
        raise RunStopped(path)
    found = checkpoint.list_checkpoints(ckpt_dir)
    return path or (found[-1] if found else None)
