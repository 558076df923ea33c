"""Agents keep their trees between moves (``mcts.reuse.TreeCache``) and the spec options of leaf
batching, the solver and reuse."""

from __future__ import annotations

import numpy as np
import pytest
from trees import check_tree

from stapel_rl.env import init
from stapel_rl.env import step as engine_step
from stapel_rl.env.engine import play_forced
from stapel_rl.env.sampling import random_positions
from stapel_rl.eval.agents import make_agent
from stapel_rl.eval.network_agents import AGENT_LEAVES_PER_CALL, MCTSAgent
from stapel_rl.mcts import SearchConfig, search, subtree
from stapel_rl.mcts.reuse import TreeCache, descendants
from stapel_rl.mcts.tree import PER_CHILD, PER_NODE
from stapel_rl.models import UniformEvaluator

CONFIG = SearchConfig(num_simulations=48, algorithm="puct", dirichlet_fraction=0.0, temperature=0.0)


def step(state, actions):
    """The position after ``actions`` and the forced actions that follow, as the tree's nodes hold it
    (and as an agent is next called: a match plays forced leaps and only moves in between)."""
    return play_forced(engine_step(state, np.asarray(actions)))[0]


def searched(state, config=CONFIG, seed=0):
    return search(state, UniformEvaluator(), config, np.random.default_rng(seed))


def most_visited_reply(tree, game, child):
    """The child's most visited action: a position two plies on that the kept subtree holds."""
    return int(tree.children_visits[game, child].argmax())


def test_kept_subtree_is_self_plays_subtree():
    state = random_positions("I", 2, 14, np.random.default_rng(0))
    out = searched(state)
    cache = TreeCache()
    cache.store(out.tree, out.action)
    roots = step(state, out.action)
    tree, reused = cache.take(roots, 40)
    assert reused.all()
    expected, kept = subtree(out.tree, out.action, roots, tree.capacity, room=0)
    assert kept.all()
    check_tree(tree)
    for name in PER_NODE + PER_CHILD:
        np.testing.assert_array_equal(getattr(tree, name), getattr(expected, name), err_msg=name)
    np.testing.assert_array_equal(tree.num_nodes, expected.num_nodes)


def test_a_position_two_plies_on_is_found_and_the_search_continues_there():
    state = random_positions("I", 1, 14, np.random.default_rng(1))
    out = searched(state)
    child = int(out.tree.children_index[0, 0, out.action[0]])
    reply = most_visited_reply(out.tree, 0, child)
    grandchild = int(out.tree.children_index[0, child, reply])
    assert grandchild > 0
    cache = TreeCache()
    cache.store(out.tree, out.action)
    position = step(step(state, out.action), np.array([reply]))
    tree, reused = cache.take(position, 48 + 1)
    assert reused.tolist() == [True]
    assert tree.num_nodes[0] == descendants(out.tree, 0, grandchild).size
    assert tree.node_visits[0, 0] == out.tree.node_visits[0, grandchild]
    np.testing.assert_array_equal(tree.children_visits[0, 0], out.tree.children_visits[0, grandchild])
    check_tree(tree)
    more = search(position, UniformEvaluator(), CONFIG, np.random.default_rng(0), tree=tree)
    assert more.tree.node_visits[0, 0] == out.tree.node_visits[0, grandchild] + 48
    check_tree(more.tree)
    assert not cache.trees  # a subtree is used once


def test_an_unexpected_position_gets_a_fresh_tree_and_the_fresh_answer():
    state = random_positions("I", 1, 14, np.random.default_rng(2))
    other = random_positions("I", 1, 15, np.random.default_rng(3))
    agent = MCTSAgent(UniformEvaluator(), CONFIG, reuse=True)
    agent(state, np.random.default_rng(0))
    tree, reused = agent.cache.take(other, 49)
    assert reused.tolist() == [False] and tree.node_visits[0, 0] == 0 and tree.num_nodes[0] == 1
    agent(state, np.random.default_rng(0))
    fresh = MCTSAgent(UniformEvaluator(), CONFIG)
    assert agent(other, np.random.default_rng(5)).tolist() == fresh(other, np.random.default_rng(5)).tolist()
    assert agent.simulations == fresh.simulations == 48


def test_agent_reuses_each_games_tree_when_called_one_game_at_a_time():
    """Equal-time matches call an agent with one game at a time, interleaved over the match's games."""
    games = [random_positions("I", 1, 14, np.random.default_rng(s)) for s in (4, 5)]
    agent = MCTSAgent(UniformEvaluator(), CONFIG, reuse=True)
    rng = np.random.default_rng(0)
    replies = []
    for game in games:
        a = agent(game, rng)
        replies.append(step(game, a))
    for after in replies:  # the opponent answers with its first legal move
        reply = np.array([int(after.legal_action_mask[0].argmax())])
        position = step(after, reply)
        if position.done[0] or position.legal_action_mask[0].sum() < 2:
            continue
        before = len(agent.cache.trees)
        tree, reused = agent.cache.take(position, 49)
        agent.cache.trees.append(tree)  # put it back for the agent's own look-up
        if reused[0]:
            agent(position, rng)
            assert agent.simulations == 48
            assert len(agent.cache.trees) == before  # the used one replaced by the new search's
        check_tree(tree)


def test_agent_spec_options():
    agent = make_agent("mcts:variant_I:time=0.5")
    assert agent.config.leaves_per_call == AGENT_LEAVES_PER_CALL and agent.config.solver and agent.reuse
    agent = make_agent("mcts:variant_I:sims=16:batch=4:solver=off:reuse=off")
    assert agent.config.leaves_per_call == 4 and not agent.config.solver and not agent.reuse


@pytest.mark.parametrize(
    "option, message",
    [
        ("batch=0", "batch must be positive"),
        ("batch=two", "batch='two' is not a whole number"),
        ("solver=maybe", "unknown mcts agent option"),
        ("reuse=yes", "unknown mcts agent option"),
        ("leaves=4", "unknown mcts agent option"),
    ],
)
def test_agent_spec_rejects_bad_batching_options(option, message):
    with pytest.raises(ValueError, match=message):
        make_agent(f"mcts:variant_I:{option}")


def test_timed_agent_with_leaf_batching_and_reuse_plays_a_game():
    agent = make_agent("mcts:variant_I:time=0.02")
    state, rng = init("I", 1), np.random.default_rng(0)
    for _ in range(12):
        if state.done[0]:
            break
        a = agent(state, rng)
        assert state.legal_action_mask[0, a[0]]
        state = step(state, a)
