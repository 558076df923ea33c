"""A warm start for AlphaZero training: a first policy-value network learned from the classical engine's games.

    python scripts/warm_start.py --variant I --games 2000 --out runs/warm_I
    stapel-train variant=I init_weights=runs/warm_I/warm_start.pt          # self-play from it
    python scripts/warm_start.py --variant II --out runs/warm_II model=small  # the run's model config, as overrides

The engine plays ``--games`` games against itself at ``--nodes`` nodes a move with the evaluation ``--eval``
(``hand``, the hand-written one; ``nnue``, the packaged learned one; or a network file of the minimax loop) in
``--jobs`` processes (``stapel_rl.train.engine_games``: random openings, jittered budgets, a random move with
probability ``--epsilon``); every ``--holdout``-th chunk of games is kept out for validation. The network of the
training config (Hydra overrides after the options, as ``stapel-train`` takes them) is then trained for ``--steps``
gradient steps with the run's optimiser and value target (``train.lr``, ``train.batch_size``, ``train.value_mix``):
the policy learns the engine's moves, the value its results and scores. The games are kept in
``--out/positions.npz`` with the options that played them, and in chunks of ``--chunk`` games, each saved as it ends
(``--out/games/``): run the command again after a kill, or with more ``--games`` of the same options, and the games
played are read back, not played again (other options than theirs are refused). The training's state is saved every
``--save-every`` steps (``--out/training/``, removed when the network is written): after a kill the same command
trains on from the last save, with the same batches as an uninterrupted run.

Prints, on the held-out games, the policy's top-1 agreement with the engine and the value's mean squared
error against the results, before and after training, and writes ``--out/warm_start.pt``, a checkpoint with
its config, code version and these figures, which ``init_weights=`` and agent specs
(``mcts:runs/warm_I/warm_start.pt``) load.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import shutil
import sys
import time

import numpy as np
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from tqdm import tqdm

from stapel_rl.classical import nnue
from stapel_rl.cli.options import check_counts
from stapel_rl.env import get_variant
from stapel_rl.env.observation import canonical_mask, encode
from stapel_rl.eval.parallel import Pool
from stapel_rl.models import checkpoint
from stapel_rl.models.network import PolicyValueNet, masked_log_softmax
from stapel_rl.records import atomic_write_bytes, code_version, save_npz
from stapel_rl.train import chunks
from stapel_rl.train.app import CONFIG_DIR
from stapel_rl.train.config import Config
from stapel_rl.train.engine_games import game_rows
from stapel_rl.train.replay import FIELDS, Positions, ReplayBuffer
from stapel_rl.train.trainer import Trainer


def without_games(settings: "dict[str, object]") -> "dict[str, object]":
    """The options that make the games, less their number: more or fewer games of the same options share chunks."""
    return {key: value for key, value in settings.items() if key != "games"}


def games(args: argparse.Namespace, path: pathlib.Path) -> "tuple[Positions, Positions]":
    """The engine's positions, training and held-out games (played now, or read back from ``path`` or from
    the chunks in ``games/`` beside it); ``ValueError`` if either holds games played with other options."""
    settings = {key: getattr(args, key) for key in ("variant", "games", "nodes", "epsilon", "seed", "eval")}
    same = without_games(settings)
    if path.is_file():
        with np.load(path) as saved:
            arrays = {k: saved[k] for k in saved.files}
        made = json.loads(str(arrays.pop("settings", "null")))
        if made is None or made == settings:  # files of before the settings were kept are taken as they are
            print(f"{arrays['value'].size} positions read back from {path}")
            return split(arrays, args.holdout)
        if without_games(made) != same:
            raise ValueError(f"{path} holds games of {made}, not of {settings}: name another --out")
    # More or fewer games of the same options, or none yet: the chunks kept beside it are read back.
    folder = path.parent / "games"
    kept = folder / "settings.json"
    if kept.is_file() and json.loads(kept.read_text()) != same:
        raise ValueError(f"{folder} holds games of {json.loads(kept.read_text())}, not of {same}: name another --out")
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(kept, json.dumps(same).encode())
    spans = [(first, min(args.chunk, args.games - first)) for first in range(0, args.games, args.chunk)]
    variant = get_variant(args.variant)
    tasks = [
        (variant, count, [args.seed], args.nodes, 6, args.epsilon, 0.3, first, None, args.eval)
        for first, count in spans
    ]
    with Pool(args.jobs) as pool:
        parts = chunks.played(game_rows, tasks, spans, folder, pool, "engine games")
    for i, part in enumerate(parts):
        part["chunk"] = np.full(part["value"].size, i)  # for the hold-out split
    arrays = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    save_npz(path, {**arrays, "settings": np.array(json.dumps(settings))})
    return split(arrays, args.holdout)


def split(arrays: "dict[str, np.ndarray]", holdout: int) -> "tuple[Positions, Positions]":
    """The rows of every ``holdout``-th chunk of games (held out) and of the others (to train on)."""
    held = arrays["chunk"] % holdout == 0
    train, valid = (Positions({k: arrays[k][rows] for k in FIELDS}) for rows in (~held, held))
    return train, valid


def measure(net: PolicyValueNet, valid: Positions, variant: str) -> "tuple[float, float]":
    """Top-1 agreement of the policy with the engine's move and the value's MSE against results."""
    buffer = ReplayBuffer(len(valid), get_variant(variant))
    buffer.add(valid)
    agree, error, n = 0.0, 0.0, len(valid)
    net.eval()
    with torch.no_grad():
        for start in range(0, n, 1024):
            index = np.arange(start, min(n, start + 1024))
            state = buffer.states(index)
            logits, value, _ = net(torch.as_tensor(encode(state, net.layout, net.inputs)))
            log_p = masked_log_softmax(logits, torch.as_tensor(canonical_mask(state)))
            agree += float((log_p.argmax(1).numpy() == valid.arrays["policy"][index].argmax(1)).sum())
            error += float(((value.numpy() - valid.arrays["value"][index]) ** 2).sum())
    return agree / n, error / n


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", default="I", choices=("I", "II"))
    parser.add_argument("--games", type=int, default=2000, help="engine games to learn from")
    parser.add_argument("--nodes", type=int, default=2000, help="node budget of each engine search")
    parser.add_argument("--eval", default="hand", help="the engine's evaluation: hand, nnue or a network file")
    parser.add_argument("--epsilon", type=float, default=0.05, help="chance of a random full move")
    parser.add_argument("--steps", type=int, default=4000, help="gradient steps")
    parser.add_argument("--chunk", type=int, default=20, help="games a task plays, saved as it ends")
    parser.add_argument("--save-every", type=int, default=1000, help="gradient steps between saves of the training")
    parser.add_argument("--holdout", type=int, default=10, help="every this-th chunk of games validates")
    parser.add_argument("--jobs", type=int, default=2, help="processes that play the games")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="folder for positions.npz and warm_start.pt")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides of the training config (model=..., train.lr=)")
    args = parser.parse_args(argv)
    try:
        check_counts(args, "games", "nodes", "steps", "jobs", "chunk", "save_every")
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.holdout < 2 or not 0 <= args.epsilon <= 1:
        print("error: --holdout must be at least 2 and --epsilon in [0, 1]", file=sys.stderr)
        return 2
    if args.games <= args.chunk:
        print(
            f"error: --games {args.games} make one chunk of --chunk {args.chunk}, which is held out: "
            "play more games or smaller chunks",
            file=sys.stderr,
        )
        return 2
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
            cfg = compose(config_name="config", overrides=[f"variant={args.variant}", *args.overrides])
    except Exception as error:  # Hydra's errors for unknown keys and groups
        print(f"error: {error}", file=sys.stderr)
        return 2
    config = OmegaConf.to_object(cfg)
    assert isinstance(config, Config)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        nnue.engine_eval(args.eval, args.variant)  # a wrong --eval is refused before any game
        train, valid = games(args, out / "positions.npz")
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    variant = get_variant(args.variant)
    model_config = config.model.for_variant(variant)
    torch.manual_seed(args.seed)
    net = PolicyValueNet(model_config)
    t = dataclasses.replace(config.train, total_steps=args.steps, lr_schedule="cosine")
    trainer = Trainer(net, t, torch.device("cpu"))
    buffer = ReplayBuffer(len(train), variant)
    buffer.add(train)
    rng = np.random.default_rng(args.seed)
    # The training's state every --save-every steps (training/), so that a kill loses at most that many.
    saves = out / "training"
    settings = {
        **{k: v for k, v in vars(args).items() if k not in ("jobs", "out")},
        "config": OmegaConf.to_container(cfg),
    }
    kept = checkpoint.list_checkpoints(saves)
    if kept:
        state = checkpoint.load(kept[-1])
        if state["settings"] != settings:
            print(f"error: {saves} holds training of other options: remove it or name another --out", file=sys.stderr)
            return 2
        net.load_state_dict(state["model"])
        trainer.load_state_dict(state["trainer"])
        rng.bit_generator.state = state["rng"]
        before, started = tuple(state["before"]), started - state["seconds"]
        tqdm.write(f"training resumed at step {trainer.steps} from {kept[-1]}")
    else:
        before = measure(net, valid, args.variant)
    bar = tqdm(
        range(trainer.steps, args.steps), desc="gradient steps", unit="step", initial=trainer.steps, total=args.steps
    )
    for step in bar:
        metrics = trainer.step(buffer.sample(t.batch_size, rng, model_config.layout, t.value_mix, model_config.inputs))
        if step % 50 == 0:
            bar.set_postfix(policy=f"{metrics['loss/policy']:.3f}", value=f"{metrics['loss/value']:.3f}")
        if trainer.steps % args.save_every == 0 and trainer.steps < args.steps:
            payload = {
                "model": net.state_dict(),
                "trainer": trainer.state_dict(),
                "rng": rng.bit_generator.state,
                "before": before,
                "seconds": time.perf_counter() - started,
                "settings": settings,
            }
            checkpoint.save(saves, trainer.steps, payload, keep=1)
    after = measure(net, valid, args.variant)
    figures = {
        "positions": len(train),
        "held_out_positions": len(valid),
        "agreement_before": before[0],
        "value_mse_before": before[1],
        "agreement_after": after[0],
        "value_mse_after": after[1],
    }
    print(
        f"Variant {args.variant}: {len(train)} positions, {len(valid)} held out; policy agrees with the engine "
        f"{100 * before[0]:.1f}% -> {100 * after[0]:.1f}%, value MSE {before[1]:.3f} -> {after[1]:.3f}; "
        f"{time.perf_counter() - started:.0f} s"
    )
    path = checkpoint.save(
        out,
        args.steps,
        {
            "model": net.state_dict(),
            "model_config": dataclasses.asdict(model_config),
            "config": OmegaConf.to_container(cfg),
            "variant": args.variant,
            "seed": args.seed,
            "counters": {"seconds": time.perf_counter() - started},
            "warm_start": {**vars(args), **figures},
            "code_version": code_version(),
        },
        keep=0,
    )
    target = out / "warm_start.pt"
    path.replace(target)
    shutil.rmtree(saves, ignore_errors=True)
    print(f"network: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
