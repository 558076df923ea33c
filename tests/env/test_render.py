"""Board rendering: text, RGB image and SVG (fast)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from stapel_rl.env import from_fens, init, step
from stapel_rl.env.geometry import COL, ROW
from stapel_rl.env.render import SvgBoard, ansi, board_svg, header, last_move, rgb_array, svg

TOKEN = re.compile(r"\b([WB])(\d+)\b")
SVG_NS = "{http://www.w3.org/2000/svg}"


def fen(stacks: "dict[int, str]", side: str = "W") -> str:
    """Position text with ``stacks`` (square number -> letters, top first)."""
    return side + ":" + ",".join(stacks.get(n, "") for n in range(1, 51))


# Square 28 (e5) holds a white-topped stack of three: w over two black men.
STACK_FEN = fen({3: "b", 28: "wbb", 48: "w"})


def board_lines(text: str) -> "list[str]":
    lines = text.splitlines()
    return lines[2:12]


def cell(text: str, square: int) -> str:
    """The token printed for square number ``square``, found under its file letter."""
    lines = text.splitlines()
    files, rows = lines[1], board_lines(text)
    sq = square - 1
    column = files.index(" " + "abcdefghij"[COL[sq]]) + 1
    assert rows[ROW[sq]].lstrip().startswith(str(10 - ROW[sq]))
    return rows[ROW[sq]][column:].split(" ")[0] or " "


def test_ansi_start_variant_one():
    text = ansi(init("I"))
    assert text.splitlines()[0] == "Variant I | White to move | ply 0 | in progress"
    tokens = TOKEN.findall("\n".join(board_lines(text)))
    assert tokens.count(("W", "1")) == 20 and tokens.count(("B", "1")) == 20 and len(tokens) == 40
    assert cell(text, 1) == "B1" and cell(text, 50) == "W1" and cell(text, 28) == "."
    assert [line.split()[0] for line in board_lines(text)] == [str(r) for r in range(10, 0, -1)]
    assert text.splitlines()[1].split() == list("abcdefghij")
    assert board_lines(text)[5].rstrip().endswith("26-30")


def test_ansi_variant_two_header_shows_points():
    state = from_fens(fen({2: "wbw", 47: "bb", 20: "b"}, "B"), "II")
    line = header(state)
    assert line.startswith("Variant II | Black to move | ply 0 | points White 3 Black 2")
    assert line.endswith("in progress")


def test_ansi_stack_in_right_place_and_composition():
    state = from_fens(STACK_FEN)
    text = ansi(state)
    assert cell(text, 28) == "W3" and cell(text, 3) == "B1" and cell(text, 48) == "W1"
    assert cell(text, 27) == "." and cell(text, 29) == "."
    rank5 = board_lines(text)[5]
    assert rank5.split()[0] == "5" and "W3" in rank5
    assert "28: wbb" not in text
    full = ansi(state, full=True)
    assert "28: wbb" in full and " 3: b" in full and "48: w" in full
    assert full.startswith(text)


def test_ansi_game_over_status():
    state = from_fens(fen({3: "b", 48: "w"}, "B"))  # Black's single man is not blocked
    assert header(state).endswith("in progress")
    blocked = fen({46: "b", 3: "ww"}, "B")  # Black's only man is on White's back row: no move
    assert bool(from_fens(blocked).terminated[0])
    assert header(from_fens(blocked)).endswith("Black cannot move: White wins")
    assert header(from_fens(blocked, "II")).endswith("Black cannot move: White wins 2-1 on points")
    assert "truncated" in header(from_fens(fen({3: "b", 48: "w"}), "I").replace(truncated=np.array([True])))


def test_rgb_array_shape_and_pixels():
    state = from_fens(STACK_FEN)
    image = rgb_array(state, 0, size=200)
    assert image.shape == (200, 200, 3) and image.dtype == np.uint8
    c = 20

    def centre(square: int) -> np.ndarray:
        sq = square - 1
        y, x = ROW[sq] * c, COL[sq] * c
        return image[y + 6 : y + 14, x + 6 : x + 14].astype(int)

    white_stack, empty, black_man = centre(28), centre(27), centre(3)
    assert np.abs(white_stack - empty).sum() > 0
    assert white_stack.mean() > black_man.mean() + 50  # white face is light, black face dark
    assert rgb_array(init("I"), size=64).shape == (64, 64, 3)


def test_svg_parses_and_counts_discs():
    for state, stacks in ((init("I"), 40), (init("II"), 20), (from_fens(STACK_FEN), 3)):
        text = svg(state, 0, size=300)
        root = ET.fromstring(text)
        assert root.tag == SVG_NS + "svg" and root.get("width") == "300"
        discs = [e for e in root.iter(SVG_NS + "ellipse") if e.get("class") == "disc"]
        groups = [e for e in root.iter(SVG_NS + "g") if e.get("class") == "stack"]
        assert len(discs) == len(groups) == stacks
    root = ET.fromstring(svg(from_fens(STACK_FEN)))
    (group,) = [g for g in root.iter(SVG_NS + "g") if g.get("data-square") == "28"]
    assert group.find(SVG_NS + "title").text == "28 (e5): wbb"
    assert group.findall(SVG_NS + "text")[-1].text == "3"
    numbers = {e.text for e in root.iter(SVG_NS + "text")}
    assert {"1", "28", "50"} <= numbers
    plain = ET.fromstring(svg(from_fens(STACK_FEN), show_numbers=False))
    assert "50" not in {e.text for e in plain.iter(SVG_NS + "text")}


def test_board_svg_repr():
    board = board_svg(init("I"), 0, size=240)
    assert isinstance(board, SvgBoard)
    assert board._repr_svg_() == str(board) == svg(init("I"), 0, size=240)


def last_move_rects(state) -> int:
    root = ET.fromstring(svg(state))
    return sum(e.get("class") == "last-move" for e in root.iter(SVG_NS + "rect"))


def test_last_move_highlight_after_step():
    state = init("I")
    assert last_move(state) is None and last_move_rects(state) == 0
    after = step(state, np.array([4 * 31 + 1]))  # 32-28: square index 31, up-right
    assert last_move(after) == (31, 27, False)
    assert "last 32-28" in header(after)
    assert last_move_rects(after) == 2
    c = 20
    y, x = ROW[31] * c, COL[31] * c  # square 32 is now empty and highlighted
    corner = (slice(y + 15, y + 19), slice(x + 1, x + 5))
    before, now = rgb_array(state, size=200)[corner], rgb_array(after, size=200)[corner]
    assert np.abs(before.astype(int) - now.astype(int)).sum() > 0


@pytest.mark.parametrize(
    "stacks, action, expected",
    [
        ({32: "w", 28: "b", 3: "b"}, 4 * 31 + 1, (31, 22, True)),  # 32x23, single man taken
        ({32: "w", 28: "bb", 3: "b"}, 4 * 31 + 1, (31, 22, True)),  # 32x23, Black keeps 28
        ({32: "w", 23: "wb", 3: "b"}, 4 * 31 + 1, (31, 27, False)),  # 32-28 beside a w-over-b stack
    ],
)
def test_last_move_decoding(stacks, action, expected):
    after = step(from_fens(fen(stacks)), np.array([action]))
    assert last_move(after) == expected
    text = f"{expected[0] + 1}{'x' if expected[2] else '-'}{expected[1] + 1}"
    assert f"last {text}" in header(after)


def test_last_move_mid_capture():
    # White on 37 leaps 32 then 22: after the first leap the capture is under way.
    state = from_fens(fen({37: "w", 32: "b", 22: "b", 3: "b"}))
    first = step(state, np.array([4 * 36 + 1]))  # 37x28
    assert int(first.capturing[0]) == 27
    assert last_move(first) == (36, 27, True)
    assert "capture under way from 28" in header(first)
    assert last_move_rects(first) == 2


def test_bad_index():
    with pytest.raises(IndexError):
        ansi(init("I", batch_size=2), index=2)
