"""A classical baseline: negamax over full moves on a static evaluation.

Spec ``alphabeta[:DEPTH][:q=N]`` (default depth 2, q=2), e.g. ``alphabeta:4``.

Search
    One node is one position at the start of a turn (or, at the root only, a
    position in the middle of a capture). Its children are the positions after
    each legal *full* move (a whole multi-leap capture is one move), made by
    :func:`~stapel_rl.env.notation.expand_full_moves`. ``depth`` counts full
    moves (plies); at the last ply the children's static values are the leaves.

    Capture extension (a small quiescence search): a leaf whose side to move
    must capture is not judged statically (the capture is forced and about
    to change the material) but searched one more ply, up to ``quiescence``
    extra plies along a line (``q=0`` turns it off). Without it a depth-1
    search happily offers men to the opponent, since a forced capture shows
    as low mobility; with it depth 1 beats random play.

    The values are those of negamax with alpha-beta pruning (the name), but
    they are computed full width, level by level, for a batch of games at
    once: each level is one ``expand_full_moves`` and one evaluation over all
    its nodes, then the values are backed up with a maximum per node. That
    visits more positions than pruning would, in a handful of numpy batches
    instead of a Python call per position: several times faster here, most
    at depth 2 (``tests/reference_alphabeta.py`` keeps the pruning search and
    the tests check that both choose alike). Terminal and truncated children
    are exact and never expanded.

    Called in the middle of a capture the agent searches the remaining
    continuations (``expand_full_moves`` from that state lists them) and
    returns the next leap of the best one; it is called again for each leap.
    When every full move starts with the same action nothing is searched.

Static evaluation, from the view of the side to move (negamax)
    ``material_weight (1.0) * (men in the stacks it controls - men in the
    stacks the opponent controls)``
    ``+ mobility_weight (0.1) * (number of legal actions of the side to move)``
    and in Variant II only
    ``+ points_weight (2.0) * (its back-row points - the opponent's)``
    ``+ advance_weight (1.0) * (sum over its stacks of height * rows come from
    its own back row / 9 - the same for the opponent's stacks)``

    Every man of a controlled stack counts, whatever his colour (he moves and
    captures with the stack). Mobility is the side to move's OWN count of
    legal first steps (``legal_action_mask.sum()``): the opponent's mobility
    would need a second move generation per leaf, so it is left out (material
    stands in for the difference). When the side to move must capture, its
    mask holds only the capture steps, so its mobility is small; the capture
    extension keeps such positions off the leaves. The advance term (points
    still to come) made depth 2 clearly stronger in Variant II.

    Terminal positions are exact: the side to move lost (Variant I, or
    Variant II with fewer points) scores ``-(WIN - ply)``, won scores
    ``WIN - ply``, equal points 0, where ``ply`` is the distance from the
    root in full moves (so quick wins and slow losses are preferred). A game
    truncated at the ply cap scores 0 (it is reported as neither a win nor a
    loss).

Ties among equally good root moves (values within ``TOLERANCE``) are broken
at random with the ``rng`` passed to the agent, one draw per game that has a
choice, in game order.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import TypedDict

import numpy as np

from stapel_rl.env.geometry import NEIGHBOR, ROW
from stapel_rl.env.notation import FullMoves, expand_full_moves
from stapel_rl.env.state import State, take

#: Score of a win on the move; a win ``ply`` full moves away scores ``WIN - ply``.
WIN = 1000.0
#: Values closer than this count as equal (ties, search windows).
TOLERANCE = 1e-6


def evaluate(
    state: State,
    ply: int = 0,
    material_weight: float = 1.0,
    mobility_weight: float = 0.1,
    points_weight: float = 2.0,
    advance_weight: float = 0.0,
) -> np.ndarray:
    """``float [N]`` static value of each position from its side to move's view (module docstring).

    ``ply`` is the positions' distance from the search root; it only shifts
    the exact scores of finished games (``WIN - ply``).
    """
    n = state.batch_size
    player = state.current_player.astype(np.int64)
    rows = np.arange(n)
    top_black = (state.colours & np.uint64(1)).astype(np.int64)
    sign = np.where(top_black == player[:, None], 1, -1)
    material = (state.height.astype(np.int64) * sign).sum(axis=1)
    mobility = state.legal_action_mask.sum(axis=1)
    value = material_weight * material + mobility_weight * mobility
    points_diff = state.points[rows, player].astype(np.int64) - state.points[rows, 1 - player]
    if state.variant.points_decide:
        value = value + points_weight * points_diff
        if advance_weight:
            # Rows each stack has come from its own back row, as a fraction of the 9 to go.
            progress = np.where(player[:, None] == 0, 9 - ROW, ROW) / 9.0
            progress = np.where(sign > 0, progress, 1.0 - progress)
            advance = (state.height.astype(np.int64) * sign * progress).sum(axis=1)
            value = value + advance_weight * advance
        outcome = np.sign(points_diff)  # points decide when the side to move has no move
    else:
        outcome = np.full(n, -1)  # the side to move has no move and loses
    value = np.where(state.terminated, outcome * (WIN - ply), value)
    value = np.where(state.truncated & ~state.terminated, 0.0, value)
    return value.astype(np.float64)


#: Square leapt over by each action id (-1 off the board; such actions are never legal).
_OVER = NEIGHBOR.reshape(-1)


def must_capture(state: State) -> np.ndarray:
    """``bool [N]`` the side to move has a capture (captures are mandatory, so it must take)."""
    occupied_over = np.take(state.height, np.where(_OVER >= 0, _OVER, 0), axis=1) > 0
    return np.any(state.legal_action_mask & occupied_over, axis=1)


@dataclasses.dataclass
class AlphaBetaAgent:
    """Negamax to ``depth`` full moves with the static evaluation above, for many games at once.

    Attributes:
        depth: plies (full moves) searched, at least 1.
        material_weight, mobility_weight, points_weight, advance_weight:
            evaluation weights (module docstring; the last two Variant II only).
        quiescence: extra plies searched along a line while the side to move
            at a leaf must capture (0: none).
        games_per_batch: games searched together; deeper searches take fewer
            (``None``: 64 at depth 1-2, 8 at depth 3, 1 deeper) to bound memory.
        nodes: positions expanded by the last call (diagnostics).
    """

    depth: int = 2
    material_weight: float = 1.0
    mobility_weight: float = 0.1
    points_weight: float = 2.0
    advance_weight: float = 1.0
    quiescence: int = 2
    games_per_batch: "int | None" = None
    name: str = "alphabeta"
    nodes: int = dataclasses.field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        for field, least in (("depth", 1), ("quiescence", 0)):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
                raise ValueError(f"alpha-beta {field} must be an integer >= {least}, got {value!r}")
        self.depth, self.quiescence = int(self.depth), int(self.quiescence)

    def __call__(self, state: State, rng: np.random.Generator) -> np.ndarray:
        """The first action of the best full move of every live game; ties drawn with ``rng``, game by game."""
        actions = np.zeros(state.batch_size, np.int64)
        live = np.flatnonzero(~state.done)
        chunk = self.games_per_batch or (64 if self.depth <= 2 else 8 if self.depth == 3 else 1)
        self.nodes = 0
        for start in range(0, live.size, chunk):
            games = live[start : start + chunk]
            moves, values = self.root_values(take(state, games))
            bounds = np.searchsorted(moves.parent, np.arange(games.size + 1))
            for j, g in enumerate(games):
                first = moves.actions[bounds[j] : bounds[j + 1], 0]
                if (first == first[0]).all():  # one choice of next step: nothing to decide
                    actions[g] = first[0]
                    continue
                mine = values[bounds[j] : bounds[j + 1]]
                ties = np.flatnonzero(mine > mine.max() - TOLERANCE)
                actions[g] = first[rng.choice(ties)]
        return actions

    # -- search -----------------------------------------------------------------

    def evaluate(self, state: State, ply: int = 0) -> np.ndarray:
        """Static values of a batch of positions, side to move's view."""
        return evaluate(state, ply, self.material_weight, self.mobility_weight, self.points_weight, self.advance_weight)

    def _searched(self, children: State, depth: int, quiescence: int) -> np.ndarray:
        """``bool [M]`` children searched further: all live ones above the last ply, then
        those whose side to move must capture while extensions are left."""
        live = ~children.done
        if depth > 1:
            return live
        if quiescence <= 0:
            return np.zeros_like(live)
        return live & must_capture(children)

    def root_values(self, roots: State) -> "tuple[FullMoves, np.ndarray]":
        """The full moves of live games ``roots`` (sorted by game) and each one's exact negamax
        value from the mover's view.

        The tree is expanded level by level, one ``expand_full_moves`` call for all
        nodes of a level, then backed up with a maximum per node. Without pruning
        it visits more positions than alpha-beta would, but in a few large numpy
        batches instead of a Python call per position, which is far faster here.
        Roots whose moves all begin with the same action are not searched further.
        """
        levels = []  # per level: (parent of each move, the move's value, bool: searched deeper)
        nodes, depth, quiescence = roots, self.depth, self.quiescence
        root_moves = None
        for ply in itertools.count():
            moves = expand_full_moves(nodes)
            order = np.argsort(moves.parent, kind="stable")
            moves = FullMoves(moves.parent[order], moves.path[order], moves.actions[order], take(moves.state, order))
            self.nodes += nodes.batch_size
            # Every full move ends the turn, so each child has the other side to move.
            scores = -self.evaluate(moves.state, ply + 1)
            deeper = self._searched(moves.state, depth, quiescence)
            if root_moves is None:
                root_moves = moves
                first = moves.actions[:, 0]
                bounds = np.searchsorted(moves.parent, np.arange(roots.batch_size + 1))
                same = np.minimum.reduceat(first, bounds[:-1]) == np.maximum.reduceat(first, bounds[:-1])
                deeper &= ~same[moves.parent]
            levels.append((moves.parent, scores, deeper))
            if not deeper.any():
                break
            nodes = take(moves.state, deeper)
            depth, quiescence = (depth - 1, quiescence) if depth > 1 else (1, quiescence - 1)
        below = None  # the values of the nodes of the level below, each from its own mover's view
        for parent, scores, deeper in reversed(levels):
            values = scores.copy()
            if below is not None:
                values[deeper] = -below
            # Every node is live, so it has at least one move: the segments are never empty.
            below = np.maximum.reduceat(values, np.searchsorted(parent, np.arange(parent[-1] + 1)))
        assert root_moves is not None  # the first level always sets it
        return root_moves, values


