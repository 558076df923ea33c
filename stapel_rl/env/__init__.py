"""The Stapeldammen engine: batched numpy rules, variants and text formats."""

from stapel_rl.env.engine import check_actions, from_arrays, from_fens, init, step, to_fens
from stapel_rl.env.notation import (
    FullMoves,
    apply_move,
    expand_full_moves,
    game_result,
    initial_fen,
    legal_moves,
    perft,
)
from stapel_rl.env.state import State, concatenate, take
from stapel_rl.env.variants import VARIANT_I, VARIANT_II, VARIANTS, Variant, get_variant

__all__ = [
    "FullMoves",
    "State",
    "VARIANTS",
    "VARIANT_I",
    "VARIANT_II",
    "Variant",
    "apply_move",
    "check_actions",
    "concatenate",
    "expand_full_moves",
    "from_arrays",
    "from_fens",
    "game_result",
    "get_variant",
    "init",
    "initial_fen",
    "legal_moves",
    "perft",
    "step",
    "take",
    "to_fens",
]
