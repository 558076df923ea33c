"""Seeded random-play properties of the batched engine, checked against a naive oracle."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from boards import STEP_FIELDS
from reference_rules import COLS as COLS_OF
from reference_rules import ROWS as ROWS_OF
from reference_rules import full_moves, points

from stapel_rl.env import VARIANT_I, expand_full_moves, from_fens, init, step, take, to_fens
from stapel_rl.env.geometry import NEIGHBOR


def random_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action per game (0 where none)."""
    keys = rng.random(mask.shape)
    return np.where(mask, keys, -1.0).argmax(axis=1)


def play_random(variant: str, batch: int, seed: int, max_steps: int = 2000):
    """Play ``batch`` random games to the end; return the states and actions of every step."""
    rng = np.random.default_rng(seed)
    state = init(variant, batch)
    states, actions = [state], []
    while not state.done.all() and len(actions) < max_steps:
        a = random_actions(state.legal_action_mask, rng)
        state = step(state, a)
        states.append(state)
        actions.append(a)
    return states, actions


def action_of(path_text: str) -> "tuple[int, ...]":
    """Action ids of a full move text (full path)."""
    squares = [int(s) - 1 for s in path_text.replace("-", "x").split("x")]
    ids = []
    for a, b in itertools.pairwise(squares):
        for d in range(4):
            if NEIGHBOR[a, d] >= 0 and (NEIGHBOR[a, d] == b or NEIGHBOR[NEIGHBOR[a, d], d] == b):
                ids.append(4 * a + d)
    return tuple(ids)


@pytest.mark.parametrize("variant", ["I", "II"])
def test_engine_matches_oracle_along_random_games(variant):
    states, _ = play_random(variant, batch=24, seed=1)
    checked = 0
    for state in states[::3]:
        at_turn_start = np.flatnonzero((state.capturing < 0) & ~state.done)
        for g in at_turn_start:
            one = take(state, [g])
            fen = to_fens(one)[0]
            expected = full_moves(fen)
            moves = expand_full_moves(one)
            assert dict(zip(moves.texts(), to_fens(moves.state), strict=True)) == expected, fen
            assert tuple(one.points[0]) == points(fen)
            # Every prefix of every legal path: the mask is exactly the next steps.
            paths = [action_of(t) for t in expected]
            prefixes = {p[:k] for p in paths for k in range(len(p))}
            for prefix in prefixes:
                s = one
                for a in prefix:
                    s = step(s, np.array([a]))
                assert s.current_player[0] == one.current_player[0]
                expected_next = {p[len(prefix)] for p in paths if p[: len(prefix)] == prefix}
                assert set(np.flatnonzero(s.legal_action_mask[0])) == expected_next, (fen, prefix)
            checked += 1
    assert checked > 300


@pytest.mark.parametrize("variant", ["I", "II"])
def test_batch_of_256_agrees_with_batch_of_1(variant):
    states, actions = play_random(variant, batch=256, seed=2)
    rng = np.random.default_rng(3)
    for g in rng.choice(256, size=12, replace=False):
        single = take(states[0], [g])
        for t, a in enumerate(actions):
            single = step(single, a[[g]])
            batched = take(states[t + 1], [g])
            for name in STEP_FIELDS:
                np.testing.assert_array_equal(getattr(single, name), getattr(batched, name), err_msg=f"{name} t={t}")


@pytest.mark.parametrize("variant", ["I", "II"])
def test_twenty_men_a_side_always_on_board(variant):
    states, _ = play_random(variant, batch=128, seed=4)
    for state in states:
        bits = (state.colours[:, :, None] >> np.arange(40, dtype=np.uint64)) & np.uint64(1)
        present = np.arange(40)[None, None, :] < state.height[:, :, None]
        black = (bits.astype(bool) & present).sum(axis=(1, 2))
        white = (~bits.astype(bool) & present).sum(axis=(1, 2))
        assert (black == 20).all() and (white == 20).all()


