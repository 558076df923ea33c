"""Pictures of one game of a batch: a text board, an RGB image and an SVG.

All three read game ``index`` of a :class:`~stapel_rl.env.state.State`:

* :func:`ansi` - plain text (no escape codes). A dark square shows ``W3`` /
  ``B2``: the owner (colour of the top man, upper case) and the stack height;
  ``.`` is an empty dark square, light squares are blank. Rows are labelled
  10..1, files a..j as in RULES.md, and each row ends with the numbers of its
  five squares. ``full=True`` adds every stack's men, top first (``28: wbb``).
* :func:`rgb_array` - ``uint8 [size, size, 3]`` drawn with Pillow.
* :func:`svg` / :func:`board_svg` - SVG text, or an object Jupyter displays.

In the images a stack is drawn from the side as a pile of coins: the top few
men (up to :data:`VISIBLE_MEN`) appear as layers in their own colours, top man
uppermost, and the top face (the owner's colour) carries the stack height.
Dark squares show their number in the corner; the squares of the last action
are highlighted.

The last action is one step (a plain move or a single leap), so after a
multi-leap capture only its final leap is highlighted; the state's
``last_was_leap`` tells a leap from a plain move in the same direction.
"""

from __future__ import annotations

import functools
import xml.sax.saxutils

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from stapel_rl.env.fen import format_stack
from stapel_rl.env.geometry import COL, JUMP, NEIGHBOR, ROW, square_name
from stapel_rl.env.state import State

#: Men of a stack drawn as separate layers in the images (the rest are hidden).
VISIBLE_MEN = 5
SIDE_NAMES = ("White", "Black")
_LIGHT, _DARK = "#ecd9b9", "#ad8560"
_HIGHLIGHT_FROM, _HIGHLIGHT_TO = "#cfc36a", "#bfae2e"
_NUMBER = "#f3e6cf"
# Per colour of man: top face, side, outline, text.
_MAN = (("#f7f1e3", "#ddd1b7", "#4d3d2c", "#2a2118"), ("#3b3b3b", "#222222", "#8c8c8c", "#f4f4f4"))
# Stack geometry in units of one square: half-width and half-height of a
# coin's face, layer thickness, bottom edge of a one-man pile (taller piles
# sit a little lower, clear of the square number).
_RX, _RY, _LAYER, _BOTTOM = 0.38, 0.18, 0.06, 0.78


def _game(state: State, index: int) -> "tuple[list[int], list[int]]":
    if not -state.batch_size <= index < state.batch_size:
        raise IndexError(f"game index {index} out of range for a batch of {state.batch_size}")
    return [int(h) for h in state.height[index]], [int(c) for c in state.colours[index]]


def last_move(state: State, index: int = 0) -> "tuple[int, int, bool] | None":
    """``(from, to, is_leap)`` square indices of game ``index``'s last action, None before any."""
    action = int(state.last_action[index])
    if action < 0:
        return None
    src, d = action >> 2, action & 3
    if bool(state.last_was_leap[index]):
        return src, int(JUMP[src, d]), True
    return src, int(NEIGHBOR[src, d]), False


def _move_text(move: "tuple[int, int, bool] | None") -> str:
    return "" if move is None else f"{move[0] + 1}{'x' if move[2] else '-'}{move[1] + 1}"


def status(state: State, index: int = 0) -> str:
    """Game status in words: in progress, capture under way, result or truncation."""
    player = int(state.current_player[index])
    if bool(state.truncated[index]):
        return f"truncated at the ply cap ({state.variant.ply_cap})"
    if bool(state.terminated[index]):
        stuck = f"{SIDE_NAMES[player]} cannot move"
        if not state.variant.points_decide:
            return f"{stuck}: {SIDE_NAMES[1 - player]} wins"
        white, black = (int(p) for p in state.points[index])
        result = "draw" if white == black else f"{SIDE_NAMES[int(black > white)]} wins"
        return f"{stuck}: {result} {white}-{black} on points"
    if int(state.capturing[index]) >= 0:
        return f"capture under way from {int(state.capturing[index]) + 1}"
    return "in progress"


