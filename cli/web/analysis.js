// Asking the server about a position (POST /api/v1/evaluate) and showing its answer: the
// numbers in the page's terms, the status line, the best line and the details.

import { $, S, hooks, cur, fmt, hidden, other, plural, render, renderGraph, round1, setStatus, stones, t0, tableNumber, title, toView } from "./board.js";

// ---------------------------------------------------------------- asking the server

// The position's parameters, as every endpoint takes them.
function query(p) {
  const q = new URLSearchParams({ south: p.board.slice(0, 6).join(","), north: p.board.slice(6).join(","), to_move: p.side, rules: S.rules });
  if (p.captured) q.set("captured", p.captured.south + ":" + p.captured.north);
  return q;
}

// The game's positions since its last capture before position k (as many stones), oldest
// first: a move that repeats one ends the game, and the engine scores it so.
function sinceCapture(k) {
  const n = stones(S.game[k].board), out = [];
  for (let j = k - 1; j >= 0 && !S.game[j].over && stones(S.game[j].board) === n; j--) out.unshift(S.game[j]);
  return out;
}

// Asks for position k once: the server answers from the tables where they hold it, else with
// the engine's search (POST /api/v1/evaluate). A newer position asked drops the older request
// (which stops its search on the server): the page never waits on an analysis no longer
// wanted, and a stale answer is never shown.
async function evaluate(k) {
  const p = S.game[k];
  if (p.data || p.over) { show(); return; }
  if (S.pending && S.pending.p === p) return;
  if (S.pending) S.pending.abort.abort();
  if (S.bg) { S.bg.abort.abort(); S.bg = null; }
  const abort = new AbortController(), started = performance.now();
  S.pending = { p, abort };
  const q = request(k);
  render();
  const thinking = S.computer === p.side && k === S.game.length - 1;
  const layers = S.built[S.rules] || [], above = !layers.length || stones(p.board) > layers[layers.length - 1];
  setStatus(title(p.side) + " to move." + (thinking ? " The computer is thinking…" : above ? " The engine is thinking…" : " …"));
  $("board").dataset.thinking = thinking ? "1" : "";
  let r, body;
  try {
    r = await ask(q, abort.signal);
    body = await r.json();
  } catch (e) {
    if (abort.signal.aborted) return;
    if (S.pending && S.pending.p === p) S.pending = null;
    setStatus("The server did not answer: " + e.message, true);
    return;
  }
  if (S.pending && S.pending.p === p) S.pending = null;
  if (cur() === p || !S.pending) $("board").dataset.thinking = "";
  if (!r.ok) {
    if (cur() === p) setStatus((body.error && body.error.message) || "error " + r.status, true);
    return;
  }
  keep(p, body, performance.now() - started);
  if (cur() === p) show();
  else renderGraph();
  background();
}

// Sends the parameters q of /evaluate in a POST's JSON body: a long game's history (up to
// 10,000 positions since the last capture) does not fit a request line.
function ask(q, signal) {
  return fetch("/api/v1/evaluate", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(Object.fromEntries(q)),
    signal,
  });
}

// The request of /evaluate for position k of the line shown.
function request(k) {
  const p = S.game[k];
  const q = query(p);
  q.set("max_plies", "60");
  q.set("movetime", String(S.movetime));
  const since = sinceCapture(k);
  if (since.length) q.set("history", since.map((h) => h.board.join(",")).join(";"));
  return q;
}

// Keeps an answer for position p, and judges the moves played from it.
function keep(p, body, ms) {
  p.body = body;
  p.data = digest(p, body);
  p.data.ms = p.ms = ms;
  if (p.data.over) p.over = p.data.over;
  judgeChildren(p);
}

// Evaluates, one at a time while nothing else is asked, the positions of the line shown that
// the tables hold (each answers in milliseconds): the graph and the marks of the moves fill in.
async function background() {
  if (S.pending || S.bg || S.mode !== "play") return;
  const layers = S.built[S.rules] || [];
  if (!layers.length) return;
  const top = layers[layers.length - 1];
  const k = S.game.findIndex((p) => !p.data && !p.over && stones(p.board) <= top);
  if (k < 0) return;
  const p = S.game[k], abort = new AbortController();
  S.bg = { p, abort };
  try {
    const r = await ask(request(k), abort.signal);
    const body = await r.json();
    if (S.bg && S.bg.p === p) S.bg = null;
    if (!r.ok) return;
    keep(p, body, 0);
  } catch (e) {
    if (S.bg && S.bg.p === p) S.bg = null;
    return;
  }
  if (cur() === p) show(); else { render(); }
  background();
}

