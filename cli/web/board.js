// The analysis page's state, the helpers every part of its script uses, and the board drawn
// from the state (the houses, their numbers, the best move's arrow, the evaluation bar and
// graph, the game's moves with their variations, the status line). One of the page's three ES
// modules (board.js, analysis.js, game.js: game.js is the entry), compiled into `oware serve`
// with the markup (index.html) and page.css.


const t0 = performance.now();

// What the game module (game.js) does when the board or the analysis asks: it fills these in
// when it loads, so that board.js and analysis.js never import game.js (the modules import one
// way: game.js uses analysis.js, both use board.js).
const hooks = { onHouse: () => {}, maybeComputer: () => {}, playLine: () => {}, updateUrl: () => {}, gotoNode: () => {}, goto: () => {}, background: () => {} };
const START = [4,4,4,4,4,4,4,4,4,4,4,4];
// The game is a tree of positions (a variation keeps the moves it left). A position (a node):
// {id, board (South's A..F then North's a..f), side, captured ({south, north}, or null when not
// known), move (the house played to reach it), from (that house's index), over (why the game
// ended there, once known), parent, children (the first is the main line), next (the child the
// line shown follows), legal (its moves from the rules, once asked), data (its evaluation, once
// asked)}. S.game: the line shown, from the first position through the one shown (S.cur) and on
// through each position's `next`.
const S = {
  rules: "awari", mode: "play", computer: "none", view: "south", movetime: 1000, flip: false, practice: false, level: 5,
  revealed: null, removing: false,
  game: [], cur: 0, built: {}, shown: 0, asked: 0, pending: null, timer: null, setup: null, ids: 0,
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
// A new position of the tree.
const node = (fields) => ({ id: ++S.ids, parent: null, children: [], next: null, legal: null, data: null, ...fields });
// Whether the analysis of the position shown is hidden (practice, until asked).
const hidden = () => S.practice && S.revealed !== cur();

// ---------------------------------------------------------------- the board

// The board as the player sees it: North's f..a on top and South's A..F below, or turned
// round (flipped: South's F..A on top, North's a..f below). Each house is a button named for
// screen readers ("South's E, 4 stones").
function buildBoard() {
  const b = $("board");
  b.innerHTML = "";
  const put = (e, col, row) => { e.style.gridColumn = col; e.style.gridRow = row; b.appendChild(e); return e; };
  const el = (tag, cls, id, html) => { const e = document.createElement(tag); e.className = cls; if (id) e.id = id; if (html) e.innerHTML = html; return e; };
  const top = S.flip ? "south" : "north", bottom = other(top);
  put(el("span", "label", "label-" + top, title(top) + '<span class="to-move"></span>'), 1, 1);
  put(el("span", "label", "label-" + bottom, title(bottom) + '<span class="to-move"></span>'), 8, 4);
  put(el("div", "store " + top, "store-" + top, "<b>0</b><small>" + title(top) + "</small>"), 1, "2 / span 2");
  put(el("div", "store " + bottom, "store-" + bottom, "<b>0</b><small>" + title(bottom) + "</small>"), 8, "2 / span 2");
  // Sowing runs A..F, a..f: anticlockwise whichever way up.
  for (let c = 0; c < 6; c++) {
    const up = S.flip ? 5 - c : 11 - c, down = S.flip ? 6 + c : c;
    put(el("span", "val", "val-" + houseName(up)), c + 2, 1);
    put(houseEl(up, "top"), c + 2, 2);
    put(houseEl(down, "bottom"), c + 2, 3);
    put(el("span", "val", "val-" + houseName(down)), c + 2, 4);
  }
  $("board").dataset.flipped = S.flip ? "1" : "";
}

function houseEl(i, row) {
  const e = document.createElement("button");
  e.type = "button";
  e.className = "house " + row; e.id = "house-" + houseName(i); e.dataset.index = i;
  e.innerHTML = '<span class="name" aria-hidden="true">' + houseName(i) + '</span><span class="count" aria-hidden="true">0</span>';
  e.addEventListener("click", (ev) => hooks.onHouse(i, ev.shiftKey || (S.mode === "setup" && S.removing) ? -1 : 1));
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
  document.body.classList.toggle("practice-hidden", S.mode === "play" && hidden());
  // Set-up's stores show the counts typed (a "?" where none is).
  const typed = (id) => $(id).value === "" ? null : +$(id).value;
  const shown = setup ? { board: S.setup.board, captured: { south: typed("cap-s"), north: typed("cap-n") } } : shownBoard(p);
  const side = setup ? S.setup.side : p.side;
  for (let i = 0; i < 12; i++) {
    const e = $("house-" + houseName(i));
    e.querySelector(".count").textContent = shown.board[i];
    e.setAttribute("aria-label", title(i < 6 ? "south" : "north") + "'s " + houseName(i) + ", " + plural(shown.board[i], "stone"));
    e.classList.remove("playable", "best", "last");
    const v = $("val-" + houseName(i));
    v.innerHTML = ""; v.className = "val"; v.removeAttribute("title");
  }
  const store = (s) => shown.captured && shown.captured[s] !== null && shown.captured[s] !== undefined ? round1(shown.captured[s]) : "?";
  $("store-south").querySelector("b").textContent = store("south");
  $("store-north").querySelector("b").textContent = store("north");
  $("label-south").classList.toggle("turn", side === "south");
  $("label-north").classList.toggle("turn", side === "north");
  $("label-south").querySelector(".to-move").textContent = side === "south" ? " to move" : "";
  $("label-north").querySelector(".to-move").textContent = side === "north" ? " to move" : "";
  $("side").textContent = title(S.setup ? S.setup.side : "south") + " to move";
  renderGame();
  updateNav();
  renderGraph();
  if (setup) { clearAnalysis(); return; }
  if (p.from !== null && p.from !== undefined) $("house-" + houseName(p.from)).classList.add("last");
  const d = p.data;
  $("unit").textContent = p.over ? "" : "Numbers: " + unitOf(p).words + ". Coloured when proven (green good for " +
    title(S.view) + ", red good for " + title(other(S.view)) + ", grey even); plain numbers are the engine's estimates.";
  const thinking = S.computer === p.side && S.cur === S.game.length - 1;
  // The houses that can be played: known from the rules before any analysis.
  const legal = p.legal ? p.legal.moves : d ? d.moves : [];
  if (!p.over && !thinking) for (const m of legal) $("house-" + houseName(base(p.side) + m.pit)).classList.add("playable");
  renderBar(p);
  if (!d || p.over) {
    drawArrow(null);
    // Nothing stale: the line and details of another position go.
    if (!d && !p.over) { $("line").innerHTML = ""; $("line-caption").textContent = ""; $("line-end").textContent = ""; $("play-line").disabled = true; $("details-text").textContent = ""; }
    return;
  }
  if (hidden()) { drawArrow(null); return; }
  for (const m of d.moves) {
    const i = base(p.side) + m.pit, h = houseName(i);
    const e = $("house-" + h), v = $("val-" + h);
    if (m.number === null) continue;
    const n = document.createElement("span"); n.className = "n"; n.textContent = m.mark + fmt(m.number);
    v.appendChild(n);
    // The depth to capture, readable without hover: "in 7" (plies to the next capture).
    if (m.depth) { const k = document.createElement("span"); k.className = "depth"; k.textContent = "in " + m.depth; v.appendChild(k); }
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
  renderBar(null);
}

// The evaluation bar beside the board: the chosen side's share, its number, and whether it is
// proven ("exact") or the engine's estimate.
function renderBar(p) {
  const bar = $("evalbar"), fill = $("evalbar-fill"), label = $("evalbar-label");
  const d = p && !p.over ? p.data : null;
  let x = d && d.number !== undefined ? d.number : null;
  if (p && p.over && p.over.captured) x = p.over.captured[S.view] - p.over.captured[other(S.view)];
  const show = x !== null && !(p && hidden());
  bar.classList.toggle("exact", show && (!!(p && p.over) || !!(d && d.exact)));
  bar.classList.toggle("estimate", show && !(p && p.over) && !!(d && !d.exact));
  // The bottom side's share of the bar (the board's bottom row is the bottom's).
  const bottom = S.flip ? "north" : "south";
  const forBottom = x === null ? 0 : (bottom === S.view ? x : -x);
  fill.style.height = (show ? 50 + 50 * Math.tanh(forBottom / 8) : 50) + "%";
  fill.className = "fill " + bottom;
  bar.dataset.value = show ? String(round1(x)) : "";
  const exact = bar.classList.contains("exact");
  label.textContent = show ? fmt(x) + (exact ? " exact" : "") : "";
  bar.setAttribute("aria-label", show ? "Evaluation: " + fmt(x) + " for " + title(S.view) + (exact ? ", exact" : ", the engine's estimate") : "Evaluation: not known");
}

// The graph of the evaluation over the line shown: one point per position evaluated, the
// chosen side's number, exact points filled, estimates hollow, marked moves coloured; a click
// on a point goes to its position.
function renderGraph() {
  const svg = $("graph");
  if (!svg) return;
  svg.innerHTML = "";
  const n = S.game.length;
  const W = 600, H = 120, pad = 8;
  const xs = (k) => pad + (n <= 1 ? 0 : k * (W - 2 * pad) / (n - 1));
  const ys = (v) => H / 2 - (H / 2 - pad) * Math.tanh(v / 8);
  const ns = "http://www.w3.org/2000/svg";
  const mk = (tag, attrs) => { const e = document.createElementNS(ns, tag); for (const k in attrs) e.setAttribute(k, attrs[k]); svg.appendChild(e); return e; };
  mk("line", { x1: 0, x2: W, y1: H / 2, y2: H / 2, class: "axis" });
  mk("line", { x1: xs(S.cur), x2: xs(S.cur), y1: 0, y2: H, class: "cursor" });
  const pts = [];
  S.game.forEach((p, k) => {
    const v = pointValue(p);
    if (v !== null) pts.push([k, v.x, v.exact]);
  });
  if (pts.length > 1) mk("polyline", { points: pts.map(([k, x]) => xs(k) + "," + ys(x)).join(" "), class: "curve" });
  for (const [k, x, exact] of pts) {
    const p = S.game[k], mark = p.judged ? p.judged.mark : "";
    const c = mk("circle", { cx: xs(k), cy: ys(x), r: mark ? 6 : 4.5,
      class: "pt " + (exact ? "exact" : "estimate") + (mark ? " mark-" + markClass(mark) : "") + (k === S.cur ? " current" : ""), "data-ply": k });
    const t = document.createElementNS(ns, "title");
    t.textContent = (k === 0 ? "start" : "after " + p.move + mark) + ": " + fmt(x) + " for " + title(S.view) + (exact ? " (exact)" : " (estimate)");
    c.appendChild(t);
  }
  svg.dataset.points = String(pts.length);
}

// A position's number for the graph: its evaluation, or its final score once over.
function pointValue(p) {
  if (S.practice && !p.revealedOnce) return null;
  if (p.over && p.over.captured) return { x: p.over.captured[S.view] - p.over.captured[other(S.view)], exact: true };
  if (!p.data || p.data.number === undefined || p.over) return null;
  return { x: p.data.number, exact: !!p.data.exact };
}

const markClass = (m) => m === "??" ? "blunder" : m === "?" ? "mistake" : "dubious";

// The arrow of the best move: from its house to the house its last stone falls in, bowing
// over the board's middle (never over a house's letter, which is on its row's outer side).
function drawArrow(from) {
  const svg = $("arrow");
  for (const e of svg.querySelectorAll("path.best")) e.remove();
  if (from === null || S.mode !== "play") return;
  const p = cur();
  let n = p.board[from], to = from;
  if (!n) return;
  while (n > 0) { to = (to + 1) % 12; if (to !== from) n--; }
  const wrap = $("board-wrap").getBoundingClientRect();
  const centre = (i) => { const r = $("house-" + houseName(i)).querySelector(".count").getBoundingClientRect();
    const h = $("house-" + houseName(i)).getBoundingClientRect();
    return [r.left + r.width / 2 - wrap.left, r.top + r.height / 2 - wrap.top, h.height]; };
  const [ax, ay, hh] = centre(from), [bx, by] = centre(to);
  const bottomRow = $("house-" + houseName(from)).classList.contains("bottom");
  const same = Math.abs(ay - by) < 1, bow = bottomRow ? -1 : 1;
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

// ---------------------------------------------------------------- the game's moves

// The moves as a tree, as an analysis board lists them: the main line, each variation in
// brackets after the move it replaces; a move and its answer kept together on one line.
function renderGame() {
  const box = $("moves");
  box.innerHTML = "";
  const root = S.game[0];
  const onLine = new Map(S.game.map((p, k) => [p, k]));
  const start = moveEl(root, "start", onLine);
  start.title = "The game's first position";
  box.appendChild(start);
  box.appendChild(document.createTextNode(" "));
  sequence(root, box, onLine, true);
}

// A move (or the start) as a focusable entry.
function moveEl(p, text, onLine) {
  const e = document.createElement("span");
  e.className = "mv" + (p === cur() ? " current" : "");
  e.tabIndex = 0;
  e.setAttribute("role", "button");
  e.dataset.id = p.id;
  if (onLine.has(p)) e.dataset.index = onLine.get(p);
  e.dataset.move = p.move || "";
  e.textContent = text;
  if (p.judged && p.judged.mark && !S.practice) {
    const m = document.createElement("span");
    m.className = "mark mark-" + markClass(p.judged.mark);
    m.textContent = p.judged.mark;
    e.appendChild(m);
    e.title = p.judged.words;
  }
  e.setAttribute("aria-label", (p.move ? ply(p) + " " + title(other(p.side)) + " " + p.move : "start") + (p.judged && p.judged.mark ? " " + p.judged.words : "") + (p === cur() ? ", shown" : ""));
  return e;
}

// The ply number of position p's move (1 for the game's first move).
function ply(p) { let k = 0; for (let q = p; q.parent; q = q.parent) k++; return k; }

// The moves after `from`: its main line, with the variations of each move.
function sequence(from, box, onLine, main) {
  const root = S.game[0], offset = root.side === "north" ? 1 : 0;
  let p = from, pair = null, first = true;
  while (p.children.length) {
    const q = p.children[0], k = ply(q) - 1 + offset;
    if (k % 2 === 0 || first || !pair) {
      pair = document.createElement("span"); pair.className = "pair";
      const num = document.createElement("span"); num.className = "num";
      num.textContent = (Math.floor(k / 2) + 1) + (k % 2 ? "…" : ".");
      pair.appendChild(num);
      box.appendChild(pair);
      box.appendChild(document.createTextNode(" "));
    }
    pair.appendChild(moveEl(q, q.move + (q.over ? " (end)" : ""), onLine));
    first = false;
    if (p.children.length > 1) {
      for (const v of p.children.slice(1)) {
        const vbox = document.createElement("span"); vbox.className = "variation";
        const vk = ply(v) - 1 + offset;
        const vp = document.createElement("span"); vp.className = "pair";
        const num = document.createElement("span"); num.className = "num";
        num.textContent = (Math.floor(vk / 2) + 1) + (vk % 2 ? "…" : ".");
        vp.appendChild(num);
        vp.appendChild(moveEl(v, v.move + (v.over ? " (end)" : ""), onLine));
        vbox.appendChild(vp);
        vbox.appendChild(document.createTextNode(" "));
        sequence(v, vbox, onLine, false);
        box.appendChild(vbox);
        box.appendChild(document.createTextNode(" "));
      }
      pair = null;
    }
    p = q;
  }
  return main;
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

export { hooks, t0, START, S, $, other, title, houseName, houseIndex, stones, base, absolute, plural, round1, fmt, cur, last, node, hidden,
  buildBoard, toView, tableNumber, shownBoard, render, drawArrow, setStatus, renderGraph, markClass };
