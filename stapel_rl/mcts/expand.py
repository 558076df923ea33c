"""A new node's prior and value: the evaluator's, or the true result where the game is over (``evaluate``).

Shared by the plain search (``search``) and the leaf-batched one (``lanes``).
"""

from __future__ import annotations

import numpy as np
import torch

from stapel_rl.env.state import State, take
from stapel_rl.mcts.algorithm import Algorithm
from stapel_rl.mcts.qtransforms import NEG_INF
from stapel_rl.mcts.tree import ILLEGAL_VALUE, Tree
from stapel_rl.models.evaluator import Evaluator


def evaluate(
    tree: Tree,
    games: np.ndarray,
    nodes: np.ndarray,
    states: State,
    evaluator: Evaluator,
    algorithm: "Algorithm | None" = None,
    forced: "np.ndarray | None" = None,
) -> None:
    """Prior and value of new nodes: the evaluator's, or the true result where the game is over.

    ``algorithm`` learns of the new nodes (Gumbel makes its first choice
    there), ``forced`` being what ``write_states`` returned for them.
    """
    over = states.terminated | states.truncated
    value = states.rewards[np.arange(states.batch_size), states.current_player]
    live = np.flatnonzero(~over)
    if live.size:
        every = live.size == over.size
        evaluation = evaluator(states if every else take(states, live))
        value[live] = evaluation.value
        legal = states.legal_action_mask if every else states.legal_action_mask[live]
        # 0 where legal, ILLEGAL_VALUE (exactly -1e9 in float32) elsewhere: cheaper than np.where.
        values = np.subtract(legal, np.float32(1), dtype=np.float32)
        values *= -ILLEGAL_VALUE
        prior = softmax_live(evaluation.logits, values, legal)
        g, n = games[live], nodes[live]
        tree.children_prior[g, n] = prior
        tree.children_values[g, n] = values
    else:
        prior = None
    if live.size < over.size:  # a finished game's node has no children; clear what an earlier search left
        g, n = games[over], nodes[over]
        tree.children_prior[g, n] = 0
        tree.children_values[g, n] = 0
        tree.exact[g, n] = value[over]  # the result is known: what ``solver`` builds on
    if algorithm is not None:
        assert forced is not None  # the expansions give both
        algorithm.expanded(tree, games, nodes, forced, live, prior)
    tree.raw_values[games, nodes] = value


def softmax_live(logits: np.ndarray, penalty: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``masked_softmax`` for rows with at least one legal action (``float32 [L, A]``), to float32
    rounding, in a quarter of the time.

    ``penalty`` is 0 on legal actions and ILLEGAL_VALUE elsewhere: adding it
    (one pass, where masking with ``legal`` takes three) keeps the legal
    logits exact, and once the row maximum, a legal logit, is subtracted, exp
    underflows to exactly 0 on the illegal ones. That holds while every logit
    is within 1e8 of 0 (two whole-array reductions check it); otherwise
    ``legal`` masks. torch's softmax runs the row maximum and sum vectorised
    (numpy's reductions over rows of 200 are not).
    """
    logits = np.ascontiguousarray(logits, dtype=np.float32)
    if -1e8 <= logits.min() and logits.max() <= 1e8:
        z = torch.from_numpy(logits) + torch.from_numpy(penalty)
    else:
        z = torch.from_numpy(np.where(legal, logits, NEG_INF))
    return torch.softmax(z, dim=1).numpy()
