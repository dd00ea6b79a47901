// The game: playing moves (the player's, the computer's, the best line's) into a tree of
// variations, going back and forth, setting up a position, importing and exporting a game, the
// address that holds the game (with the browser's Back and Forward), and the page's start. The
// entry of the page's script: index.html loads this module, which imports the others.

import { $, S, START, hooks, absolute, base, buildBoard, cur, drawArrow, houseName, node, other, plural, render,
  setStatus, shownBoard, stones, title } from "./board.js";
import { background, digest, ending, evaluate, judgeChildren, query, show, sinceCapture } from "./analysis.js";

// ---------------------------------------------------------------- playing

// The position after `m` (a move of position p: {pit, house, captured, ends_game, child, end}),
// as a new node of the tree under p.
function after(p, m) {
  const i = base(p.side) + m.pit;
  let q;
  if (m.ends_game) {
    // A move that ends the game (a grand slam whose stones go to the opponent): its value
    // shares out the board.
    const n = stones(p.board), v = m.end === null || m.end === undefined ? 0 : m.end;
    const o = ending(p, (n + v) / 2);
    o.reason = title(p.side) + " played " + houseName(i) + ", which ends the game: the stones left are shared out";
    q = node({ board: p.board.slice(), side: other(p.side), captured: p.captured && { ...p.captured }, move: houseName(i), from: i, over: o });
  } else {
    q = node({ board: absolute(m.child, other(p.side)), side: other(p.side), captured: p.captured && { ...p.captured }, move: houseName(i), from: i, over: null });
    if (q.captured) q.captured[p.side] += m.captured;
  }
  q.parent = p;
  if (!q.over && !m.captured) q.over = repetition(q);
  return q;
}

