"""Static evaluation: a dot product of integer weights with features that know stacking checkers.

Every feature is from the side to move's view and, except ``to_move``, a
difference "mine minus the opponent's", so a position's value for one side is
minus its value for the other (what negamax assumes). Weights are data: one
JSON file per variant beside this module (``weights_I.json``,
``weights_II.json``), in centi-men (100 = one man controlled), rounded to
integers when loaded. ``features`` gives the raw vector for fitting.

The search does not call ``features_into``: every feature but mobility and
blocked is a sum over squares of a term of that square's stack alone, so it
keeps the weighted sum of those terms (``square_value``) up to date as moves
are made, and counts the other two from the occupancy bitboards at a leaf
(``evaluate_incremental``); both give exactly ``evaluate``'s value.

Features
    material        men in the stacks controlled (every man of a stack moves and captures with it)
    stacks          stacks controlled (more pieces to move and to capture with)
    captives        enemy men under own tops minus own men under enemy tops (prisoners)
    rescue          own men directly under an enemy top: one capture of that stack frees them
    mobility        plain moves (Variant I: who cannot move loses)
    blocked         controlled stacks without a plain move, not counting those on the scoring row
    advancement     rows advanced from the own back row, summed over controlled stacks (tempo)
    back_guard      controlled stacks still on the own back row
    points          Variant II points: men in controlled stacks on the opponent's back row
    race            rows advanced times stack height, stacks not yet scoring (the points to come)
    to_move         1: the value of having the move
"""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np
from numba import njit

from stapel_rl.classical.board import ALL_SQUARES, FORWARD, NEIGHBOR8, ROW8, SCORING_ROW, plain_sources, popcount

FEATURES = (
    "material",
    "stacks",
    "captives",
    "rescue",
    "mobility",
    "blocked",
    "advancement",
    "back_guard",
    "points",
    "race",
    "to_move",
)
NUM_FEATURES = len(FEATURES)
_ONE = np.uint64(1)
_WEIGHTS_DIR = pathlib.Path(__file__).resolve().parent
#: ADVANCE[owner, square]: rows a stack of that owner there has come from its own back row.
ADVANCE = np.stack([9 - ROW8, ROW8]).astype(np.int64)


@njit(cache=True, nogil=True)
def features_into(h: np.ndarray, c: np.ndarray, side: int, out: np.ndarray) -> None:
    """Write the feature vector (``FEATURES`` order) of a position into ``out`` (``int64 [NUM_FEATURES]``)."""
    # One pass with scalar sums (kept in registers, unlike array elements): this runs at every leaf.
    material = stacks = captives = rescue = mobility = blocked = advancement = guard = score = race = 0
    for s in range(50):
        height = np.int64(h[s])
        if height == 0:
            continue
        col = c[s]
        owner = int(col & _ONE)
        sign = 1 if owner == side else -1
        black_men = popcount(col)
        own_colour = height - black_men if owner == 0 else black_men  # men of the owner's colour
        advanced = 9 - np.int64(ROW8[s]) if owner == 0 else np.int64(ROW8[s])
        material += sign * height
        stacks += sign
        captives += sign * (height - own_colour)
        if height > 1 and int((col >> _ONE) & _ONE) != owner:
            rescue -= sign  # the man below the top is the other side's: he is theirs to rescue
        advancement += sign * advanced
        if advanced == 0:
            guard += sign
        elif advanced == 9:
            score += sign * height  # on the scoring row: no plain move, but not stuck either
            continue
        race += sign * advanced * height
        steps = 0
        for k in range(2):
            q = NEIGHBOR8[s, FORWARD[owner, k]]
            if q >= 0 and h[q] == 0:
                steps += 1
        mobility += sign * steps
        if steps == 0:
            blocked += sign
    out[0] = material
    out[1] = stacks
    out[2] = captives
    out[3] = rescue
    out[4] = mobility
    out[5] = blocked
    out[6] = advancement
    out[7] = guard
    out[8] = score
    out[9] = race
    out[10] = 1


@njit(cache=True, nogil=True)
def evaluate(h: np.ndarray, c: np.ndarray, side: int, weights: np.ndarray, scratch: np.ndarray) -> int:
    """``dot(weights, features)`` of a position, side to move's view (centi-men)."""
    features_into(h, c, side, scratch)
    total = 0
    for i in range(NUM_FEATURES):
        total += weights[i] * scratch[i]
    return total


@njit(cache=True, nogil=True, inline="always")
def square_value(sq: int, height: int, col: np.uint64, weights: np.ndarray) -> int:
    """The weighted per-square features of one stack, White's view (0 for a vacant square)."""
    if height == 0:
        return 0
    height = np.int64(height)
    owner = int(col & _ONE)
    black_men = popcount(col)
    own_colour = height - black_men if owner == 0 else black_men
    advanced = ADVANCE[owner, sq]
    value = weights[0] * height + weights[1] + weights[2] * (height - own_colour) + weights[6] * advanced
    if height > 1 and int((col >> _ONE) & _ONE) != owner:
        value -= weights[3]
    if advanced == 0:
        value += weights[7]
    elif advanced == 9:
        value += weights[8] * height
    else:
        value += weights[9] * advanced * height
    return value if owner == 0 else -value


