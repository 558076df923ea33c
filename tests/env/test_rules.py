"""Rules tests for Stapeldammen, one test per clause of RULES.md.

Every expected value was worked out by hand from RULES.md, not copied from the
engine. Diagrams show the rows that matter: a dark square shows its number
when vacant, else its stack (top man first); rank 10 is Black's back row.
"""

import numpy as np
import pytest
from boards import STEP_FIELDS, fen

from stapel_rl.env import (
    VARIANT_I,
    VARIANT_II,
    apply_move,
    from_fens,
    game_result,
    init,
    legal_moves,
    step,
    take,
    to_fens,
)
from stapel_rl.env.engine import play_forced


def moves(side, stacks, variant="I"):
    return sorted(legal_moves(fen(side, stacks), variant))


def action(square, direction):
    """Action id; direction 0 up-left, 1 up-right, 2 down-left, 3 down-right."""
    return 4 * (square - 1) + direction


UL, UR, DL, DR = 0, 1, 2, 3


# Clause 3 (captured man to the bottom of the capturing stack).
#        a   b   c   d   e   f   g   h   i   j
#   6      21      22      23      24      25
#   5  26      27      b       29      30
#   4      31      w       33      34      35
#   3  36      37      38      39      40
# The same squares are used with other stacks in the table below.
@pytest.mark.parametrize(
    "side, capturer, leapt, move, after",
    [
        ("W", {32: "w"}, {28: "b"}, "32x23", {23: "wb"}),
        ("W", {32: "ww"}, {28: "b"}, "32x23", {23: "wwb"}),
        ("W", {32: "wbw"}, {28: "bw"}, "32x23", {23: "wbwb", 28: "w"}),
        # Black capturing down: 23 (bw) leaps 28 (ww) and lands on 32.
        ("B", {23: "bw"}, {28: "ww"}, "23x32", {32: "bww", 28: "w"}),
    ],
)
def test_captured_man_goes_to_bottom_of_capturing_stack(side, capturer, leapt, move, after):
    position = {**capturer, **leapt}
    assert moves(side, position) == [move]
    other = "B" if side == "W" else "W"
    assert apply_move(fen(side, position), move) == fen(other, after)


# Clause 3 (the rest of a leapt stack stays, owned by its new top man).
#        a   b   c   d   e   f   g   h   i   j
#   9  06      07      08      09      10
#   8      11      b       13      14      15
#   7  16      17      18      19      20
#   6      21      22      23      24      25
#   5  26      27      bw      29      30
#   4      31      w       33      34      35
#   3  36      37      38      39      40
# and the same with 29, 39, 38 Black and no 12:
#        a   b   c   d   e   f   g   h   i   j
#   6      21      22      23      24      25
#   5  26      27      bw      b       30
#   4      31      w       33      34      35
#   3  36      37      b       b       40
#   2      41      42      43      44      45
def test_leapt_stack_changes_owner_and_stays():
    position = {32: "w", 28: "bw", 12: "b"}
    assert moves("W", position) == ["32x23"]
    after = {12: "b", 23: "wb", 28: "w"}
    assert apply_move(fen("W", position), "32x23") == fen("B", after)
    # Black can no longer move the stack on 28; White now can.
    assert moves("B", after) == ["12-17", "12-18"]
    assert moves("W", after) == ["23-18", "23-19", "28-22"]
    s = step(from_fens([fen("W", position)], VARIANT_I), np.array([action(32, UR)]))
    assert np.flatnonzero(s.legal_action_mask[0]).tolist() == [action(12, DL), action(12, DR)]
    # Round a diamond back to 32 the stack on 28, now White's, is not leapt again.
    diamond = {32: "w", 28: "bw", 29: "b", 39: "b", 38: "b"}
    assert moves("W", diamond) == ["32x23x34x43x32", "32x43x34x23x32"]
    assert apply_move(fen("W", diamond), "32x23x34x43x32") == fen("B", {32: "wbbbb", 28: "w"})


