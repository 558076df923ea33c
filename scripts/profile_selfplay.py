"""Where self-play time goes: network, search and engine, as ``stapel-train`` runs it.

Plays self-play with the training config's search and batch (default: Gumbel,
16 simulations, 128 games) and a network of the configured size (trained
weights from ``--checkpoint``, since a trained network's sharper priors make
deeper trees than a fresh one's), and splits the wall time by wrapping the
entry points with timers:

- network: ``NetworkEvaluator`` calls (encoding the planes, the forward pass,
  the policy rotation);
- engine: ``engine.step`` and ``engine.reset_games``, inside the search
  (expanding leaves) and outside it (playing the chosen moves);
- search: the rest of ``search()`` (selection, tree writes, backup);
- self-play bookkeeping: the rest of ``SelfPlay.play`` (records, subtree reuse).

Usage: python scripts/profile_selfplay.py [overrides ...] [--positions 8192] [--compare-fp32] [--checkpoint PATH]
                                         [--baseline OVERRIDE ...]
  e.g. python scripts/profile_selfplay.py train.num_games=512 mcts.num_simulations=32
       python scripts/profile_selfplay.py --baseline mcts.forced_rounds=null   # the same run, uncapped
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import time
import types
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

import stapel_rl.env.engine as engine_module
import stapel_rl.train.selfplay as selfplay_module
from stapel_rl._malloc import tune_malloc
from stapel_rl.env import get_variant
from stapel_rl.models import NetworkEvaluator, PolicyValueNet
from stapel_rl.models.checkpoint import load
from stapel_rl.train.app import CONFIG_DIR
from stapel_rl.train.config import Config
from stapel_rl.train.selfplay import SelfPlay


@contextlib.contextmanager
def timed(
    module: types.ModuleType, name: str, totals: "collections.defaultdict[str, float]", inside: "list[str]"
) -> Iterator[None]:
    """Replace ``module.name`` by a wrapper adding its wall time to ``totals[name (where)]``."""
    original = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if name == "search":  # count the searched positions (live games) and simulations
            live = int((~args[0].done).sum())
            totals["searched positions"] += live
            totals["simulations"] += live * args[2].num_simulations
        start = time.perf_counter()
        inside.append(name)
        try:
            return original(*args, **kwargs)
        finally:
            inside.pop()
            where = "in search" if "search" in inside else "outside search"
            totals[f"{name} ({where})" if name != "search" else name] += time.perf_counter() - start

    setattr(module, name, wrapper)
    try:
        yield
    finally:
        setattr(module, name, original)


def profile(cfg: DictConfig, positions: int, precision: str, checkpoint: "str | None") -> float:
    """Print where self-play time goes; returns the positions searched per second."""
    config = OmegaConf.to_object(cfg)  # the training schema's dataclasses (stapel_rl/train/config.py)
    if not isinstance(config, Config):
        raise TypeError(f"the composed config is a {type(config).__name__}, not the training schema's Config")
    variant = get_variant(config.variant.name).with_ply_cap(config.variant.ply_cap)
    net = PolicyValueNet(config.model.for_variant(variant))
    if checkpoint:
        saved = load(checkpoint)
        if saved["model_config"] != dataclasses.asdict(net.config):
            raise ValueError(f"{checkpoint} holds a {saved['model_config']} network, the config asks for {net.config}")
        net.load_state_dict(saved["model"])
    evaluator = NetworkEvaluator(net, "cpu", precision=precision)
    t = config.train
    selfplay = SelfPlay(variant, evaluator, config.mcts, t.num_games, np.random.default_rng(0))
    selfplay.play(1)  # warm-up: first kernels, first trees
    evaluator.reset_stats()
    totals: "collections.defaultdict[str, float]" = collections.defaultdict(float)
    inside: "list[str]" = []
    with (
        timed(selfplay_module, "search", totals, inside),
        timed(engine_module, "step", totals, inside),
        timed(engine_module, "reset_games", totals, inside),
    ):
        start = time.perf_counter()
        made = len(selfplay.play(positions))
        total = time.perf_counter() - start
    engine_in = sum(v for k, v in totals.items() if k.endswith("(in search)"))
    engine_out = sum(v for k, v in totals.items() if k.endswith("(outside search)"))
    parts = {
        "network": evaluator.seconds,
        "engine (in search)": engine_in,
        "search (selection, tree, backup)": totals["search"] - evaluator.seconds - engine_in,
        "engine (playing moves)": engine_out,
        "self-play bookkeeping": total - totals["search"] - engine_out,
    }
    searched = totals.pop("searched positions")
    print(
        f"\n{evaluator.precision} {net.config.layout} {net.config.blocks}x{net.config.channels}, "
        f"{t.num_games} games, {cfg.mcts.algorithm} {cfg.mcts.num_simulations} simulations: "
        f"{searched / total:,.0f} positions searched/s ({totals.pop('simulations') / total:,.0f} simulations/s; "
        f"{made:,} positions of finished games); network {evaluator.positions_per_second:,.0f} positions/s "
        f"at an average batch of {evaluator.positions / max(1, evaluator.calls):.0f}"
    )
    for name, seconds in parts.items():
        print(f"  {name:<34} {seconds:7.2f} s  {100 * seconds / total:5.1f}%")
    return searched / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("overrides", nargs="*", help="Hydra overrides of the training config")
    parser.add_argument("--positions", type=int, default=8192, help="recorded positions to play")
    parser.add_argument("--compare-fp32", action="store_true", help="also profile with the network in fp32")
    parser.add_argument("--checkpoint", default=None, help="trained weights for the configured network")
    parser.add_argument(
        "--baseline",
        nargs="+",
        default=None,
        metavar="OVERRIDE",
        help="also profile with these overrides added, and print the speed ratio against it",
    )
    args = parser.parse_args()
    tune_malloc()  # as the CLIs and self-play workers do: multi-MB temporaries stay mapped
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=args.overrides)
        baseline = compose(config_name="config", overrides=args.overrides + args.baseline) if args.baseline else None
    if cfg.train.threads:
        torch.set_num_threads(cfg.train.threads)
    print(
        f"profile_selfplay | torch {torch.__version__}, {torch.get_num_threads()} threads | "
        f"overrides: {' '.join(args.overrides) or '(none)'}"
    )
    speed = {}
    for precision in [cfg.train.inference_precision, "fp32"] if args.compare_fp32 else [cfg.train.inference_precision]:
        speed[precision] = profile(cfg, args.positions, precision, args.checkpoint)
    if baseline is not None:
        print(f"\nbaseline: {' '.join(args.baseline)}")
        base = profile(baseline, args.positions, cfg.train.inference_precision, args.checkpoint)
        print(
            f"\nprofile_selfplay: {speed[cfg.train.inference_precision] / base:.2f}x the positions searched/s "
            f"of the baseline ({' '.join(args.baseline)})"
        )


if __name__ == "__main__":
    main()
