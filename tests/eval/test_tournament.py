"""Tournaments (resume after a kill), PDN records, the match and SPRT commands."""

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from stapel_rl.env import VARIANT_I, init, step
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.eval import arena
from stapel_rl.eval.pdn import read_games, write_game
from stapel_rl.eval.tournament import TournamentConfig, jobs, play_job, run
from stapel_rl.records import code_version, load_jsonl


def random_game(variant, seed):
    rng = np.random.default_rng(seed)
    state, actions = init(variant, 1), []
    while not state.done[0]:
        a = random_legal_actions(state.legal_action_mask, rng)
        actions.append(int(a[0]))
        state = step(state, a)
    return actions, state


@pytest.mark.parametrize("variant", ["I", "II"])
def test_pdn_round_trip(variant):
    actions, final = random_game(variant, 3)
    text = write_game(variant, actions, {"White": "a", "Black": "b"})
    (game,) = read_games(text)
    assert game["tags"]["Variant"] == f"Stapeldammen {variant}" and game["tags"]["White"] == "a"
    assert game["result"] == {1: "2-0", -1: "0-2", 0: "1-1"}[int(final.rewards[0, 0])]
    from stapel_rl.env import to_fens

    assert game["fens"][-1] == to_fens(final)[0]
    # Writing the parsed moves again gives the same text.
    assert read_games(text + "\n" + text)[1]["moves"] == game["moves"]


def test_pdn_reader_names_the_illegal_move():
    text = '[Variant "Stapeldammen I"]\n\n1. 32-28 19-23 2. 28-22 *\n'
    with pytest.raises(ValueError, match=r"game 1, move 3 \('28-22'\)"):
        read_games(text)