# Clause 3 (a leapt single man leaves his square vacant at once).
#        a   b   c   d   e   f   g   h   i   j
#   8      11      12      13      14      15
#   7  16      17      b       19      20
#   6      21      22      23      24      25
#   5  26      27      b       29      30
#   4      31      w       33      34      35
#   3  36      37      38      39      40
# A later leap of the same capture can never land on a leapt square: every
# landing square of a capturing stack has the parity of its start square, a
# leapt square the other one. So the vacancy is checked mid-capture via step.
def test_leapt_single_man_vacates_square_at_once():
    position = {32: "w", 28: "b", 18: "b"}
    assert moves("W", position) == ["32x23x12"]
    s = from_fens([fen("W", position)], VARIANT_I)
    s = step(s, np.array([action(32, UR)]))
    assert s.capturing[0] >= 0  # capture still under way
    assert s.height[0, 28 - 1] == 0 and s.colours[0, 28 - 1] == 0
    assert s.height[0, 32 - 1] == 0
    assert s.height[0, 23 - 1] == 2
    s = step(s, np.array([action(23, UL)]))
    assert to_fens(s) == [fen("B", {12: "wbb"})]


# Clause 5 (the same stack leapt twice, another man captured in between).
#        a   b   c   d   e   f   g   h   i   j
#   6      21      22      23      24      25
#   5  26      27      bbw     b       30
#   4      31      w       33      34      35
#   3  36      37      b       b       40
#   2      41      42      43      44      45
# 32x23 (28 -> bw), x34 (29), x43 (39), x32 (38), x23 (28 again -> w): 5 men.
# The other way round, 32x43x34x23x32, may not re-leap 28 at once: 4 men.
# Second case, with 19, 9, 8, 18 Black as well:
#        a   b   c   d   e   f   g   h   i   j
#  10      01      02      03      04      05
#   9  06      07      b       b       10
#   8      11      12      13      14      15
#   7  16      17      b       b       20
#   6      21      22      23      24      25
#   5  26      27      bbw     b       30
#   4      31      w       33      34      35
#   3  36      37      b       b       40
#   2      41      42      43      44      45
def test_same_stack_leapt_twice_with_capture_in_between():
    position = {32: "w", 28: "bbw", 29: "b", 39: "b", 38: "b"}
    assert moves("W", position) == ["32x23x34x43x32x23"]
    after = fen("B", {23: "wbbbbb", 28: "w"})
    assert apply_move(fen("W", position), "32x23x34x43x32x23") == after
    assert apply_move(fen("W", position), "32x23") == after  # "from x to" form
    # Add a second diamond (19, 9, 8, 18) meeting the first at 23: 28 is
    # leapt twice (before or after either diamond) and 9 men are taken; after
    # its second leap 28 is White's and cannot be leapt a third time.
    position |= {19: "b", 9: "b", 8: "b", 18: "b"}
    expected = [
        "32x23x34x43x32x23x14x3x12x23",
        "32x23x34x43x32x23x12x3x14x23",
        "32x23x14x3x12x23x32x43x34x23",
        "32x23x12x3x14x23x32x43x34x23",
        "32x23x14x3x12x23x34x43x32x23",
        "32x23x12x3x14x23x34x43x32x23",
    ]
    assert moves("W", position) == sorted(expected)
    for move in expected:
        assert apply_move(fen("W", position), move) == fen("B", {23: "w" + "b" * 9, 28: "w"})


# Clause 5 (no immediate re-leap of the stack just leapt).
#        a   b   c   d   e   f   g   h   i   j
#   6      21      22      23      24      25
#   5  26      27      bb      29      30
#   4      31      w       33      34      35
#   3  36      37      38      39      40
# Without the rule 32x23x32 would capture 2 and be forced.
def test_immediate_re_leap_refused():
    position = {32: "w", 28: "bb"}
    assert moves("W", position) == ["32x23"]
    after = {23: "wb", 28: "b"}
    assert apply_move(fen("W", position), "32x23") == fen("B", after)
    # 28 stays Black and must capture the stack on 23 (its top man only).
    assert moves("B", after) == ["28x19"]
    assert apply_move(fen("B", after), "28x19") == fen("W", {19: "bw", 23: "b"})


