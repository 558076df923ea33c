"""Openings of matches: each variant's shipped suite, or random ones.

A match or tournament plays each opening twice, colours swapped. By default
the openings come from the variant's **suite** (``openings/variant_<V>.txt``
in this package: distinct positions a few plies from the start that the
classical engine scores near equal, made by ``scripts/make_openings.py``), so
every match of a variant starts from the same positions and results compare
across matches. ``random`` openings (``plies`` random actions from the start,
a capture under way finished at random) stay available.
"""

from __future__ import annotations

import functools
import pathlib

import numpy as np

from stapel_rl.env import engine, to_fens
from stapel_rl.env.sampling import random_legal_actions
from stapel_rl.env.state import State, put, take
from stapel_rl.env.variants import Variant, get_variant

SUITE_DIR = pathlib.Path(__file__).resolve().parent / "openings"
#: Where openings can come from (``--openings`` of the match commands).
SOURCES = ("suite", "random")


def suite_path(variant: "Variant | str") -> pathlib.Path:
    return SUITE_DIR / f"variant_{get_variant(variant).name}.txt"


@functools.cache
def suite(variant: "Variant | str") -> "tuple[str, ...]":
    """The variant's opening suite: position texts, in the file's order."""
    lines = suite_path(variant).read_text().splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def random_opening_states(variant: "Variant | str", count: int, plies: int, rng: np.random.Generator) -> State:
    """``count`` positions after ``plies`` random actions (games that ended restart), each at the start of a turn."""
    state = engine.init(get_variant(variant), count)
    for _ in range(plies):
        state = engine.step(state, random_legal_actions(state.legal_action_mask, rng))
        state = engine.reset_games(state, state.done)
    # Finish any capture under way so that every opening is a position text. Only those games move:
    # stepping the whole batch would play on every game while any one is capturing, and in a large
    # batch one nearly always is.
    capturing = np.flatnonzero(state.capturing >= 0)
    while capturing.size:
        games = take(state, capturing)
        state = put(state, capturing, engine.step(games, random_legal_actions(games.legal_action_mask, rng)))
        capturing = np.flatnonzero(state.capturing >= 0)
    return engine.reset_games(state, state.done)


def random_openings(variant: "Variant | str", count: int, plies: int, seed: int) -> "list[str]":
    """``count`` positions (position text) after ``plies`` random actions, none finished."""
    return to_fens(random_opening_states(variant, count, plies, np.random.default_rng(seed)))


def opening_fens(
    variant: "Variant | str", count: int, source: str = "suite", plies: int = 4, seed: int = 0, offset: int = 0
) -> "list[str]":
    """``count`` openings: the suite's from position ``offset`` on (wrapping round), or random ones.

    ``plies`` and ``seed`` make the random openings; the suite ignores them.
    """
    if source == "suite":
        positions = suite(variant)
        return [positions[(offset + i) % len(positions)] for i in range(count)]
    if source == "random":
        return random_openings(variant, count, plies, seed)
    raise ValueError(f"unknown opening source {source!r}: expected one of {', '.join(SOURCES)}")
