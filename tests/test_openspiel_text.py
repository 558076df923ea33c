"""``state_to_text`` / ``state_from_text``: the safe text form of an OpenSpiel state, and why it is needed."""

from __future__ import annotations

import base64
import os
import pickle
import shlex

import numpy as np
import pytest

import stapel_rl.openspiel as sos


class Payload:
    """Unpickling this runs a shell command that creates ``marker``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(str(self.marker))}",))


def played(variant: str, n: int, seed: int = 0, ply_cap: int = 600):
    """A state after ``n`` random legal actions (fewer if the game ends first)."""
    state = sos.load_game(variant, ply_cap=ply_cap).new_initial_state()
    rng = np.random.default_rng(seed)
    for _ in range(n):
        if state.is_terminal():
            break
        state.apply_action(int(rng.choice(state.legal_actions())))
    return state


@pytest.mark.parametrize("variant, n", [("I", 0), ("I", 25), ("II", 45), ("I", 10_000)])
def test_round_trip_gives_the_same_state(variant, n):
    state = played(variant, n, ply_cap=40)
    assert state.is_terminal() == (n == 10_000)
    text = sos.state_to_text(state)
    assert text.splitlines()[0] == f"stapeldammen variant={variant} ply_cap=40"
    again = sos.state_from_text(text)
    assert again.get_game().get_parameters() == {"variant": variant, "ply_cap": 40}
    assert again.history() == state.history()
    assert again.is_terminal() == state.is_terminal()
    assert str(again) == str(state)
    assert again.current_player() == state.current_player()
    assert again.legal_actions() == state.legal_actions()
    for player in range(2):
        assert again.observation_tensor(player) == state.observation_tensor(player)
    if state.is_terminal():
        assert again.returns() == state.returns()
    assert sos.state_to_text(again) == text


def test_format_is_the_header_and_the_action_ids():
    state = sos.load_game("I").new_initial_state()
    for action in (120, 63, 124):
        state.apply_action(action)
    assert sos.state_to_text(state) == "stapeldammen variant=I ply_cap=600\n120 63 124\n"
    # ply_cap may be left out (600), and the ids may be split over lines
    again = sos.state_from_text("stapeldammen variant=I\n120\n63  124")
    assert again.history() == [120, 63, 124]
    assert again.get_game().get_parameters() == {"variant": "I", "ply_cap": 600}
    assert sos.state_from_text("stapeldammen variant=II").history() == []


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "bad state text header ''"),
        ("stapeldamen variant=I\n", "bad state text header 'stapeldamen variant=I'"),
        ("stapeldammen variant=I ply_cap=-1\n", "bad state text header"),
        ("stapeldammen variant=I extra=1\n", "bad state text header"),
        ("stapeldammen variant=III\n", "unknown variant 'III'"),
        ("stapeldammen variant=I ply_cap=0\n", "ply_cap must be a positive int"),
        ("stapeldammen variant=I\n120 x3\n", "action 2 is 'x3': expected an action id (0..199)"),
        ("stapeldammen variant=I\n120 -63\n", "action 2 is '-63'"),
        ("stapeldammen variant=I\n1_20\n", "action 1 is '1_20'"),
        ("stapeldammen variant=I\n\u0661\u0662\u0660\n", "action 1 is"),  # Arabic-Indic digits: not ASCII
        ("stapeldammen variant=I\n1200\n", "action 1 is '1200'"),
        ("stapeldammen variant=I\n120 120\n", "action 2: illegal action 120"),
        ("stapeldammen variant=I\n0\n", "action 1: illegal action 0"),
    ],
)
def test_malformed_text_and_illegal_actions_are_refused(text, message):
    with pytest.raises(ValueError) as err:
        sos.state_from_text(text)
    assert message in str(err.value)


def test_actions_after_the_end_and_too_many_actions_are_refused():
    state = played("I", 10_000, ply_cap=5)
    assert state.is_terminal()
    text = sos.state_to_text(state)
    more = text.rstrip("\n") + " 120\n"
    with pytest.raises(ValueError, match=rf"action {len(state.history()) + 1} \(120\) comes after the end"):
        sos.state_from_text(more)
    cap = state.get_game().max_game_length()
    with pytest.raises(ValueError, match=rf"{cap + 1} actions: more than a game can last \({cap}\)"):
        sos.state_from_text("stapeldammen variant=I ply_cap=5\n" + "120 " * (cap + 1))


def test_bad_input_to_state_to_text():
    with pytest.raises(ValueError, match="expected a python_stapeldammen state, got int"):
        sos.state_to_text(3)  # type: ignore[arg-type]


def test_openspiel_deserialisation_unpickles_the_text(tmp_path):
    """Why the safe pair exists: ``game.deserialize_state`` runs what the ``__dict__=`` line pickles."""
    marker = tmp_path / "MARKER"
    game = sos.load_game("I")
    evil = "history=\nmove_number=0\n__dict__=" + base64.b64encode(pickle.dumps(Payload(marker))).decode()
    with pytest.raises(Exception):  # noqa: B017 - the payload ran before OpenSpiel fails on its result
        game.deserialize_state(evil)
    assert marker.exists()


def test_a_crafted_pickle_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "MARKER"
    raw = pickle.dumps(Payload(marker))
    b64 = base64.b64encode(raw).decode()
    serialized = "history=\nmove_number=0\n__dict__=" + b64
    for payload in (raw, raw.decode("latin-1"), b64, serialized, f"stapeldammen variant=I\n{b64}\n"):
        with pytest.raises(ValueError):
            sos.state_from_text(payload)  # type: ignore[arg-type]
    assert not marker.exists()
    with pytest.raises(ValueError, match="state text must be str, got bytes"):
        sos.state_from_text(raw)  # type: ignore[arg-type]
