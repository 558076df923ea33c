"""stapel-train loop=minimax: the classical engine's learned evaluation, generation by generation.

    stapel-train loop=minimax variant=II                      # from the hand-written evaluation
    stapel-train loop=minimax minimax.start=zero              # a random network, no hand-written terms
    stapel-train loop=minimax minimax=tiny hydra.run.dir=runs/a   # run again in the same dir: it resumes

Generation 0 is the starting evaluation (``minimax.start``). Each generation then:

1. plays ``minimax.games`` games of the compiled alpha-beta engine against itself with the current
   evaluation (``stapel_rl.classical.selfplay``: random openings, jittered node budgets, random moves
   with probability ``epsilon``) and keeps their quiet positions (``positions.npz``); game ``i`` plays
   from its own random stream, so the positions are the same whatever ``minimax.jobs`` shares them out;
2. labels them ``(1 - value_mix) * result + value_mix * sigmoid(k * search score)`` and trains a new
   network on the positions of the newest ``window`` generations, warm-started from the current one
   (``stapel_rl.classical.trainer``; ``candidate.npz``);
3. gates it: an SPRT (``stapel_rl.eval.sprt.run_sprt``) of the new network against the current
   evaluation, both engines at ``match_time`` seconds a move (``gate.json``); H1 promotes it;
4. rates it against a fixed panel of agents (``minimax.panel``), so that a generation that only learned
   to beat its parent shows on the curve;
5. saves the network with its config, code version, gate and panel results in its metadata
   (``net.npz``; the promoted one also as ``best.npz``), writes TensorBoard scalars and the loop's
   state (``loop.json``, atomically: the generation finished, the current evaluation, the history).

Games, gate and panel pairs are played by ``minimax.jobs`` processes of one core each
(``stapel_rl.eval.parallel``), the engines given to them as agent specs (``classical:eval=PATH``).
Every phase's result is a file written atomically and every phase's randomness comes from
``(seed, generation, phase)``: after a kill the same command goes on from the last finished phase, and
with node-limited matches (``match_nodes``) the run ends as an uninterrupted one would. Each phase's
seconds are kept too (``seconds.json``), so a generation's time counts the work done before a kill.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import re
import shutil
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm

from stapel_rl.classical import nnue
from stapel_rl.classical.evaluation import NUM_FEATURES, load_weights
from stapel_rl.classical.searcher import Searcher
from stapel_rl.classical.selfplay import best_scale, collect, labels
from stapel_rl.classical.trainer import FitSettings, Model, fit, from_net, to_net
from stapel_rl.env import Variant, get_variant
from stapel_rl.eval.agents import clock, make_agent
from stapel_rl.eval.openings import opening_fens
from stapel_rl.eval.parallel import Pool, agent_of, play_in_parallel
from stapel_rl.eval.pentanomial import elo_of
from stapel_rl.eval.sprt import SPRT, run_sprt
from stapel_rl.records import atomic_write_bytes, code_version, save_npz
from stapel_rl.train import chunks
from stapel_rl.train.config import Config, MinimaxConfig, config_changes, register

register()

STATE_FILE = "loop.json"
SECONDS_FILE = "seconds.json"  # per generation: the seconds of each phase done (games, fit, gate, panel)
T = TypeVar("T")
#: The phases' random streams: ``(seed, generation, phase)``.
_GAMES, _FIT, _GATE, _PANEL = range(4)


def stream(seed: int, generation: int, phase: int) -> np.random.Generator:
    return np.random.default_rng([seed, generation, phase])


def load_net(path: "str | pathlib.Path", variant: Variant) -> nnue.Net:
    """A network file for ``variant``; ``ValueError`` saying what is wrong (missing, corrupt, another variant)."""
    net = nnue.load(path)
    made_for = net.metadata.get("variant")
    if made_for is not None and made_for != variant.name:
        raise ValueError(
            f"evaluation network {str(path)!r} is for Variant {made_for}, this run is Variant {variant.name}"
        )
    return net


def write_json(path: pathlib.Path, data: dict) -> None:
    atomic_write_bytes(path, (json.dumps(data, indent=1) + "\n").encode())


def starting_point(m: MinimaxConfig, variant: Variant, seed: int, out_dir: pathlib.Path) -> "dict[str, Any]":
    """Generation 0's state: the hand-written evaluation alone, a random network without hand-written terms
    (``zero``), or a network file (its own hand-written terms and scale)."""
    state: "dict[str, Any]" = {"generation": 0, "best": None, "scale_k": None, "history": []}
    if m.start == "hand_written":
        state["weights"] = load_weights(variant.name).tolist()
        return state
    if m.start == "zero":
        torch.manual_seed(int(stream(seed, 0, _FIT).integers(1 << 31)))
        net = to_net(Model(m.width, m.hidden), 1.0 / m.zero_scale, np.zeros(NUM_FEATURES, np.int64), {})
        net.metadata = {"variant": variant.name, "generation": 0, "procedure": "minimax loop: a random network"}
        state["scale_k"] = m.zero_scale
    else:
        source = nnue.packaged_path(variant.name) if m.start == "nnue" else pathlib.Path(m.start)
        net = load_net(source, variant)
        net.metadata = {**net.metadata, "variant": variant.name, "generation": 0, "source": str(source)}
        state["scale_k"] = 1.0 / float(net.head[1])
    path = nnue.save(net, out_dir / "generations" / "gen_0000" / "net.npz")
    state["best"] = str(path.relative_to(out_dir))
    state["weights"] = net.weights.tolist()
    return state


def engine_spec(net: "pathlib.Path | None", m: MinimaxConfig) -> str:
    """The agent spec of the engine with the network file ``net`` (``None``: the hand-written evaluation)
    at the loop's match limits."""
    limit = f"nodes={m.match_nodes}" if m.match_nodes else f"time={m.match_time:g}"
    if net is None:
        return f"classical:{limit}"
    if ":" in str(net):
        raise ValueError(f"minimax: the run's path {str(net)!r} holds ':', which agent specs cannot carry")
    return f"classical:{limit}:eval={net}"