# Clause 4 (the start square is vacant from the first leap and re-used).
#        a   b   c   d   e   f   g   h   i   j
#   6      21      22      23      24      25
#   5  26      b       b       b       30
#   4      31      w       33      34      35
#   3  36      37      b       b       40
#   2      41      42      43      44      45
# Round the diamond either way back to 32, then on over 27 to 21: 5 men.
def test_start_square_reused_in_same_capture():
    position = {32: "w", 28: "b", 29: "b", 39: "b", 38: "b", 27: "b"}
    assert moves("W", position) == ["32x23x34x43x32x21", "32x43x34x23x32x21"]
    after = fen("B", {21: "wbbbbb"})
    for move in ("32x23x34x43x32x21", "32x43x34x23x32x21"):
        assert apply_move(fen("W", position), move) == after
    with pytest.raises(ValueError, match="ambiguous"):
        apply_move(fen("W", position), "32x21")


# Clause 6 (maximum capture).
# Across stacks: 47 can take 1 (47x36), 34 can take 2 (34x23x12).
#        a   b   c   d   e   f   g   h   i   j
#   8      11      12      13      14      15
#   7  16      17      b       19      20
#   6      21      22      23      24      25
#   5  26      27      28      b       30
#   4      31      32      33      w       35
#   3  36      37      38      39      40
#   2      b       42      43      44      45
#   1  46      w       48      49      50
# Within one stack: 32x21 takes 1, 32x23x14 takes 2, 32x23x12x1 takes 3.
#        a   b   c   d   e   f   g   h   i   j
#  10      01      02      03      04      05
#   9  06      b       08      09      10
#   8      11      12      13      14      15
#   7  16      17      b       b       20
#   6      21      22      23      24      25
#   5  26      b       b       29      30
#   4      31      w       33      34      35
#   3  36      37      38      39      40
def test_maximum_capture():
    assert moves("W", {47: "w", 34: "w", 41: "b", 29: "b", 18: "b"}) == ["34x23x12"]
    position = {32: "w", 27: "b", 28: "b", 19: "b", 18: "b", 7: "b"}
    assert moves("W", position) == ["32x23x12x1"]
    assert apply_move(fen("W", position), "32x23x12x1") == fen("B", {1: "wbbb", 19: "b", 27: "b"})


# Clause 1 (no plain move from the opponent's back row; captures allowed).
#        a   b   c   d   e   f   g   h   i   j
#  10      01      02      wb      04      05
#   9  06      07      08      b       10
#   8      11      12      13      14      15
#   7  16      17      18      19      b
#   6      21      22      23      24      25
#   5  26      27      28      29      30
#   4      31      32      33      34      35
#   3  36      37      w       39      40
#   2      41      42      43      44      45
# (shown together; each case below uses some of these stacks)
def test_back_row_stack_only_captures():
    assert moves("W", {3: "wb", 38: "w", 20: "b"}) == ["38-32", "38-33"]
    assert moves("W", {3: "wb", 20: "b"}) == []
    assert game_result(fen("W", {3: "wb", 20: "b"})) == -1
    assert moves("W", {3: "wb", 9: "b"}) == ["3x14"]
    assert apply_move(fen("W", {3: "wb", 9: "b"}), "3x14") == fen("B", {14: "wbb"})
    # Black on White's back row: 48 leaps 42 upwards.
    assert moves("B", {48: "bw", 42: "w", 35: "w"}) == ["48x37"]
    assert apply_move(fen("B", {48: "bw", 42: "w", 35: "w"}), "48x37") == fen("W", {37: "bww", 35: "w"})
    assert moves("B", {48: "bw", 35: "w"}) == []


# Clause 6 (capturing is mandatory).
#        a   b   c   d   e   f   g   h   i   j
#   6      21      22      23      24      25
#   5  26      27      b       29      30
#   4      31      w       33      34      35
#   3  36      37      38      39      40
#   2      41      42      43      44      w
#   1  46      47      48      49      50
def test_capture_is_mandatory():
    assert moves("W", {32: "w", 45: "w", 28: "b"}) == ["32x23"]
    assert moves("W", {32: "w", 45: "w", 5: "b"}) == ["32-27", "32-28", "45-40"]