// The marks of the moves played from p (its children in the game's tree), as `oware game`
// judges a move: by the value it throws away (its error: the best move's number less its own,
// for its mover). ?! for 1 stone, ? for 2 or 3, ?? for 4 or more or a move that turns a won
// or drawn game (the captured stones known) into a worse result. Estimates are judged the
// same way where the engine scored the move exactly (not a bound).
function judgeChildren(p) {
  if (!p.data || !p.data.moves.length) return;
  const s = toView(p.side);
  const known = p.data.moves.filter((m) => m.number !== null);
  if (!known.length) return;
  const best = Math.max(...known.map((m) => s * m.number));
  for (const c of p.children) {
    const m = p.data.moves.find((x) => x.house === c.move);
    if (!m || m.number === null || m.mark) { c.judged = null; continue; }
    const mine = s * m.number, error = round1(best - mine);
    const result = (x) => Math.sign(round1(x));
    const worse = !!p.captured && m.exact && result(mine) < result(best);
    const mark = error >= 4 || worse ? "??" : error >= 2 ? "?" : error >= 1 ? "?!" : "";
    const words = mark ? title(p.side) + " " + c.move + " throws away " + plural(error, "stone") + (worse ? ", and the result" : "") +
      " (best " + p.data.moves.filter((x) => x.number !== null && round1(s * x.number) === round1(best)).map((x) => x.house).join(" ") + ")" : "";
    c.judged = { mark, error, words, exact: m.exact };
  }
}

// The answer of /evaluate for position p, in the page's terms: every number from the chosen
// side's view, in the page's unit.
function digest(p, body) {
  const d = { source: body.source, moves: [], best: null, line: [], over: null };
  if (body.source === "tables") {
    const r = body.report;
    d.report = r;
    if (r.game_over) { d.over = ending(p, r.split.mover); return d; }
    d.number = tableNumber(p, r.value);
    d.exact = true;
    d.dtc = r.dtc;
    // The best move: the one the best line plays (it follows the depths to capture).
    const first = r.principal_variation[0];
    d.best = first ? first.pit : (r.best_moves.length ? r.best_moves[0] : null);
    for (const m of r.moves) {
      const x = tableNumber(p, m.value);
      const words = [title(p.side) + " " + m.house + ": " + fmt(x) + " for " + title(S.view) + " (exact)"];
      if (m.captured) words.push("takes " + m.captured);
      if (m.ends_game) words.push("ends the game");
      if (m.dtc !== null && m.dtc !== undefined && m.value !== 0) words.push("next capture " + (m.dtc === 0 ? "at once" : "in " + plural(m.dtc + 1, "ply") + " from here"));
      const depth = m.dtc !== null && m.dtc !== undefined && m.value !== 0 ? m.dtc + 1 : null;
      d.moves.push({ pit: m.pit, house: m.house, number: x, exact: true, mark: "", best: m.pit === d.best, depth,
        captured: m.captured, ends_game: m.ends_game, child: m.child, end: m.ends_game ? m.value : null, words: words.join(", ") });
    }
    d.line = r.principal_variation.map((ply) => ({ side: ply.side, house: ply.house, pit: ply.pit, captured: ply.captured,
      ends_game: ply.ends_game, child: ply.child, absolute: ply.absolute, end: ply.ends_game ? ply.value : null }));
    d.lineEnd = r.pv_end.reason;
    return d;
  }
  const e = body.engine, rules = body.moves;
  d.engine = e;
  if (!rules.moves.length) { d.over = ending(p, (stones(p.board) + (rules.ending || 0)) / 2); return d; }
  const s = toView(p.side);
  // The engine's scores are the mover's (with the captured stones, the final score): seen
  // from the chosen side, they change sign when the other side moves.
  d.number = s * e.score;
  d.exact = e.exact;
  d.best = e.best_pit;
  const byPit = {};
  for (const m of e.moves) byPit[m.pit] = m;
  for (const m of rules.moves) {
    const em = byPit[m.pit];
    // The best move's score is the line's (an iteration cut short can leave the move's own
    // score from the iteration before).
    const score = em ? (m.pit === e.best_pit ? e.score : em.score) : null;
    const exact = em ? (m.pit === e.best_pit ? e.exact : em.exact) : false;
    const bound = em && m.pit !== e.best_pit ? em.bound : "exact";
    const mark = bound === "upper" ? (s > 0 ? "≤" : "≥") : bound === "lower" ? (s > 0 ? "≥" : "≤") : "";
    const x = score === null ? null : s * score;
    const words = x === null ? "" : title(p.side) + " " + m.house + ": " + (mark ? (mark === "≤" ? "at most " : "at least ") : "") + fmt(x) +
      " for " + title(S.view) + (exact ? " (proven by the search)" : " (the engine's estimate)") + (bound === "upper" ? "; the engine found a better move" : "") +
      (m.captured ? ", takes " + m.captured : "");
    d.moves.push({ pit: m.pit, house: m.house, number: x, exact, mark, best: m.pit === e.best_pit,
      captured: m.captured, ends_game: m.ends_game, child: m.child, end: m.value, words });
  }
  d.line = body.line.map((ply) => ({ side: ply.side, house: ply.house, pit: ply.pit, captured: ply.captured,
    ends_game: ply.ends_game, child: ply.child, absolute: ply.absolute, end: ply.value }));
  d.lineEnd = null;
  return d;
}