// A position met again since the last capture, the same side to move, ends the game: awari
// shares the stones left evenly, abapa gives each side the stones in his row.
function repetition(q) {
  const n = stones(q.board);
  for (let h = q.parent; h && !h.over && stones(h.board) === n; h = h.parent) {
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

// The child of p reached by move m: the one the tree has, or a new one (a new variation when p
// already has moves after it: nothing is dropped).
function child(p, m) {
  const h = houseName(base(p.side) + m.pit);
  let q = p.children.find((c) => c.move === h);
  if (!q) { q = after(p, m); p.children.push(q); judgeChildren(p); }
  p.next = q;
  return q;
}

// Plays move `m` from the position shown, at once (the analysis of the position left is
// dropped).
function playMove(m) {
  gotoNode(child(cur(), m));
}

// The line through position q: from the first position to q, then on through each position's
// last visited move (else its main line).
function lineThrough(q) {
  const path = [];
  for (let x = q; x; x = x.parent) { path.unshift(x); if (x.parent) x.parent.next = x; }
  for (let x = q; x.next || x.children[0];) { x = x.next || x.children[0]; path.push(x); }
  return path;
}

function gotoNode(q, opts) {
  S.game = lineThrough(q);
  goto(S.game.indexOf(q), opts);
}

// The moves of position p from the rules (GET /api/v1/moves: no search, answered at once): a
// click plays a move without waiting for the analysis.
async function ensureLegal(p) {
  if (p.legal || p.asking || p.over) return;
  p.asking = true;
  try {
    const r = await fetch("/api/v1/moves?" + query(p));
    if (!r.ok) return;
    const body = await r.json();
    p.legal = { moves: body.moves.map((m) => ({ pit: m.pit, house: m.house, captured: m.captured, ends_game: m.ends_game, child: m.child, end: m.value })) };
  } catch (e) {
    return;
  } finally {
    p.asking = false;
  }
  if (cur() === p && S.mode === "play") render();
  if (S.queued && S.queued.p === p) { const i = S.queued.i; S.queued = null; if (cur() === p) onHouse(i, 1); }
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
  if (p.over) return;
  const moves = p.legal ? p.legal.moves : p.data ? p.data.moves : null;
  // The moves are being asked (milliseconds): the click is played when they come.
  if (!moves) { S.queued = { p, i }; ensureLegal(p); return; }
  const m = moves.find((x) => base(p.side) + x.pit === i);
  if (m) playMove(m);
}

function maybeComputer() {
  const p = cur();
  if (S.mode !== "play" || p.over || S.computer !== p.side || S.cur !== S.game.length - 1 || !p.data) return;
  const m = p.data.moves.find((x) => x.best);
  if (!m) { setStatus("The computer has no move to play here: play " + title(p.side) + "'s move for it, or let nobody play.", true); return; }
  clearTimeout(S.timer);
  // Below full strength: the level's move (POST /api/v1/analyse with level N: a shallow
  // search, a move drawn within the level's margin of the best; POST: a long history).
  if (S.level < 5) {
    const k = S.cur;
    S.timer = setTimeout(async () => {
      const q = query(p);
      q.set("level", String(S.level));
      q.set("movetime", String(S.movetime));
      const since = sinceCapture(k);
      if (since.length) q.set("history", since.map((h) => h.board.join(",")).join(";"));
      let body;
      try {
        const r = await fetch("/api/v1/analyse", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(Object.fromEntries(q)) });
        if (!r.ok) return;
        body = await r.json();
      } catch (e) { return; }
      const lm = body.level_move, moves = p.legal ? p.legal.moves : p.data.moves;
      const chosen = lm && moves.find((x) => x.pit === lm.pit);
      if (chosen && cur() === p && S.cur === S.game.length - 1 && S.computer === p.side && S.mode === "play") playMove(chosen);
    }, 300);
    return;
  }
  S.timer = setTimeout(() => {
    if (cur() === p && S.cur === S.game.length - 1 && S.computer === p.side && S.mode === "play") playMove(m);
  }, p.data.source === "tables" ? 500 : 300);
}

// Plays the best line shown up to its ply `upto` (all of it by default).
function playLine(upto) {
  const p = cur();
  if (!p.data || p.over) return;
  let here = p;
  for (const ply of p.data.line.slice(0, upto || p.data.line.length)) {
    here = child(here, ply);
    if (here.over) break;
  }
  gotoNode(here);
}

// Shows position k of the line. The address changes at once (a new entry of the browser's
// history unless `opts.push` is false); the position's moves are asked, then its analysis.
function goto(k, opts) {
  clearTimeout(S.timer);
  S.lineAll = false;
  S.cur = Math.max(0, Math.min(k, S.game.length - 1));
  const p = cur();
  if (S.practice && S.revealed !== p) S.revealed = null;
  render();
  updateUrl(!opts || opts.push !== false);
  ensureLegal(p);
  if (p.data || p.over) { show(); background(); return; }
  // Stepping quickly past positions does not ask for each.
  clearTimeout(S.askTimer);
  S.askTimer = setTimeout(() => evaluate(S.cur), S.stepping ? 120 : 0);
  setStatus(title(p.side) + " to move. …");
}

// Takes the last move of the line back (against the computer, back to the player's turn): it
// leaves the tree.
function undo() {
  if (S.game.length < 2) return;
  let n = S.game.length - 1;
  if (S.computer === S.game[n - 1].side && n > 1) n--;
  for (let k = S.game.length - 1; k >= n; k--) {
    const q = S.game[k], p = q.parent;
    p.children = p.children.filter((c) => c !== q);
    if (p.next === q) p.next = null;
  }
  gotoNode(S.game[n - 1]);
}

// ---------------------------------------------------------------- setting up

function setMode(mode) {
  if (mode === S.mode) return;
  clearTimeout(S.timer);
  S.mode = mode;
  $("mode-play").classList.toggle("active", mode === "play");
  $("mode-setup").classList.toggle("active", mode === "setup");
  $("mode-play").setAttribute("aria-pressed", String(mode === "play"));
  $("mode-setup").setAttribute("aria-pressed", String(mode === "setup"));
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
  goto(S.cur, { push: false });
}

// The captured counts of the set-up: they make 48 stones with the board, or are not known.
// Counts that no longer fit the board are dropped (never carried silently).
function fitCaptured() {
  const n = stones(S.setup.board), left = 48 - n;
  const cs = $("cap-s"), cn = $("cap-n");
  if (cs.value !== "" && cn.value !== "" && +cs.value + +cn.value !== left) { cs.value = ""; cn.value = ""; }
  $("cap-hint").textContent = plural(n, "stone") + " on the board: " + (left === 0 ? "nothing captured yet." :
    "the captured stones make " + left + ". Type one side's count (the other follows), or leave them empty if not known.");
  const c = capturedOfSetup();
  $("fen").value = c ? fen(S.setup.board, c, S.setup.side) : "";
}

function capturedOfSetup() {
  const n = stones(S.setup.board), left = 48 - n;
  const cs = $("cap-s").value, cn = $("cap-n").value;
  const ok = (x) => Number.isInteger(x) && x >= 0;
  if (cs !== "" && cn !== "" && ok(+cs) && ok(+cn) && +cs + +cn === left) return { south: +cs, north: +cn };
  if (left === 0) return { south: 0, north: 0 };
  return null;
}

// The engine's FEN of a position: A-B-C-D-E-F-a-b-c-d-e-f-SouthStore-NorthStore-S|N.
const fen = (board, c, side) => board.concat([c.south, c.north]).join("-") + "-" + (side === "south" ? "S" : "N");

// Reads a FEN as `oware engine`'s `position fen` does: {board, captured, side}, or a reason.
function parseFen(text) {
  const parts = text.trim().split("-");
  if (parts.length !== 15) return "a FEN is 14 counts and the side to move, joined by '-' (A..F, a..f, South's store, North's store, S or N)";
  const counts = [];
  for (let i = 0; i < 14; i++) {
    if (!/^\d{1,2}$/.test(parts[i]) || +parts[i] > 48) return "count " + (i + 1) + " is not a number 0..48";
    counts.push(+parts[i]);
  }
  if (stones(counts) !== 48) return "the houses and stores hold " + stones(counts) + " stones, not 48";
  if (parts[14] !== "S" && parts[14] !== "N") return "the side to move is S or N";
  return { board: counts.slice(0, 12), captured: { south: counts[12], north: counts[13] }, side: parts[14] === "S" ? "south" : "north" };
}

function setFen() {
  const f = parseFen($("fen").value);
  if (typeof f === "string") { $("cap-hint").textContent = "Not a position: " + f + "."; return; }
  S.setup.board = f.board; S.setup.side = f.side;
  $("cap-s").value = f.captured.south; $("cap-n").value = f.captured.north;
  fitCaptured();
  render();
}

function analyseSetup() {
  const captured = capturedOfSetup();
  const typed = $("cap-s").value !== "" || $("cap-n").value !== "";
  setRoot(node({ board: S.setup.board.slice(), side: S.setup.side, captured, move: null, from: null, over: null }));
  S.game = [S.root];
  S.cur = 0;
  setMode("play");
  updateUrl(true);
  if (typed && !captured) setStatus("The captured counts did not make 48 stones with the board: they are left unknown.", false);
}

// ---------------------------------------------------------------- importing and exporting

// The game as `oware game --record` reads it: "1. F c 2. B e"; a game that does not start
// from the start position says where it starts in a comment line first (which `oware game`
// skips: give the position to its --from): "# fen 0-1-...-20-8-N" (the engine's FEN, the
// captured stones known) or "# from S: ... N: ... S" (not known).
function recordText() {
  const root = S.game[0], lines = [];
  const isStart = root.side === "south" && root.board.every((c) => c === 4) && root.captured && root.captured.south === 0;
  if (S.rules !== S.defaultRules) lines.push("# rules " + S.rules);
  if (!isStart) lines.push(root.captured ? "# fen " + fen(root.board, root.captured, root.side)
    : "# from S: " + root.board.slice(0, 6).join(" ") + "  N: " + root.board.slice(6).join(" ") + "  " + (root.side === "south" ? "S" : "N"));
  const words = [], offset = root.side === "north" ? 1 : 0;
  S.game.slice(1).forEach((p, i) => {
    const k = i + offset;
    if (k % 2 === 0) words.push((k / 2 + 1) + ".");
    else if (i === 0) words.push("1...");
    words.push(p.move);
  });
  lines.push(words.join(" "));
  return lines.join("\n") + "\n";
}

// Reads a record as `oware game --record` does (whitespace, commas and semicolons separate the
// moves; move numbers are skipped; a run of house letters is that many moves; mover-first pit
// numbers 0..5 work too), with the comment lines recordText writes.
function parseRecord(text) {
  const out = { moves: [], rules: null, root: null };
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line.startsWith("#")) {
      const m = /^#\s*(fen|from|rules)\s+(.+)$/.exec(line);
      if (!m) continue;
      if (m[1] === "rules") out.rules = m[2].trim();
      else if (m[1] === "fen") {
        const f = parseFen(m[2]);
        if (typeof f === "string") return "the record's position: " + f;
        out.root = f;
      } else {
        const f = /^S:\s*((?:\d+\s+){5}\d+)\s+N:\s*((?:\d+\s+){5}\d+)\s+([SN])$/.exec(m[2].trim());
        if (!f) return "the record's position is 'S: a b c d e f  N: a b c d e f  S|N'";
        out.root = { board: f[1].split(/\s+/).map(Number).concat(f[2].split(/\s+/).map(Number)), captured: null, side: f[3] === "S" ? "south" : "north" };
        const n = stones(out.root.board);
        if (n === 48) out.root.captured = { south: 0, north: 0 };
        if (n > 48) return "the record's position holds " + n + " stones";
      }
      continue;
    }
    for (const token of line.split(/[\s,;]+/).filter((t) => t)) {
      if (/^\d+\.+$/.test(token) || /^\d+…$/.test(token)) continue;
      if (token.length > 1 && /^[A-Fa-f]+$/.test(token)) out.moves.push(...token);
      else out.moves.push(token);
    }
  }
  return out;
}

