"""Hypothesis properties of the text layers and of the engine's text API.

Parsers (position text, move text, PDN, the engine protocol's lines) take
any text and either parse it or reject it with ``ValueError`` (the engine:
with one ``info string error`` line); positions from random play survive
``from_fens``/``to_fens``; ``apply_move`` agrees with stepping the actions a
move's text names.
"""

from __future__ import annotations

import io
import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stapel_rl.cli.engine import EngineSession
from stapel_rl.env import apply_move, from_fens, initial_fen, legal_moves, step, to_fens
from stapel_rl.env import engine as rules
from stapel_rl.env.fen import parse_fen
from stapel_rl.env.geometry import JUMP, NEIGHBOR
from stapel_rl.env.notation import parse_move
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.eval.pdn import RESULTS, read_games, write_game

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
VARIANTS = st.sampled_from(["I", "II"])
SEEDS = st.integers(0, 2**32 - 1)
#: What position text fixes; the rest (ply, last action, rewards of the last step) is history.
POSITION_FIELDS = (
    "height",
    "colours",
    "white",
    "black",
    "current_player",
    "capturing",
    "legal_action_mask",
    "terminated",
    "points",
)

# Text near the formats, so that examples get past the first checks, mixed with anything at all.
_STACK = st.text(alphabet="wbWB x1 ", max_size=3)
FEN_LIKE = st.one_of(
    st.text(),
    st.builds(
        lambda side, stacks: side + ":" + ",".join(stacks),
        st.sampled_from(["W", "B", "w", " B", "X", ""]),
        st.lists(st.one_of(_STACK, st.sampled_from(["", "w", "b", "bw", "wb"])), min_size=48, max_size=52),
    ),
)
MOVE_LIKE = st.one_of(st.text(), st.from_regex(r"\A ?[0-9]{1,3}([-x][0-9]{1,3}){0,4} ?\Z"))


def _random_game(variant: str, seed: int, plies: int) -> "tuple[object, list[int]]":
    """State and actions after up to ``plies`` random actions, at the start of a turn (or the end)."""
    rng = np.random.default_rng(seed)
    state, actions = rules.init(variant), []
    while not state.done[0] and (len(actions) < plies or state.capturing[0] >= 0):
        # A capture under way is finished: position text has no mid-capture form.
        action = random_legal_actions(state.legal_action_mask, rng)
        actions.append(int(action[0]))
        state = step(state, action)
    return state, actions


def _actions_of(path: "list[int]") -> "list[int]":
    """Action ids of a move given as the squares (0-based) its stack stands on, from the geometry alone."""
    actions = []
    for a, b in itertools.pairwise(path):
        (direction,) = [d for d in range(4) if b in (NEIGHBOR[a, d], JUMP[a, d])]
        actions.append(4 * a + direction)
    return actions


# ---------------------------------------------------------------- parsers


@FAST
@given(FEN_LIKE, VARIANTS)
def test_position_text_parses_or_raises_value_error(text, variant):
    try:
        state = from_fens(text, variant)
    except ValueError:
        return
    # What parses is one position; written back and read again it is the same position.
    fen = to_fens(state)[0]
    assert parse_fen(fen) == parse_fen(text)
    assert to_fens(from_fens(fen, variant)) == [fen]


@FAST
@given(MOVE_LIKE)
def test_move_text_parses_or_raises_value_error(text):
    try:
        squares, is_capture = parse_move(text)
    except ValueError:
        return
    assert all(1 <= s <= 50 for s in squares) and len(squares) >= 2
    assert is_capture == ("x" in text)


@FAST
@given(MOVE_LIKE, VARIANTS)
def test_apply_move_plays_or_raises_value_error(text, variant):
    fen = initial_fen(variant)
    try:
        after = apply_move(fen, text, variant)
    except ValueError:
        return
    assert after in {apply_move(fen, move, variant) for move in legal_moves(fen, variant)}


