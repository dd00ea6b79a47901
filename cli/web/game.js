// The game: playing moves (the player's, the computer's, the best line's), going back and
// forth, setting up a position, the address that holds the game, and the page's start. The
// entry of the page's script: index.html loads this module, which imports the others.

import { $, S, START, hooks, absolute, base, buildBoard, cur, drawArrow, houseName, last, other, plural, render,
  setStatus, shownBoard, stones, title } from "./board.js";
import { digest, ending, evaluate, query, show } from "./analysis.js";

// ---------------------------------------------------------------- playing

// The position after `m` (a move of position p: {pit, house, captured, ends_game, child, end}).
function after(p, m) {
  const i = base(p.side) + m.pit;
  if (m.ends_game) {
    // A move that ends the game (a grand slam whose stones go to the opponent): its value
    // shares out the board.
    const n = stones(p.board), v = m.end === null || m.end === undefined ? 0 : m.end;
    const o = ending(p, (n + v) / 2);
    o.reason = title(p.side) + " played " + houseName(i) + ", which ends the game: the stones left are shared out";
    return { board: p.board.slice(), side: other(p.side), captured: p.captured && { ...p.captured }, move: houseName(i), from: i, over: o };
  }
  const q = { board: absolute(m.child, other(p.side)), side: other(p.side), captured: p.captured && { ...p.captured }, move: houseName(i), from: i, over: null };
  if (q.captured) q.captured[p.side] += m.captured;
  return q;
}

// A position met again since the last capture, the same side to move, ends the game: awari
// shares the stones left evenly, abapa gives each side the stones in his row.
function repetition(q, k) {
  const n = stones(q.board);
  for (let j = k; j >= 0 && !S.game[j].over && stones(S.game[j].board) === n; j--) {
    const h = S.game[j];
    if (h.side === q.side && h.board.every((c, x) => c === q.board[x])) {
      const south = stones(q.board.slice(0, 6)), north = stones(q.board.slice(6));
      const abapa = S.rules.startsWith("abapa");
      const split = abapa ? { south, north } : { south: n / 2, north: n / 2 };
      const captured = q.captured && { south: q.captured.south + split.south, north: q.captured.north + split.north };
      return { reason: "the position repeats: " + (abapa ? "each side takes the stones in his row" : "the " + plural(n, "stone") + " left are shared evenly"), captured, split };
    }
  }
  return null;
}

// Plays move `m` from the position shown: the moves after it are dropped (a new line).
function playMove(m) {
  const p = cur();
  const q = after(p, m);
  S.game.length = S.cur + 1;
  if (!q.over && !m.captured) q.over = repetition(q, S.cur);
  S.game.push(q);
  goto(S.game.length - 1);
}

function onHouse(i, delta) {
  if (S.mode === "setup") {
    const b = S.setup.board, n = b[i] + delta;
    if (n < 0 || (delta > 0 && stones(b) >= 48)) return;
    b[i] = n;
    fitCaptured();
    render();
    return;
  }
  if (delta < 0) return;
  const p = cur();
  // The computer's side is the computer's: a click there while it thinks does nothing.
  if (S.computer === p.side && S.cur === S.game.length - 1) return;
  if (p.over || !p.data) return;
  const m = p.data.moves.find((x) => base(p.side) + x.pit === i);
  if (m) playMove(m);
}

function maybeComputer() {
  const p = cur();
  if (S.mode !== "play" || p.over || S.computer !== p.side || S.cur !== S.game.length - 1 || !p.data) return;
  const m = p.data.moves.find((x) => x.best);
  if (!m) { setStatus("The computer has no move to play here: play " + title(p.side) + "'s move for it, or let nobody play.", true); return; }
  clearTimeout(S.timer);
  S.timer = setTimeout(() => {
    if (cur() === p && S.cur === S.game.length - 1 && S.computer === p.side && S.mode === "play") playMove(m);
  }, p.data.source === "tables" ? 500 : 300);
}

