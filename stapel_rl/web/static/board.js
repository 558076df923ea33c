// The board as SVG, drawn as stapel_rl/env/render.py draws it: each stack a pile of
// coins (the top five men in their own colours, top man uppermost) with its height
// on the top face. This file only draws; every rule comes from the server.
"use strict";

const Board = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const SIZE = 500, C = SIZE / 10;
  const LIGHT = "#ecd9b9", DARK = "#ad8560", NUMBER = "#f3e6cf";
  // Per colour of man ("w", "b"): top face, side, outline, text (render.py's _MAN).
  const MAN = {
    w: ["#f7f1e3", "#ddd1b7", "#4d3d2c", "#2a2118"],
    b: ["#3b3b3b", "#222222", "#8c8c8c", "#f4f4f4"],
  };
  const VISIBLE_MEN = 5, RX = 0.38, RY = 0.18, LAYER = 0.06, BOTTOM = 0.78;

  function el(name, attrs, parent) {
    const node = document.createElementNS(NS, name);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    if (parent) parent.appendChild(node);
    return node;
  }

  // Row and column (0..9, as White sees the board) of square n, by the FMJD numbering of RULES.md.
  function rowCol(n) {
    const r = Math.floor((n - 1) / 5), k = (n - 1) % 5;
    return [r, r % 2 === 0 ? 2 * k + 1 : 2 * k];
  }

  // Top-left corner of square n's cell in board pixels; a flipped board is turned 180 degrees.
  function corner(n, flipped) {
    const [r, c] = rowCol(n);
    return flipped ? [(9 - c) * C, (9 - r) * C] : [c * C, r * C];
  }

  function centre(n, flipped) {
    const [x, y] = corner(n, flipped);
    return [x + C / 2, y + C / 2];
  }

  function drawStack(group, men, x0, y0) {
    // men: the stack top man first, e.g. "wbb".
    const h = men.length, k = Math.min(h, VISIBLE_MEN);
    const bottom = BOTTOM + 0.02 * (k - 1);
    const stack = el("g", { class: "stack" }, group);
    el("title", {}, stack).textContent = `${h} ${h === 1 ? "man" : "men"}, top first: ${men}`;
    const cx = x0 + C / 2, rx = RX * C, ry = RY * C, t = LAYER * C, w = (0.025 * C).toFixed(2);
    let yt = 0;
    for (let j = k - 1; j >= 0; j--) {
      const [face, side, line] = MAN[men[j]];
      yt = y0 + (bottom - RY - (k - j) * LAYER) * C;
      el("path", {
        d: `M${cx - rx},${yt}v${t}a${rx},${ry} 0 0 0 ${2 * rx},0v${-t}z`,
        fill: side, stroke: line, "stroke-width": w,
      }, stack);
      el("ellipse", {
        class: j === 0 ? "disc" : "layer", cx, cy: yt, rx, ry, fill: face, stroke: line, "stroke-width": w,
      }, stack);
    }
    const label = el("text", {
      x: cx, y: yt, "font-size": (h < 10 ? 0.3 : 0.25) * C, "font-weight": "bold", "text-anchor": "middle",
      "dominant-baseline": "central", fill: MAN[men[0]][3], class: "height",
    }, stack);
    label.textContent = String(h);
  }

  // Draw the whole board into `svg`.
  // view: {board: 50 stacks top first, flipped, classes: {square: [class names]}, arrows: [{path, share, label}]}
  function draw(svg, view) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    svg.setAttribute("viewBox", `0 0 ${SIZE} ${SIZE}`);
    el("rect", { width: SIZE, height: SIZE, fill: LIGHT }, svg);
    const marks = view.classes || {};
    for (let n = 1; n <= 50; n++) {
      const [x0, y0] = corner(n, view.flipped);
      const group = el("g", { class: ["square", ...(marks[n] || [])].join(" "), "data-square": n }, svg);
      el("rect", { class: "cell", x: x0, y: y0, width: C, height: C, fill: DARK }, group);
      el("text", { class: "num", x: x0 + 0.05 * C, y: y0 + 0.19 * C, "font-size": 0.18 * C, fill: NUMBER },
        group).textContent = String(n);
      const men = view.board ? view.board[n - 1] : "";
      if (men) drawStack(group, men, x0, y0);
      el("circle", { class: "hint", cx: x0 + C / 2, cy: y0 + C / 2, r: 0.14 * C }, group);
    }
    drawArrows(el("g", { id: "arrows" }, svg), view.arrows || [], view.flipped);
  }

  function drawArrows(layer, arrows, flipped) {
    const defs = el("defs", {}, layer);
    const marker = el("marker", {
      id: "arrowhead", viewBox: "0 0 10 10", refX: 6, refY: 5, markerWidth: 4, markerHeight: 4, orient: "auto",
    }, defs);
    el("path", { d: "M0,0L10,5L0,10z", class: "arrowhead" }, marker);
    for (const arrow of arrows) {
      const points = arrow.path.map((n) => centre(n, flipped));
      const width = 3 + 9 * arrow.share;
      const group = el("g", { class: "arrow", "data-move": arrow.move }, layer);
      el("polyline", {
        points: points.map((p) => p.join(",")).join(" "), "stroke-width": width,
        "marker-end": "url(#arrowhead)", opacity: 0.35 + 0.55 * arrow.share,
      }, group);
      const [x, y] = points[points.length - 1];
      el("text", { x, y: y - 0.28 * C, "text-anchor": "middle", class: "arrow-label" }, group).textContent = arrow.label;
    }
  }

  return { draw, centre, SIZE };
})();