async function importRecord() {
  const r = parseRecord($("record").value);
  const note = $("record-note");
  if (typeof r === "string") { note.textContent = "Not imported: " + r + "."; return; }
  if (r.rules && !S.built[r.rules]) { note.textContent = "Not imported: this server has no rules " + r.rules + "."; return; }
  if (r.rules) { S.rules = r.rules; $("rules").value = r.rules; }
  const f = r.root || { board: START.slice(), side: "south", captured: { south: 0, north: 0 } };
  const root = node({ board: f.board, side: f.side, captured: f.captured, move: null, from: null, over: null });
  if (S.mode === "setup") setMode("play");
  const played = await replayFrom(root, r.moves);
  setRoot(root);
  let end = root;
  while (end.children.length) end = end.children[0];
  note.textContent = played.error ? "Imported up to ply " + played.count + ": ply " + (played.count + 1) + " (" + r.moves[played.count] + ") " + played.error + "."
    : "Imported " + plural(played.count, "ply") + ".";
  gotoNode(end);
}

// Replays `moves` (houses, or mover-first pits 0..5) from position `from`, as its main line,
// from the rules (GET /api/v1/moves: no search, no file read): {count played, error}.
async function replayFrom(from, moves) {
  let p = from, count = 0;
  for (const word of moves) {
    if (p.over) return { count, error: "comes after the game's end" };
    const r = await fetch("/api/v1/moves?" + query(p));
    if (!r.ok) return { count, error: "could not be asked" };
    const body = await r.json();
    p.legal = { moves: body.moves.map((m) => ({ pit: m.pit, house: m.house, captured: m.captured, ends_game: m.ends_game, child: m.child, end: m.value })) };
    const h = /^[0-5]$/.test(word) ? houseName(base(p.side) + +word) : word;
    const m = p.legal.moves.find((x) => x.house === h);
    if (!m) return { count, error: /^[A-Fa-f]$/.test(h) ? "is not a legal move there" : "is not a move (a house A..F, a..f or a pit 0..5)" };
    p = child(p, m);
    count++;
  }
  return { count, error: null };
}