class _SpecOptions(TypedDict, total=False):
    """The keyword arguments a spec may give ``AlphaBetaAgent``."""

    depth: int
    quiescence: int


def from_spec_args(args: "list[str]") -> AlphaBetaAgent:
    """The agent of spec ``alphabeta[:DEPTH][:q=N]`` from the parts after ``alphabeta``.

    Raises ``ValueError`` on a depth that is not an integer >= 1, a ``q`` that
    is not an integer >= 0, or any other part.
    """
    usage = "use 'alphabeta[:DEPTH][:q=N]' with DEPTH >= 1 and N >= 0, e.g. 'alphabeta:3'"
    spec = ":".join(["alphabeta", *args])
    options: _SpecOptions = {}
    rest = list(args)
    if rest and "=" not in rest[0]:
        options["depth"] = _integer(rest.pop(0), spec, "the depth", 1, usage)
    for item in rest:
        key, _, value = item.partition("=")
        if key != "q" or "quiescence" in options:
            raise ValueError(f"agent spec {spec!r}: unexpected part {item!r}; {usage}")
        options["quiescence"] = _integer(value, spec, "q", 0, usage)
    return AlphaBetaAgent(**options)


def _integer(text: str, spec: str, what: str, least: int, usage: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"agent spec {spec!r}: {what} {text!r} is not an integer; {usage}") from None
    if value < least:
        raise ValueError(f"agent spec {spec!r}: {what} must be >= {least}, got {value}; {usage}")
    return value
