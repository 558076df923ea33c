"""What the page shows beside the game: an agent's search of a position, and PDN replays.

Both answer with plain dicts for the JSON API, and both get every rule from
the engine: the search's root actions are mapped to the full moves they begin,
and a PDN file is replayed by ``stapel_rl.eval.pdn.read_games``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from stapel_rl.env import engine, expand_full_moves, take
from stapel_rl.env.notation import move_text
from stapel_rl.env.variants import get_variant
from stapel_rl.eval.agents import Agent
from stapel_rl.eval.pdn import read_games, split_games
from stapel_rl.mcts import SearchConfig, search
from stapel_rl.web.games import COLOURS, board, squares_of

#: Most root moves an analysis lists (the page draws an arrow for each).
MAX_TOP = 20
#: A PDN tag line, ``[White "random"]`` (as stapel_rl.eval.pdn reads them).


class AnalysisError(ValueError):
    """A position or agent that cannot be analysed; the message says why."""


def analyse(agent: Agent, fen: str, variant: str, simulations: int, top: int = 5, seed: int = 0) -> dict:
    """Search ``fen`` with ``agent``'s network and report the root: value and the most visited moves.

    Each move is a root action of the search: the whole full move when only
    one begins with it (``path`` all its squares), else its first leap, with
    ``continuations`` the number of full moves that begin so. ``q`` is the
    mean value of the move's visits from the side to move's view (None when
    unvisited), ``share`` its part of all root visits.
    """
    evaluator = getattr(agent, "evaluator", None)
    if evaluator is None:
        raise AnalysisError(
            f"agent {agent.name!r} has no network to search with: analysis needs an mcts:NAME or policy:NAME agent"
        )
    try:
        rules = get_variant(variant)
    except ValueError as problem:
        raise AnalysisError(str(problem)) from None
    try:
        state = engine.from_fens([fen], rules)
    except ValueError as problem:
        raise AnalysisError(f"malformed FEN: {problem}") from None
    if bool(state.done[0]):
        raise AnalysisError("the game is over in this position: nothing to analyse")
    if not 1 <= top <= MAX_TOP:
        raise AnalysisError(f"top must be between 1 and {MAX_TOP}, got {top}")
    base = getattr(agent, "config", None) or SearchConfig()
    # The agent's own search without its exploration noise, at the requested size.
    config = dataclasses.replace(base, num_simulations=simulations, dirichlet_fraction=0.0, temperature=0.0)
    out = search(state, evaluator, config, np.random.default_rng(seed))
    visits = out.visits[0].astype(np.int64)
    prior = out.tree.children_prior[0, 0]
    q = out.tree.children_values[0, 0]
    legal = np.flatnonzero(state.legal_action_mask[0])
    order = sorted(legal, key=lambda a: (-visits[a], -prior[a], a))[:top]
    moves = expand_full_moves(state)
    total = max(int(visits.sum()), 1)
    listed = []
    for a in order:
        rows = np.flatnonzero(moves.actions[:, 0] == a)
        path = [int(s) for s in moves.path[rows[0]] if s >= 0]
        if rows.size > 1:
            path = path[:2]
        listed.append(
            {
                "move": move_text(path),
                "path": [s + 1 for s in path],
                "continuations": int(rows.size),
                "action": int(a),
                "visits": int(visits[a]),
                "share": round(int(visits[a]) / total, 4),
                "prior": round(float(prior[a]), 4),
                "q": round(float(q[a]), 4) if visits[a] > 0 else None,
            }
        )
    value = float(out.search_value[0])  # Gumbel: the improved policy's value, not the mean over halving's visits
    mover = int(state.current_player[0])
    return {
        "fen": fen,
        "variant": state.variant.name,
        "agent": agent.name,
        "simulations": simulations,
        "to_move": COLOURS[mover],
        "value": round(value, 4),
        "value_white": round(value if mover == 0 else -value, 4),
        "moves": listed,
    }


def replay(text: str, index: int = 0) -> dict:
    """Game ``index`` of PDN ``text`` replayed by the engine, and the tags of every game of the text.

    ``game.positions[i]`` is the position after ``i`` moves (0: the start),
    with the squares of the move that led to it.
    """
    if not isinstance(text, str) or not text.strip():
        raise AnalysisError("the PDN text is empty")
    games = split_games(text)
    if not games:
        raise AnalysisError("no game found in the PDN text")
    if not 0 <= index < len(games):
        raise AnalysisError(f"no game {index} in the PDN text: it holds games 0 to {len(games) - 1}")
    try:
        [game] = read_games(games[index][1])
    except (ValueError, KeyError) as problem:
        # read_games numbers the one game it was given 1.
        message = str(problem).removeprefix("game 1, ")
        raise AnalysisError(f"cannot read the PDN: game {index + 1}, {message}") from None
    variant = game["tags"].get("Variant", "Stapeldammen I").split()[-1]
    states = engine.from_fens(game["fens"], variant)
    positions = []
    for i, fen in enumerate(game["fens"]):
        one = take(states, [i])
        positions.append(
            {
                "fen": fen,
                "board": board(one),
                "to_move": COLOURS[int(one.current_player[0])],
                "last_move": squares_of(game["moves"][i - 1]) if i else None,
            }
        )
    return {
        "games": [{"tags": tags} for tags, _ in games],
        "index": index,
        "game": {
            "tags": game["tags"],
            "variant": states.variant.name,
            "moves": game["moves"],
            "result": game["result"],
            "positions": positions,
        },
    }
