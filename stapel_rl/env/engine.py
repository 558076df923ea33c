"""The batched Stapeldammen engine: ``init`` and ``step`` over B games at once.

One action is one plain move or one leap (RULES.md, action encoding): action
``4 * sq + d`` moves the stack on square index ``sq`` in direction ``d``. A
multi-leap capture is several actions of the same player; ``current_player``
changes only when the capture is complete.

Legal moves come from bitboards (``geometry``): for all games at once, a few
shifts give the stacks that can step or leap in each direction. Games with a
capture then go through the maximum-capture path search (``captures``).
"""

from __future__ import annotations

import functools

import numpy as np

from stapel_rl.env import fen as fen_text
from stapel_rl.env.captures import max_capture_mask
from stapel_rl.env.geometry import (
    ACTION_BIT_COLUMN,
    BACK_ROW,
    FORWARD_DIRECTIONS,
    JUMP,
    NEIGHBOR,
    NUM_ACTIONS,
    NUM_DIRECTIONS,
    SQUARE_MASK,
    VALID,
    shift_all,
    unshift_all,
)
from stapel_rl.env.state import ARRAY_FIELDS, State, put, take
from stapel_rl.env.variants import Variant, get_variant

_ZERO = np.uint64(0)
_ONE = np.uint64(1)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
#: By colour, all bits in the columns of its forward directions ([4] per colour), none in the others.
FORWARD_COLUMNS = np.array(
    [[_ALL if d in FORWARD_DIRECTIONS[c] else _ZERO for d in range(NUM_DIRECTIONS)] for c in (0, 1)], dtype=np.uint64
)


def bitboards(height: np.ndarray, colours: np.ndarray) -> "tuple[np.ndarray, np.ndarray]":
    """White- and Black-controlled bitboards ``uint64 [B]`` from the stacks."""
    occupied = height > 0
    top_black = (colours & _ONE).astype(bool)
    white = np.bitwise_or.reduce(np.where(occupied & ~top_black, SQUARE_MASK, _ZERO), axis=1)
    black = np.bitwise_or.reduce(np.where(occupied & top_black, SQUARE_MASK, _ZERO), axis=1)
    return white.astype(np.uint64), black.astype(np.uint64)


#: The opponent's back row of each colour, White's target squares first: ``[10]``.
_TARGET_SQUARES = np.concatenate((BACK_ROW[1], BACK_ROW[0]))
#: The colour (0 White, 1 Black) that scores on each of those squares.
_SCORER = np.repeat(np.arange(2, dtype=np.uint64), 5)


def _points(height: np.ndarray, colours: np.ndarray) -> np.ndarray:
    """Variant II points ``int16 [B, 2]``: men in stacks a colour controls on the opponent's back row."""
    h = height[:, _TARGET_SQUARES]
    scoring = (colours[:, _TARGET_SQUARES] & _ONE) == _SCORER  # an empty square's colour bits are 0
    return np.where(scoring, h, 0).reshape(-1, 2, 5).sum(axis=2, dtype=np.int16)


def _masks_to_actions(boards: np.ndarray) -> np.ndarray:
    """``uint64 [B, 4]`` per-direction bitboards of movable stacks to ``bool [B, 200]``."""
    bits = np.unpackbits(np.ascontiguousarray(boards).view(np.uint8), axis=1, bitorder="little")
    # np.take keeps the result C-contiguous (bits[:, cols] would not be).
    return np.take(bits, ACTION_BIT_COLUMN, axis=1).view(bool)


def count_legal(mask: np.ndarray) -> np.ndarray:
    """``int32 [B]`` legal actions in each row of a ``bool [B, 200]`` mask.

    A row's 200 bools are 25 words of 8 bytes, each byte 0 or 1: counting
    the words' set bits is about half the time of summing the bools.
    """
    if not mask.flags.c_contiguous:
        return mask.sum(axis=1, dtype=np.int32)
    return np.add.reduce(np.bitwise_count(mask.view(np.uint64)), axis=1, dtype=np.int32)