// A new game tree from position `root`.
// The game trees of the page's session, by ruleset and first position: Back or Forward to an
// address of another game (set up, imported, or under other rules) finds its tree, variations
// and evaluations kept, rather than the address's line alone.
const trees = new Map();
function treeKey(rules, r) {
  return [rules, r.side, r.board.join(","), r.captured ? r.captured.south + ":" + r.captured.north : ""].join("|");
}

function setRoot(root) {
  if (S.root) trees.set(treeKey(S.root.rules, S.root), S.root);
  root.rules = S.rules;
  trees.set(treeKey(S.rules, root), root);
  S.root = root;
}

// ---------------------------------------------------------------- the address

// The address holds the game: its first position (rules, south, north, to_move, captured),
// the moves of the line shown (moves=F,e,...), the position shown (ply) and the page's
// settings (computer, view, movetime, flip, practice). docs/server.md lists them. Each
// change the player makes is an entry of the browser's history (`push`): Back and Forward
// step through them.
function updateUrl(push) {
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
  if (S.flip !== (S.computer === "south")) q.set("flip", S.flip ? "1" : "0");
  if (S.practice) q.set("practice", "1");
  if (S.level !== 5) q.set("level", String(S.level));
  const url = location.pathname + "?" + q.toString().replace(/%2C/g, ",").replace(/%3A/g, ":");
  if (url === location.pathname + location.search) return;
  if (push && S.ready) history.pushState(null, "", url);
  else history.replaceState(null, "", url);
}