// Plays the best line shown up to its ply `upto` (all of it by default).
function playLine(upto) {
  const p = cur();
  if (!p.data || p.over) return;
  const line = p.data.line.slice(0, upto || p.data.line.length);
  S.game.length = S.cur + 1;
  let k = S.cur;
  for (const ply of line) {
    const here = S.game[k];
    const q = after(here, ply);
    if (!q.over && !ply.captured) q.over = repetition(q, k);
    S.game.push(q);
    k++;
    if (q.over) break;
  }
  goto(S.game.length - 1);
}

// Shows position k of the game.
function goto(k) {
  clearTimeout(S.timer);
  S.lineAll = false;
  S.cur = Math.max(0, Math.min(k, S.game.length - 1));
  const p = cur();
  render();
  if (p.data || p.over) { show(); return; }
  // Stepping quickly past positions does not ask for each.
  clearTimeout(S.askTimer);
  S.askTimer = setTimeout(() => evaluate(S.cur), S.stepping ? 120 : 0);
  setStatus(title(p.side) + " to move. …");
}

function undo() {
  if (S.game.length < 2) return;
  let n = S.game.length - 1;
  // Against the computer, back to the player's turn.
  if (S.computer === S.game[n - 1].side && n > 1) n--;
  S.game.length = n;
  goto(n - 1);
}

// ---------------------------------------------------------------- setting up

function setMode(mode) {
  if (mode === S.mode) return;
  clearTimeout(S.timer);
  S.mode = mode;
  $("mode-play").classList.toggle("active", mode === "play");
  $("mode-setup").classList.toggle("active", mode === "setup");
  $("setup-bar").hidden = mode !== "setup";
  document.body.classList.toggle("setting-up", mode === "setup");
  if (mode === "setup") {
    if (S.pending) { S.pending.abort.abort(); S.pending = null; }
    const p = cur();
    const shown = shownBoard(p);
    S.setup = { board: shown.board.slice(), side: p.side };
    $("cap-s").value = shown.captured ? shown.captured.south : "";
    $("cap-n").value = shown.captured ? shown.captured.north : "";
    fitCaptured();
    render();
    setStatus("Set up a position, then Analyse.");
    return;
  }
  goto(S.cur);
}

// The captured counts of the set-up: they make 48 stones with the board, or are not known.
// Counts that no longer fit the board are dropped (never carried silently).
function fitCaptured() {
  const n = stones(S.setup.board), left = 48 - n;
  const cs = $("cap-s"), cn = $("cap-n");
  if (cs.value !== "" && cn.value !== "" && +cs.value + +cn.value !== left) { cs.value = ""; cn.value = ""; }
  $("cap-hint").textContent = plural(n, "stone") + " on the board: " + (left === 0 ? "nothing captured yet." :
    "the captured stones make " + left + ". Type one side's count (the other follows), or leave them empty if not known.");
}

function capturedOfSetup() {
  const n = stones(S.setup.board), left = 48 - n;
  const cs = $("cap-s").value, cn = $("cap-n").value;
  const ok = (x) => Number.isInteger(x) && x >= 0;
  if (cs !== "" && cn !== "" && ok(+cs) && ok(+cn) && +cs + +cn === left) return { south: +cs, north: +cn };
  if (left === 0) return { south: 0, north: 0 };
  return null;
}

function analyseSetup() {
  const captured = capturedOfSetup();
  const typed = $("cap-s").value !== "" || $("cap-n").value !== "";
  S.game = [{ board: S.setup.board.slice(), side: S.setup.side, captured, move: null, from: null, over: null }];
  S.cur = 0;
  setMode("play");
  if (typed && !captured) setStatus("The captured counts did not make 48 stones with the board: they are left unknown.", false);
}

// ---------------------------------------------------------------- the address

