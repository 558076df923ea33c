// The page: new game, clicks to moves, undo, flip, analysis arrows and the PDN replay view.
// Every rule is the server's: it sends the legal moves of the position as full paths of
// squares, and a click only narrows them down by prefix (so a multi-leap capture is
// entered leap by leap, and only maximum-capture continuations are ever offered).
"use strict";

const $ = (selector) => document.querySelector(selector);

const S = {
  agents: null,   // GET /api/agents
  game: null,     // the last game view from the server
  prefix: [],     // squares clicked so far of the move being entered
  flipped: false,
  busy: false,
  error: null,    // the last refused request, shown in the status line
  analysis: null, // the last analysis of the current position
  analysisFor: null,
  replay: null,   // {games, index, ply} in the replay view
};

async function api(method, url, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(url, options);
  const data = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

function setBusy(busy) {
  S.busy = busy;
  if (busy) document.body.setAttribute("data-busy", "1");
  else document.body.removeAttribute("data-busy");
}

// ---------------------------------------------------------------- agents and new games

function fillAgents() {
  const variant = $("#variant").value;
  const select = $("#agent");
  const previous = select.value;
  select.textContent = "";
  const trained = Object.fromEntries(S.agents.checkpoints.map((c) => [c.name, c.variant]));
  for (const spec of S.agents.agents) {
    const name = spec.split(":")[1];
    if (spec.includes(":") && name in trained && trained[name] && trained[name] !== variant) continue;
    const option = document.createElement("option");
    option.value = option.textContent = spec;
    select.appendChild(option);
  }
  const preferred = [previous, S.agents.analysis[variant], "greedy"].find(
    (spec) => spec && [...select.options].some((o) => o.value === spec));
  select.value = preferred;
}

// extra: optional start position and seed of the agent ({fen, seed}), e.g. from the page's URL.
async function newGame(extra) {
  const body = { variant: $("#variant").value, agent: $("#agent").value, human: $("#colour").value, ...extra };
  leaveReplay();
  setBusy(true);
  try {
    S.game = await api("POST", "/api/games", body);
    S.flipped = S.game.human === "black";
    S.prefix = [];
    S.error = null;
  } catch (error) {
    S.error = error.message;
  } finally {
    setBusy(false);
  }
  render();
}

async function send(method, url, body) {
  setBusy(true);
  render();
  try {
    S.game = await api(method, url, body);
    S.error = null;
  } catch (error) {
    S.error = error.message;
  } finally {
    S.prefix = [];
    setBusy(false);
  }
  render();
}

// ---------------------------------------------------------------- clicks

// Legal move indices whose path starts with `prefix`.
function matching(prefix) {
  const paths = S.game ? S.game.legal_paths : [];
  return paths.map((p, i) => i).filter((i) => prefix.every((sq, j) => paths[i][j] === sq));
}

function onSquare(n) {
  if (S.replay || S.busy || !S.game || S.game.result !== null || S.game.to_move !== S.game.human) return;
  const extended = [...S.prefix, n];
  const moves = matching(extended);
  if (S.prefix.length && moves.length) {
    S.prefix = extended;
    const done = moves.find((i) => S.game.legal_paths[i].length === extended.length);
    if (done !== undefined) {
      send("POST", `/api/games/${S.game.id}/moves`, { move: S.game.legal_moves[done] });
      return;
    }
  } else if (S.prefix.length <= 1 && matching([n]).length) {
    S.prefix = S.prefix[0] === n ? [] : [n];  // select, switch or (clicked again) deselect a stack
  } else {
    return;  // an illegal click changes nothing
  }
  S.error = null;
  render();
}

// ---------------------------------------------------------------- analysis

function analysisAgent() {
  const spec = S.game.agent;
  if (spec.startsWith("mcts:") || spec.startsWith("policy:")) return spec.split(":").slice(0, 2).join(":");
  return S.agents.analysis[S.game.variant];
}

async function analyse() {
  const game = S.game;
  if (!$("#analyse").checked || S.replay || !game || game.result !== null) return;
  const agent = analysisAgent();
  if (!agent) {
    S.analysis = { error: `no network agent for Variant ${game.variant} to analyse with` };
    render();
    return;
  }
  const key = `${game.fen}|${agent}|${$("#sims").value}`;
  if (S.analysisFor === key) return;
  S.analysisFor = key;
  S.analysis = null;
  $("#value").textContent = "analysing...";
  try {
    const result = await api("POST", "/api/analyse", {
      fen: game.fen, variant: game.variant, agent, simulations: Number($("#sims").value), top: 5,
    });
    if (S.analysisFor === key) S.analysis = result;
  } catch (error) {
    if (S.analysisFor === key) S.analysis = { error: error.message };
  }
  render();
}

function arrows() {
  const a = S.analysis;
  if (!$("#analyse").checked || S.replay || !a || a.error || !S.game || a.fen !== S.game.fen) return [];
  return a.moves.filter((m) => m.visits > 0).map((m) => ({
    path: m.path, share: m.share, move: m.move, label: `${Math.round(100 * m.share)}%`,
  }));
}

function valueText() {
  const a = S.analysis;
  if (!$("#analyse").checked || S.replay) return "";
  if (!a) return "analysing...";
  if (a.error) return `analysis: ${a.error}`;
  const sign = (v) => (v >= 0 ? "+" : "") + v.toFixed(2);
  const top = a.moves.map((m) => `${m.move} ${Math.round(100 * m.share)}%`).join(", ");
  return `value for White ${sign(a.value_white)} (${a.agent}, ${a.simulations} simulations): ${top}`;
}

// ---------------------------------------------------------------- replay

async function openPdn(file) {
  leaveReplay();
  await showReplayGame({ text: await file.text(), name: file.name }, 0);
}

// Game `index` of the opened file, replayed by the server (it sends one game at a time:
// a tournament's file holds a hundred).
async function showReplayGame(file, index) {
  setBusy(true);
  try {
    const data = await api("POST", "/api/replay", { pdn: file.text, game: index });
    S.replay = { ...file, index, ply: 0, game: data.game, count: data.games.length };
    S.error = null;
    const select = $("#replay-game");
    select.textContent = "";
    data.games.forEach((g, i) => {
      const option = document.createElement("option");
      option.value = i;
      option.textContent = `${i + 1}. ${g.tags.White || "?"} - ${g.tags.Black || "?"} ${g.tags.Result || "*"}`;
      select.appendChild(option);
    });
    select.value = index;
    document.body.classList.add("replaying");
  } catch (error) {
    S.error = `replay: ${error.message}`;
  } finally {
    setBusy(false);
  }
  render();
}

function leaveReplay() {
  S.replay = null;
  document.body.classList.remove("replaying");
}

function step(delta) {
  if (!S.replay) return;
  const game = S.replay.game;
  S.replay.ply = Math.max(0, Math.min(game.moves.length, S.replay.ply + delta));
  render();
}

// ---------------------------------------------------------------- drawing

function lastMoveClasses(classes, path) {
  if (!path) return;
  path.forEach((sq, i) => {
    const name = i === 0 ? "last-from" : i === path.length - 1 ? "last-to" : "last-path";
    (classes[sq] = classes[sq] || []).push(name);
  });
}

function moveList(moves, firstIsWhite, current) {
  const list = $("#moves");
  list.textContent = "";
  moves.forEach((text, i) => {
    const ply = i + (firstIsWhite ? 0 : 1);
    const li = document.createElement("li");
    li.textContent = text;
    li.dataset.num = ply % 2 === 0 ? `${ply / 2 + 1}.` : i === 0 ? "1..." : "";
    if (current === i + 1) li.classList.add("current");
    if (i === 0 && !firstIsWhite) li.style.gridColumn = "2";  // Black's first move stands in Black's column
    list.appendChild(li);
  });
  const current_li = list.querySelector("li.current") || list.lastElementChild;
  if (current_li) current_li.scrollIntoView({ block: "nearest" });
}

function renderReplay() {
  const game = S.replay.game;
  const position = game.positions[S.replay.ply];
  const classes = {};
  lastMoveClasses(classes, position.last_move);
  Board.draw($("#board"), { board: position.board, flipped: S.flipped, classes });
  moveList(game.moves, game.positions[0].to_move === "white", S.replay.ply);
  $("#replay-pos").textContent = `move ${S.replay.ply} of ${game.moves.length}`;
  $("#status").textContent = `Replay of ${S.replay.name}, game ${S.replay.index + 1} of ${S.replay.count} ` +
    `(Variant ${game.variant}, result ${game.result}): ${position.to_move === "white" ? "White" : "Black"} to move` +
    " - left/right arrows step through";
  $("#banner").hidden = true;
  $("#value").textContent = "";
}

function render() {
  $("#undo").disabled = !S.game || S.busy || !!S.replay;
  $("#pdn").hidden = !S.game || !!S.replay;
  if (S.game) $("#pdn").href = `/api/games/${S.game.id}/pdn`;
  if (S.replay) return renderReplay();
  const game = S.game;
  if (!game) {
    Board.draw($("#board"), { board: null, flipped: S.flipped });
    $("#status").textContent = S.error || "choose a variant, an agent and your colour, then New game";
    return;
  }
  const classes = {};
  const add = (sq, name) => (classes[sq] = classes[sq] || []).push(name);
  lastMoveClasses(classes, game.last_move);
  const yourTurn = game.result === null && game.to_move === game.human && !S.busy;
  if (yourTurn) {
    if (!S.prefix.length) new Set(game.legal_paths.map((p) => p[0])).forEach((sq) => add(sq, "movable"));
    S.prefix.forEach((sq, i) => add(sq, i === 0 ? "selected" : "path"));
    if (S.prefix.length) {
      const next = new Set(matching(S.prefix).map((i) => game.legal_paths[i][S.prefix.length]));
      next.forEach((sq) => add(sq, "legal"));
    }
  }
  Board.draw($("#board"), { board: game.board, flipped: S.flipped, classes, arrows: arrows() });
  moveList(game.moves, game.start_fen.startsWith("W"), null);
  const side = game.to_move === "white" ? "White" : "Black";
  let text;
  if (game.result !== null) text = `Game over: ${game.banner}`;
  else if (S.busy) text = `${game.human === "white" ? "Black" : "White"} (${game.agent}) is thinking...`;
  else if (S.prefix.length > 1) text = `${side} to move (you): capture under way, choose the next leap`;
  else text = `${side} to move${game.to_move === game.human ? " (you)" : ""}`;
  if (game.points) text += ` - points White ${game.points.white}, Black ${game.points.black}`;
  $("#status").textContent = S.error ? `${S.error}` : text;
  $("#status").classList.toggle("error", !!S.error);
  $("#to-move").setAttribute("class", `to-move ${game.to_move}`);
  $("#banner").hidden = game.result === null;
  $("#banner").textContent = game.result === null ? "" : `${game.banner} (${game.result})`;
  $("#value").textContent = valueText();
  if ($("#analyse").checked && S.analysisFor !== analysisKey()) analyse();
}

function analysisKey() {
  const agent = S.game ? analysisAgent() : null;
  return S.game ? `${S.game.fen}|${agent}|${$("#sims").value}` : null;
}

// ---------------------------------------------------------------- wiring

async function start() {
  $("#board").addEventListener("click", (event) => {
    const square = event.target.closest("[data-square]");
    if (square) onSquare(Number(square.dataset.square));
  });
  $("#new-game").addEventListener("submit", (event) => { event.preventDefault(); newGame({}); });
  $("#variant").addEventListener("change", fillAgents);
  $("#undo").addEventListener("click", () => S.game && send("POST", `/api/games/${S.game.id}/undo`));
  $("#flip").addEventListener("click", () => { S.flipped = !S.flipped; render(); });
  $("#analyse").addEventListener("change", () => { S.analysisFor = null; render(); });
  $("#sims").addEventListener("change", () => render());
  $("#pdn-file").addEventListener("change", (event) => {
    const file = event.target.files[0];
    event.target.blur();  // the arrow keys step the replay, not the file chooser
    if (file) openPdn(file);
  });
  $("#replay-game").addEventListener("change", (event) => {
    event.target.blur();  // back to the arrow keys
    showReplayGame(S.replay, Number(event.target.value));
  });
  $("#prev").addEventListener("click", () => step(-1));
  $("#next").addEventListener("click", () => step(1));
  $("#leave-replay").addEventListener("click", () => { leaveReplay(); render(); });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !S.replay && S.prefix.length) {
      S.prefix = [];  // drop a half-entered move
      render();
      return;
    }
    if (!S.replay || event.target.matches("select, textarea, input[type=number], input[type=text]")) return;
    const moves = { ArrowLeft: -1, ArrowRight: 1, Home: -1e9, End: 1e9 };
    if (event.key in moves) {
      event.preventDefault();
      step(moves[event.key]);
    }
  });
  try {
    S.agents = await api("GET", "/api/agents");
  } catch (error) {
    S.error = `cannot list the agents: ${error.message}`;
    render();
    return;
  }
  fillAgents();
  const params = new URLSearchParams(location.search);
  for (const key of ["variant", "colour"]) if (params.get(key)) $(`#${key}`).value = params.get(key);
  if (params.get("variant")) fillAgents();
  const agent = params.get("agent");
  if (agent) {
    // Any spec the server offers, options included (mcts:variant_I:sims=16): the server checks it.
    if (![...$("#agent").options].some((o) => o.value === agent)) $("#agent").add(new Option(agent, agent));
    $("#agent").value = agent;
  }
  const extra = {};
  if (params.get("fen")) extra.fen = params.get("fen");
  if (params.get("seed")) extra.seed = Number(params.get("seed"));
  await newGame(extra);
  document.body.dataset.ready = "1";
}

start();
