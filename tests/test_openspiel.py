"""The OpenSpiel game ``python_stapeldammen``: OpenSpiel's own conformance test, MCTSBot, the engine's rules."""

from __future__ import annotations

import pickle

import numpy as np
import pyspiel
import pytest
from boards import fen
from open_spiel.python.algorithms import mcts
from open_spiel.python.bots import uniform_random

import stapel_rl.openspiel as sos
from stapel_rl.env import engine
from stapel_rl.env.notation import legal_moves
from stapel_rl.env.observation import encode


def random_game(game, rng: np.random.Generator, on_action=None):
    """Play uniformly random legal actions to the end; ``on_action(state, action)`` before each."""
    state = game.new_initial_state()
    while not state.is_terminal():
        action = int(rng.choice(state.legal_actions()))
        if on_action:
            on_action(state, action)
        state.apply_action(action)
    return state


def test_registered_and_loadable():
    assert sos.GAME_NAME in pyspiel.registered_names()
    game = pyspiel.load_game("python_stapeldammen")
    assert game.get_parameters() == {"variant": "I", "ply_cap": 600}
    assert pyspiel.load_game("python_stapeldammen(variant=II)").get_parameters()["variant"] == "II"
    kind = game.get_type()
    assert kind.dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
    assert kind.chance_mode == pyspiel.GameType.ChanceMode.DETERMINISTIC
    assert kind.information == pyspiel.GameType.Information.PERFECT_INFORMATION
    assert kind.utility == pyspiel.GameType.Utility.ZERO_SUM
    assert kind.reward_model == pyspiel.GameType.RewardModel.TERMINAL
    assert game.num_distinct_actions() == 200 and game.num_players() == 2
    assert game.observation_tensor_shape() == [18, 10, 10]
    assert sos.load_game("II", ply_cap=50).get_parameters() == {"variant": "II", "ply_cap": 50}


@pytest.mark.parametrize("variant", ["I", "II"])
@pytest.mark.parametrize("serialize", [False, True])
def test_random_sim_test(variant, serialize):
    game = pyspiel.load_game(f"python_stapeldammen(variant={variant})")
    pyspiel.random_sim_test(game, num_sims=2, serialize=serialize, verbose=False)


@pytest.mark.parametrize("variant, mcts_player", [("I", 0), ("II", 1)])
def test_mcts_bot_plays_complete_games_against_random(variant, mcts_player):
    game = pyspiel.load_game(f"python_stapeldammen(variant={variant})")
    rng = np.random.RandomState(1)
    bots = [uniform_random.UniformRandomBot(p, rng) for p in range(2)]
    bots[mcts_player] = mcts.MCTSBot(
        game, uct_c=2.0, max_simulations=2, evaluator=mcts.RandomRolloutEvaluator(1, rng), random_state=rng
    )
    state = game.new_initial_state()
    while not state.is_terminal():
        state.apply_action(bots[state.current_player()].step(state))
    assert state.returns() in ([1.0, -1.0], [-1.0, 1.0], [0.0, 0.0])
    assert sum(state.returns()) == 0.0


@pytest.mark.parametrize("variant", ["I", "II"])
def test_legal_actions_and_moves_come_from_the_engine(variant):
    """Each turn's steps, joined, are one of the notation's legal full moves; legal actions are the engine's mask."""
    game = sos.load_game(variant)
    turn: "dict" = {}

    def check(state, action):
        s = state.engine_state
        assert state.legal_actions() == np.flatnonzero(s.legal_action_mask[0]).tolist()
        assert state.current_player() == state.player(s.current_player[0])
        step = state.action_to_string(state.current_player(), action)
        if s.capturing[0] < 0:  # a turn starts
            turn.update(fen=engine.to_fens(s)[0], path=step)
        else:
            assert "x" in step and turn["path"].endswith("x" + step.split("x")[0])
            turn["path"] += "x" + step.split("x")[1]
        after = engine.step(s, np.array([action]))
        if after.capturing[0] < 0:  # the turn is over
            assert turn["path"] in legal_moves(turn["fen"], variant)

    final = random_game(game, np.random.default_rng(3), check)
    assert final.returns() == [float(final.engine_state.rewards[0, final.colour(p)]) for p in range(2)]