// The address holds the game: its first position (rules, south, north, to_move, captured),
// its moves (moves=F,e,...), the position shown (ply) and the page's settings (computer, view,
// movetime). docs/server.md lists them.
function updateUrl() {
  const root = S.game[0], q = new URLSearchParams();
  q.set("rules", S.rules);
  const isStart = root.side === "south" && root.board.every((c) => c === 4) && root.captured && root.captured.south === 0;
  if (!isStart) {
    q.set("south", root.board.slice(0, 6).join(","));
    q.set("north", root.board.slice(6).join(","));
    q.set("to_move", root.side);
    if (root.captured) q.set("captured", root.captured.south + ":" + root.captured.north);
  }
  if (S.game.length > 1) q.set("moves", S.game.slice(1).map((p) => p.move).join(","));
  if (S.cur !== S.game.length - 1) q.set("ply", String(S.cur));
  if (S.computer !== "none") q.set("computer", S.computer);
  if (S.view !== "south") q.set("view", S.view);
  if (S.movetime !== 1000) q.set("movetime", String(S.movetime));
  const url = location.pathname + "?" + q.toString().replace(/%2C/g, ",").replace(/%3A/g, ":");
  if (url !== location.pathname + location.search) history.replaceState(null, "", url);
}

function fromUrl() {
  const q = new URLSearchParams(location.search);
  if (q.get("rules")) S.rules = q.get("rules");
  if (["south", "north", "none"].includes(q.get("computer"))) S.computer = q.get("computer");
  S.view = q.get("view") === "north" ? "north" : q.get("view") === "south" ? "south" : S.computer === "south" ? "north" : "south";
  if (["300", "1000", "3000"].includes(q.get("movetime"))) S.movetime = +q.get("movetime");
  const side = q.get("to_move") === "north" || q.get("to_move") === "N" ? "north" : "south";
  let board = START.slice(), s = "south";
  const counts = (t) => (t || "").split(/[ ,]+/).filter((x) => x !== "").map(Number);
  if (q.get("pits")) {
    const mf = counts(q.get("pits"));
    if (mf.length === 12 && mf.every((c) => Number.isInteger(c) && c >= 0)) { s = side; board = absolute(mf, side); }
  } else if (q.get("south") && q.get("north")) {
    const a = counts(q.get("south")), b = counts(q.get("north"));
    if (a.length === 6 && b.length === 6 && a.concat(b).every((c) => Number.isInteger(c) && c >= 0)) { s = side; board = a.concat(b); }
  }
  let captured = null;
  const c = (q.get("captured") || "").split(":").map(Number);
  if (c.length === 2 && c.every((x) => Number.isFinite(x) && x >= 0) && c[0] + c[1] + stones(board) === 48) captured = { south: c[0], north: c[1] };
  else if (stones(board) === 48) captured = { south: 0, north: 0 };
  S.game = [{ board, side: s, captured, move: null, from: null, over: null }];
  S.cur = 0;
  return { moves: (q.get("moves") || "").split(",").filter((x) => /^[A-Fa-f]$/.test(x)), ply: q.get("ply") };
}

// Replays the address's moves from the rules (GET /api/v1/moves: no search, no file read).
async function replay(moves) {
  for (const h of moves) {
    const p = last();
    if (p.over) break;
    const r = await fetch("/api/v1/moves?" + query(p));
    if (!r.ok) break;
    const body = await r.json();
    const m = body.moves.find((x) => x.house === h);
    if (!m) { setStatus("The address's move " + h + " is not a legal move there: the game stops before it.", true); break; }
    const q = after(p, { pit: m.pit, house: m.house, captured: m.captured, ends_game: m.ends_game, child: m.child, end: m.value });
    if (!q.over && !m.captured) q.over = repetition(q, S.game.length - 1);
    S.game.push(q);
  }
}

// ---------------------------------------------------------------- start