# Clauses 1-2 (plain moves only forwards, for the owner; captures both ways).
#        a   b   c   d   e   f   g   h   i   j
#  10      01      02      03      04      b
#   9  06      07      08      09      10
#   8      11      12      13      14      15
#   7  16      17      18      19      20
#   6      21      22      23      24      25
#   5  26      27      w       29      30
#   4      31      32      33      34      35
# Backward captures: White 23 over 28 to 32; Black 28 over 23 to 19.
#        a   b   c   d   e   f   g   h   i   j
#   7  16      17      18      19      20
#   6      21      22      w       24      25
#   5  26      27      b       29      30
#   4      31      32      33      34      35
def test_no_backward_plain_moves_but_backward_captures():
    assert moves("W", {28: "w", 5: "b"}) == ["28-22", "28-23"]
    assert moves("W", {28: "wb", 5: "b"}) == ["28-22", "28-23"]
    assert moves("B", {23: "b", 46: "w"}) == ["23-28", "23-29"]
    assert moves("B", {28: "bw", 46: "w"}) == ["28-32", "28-33"]
    assert moves("W", {23: "w", 28: "b"}) == ["23x32"]
    assert apply_move(fen("W", {23: "w", 28: "b"}), "23x32") == fen("B", {32: "wb"})
    assert moves("B", {23: "w", 28: "b"}) == ["28x19"]
    assert apply_move(fen("B", {23: "w", 28: "b"}), "28x19") == fen("W", {19: "bw"})


# Variant I result: the side to move without a legal move loses.
# White blocked (36 cannot move to 31 nor leap it, 27 is taken):
#        a   b   c   d   e   f   g   h   i   j
#   6      21      22      23      24      25
#   5  26      b       28      29      30
#   4      b       32      33      34      35
#   3  w       37      38      39      40
#   2      41      42      43      44      45
# Black blocked, the mirror image:
#        a   b   c   d   e   f   g   h   i   j
#   9  06      07      08      09      10
#   8      11      12      13      14      b
#   7  16      17      18      19      w
#   6      21      22      23      w       25
#   5  26      27      28      29      30
def test_variant_i_blocked_side_loses():
    white_blocked = fen("W", {36: "w", 31: "b", 27: "b"})
    black_blocked = fen("B", {15: "b", 20: "w", 24: "w"})
    white_no_stack = fen("W", {28: "bw", 1: "b"})  # White men only under Black
    assert game_result(white_blocked) == -1
    assert game_result(black_blocked) == 1
    assert game_result(white_no_stack) == -1
    assert game_result(fen("W", {36: "w", 31: "b"})) is None  # 36x27 possible
    s = from_fens([white_blocked, black_blocked, white_no_stack], VARIANT_I)
    assert s.terminated.tolist() == [True, True, True]
    assert s.truncated.tolist() == [False, False, False]
    assert s.rewards.tolist() == [[-1, 1], [1, -1], [-1, 1]]
    assert not s.legal_action_mask.any()


# Variant II: the game ends when the side to move cannot move; points decide.
#        a   b   c   d   e   f   g   h   i   j
#  10      01      wbb     03      w       05
#   9  06      07      08      09      10
#   8      11      12      13      14      15
#   7  16      17      18      19      20
#   6      21      22      23      24      25
#   5  26      27      ww      29      30
#   4      31      32      33      34      35
#   3  36      37      38      39      40
#   2      41      42      43      44      45
#   1  46      bww     48      wbb     50
# Black to move is blocked. White: 2 (3 men) + 4 (1) = 4. Black: 47 (3) = 3.
# 28 is neutral; 49 is White's on his own back row and scores nothing.
# Without the man on 4 it is 3:3, a draw. Black wins the last case 3:1.
def test_variant_ii_points_decide():
    win = {2: "wbb", 4: "w", 28: "ww", 47: "bww", 49: "wbb"}
    tie = {2: "wbb", 28: "ww", 47: "bww", 49: "wbb"}
    black_win = {3: "w", 48: "bbw"}
    fens = [fen("B", win), fen("B", tie), fen("W", black_win)]
    assert [game_result(f, VARIANT_II) for f in fens] == [1, 0, -1]
    s = from_fens(fens, VARIANT_II)
    assert s.terminated.tolist() == [True, True, True]
    assert s.points.tolist() == [[4, 3], [3, 3], [1, 3]]
    assert s.rewards.tolist() == [[1, -1], [0, 0], [-1, 1]]
    # Under Variant I the blocked Black simply loses, points or not.
    assert game_result(fen("B", tie), VARIANT_I) == 1