def test_players_and_first_moves():
    one, two = sos.load_game("I").new_initial_state(), sos.load_game("II").new_initial_state()
    assert one.current_player() == 0 and one.colour(0) == 0  # White moves first in Variant I
    assert two.current_player() == 0 and two.colour(0) == 1  # Black moves first in Variant II
    texts = sorted(one.action_to_string(0, a) for a in one.legal_actions())
    assert texts == sorted(legal_moves(engine.to_fens(engine.init("I"))[0], "I"))
    assert one.action_to_string(0, 4 * (32 - 1) + 0) == "32-27"
    assert one.string_to_action("32-27") == 124


def test_multi_leap_capture_is_several_actions_by_one_player():
    game = sos.load_game("I")
    state = game.new_initial_state()
    state.engine_state = engine.from_fens([fen("W", {32: "w", 27: "b", 17: "b", 5: "b"})], "I")
    assert [state.action_to_string(0, a) for a in state.legal_actions()] == ["32x21"]
    state.apply_action(state.legal_actions()[0])
    assert state.current_player() == 0 and not state.is_terminal()
    assert [state.action_to_string(0, a) for a in state.legal_actions()] == ["21x12"]
    assert "capturing from 21" in str(state)
    state.apply_action(state.legal_actions()[0])
    assert state.current_player() == 1 and not state.is_terminal()


def test_terminal_returns_follow_the_engine():
    # Variant I: White to move with no legal move loses; Black is player 1.
    state = sos.load_game("I").new_initial_state()
    state.engine_state = engine.from_fens([fen("W", {1: "w", 20: "b"})], "I")
    assert state.is_terminal() and state.current_player() == pyspiel.PlayerId.TERMINAL
    assert state.returns() == [-1.0, 1.0]
    # Variant II: points decide; Black (player 0) has 2 men on White's back row, White none.
    state = sos.load_game("II").new_initial_state()
    state.engine_state = engine.from_fens([fen("W", {1: "w", 46: "bb"})], "II")
    assert state.is_terminal() and state.returns() == [1.0, -1.0]
    state.engine_state = engine.from_fens([fen("W", {1: "w", 46: "b"})], "II")  # one point each: a draw
    assert state.is_terminal() and state.returns() == [0.0, 0.0]


def test_observation_tensor_is_the_env_planes_from_each_players_view():
    game = sos.load_game("II")
    state = game.new_initial_state()
    state.apply_action(state.legal_actions()[0])
    for player in (0, 1):
        view = state.engine_state.replace(current_player=np.array([state.colour(player)], np.int8))
        np.testing.assert_array_equal(np.asarray(state.observation_tensor(player)), encode(view)[0].ravel())
    assert state.observation_string(0) == str(state) == engine.to_fens(state.engine_state)[0]


def test_clone_serialise_and_pickle():
    game = sos.load_game("II")
    state = game.new_initial_state()
    for a in (23, 160):
        state.apply_action(a)
    clone = state.clone()
    clone.apply_action(clone.legal_actions()[0])
    assert state.history() == [23, 160] and len(clone.history()) == 3
    new_game, new_state = pyspiel.deserialize_game_and_state(pyspiel.serialize_game_and_state(game, state))
    assert str(new_game) == str(game) and str(new_state) == str(state)
    assert new_state.legal_actions() == state.legal_actions()
    assert str(pickle.loads(pickle.dumps(game))) == str(game)
    assert str(pickle.loads(pickle.dumps(state))) == str(state)


def test_bad_input_names_what_is_allowed_and_changes_nothing():
    with pytest.raises(ValueError, match=r"unknown variant 'III'.*\['I', 'II'\]"):
        pyspiel.load_game("python_stapeldammen(variant=III)")
    with pytest.raises(ValueError, match=r"unknown parameter.*'foo'.*\['ply_cap', 'variant'\]"):
        sos.load_game(foo=1)
    with pytest.raises(ValueError, match="unknown parameter"):
        sos.StapeldammenGame({"foo": 1})
    # pyspiel.load_game checks names and types itself, before the game is made.
    with pytest.raises(pyspiel.SpielError, match="Available parameters are: ply_cap, variant"):
        pyspiel.load_game("python_stapeldammen(foo=1)")
    with pytest.raises(ValueError, match="ply_cap must be a positive int"):
        sos.load_game(ply_cap=0)

    state = sos.load_game("I").new_initial_state()
    before, history = str(state), state.history()
    with pytest.raises(ValueError, match=r"illegal action 0 .*legal actions: \{.*'31-26'"):
        state.apply_action(0)
    with pytest.raises(ValueError, match="illegal action 999"):
        state.apply_action(999)
    assert str(state) == before and state.history() == history and state.current_player() == 0
