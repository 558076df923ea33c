"""Self-play records: every decision point of every finished game, joined to that game's result."""

import numpy as np
import pytest

from stapel_rl.env import engine, get_variant
from stapel_rl.env.geometry import ROTATE_ACTION
from stapel_rl.mcts.tree import read_states
from stapel_rl.models import UniformEvaluator
from stapel_rl.train.replay import STATE_FIELDS
from stapel_rl.train.selfplay import SelfPlay, SelfPlayConfig


def replay_game(variant, actions):
    """The decision states of a game replayed from its actions (positions with more than one
    legal action: forced ones are played unsearched and not recorded), and the final state."""
    state, states = engine.init(variant, 1), []
    for a in actions:
        if state.legal_action_mask.sum() > 1:
            states.append(state)
        state = engine.step(state, np.array([a]))
    return states, state


def row_key(fields: dict, i: int) -> bytes:
    return b"|".join(np.ascontiguousarray(fields[k][i]).tobytes() for k in STATE_FIELDS)


# forced_rounds=0: every forced action after a searched one gets a node in the search, and self-play
# plays them all itself (restarting those games' trees).
@pytest.mark.parametrize("forced_rounds", [2, 0])
@pytest.mark.parametrize("variant_name", ["I", "II"])
def test_recorded_positions_are_the_finished_games_with_their_results(variant_name, forced_rounds):
    variant = get_variant(variant_name).with_ply_cap(150)  # games of about 100 full moves, most decided
    search = SelfPlayConfig(4, "gumbel", forced_rounds=forced_rounds)
    selfplay = SelfPlay(variant, UniformEvaluator(), search, 6, np.random.default_rng(1))
    positions = selfplay.play(300)
    games = selfplay.take_finished_games()
    assert len(positions) >= 300 and len(games) >= 3
    assert any(g.result != 0 for g in games)  # the value targets' signs are tested

    # Replaying every finished game gives exactly the recorded positions, each with its game's result.
    expected = {}
    for game in games:
        states, final = replay_game(variant, game.actions)
        assert final.done[0] and int(final.rewards[0, 0]) == game.result and int(final.ply[0]) == game.plies
        points = float(final.points[0, 0] - final.points[0, 1])
        for s in states:
            sign = 1.0 if s.current_player[0] == 0 else -1.0
            key = row_key({k: getattr(s, k) for k in STATE_FIELDS}, 0)
            expected.setdefault(key, []).append((sign * game.result, sign * points))
    got = {}
    for i in range(len(positions)):
        key = row_key(positions.arrays, i)
        got.setdefault(key, []).append((float(positions.arrays["value"][i]), float(positions.arrays["points_diff"][i])))
    assert sorted(got) == sorted(expected)
    assert all(sorted(got[k]) == sorted(expected[k]) for k in got)

    # Policies are search policies over the mover's canonical actions.
    policy, mask = positions.arrays["policy"], positions.arrays["legal_action_mask"]
    black = positions.arrays["current_player"] == 1
    canonical_mask = np.where(black[:, None], mask[:, ROTATE_ACTION], mask)
    np.testing.assert_allclose(policy.sum(axis=1), 1.0, rtol=1e-5)
    assert (policy[~canonical_mask] == 0).all()


@pytest.mark.parametrize("forced_rounds", [None, 1, 0])
def test_the_kept_subtree_root_is_the_position_played(forced_rounds):
    # The search's children stop after forced_rounds forced actions, self-play plays them all: a game
    # keeps its subtree only where the chosen child holds the position the game is in.
    selfplay = SelfPlay(
        get_variant("I"),
        UniformEvaluator(),
        SelfPlayConfig(8, "gumbel", forced_rounds=forced_rounds),
        16,
        np.random.default_rng(3),
    )
    kept = 0
    for _ in range(150):
        selfplay._decide()
        tree, state = selfplay.tree, selfplay.state
        root = read_states(tree, np.arange(16), np.zeros(16, int))
        for name in ("height", "colours", "current_player", "capturing", "ply", "legal_action_mask"):
            np.testing.assert_array_equal(getattr(root, name), getattr(state, name), err_msg=name)
        assert not (state.legal_action_mask.sum(axis=1) == 1).any()  # roots are decision points
        kept += int((tree.num_nodes > 1).sum())
    assert kept > 0  # subtrees were kept at all


def test_unfinished_games_stay_pending_and_arrive_later():
    variant = get_variant("I").with_ply_cap(30)
    selfplay = SelfPlay(variant, UniformEvaluator(), SelfPlayConfig(2, "gumbel"), 4, np.random.default_rng(2))
    first = selfplay.play(1)
    games = selfplay.take_finished_games()
    pending = sum(len(p["serial"]) for p in selfplay.pending)
    # One position per decision point of each finished game.
    assert len(first) == sum(len(replay_game(variant, g.actions)[0]) for g in games)
    assert pending == int(selfplay.recorded.sum())  # the rest belongs to the games still running
    second = selfplay.play(1)
    assert len(second) == sum(len(replay_game(variant, g.actions)[0]) for g in selfplay.take_finished_games())


def test_value_target_mixes_result_and_root_value_and_old_buffers_load():
    import io

    from stapel_rl.train.replay import FIELDS, ReplayBuffer

    variant = get_variant("I")
    selfplay = SelfPlay(
        variant.with_ply_cap(150),
        UniformEvaluator(),
        SelfPlayConfig(4, "gumbel"),
        4,
        np.random.default_rng(3),
    )
    positions = selfplay.play(50)
    root = positions.arrays["root_value"]
    assert root.dtype == np.float32 and (np.abs(root) <= 1).all()
    buffer = ReplayBuffer(1000, variant)
    buffer.add(positions)
    arrays = buffer.arrays
    n = len(buffer)
    arrays["value"][:n], arrays["root_value"][:n] = 1.0, -0.5
    batch = buffer.sample(8, np.random.default_rng(0), "compact", value_mix=0.25)
    np.testing.assert_allclose(batch.value, 0.625)  # 0.75 * 1 + 0.25 * -0.5
    assert batch.obs.shape == (8, 18, 10, 5)
    np.testing.assert_allclose(buffer.sample(8, np.random.default_rng(0)).value, 1.0)

    # A buffer saved before root_value existed loads with zeros there.
    blob = io.BytesIO()
    np.savez(blob, added=np.array(n), **{k: v[:n] for k, v in arrays.items() if k != "root_value"})
    old = ReplayBuffer(1000, variant)
    old.load_bytes(blob.getvalue())
    assert len(old) == n and (old.arrays["root_value"][:n] == 0).all()
    np.testing.assert_array_equal(old.arrays["colours"][:n], arrays["colours"][:n])
    assert set(FIELDS) == set(old.arrays)