def _legal_actions(
    height: np.ndarray,
    colours: np.ndarray,
    white: np.ndarray,
    black: np.ndarray,
    player: np.ndarray,
    capturing: np.ndarray,
    last_leapt: np.ndarray,
) -> np.ndarray:
    """``bool [B, 200]`` legal actions: captures (maximum rule) before plain moves."""
    own = np.where(player == 1, black, white)
    opp = np.where(player == 1, white, black)
    empty = VALID & ~(white | black)
    in_capture = capturing >= 0
    movers = np.where(in_capture, SQUARE_MASK[capturing], own)
    leapable = opp & ~np.where(last_leapt >= 0, SQUARE_MASK[last_leapt], _ZERO)

    # All four directions at once, one column each ([B, 4]).
    next_empty = unshift_all(empty)  # the squares whose next square in the direction is vacant
    boards = movers[:, None] & unshift_all(leapable[:, None] & next_empty)  # stacks that can leap
    leap_sources = np.bitwise_or.reduce(boards, axis=1)
    has_capture = leap_sources != _ZERO

    # Most captures are single leaps. A second leap needs an opponent stack next
    # to the landing square with a vacant square beyond: without one for any
    # first leap, the first leaps are the mask. (The start square, vacated, is
    # two leaps away only back over the stack just leapt, which is forbidden;
    # leapt squares never matter: landing squares keep the start square's row
    # and column parity, leapt squares have the other.)
    leap_from = np.bitwise_or.reduce(unshift_all(opp[:, None] & next_empty), axis=1)
    may_continue = ((shift_all(shift_all(boards)) & leap_from[:, None]) != _ZERO).any(axis=1)

    steppers = np.where(has_capture, _ZERO, own)
    # The maximum rule chooses among first leaps that may continue: with only one first leap, or
    # none that continues (also in the middle of a capture), the first leaps are the mask.
    first_leaps = np.bitwise_count(boards).sum(axis=1, dtype=np.int16)
    long_capture = has_capture & may_continue & (first_leaps > 1)
    plain = steppers[:, None] & np.where(player[:, None] == 1, FORWARD_COLUMNS[1], FORWARD_COLUMNS[0]) & next_empty
    boards = np.where(has_capture[:, None], boards, plain)
    boards[long_capture] = _ZERO
    mask = _masks_to_actions(boards)

    games = np.flatnonzero(long_capture)
    if games.size:
        mask[games], _ = max_capture_mask(
            height[games],
            colours[games],
            player[games],
            leap_sources[games],
            last_leapt[games],
            opp[games],
            empty[games],
        )
    return mask


def _finish(state: State, ended_turn: np.ndarray) -> State:
    """Recompute the mask, points, results and truncation after stones moved."""
    s = state
    s.legal_action_mask = _legal_actions(
        s.height, s.colours, s.white, s.black, s.current_player, s.capturing, s.last_leapt
    )
    s.points = _points(s.height, s.colours)
    over = s.terminated | s.truncated
    no_move = ~s.legal_action_mask.any(axis=1) & ~over
    s.terminated = s.terminated | no_move
    s.truncated = s.truncated | (ended_turn & ~s.terminated & (s.ply >= s.variant.ply_cap))
    if s.variant.points_decide:
        white_score = np.sign(s.points[:, 0].astype(np.int64) - s.points[:, 1]).astype(np.float32)
    else:
        # The side to move has no move and loses.
        white_score = np.where(s.current_player == 0, -1.0, 1.0).astype(np.float32)
    white_score = np.where(no_move, white_score, np.float32(0))
    s.rewards = np.empty((s.batch_size, 2), np.float32)
    s.rewards[:, 0], s.rewards[:, 1] = white_score, -white_score
    s.legal_action_mask[s.terminated | s.truncated] = False
    return s


def from_arrays(height: np.ndarray, colours: np.ndarray, player: np.ndarray, variant: "Variant | str") -> State:
    """A state from stacks ``height [B, 50]``, ``colours [B, 50]`` and side to move ``[B]``."""
    variant = get_variant(variant)
    height = np.ascontiguousarray(height, dtype=np.uint8)
    colours = np.ascontiguousarray(colours, dtype=np.uint64)
    b = height.shape[0]
    white, black = bitboards(height, colours)
    state = State(
        height=height,
        colours=colours,
        white=white,
        black=black,
        current_player=np.asarray(player, dtype=np.int8).reshape(b).copy(),
        capturing=np.full(b, -1, dtype=np.int8),
        last_leapt=np.full(b, -1, dtype=np.int8),
        ply=np.zeros(b, dtype=np.int32),
        last_action=np.full(b, -1, dtype=np.int16),
        last_was_leap=np.zeros(b, dtype=bool),
        legal_action_mask=np.zeros((b, NUM_ACTIONS), dtype=bool),
        terminated=np.zeros(b, dtype=bool),
        truncated=np.zeros(b, dtype=bool),
        rewards=np.zeros((b, 2), dtype=np.float32),
        points=np.zeros((b, 2), dtype=np.int16),
        variant=variant,
    )
    return _finish(state, ended_turn=np.zeros(b, dtype=bool))


