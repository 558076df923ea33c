"""stapel-train loop=minimax: two generations end to end, resuming after a kill, the starting points, bad files."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from ctrl_c import ctrl_c
from hydra import compose, initialize_config_dir

from scripts import load_script
from stapel_rl.classical import nnue
from stapel_rl.classical.board import occupancy
from stapel_rl.classical.evaluation import NUM_FEATURES, mobility_blocked
from stapel_rl.classical.movegen import generate, new_move_buffer, new_scratch
from stapel_rl.classical.position import Position
from stapel_rl.classical.searcher import Searcher
from stapel_rl.classical.trainer import FitResult
from stapel_rl.env import initial_fen
from stapel_rl.env.variants import get_variant
from stapel_rl.train import minimax
from stapel_rl.train.app import CONFIG_DIR

TINY = ["loop=minimax", "minimax=tiny"]


def config(*overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return compose(config_name="config", overrides=[*TINY, *overrides])


def cli(run_dir: pathlib.Path, *overrides: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "stapel_rl.cli.train", *TINY, f"hydra.run.dir={run_dir}", *overrides]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def outcome(run_dir: pathlib.Path) -> "tuple[list, list]":
    """What a run ends with, its timings left out: the history and every generation's network."""
    state = json.loads((run_dir / minimax.STATE_FILE).read_text())
    history = [{k: v for k, v in record.items() if "seconds" not in k} for record in state["history"]]
    nets = [nnue.load(p) for p in sorted(run_dir.glob("generations/gen_*/net.npz"))]
    return history, [(net.arrays(), net.weights, net.metadata) for net in nets]


def assert_same(a: "tuple[list, list]", b: "tuple[list, list]") -> None:
    assert a[0] == b[0]
    assert len(a[1]) == len(b[1])
    for (arrays_a, weights_a, meta_a), (arrays_b, weights_b, meta_b) in zip(a[1], b[1], strict=True):
        for x, y in zip(arrays_a, arrays_b, strict=True):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(weights_a, weights_b)
        assert meta_a == meta_b


def assert_same_positions(run_a: pathlib.Path, run_b: pathlib.Path) -> None:
    """Generation 1 of both runs played the same positions."""
    with (
        np.load(run_a / "generations/gen_0001/positions.npz") as a,
        np.load(run_b / "generations/gen_0001/positions.npz") as b,
    ):
        assert a.files == b.files
        for key in b.files:
            np.testing.assert_array_equal(a[key], b[key])


@pytest.mark.slow
def test_two_generations_through_the_cli(tmp_path):
    process = cli(tmp_path / "run")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err[-2000:]
    assert "evaluation: " in out
    state = json.loads((tmp_path / "run" / minimax.STATE_FILE).read_text())
    assert state["generation"] == 2 and [r["generation"] for r in state["history"]] == [1, 2]
    assert state["variant"] == "I" and state["code_version"] and state["config"]["minimax"]["games"] == 6
    for g in (1, 2):
        gdir = tmp_path / "run" / "generations" / f"gen_{g:04d}"
        assert sorted(p.name for p in gdir.iterdir()) == [
            "candidate.npz",
            "gate.json",
            "net.npz",
            "positions.npz",
            "seconds.json",
        ]
        net = nnue.load(gdir / "net.npz")
        meta = net.metadata
        assert meta["generation"] == g and meta["variant"] == "I" and meta["code_version"] == state["code_version"]
        assert meta["config"] == state["config"] and meta["gate"] == json.loads((gdir / "gate.json").read_text())
        assert meta["gate"]["status"] in ("H0", "H1", "continue") and meta["gate"]["pairs"] >= 2
        assert set(meta["panel"]) == {"classical:nodes=60", "alphabeta:1"}
        assert net.width == 8 and (net.weights != 0).any()  # from the hand-written evaluation: its terms kept
        assert state["history"][g - 1]["gate"] == meta["gate"]
    assert list((tmp_path / "run" / "tb").glob("events.out.tfevents.*"))
    assert "generation 2:" in out and "gen/s" in err  # a line per generation; progress with its rate


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    run_dir = tmp_path_factory.mktemp("uninterrupted")
    minimax.run(config(), run_dir)
    return run_dir


