"""A compiled (numba) alpha-beta searcher for Stapeldammen: agent spec ``classical``.

Importing this package imports numpy, numba and ``stapel_rl.env`` only.
"""

from stapel_rl.classical.evaluation import FEATURES, features, load_weights
from stapel_rl.classical.movegen import perft
from stapel_rl.classical.position import Position, legal_move_texts, row_text, step_actions
from stapel_rl.classical.searcher import Searcher, SearchInfo, SearchResult

__all__ = [
    "FEATURES",
    "Position",
    "SearchInfo",
    "SearchResult",
    "Searcher",
    "features",
    "legal_move_texts",
    "load_weights",
    "perft",
    "row_text",
    "step_actions",
]