// What the address asks: the settings (applied) and the game ({root, moves, ply}).
function fromUrl() {
  const q = new URLSearchParams(location.search);
  if (q.get("rules")) S.rules = q.get("rules");
  S.computer = ["south", "north", "none"].includes(q.get("computer")) ? q.get("computer") : "none";
  S.view = q.get("view") === "north" ? "north" : q.get("view") === "south" ? "south" : S.computer === "south" ? "north" : "south";
  S.movetime = ["300", "1000", "3000"].includes(q.get("movetime")) ? +q.get("movetime") : 1000;
  S.flip = q.get("flip") === "1" ? true : q.get("flip") === "0" ? false : S.computer === "south";
  S.practice = q.get("practice") === "1";
  S.level = /^[1-5]$/.test(q.get("level") || "") ? +q.get("level") : 5;
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
  const ply = q.get("ply");
  return { root: { board, side: s, captured }, moves: (q.get("moves") || "").split(",").filter((x) => /^[A-Fa-f]$/.test(x)), ply: ply !== null && /^\d+$/.test(ply) ? +ply : null };
}

// The settings' controls as the state has them.
function showSettings() {
  $("computer").value = S.computer;
  $("view").value = S.view;
  $("movetime").value = String(S.movetime);
  $("rules").value = S.rules;
  $("practice").checked = S.practice;
  $("level").value = String(S.level);
  $("reveal").hidden = !S.practice;
  if ($("board").dataset.flipped !== (S.flip ? "1" : "")) buildBoard();
}

// Goes to what the address asks: the tree's own positions where it has them (Back and
// Forward keep the variations), the rules' moves replayed where it does not.
async function restore(push) {
  const rules = S.rules;
  const want = fromUrl();
  showSettings();
  let root = S.root;
  const same = root && rules === S.rules && root.side === want.root.side && root.board.every((c, i) => c === want.root.board[i]) &&
    JSON.stringify(root.captured) === JSON.stringify(want.root.captured);
  if (!same) {
    root = trees.get(treeKey(S.rules, want.root)) || node({ ...want.root, move: null, from: null, over: null });
    setRoot(root);
  }
  let p = root, k = 0;
  for (; k < want.moves.length; k++) {
    const c = p.children.find((x) => x.move === want.moves[k]);
    if (!c) break;
    p = c;
  }
  if (k < want.moves.length) {
    const r = await replayFrom(p, want.moves.slice(k));
    if (r.error) setStatus("The address's move " + want.moves[k + r.count] + " " + r.error + ": the game stops before it.", true);
    for (let j = 0; j < r.count; j++) p = p.children.find((x) => x.move === want.moves[k + j]);
  }
  const path = [];
  for (let x = p; x; x = x.parent) path.unshift(x);
  const at = want.ply === null ? path[path.length - 1] : path[Math.min(want.ply, path.length - 1)];
  // The line shown is the address's (its last move's position, then on).
  for (let x = p; x.parent; x = x.parent) x.parent.next = x;
  S.game = lineThrough(at);
  goto(S.game.indexOf(at), { push });
}

// ---------------------------------------------------------------- start