// The end of the game at position p, which has no legal move, its mover taking `mover` of the
// stones left.
function ending(p, mover) {
  const n = stones(p.board);
  const captured = p.captured && { ...p.captured };
  if (captured) { captured[p.side] += mover; captured[other(p.side)] += n - mover; }
  return { reason: endReason(p.side, p.board), captured, split: { [p.side]: mover, [other(p.side)]: n - mover } };
}

// Why the game is over for `side` to move on `board` (no legal move).
function endReason(side, board) {
  const own = side === "south" ? board.slice(0, 6) : board.slice(6), opp = side === "south" ? board.slice(6) : board.slice(0, 6);
  const w = title(side), o = title(other(side)), n = stones(board);
  if (stones(own) === 0) return w + " has no stone to move: " + o + " takes the " + plural(n, "stone") + " left on the board";
  if (stones(opp) === 0) return w + " cannot feed " + o + ": " + w + " takes the " + plural(n, "stone") + " in his row";
  return "every move " + w + " has would be a forbidden grand slam: each side takes the stones in his row";
}

function finalText(c) {
  const w = c.south > c.north ? "South wins" : c.south < c.north ? "North wins" : "a draw";
  return "Final score South " + round1(c.south) + " : North " + round1(c.north) + ", " + w + ".";
}

// ---------------------------------------------------------------- showing an evaluation

function show() {
  const p = cur();
  render();
  if (S.mode !== "play") return;
  const st = $("status");
  if (p.over) {
    const o = p.over;
    setStatus("Game over: " + o.reason + ". " + (o.captured ? finalText(o.captured)
      : "Of the stones left South took " + round1(o.split.south) + ", North " + round1(o.split.north) + "."));
    showLine(p);
    $("details-text").textContent = "";
    markShown(p);
    hooks.maybeComputer();
    return;
  }
  const d = p.data;
  if (!d) return;
  const who = title(p.side), v = title(S.view);
  const bestMove = d.moves.find((m) => m.best);
  const bestText = bestMove ? "Best " + bestMove.house : "";
  let text, note = "";
  // An estimate is a prediction: of the final lead (the captured stones known), or of the
  // lead in the stones the board still holds; never a lead today's stores show.
  const ahead = (x) => x > 0 ? [v, title(other(S.view))] : [title(other(S.view)), v];
  const lead = (x) => x === 0 ? (p.captured ? "the game should end even" : "the stones on the board should be shared evenly")
    : p.captured ? ahead(x)[0] + " should end the game " + plural(Math.abs(round1(x)), "stone") + " ahead (the predicted lead at the game's end)"
    : ahead(x)[0] + " should take " + plural(Math.abs(round1(x)), "stone") + " more than " + ahead(x)[1] + " of those on the board (the predicted lead in them)";
  if (hidden()) {
    setStatus(who + " to move.", false, "Practice: the best move and the values are hidden. Show them with “Show the analysis” (or the S key).");
    showLine(p); showDetails(p); markShown(p); hooks.maybeComputer();
    return;
  }
  if (d.source === "tables") {
    const r = d.report, x = d.number;
    if (p.captured) {
      const winner = x > 0 ? v + " wins" : x < 0 ? title(other(S.view)) + " wins" : "a draw";
      text = who + " to move. " + bestText + ": " + winner + (x !== 0 ? " by " + plural(Math.abs(round1(x)), "stone") : "") + ", with best play";
      if (r.final && r.final.south !== null && r.final.north !== null) note = "Best play ends South " + r.final.south + " : North " + r.final.north +
        (round1(r.final.south - r.final.north) !== round1(S.view === "south" ? x : -x) ? " (the game stops once a side has 25)" : "") + ".";
      else note = "Counted with the board played out; the game stops once a side has 25, which can shorten the lead but not change who wins.";
    } else {
      const mine = S.view === p.side ? r.split.mover : r.split.opponent;
      text = who + " to move. " + bestText + ": of the " + plural(r.stones, "stone") + " on the board " + v + " gets " + mine +
        ", " + title(other(S.view)) + " " + (r.stones - mine) + ", with best play";
    }
    if (d.dtc !== null && d.dtc !== undefined && r.value !== 0) text += "; the next capture " + (d.dtc <= 1 ? "comes with this move" : "in " + plural(d.dtc, "ply"));
    else if (r.value === 0 && r.pv_end.reason === "endless_play" && !r.principal_variation.length) text += "; neither side can force a capture";
    text += ".";
  } else {
    const e = d.engine, x = d.number;
    text = who + " to move. " + bestText + (e.exact ? ": " + (p.captured ? (x > 0 ? v + " wins by " + plural(round1(x), "stone") : x < 0 ? title(other(S.view)) + " wins by " + plural(round1(-x), "stone") : "a draw")
      : lead(x)) + ", proven by the engine's search." : ". The engine estimates " + fmt(x) + " for " + v + ": " + lead(x) + ".");
    note = "The tables do not hold this position" + (S.built[S.rules] && S.built[S.rules].length ? " (they hold positions of up to " + plural(S.built[S.rules][S.built[S.rules].length - 1], "stone") + " on the board)" : "") +
      ", so the engine searched it for " + round1(e.seconds) + " s.";
  }
  setStatus(text, false, note);
  showLine(p);
  showDetails(p);
  markShown(p);
  hooks.maybeComputer();
}