def header(state: State, index: int = 0) -> str:
    """One line: variant, side to move, ply, Variant II points, last move, status."""
    parts = [
        f"Variant {state.variant.name}",
        f"{SIDE_NAMES[int(state.current_player[index])]} to move",
        f"ply {int(state.ply[index])}",
    ]
    if state.variant.points_decide:
        parts.append(f"points White {int(state.points[index, 0])} Black {int(state.points[index, 1])}")
    move = last_move(state, index)
    if move is not None:
        parts.append(f"last {_move_text(move)}")
    parts.append(status(state, index))
    return " | ".join(parts)


def ansi(state: State, index: int = 0, full: bool = False) -> str:
    """Text board of game ``index`` (see the module docstring for the conventions)."""
    heights, colours = _game(state, index)
    grid = [["   "] * 10 for _ in range(10)]
    for sq in range(50):
        h = heights[sq]
        grid[ROW[sq]][COL[sq]] = f"{'WB'[colours[sq] & 1]}{h}" if h else "."
    lines = [header(state, index), ("     " + "".join(f" {f:<3}" for f in "abcdefghij")).rstrip()]
    for r in range(10):
        cells = "".join(f" {tok:<3}" for tok in grid[r])
        lines.append(f"{10 - r:>3}  {cells}   {5 * r + 1:>2}-{5 * r + 5}")
    if full:
        lines.append("stacks, top man first:")
        entries = [f"{sq + 1:>2}: {format_stack(heights[sq], colours[sq])}" for sq in range(50) if heights[sq]]
        line = ""
        for entry in entries:
            if line and len(line) + len(entry) + 3 > 76:
                lines.append(line)
                line = ""
            line = f"{line}   {entry}" if line else f"  {entry}"
        if line:
            lines.append(line)
    return "\n".join(lines)


# ---------------------------------------------------------------- images


def _layers(height: int, colours: int) -> "list[tuple[int, float]]":
    """(colour, top-face y in square units) of the visible men, lowest drawn layer first."""
    k = min(height, VISIBLE_MEN)
    bottom = _BOTTOM + 0.02 * (k - 1)
    return [((colours >> j) & 1, bottom - _RY - (k - j) * _LAYER) for j in reversed(range(k))]


def _highlights(state: State, index: int) -> "dict[int, str]":
    move = last_move(state, index)
    return {} if move is None else {move[0]: _HIGHLIGHT_FROM, move[1]: _HIGHLIGHT_TO}


@functools.lru_cache(maxsize=32)
def _font(px: int, bold: bool = True) -> "ImageFont.FreeTypeFont | ImageFont.ImageFont":
    for name in ("DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf", "Arial Bold.ttf" if bold else "Arial.ttf"):
        try:
            return ImageFont.truetype(name, px)
        except OSError:
            pass
    try:
        return ImageFont.load_default(size=px)
    except TypeError:  # Pillow < 10.1 has only a fixed-size bitmap font
        return ImageFont.load_default()


def rgb_array(state: State, index: int = 0, size: int = 400) -> np.ndarray:
    """``uint8 [size, size, 3]`` picture of game ``index``."""
    heights, colours = _game(state, index)
    scale = 3  # draw large, then downsample: Pillow does not anti-alias shapes
    big = size * scale
    c = big / 10
    image = Image.new("RGB", (big, big), _LIGHT)
    draw = ImageDraw.Draw(image)
    marks = _highlights(state, index)
    small = _font(max(int(0.18 * c), 6), bold=False)
    for sq in range(50):
        x0, y0 = COL[sq] * c, ROW[sq] * c
        draw.rectangle((x0, y0, x0 + c, y0 + c), fill=marks.get(sq, _DARK))
        draw.text((x0 + 0.05 * c, y0 + 0.03 * c), str(sq + 1), fill=_NUMBER, font=small)
        h = heights[sq]
        if not h:
            continue
        cx, rx, ry, t, w = x0 + c / 2, _RX * c, _RY * c, _LAYER * c, max(scale, round(0.03 * c))
        for colour, top in _layers(h, colours[sq]):
            face, side, line, _ = _MAN[colour]
            yt = y0 + top * c
            draw.ellipse((cx - rx, yt + t - ry, cx + rx, yt + t + ry), fill=side, outline=line, width=w)
            draw.rectangle((cx - rx, yt, cx + rx, yt + t), fill=side)
            draw.line((cx - rx + w / 2, yt, cx - rx + w / 2, yt + t), fill=line, width=w)
            draw.line((cx + rx - w / 2, yt, cx + rx - w / 2, yt + t), fill=line, width=w)
            draw.ellipse((cx - rx, yt - ry, cx + rx, yt + ry), fill=face, outline=line, width=w)
        text_colour = _MAN[colours[sq] & 1][3]
        font = _font(int((0.3 if h < 10 else 0.25) * c))
        draw.text((cx, yt), str(h), fill=text_colour, font=font, anchor="mm")
    resample = getattr(Image, "Resampling", Image).LANCZOS
    return np.asarray(image.resize((size, size), resample), dtype=np.uint8)


