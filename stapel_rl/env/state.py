"""The batched game state: a plain dataclass of numpy arrays with a leading batch axis."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from stapel_rl.env.variants import Variant


@dataclasses.dataclass
class State:
    """B games of Stapeldammen. Colour index 0 is White, 1 is Black.

    Stacks are stored per square as a height and a colour bitmask, top man
    first, so that the men a capture moves are one shift away:

    Attributes:
        height: ``uint8 [B, 50]`` number of men on each square (0 = vacant).
        colours: ``uint64 [B, 50]`` colour of each man of the stack, bit ``i``
            for the ``i``-th man from the top: 0 White, 1 Black. Bits at or
            above ``height`` are 0.
        white: ``uint64 [B]`` bitboard (see ``geometry``) of the stacks White
            controls (top man white). Derived from ``height``/``colours`` and
            kept in step with them for speed.
        black: ``uint64 [B]`` the same for Black.
        current_player: ``int8 [B]`` side to move, 0 White, 1 Black. During a
            multi-leap capture it stays with the capturing player.
        capturing: ``int8 [B]`` square index of the stack in the middle of a
            multi-leap capture, -1 when no capture is under way.
        last_leapt: ``int8 [B]`` square index leapt by the previous leap of
            the capture under way (it may not be leapt next), -1 if none.
        ply: ``int32 [B]`` full moves played (a multi-leap capture is one ply).
        last_action: ``int16 [B]`` the previous action id, -1 at the start.
        last_was_leap: ``bool [B]`` whether that action was a leap (a step and
            a leap in the same direction share the action id).
        legal_action_mask: ``bool [B, 200]`` the legal actions (first steps of
            the legal full moves, maximum capture applied), all False once
            the game is over.
        terminated: ``bool [B]`` the side to move had no legal move.
        truncated: ``bool [B]`` the game reached the variant's ply cap.
        rewards: ``float32 [B, 2]`` per colour, non-zero only on the step that
            ends a game: +1 win, -1 loss, 0 draw or truncation.
        points: ``int16 [B, 2]`` Variant II points per colour now: men in the
            stacks each controls on the opponent's back row (computed in
            both variants; only Variant II scores them).
        variant: the rules these games follow (shared by the whole batch).
    """

    height: np.ndarray
    colours: np.ndarray
    white: np.ndarray
    black: np.ndarray
    current_player: np.ndarray
    capturing: np.ndarray
    last_leapt: np.ndarray
    ply: np.ndarray
    last_action: np.ndarray
    last_was_leap: np.ndarray
    legal_action_mask: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    rewards: np.ndarray
    points: np.ndarray
    variant: Variant

    @property
    def batch_size(self) -> int:
        return int(self.height.shape[0])

    @property
    def done(self) -> np.ndarray:
        """``bool [B]`` terminated or truncated."""
        return self.terminated | self.truncated

    def __repr__(self) -> str:
        return (
            f"State(batch_size={self.batch_size}, variant={self.variant.name!r}, "
            f"live={int((~self.done).sum())}, max_ply={int(self.ply.max(initial=0))})"
        )

    def replace(self, **changes: Any) -> "State":
        return dataclasses.replace(self, **changes)


ARRAY_FIELDS = tuple(f.name for f in dataclasses.fields(State) if f.name != "variant")


def take(state: State, index: "np.ndarray | slice | Sequence[int]") -> State:
    """The games ``index`` (an index array, slice or boolean mask) as a new state."""
    return State(**{name: getattr(state, name)[index] for name in ARRAY_FIELDS}, variant=state.variant)


def put(state: State, index: np.ndarray, games: State, copy: bool = True) -> State:
    """A copy of ``state`` with the games ``index`` (``int [G]``) replaced by ``games`` (batch ``G``).

    ``copy=False`` replaces them in ``state`` itself and returns it.
    """
    fields = {}
    for name in ARRAY_FIELDS:
        array = getattr(state, name).copy() if copy else getattr(state, name)
        array[index] = getattr(games, name)
        fields[name] = array
    return State(**fields, variant=state.variant) if copy else state


def concatenate(states: "list[State]") -> State:
    """Games of several states (of one variant) as one batch."""
    variant = states[0].variant
    if any(s.variant != variant for s in states):
        raise ValueError("cannot concatenate states of different variants")
    return State(**{n: np.concatenate([getattr(s, n) for s in states]) for n in ARRAY_FIELDS}, variant=variant)