async function init() {
  const wanted = fromUrl();
  buildBoard();
  $("computer").value = S.computer;
  $("view").value = S.view;
  $("movetime").value = String(S.movetime);
  try {
    const info = await (await fetch("/api/v1/info")).json();
    for (const r of info.rules) {
      S.built[r.name] = r.layers;
      const o = document.createElement("option"); o.value = r.name; o.textContent = r.name;
      const top = r.layers.length ? r.layers[r.layers.length - 1] : null;
      o.title = top === null ? "no tables built: the engine answers" : "tables of up to " + top + " stones on the board";
      $("rules").appendChild(o);
    }
    if (!new URLSearchParams(location.search).get("rules")) S.rules = info.default_rules;
  } catch (e) { setStatus("The server did not answer: " + e.message, true); }
  $("rules").value = S.rules;
  // Other rules: the position shown starts a new game (its moves were the old rules').
  $("rules").addEventListener("change", () => {
    S.rules = $("rules").value;
    const p = cur();
    S.game = [{ board: p.board, side: p.side, captured: p.captured, move: null, from: null, over: null }];
    goto(0);
  });
  $("computer").addEventListener("change", () => {
    S.computer = $("computer").value;
    if (S.computer !== "none") { S.view = other(S.computer); $("view").value = S.view; }
    forgetViews(); goto(S.cur);
  });
  $("view").addEventListener("change", () => { S.view = $("view").value; forgetViews(); goto(S.cur); });
  $("movetime").addEventListener("change", () => { S.movetime = +$("movetime").value; updateUrl(); });
  $("mode-play").addEventListener("click", () => { if (S.mode === "setup") analyseSetup(); });
  $("mode-setup").addEventListener("click", () => setMode("setup"));
  $("done").addEventListener("click", analyseSetup);
  $("clear").addEventListener("click", () => { S.setup.board = new Array(12).fill(0); fitCaptured(); render(); });
  $("start").addEventListener("click", () => { S.setup.board = START.slice(); S.setup.side = "south"; $("cap-s").value = 0; $("cap-n").value = 0; fitCaptured(); render(); });
  $("side").addEventListener("click", () => { S.setup.side = other(S.setup.side); render(); });
  const follow = (from, to) => () => {
    const left = 48 - stones(S.setup.board), x = $(from).value;
    if (x !== "" && Number.isInteger(+x) && +x >= 0 && +x <= left) $(to).value = left - +x;
  };
  $("cap-s").addEventListener("input", follow("cap-s", "cap-n"));
  $("cap-n").addEventListener("input", follow("cap-n", "cap-s"));
  $("undo").addEventListener("click", undo);
  $("first").addEventListener("click", () => goto(0));
  $("back").addEventListener("click", () => goto(S.cur - 1));
  $("forward").addEventListener("click", () => goto(S.cur + 1));
  $("last").addEventListener("click", () => goto(S.game.length - 1));
  $("play-line").addEventListener("click", () => playLine());
  $("moves").addEventListener("click", (ev) => { const k = ev.target.dataset && ev.target.dataset.index; if (k !== undefined && S.mode === "play") goto(+k); });
  document.addEventListener("keydown", (ev) => {
    if (S.mode !== "play" || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const tag = ev.target && ev.target.tagName;
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return;
    const to = { ArrowLeft: S.cur - 1, ArrowRight: S.cur + 1, Home: 0, End: S.game.length - 1 }[ev.key];
    if (to === undefined) return;
    ev.preventDefault();
    S.stepping = true;
    goto(to);
    S.stepping = false;
  });
  $("new").addEventListener("click", () => {
    if (S.mode === "setup") setMode("play");
    S.game = [{ board: START.slice(), side: "south", captured: { south: 0, north: 0 }, move: null, from: null, over: null }];
    goto(0);
  });
  window.addEventListener("resize", () => { const p = cur(); if (S.mode === "play" && p.data && !p.over) drawArrow(p.data.best === null ? null : base(p.side) + p.data.best); });
  render();
  await replay(wanted.moves);
  const ply = wanted.ply !== null && /^\d+$/.test(wanted.ply) ? +wanted.ply : S.game.length - 1;
  goto(ply);
}

// A new point of view: the numbers are worked out again from the answers kept.
function forgetViews() { for (const p of S.game) if (p.body) { p.data = digest(p, p.body); p.data.ms = p.ms; } }

init();

// What the board and the analysis call back (board.js's hooks: they never import this module).
Object.assign(hooks, { onHouse, maybeComputer, playLine, updateUrl });