def svg(state: State, index: int = 0, size: int = 400, show_numbers: bool = True) -> str:
    """SVG text of game ``index``; each stack is a ``<g class="stack">`` with one ``class="disc"`` top face."""
    heights, colours = _game(state, index)
    c = size / 10
    marks = _highlights(state, index)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" viewBox="0 0 {size} {size}" '
        f'font-family="DejaVu Sans, Arial, sans-serif">',
        f"<title>{xml.sax.saxutils.escape(header(state, index))}</title>",
        f'<rect width="{size}" height="{size}" fill="{_LIGHT}"/>',
    ]
    for sq in range(50):
        x0, y0 = COL[sq] * c, ROW[sq] * c
        kind = ' class="last-move"' if sq in marks else ""
        out.append(f'<rect{kind} x="{x0:g}" y="{y0:g}" width="{c:g}" height="{c:g}" fill="{marks.get(sq, _DARK)}"/>')
        if show_numbers:
            out.append(
                f'<text x="{x0 + 0.05 * c:.1f}" y="{y0 + 0.19 * c:.1f}" font-size="{0.18 * c:.1f}" '
                f'fill="{_NUMBER}">{sq + 1}</text>'
            )
    for sq in range(50):
        h = heights[sq]
        if not h:
            continue
        cx, rx, ry, t = COL[sq] * c + c / 2, _RX * c, _RY * c, _LAYER * c
        men = format_stack(h, colours[sq])
        out.append(f'<g class="stack" data-square="{sq + 1}"><title>{sq + 1} ({square_name(sq)}): {men}</title>')
        layers = _layers(h, colours[sq])
        for n, (colour, top) in enumerate(layers):
            face, side, line, _ = _MAN[colour]
            yt = ROW[sq] * c + top * c
            out.append(
                f'<path d="M{cx - rx:.1f},{yt:.1f}v{t:.1f}a{rx:.1f},{ry:.1f} 0 0 0 {2 * rx:.1f},0v{-t:.1f}z" '
                f'fill="{side}" stroke="{line}" stroke-width="{0.025 * c:.2f}"/>'
            )
            disc = ' class="disc"' if n == len(layers) - 1 else ""
            out.append(
                f'<ellipse{disc} cx="{cx:.1f}" cy="{yt:.1f}" rx="{rx:.1f}" ry="{ry:.1f}" fill="{face}" '
                f'stroke="{line}" stroke-width="{0.025 * c:.2f}"/>'
            )
        out.append(
            f'<text x="{cx:.1f}" y="{yt:.1f}" font-size="{(0.3 if h < 10 else 0.25) * c:.1f}" font-weight="bold" '
            f'text-anchor="middle" dominant-baseline="central" fill="{_MAN[colours[sq] & 1][3]}">{h}</text></g>'
        )
    out.append("</svg>")
    return "\n".join(out)


class SvgBoard:
    """An SVG board that Jupyter displays inline (``_repr_svg_``); ``str()`` is the SVG text."""

    def __init__(self, text: str):
        self.text = text

    def _repr_svg_(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text


def board_svg(state: State, index: int = 0, size: int = 400, show_numbers: bool = True) -> SvgBoard:
    """Game ``index`` as an :class:`SvgBoard` for notebooks."""
    return SvgBoard(svg(state, index, size, show_numbers))