async function changeRules() {
  const old = S.rules;
  const want = $("rules").value;
  $("rules").blur();
  const root = S.game[0], moves = S.game.slice(1).map((p) => p.move);
  S.rules = want;
  const fresh = node({ board: root.board.slice(), side: root.side, captured: root.captured && { ...root.captured }, move: null, from: null, over: null });
  const r = await replayFrom(fresh, moves);
  // The game's moves are kept where the new rules allow them; else the player says.
  if (r.error && !window.confirm("Under " + want + " the game's move " + (r.count + 1) + " (" + moves[r.count] + ") " + r.error +
    ". Keep the " + plural(r.count, "move") + " before it and drop the rest?")) {
    S.rules = old; $("rules").value = old;
    return;
  }
  setRoot(fresh);
  let p = fresh;
  for (let j = 0; j < Math.min(r.count, S.cur); j++) p = p.children[0];
  let end = p;
  while (end.children.length) end = end.children[0];
  S.game = lineThrough(end);
  goto(S.game.indexOf(p));
}

function flip() {
  S.flip = !S.flip;
  buildBoard();
  render();
  show();
  updateUrl(false);
}

function setPractice(on) {
  S.practice = on;
  $("practice").checked = on;
  $("reveal").hidden = !on;
  S.revealed = null;
  render();
  show();
  updateUrl(false);
}

function reveal() {
  const p = cur();
  S.revealed = p;
  p.revealedOnce = true;
  render();
  show();
}