def from_fens(fens: "list[str] | str", variant: "Variant | str" = "I") -> State:
    """A batch from position texts (RULES.md format); raises ``ValueError`` on malformed text."""
    if isinstance(fens, str):
        fens = [fens]
    parsed = [fen_text.parse_fen(f) for f in fens]
    height = np.array([p[0] for p in parsed], dtype=np.uint8).reshape(len(parsed), 50)
    colours = np.array([p[1] for p in parsed], dtype=np.uint64).reshape(len(parsed), 50)
    player = np.array([p[2] for p in parsed], dtype=np.int8)
    return from_arrays(height, colours, player, variant)


def to_fens(state: State) -> "list[str]":
    """Position texts of all games; a game in the middle of a capture has none and raises."""
    mid = np.flatnonzero(state.capturing >= 0)
    if mid.size:
        raise ValueError(
            f"games {mid.tolist()} are in the middle of a multi-leap capture, which position text cannot express"
        )
    return [
        fen_text.format_fen(h, c, p)
        for h, c, p in zip(state.height.tolist(), state.colours.tolist(), state.current_player.tolist(), strict=True)
    ]


@functools.cache
def _start(variant: Variant) -> State:
    return from_fens([variant.setup], variant)


def init(variant: "Variant | str" = "I", batch_size: int = 1) -> State:
    """``batch_size`` games at the start position of ``variant``."""
    return take(_start(get_variant(variant)), np.zeros(int(batch_size), dtype=np.int64))


#: The fields ``step`` changes in place (``_finish`` makes the others anew).
_STEPPED = (
    "height",
    "colours",
    "white",
    "black",
    "current_player",
    "capturing",
    "last_leapt",
    "ply",
    "last_action",
    "last_was_leap",
)


def check_actions(state: State, actions: np.ndarray) -> None:
    """Raise ``ValueError`` naming the games whose action is not legal (finished games excepted)."""
    actions = np.asarray(actions)
    if actions.shape != (state.batch_size,):
        raise ValueError(f"expected {state.batch_size} actions, got shape {actions.shape}")
    if not np.issubdtype(actions.dtype, np.integer):
        raise ValueError(f"actions must be integers, got dtype {actions.dtype}")
    live = ~state.done
    in_range = (actions >= 0) & (actions < NUM_ACTIONS)
    legal = np.zeros(state.batch_size, dtype=bool)
    legal[in_range] = state.legal_action_mask[np.flatnonzero(in_range), actions[in_range]]
    bad = np.flatnonzero(live & ~legal)
    if bad.size:
        shown = ", ".join(f"game {g}: action {int(actions[g])}" for g in bad[:10])
        more = f" (and {bad.size - 10} more)" if bad.size > 10 else ""
        raise ValueError(f"illegal action(s) in {bad.size} game(s): {shown}{more}")