def test_killed_tournament_resumes_without_replaying(tmp_path):
    config = TournamentConfig(["random", "greedy"], VARIANT_I, pairs=3)
    first = run(config, tmp_path)
    assert len(first) == 6
    path = tmp_path / "games.jsonl"
    lines = path.read_text().splitlines()
    # Simulate a kill: keep 4 finished games and a torn half line.
    path.write_text("\n".join(lines[:4]) + "\n" + lines[4][: len(lines[4]) // 2])
    kept = [json.loads(x) for x in lines[:4]]
    again = run(config, tmp_path)
    assert len(again) == 6 and again[:4] == kept
    assert len(load_jsonl(path)) == 6
    keys = {(g["white"], g["black"], g["opening"]) for g in again}
    assert len(keys) == 6  # every (colour, opening) game exactly once
    assert {g["pair"] for g in again} == {"0:0", "0:1", "0:2"}
    assert {g["code_version"] for g in again} == {code_version()}  # which code played each game


def test_tournament_command_writes_ratings(tmp_path):
    out = tmp_path / "t"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "stapel_rl.cli.tournament",
            "greedy",
            "random",
            "--pairs",
            "4",
            "--variant",
            "II",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Elo" in done.stdout and "greedy" in done.stdout
    ratings = json.loads((out / "ratings.json").read_text())
    assert ratings["games"] == 8 and ratings["config"]["variant"] == "II"
    assert {r["player"] for r in ratings["ratings"]} == {"greedy", "random"}
    assert (out / "ratings.csv").read_text().startswith("player,elo")
    (los,) = ratings["likelihood_of_superiority"]
    assert los["better"] == ratings["ratings"][0]["player"] and 0 <= los["los"] <= 1
    assert len(read_games((out / "games.pdn").read_text())) == 8


def test_sprt_command_accepts_h1_for_a_stronger_agent():
    # In Variant II greedy scores about 65-70% against random (over +100 Elo).
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "stapel_rl.cli.sprt",
            "greedy",
            "random",
            "--variant",
            "II",
            "--elo0",
            "0",
            "--elo1",
            "20",
            "--batch-pairs",
            "32",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("H1: greedy is stronger")


def test_match_plays_colour_swapped_pairs_from_random_openings(capsys):
    from stapel_rl.cli.match import main

    # Two deterministic players: from the start position every pair would be the same two games.
    assert main(["alphabeta:1", "greedy", "--games", "6", "--variant", "II", "--seed", "3"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("alphabeta:1 vs greedy (Variant II): ") and "of 6" in line and "95% CI" in line
    assert main(["greedy", "random", "--variant", "III"]) == 2
    assert "unknown variant 'III'" in capsys.readouterr().err


def test_match_jobs_search_on_one_thread():
    """A worker of ``stapel-match --jobs N`` (a ``Pool``'s) runs torch on one thread: with the machine's
    default threads, two workers' batch-1 network calls stall each other."""
    import torch

    from stapel_rl.eval.parallel import Pool

    with Pool(1) as pool:
        assert pool.executor.submit(torch.get_num_threads).result(timeout=120) == 1


def test_one_core_tells_a_loaded_torch(monkeypatch):
    import torch

    from stapel_rl.eval.parallel import one_core

    before = torch.get_num_threads()
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    try:
        torch.set_num_threads(2)
        one_core()
        assert torch.get_num_threads() == 1 and os.environ["OMP_NUM_THREADS"] == "1"
    finally:
        torch.set_num_threads(before)


class ClockedRandom:
    """A random agent that spends ``cost`` seconds of a fake clock on each new full move (none on later leaps)."""

    def __init__(self, name, cost, clock):
        self.name, self.cost, self.clock = name, cost, clock

    def __call__(self, state, rng):
        self.clock[0] += self.cost * int((state.capturing < 0).sum())
        return random_legal_actions(state.legal_action_mask, rng)


def test_a_pairing_one_game_at_a_time_is_a_job_per_pair_and_resumes_the_missing_games():
    config = TournamentConfig(["random", "greedy", "alphabeta:1"], VARIANT_I, pairs=3, one_at_a_time=True)
    pieces = jobs(config, [])
    expected = [(p, q, [2 * q, 2 * q + 1]) for p in range(3) for q in range(3)]
    assert [(j.index, j.part, j.todo) for j in pieces] == expected
    played = play_job(config, pieces[4], {})  # pairing 1 (random against alphabeta:1), its second pair
    assert sorted((g["white"], g["black"], g["pair"]) for g in played) == [
        ("alphabeta:1", "random", "1:1"),
        ("random", "alphabeta:1", "1:1"),
    ]
    first = [g for g in played if g["white"] == "random"]  # that pair's first game is played: its second is left
    left = jobs(config, first)
    assert [(j.index, j.part, j.todo) for j in left if j.index == 1] == [(1, 0, [0, 1]), (1, 1, [3]), (1, 2, [4, 5])]
    # Batched pairings stay whole, and so do pairings with a clock on neither side; one on either side splits.
    assert [j.part for j in jobs(dataclasses.replace(config, one_at_a_time=False), [])] == [None, None, None]
    timed = TournamentConfig(["greedy", "classical:time=0.01"], VARIANT_I, pairs=2)
    assert [(j.part, j.todo) for j in jobs(timed, [])] == [(0, [0, 1]), (1, [2, 3])]


def test_game_records_keep_each_colours_time_per_move(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(arena.time, "perf_counter", lambda: clock[0])
    agents = {"slow": ClockedRandom("slow", 0.03, clock), "fast": ClockedRandom("fast", 0.01, clock)}
    config = TournamentConfig(["slow", "fast"], VARIANT_I, pairs=2, one_at_a_time=True)
    games = [g for job in jobs(config, []) for g in play_job(config, job, agents)]
    assert len(games) == 4 and {g["white"] for g in games} == {"slow", "fast"}
    for g in games:
        expected = [0.03 if g[side] == "slow" else 0.01 for side in ("white", "black")]
        assert g["seconds_per_move"] == pytest.approx(expected)