@pytest.mark.slow
@pytest.mark.parametrize(
    ("marker", "done"),
    [
        ("gen_0001/candidate.npz", 0),  # generation 1 trained: killed while gating
        ("gen_0002/positions.npz", 1),  # generation 2's games played: killed while training
    ],
)
def test_a_generation_killed_partway_resumes_to_the_uninterrupted_result(tmp_path, uninterrupted, marker, done):
    killed = tmp_path / "killed"
    process = cli(killed)
    deadline = time.monotonic() + 120
    while not (killed / "generations" / marker).exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate()
    assert process.returncode == -signal.SIGKILL
    assert json.loads((killed / minimax.STATE_FILE).read_text())["generation"] == done  # killed within a generation
    best = minimax.run(config(), killed)
    assert best == (killed / "best.npz" if (uninterrupted / "best.npz").exists() else None)
    assert_same(outcome(killed), outcome(uninterrupted))


@pytest.mark.slow
def test_two_jobs_play_the_same_positions_and_gate_in_workers(tmp_path, uninterrupted):
    minimax.run(config("minimax.jobs=2", "minimax.generations=1"), tmp_path)
    assert_same_positions(tmp_path, uninterrupted)
    state = json.loads((tmp_path / minimax.STATE_FILE).read_text())
    record = state["history"][0]
    assert record["gate"]["pairs"] >= 2 and set(record["panel"]) == {"classical:nodes=60", "alphabeta:1"}


def test_a_kill_while_playing_keeps_the_chunks_of_games_played(tmp_path, uninterrupted, monkeypatch):
    played, real = [], minimax._collect

    def killed_in_the_second_chunk(*task):
        played.append(task[4])  # the chunk's first game
        if len(played) == 2:
            raise KeyboardInterrupt  # stands for the kill
        return real(*task)

    monkeypatch.setattr(minimax, "_collect", killed_in_the_second_chunk)
    with pytest.raises(KeyboardInterrupt):
        minimax.run(config("minimax.generations=1"), tmp_path)
    gdir = tmp_path / "generations" / "gen_0001"
    assert [p.name for p in (gdir / "games").iterdir()] == ["games_000000_0002.npz"]  # 6 games, chunks of 2
    assert not (gdir / "positions.npz").exists()

    monkeypatch.setattr(minimax, "_collect", lambda *task: played.append(task[4]) or real(*task))
    minimax.run(config("minimax.generations=1"), tmp_path)
    assert played == [0, 2, 2, 4]  # games 0-1 were not played again
    assert not (gdir / "games").exists()
    assert_same_positions(tmp_path, uninterrupted)


def test_a_promoted_network_becomes_the_current_evaluation(tmp_path, monkeypatch):
    calls = []

    def accept(a, b, variant, test, **kwargs):  # the gate's verdict, without its games
        calls.append((a, b))
        test.add_pair(1.0)
        return "H1"

    monkeypatch.setattr(minimax, "run_sprt", accept)
    # At this rate generation 2's training moves the network (epoch >= 1): a network kept as it was is not gated.
    best = minimax.run(config("minimax.panel_pairs=0", "minimax.lr=1e-3"), tmp_path)
    state = json.loads((tmp_path / minimax.STATE_FILE).read_text())
    assert best == tmp_path / "best.npz" and state["best"] == "generations/gen_0002/net.npz"
    assert [r["gate"]["promoted"] for r in state["history"]] == [True, True]
    first, second = (nnue.load(tmp_path / f"generations/gen_{g:04d}/net.npz") for g in (1, 2))
    # Generation 1 is gated against the hand-written evaluation, generation 2 against generation 1.
    assert calls[0] == (f"classical:nodes=60:eval={tmp_path}/generations/gen_0001/candidate.npz", "classical:nodes=60")
    assert calls[1][1] == f"classical:nodes=60:eval={tmp_path}/generations/gen_0001/net.npz"
    np.testing.assert_array_equal(nnue.load(best).emb, second.emb)
    assert second.head[1] == first.head[1]  # one scale k for the whole run
    sizes = [np.load(tmp_path / f"generations/gen_{g:04d}/positions.npz")["result"].size for g in (1, 2)]
    assert (first.metadata["positions"], second.metadata["positions"]) == (sizes[0], sum(sizes))  # window 2


