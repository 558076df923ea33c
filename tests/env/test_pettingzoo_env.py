"""The PettingZoo AEC env: API conformance, turn order during multi-leaps, rewards, errors."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from boards import fen
from pettingzoo.test import api_test  # noqa: E402

from stapel_rl.env import engine  # noqa: E402
from stapel_rl.env.observation import NUM_PLANES, encode  # noqa: E402
from stapel_rl.env.pettingzoo_env import env, raw_env  # noqa: E402


def play_random(e, rng: np.random.Generator, max_steps: int = 5000) -> "list[str]":
    """Play legal moves until both agents have stepped out; the agents selected, in order."""
    selected = []
    for _ in range(max_steps):
        if not e.agents:
            return selected
        agent = e.agent_selection
        selected.append(agent)
        obs, _, terminated, truncated, _ = e.last()
        if terminated or truncated:
            e.step(None)
        else:
            e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    raise AssertionError("game did not finish")


@pytest.mark.parametrize("variant", ["I", "II"])
def test_api(variant):
    api_test(env(variant=variant), num_cycles=300)


@pytest.mark.parametrize("variant, first_colour", [("I", 0), ("II", 1)])
def test_player_0_moves_first(variant, first_colour):
    e = env(variant=variant)
    e.reset()
    assert e.possible_agents == ["player_0", "player_1"]
    assert e.agent_selection == "player_0"
    assert e.unwrapped.agent_colour == {"player_0": first_colour, "player_1": 1 - first_colour}
    assert e.infos["player_0"]["legal_moves"] == 9
    assert e.infos["player_1"]["legal_moves"] == 0


def test_observations_are_each_agents_own_view():
    e = env(variant="I")
    e.reset()
    to_move = e.observe("player_0")
    waiting = e.observe("player_1")
    assert to_move["observation"].shape == (NUM_PLANES, 10, 10)
    assert to_move["observation"].dtype == np.float32 and to_move["action_mask"].dtype == np.int8
    assert to_move["action_mask"].sum() == 9
    assert not waiting["action_mask"].any()
    # The start position is symmetric, so both agents see the same board.
    np.testing.assert_array_equal(to_move["observation"], waiting["observation"])
    # player_1's view is what it gets once it is to move.
    e.step(int(np.flatnonzero(to_move["action_mask"])[0]))
    assert e.agent_selection == "player_1"
    state = e.unwrapped.state
    np.testing.assert_array_equal(e.observe("player_1")["observation"], encode(state)[0])
    black_view = e.observe("player_0")["observation"]
    np.testing.assert_array_equal(black_view, encode(state.replace(current_player=np.array([0], np.int8)))[0])
    assert not e.observe("player_0")["action_mask"].any()


def test_multi_leap_keeps_the_same_agent_selected():
    e = env(variant="I")
    # White 38 must capture 38x29x18; Black keeps a man on 5, so the game goes on.
    e.reset(options={"fen": fen("W", {38: "w", 33: "b", 23: "b", 5: "b"})})
    assert e.agent_selection == "player_0"
    e.step(int(np.flatnonzero(e.observe("player_0")["action_mask"])[0]))
    assert e.agent_selection == "player_0"  # the capture is not over
    assert e.unwrapped.state.capturing[0] >= 0
    assert e.observe("player_0")["action_mask"].sum() == 1
    assert not any(e.terminations.values())
    e.step(int(np.flatnonzero(e.observe("player_0")["action_mask"])[0]))
    assert e.agent_selection == "player_1"
    assert engine.to_fens(e.unwrapped.state) == [fen("B", {5: "b", 18: "wbb"})]


def test_multi_leap_in_random_play():
    e = env(variant="I")
    e.reset(seed=0)
    rng = np.random.default_rng(0)
    repeats = 0
    while e.agents and not repeats:
        agent = e.agent_selection
        obs, _, terminated, truncated, _ = e.last()
        if terminated or truncated:
            e.step(None)
            continue
        e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        if e.agents and e.unwrapped.state.capturing[0] >= 0:
            assert e.agent_selection == agent
            repeats += 1
    assert repeats, "no multi-leap in this game"


def play_out(e, choose):
    """Play ``e`` to the end with ``choose(mask) -> action``; per-agent reward totals and the (terminated,
    truncated) flags seen at each dead step. Rewards are 0 on every step before the end."""
    totals = {agent: 0.0 for agent in e.possible_agents}
    ends = []
    while e.agents:
        agent = e.agent_selection
        obs, reward, terminated, truncated, _ = e.last()
        totals[agent] += reward
        if terminated or truncated:
            ends.append((terminated, truncated))
            e.step(None)
        else:
            assert reward == 0
            e.step(choose(obs["action_mask"]))
    return totals, ends


@pytest.mark.parametrize(
    "variant, position, rewards",
    [
        # White captures Black's last men and wins.
        ("I", fen("W", {38: "w", 33: "b", 23: "b"}), {"player_0": 1.0, "player_1": -1.0}),
        # Black takes White's last man: Black (player_1) wins.
        ("I", fen("B", {17: "b", 22: "w"}), {"player_0": -1.0, "player_1": 1.0}),
        # Variant II: Black (player_0) reaches the back row for 1 point, then
        # White cannot move and wins 2-1 on points.
        ("II", fen("B", {1: "ww", 45: "b"}), {"player_0": -1.0, "player_1": 1.0}),
    ],
)
def test_final_rewards(variant, position, rewards):
    e = env(variant=variant)
    e.reset(options={"fen": position})
    totals, ends = play_out(e, lambda mask: int(np.flatnonzero(mask)[0]))
    assert all(terminated and not truncated for terminated, truncated in ends)
    assert totals == rewards
    assert sum(totals.values()) == 0


def test_game_end_flags_rewards_and_infos():
    e = env(variant="I")
    e.reset(options={"fen": fen("W", {38: "w", 33: "b", 23: "b"})})
    for _ in range(2):
        e.step(int(np.flatnonzero(e.observe(e.agent_selection)["action_mask"])[0]))
    assert e.terminations == {"player_0": True, "player_1": True}
    assert e.truncations == {"player_0": False, "player_1": False}
    assert e.rewards == {"player_0": 1.0, "player_1": -1.0}
    assert e.agent_selection == "player_1"  # the loser steps out first
    assert e.infos["player_0"]["result"] == 1 and e.infos["player_1"]["legal_moves"] == 0
    assert not e.observe("player_0")["action_mask"].any()
    with pytest.raises(ValueError, match="dead"):
        e.step(0)
    e.step(None)
    assert e.agents == ["player_0"] and e.agent_selection == "player_0"
    assert e.last()[1] == 1.0
    e.step(None)
    assert e.agents == []


@pytest.mark.parametrize("variant", ["I", "II"])
def test_random_games_end_with_zero_sum_rewards(variant):
    e = env(variant=variant)
    rng = np.random.default_rng(1)
    for seed in range(2):
        e.reset(seed=seed)
        play_random(e, rng)
        state = e.unwrapped.state
        assert state.done[0]
        colour = e.unwrapped.agent_colour
        # The final rewards are the engine's, per colour, and sum to zero.
        assert state.rewards[0, colour["player_0"]] + state.rewards[0, colour["player_1"]] == 0


def test_ply_cap_truncates_with_zero_rewards():
    e = env(variant="II", ply_cap=6)
    e.reset()
    rng = np.random.default_rng(2)
    totals, ends = play_out(e, lambda mask: int(rng.choice(np.flatnonzero(mask))))
    assert all(truncated and not terminated for terminated, truncated in ends)
    assert totals == {"player_0": 0.0, "player_1": 0.0}
    assert e.unwrapped.state.ply[0] == 6


def test_illegal_actions_raise():
    e = env(variant="I")
    e.reset()
    mask = e.observe("player_0")["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    with pytest.raises(ValueError, match="illegal action"):
        e.step(illegal)
    for bad in (-1, 200):
        with pytest.raises(ValueError, match="illegal action"):
            e.step(bad)
    with pytest.raises(ValueError, match="integer"):
        e.step(1.5)
    with pytest.raises(ValueError, match="None"):
        e.step(None)
    # Nothing was played.
    assert e.agent_selection == "player_0" and e.unwrapped.state.ply[0] == 0
    e.step(np.int32(np.flatnonzero(mask)[0]))
    assert e.agent_selection == "player_1"


def test_reset_options():
    e = env(variant="I")
    e.reset(options={"unrelated": 1})
    assert engine.to_fens(e.unwrapped.state) == [engine.to_fens(engine.init("I"))[0]]
    e.reset(options={"fen": fen("B", {17: "b", 22: "w"})})
    assert e.agent_selection == "player_1"
    with pytest.raises(ValueError, match="no legal move"):
        e.reset(options={"fen": fen("W", {1: "w", 46: "b"})})
    with pytest.raises(ValueError):
        e.reset(options={"fen": "W:not a position"})


def test_constructor_arguments_and_pickle():
    with pytest.raises(ValueError):
        raw_env(render_mode="human")
    with pytest.raises(ValueError):
        raw_env(variant="III")
    e = pickle.loads(pickle.dumps(raw_env(variant="II", ply_cap=50)))
    assert e.variant.name == "II" and e.variant.ply_cap == 50
    assert e.metadata["name"] == "stapeldammen_v0" and e.metadata["is_parallelizable"] is False
    e.reset()
    with pytest.warns(UserWarning, match="without specifying any render mode"):
        assert e.render() is None


@pytest.mark.parametrize("mode", ["ansi", "rgb_array"])
def test_render(mode):
    e = env(variant="I", render_mode=mode)
    e.reset()
    frame = e.render()
    if mode == "ansi":
        assert isinstance(frame, str) and frame
    else:
        assert isinstance(frame, np.ndarray) and frame.ndim == 3 and frame.shape[2] == 3
    e.close()


@pytest.mark.parametrize("variant", ["I", "II"])
def test_infos_keep_the_keys_of_reset_all_game(variant):
    """TorchRL's PettingZooWrapper fixes its info spec at reset: the keys must not change."""
    e = env(variant=variant)
    e.reset(seed=0)
    keys = {agent: set(info) for agent, info in e.infos.items()}
    assert keys == {a: {"colour", "legal_moves", "result", "points"} for a in e.possible_agents}
    rng = np.random.default_rng(0)
    while e.agents:
        obs, _, terminated, truncated, info = e.last()
        if terminated or truncated:  # the game is over: its result
            assert info["result"] == int(e.unwrapped.state.rewards[0, 0]) and info["points"] == [
                int(p) for p in e.unwrapped.state.points[0]
            ]
        assert {a: set(info) for a, info in e.infos.items()} == {a: keys[a] for a in e.agents}
        e.step(None if terminated or truncated else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert not e.infos  # every agent has stepped out
