"""The compiled move generator (stapel_rl.classical) against the numpy engine and the rules cases."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from stapel_rl.classical import Position, legal_move_texts, perft
from stapel_rl.classical.position import row_path, step_actions
from stapel_rl.env import engine, expand_full_moves, initial_fen
from stapel_rl.env import perft as numpy_perft
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.env.state import take

CASES = pathlib.Path(__file__).parents[1] / "data" / "rules_cases.jsonl"

# Depths 1-5 from RULES.md. Depth 6 computed once with the numpy engine:
# stapel_rl.env.perft(initial_fen(v), 6, v) gave 166982 (I) and 937024 (II).
PERFT = {
    "I": [9, 81, 658, 4265, 27117, 166982],
    "II": [9, 81, 810, 8100, 87120, 937024],
}


@pytest.mark.parametrize("variant", ["I", "II"])
def test_perft_matches_rules_and_numpy_engine(variant):
    pos = Position.from_fen(initial_fen(variant))
    got = [perft(pos.h, pos.c, pos.side, d) for d in range(1, 7)]
    assert got == PERFT[variant]
    assert numpy_perft(initial_fen(variant), 4, variant) == got[3]


def test_rules_cases_exact_moves_and_positions():
    cases = [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]
    assert len(cases) == 395
    for case in cases:
        assert legal_move_texts(case["fen"]) == case["moves"], (case["tag"], case["fen"])
        if case["result"] is not None:
            assert case["moves"] == {}


def _expected_moves(moves, j):
    return sorted(
        (
            tuple(int(s) for s in moves.path[m] if s >= 0),
            moves.state.height[m].tobytes(),
            moves.state.colours[m].tobytes(),
            int(moves.state.current_player[m]),
        )
        for m in np.flatnonzero(moves.parent == j)
    )


def _random_game_states(variant: str, games: int, seed: int):
    """Every decision point (turn starts and mid-capture states) of seeded random games."""
    rng = np.random.default_rng(seed)
    state = engine.init(variant, games)
    seen = []
    while not state.done.all():
        seen.append(state)
        state = engine.step(state, random_legal_actions(state.legal_action_mask, rng))
    return seen


def _compiled_moves(state, g):
    pos = Position.from_state(state, g)
    out = []
    for row in pos.move_rows():
        path = row_path(row)
        after = pos.after(row)
        out.append((tuple(path), after.h.tobytes(), after.c.tobytes(), after.side))
    return sorted(out)


@pytest.mark.parametrize("variant,seed", [("I", 1), ("II", 2)])
def test_random_game_positions_match_engine(variant, seed):
    states = _random_game_states(variant, games=48, seed=seed)
    compared = mid_capture = long_captures = 0
    tallest = 0
    for state in states:
        live = np.flatnonzero(~state.done)
        if not live.size:
            continue
        sub = take(state, live)
        moves = expand_full_moves(sub)
        for j, g in enumerate(live):
            expected = _expected_moves(moves, j)
            got = _compiled_moves(state, g)
            assert got == expected, (variant, int(state.ply[g]), int(state.capturing[g]))
            # The first steps of the full moves are exactly the engine's legal actions.
            firsts = {step_actions(list(p[0]))[0] for p in got}
            assert firsts == set(np.flatnonzero(state.legal_action_mask[g]).tolist())
            compared += 1
            mid_capture += state.capturing[g] >= 0
            long_captures += any(len(p[0]) >= 4 for p in got)
            tallest = max(tallest, int(state.height[g].max()))
    print(
        f"{variant}: {compared} positions, {mid_capture} mid-capture, {long_captures} with 3+ leaps, tallest {tallest}"
    )
    assert compared > 2000 and mid_capture > 50 and long_captures > 20 and tallest >= 6, (
        compared,
        mid_capture,
        long_captures,
        tallest,
    )


def _tall_stack_fen(rng) -> str:
    """All 40 men shuffled into a few stacks (up to 40 high) on random squares."""
    men = rng.permutation(["w"] * 20 + ["b"] * 20)
    stacks = rng.integers(1, 12)
    squares = rng.choice(50, size=stacks, replace=False)
    cuts = np.sort(rng.choice(np.arange(1, 40), size=stacks - 1, replace=False))
    fields = [""] * 50
    for sq, part in zip(squares, np.split(men, cuts), strict=True):
        fields[sq] = "".join(part)
    return "WB"[rng.integers(2)] + ":" + ",".join(fields)


@pytest.mark.parametrize("variant", ["I", "II"])
def test_tall_stack_positions_match_engine(variant):
    rng = np.random.default_rng(7)
    fens = [_tall_stack_fen(rng) for _ in range(400)]
    state = engine.from_fens(fens, variant)
    live = np.flatnonzero(~state.done)
    moves = expand_full_moves(take(state, live))
    for j, g in enumerate(live):
        assert _compiled_moves(state, g) == _expected_moves(moves, j), fens[g]
    for g in np.flatnonzero(state.done):
        assert _compiled_moves(state, g) == []
    assert state.height.max() >= 30


def test_import_stays_light():
    code = (
        "import sys, stapel_rl.classical; "
        "bad = [m for m in sys.modules if m == 'torch' or m.startswith(('stapel_rl.eval', 'stapel_rl.mcts', "
        "'stapel_rl.train', 'stapel_rl.cli'))]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
