"""Game records in PDN: tags, numbered full moves with full capture paths, result.

    [Event "self-play"]
    [Variant "Stapeldammen I"]
    [Result "2-0"]
    1. 32-28 19-23 2. 28x19 14x23 ... 2-0

Results follow draughts PDN: "2-0" White won, "0-2" Black won, "1-1" draw,
"*" unfinished or truncated at the ply cap. A ``FEN`` tag (RULES.md position
text) records a non-standard start. The reader replays every move through the
engine and rejects an illegal one with its move number.
"""

from __future__ import annotations

import datetime
import re

import numpy as np

from stapel_rl.env import engine, expand_full_moves, take
from stapel_rl.env.geometry import JUMP, NEIGHBOR
from stapel_rl.env.notation import find_move, move_text
from stapel_rl.env.state import State
from stapel_rl.env.variants import Variant, get_variant

RESULTS = {1: "2-0", -1: "0-2", 0: "1-1"}
_TAG = re.compile(r'^\[(\w+)\s+"(.*)"\]\s*$')


def full_move_texts(start: State, actions: "list[int]") -> "tuple[list[str], State]":
    """Group a game's actions (one game, batch 1) into full-move texts; also the final state."""
    state = start
    texts: list[str] = []
    path: list[int] = []
    for a in actions:
        src, d = a // 4, a % 4
        state = engine.step(state, np.array([a]))
        path = path or [src]
        path.append(int(JUMP[src, d] if state.last_was_leap[0] else NEIGHBOR[src, d]))
        if state.capturing[0] < 0:
            texts.append(move_text(path))
            path = []
    return texts, state


def write_game(
    variant: "Variant | str",
    actions: "list[int]",
    tags: "dict[str, str] | None" = None,
    fen: "str | None" = None,
) -> str:
    """PDN text of one game given as board actions from the start (or from ``fen``)."""
    variant = get_variant(variant)
    start = engine.from_fens([fen or variant.setup], variant)
    texts, final = full_move_texts(start, actions)
    result = RESULTS[int(final.rewards[0, 0])] if final.terminated[0] else "*"
    header = {
        "Event": "stapel-rl game",
        "Date": datetime.date.today().strftime("%Y.%m.%d"),
        "White": "?",
        "Black": "?",
        "Result": result,
        "Variant": f"Stapeldammen {variant.name}",
    }
    header.update(tags or {})
    header["Result"] = result
    if fen and fen != variant.setup:
        header["FEN"] = fen
    lines = [f'[{k} "{v}"]' for k, v in header.items()]
    first = int(start.current_player[0])
    body = []
    for i, text in enumerate(texts):
        ply = i + first  # White's moves open a numbered pair; a Black first move is "1..."
        if ply % 2 == 0:
            body.append(f"{ply // 2 + 1}.")
        elif i == 0:
            body.append("1...")
        body.append(text)
    body.append(result)
    return "\n".join(lines) + "\n\n" + _wrap(" ".join(body)) + "\n"


def _wrap(text: str, width: int = 78) -> str:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join(lines + [line])


def split_games(text: str) -> "list[tuple[dict[str, str], str]]":
    """The games of PDN ``text``, each as its tags and its own text, not replayed.

    A game is its tag lines and the move lines after them. Replaying every
    game of a tournament's ``games.pdn`` takes seconds; the web board's replay
    view replays only the game shown.
    """
    games: "list[tuple[dict[str, str], str]]" = []
    tags: "dict[str, str]" = {}
    lines: "list[str]" = []
    in_body = False
    for line in text.splitlines():
        tag = _TAG.match(line.strip())
        if tag and in_body:
            games.append((tags, "\n".join(lines)))
            tags, lines, in_body = {}, [], False
        if tag:
            tags[tag.group(1)] = tag.group(2)
        elif line.strip():
            in_body = True
        lines.append(line)
    if in_body:
        games.append((tags, "\n".join(lines)))
    return games


def read_games(text: str) -> "list[dict]":
    """Parse PDN games and replay them: each as ``{"tags", "moves", "fens", "result"}``.

    Raises ``ValueError`` naming the game and move number of a malformed or illegal move.
    """
    games = []
    for number, (tags, game_text) in enumerate(split_games(text), start=1):
        body = [line.strip() for line in game_text.splitlines() if line.strip() and not _TAG.match(line.strip())]
        games.append(_replay({k: v for k, v in tags.items() if k != "End"}, " ".join(body), number))
    return games


def _replay(tags: "dict[str, str]", body: str, number: int) -> dict:
    try:
        # The last word names the variant ("Stapeldammen II"); an empty tag names none.
        variant = get_variant((tags.get("Variant", "Stapeldammen I").split() or [""])[-1])
        fen = tags.get("FEN", variant.setup)
        state = engine.from_fens([fen], variant)
    except ValueError as error:
        raise ValueError(f"game {number}: {error}") from None
    tokens = [t for t in body.split() if not re.fullmatch(r"\d+\.(\.\.)?", t)]
    result = tokens.pop() if tokens and tokens[-1] in ("2-0", "0-2", "1-1", "*") else "*"
    fens, moves = [fen], []
    for i, token in enumerate(tokens, start=1):
        full = expand_full_moves(state)
        try:
            index = find_move(full, token)
        except ValueError as error:
            raise ValueError(f"game {number}, move {i} ({token!r}): {error}") from None
        state = take(full.state, [index])
        moves.append(full.texts()[index])
        fens.append(engine.to_fens(state)[0])
    return {"tags": tags, "moves": moves, "fens": fens, "result": result}