_TAG_LINE = st.one_of(
    st.builds(
        '[Variant "{}"]'.format,
        st.one_of(
            st.text(max_size=12),
            st.sampled_from(["", " ", "Stapeldammen", "Stapeldammen I", "Stapeldammen II", "II", "III"]),
        ),
    ),
    st.builds('[FEN "{}"]'.format, FEN_LIKE),
    st.builds('[{} "{}"]'.format, st.sampled_from(["Result", "Event", "X"]), st.text(max_size=12)),
)
_BODY_LINE = st.lists(
    st.one_of(MOVE_LIKE, st.sampled_from(["1.", "1...", "2-0", "*", "32-28", "19-23"])), min_size=1, max_size=6
).map(" ".join)
_GAME = st.builds(lambda tags, body: "\n".join([*tags, "", body]), st.lists(_TAG_LINE, max_size=3), _BODY_LINE)
PDN_LIKE = st.one_of(st.text(), st.lists(st.one_of(_GAME, _TAG_LINE, st.text(max_size=8)), max_size=4).map("\n".join))


@FAST
@given(PDN_LIKE)
def test_pdn_reader_parses_or_raises_value_error(text):
    try:
        games = read_games(text)
    except ValueError:
        return
    for game in games:
        assert len(game["fens"]) == len(game["moves"]) + 1
        assert game["result"] in ("2-0", "0-2", "1-1", "*")


@FAST
@given(VARIANTS, SEEDS, st.integers(0, 200))
def test_pdn_round_trip_of_random_games(variant, seed, plies):
    state, actions = _random_game(variant, seed, plies)
    (game,) = read_games(write_game(variant, actions))
    assert game["fens"][0] == initial_fen(variant)
    assert game["fens"][-1] == to_fens(state)[0]
    assert game["result"] == (RESULTS[int(state.rewards[0, 0])] if state.terminated[0] else "*")


# Lines near the protocol: a command word and anything after it. No 'agent' lines with real
# specs: a deep alphabeta or a network would make examples slow, not test the parser.
_COMMANDS = [
    "stapel",
    "isready",
    "variant",
    "position",
    "position startpos moves",
    "position fen",
    "go",
    "go nodes",
    "go movetime",
    "d",
    "agent",
]
ENGINE_LINE = st.one_of(
    st.text(),
    st.builds(lambda word, rest: f"{word} {rest}", st.sampled_from(_COMMANDS), st.one_of(MOVE_LIKE, FEN_LIKE)),
)
_ANSWERS = ("info ", "id name ", "id agent ", "stapelok", "readyok", "bestmove ")


@FAST
@given(st.lists(ENGINE_LINE, max_size=6))
def test_engine_lines_answer_or_error_and_the_engine_keeps_running(lines):
    out = io.StringIO()
    session = EngineSession("random", "I", out=out)
    for line in lines:
        if line.split()[:1] == ["quit"]:
            continue
        assert session.handle(line) is True
    answers = out.getvalue().splitlines()
    assert all(answer.startswith(_ANSWERS) for answer in answers), answers
    # An exception other than the parsers' own would be reported as '<command> failed: <type>'.
    assert not any(" failed: " in answer for answer in answers), answers
    out.seek(0)
    out.truncate()
    session.handle("isready")
    session.handle("go")
    last = out.getvalue().splitlines()
    assert last[0] == "readyok" and last[-1].startswith("bestmove ")


# ---------------------------------------------------------------- positions from random play


@FAST
@given(VARIANTS, SEEDS, st.integers(0, 300))
def test_from_fens_to_fens_round_trip(variant, seed, plies):
    state, _ = _random_game(variant, seed, plies)
    (fen,) = to_fens(state)
    again = from_fens(fen, variant)
    assert to_fens(again) == [fen]
    for field in POSITION_FIELDS:
        np.testing.assert_array_equal(getattr(again, field), getattr(state, field), err_msg=field)


@FAST
@given(VARIANTS, SEEDS, st.integers(0, 300))
def test_apply_move_equals_stepping_the_actions_of_the_move(variant, seed, plies):
    state, _ = _random_game(variant, seed, plies)
    (fen,) = to_fens(state)
    start = from_fens(fen, variant)
    for move in legal_moves(fen, variant):
        squares = [int(s) - 1 for s in move.replace("-", "x").split("x")]
        after = start
        for action in _actions_of(squares):
            after = step(after, np.array([action]))  # validates: each action is legal in turn
        assert after.capturing[0] < 0, f"{move} stops mid-capture in {fen}"
        assert apply_move(fen, move, variant) == to_fens(after)[0], (fen, move)