def step(state: State, actions: np.ndarray, validate: bool = True, in_place: bool = False) -> State:
    """Play one action in every game and return the new state (the input is not changed).

    Games that are already over ignore their action. With ``validate=False``
    (a fast path for internal callers that draw actions from the mask) illegal
    actions are not detected and corrupt the state. ``in_place`` changes
    ``state`` itself instead and returns it: for callers stepping a state
    they just made, whose copy would be wasted.
    """
    actions = np.asarray(actions)
    if validate:
        check_actions(state, actions)
    s = state if in_place else state.replace(**{name: getattr(state, name).copy() for name in _STEPPED})
    live = ~s.done
    g = np.flatnonzero(live) if not live.all() else np.arange(state.batch_size)
    a = actions[g].astype(np.int64)
    src, d = a >> 2, a & 3
    near = NEIGHBOR[src, d]
    is_leap = s.height[g, near] > 0
    dst = np.where(is_leap, JUMP[src, d], near)

    h_src = s.height[g, src]
    c_src = s.colours[g, src]
    lg, over = g[is_leap], near[is_leap]
    captured = s.colours[lg, over] & _ONE
    c_src[is_leap] |= captured << h_src[is_leap].astype(np.uint64)
    s.colours[lg, over] >>= _ONE
    s.height[lg, over] -= 1
    s.height[g, src] = 0
    s.colours[g, src] = 0
    s.height[g, dst] = h_src + is_leap
    s.colours[g, dst] = c_src

    # Bitboards: the moving stack leaves src for dst; a leapt stack changes owner or vanishes.
    player = s.current_player[g]
    src_bit, dst_bit = SQUARE_MASK[src], SQUARE_MASK[dst]
    over_bit = np.where(is_leap, SQUARE_MASK[near], _ZERO)
    over_left = is_leap & (s.height[g, near] > 0)
    over_black = (s.colours[g, near] & _ONE).astype(bool)
    white = s.white[g] & ~(src_bit | over_bit)
    black = s.black[g] & ~(src_bit | over_bit)
    white |= np.where(player == 0, dst_bit, _ZERO) | np.where(over_left & ~over_black, over_bit, _ZERO)
    black |= np.where(player == 1, dst_bit, _ZERO) | np.where(over_left & over_black, over_bit, _ZERO)
    s.white[g], s.black[g] = white, black

    # A leap continues while the capturer can leap again (it then must: it is
    # on a maximum path); otherwise the turn passes.
    opp = np.where(player == 1, white, black)
    empty = VALID & ~(white | black)
    leapable = opp & ~over_bit
    again = ((dst_bit[:, None] & unshift_all(leapable[:, None] & unshift_all(empty))) != _ZERO).any(axis=1)
    again &= is_leap
    s.capturing[g] = np.where(again, dst, -1)
    s.last_leapt[g] = np.where(again, near, -1)
    s.current_player[g] = np.where(again, player, 1 - player)
    s.ply[g] += (~again).astype(np.int32)
    s.last_action[g] = a
    s.last_was_leap[g] = is_leap
    ended_turn = np.zeros(s.batch_size, dtype=bool)
    ended_turn[g] = ~again
    return _finish(s, ended_turn)


def play_forced(
    state: State, max_rounds: "int | None" = None, in_place: bool = False
) -> "tuple[State, list[tuple[np.ndarray, np.ndarray]]]":
    """Play each live game on while its side to move has exactly one legal action.

    A forced action (the next leap of the only capture path, or the only
    move) is no decision: searching it wastes simulations and recording it
    teaches nothing. Returns the games at their next decision point (or over)
    and the forced actions played, one ``(games [G], actions [G])`` pair per
    round, in order. ``state`` itself is not changed, unless ``in_place``
    (then it is the state returned: saves a copy of a state just made).

    ``max_rounds`` caps the rounds: a game still on a forced action after
    them is returned there. Each round is one batched ``step`` whatever the
    number of games left in it, and a batch's longest run of forced actions
    sets the rounds, so the search caps them and lets the few games left over
    take a node for their forced action (``SearchConfig.forced_rounds``).
    """
    played: list[tuple[np.ndarray, np.ndarray]] = []
    index = np.flatnonzero(~state.done & (count_legal(state.legal_action_mask) == 1))
    if not index.size:
        return state, played
    games = take(state, index)  # the games still on a forced action, and their rows in ``state``
    out = state
    copy = not in_place  # at the first round
    while index.size and (max_rounds is None or len(played) < max_rounds):
        actions = games.legal_action_mask.argmax(axis=1)
        games = step(games, actions, validate=False, in_place=True)  # ``take`` made it
        played.append((index, actions))
        # Write back every game stepped (cheaper than picking out the settled ones); the rest play on.
        out = put(out, index, games, copy=copy)
        copy = False
        more = ~games.done & (count_legal(games.legal_action_mask) == 1)
        if not more.all():
            index, games = index[more], take(games, more)
    return out, played


def reset_games(state: State, which: np.ndarray) -> State:
    """``state`` with the games where ``which`` (``bool [B]``) is True set back to the start."""
    which = np.asarray(which, dtype=bool)
    if not which.any():
        return state
    start = _start(state.variant)
    fields = {}
    for name in ARRAY_FIELDS:
        old = getattr(state, name)
        cond = which.reshape((-1,) + (1,) * (old.ndim - 1))
        fields[name] = np.where(cond, getattr(start, name), old)
    return State(**fields, variant=state.variant)
