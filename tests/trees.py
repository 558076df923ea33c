"""The bookkeeping every search tree must satisfy, and an exact negamax oracle (search and solver tests)."""

from __future__ import annotations

import numpy as np
import pytest

from stapel_rl.env.engine import play_forced, step
from stapel_rl.mcts.tree import read_states


def check_tree(tree):
    """Bookkeeping every search tree must satisfy, game by game."""
    for b in range(tree.batch_size):
        used = int(tree.num_nodes[b])
        assert 1 <= used <= tree.capacity
        assert (tree.node_visits[b, used:] == 0).all()
        nodes = np.arange(1, used)
        parent = tree.parents[b, nodes]
        act = tree.action_from_parent[b, nodes]
        assert (parent >= 0).all() and (parent < nodes).all()
        assert tree.parents[b, 0] == -1
        # Every edge in the tree is a legal action of its parent.
        assert tree.legal[b, parent, act].all(), "an illegal action was expanded"
        assert (tree.children_index[b, parent, act] == nodes).all()
        assert (tree.children_index[b, :used] >= 0).sum() == used - 1
        # Each child holds the engine's position after its action, and with skip_forced after
        # the forced actions that follow it too (all of them: SearchConfig.forced_rounds is None).
        if used > 1:
            child = read_states(tree, np.full(used - 1, b), nodes)
            after = step(read_states(tree, np.full(used - 1, b), parent), act.astype(np.int64))
            played_on, _ = play_forced(after)
            names = ("height", "colours", "current_player", "capturing", "ply", "terminated")
            skipped = not all(np.array_equal(getattr(child, n), getattr(after, n)) for n in names)
            for name in names:
                np.testing.assert_array_equal(
                    getattr(child, name), getattr(played_on if skipped else after, name), err_msg=name
                )
        # The stored player is the engine's; without skipping it stays only while a capture goes on.
        np.testing.assert_array_equal(tree.player[b, :used], tree.states.current_player[b, :used])
        same = tree.player[b, parent] == tree.player[b, nodes]
        if used > 1 and not skipped:
            np.testing.assert_array_equal(same, tree.states.capturing[b, nodes] >= 0)
        # Edge statistics mirror the child's, with the sign of the parent's view.
        np.testing.assert_array_equal(tree.children_visits[b, parent, act], tree.node_visits[b, nodes])
        sign = np.where(same, 1.0, -1.0)
        np.testing.assert_allclose(tree.children_values[b, parent, act], sign * tree.node_values[b, nodes], atol=1e-5)
        assert (tree.children_visits[b, :used][tree.children_index[b, :used] < 0] == 0).all()
        # A node's visits: its expansion plus its children's; its value: the mean of those.
        for n in range(used):
            if tree.node_visits[b, n] == 0:
                continue
            cv = tree.children_visits[b, n].astype(np.float64)
            if tree.terminal[b, n]:
                assert cv.sum() == 0
                assert tree.node_values[b, n] == pytest.approx(tree.raw_values[b, n], abs=1e-6)
                continue
            assert tree.node_visits[b, n] == 1 + cv.sum()
            total = tree.raw_values[b, n] + (cv * tree.children_values[b, n]).sum()
            assert tree.node_values[b, n] == pytest.approx(total / tree.node_visits[b, n], abs=1e-4)
            assert -1.0 - 1e-6 <= tree.node_values[b, n] <= 1.0 + 1e-6
        np.testing.assert_array_equal(tree.num_legal[b, :used], tree.legal[b, :used].sum(axis=1))


def negamax(state, depth):
    """Exact value of game 0 for its side to move within ``depth`` actions, or None if not settled.

    Values flip only where the player to move changes (a leap that continues
    a capture keeps the player), the same rule the search must follow.
    """
    if state.terminated[0] or state.truncated[0]:
        return float(state.rewards[0, state.current_player[0]])
    if depth == 0:
        return None
    best, unknown = -1.0, False
    for a in np.flatnonzero(state.legal_action_mask[0]):
        child = step(state, np.array([a]))
        v = negamax(child, depth - 1)
        if v is None:
            unknown = True
            continue
        v = v if child.current_player[0] == state.current_player[0] else -v
        if v == 1.0:
            return 1.0
        best = max(best, v)
    return None if unknown else best