async function init() {
  const wanted = fromUrl();
  setRoot(node({ ...wanted.root, move: null, from: null, over: null }));
  S.game = [S.root];
  buildBoard();
  try {
    const info = await (await fetch("/api/v1/info")).json();
    for (const r of info.rules) {
      S.built[r.name] = r.layers;
      const o = document.createElement("option"); o.value = r.name; o.textContent = r.name;
      const top = r.layers.length ? r.layers[r.layers.length - 1] : null;
      o.title = top === null ? "no tables built: the engine answers" : "tables of up to " + top + " stones on the board";
      $("rules").appendChild(o);
    }
    S.defaultRules = info.default_rules;
    if (!new URLSearchParams(location.search).get("rules")) S.rules = info.default_rules;
  } catch (e) { setStatus("The server did not answer: " + e.message, true); }
  showSettings();
  $("rules").addEventListener("change", changeRules);
  $("computer").addEventListener("change", () => {
    S.computer = $("computer").value;
    $("computer").blur();
    // Playing North against the computer puts North at the bottom.
    if (S.computer !== "none") { S.view = other(S.computer); $("view").value = S.view; S.flip = S.computer === "south"; buildBoard(); }
    forgetViews(); goto(S.cur);
  });
  $("view").addEventListener("change", () => { S.view = $("view").value; $("view").blur(); forgetViews(); goto(S.cur); });
  $("movetime").addEventListener("change", () => { S.movetime = +$("movetime").value; $("movetime").blur(); updateUrl(true); });
  $("level").addEventListener("change", () => { S.level = +$("level").value; $("level").blur(); updateUrl(true); hooks.maybeComputer(); });
  $("mode-play").addEventListener("click", () => { if (S.mode === "setup") analyseSetup(); });
  $("mode-setup").addEventListener("click", () => setMode("setup"));
  $("done").addEventListener("click", analyseSetup);
  $("clear").addEventListener("click", () => { S.setup.board = new Array(12).fill(0); fitCaptured(); render(); });
  $("start").addEventListener("click", () => { S.setup.board = START.slice(); S.setup.side = "south"; $("cap-s").value = 0; $("cap-n").value = 0; fitCaptured(); render(); });
  $("side").addEventListener("click", () => { S.setup.side = other(S.setup.side); fitCaptured(); render(); });
  $("remove-mode").addEventListener("click", () => {
    S.removing = !S.removing;
    $("remove-mode").setAttribute("aria-pressed", String(S.removing));
    $("remove-mode").classList.toggle("active", S.removing);
  });
  $("fen-set").addEventListener("click", setFen);
  $("fen").addEventListener("keydown", (ev) => { if (ev.key === "Enter") setFen(); });
  const follow = (from, to) => () => {
    const left = 48 - stones(S.setup.board), x = $(from).value;
    if (x !== "" && Number.isInteger(+x) && +x >= 0 && +x <= left) $(to).value = left - +x;
    const c = capturedOfSetup();
    $("fen").value = c ? fen(S.setup.board, c, S.setup.side) : "";
    render();
  };
  $("cap-s").addEventListener("input", follow("cap-s", "cap-n"));
  $("cap-n").addEventListener("input", follow("cap-n", "cap-s"));
  $("undo").addEventListener("click", undo);
  $("first").addEventListener("click", () => goto(0));
  $("back").addEventListener("click", () => goto(S.cur - 1));
  $("forward").addEventListener("click", () => goto(S.cur + 1));
  $("last").addEventListener("click", () => goto(S.game.length - 1));
  $("flip").addEventListener("click", flip);
  $("practice").addEventListener("change", () => setPractice($("practice").checked));
  $("reveal").addEventListener("click", reveal);
  $("play-line").addEventListener("click", () => playLine());
  $("export").addEventListener("click", () => { $("record").value = recordText(); $("record-note").textContent = "The game as `oware game --record` reads it."; });
  $("import").addEventListener("click", importRecord);
  const pick = (ev) => {
    const e = ev.target.closest && ev.target.closest(".mv");
    if (!e || S.mode !== "play") return;
    const q = findNode(+e.dataset.id);
    if (q) gotoNode(q);
  };
  $("moves").addEventListener("click", pick);
  $("moves").addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); pick(ev); } });
  $("graph").addEventListener("click", (ev) => {
    const k = ev.target.dataset && ev.target.dataset.ply;
    if (k !== undefined && S.mode === "play") goto(+k);
  });
  document.addEventListener("keydown", (ev) => {
    if (S.mode !== "play" || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const tag = ev.target && ev.target.tagName;
    const step = { ArrowLeft: S.cur - 1, ArrowRight: S.cur + 1, Home: 0, End: S.game.length - 1 }[ev.key];
    // A focused list never changes with the arrow keys (they step through the game).
    if (tag === "SELECT") {
      if (["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"].includes(ev.key)) {
        ev.preventDefault();
        if (step !== undefined) { ev.target.blur(); goto(step); }
      }
      return;
    }
    if (tag === "INPUT" || tag === "TEXTAREA") return;
    if (ev.key === "f" || ev.key === "F") { ev.preventDefault(); flip(); return; }
    if ((ev.key === "s" || ev.key === "S") && S.practice) { ev.preventDefault(); reveal(); return; }
    if (step === undefined) return;
    ev.preventDefault();
    S.stepping = true;
    goto(step);
    S.stepping = false;
  });
  $("new").addEventListener("click", () => {
    if (S.mode === "setup") setMode("play");
    setRoot(node({ board: START.slice(), side: "south", captured: { south: 0, north: 0 }, move: null, from: null, over: null }));
    S.game = [S.root];
    goto(0);
  });
  window.addEventListener("resize", () => { const p = cur(); if (S.mode === "play" && p.data && !p.over && !S.practice) drawArrow(p.data.best === null ? null : base(p.side) + p.data.best); });
  window.addEventListener("popstate", () => { if (S.mode === "setup") setMode("play"); restore(false); });
  render();
  await restore(false);
  S.ready = true;
}

// The position of the tree with this id.
function findNode(id) {
  const walk = (p) => { if (p.id === id) return p; for (const c of p.children) { const f = walk(c); if (f) return f; } return null; };
  return walk(S.game[0]);
}

// A new point of view: the numbers are worked out again from the answers kept.
function forgetViews() {
  const walk = (p) => { if (p.body) { p.data = digest(p, p.body); p.data.ms = p.ms; } for (const c of p.children) walk(c); };
  walk(S.game[0]);
  const judge = (p) => { judgeChildren(p); for (const c of p.children) judge(c); };
  judge(S.game[0]);
}

init();

// What the board and the analysis call back (board.js's hooks: they never import this module).
Object.assign(hooks, { onHouse, maybeComputer, playLine, updateUrl: () => updateUrl(false), gotoNode, goto, background });
