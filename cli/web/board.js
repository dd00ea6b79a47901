// The analysis page's state, the helpers every part of its script uses, and the board drawn
// from the state (the houses, their numbers, the best move's arrow, the game's moves, the
// status line). One of the page's three ES modules (board.js, analysis.js, game.js: game.js is
// the entry), compiled into `oware serve` with the markup (index.html) and page.css.


const t0 = performance.now();

// What the game module (game.js) does when the board or the analysis asks: it fills these in
// when it loads, so that board.js and analysis.js never import game.js (the modules import one
// way: game.js uses analysis.js, both use board.js).
const hooks = { onHouse: () => {}, maybeComputer: () => {}, playLine: () => {}, updateUrl: () => {} };
const START = [4,4,4,4,4,4,4,4,4,4,4,4];
// S.game: the positions of the game, from its first (set up, or the start) on; S.cur: the one
// shown. A position: {board (South's A..F then North's a..f), side, captured ({south, north}, or
// null when not known), move (the house played to reach it), from (that house's index), over
// (why the game ended there, once known), data (its evaluation, once asked)}.
const S = {
  rules: "awari", mode: "play", computer: "none", view: "south", movetime: 1000,
  game: [], cur: 0, built: {}, shown: 0, asked: 0, pending: null, timer: null, setup: null,
};
const $ = (id) => document.getElementById(id);
const other = (s) => s === "south" ? "north" : "south";
const title = (s) => s === "south" ? "South" : "North";
const houseName = (i) => i < 6 ? "ABCDEF"[i] : "abcdef"[i - 6];
const houseIndex = (h) => "ABCDEF".indexOf(h) >= 0 ? "ABCDEF".indexOf(h) : 6 + "abcdef".indexOf(h);
const stones = (b) => b.reduce((a, c) => a + c, 0);
const base = (side) => side === "south" ? 0 : 6;
// Absolute board (South A..F, North a..f) of a mover-first board whose mover is `side`.
const absolute = (mf, side) => side === "south" ? mf.slice() : mf.slice(6).concat(mf.slice(0, 6));
const plural = (n, word) => n + " " + (n === 1 ? word : word === "ply" ? "plies" : word + "s");
const round1 = (x) => Math.round(x * 10) / 10;
// A number of stones with its sign: "+3", "−0.8", "0" (a true minus sign).
const fmt = (x) => { const r = round1(x); return r > 0 ? "+" + r : r < 0 ? "−" + (-r) : "0"; };
const cur = () => S.game[S.cur];
const last = () => S.game[S.game.length - 1];

// ---------------------------------------------------------------- the board

function buildBoard() {
  const b = $("board");
  b.innerHTML = "";
  const put = (e, col, row) => { e.style.gridColumn = col; e.style.gridRow = row; b.appendChild(e); return e; };
  const el = (tag, cls, id, html) => { const e = document.createElement(tag); e.className = cls; if (id) e.id = id; if (html) e.innerHTML = html; return e; };
  put(el("span", "label", "label-north", "North"), 1, 1);
  put(el("span", "label", "label-south", "South"), 8, 4);
  put(el("div", "store north", "store-north", "<b>0</b><small>North</small>"), 1, "2 / span 2");
  put(el("div", "store south", "store-south", "<b>0</b><small>South</small>"), 8, "2 / span 2");
  // North's houses f..a from left to right on top, their numbers above them; South's A..F
  // below, their numbers under them. Sowing runs A..F, a..f: anticlockwise.
  for (let c = 0; c < 6; c++) {
    const n = 11 - c, s = c;
    put(el("span", "val", "val-" + houseName(n)), c + 2, 1);
    put(houseEl(n), c + 2, 2);
    put(houseEl(s), c + 2, 3);
    put(el("span", "val", "val-" + houseName(s)), c + 2, 4);
  }
}