def test_a_network_training_left_as_it_was_is_not_gated(tmp_path, monkeypatch):
    def untrained(data, base, target, train_rows, valid_rows, settings, start=None, progress=True):
        return FitResult(start, 0, 0.5, 0.5)  # the starting network kept: epoch 0

    def refuse(*args, **kwargs):
        raise AssertionError("a network identical to the current one was gated")

    monkeypatch.setattr(minimax, "fit", untrained)
    monkeypatch.setattr(minimax, "run_sprt", refuse)
    current = minimax.run(config("minimax.start=zero", "minimax.generations=1", "minimax.panel_pairs=0"), tmp_path)
    record = json.loads((tmp_path / minimax.STATE_FILE).read_text())["history"][0]
    assert record["gate"]["status"] == "unchanged" and not record["gate"]["promoted"] and record["gate"]["pairs"] == 0
    assert record["current"] == "generations/gen_0000/net.npz"
    assert current == tmp_path / "generations/gen_0000/net.npz"  # the starting network, not the hand-written one


def test_the_default_panel_holds_the_variants_mcts_agent_at_the_runs_match_time():
    for name in ("I", "II"):
        panel = list(config("minimax=default", f"variant={name}").minimax.panel)
        assert panel == [
            "classical:time=0.1",
            "classical:time=0.1:eval=nnue",
            "alphabeta:2",
            f"mcts:variant_{name}_zero:time=0.1",
        ]
    panel = list(config("minimax=default", "minimax.match_time=0.05").minimax.panel)
    assert panel == [
        "classical:time=0.05",
        "classical:time=0.05:eval=nnue",
        "alphabeta:2",
        "mcts:variant_I_zero:time=0.05",
    ]


def test_from_zero_the_search_has_no_hand_written_terms(tmp_path):
    minimax.run(config("minimax.start=zero", "minimax.generations=1", "minimax.panel_pairs=0"), tmp_path)
    start = nnue.load(tmp_path / "generations/gen_0000/net.npz")
    new = nnue.load(tmp_path / "generations/gen_0001/net.npz")
    for net in (start, new):
        np.testing.assert_array_equal(net.weights, np.zeros(NUM_FEATURES))
        assert net.head[1] == pytest.approx(1 / 0.002)
    assert not np.array_equal(start.emb, new.emb)
    # The compiled search scores by the network alone: depth 1 is the best child's network value.
    pos = Position.from_fen(initial_fen(get_variant("I")))
    buffer, scratch = new_move_buffer(1)[0], new_scratch()
    n, _ = generate(pos.h, pos.c, pos.side, -1, -1, buffer, scratch)
    children = [pos.after(buffer[i].copy()) for i in range(n)]
    values = [-nnue.forward(*_leaf(new, ch)) for ch in children]
    assert Searcher("I", net=new).search(pos, depth=1).score == max(values)
    positions = np.load(tmp_path / "generations/gen_0001/positions.npz")
    assert positions["result"].size > 0 and np.isfinite(positions["value"]).any()
    # A run whose current network was damaged after it was saved says so when it resumes.
    current = tmp_path / json.loads((tmp_path / minimax.STATE_FILE).read_text())["best"]
    current.write_bytes(current.read_bytes()[:300])
    with pytest.raises(ValueError, match="cannot be read"):
        minimax.run(config("minimax.start=zero", "minimax.generations=2"), tmp_path)


def _leaf(net: nnue.Net, pos: Position) -> tuple:
    """``nnue.forward``'s arguments for a board, from scratch."""
    acc = np.zeros((2, net.width), np.int32)
    nnue.refresh(pos.h, pos.c, acc, net.emb, net.bias)
    mobility, blocked = mobility_blocked(*occupancy(pos.h, pos.c))
    return (acc, pos.side, mobility, blocked, *net.arrays()[2:])