# Truncation at the ply cap (start position, first legal action each step).
def test_truncation_at_ply_cap():
    k = 4
    s = init(VARIANT_I.with_ply_cap(k), 1)
    while s.ply[0] < k:
        assert not s.truncated[0] and not s.terminated[0]
        s = step(s, np.array([np.flatnonzero(s.legal_action_mask[0])[0]]))
    assert s.ply[0] == k
    assert s.truncated.tolist() == [True] and s.terminated.tolist() == [False]
    assert s.rewards.tolist() == [[0, 0]]
    for a in (0, 123, 199):
        t = step(s, np.array([a]))
        for name in STEP_FIELDS:
            np.testing.assert_array_equal(getattr(t, name), getattr(s, name), err_msg=name)


# Multi-leap capture through step: 32x23x12x1 as three actions.
#        a   b   c   d   e   f   g   h   i   j
#  10      01      02      03      04      05
#   9  06      b       08      09      10
#   8      11      12      13      14      15
#   7  16      17      b       b       20
#   6      21      22      23      24      25
#   5  26      b       b       29      30
#   4      31      w       33      34      35
#   3  36      37      38      39      40
# (capturing and last_leapt hold 0-based square indices, square - 1)
def test_multi_leap_through_step():
    s = from_fens([fen("W", {32: "w", 27: "b", 28: "b", 19: "b", 18: "b", 7: "b"})], VARIANT_I)
    assert np.flatnonzero(s.legal_action_mask[0]).tolist() == [action(32, UR)]
    s = step(s, np.array([action(32, UR)]))
    assert (s.current_player[0], s.capturing[0], s.last_leapt[0], s.ply[0]) == (0, 23 - 1, 28 - 1, 0)
    # 23x14 takes only 2 in all, 23x12x1 takes 3: only the latter's step.
    assert np.flatnonzero(s.legal_action_mask[0]).tolist() == [action(23, UL)]
    s = step(s, np.array([action(23, UL)]))
    assert (s.current_player[0], s.capturing[0], s.last_leapt[0], s.ply[0]) == (0, 12 - 1, 18 - 1, 0)
    assert np.flatnonzero(s.legal_action_mask[0]).tolist() == [action(12, UL)]
    s = step(s, np.array([action(12, UL)]))
    assert (s.current_player[0], s.capturing[0], s.last_leapt[0], s.ply[0]) == (1, -1, -1, 1)
    assert not s.terminated[0] and s.rewards.tolist() == [[0, 0]]
    after = {1: "wbbb", 19: "b", 27: "b"}
    assert to_fens(s) == [fen("B", after)]
    expected = sorted([action(19, DL), action(19, DR), action(27, DL), action(27, DR)])
    assert np.flatnonzero(s.legal_action_mask[0]).tolist() == expected


# play_forced: the engine plays on through forced actions (not a rules clause,
# but the search and self-play rely on it). Game 0 is the three-leap capture
# above after its first leap (one continuation left: 23x12x1 takes the most);
# game 1 is the start position after 31-26, where Black has 9 moves.
def test_play_forced_stops_at_the_next_decision_point():
    s = from_fens(
        [fen("W", {32: "w", 27: "b", 28: "b", 19: "b", 18: "b", 7: "b"}), to_fens(init(VARIANT_I))[0]], VARIANT_I
    )
    s = step(s, np.array([action(32, UR), action(31, UL)]))
    after, played = play_forced(s)
    assert [(g.tolist(), a.tolist()) for g, a in played] == [([0], [action(23, UL)]), ([0], [action(12, UL)])]
    assert to_fens(after) == [fen("B", {1: "wbbb", 19: "b", 27: "b"}), to_fens(take(s, [1]))[0]]
    assert after.ply.tolist() == [1, 1] and s.capturing[0] == 23 - 1  # the input is not changed

    # Capped at one round, game 0 stops after the second leap, on its last (forced) one.
    capped, played = play_forced(s, max_rounds=1)
    assert [(g.tolist(), a.tolist()) for g, a in played] == [([0], [action(23, UL)])]
    assert capped.capturing[0] == 12 - 1 and np.flatnonzero(capped.legal_action_mask[0]).tolist() == [action(12, UL)]
    assert to_fens(take(capped, [1])) == to_fens(take(s, [1]))
    again, played = play_forced(capped)  # and goes on from there as if never stopped
    assert [(g.tolist(), a.tolist()) for g, a in played] == [([0], [action(12, UL)])]
    assert to_fens(again) == to_fens(after)