function houseEl(i) {
  const e = document.createElement("div");
  e.className = "house"; e.id = "house-" + houseName(i); e.dataset.index = i;
  e.innerHTML = '<span class="name">' + houseName(i) + '</span><span class="count">0</span>';
  e.addEventListener("click", (ev) => hooks.onHouse(i, ev.shiftKey ? -1 : 1));
  e.addEventListener("contextmenu", (ev) => { ev.preventDefault(); hooks.onHouse(i, -1); });
  return e;
}

// ---------------------------------------------------------------- numbers from one side

// The sign that turns the view of `side` (the mover) into the chosen side's.
const toView = (side) => side === S.view ? 1 : -1;

// What the numbers mean for position `p`: its unit and its words.
function unitOf(p) {
  if (p.captured) return { final: true, words: title(S.view) + "'s lead at the game's end, in stones (the stones captured so far and those the board still holds)" };
  return { final: false, words: title(S.view) + "'s lead in the " + plural(stones(p.board), "stone") + " on the board (the stones captured so far are not known)" };
}

// A value of the tables (the mover's view: stones the mover still captures minus the
// opponent's) in the page's unit, from the chosen side.
function tableNumber(p, value) {
  const lead = p.captured ? p.captured[S.view] - p.captured[other(S.view)] : 0;
  return lead + toView(p.side) * value;
}

// The class of a proven number: good, even or bad for the chosen side.
const proven = (x) => x > 0 ? "win" : x < 0 ? "loss" : "draw";

// ---------------------------------------------------------------- rendering

function shownBoard(p) {
  // A finished game: the stones left went to the stores.
  if (p.over) return { board: p.board.map(() => 0), captured: p.over.captured };
  return { board: p.board, captured: p.captured };
}

function render() {
  const p = cur();
  const setup = S.mode === "setup";
  $("board").classList.toggle("setup", setup);
  const shown = setup ? { board: S.setup.board, captured: null } : shownBoard(p);
  const side = setup ? S.setup.side : p.side;
  for (let i = 0; i < 12; i++) {
    const e = $("house-" + houseName(i));
    e.querySelector(".count").textContent = shown.board[i];
    e.classList.remove("playable", "best", "last");
    const v = $("val-" + houseName(i));
    v.textContent = ""; v.className = "val"; v.removeAttribute("title");
  }
  $("store-south").querySelector("b").textContent = shown.captured ? round1(shown.captured.south) : "?";
  $("store-north").querySelector("b").textContent = shown.captured ? round1(shown.captured.north) : "?";
  $("label-south").classList.toggle("turn", side === "south");
  $("label-north").classList.toggle("turn", side === "north");
  $("side").textContent = title(S.setup ? S.setup.side : "south") + " to move";
  renderGame();
  updateNav();
  if (setup) { clearAnalysis(); return; }
  if (p.from !== null && p.from !== undefined) $("house-" + houseName(p.from)).classList.add("last");
  const d = p.data;
  $("unit").textContent = p.over ? "" : "Numbers: " + unitOf(p).words + ". Coloured when proven (green good for " +
    title(S.view) + ", red good for " + title(other(S.view)) + ", grey even); plain numbers are the engine's estimates.";
  if (!d || p.over) {
    drawArrow(null);
    // Nothing stale: the line and details of another position go.
    if (!d && !p.over) { $("line").innerHTML = ""; $("line-caption").textContent = ""; $("line-end").textContent = ""; $("play-line").disabled = true; $("details-text").textContent = ""; }
    return;
  }
  const thinking = S.computer === p.side && S.cur === S.game.length - 1;
  for (const m of d.moves) {
    const i = base(p.side) + m.pit, h = houseName(i);
    const e = $("house-" + h), v = $("val-" + h);
    if (!thinking) e.classList.add("playable");
    if (m.number === null) continue;
    v.textContent = m.mark + fmt(m.number);
    v.classList.add(m.exact ? proven(m.number) : "estimate");
    v.title = m.words;
    if (m.best) { e.classList.add("best"); v.classList.add("best"); }
  }
  drawArrow(d.best === null ? null : base(p.side) + d.best);
}