def test_a_corrupt_or_other_variant_network_is_refused(tmp_path):
    good = nnue.load(nnue.packaged_path("II"))
    other = nnue.save(good, tmp_path / "other.npz")
    with pytest.raises(ValueError, match=r"is for Variant II, this run is Variant I"):
        minimax.run(config(f"minimax.start={other}"), tmp_path / "a")
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(other.read_bytes()[:200])
    with pytest.raises(ValueError, match="cannot be read"):
        minimax.run(config(f"minimax.start={corrupt}"), tmp_path / "b")
    run_dir = tmp_path / "c"
    with pytest.raises(ValueError, match="minimax.generations must be at least 1"):
        minimax.run(config("minimax.generations=0"), run_dir)
    with pytest.raises(ValueError, match="minimax.start must be one of"):
        minimax.run(config("minimax.start=scratch"), run_dir)
    with pytest.raises(ValueError, match="unknown agent 'nobody'"):
        minimax.run(config("minimax.panel=[nobody]"), run_dir)
    assert not run_dir.exists()  # refused before anything was written


def test_a_phase_done_before_a_kill_keeps_its_seconds(tmp_path):
    assert minimax.timed(tmp_path, "games", lambda: time.sleep(0.2) or "played") == "played"
    assert minimax.timed(tmp_path, "games", lambda: "read back") == "read back"  # after a kill: no new time
    assert minimax.timed(tmp_path, "fit", lambda: 3) == 3
    seconds = json.loads((tmp_path / minimax.SECONDS_FILE).read_text())
    assert set(seconds) == {"games", "fit"} and seconds["games"] >= 0.2 and seconds["fit"] < 0.2


@pytest.mark.slow
def test_ctrl_c_stops_the_loop_without_a_traceback_and_keeps_the_games_played(tmp_path):
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "stapel_rl.cli.train", *TINY, f"hydra.run.dir={run_dir}", "minimax.games=400"]
    command.append("minimax.jobs=2")  # the default: the workers get the Ctrl-C too
    games = run_dir / "generations" / "gen_0001" / "games"
    # A finished chunk, not the temporary file it is written to first (which the Ctrl-C may leave unrenamed)
    stopped = ctrl_c(command, tmp_path, lambda out, err: any(games.glob("games_*.npz")))
    assert stopped.returncode == 130, stopped.err[-2000:]
    assert "stopped by Ctrl-C: the same command resumes the run" in stopped.out and "Traceback" not in stopped.err
    assert any(games.glob("games_*.npz")) and not (games.parent / "positions.npz").exists()


@pytest.mark.slow
def test_regate_replays_the_gates_and_keeps_the_games(tmp_path, uninterrupted, capsys):
    run = tmp_path / "run"
    shutil.copytree(uninterrupted, run)
    games = {p: p.stat().st_mtime_ns for p in run.glob("generations/gen_*/*.npz") if p.name != "net.npz"}
    before = json.loads((run / minimax.STATE_FILE).read_text())
    load_script("regate").main([str(run)])
    assert "2 generation(s) rewound" in capsys.readouterr().out
    state = json.loads((run / minimax.STATE_FILE).read_text())
    assert state["generation"] == 0 and state["history"] == [] and state["best"] is None  # the hand-written start
    assert not list(run.glob("generations/gen_*/gate.json")) and not (run / "best.npz").exists()
    assert json.loads((run / "loop_before_regate.json").read_text()) == before
    # Run again with the run's settings: the same gates (node-limited, so they replay exactly), games read back.
    minimax.run(config(), run)
    assert_same(outcome(run), outcome(uninterrupted))
    assert {p: p.stat().st_mtime_ns for p in games} == games
    # With another gate setting only the gates change.
    load_script("regate").main([str(run)])
    minimax.run(config("minimax.gate_max_pairs=1", "minimax.gate_batch_pairs=1"), run)
    history = json.loads((run / minimax.STATE_FILE).read_text())["history"]
    assert [h["gate"]["pairs"] for h in history] == [min(1, h["gate"]["pairs"]) for h in before["history"]]
    assert [h["positions"] for h in history] == [h["positions"] for h in before["history"]]
    with pytest.raises(SystemExit, match="not a run of stapel-train loop=minimax"):
        load_script("regate").main([str(tmp_path)])