def _collect(
    variant: Variant,
    weights: np.ndarray,
    net: "nnue.Net | None",
    seed: "list[int]",
    first: int,
    games: int,
    m: MinimaxConfig,
) -> "dict[str, np.ndarray]":
    """Games ``first`` to ``first + games - 1`` of a generation's self-play (in a worker process)."""
    searcher = Searcher(variant, weights=weights, tt_bits=18, net=net)
    return collect(
        variant, searcher, games, seed, m.nodes, m.opening_plies, m.epsilon, m.jitter, first_game=first, progress=False
    )


def positions(
    m: MinimaxConfig,
    variant: Variant,
    best: "nnue.Net | None",
    weights: np.ndarray,
    seed: int,
    g: int,
    gdir: pathlib.Path,
    pool: "Pool | None",
) -> "dict[str, np.ndarray]":
    """Generation ``g``'s self-play positions, played now (in ``pool``'s workers, a chunk of games a task)
    or read back after a kill.

    Each chunk is saved as it ends (``games/``, until the generation's ``positions.npz`` is written): a
    kill loses the chunks in play, not the phase. Game ``i`` plays with its own random stream, so a
    resumed phase plays the same games as an uninterrupted one."""
    path = gdir / "positions.npz"
    if not path.is_file():
        chunk = max(1, min(25, -(-m.games // (4 * (pool.jobs if pool else 1)))))
        tasks = [
            (variant, weights, best, [seed, g, _GAMES], first, min(chunk, m.games - first), m)
            for first in range(0, m.games, chunk)
        ]
        spans = [(t[4], t[5]) for t in tasks]
        parts = chunks.played(_collect, tasks, spans, gdir / "games", pool, f"generation {g} games")
        data = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        save_npz(path, data)
        shutil.rmtree(gdir / "games")
    return positions_of(gdir.parent.parent, g)


def candidate(path: pathlib.Path, make: "Callable[[], tuple[nnue.Net, float]]") -> "tuple[nnue.Net, float]":
    """A generation's new network and the scale ``k`` it is in: read back from ``path``, or trained now
    (``make``) and saved there."""
    if path.is_file():
        net = nnue.load(path)
        return net, 1.0 / float(net.head[1])
    net, k = make()
    nnue.save(net, path)
    return net, k


def train(
    m: MinimaxConfig,
    state: dict,
    best: "nnue.Net | None",
    weights: np.ndarray,
    seed: int,
    g: int,
    out_dir: pathlib.Path,
    meta: dict,
    pooled: "Sequence[tuple[dict[str, np.ndarray], float]]" = (),
) -> "tuple[nnue.Net, float]":
    """Generation ``g``'s new network trained on the run's positions in ``out_dir`` (warm-started from
    ``best``; ``None``: a new network, or the hand-written evaluation's generation 1) and its scale ``k``.
    Its metadata holds the epoch kept and the held-out log-loss against results, the starting network's
    beside it (``scripts/refit.py`` refits a generation with other settings).

    ``pooled``: more positions to train on (other runs', ``scripts/refit.py --pool``), each set with the
    scale ``k`` its search scores are in, so that its labels mean what the run's do. They only train:
    the held-out games, and so the early stop and the log-loss reported, stay the run's own.
    """
    parts = [positions_of(out_dir, h) for h in range(max(1, g - m.window + 1), g + 1)]
    data = {k: np.concatenate([p[k] for p in parts]) for k in parts[-1]}
    valid = data["game"] % m.holdout == 0
    train_rows, valid_rows = np.flatnonzero(~valid), np.flatnonzero(valid)
    if not train_rows.size or not valid_rows.size:
        raise RuntimeError(f"generation {g}: too few games to train and validate on; raise minimax.games")
    x = data["features"].astype(np.float64)
    k = state["scale_k"] or best_scale(weights.astype(np.float64), x[train_rows], data["result"][train_rows])
    target = labels(data["result"], data["value"], k, m.value_mix)
    if pooled:
        own = len(target)
        target = np.concatenate([target, *(labels(p["result"], p["value"], pk, m.value_mix) for p, pk in pooled)])
        data = {key: np.concatenate([data[key], *(p[key] for p, _ in pooled)]) for key in data}
        train_rows = np.concatenate([train_rows, np.arange(own, len(target))])
        x = data["features"].astype(np.float64)
    settings = FitSettings(
        m.width, m.hidden, m.epochs, m.patience, m.batch_size, m.lr, int(stream(seed, g, _FIT).integers(1 << 31))
    )
    result = fit(
        data,
        k * (x @ weights),
        target,
        train_rows,
        valid_rows,
        settings,
        start=from_net(best) if best is not None else None,
    )
    net = to_net(result.model, 1.0 / k, weights, {})
    net.metadata = {
        **meta,
        "generation": g,
        "positions": int(len(target)),
        **({"pooled_positions": int(sum(len(p["result"]) for p, _ in pooled))} if pooled else {}),
        "scale_k": k,
        "best_epoch": result.epoch,
        "validation_log_loss": result.valid_loss,
        "start_log_loss": None if np.isnan(result.start_loss) else result.start_loss,
    }
    return net, k


def positions_of(out_dir: pathlib.Path, g: int) -> "dict[str, np.ndarray]":
    """The positions generation ``g`` of the run in ``out_dir`` played."""
    with np.load(out_dir / "generations" / f"gen_{g:04d}" / "positions.npz") as saved:
        return {k: saved[k] for k in saved.files}


def gate(
    m: MinimaxConfig,
    variant: Variant,
    new: pathlib.Path,
    best: "pathlib.Path | None",
    seed: int,
    g: int,
    path: pathlib.Path,
    pool: "Pool | None",
) -> dict:
    """The SPRT of the network file ``new`` against the current evaluation (run now, or read back);
    ``unchanged``, no games, where training kept the starting network (epoch 0: ``new`` is ``best``)."""
    if path.is_file():
        return cast(dict, json.loads(path.read_text()))
    test = SPRT(0.0, m.gate_elo1)
    if best is not None and nnue.load(new).metadata.get("best_epoch") == 0:
        result = {"status": "unchanged", "promoted": False, "llr": 0.0, "pairs": 0, "score": 0.5}
        result.update(pentanomial=[0] * 5, elo0=test.elo0, elo1=test.elo1)
        write_json(path, result)
        return result
    status = run_sprt(
        engine_spec(new, m),
        engine_spec(best, m),
        variant,
        test,
        batch_pairs=m.gate_batch_pairs,
        max_pairs=m.gate_max_pairs,
        opening_plies=4,
        seed=int(stream(seed, g, _GATE).integers(1 << 30)),
        verbose=True,
        openings="random",
        pool=pool,
        fresh=True,
    )
    result = {
        "status": status,
        "promoted": status == "H1",
        "llr": round(test.llr(), 6),
        "pairs": len(test.scores),
        "score": round(float(np.mean(test.scores)), 6) if test.scores else 0.5,
        "pentanomial": [int(c) for c in test.pentanomial().counts],
        "elo0": test.elo0,
        "elo1": test.elo1,
    }
    write_json(path, result)
    return result


def panel(
    m: MinimaxConfig, variant: Variant, net: pathlib.Path, seed: int, g: int, pool: "Pool | None"
) -> "dict[str, float]":
    """The network file ``net``'s score against each panel agent: colour-swapped pairs from random 4-ply
    openings."""
    scores = {}
    mine = engine_spec(net, m)
    for i, spec in enumerate(m.panel):
        if not m.panel_pairs:
            break
        rng = np.random.default_rng([seed, g, _PANEL, i])
        fens = opening_fens(variant, m.panel_pairs, "random", 4, seed=int(rng.integers(1 << 30)))
        clocked = any(clock(agent_of(s)) is not None for s in (mine, spec))
        task_seed = int(rng.integers(1 << 30))
        result, _ = play_in_parallel(mine, spec, variant.name, fens, task_seed, clocked, m.jobs, pool=pool, fresh=True)
        scores[spec] = round(float(np.mean(result.scores)), 6)
    return scores


def tag(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", spec)


def _generation(
    m: MinimaxConfig,
    state: dict,
    variant: Variant,
    best: "nnue.Net | None",
    weights: np.ndarray,
    seed: int,
    g: int,
    out_dir: pathlib.Path,
    container: dict,
    pool: "Pool | None",
) -> "tuple[dict, float]":
    """Generation ``g``'s games, training, gate and panel: its history record (``seconds``: the phases'
    seconds, those before a kill included) and the scale ``k`` its network is in."""
    gdir = out_dir / "generations" / f"gen_{g:04d}"
    data = timed(gdir, "games", lambda: positions(m, variant, best, weights, seed, g, gdir, pool))
    meta = {
        "variant": variant.name,
        "procedure": "stapel-train loop=minimax",
        "config": container,
        "code_version": code_version(),
        "seed": seed,
        "start": m.start,
    }
    trained = lambda: train(m, state, best, weights, seed, g, out_dir, meta)  # noqa: E731
    new, k = timed(gdir, "fit", lambda: candidate(gdir / "candidate.npz", trained))
    current = out_dir / state["best"] if state["best"] else None
    verdict = timed(
        gdir, "gate", lambda: gate(m, variant, gdir / "candidate.npz", current, seed, g, gdir / "gate.json", pool)
    )
    scores = timed(gdir, "panel", lambda: panel(m, variant, gdir / "candidate.npz", seed, g, pool))
    seconds = json.loads((gdir / SECONDS_FILE).read_text())
    new.metadata = {**new.metadata, "gate": verdict, "panel": scores}
    path = nnue.save(new, gdir / "net.npz")
    record = {
        "generation": g,
        "positions": int(data["result"].size),
        "searched": round(float(np.isfinite(data["value"]).mean()), 6),
        "best_epoch": new.metadata["best_epoch"],
        "validation_log_loss": round(float(new.metadata["validation_log_loss"]), 6),
        "gate": verdict,
        "panel": scores,
        "current": str(path.relative_to(out_dir)) if verdict["promoted"] else state["best"],
        "seconds": round(sum(seconds.values()), 1),
        "games_seconds": seconds["games"],
    }
    return record, k


def timed(gdir: pathlib.Path, phase: str, work: "Callable[[], T]") -> T:
    """``work()``, its seconds kept in ``gdir``'s ``seconds.json`` under ``phase`` the first time it runs
    through, so that a phase done before a kill still counts in the generation's time (CPU-hours)."""
    path = gdir / SECONDS_FILE
    start = time.perf_counter()
    value = work()
    done = json.loads(path.read_text()) if path.is_file() else {}
    if phase not in done:
        write_json(path, {**done, phase: round(time.perf_counter() - start, 1)})
    return value


def run(cfg: DictConfig, out_dir: pathlib.Path) -> "pathlib.Path | None":
    """Run (or resume) the generation loop in ``out_dir``; returns the current evaluation's network file:
    the last promoted one (``best.npz``), else generation 0's (``None``: the hand-written evaluation)."""
    config = cast(Config, OmegaConf.to_object(cfg))
    m = config.minimax
    for spec in m.panel:  # a bad spec fails now, not after the first generation's games
        make_agent(spec)
    variant = get_variant(config.variant.name).with_ply_cap(config.variant.ply_cap)
    threads = torch.get_num_threads()  # the process's, given back when the loop ends (tests run in one)
    torch.set_num_threads(m.threads)
    try:
        return _generations(cfg, config, variant, out_dir)
    finally:
        torch.set_num_threads(threads)


def _generations(cfg: DictConfig, config: Config, variant: Variant, out_dir: pathlib.Path) -> "pathlib.Path | None":
    """The loop of ``run``, from where ``out_dir`` stands to ``minimax.generations`` generations."""
    m, seed = config.minimax, config.seed
    out_dir.mkdir(parents=True, exist_ok=True)
    state_path = out_dir / STATE_FILE
    container = cast(dict, OmegaConf.to_container(cfg))
    if state_path.is_file():
        state = json.loads(state_path.read_text())
        if state["variant"] != variant.name:
            raise ValueError(f"{state_path} is a run of Variant {state['variant']}, this config Variant {variant.name}")
        changes = config_changes(state["config"], container)
        if changes:
            tqdm.write("the config differs from the run's, it goes on with the new: " + "; ".join(changes))
        tqdm.write(f"resumed {out_dir}: {state['generation']} generation(s) done")
    else:
        state = starting_point(m, variant, seed, out_dir)
        state.update(variant=variant.name, seed=seed, code_version=code_version(), config=container)
        write_json(state_path, state)
    weights = np.asarray(state["weights"], np.int64)
    best = load_net(out_dir / state["best"], variant) if state["best"] else None
    writer = SummaryWriter(str(out_dir / "tb"), purge_step=state["generation"] + 1 if state["generation"] else None)
    if not state["generation"]:
        writer.add_text("config", f"```\n{OmegaConf.to_yaml(cfg)}\n```\ncode {state['code_version']}")
    bar = tqdm(total=m.generations, initial=state["generation"], unit="gen", desc=f"minimax {variant.name}")
    while state["generation"] < m.generations:
        g = state["generation"] + 1
        with Pool(m.jobs) if m.jobs > 1 else contextlib.nullcontext() as pool:
            record, k = _generation(m, state, variant, best, weights, seed, g, out_dir, container, pool)
        if record["gate"]["promoted"]:
            best, state["best"] = load_net(out_dir / record["current"], variant), record["current"]
            atomic_write_bytes(out_dir / "best.npz", (out_dir / record["current"]).read_bytes())
        verdict, scores = record["gate"], record["panel"]
        state.update(generation=g, scale_k=k, history=[*state["history"], record])
        write_json(state_path, state)
        scalars = {
            "selfplay/positions": record["positions"],
            "selfplay/games_per_s": m.games / max(record["games_seconds"], 1e-9),
            "train/validation_log_loss": record["validation_log_loss"],
            "train/best_epoch": record["best_epoch"],
            "gate/promoted": float(verdict["promoted"]),
            "gate/llr": verdict["llr"],
            "gate/pairs": verdict["pairs"],
            "gate/score": verdict["score"],
            "run/generation_seconds": record["seconds"],
        }
        for spec, score in scores.items():
            scalars[f"panel/score_vs_{tag(spec)}"] = score
            scalars[f"panel/elo_vs_{tag(spec)}"] = float(np.clip(elo_of(score), -800, 800))
        for key, value in scalars.items():
            writer.add_scalar(key, value, g)
        writer.flush()
        bar.update(1)
        bar.set_postfix(
            gate=verdict["status"], score=f"{verdict['score']:.2f}", **{tag(s): v for s, v in scores.items()}
        )
        tqdm.write(
            f"generation {g}: {record['positions']} positions, "
            f"validation log-loss {record['validation_log_loss']:.4f}; "
            f"gate {verdict['status']} ({verdict['pairs']} pairs, {100 * verdict['score']:.1f}%)"
            + "".join(f"; vs {s} {100 * v:.1f}%" for s, v in scores.items())
        )
    bar.close()
    writer.close()
    if (out_dir / "best.npz").is_file():
        return out_dir / "best.npz"
    return out_dir / state["best"] if state["best"] else None  # nothing promoted: generation 0's network


__all__ = ["STATE_FILE", "load_net", "run"]