#        a   b   c   d   e   f   g   h   i   j
#   2      41      42      43      44      45
#   1  w       47      48      b       50
# White's only move is 46-41; then Black (49, moving towards row 1, nothing to
# capture backwards) has none and loses.
def test_play_forced_plays_only_moves_and_stops_at_the_end_of_a_game():
    s = from_fens([fen("W", {46: "w", 49: "b"})], VARIANT_I)
    assert np.flatnonzero(s.legal_action_mask[0]).tolist() == [action(46, UR)]
    after, played = play_forced(s)
    assert [(g.tolist(), a.tolist()) for g, a in played] == [([0], [action(46, UR)])]
    assert after.terminated[0] and after.rewards[0].tolist() == [1.0, -1.0]
    assert to_fens(after) == [fen("B", {41: "w", 49: "b"})]


# Errors: malformed text and illegal moves raise ValueError saying why.
def test_value_errors():
    start = VARIANT_I.setup
    # Each message must name what is wrong (the words listed).
    bad_fens = [
        ("W:" + ",".join([""] * 49), ["50", "49"]),  # 49 fields
        ("W:" + ",".join([""] * 51), ["50", "51"]),  # 51 fields
        (fen("W", {7: "wx"}), ["7", "'x'"]),  # other letter
        (fen("W", {7: "wW"}), ["7", "'W'"]),  # capital letter
        (fen("W", {7: "wb" * 20 + "w"}), ["7", "41", "40"]),  # stack of 41 men
        (fen("W", {n: "w" for n in range(1, 22)}), ["21", "White"]),
        (fen("B", {n: "b" for n in range(1, 21)} | {21: "bw"}), ["21", "Black"]),
        (fen("X", {1: "b"}), ["side", "'X'"]),  # bad side letter
        ("w:" + start[2:], ["side", "'w'"]),
        (start[2:], ["side"]),  # no side at all
    ]
    for text, words in bad_fens:
        for parse in (legal_moves, lambda t: from_fens([t], VARIANT_I)):
            with pytest.raises(ValueError) as err:
                parse(text)
            assert all(w in str(err.value) for w in words), (words, str(err.value))
    for bad_move in ("32_28", "32-", "x28", "32-28-23", "0-5", "51-46", "abc", ""):
        with pytest.raises(ValueError) as err:
            apply_move(start, bad_move)
        assert repr(bad_move) in str(err.value) or bad_move in str(err.value)
    with pytest.raises(ValueError) as err:
        apply_move(start, "36-31")  # 31 is taken
    message = str(err.value)
    assert "36-31" in message
    for legal in ("31-26", "31-27", "32-27", "32-28", "33-28", "33-29", "34-29", "34-30", "35-30"):
        assert legal in message
    assert sorted(legal_moves(start)) == [
        "31-26",
        "31-27",
        "32-27",
        "32-28",
        "33-28",
        "33-29",
        "34-29",
        "34-30",
        "35-30",
    ]
    s = init(VARIANT_I, 2)
    with pytest.raises(ValueError, match="game 1"):
        step(s, np.array([action(31, UL), action(36, UR)]))  # 36-31: taken
    with pytest.raises(ValueError, match="game 0"):
        step(s, np.array([action(46, DL), action(31, UL)]))  # off the board