function markShown(p) {
  const st = $("status");
  S.shown++;
  st.dataset.shown = String(S.shown);
  st.dataset.source = p.over ? "over" : p.data.source;
  if (p.data && p.data.ms !== undefined) st.dataset.ms = p.data.ms.toFixed(1);
  if (!st.dataset.firstMs) st.dataset.firstMs = (performance.now() - t0).toFixed(1);
  hooks.updateUrl();
}

function showDetails(p) {
  const d = p.data, parts = [];
  const layers = S.built[S.rules] || [];
  parts.push("Tables for " + S.rules + ": " + (layers.length ? "positions of up to " + plural(layers[layers.length - 1], "stone") + " on the board (layers 0.." + layers[layers.length - 1] + ")" : "none built") + ".");
  if (d.source === "tables") {
    parts.push("Answered from the tables: exact values. The tables' value is " + (d.report.value > 0 ? "+" : "") + d.report.value + " for " + title(p.side) +
      ", the side to move, in stones of the " + plural(d.report.stones, "stone") + " on the board (those " + title(p.side) + " still captures minus " + title(other(p.side)) + "'s)" +
      (p.captured ? "; the numbers on the houses add the stones captured so far (the lead at the game's end)" : "") + ".");
    if (d.dtc === null || d.dtc === undefined) parts.push("No depths to capture for this position" + (d.report.value === 0 ? " (its value is 0)" : " (oware build --dtc adds them)") + ".");
  } else {
    const e = d.engine;
    parts.push("The engine searched " + e.depth + " plies deep, " + Math.round(e.nps / 1000) + " thousand positions a second, for " + e.seconds.toFixed(2) + " s; its score " +
      (e.exact ? "is proven" : "is an estimate") + ".");
  }
  parts.push("Answered in " + d.ms.toFixed(0) + " ms.");
  $("details-text").textContent = parts.join(" ");
}

