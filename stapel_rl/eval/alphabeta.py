"""A classical baseline: negamax with alpha-beta pruning over full moves.

Spec ``alphabeta[:DEPTH][:q=N]`` (default depth 2, q=2), e.g. ``alphabeta:4``.

Search
    One node is one position at the start of a turn (or, at the root only, a
    position in the middle of a capture). Its children are the positions after
    each legal *full* move (a whole multi-leap capture is one move), made by
    ONE call of :func:`~stapel_rl.env.notation.expand_full_moves`, which is
    batched over the node's moves. ``depth`` counts full moves (plies). The
    children of a node are evaluated statically in one batch as they come; at
    the last ply those values are the leaves.

    Capture extension (a small quiescence search): a leaf whose side to move
    must capture is not judged statically (the capture is forced and about
    to change the material) but searched one more ply, up to ``quiescence``
    extra plies along a line (``q=0`` turns it off). Without it a depth-1
    search happily offers men to the opponent, since a forced capture shows
    as low mobility; with it depth 1 beats random play.

    Move order: captures first, longer ones first (with the maximum capture
    rule all moves of a node are captures of one length or all are plain
    moves, so this rarely decides), then by the static value of the child
    from the mover's view, best first. Terminal and truncated children are
    exact and never expanded.

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

Ties among equally good root moves are broken at random with the ``rng``
passed to the agent: after the first move, each root move is searched with
a window just below the best value so far, so every move as good as the
best gets its exact value.
"""

from __future__ import annotations

import dataclasses
import math

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
    return (state.legal_action_mask & occupied_over).any(axis=1)


def _capture_lengths(node: State, moves: FullMoves) -> np.ndarray:
    """``int [M]`` leaps in each move (0 for a plain move)."""
    first = moves.actions[:, 0]
    over = NEIGHBOR[first // 4, first % 4]
    is_capture = node.height[moves.parent, over] > 0
    return np.where(is_capture, (moves.actions >= 0).sum(axis=1), 0)


@dataclasses.dataclass
class AlphaBetaAgent:
    """Negamax alpha-beta to ``depth`` full moves with the static evaluation above.

    Attributes:
        depth: plies (full moves) searched, at least 1.
        material_weight, mobility_weight, points_weight, advance_weight:
            evaluation weights (module docstring; the last two Variant II only).
        quiescence: extra plies searched along a line while the side to move
            at a leaf must capture (0: none).
        nodes: positions expanded by the last decision (diagnostics).
    """

    depth: int = 2
    material_weight: float = 1.0
    mobility_weight: float = 0.1
    points_weight: float = 2.0
    advance_weight: float = 1.0
    quiescence: int = 2
    name: str = "alphabeta"
    nodes: int = dataclasses.field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        for field, least in (("depth", 1), ("quiescence", 0)):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
                raise ValueError(f"alpha-beta {field} must be an integer >= {least}, got {value!r}")
        self.depth, self.quiescence = int(self.depth), int(self.quiescence)

    def __call__(self, state: State, rng: np.random.Generator) -> np.ndarray:
        actions = np.zeros(state.batch_size, np.int64)
        for g in np.flatnonzero(~state.done):
            actions[g] = self.choose(take(state, [g]), rng)
        return actions

    # -- search -----------------------------------------------------------------

    def evaluate(self, state: State, ply: int = 0) -> np.ndarray:
        """Static values of a batch of positions, side to move's view."""
        return evaluate(
            state, ply, self.material_weight, self.mobility_weight, self.points_weight, self.advance_weight
        )

    def _expand(self, node: State, ply: int) -> "tuple[FullMoves, np.ndarray, np.ndarray]":
        """The node's moves, their values from the node's mover's view (static, or exact if the
        child is over) and the search order."""
        self.nodes += 1
        moves = expand_full_moves(node)
        # Every full move ends the turn, so each child has the other side to move.
        scores = -self.evaluate(moves.state, ply + 1)
        order = np.lexsort((-scores, -_capture_lengths(node, moves)))
        return moves, scores, order

    def _searched(self, children: State, depth: int, quiescence: int) -> np.ndarray:
        """``bool [M]`` children searched further: all live ones above the last ply, then
        those whose side to move must capture while extensions are left."""
        live = ~children.done
        if depth > 1:
            return live
        if quiescence <= 0:
            return np.zeros_like(live)
        return live & must_capture(children)

    def _negamax(self, node: State, depth: int, alpha: float, beta: float, ply: int, quiescence: int) -> float:
        """Value of a live node (side to move's view), fail-soft: exact inside (alpha, beta)."""
        moves, scores, order = self._expand(node, ply)
        children = moves.state
        deeper = self._searched(children, depth, quiescence)
        if not deeper.any():
            return float(scores.max())
        next_depth, next_q = (depth - 1, quiescence) if depth > 1 else (1, quiescence - 1)
        best = -math.inf
        for i in order:
            if not deeper[i]:
                value = scores[i]
            else:
                value = -self._negamax(
                    take(children, [i]), next_depth, -beta, -max(alpha, best), ply + 1, next_q
                )
            if value > best:
                best = value
                if best >= beta:
                    break
        return float(best)

    def choose(self, state: State, rng: np.random.Generator) -> int:
        """First action of the best full move of one live game (``state`` of batch size 1)."""
        self.nodes = 0
        moves, scores, order = self._expand(state, 0)
        first = moves.actions[:, 0]
        if (first == first[0]).all():  # one choice of next step: nothing to search
            return int(first[0])
        children = moves.state
        deeper = self._searched(children, self.depth, self.quiescence)
        next_depth, next_q = (self.depth - 1, self.quiescence) if self.depth > 1 else (1, self.quiescence - 1)
        values = np.full(first.size, -math.inf)
        best = -math.inf
        for i in order:
            if not deeper[i]:
                value = scores[i]
            else:
                # A window just below the best so far: a move as good as it comes back exact.
                value = -self._negamax(take(children, [i]), next_depth, -math.inf, -(best - TOLERANCE), 1, next_q)
            values[i] = value
            best = max(best, value)
        ties = np.flatnonzero(values > best - TOLERANCE)
        return int(first[rng.choice(ties)])


def from_spec_args(args: "list[str]") -> AlphaBetaAgent:
    """The agent of spec ``alphabeta[:DEPTH][:q=N]`` from the parts after ``alphabeta``.

    Raises ``ValueError`` on a depth that is not an integer >= 1, a ``q`` that
    is not an integer >= 0, or any other part.
    """
    usage = "use 'alphabeta[:DEPTH][:q=N]' with DEPTH >= 1 and N >= 0, e.g. 'alphabeta:3'"
    spec = ":".join(["alphabeta", *args])
    options: "dict[str, int]" = {}
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