@pytest.mark.parametrize("variant", ["I", "II"])
def test_every_game_ends_with_exactly_one_of_terminated_truncated(variant):
    capped = VARIANT_I.with_ply_cap(130) if variant == "I" else "II"
    states, _ = play_random(capped, batch=256, seed=5)
    final = states[-1]
    assert final.done.all()
    assert not (final.terminated & final.truncated).any()
    if variant == "I":
        assert final.truncated.any() and final.terminated.any()
    # Rewards are paid exactly once, on the step that ends the game, and sum to zero.
    paid = np.stack([s.rewards for s in states])
    assert (paid.sum(axis=2) == 0).all()
    paying_steps = (paid != 0).any(axis=2).sum(axis=0)
    assert (paying_steps[final.truncated] == 0).all()
    if variant == "I":  # no draws in Variant I: every finished game pays once
        np.testing.assert_array_equal(paying_steps[final.terminated], 1)
    else:
        assert (paying_steps[final.terminated] <= 1).all()


def test_finished_games_ignore_actions():
    state = from_fens(["B:" + ",".join(["w"] + [""] * 49)], "I")  # Black has no men: game over
    assert state.terminated[0]
    after = step(state, np.array([199]))
    assert to_fens(after) == to_fens(state)
    assert after.ply[0] == state.ply[0] and (after.rewards == 0).all()


def random_stacky_fen(rng: np.random.Generator) -> str:
    """A random position with 20 men a side dealt into tall mixed stacks: many long captures."""
    men = ["w"] * 20 + ["b"] * 20
    rng.shuffle(men)
    squares = rng.choice(50, size=int(rng.integers(8, 20)), replace=False)
    cuts = np.sort(rng.choice(np.arange(1, 40), size=squares.size - 1, replace=False))
    stacks = ["".join(part) for part in np.split(np.array(men), cuts)]
    board = [""] * 50
    for sq, stack in zip(squares, stacks, strict=True):
        board[sq] = stack
    return "WB"[int(rng.integers(2))] + ":" + ",".join(board)


def random_ring_fen(rng: np.random.Generator) -> str:
    """Four tall stacks in a diamond with a White capturer on its rim: captures circle and leap stacks 3+ times."""
    from reference_rules import _AT

    while True:
        r, c = int(rng.integers(0, 6)), int(rng.integers(2, 8))
        rim = [(r + 4, c), (r + 2, c + 2), (r, c), (r + 2, c - 2)]
        ring = [(r + 3, c + 1), (r + 1, c + 1), (r + 1, c - 1), (r + 3, c - 1)]
        if all(p in _AT for p in rim + ring):
            break
    board = [""] * 50
    black_left, white_left = 20, 19
    for p in ring:
        h = int(rng.integers(2, 6))
        stack = "".join("b" if rng.random() < 0.8 else "w" for _ in range(h))
        stack = "b" + stack[1:]
        black_left -= stack.count("b")
        white_left -= stack.count("w")
        board[_AT[p] - 1] = stack
    board[_AT[rim[int(rng.integers(4))]] - 1] = "w"
    free = [i for i in range(50) if not board[i] and (ROWS_OF[i], COLS_OF[i]) not in rim]
    for i, letter in zip(rng.permutation(free), ["w"] * max(white_left, 0) + ["b"] * max(black_left, 0), strict=False):
        if rng.random() < 0.3:
            board[i] = letter
    return "W:" + ",".join(board)


def test_engine_matches_oracle_on_random_stacky_positions():
    rng = np.random.default_rng(7)
    longest = 0
    for i in range(600):
        fen = random_stacky_fen(rng) if i % 2 else random_ring_fen(rng)
        moves = expand_full_moves(from_fens([fen], "II"))
        assert dict(zip(moves.texts(), to_fens(moves.state), strict=True)) == full_moves(fen), fen
        longest = max([longest] + [t.count("x") for t in moves.texts()])
    assert longest >= 8  # the sample holds long multi-leap captures