// The best line: one row per ply, with what it takes and the captured stones after it.
function showLine(p) {
  const t = $("line");
  t.innerHTML = "";
  const d = p.data;
  const line = (!p.over && d && !hidden()) ? d.line : [];
  $("play-line").disabled = !line.length;
  if (hidden() && !p.over) { $("line-caption").textContent = "Practice: the best line is hidden."; $("line-end").textContent = ""; return; }
  if (!line.length) {
    $("line-caption").textContent = p.over ? "The game is over." : !d ? "" : d.source === "tables" && d.report.value === 0
      ? "No line: neither side can force a capture, and the stones left would be shared evenly." : "No line to show.";
    $("line-end").textContent = "";
    return;
  }
  const known = !!p.captured;
  const head = document.createElement("thead");
  head.innerHTML = "<tr><th>#</th><th>move</th><th>takes</th><th>" + (known ? "South : North" : "taken: South : North") + "</th></tr>";
  t.appendChild(head);
  const body = document.createElement("tbody");
  const c = known ? { ...p.captured } : { south: 0, north: 0 };
  // The first plies (to the first capture, at least 16); the rest on demand.
  const rows = S.lineAll ? line.length : Math.min(line.length, Math.max(16, (d.dtc || 0) + 2));
  line.forEach((ply, i) => {
    if (ply.captured) c[ply.side] += ply.captured;
    if (i >= rows) return;
    const tr = document.createElement("tr");
    tr.dataset.ply = i + 1;
    const a = ply.absolute;
    tr.title = "Before it: North f..a " + a.slice(6).reverse().join(" ") + " / South A..F " + a.slice(0, 6).join(" ") + ". Click: play the line up to here.";
    const cells = [i + 1, title(ply.side) + " " + ply.house, ply.ends_game ? "ends" : (ply.captured || ""), round1(c.south) + " : " + round1(c.north)];
    cells.forEach((x, j) => { const td = document.createElement("td"); td.textContent = x; if (j === 1) td.className = "mv"; tr.appendChild(td); });
    tr.tabIndex = 0;
    tr.setAttribute("aria-label", "Ply " + (i + 1) + ": " + title(ply.side) + " " + ply.house + (ply.ends_game ? ", ends the game" : ply.captured ? ", takes " + ply.captured : "") +
      ", then South " + round1(c.south) + " : North " + round1(c.north) + ". Enter plays the line up to here.");
    tr.addEventListener("click", () => hooks.playLine(i + 1));
    tr.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); hooks.playLine(i + 1); } });
    body.appendChild(tr);
  });
  // The stones that end the game, where the line ends it: a move that ends it (the stones left
  // shared out), or a capture that takes a side past 24 (the stones left split evenly).
  const end = lineEnd(line, c, known);
  if (end && rows === line.length) {
    const tr = document.createElement("tr"), td = document.createElement("td");
    tr.className = "end-row"; td.colSpan = 4;
    td.textContent = end;
    tr.appendChild(td); body.appendChild(tr);
  }
  if (rows < line.length) {
    const tr = document.createElement("tr"), td = document.createElement("td");
    td.colSpan = 4; td.className = "more";
    const more = document.createElement("button");
    more.id = "line-more"; more.textContent = "Show all " + plural(line.length, "ply");
    more.addEventListener("click", (ev) => { ev.stopPropagation(); S.lineAll = true; showLine(p); });
    td.appendChild(more); tr.appendChild(td); body.appendChild(tr);
  }
  t.appendChild(body);
  const v = title(S.view);
  let caption;
  if (d.source === "tables") {
    caption = "Exact: " + fmt(d.number) + " for " + v + " at every ply of best play (" + plural(line.length, "ply") + " shown" +
      (d.dtc ? "; the first capture comes at ply " + d.dtc : "") + ").";
  } else {
    caption = "The engine's line, " + (d.exact ? "proven" : "estimated") + " at " + fmt(d.number) + " for " + v + " (" + plural(line.length, "ply") + ").";
  }
  $("line-caption").textContent = caption;
  const ends = { game_over: "The game is over.", endless_play: "Then neither side can force a capture: the stones left are shared evenly.",
    repetition: "A position repeats: endless play, the stones left are shared evenly.", cycle: "A position repeats (a values-only database cannot show more).",
    ply_limit: "…and so on." };
  $("line-end").textContent = d.lineEnd ? ends[d.lineEnd] || "" : "";
}

// How the line ends the game, in words with the final score, or null when it does not end it.
// `c`: the captured stones after the line (South, North).
function lineEnd(line, c, known) {
  const lastPly = line[line.length - 1];
  if (!lastPly) return null;
  if (lastPly.ends_game) {
    const n = stones(lastPly.absolute), share = (n + (lastPly.end || 0)) / 2;
    const f = { ...c };
    f[lastPly.side] += share; f[other(lastPly.side)] += n - share;
    return "Game over: " + title(lastPly.side) + " " + lastPly.house + " ends it; of the " + plural(n, "stone") + " left " + title(lastPly.side) + " takes " + round1(share) +
      ". " + (known ? "Final score South " + round1(f.south) + " : North " + round1(f.north) : "Taken in the line: South " + round1(f.south) + " : North " + round1(f.north)) + ".";
  }
  if (known && lastPly.child && (c.south > 24 || c.north > 24 || (c.south === 24 && c.north === 24))) {
    const n = stones(lastPly.child);
    return "Game over: " + (c.south > 24 ? "South" : c.north > 24 ? "North" : "each side") + " has " + (c.south === 24 && c.north === 24 ? "24" : "more than 24") +
      "; the " + plural(n, "stone") + " left are shared evenly. Final score South " + round1(c.south + n / 2) + " : North " + round1(c.north + n / 2) + ".";
  }
  return null;
}

export { query, evaluate, digest, ending, show, background, judgeChildren, sinceCapture };