function clearAnalysis() {
  $("line").innerHTML = ""; $("line-caption").textContent = ""; $("line-end").textContent = "";
  $("play-line").disabled = true; $("unit").textContent = ""; $("details-text").textContent = "";
  drawArrow(null);
}

// The arrow of the best move: from its house to the house its last stone falls in.
function drawArrow(from) {
  const svg = $("arrow");
  for (const e of svg.querySelectorAll("path.best")) e.remove();
  if (from === null || S.mode !== "play") return;
  const p = cur();
  let n = p.board[from], to = from;
  if (!n) return;
  while (n > 0) { to = (to + 1) % 12; if (to !== from) n--; }
  const wrap = $("board-wrap").getBoundingClientRect();
  const centre = (i) => { const r = $("house-" + houseName(i)).getBoundingClientRect();
    return [r.left + r.width / 2 - wrap.left, r.top + r.height / 2 - wrap.top, r.height]; };
  const [ax, ay, hh] = centre(from), [bx, by] = centre(to);
  // It leaves its house's count and stops short of the other's; within a row it bows out over
  // the board's middle.
  const same = Math.abs(ay - by) < 1, bow = from < 6 ? -1 : 1;
  const dx = bx - ax, dy = by - ay, len = Math.hypot(dx, dy) || 1;
  const [x1, y1] = same ? [ax, ay + bow * 0.3 * hh] : [ax + dx / len * 0.3 * hh, ay + dy / len * 0.3 * hh];
  const [x2, y2] = same ? [bx, by + bow * 0.3 * hh] : [bx - dx / len * 0.38 * hh, by - dy / len * 0.38 * hh];
  const mid = same ? [(x1 + x2) / 2, ay + bow * 0.75 * hh] : [(x1 + x2) / 2, (y1 + y2) / 2];
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("class", "best");
  path.id = "best-arrow";
  path.dataset.from = houseName(from); path.dataset.to = houseName(to);
  path.setAttribute("d", "M " + x1 + " " + y1 + " Q " + mid[0] + " " + mid[1] + " " + x2 + " " + y2);
  path.setAttribute("marker-end", "url(#head)");
  svg.appendChild(path);
}

function renderGame() {
  const box = $("moves");
  box.innerHTML = "";
  const root = S.game[0];
  const start = document.createElement("span");
  start.className = "mv" + (S.cur === 0 ? " current" : ""); start.dataset.index = 0;
  start.textContent = "start";
  start.title = "The game's first position";
  box.appendChild(start);
  // Move numbers count South's moves; a game whose first mover is North starts "1. … a".
  const offset = root.side === "north" ? 1 : 0;
  for (let k = 1; k < S.game.length; k++) {
    const p = S.game[k], ply = k - 1 + offset;
    if (ply % 2 === 0 || k === 1) {
      const num = document.createElement("span"); num.className = "num";
      num.textContent = (Math.floor(ply / 2) + 1) + (ply % 2 ? ". …" : ".");
      box.appendChild(num);
    }
    const e = document.createElement("span");
    e.className = "mv" + (k === S.cur ? " current" : ""); e.dataset.index = k;
    e.textContent = p.move + (p.over ? " (end)" : "");
    box.appendChild(e);
    box.appendChild(document.createTextNode(" "));
  }
}

function updateNav() {
  const play = S.mode === "play";
  $("first").disabled = $("back").disabled = !play || S.cur === 0;
  $("forward").disabled = $("last").disabled = !play || S.cur >= S.game.length - 1;
  $("undo").disabled = !play || S.game.length < 2;
}

function setStatus(text, error, note) {
  const e = $("status");
  e.textContent = text;
  if (note) { const n = document.createElement("span"); n.className = "note"; n.textContent = note; e.appendChild(n); }
  e.classList.toggle("error", !!error);
}

export { hooks, t0, START, S, $, other, title, houseName, stones, base, absolute, plural, round1, fmt, cur, last,
  buildBoard, toView, tableNumber, shownBoard, render, drawArrow, setStatus };