@njit(cache=True, nogil=True)
def square_sum(h: np.ndarray, c: np.ndarray, weights: np.ndarray) -> int:
    """``square_value`` summed over the board (what the search then keeps up to date)."""
    total = 0
    for s in range(50):
        total += square_value(s, h[s], c[s], weights)
    return total


@njit(cache=True, nogil=True, inline="always")
def mobility_blocked(white: np.uint64, black: np.uint64) -> "tuple[int, int]":
    """The ``mobility`` and ``blocked`` features, White's view, from the occupancy bitboards."""
    empty = ALL_SQUARES & ~(white | black)
    wl, wr = plain_sources(white, empty, 0)
    bl, br = plain_sources(black, empty, 1)
    # Signed counts: differences of unsigned popcounts would wrap (and mixed with int64, turn float).
    mobility = np.int64(popcount(wl)) + np.int64(popcount(wr)) - np.int64(popcount(bl)) - np.int64(popcount(br))
    blocked = np.int64(popcount(white & ~SCORING_ROW[0] & ~(wl | wr))) - np.int64(
        popcount(black & ~SCORING_ROW[1] & ~(bl | br))
    )
    return mobility, blocked


@njit(cache=True, nogil=True, inline="always")
def evaluate_incremental(side: int, white: np.uint64, black: np.uint64, squares: int, weights: np.ndarray) -> int:
    """``evaluate`` from the occupancy bitboards and ``square_sum`` of the position."""
    mobility, blocked = mobility_blocked(white, black)
    value = squares + weights[4] * mobility + weights[5] * blocked
    return (value if side == 0 else -value) + weights[10]


def features(h: np.ndarray, c: np.ndarray, side: int) -> np.ndarray:
    """``int64 [NUM_FEATURES]`` feature vector of a position (``FEATURES`` order), side to move's view."""
    out = np.zeros(NUM_FEATURES, dtype=np.int64)
    features_into(np.asarray(h, dtype=np.uint8), np.asarray(c, dtype=np.uint64), int(side), out)
    return out


def weights_path(variant_name: str) -> pathlib.Path:
    return _WEIGHTS_DIR / f"weights_{variant_name}.json"


def load_weights(variant_name: str, path: "str | pathlib.Path | None" = None) -> np.ndarray:
    """``int64 [NUM_FEATURES]`` weights of a variant from its JSON file (or ``path``).

    The file is ``{"metadata": {...}, "weights": {feature: centi-men, ...}}``;
    features it does not name weigh 0, names it has that are no feature raise.
    """
    path = pathlib.Path(path) if path is not None else weights_path(variant_name)
    data = json.loads(path.read_text())
    named = data["weights"]
    unknown = sorted(set(named) - set(FEATURES))
    if unknown:
        raise ValueError(f"{path}: unknown features {unknown}; known: {list(FEATURES)}")
    return np.array([int(round(float(named.get(f, 0)))) for f in FEATURES], dtype=np.int64)


def read_weights(path: "str | pathlib.Path") -> "tuple[np.ndarray, dict]":
    """``(int64 [len(FEATURES)] weights, metadata)`` of a weights JSON file, strictly checked.

    Unlike ``load_weights`` (which lets unnamed features weigh 0)
    a file named by hand must name every feature: a forgotten one would
    silently switch a term off. Raises ``ValueError`` saying what is wrong.
    """
    path = pathlib.Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ValueError(f"weights file {str(path)!r} does not exist") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as err:
        raise ValueError(f"weights file {str(path)!r} cannot be read: {err}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"weights file {str(path)!r} is not valid JSON: {err}") from None
    expected = '{"metadata": {...}, "weights": {feature: number, ...}}'
    if not isinstance(data, dict) or not isinstance(data.get("weights"), dict):
        raise ValueError(f'weights file {str(path)!r} has no "weights" object; expected {expected}')
    metadata = data.get("metadata", {})
    if not isinstance(metadata, dict):
        raise ValueError(f'weights file {str(path)!r}: "metadata" must be an object; expected {expected}')
    named = data["weights"]
    unknown = sorted(set(named) - set(FEATURES))
    missing = [f for f in FEATURES if f not in named]
    if unknown or missing:
        problems = ([f"unknown features {unknown}"] if unknown else []) + (
            [f"missing features {missing}"] if missing else []
        )
        raise ValueError(f"weights file {str(path)!r}: {'; '.join(problems)}; the features are {list(FEATURES)}")
    values = []
    for f in FEATURES:
        value = named[f]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"weights file {str(path)!r}: weight of {f!r} must be a finite number, got {value!r}")
        values.append(int(round(value)))
    return np.array(values, dtype=np.int64), metadata
