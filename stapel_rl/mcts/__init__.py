"""Batched Monte Carlo tree search (PUCT and Gumbel AlphaZero) over the engine."""

from stapel_rl.mcts.config import SearchConfig
from stapel_rl.mcts.qtransforms import masked_softmax
from stapel_rl.mcts.search import SearchOutput, search
from stapel_rl.mcts.tree import Tree, allocate, subtree

__all__ = ["SearchConfig", "SearchOutput", "Tree", "allocate", "masked_softmax", "search", "subtree"]
