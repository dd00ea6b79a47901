//! The search engine: plays and analyses above the built layers, exactly inside them.
//!
//! [`Engine`] runs an iterative-deepening principal-variation search (alpha-beta) with a shared
//! transposition table, move ordering (table move, captures, killers, history), late-move
//! reductions and a capture-only quiescence search. Every node inside the built layers is
//! answered from its layer and ends the search there; above them a heuristic evaluation, fitted
//! on exact layer values (`docs/eval.md`), scores the leaves. Threads share the table (lazy SMP).
//!
//! ## Scores
//!
//! Scores are in **centi-stones** from the view of the player to move. Without captured counts
//! ([`Root::captured`] `None`) a score means what the layers' values mean: the stones the player
//! to move will still capture minus those the opponent will, endless play splitting the board
//! evenly (`docs/values.md`). With captured counts the score is the game's final score: the
//! captured difference plus the board's score. A side that has captured more than 24 stones (or
//! both 24) has ended the game: the search stops there, counting the stones still on the board
//! as split evenly (exact only inside the layers or on an empty board). Under abapa with
//! captured counts, a repeated position ends the game and each side takes the stones in his
//! row.
//!
//! ## Exact answers
//!
//! Each score carries a flag: *proven* when it rests only on layer values and game ends (no
//! heuristic leaf, no repetition cut short). A proven score, or a proven bound, is the true
//! value (or a true bound) whatever the depth, so proven entries of the table serve searches of
//! any depth, and the search stops as soon as the root is proven: [`Report::exact`]. Under
//! abapa with captured counts, a layer's even-split value is exact only where the forced-capture
//! bounds (`oware build --bounds`) force the split; elsewhere it is an estimate.
//!
//! ## Reproducibility
//!
//! A search limited by depth or nodes ([`Limits::depth`], [`Limits::nodes`]) runs on one thread,
//! so that its answer does not depend on scheduling; timed searches use every thread asked for.

pub(crate) mod eval;
mod tt;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::index::{in_some_layer, rank_unchecked};
use crate::position::Position;
use crate::probe::Database;
use crate::rules::{stones, Board, Moves, Outcome, Ruleset, PITS};
use tt::{Bound, Entry, Table};

/// Scores beyond every real score (centi-stones).
const INFINITE: i32 = 30_000;
/// Deepest ply a search path reaches (quiescence included).
const MAX_PLY: usize = 128;
/// Deepest nominal depth of an iteration.
pub const MAX_DEPTH: u32 = 100;
/// Plies of captures the quiescence search follows.
const QUIESCENCE_PLIES: u32 = 8;
/// Default size of the transposition table, MiB.
pub const DEFAULT_HASH_MB: usize = 64;

// ---------------------------------------------------------------------------------------------
// Zobrist keys: one random word per (pit, count) and per captured count, fixed at compile time.

/// One step of splitmix64: `x` advanced by the golden gamma, then mixed.
pub(crate) const fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

const fn zobrist() -> [[u64; 49]; PITS + 2] {
    let mut z = [[0u64; 49]; PITS + 2];
    let mut p = 0;
    while p < PITS + 2 {
        let mut c = 0;
        while c < 49 {
            z[p][c] = splitmix((p * 49 + c) as u64 + 0x0A7A_2002);
            c += 1;
        }
        p += 1;
    }
    z
}

static ZOBRIST: [[u64; 49]; PITS + 2] = zobrist();

// ---------------------------------------------------------------------------------------------
// The public interface.

/// What to search from: a position, and optionally the captured stones and the game so far.
#[derive(Clone, Debug)]
pub struct Root {
    /// The position, mover-first.
    pub position: Position,
    /// Stones captured so far by the player to move and by the opponent; `None` scores the
    /// board only, as the layers do (see the module's "Scores").
    pub captured: Option<(u32, u32)>,
    /// Earlier positions of the game, oldest first, each mover-first (so the last one is the
    /// position before `position`, with the other player to move). A position met again is a
    /// repetition.
    pub history: Vec<Board>,
}

impl Root {
    /// A root without captured counts or history.
    pub fn new(position: Position) -> Root {
        Root { position, captured: None, history: Vec::new() }
    }
}

/// How long to search. Unset limits do not limit; with none set the search runs until
/// [`Control::stop`] (or until it proves the root's value).
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// Deepest iteration, in plies (1..=[`MAX_DEPTH`]). Makes the search single-threaded.
    pub depth: Option<u32>,
    /// Time for the search.
    pub movetime: Option<Duration>,
    /// Nodes to search at most (checked every 1024 nodes). Makes the search single-threaded.
    pub nodes: Option<u64>,
    /// Score every move of the root exactly (each with a full window) rather than only the
    /// best: slower, what analysis wants.
    pub all_moves: bool,
}

/// Stops a search from another thread, or moves its deadline (UCI `stop`, `ponderhit`).
#[derive(Debug)]
pub struct Control {
    stop: AtomicBool,
    start: Instant,
    /// Milliseconds after `start`; `u64::MAX` for none.
    deadline_ms: AtomicU64,
}

impl Default for Control {
    fn default() -> Self {
        Control::new()
    }
}

impl Control {
    /// A control with no deadline, not stopped.
    pub fn new() -> Control {
        Control { stop: AtomicBool::new(false), start: Instant::now(), deadline_ms: AtomicU64::new(u64::MAX) }
    }

    /// Asks the search to stop as soon as it can; it then reports its best answer so far.
    pub fn stop(&self) {
        self.stop.store(true, Relaxed);
    }

    /// Whether [`stop`](Self::stop) was called.
    pub fn stopped(&self) -> bool {
        self.stop.load(Relaxed)
    }

    /// Sets the deadline `after` from now.
    pub fn set_deadline(&self, after: Duration) {
        let ms = self.start.elapsed().saturating_add(after).as_millis();
        self.deadline_ms.store(u64::try_from(ms).unwrap_or(u64::MAX - 1), Relaxed);
    }

    fn past_deadline(&self) -> bool {
        let d = self.deadline_ms.load(Relaxed);
        d != u64::MAX && self.start.elapsed().as_millis() as u64 >= d
    }

    /// Time left to the deadline, if one is set.
    fn left(&self) -> Option<Duration> {
        let d = self.deadline_ms.load(Relaxed);
        (d != u64::MAX).then(|| Duration::from_millis(d).saturating_sub(self.start.elapsed()))
    }
}

/// How a reported score relates to the move's true score.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScoreBound {
    /// The score is the search's score of the move.
    Exact,
    /// The move's score is at most this (the move was refuted without an exact score).
    Upper,
    /// The move's score is at least this.
    Lower,
}

/// One move of the root and its score.
#[derive(Clone, Copy, Debug)]
pub struct RootMove {
    /// The pit, 0..5 from the mover's first house.
    pub pit: u8,
    /// Centi-stones, the mover's view (see the module's "Scores").
    pub score: i32,
    /// How the score bounds the move's score.
    pub bound: ScoreBound,
    /// The score (or bound) is proven true.
    pub exact: bool,
}

/// What one finished iteration found (reported while searching) or the search's answer.
#[derive(Clone, Debug)]
pub struct Report {
    /// The best move, `None` when the game is over at the root.
    pub best_pit: Option<u8>,
    /// The score of the best move (centi-stones; see the module's "Scores").
    pub score: i32,
    /// The score is the true value (proven), not an estimate.
    pub exact: bool,
    /// Depth of the last finished iteration (0 when the root needed no search).
    pub depth: u32,
    /// Deepest ply reached (quiescence included).
    pub seldepth: u32,
    /// Nodes searched, every thread counted.
    pub nodes: u64,
    /// Seconds since the search began.
    pub seconds: f64,
    /// The best line, pits 0..5 each from its mover's first house; extended by the layers'
    /// best moves when it ends inside them.
    pub pv: Vec<u8>,
    /// Every legal move of the root, best first (only the best scored exactly unless
    /// [`Limits::all_moves`]).
    pub moves: Vec<RootMove>,
    /// Permille of the transposition table written by this search.
    pub hashfull: u32,
}

impl Report {
    /// Nodes per second.
    pub fn nps(&self) -> u64 {
        if self.seconds > 0.0 {
            (self.nodes as f64 / self.seconds) as u64
        } else {
            0
        }
    }
}

/// The search engine: the layers it probes, its transposition table, its threads.
///
/// `Send + Sync`: one engine serves searches from any thread, one at a time or several at once
/// (they then share the table).
pub struct Engine {
    rules: Ruleset,
    db: Option<Arc<Database>>,
    /// Layers `0..=tables` are built and open.
    tables: Option<u32>,
    /// Forced-capture bounds of layers `0..=bounds` are built (used under abapa with captured
    /// counts).
    bounds: Option<u32>,
    tt: Table,
    threads: usize,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("rules", &self.rules).field("tables", &self.tables).field("threads", &self.threads).finish()
    }
}

impl Engine {
    /// An engine for `rules`, probing the layers of `db` (its rules must be `rules`) from 0 up
    /// to the first missing one, capped at `max_table` when given; `None` searches with the
    /// evaluation alone. One thread and a [`DEFAULT_HASH_MB`] table.
    ///
    /// Cost: opens (and, as `db` says, checks) every layer used, once.
    ///
    /// # Errors
    /// As [`Database::layer`] for a present layer that cannot be opened (damaged, foreign).
    pub fn new(rules: Ruleset, db: Option<Arc<Database>>, max_table: Option<u32>) -> Result<Engine> {
        let mut tables = None;
        let mut bounds = None;
        if let Some(db) = &db {
            let present = db.layers_present();
            let mut top = None;
            for n in 0..=max_table.unwrap_or(48).min(48) {
                if !present.contains(&n) {
                    break;
                }
                db.layer(n)?;
                top = Some(n);
            }
            tables = top;
            if let (Some(top), Ruleset::Abapa(_)) = (top, rules) {
                for n in 0..=top {
                    match db.bounds_layer(n) {
                        Ok(_) => bounds = Some(n),
                        Err(Error::BoundsMissing { .. }) => break,
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(Engine { rules, db, tables, bounds, tt: Table::new(DEFAULT_HASH_MB), threads: 1 })
    }

    /// The ruleset.
    pub fn rules(&self) -> Ruleset {
        self.rules
    }

    /// The largest layer probed (layers `0..=n` are), `None` without layers.
    pub fn tables(&self) -> Option<u32> {
        self.tables
    }

    /// Replaces the transposition table by one of about `megabytes` MiB (at least 16 KiB).
    ///
    /// Cost: allocates and zeroes the table.
    pub fn set_hash_mb(&mut self, megabytes: usize) {
        self.tt = Table::new(megabytes);
    }

    /// The transposition table's size in bytes.
    pub fn hash_bytes(&self) -> usize {
        self.tt.bytes()
    }

    /// Threads for timed searches (at least 1).
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.max(1);
    }

    /// Threads for timed searches.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Forgets what earlier searches stored (a new game).
    pub fn clear(&self) {
        self.tt.clear();
    }

    /// Searches `root` within `limits`; `on_info` hears each finished iteration of the main
    /// thread. Returns the answer of the last finished iteration (a first iteration always
    /// finishes, whatever the limits).
    ///
    /// Cost: what `limits` allow; stops early when the root's value is proven.
    ///
    /// # Errors
    /// A layer that cannot be read while searching ([`Error::Corrupt`], [`Error::Io`]).
    pub fn search(&self, root: &Root, limits: &Limits, control: &Control, on_info: &mut dyn FnMut(&Report)) -> Result<Report> {
        let start = Instant::now();
        if let Some(t) = limits.movetime {
            control.set_deadline(t);
        }
        self.tt.new_search();
        let game = root.captured.map(|(m, o)| (m.min(48) as u8, o.min(48) as u8));
        let shared = Shared {
            engine: self,
            control,
            game: game.is_some(),
            nodes: AtomicU64::new(0),
            done: AtomicBool::new(false),
            error: Mutex::new(None),
            node_limit: limits.nodes,
            start,
        };
        let node = Node { board: *root.position.board(), cm: game.map_or(0, |g| g.0), cn: game.map_or(0, |g| g.1) };
        let history: Vec<(u64, u32)> = root.history.iter().map(|b| (shared.key_of(b, 0, 0), stones(b))).collect();
        let single = limits.depth.is_some() || limits.nodes.is_some();
        let helpers = if single { 0 } else { self.threads - 1 };
        let max_depth = limits.depth.unwrap_or(MAX_DEPTH).clamp(1, MAX_DEPTH);
        let report = std::thread::scope(|s| {
            for id in 1..=helpers {
                let (shared, history) = (&shared, history.clone());
                s.spawn(move || {
                    let mut w = Worker::new(shared, id, history);
                    w.iterate(&node, max_depth, limits, &mut |_| {});
                });
            }
            let mut w = Worker::new(&shared, 0, history.clone());
            let r = w.iterate(&node, max_depth, limits, on_info);
            shared.done.store(true, Relaxed);
            r
        });
        if let Some(e) = shared.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(e);
        }
        let mut report = report;
        report.nodes = shared.nodes.load(Relaxed);
        report.seconds = start.elapsed().as_secs_f64();
        report.hashfull = self.tt.hashfull();
        if let Some((m, o)) = game {
            let base = (i32::from(m) - i32::from(o)) * 100;
            report.score += base;
            for mv in &mut report.moves {
                mv.score += base;
            }
        }
        self.extend_pv(&root.position, &mut report.pv);
        Ok(report)
    }

    /// Follows the layers' best moves past the end of a line that ends inside them.
    fn extend_pv(&self, start: &Position, pv: &mut Vec<u8>) {
        let (Some(db), Some(top)) = (&self.db, self.tables) else { return };
        let mut board = *start.board();
        for &pit in pv.iter() {
            match self.rules.play(&board, pit as usize).map(|m| m.outcome) {
                Some(Outcome::Child { child, .. }) => board = child,
                _ => return,
            }
        }
        while pv.len() < 60 && stones(&board) <= top {
            let Ok(position) = Position::new(board) else { return };
            let Ok(best) = db.best_moves(&position) else { return };
            let Some(m) = best.first() else { return };
            pv.push(m.pit);
            match self.rules.play(&board, m.pit as usize).map(|m| m.outcome) {
                Some(Outcome::Child { child, .. }) => board = child,
                _ => return,
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The search itself.

/// A node: the board (mover-first) and, in a game, the captured counts (mover, opponent).
#[derive(Clone, Copy, Debug)]
struct Node {
    board: Board,
    cm: u8,
    cn: u8,
}

/// A score and whether it is proven true (see the module's "Exact answers").
#[derive(Clone, Copy, Debug)]
struct Scored {
    v: i32,
    proven: bool,
}

const fn scored(v: i32, proven: bool) -> Scored {
    Scored { v, proven }
}

/// What every thread of one search shares.
struct Shared<'a> {
    engine: &'a Engine,
    control: &'a Control,
    game: bool,
    nodes: AtomicU64,
    /// The main thread has finished: helpers stop.
    done: AtomicBool,
    error: Mutex<Option<Error>>,
    node_limit: Option<u64>,
    start: Instant,
}

impl Shared<'_> {
    #[inline]
    fn key_of(&self, board: &Board, cm: u8, cn: u8) -> u64 {
        let mut k = 0u64;
        for (p, &c) in board.iter().enumerate() {
            k ^= ZOBRIST[p][c as usize];
        }
        if self.game {
            k ^= ZOBRIST[PITS][cm.min(48) as usize] ^ ZOBRIST[PITS + 1][cn.min(48) as usize] ^ 1;
        }
        k
    }

    fn fail(&self, e: Error) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
        self.control.stop();
    }

    /// The layers' answer for a node inside them: (score, proven). `None` above the layers
    /// or for a board outside every layer (its children are, one ply down).
    #[inline]
    fn table(&self, nd: &Node, n: u32) -> Option<Scored> {
        let e = self.engine;
        let top = e.tables?;
        if n > top || !in_some_layer(&nd.board) {
            return None;
        }
        let db = e.db.as_ref()?;
        let v = match db.layer(n).and_then(|t| t.get(rank_unchecked(&nd.board))) {
            Ok(v) => i32::from(v),
            Err(err) => {
                self.fail(err);
                return Some(scored(0, false));
            }
        };
        if !self.game {
            return Some(scored(v * 100, true));
        }
        match e.rules {
            Ruleset::Awari => Some(scored(v * 100, true)),
            // Abapa's own-side repetition: the even-split value is exact only where the
            // forced-capture bounds force the split; elsewhere it is clamped into them.
            Ruleset::Abapa(_) => {
                if e.bounds.is_some_and(|b| n <= b) {
                    match db.bounds_layer(n).and_then(|b| b.get(rank_unchecked(&nd.board))) {
                        Ok(b) => {
                            let (low, high) = (2 * i32::from(b.mover) - n as i32, n as i32 - 2 * i32::from(b.opponent));
                            Some(scored(v.clamp(low, high) * 100, low == high))
                        }
                        Err(err) => {
                            self.fail(err);
                            Some(scored(0, false))
                        }
                    }
                } else {
                    Some(scored(v * 100, false))
                }
            }
        }
    }
}

struct Worker<'s, 'a> {
    sh: &'s Shared<'a>,
    id: usize,
    nodes: u64,
    /// Unflushed nodes (added to the shared count every 1024).
    pending: u64,
    stopped: bool,
    /// Whether limits may stop this iteration.
    can_stop: bool,
    /// (key, stones) of the game's positions then of the path's, root included.
    path: Vec<(u64, u32)>,
    history: [[i32; 6]; 2],
    killers: [[Option<u8>; 2]; MAX_PLY],
    pv: Box<[[u8; MAX_PLY]; MAX_PLY]>,
    pv_len: [usize; MAX_PLY],
    seldepth: usize,
}

impl<'s, 'a> Worker<'s, 'a> {
    fn new(sh: &'s Shared<'a>, id: usize, path: Vec<(u64, u32)>) -> Self {
        Worker {
            sh,
            id,
            nodes: 0,
            pending: 0,
            stopped: false,
            can_stop: true,
            path,
            history: [[0; 6]; 2],
            killers: [[None; 2]; MAX_PLY],
            pv: Box::new([[0; MAX_PLY]; MAX_PLY]),
            pv_len: [0; MAX_PLY],
            seldepth: 0,
        }
    }

    #[inline]
    fn tick(&mut self) -> bool {
        self.nodes += 1;
        self.pending += 1;
        if self.pending >= 1024 {
            let total = self.sh.nodes.fetch_add(self.pending, Relaxed) + self.pending;
            self.pending = 0;
            let c = self.sh.control;
            if self.can_stop && (c.stopped() || self.sh.done.load(Relaxed) || c.past_deadline() || self.sh.node_limit.is_some_and(|l| total >= l)) {
                self.stopped = true;
            }
        }
        self.stopped
    }

    fn flush(&mut self) {
        self.sh.nodes.fetch_add(self.pending, Relaxed);
        self.pending = 0;
    }

    /// The ruleset's score of a repetition at `nd`: even split, or each side his row (abapa,
    /// with captured counts).
    fn repetition_score(&self, nd: &Node) -> i32 {
        match (self.sh.game, self.sh.engine.rules) {
            (true, Ruleset::Abapa(_)) => {
                let own: i32 = nd.board[..6].iter().map(|&c| i32::from(c)).sum();
                let opp: i32 = nd.board[6..].iter().map(|&c| i32::from(c)).sum();
                (own - opp) * 100
            }
            _ => 0,
        }
    }

    #[inline]
    fn repeats(&self, key: u64, n: u32) -> bool {
        // The path's last entry is the parent; compare with positions an even number of plies
        // back, while the stone count (which only falls) is the same.
        let len = self.path.len();
        let mut i = len.wrapping_sub(2);
        while i < len {
            let (k, m) = self.path[i];
            if m != n {
                return false;
            }
            if k == key {
                return true;
            }
            i = i.wrapping_sub(2);
        }
        false
    }

    /// Whether the 25-stone rule has ended the game at `nd` (with captured counts).
    #[inline]
    fn decided(&self, nd: &Node) -> bool {
        self.sh.game && (nd.cm > 24 || nd.cn > 24 || (nd.cm == 24 && nd.cn == 24))
    }

    /// What ends a node without a search: the layers, the 25-stone rule (the stones left on
    /// the board then count as split evenly: exact only on an empty board), a position
    /// without moves.
    #[inline]
    fn settled(&self, nd: &Node, n: u32, moves: &Moves) -> Option<Scored> {
        if let Some(s) = self.sh.table(nd, n) {
            return Some(s);
        }
        if self.decided(nd) {
            return Some(scored(0, n == 0));
        }
        moves.ending().map(|e| scored(i32::from(e) * 100, true))
    }

    fn iterate(&mut self, root: &Node, max_depth: u32, limits: &Limits, on_info: &mut dyn FnMut(&Report)) -> Report {
        let rules = self.sh.engine.rules;
        let moves = rules.moves(&root.board);
        let n = stones(&root.board);
        let key = self.sh.key_of(&root.board, root.cm, root.cn);
        let mut report =
            Report { best_pit: None, score: 0, exact: false, depth: 0, seldepth: 0, nodes: 0, seconds: 0.0, pv: Vec::new(), moves: Vec::new(), hashfull: 0 };
        // A root with moves is searched even inside the layers, so that every move is ranked
        // (each is settled one ply down).
        if self.decided(root) {
            let s = self.settled(root, n, &moves).unwrap_or(scored(0, false));
            report.score = s.v;
            report.exact = s.proven;
            return report;
        }
        if let Some(e) = moves.ending() {
            report.score = i32::from(e) * 100;
            report.exact = true;
            return report;
        }
        let mut order: Vec<RootMove> =
            moves.as_slice().iter().map(|m| RootMove { pit: m.pit, score: -INFINITE, bound: ScoreBound::Upper, exact: false }).collect();
        self.path.push((key, n));
        let first = 1 + (self.id as u32 % 2);
        for depth in first..=max_depth {
            // The main thread's first iteration always finishes (it is cheap).
            self.can_stop = depth > 1 || self.id > 0;
            if depth > first && (self.sh.control.stopped() || self.sh.done.load(Relaxed)) {
                break;
            }
            let mut alpha = -INFINITE;
            let mut best: Option<(u8, i32, bool)> = None;
            let mut all_proven = true;
            for (i, rm) in order.iter_mut().enumerate() {
                let m = *moves.from_pit(rm.pit).expect("root move");
                let s = match m.outcome {
                    Outcome::End { value } => scored(i32::from(value) * 100, true),
                    Outcome::Child { captured, child } => {
                        let cap = i32::from(captured) * 100;
                        let cnode = Node { board: child, cm: root.cn, cn: root.cm.saturating_add(captured) };
                        let full = limits.all_moves || i == 0;
                        let r = if full {
                            self.search(&cnode, -INFINITE, INFINITE, depth as i32 - 1, 1)
                        } else {
                            let r = self.search(&cnode, cap - alpha - 1, cap - alpha, depth as i32 - 1, 1);
                            if !self.stopped && cap - r.v > alpha {
                                self.search(&cnode, -INFINITE, cap - alpha, depth as i32 - 1, 1)
                            } else {
                                r
                            }
                        };
                        scored(cap - r.v, r.proven)
                    }
                };
                if self.stopped {
                    break;
                }
                let exact_score = limits.all_moves || i == 0 || s.v > alpha;
                rm.score = s.v;
                rm.bound = if exact_score { ScoreBound::Exact } else { ScoreBound::Upper };
                rm.exact = s.proven;
                all_proven &= s.proven;
                if best.map_or(true, |(_, b, _)| s.v > b) {
                    best = Some((rm.pit, s.v, s.proven));
                    self.update_pv(0, rm.pit, matches!(m.outcome, Outcome::Child { .. }));
                }
                alpha = alpha.max(s.v);
            }
            if self.stopped && depth > first {
                break;
            }
            let Some((pit, score, _)) = best else { break };
            // Best first for the next iteration; the others by their scores (stable).
            order.sort_by_key(|rm| std::cmp::Reverse(if rm.pit == pit { INFINITE } else { rm.score }));
            report.best_pit = Some(pit);
            report.score = score;
            report.exact = all_proven && !self.stopped;
            report.depth = depth;
            report.seldepth = self.seldepth as u32;
            report.pv = self.pv[0][..self.pv_len[0]].to_vec();
            report.moves = order.clone();
            if self.id == 0 {
                self.flush();
                report.nodes = self.sh.nodes.load(Relaxed);
                report.seconds = self.sh.start.elapsed().as_secs_f64();
                report.hashfull = self.sh.engine.tt.hashfull();
                on_info(&report);
            }
            if self.stopped || report.exact {
                break;
            }
            // A timed search does not begin an iteration it is unlikely to finish.
            if let (Some(t), Some(left)) = (limits.movetime, self.sh.control.left()) {
                if left < t.mul_f64(0.45) {
                    break;
                }
            }
        }
        self.flush();
        report
    }

    /// The line at `ply` becomes `pit` followed, when the move leads to a child searched at
    /// `ply + 1`, by the child's line.
    #[inline]
    fn update_pv(&mut self, ply: usize, pit: u8, child: bool) {
        self.pv[ply][ply] = pit;
        let end = if child { self.pv_len[ply + 1].max(ply + 1) } else { ply + 1 };
        for k in ply + 1..end {
            self.pv[ply][k] = self.pv[ply + 1][k];
        }
        self.pv_len[ply] = end;
    }

    /// Enters a node: counts it, starts its line, and ends it at once when it needs no search
    /// ([`settled`](Self::settled), or the search was stopped: `Err` with the score). Otherwise
    /// its stone count and moves.
    #[inline]
    fn enter(&mut self, nd: &Node, ply: usize) -> std::result::Result<(u32, Moves), Scored> {
        if self.tick() {
            return Err(scored(0, false));
        }
        self.pv_len[ply] = ply;
        self.seldepth = self.seldepth.max(ply);
        let n = stones(&nd.board);
        let moves = self.sh.engine.rules.moves(&nd.board);
        match self.settled(nd, n, &moves) {
            Some(s) => Err(s),
            None => Ok((n, moves)),
        }
    }

    /// Principal-variation search of `nd` with window `(alpha, beta)`, fail-soft.
    fn search(&mut self, nd: &Node, mut alpha: i32, beta: i32, depth: i32, ply: usize) -> Scored {
        let (n, moves) = match self.enter(nd, ply) {
            Ok(x) => x,
            Err(s) => return s,
        };
        let key = self.sh.key_of(&nd.board, nd.cm, nd.cn);
        if self.repeats(key, n) {
            return scored(self.repetition_score(nd), false);
        }
        if depth <= 0 || ply >= MAX_PLY - QUIESCENCE_PLIES as usize - 2 {
            return self.quiescence(nd, &moves, alpha, beta, ply, 0);
        }
        let tt = self.sh.engine.tt.get(key);
        let mut tt_move = None;
        if let Some(e) = tt {
            tt_move = e.best;
            if e.proven || e.depth >= depth {
                let usable = match e.bound {
                    Bound::Exact => true,
                    Bound::Lower => e.score >= beta,
                    Bound::Upper => e.score <= alpha,
                };
                if usable {
                    return scored(e.score, e.proven);
                }
            }
        }
        // Order: table move, then captures (larger first), killers, history.
        let side = ply & 1;
        let mut list: [(i32, usize); 6] = [(0, 0); 6];
        let slice = moves.as_slice();
        for (i, m) in slice.iter().enumerate() {
            let mut k = self.history[side][m.pit as usize];
            match m.outcome {
                Outcome::Child { captured, .. } if captured > 0 => k += 1_000_000 + i32::from(captured) * 1000,
                Outcome::End { value } => k += 1_000_000 + i32::from(value) * 1000,
                _ => {
                    if self.killers[ply].contains(&Some(m.pit)) {
                        k += 500_000;
                    }
                }
            }
            if tt_move == Some(m.pit) {
                k = i32::MAX;
            }
            list[i] = (k, i);
        }
        let list = &mut list[..slice.len()];
        list.sort_unstable_by_key(|&(k, _)| std::cmp::Reverse(k));

        self.path.push((key, n));
        let alpha0 = alpha;
        let mut best = scored(-INFINITE, true);
        let mut best_pit = None;
        let mut all_proven = true;
        for (count, &(_, i)) in list.iter().enumerate() {
            let m = slice[i];
            let s = match m.outcome {
                Outcome::End { value } => scored(i32::from(value) * 100, true),
                Outcome::Child { captured, child } => {
                    let cap = i32::from(captured) * 100;
                    let c = Node { board: child, cm: nd.cn, cn: nd.cm.saturating_add(captured) };
                    let r = if count == 0 {
                        self.search(&c, cap - beta, cap - alpha, depth - 1, ply + 1)
                    } else {
                        // Late quiet moves first get a reduced null-window look.
                        let reduce = i32::from(depth >= 3 && count >= 3 && captured == 0);
                        let mut r = self.search(&c, cap - alpha - 1, cap - alpha, depth - 1 - reduce, ply + 1);
                        if !self.stopped && reduce > 0 && cap - r.v > alpha {
                            r = self.search(&c, cap - alpha - 1, cap - alpha, depth - 1, ply + 1);
                        }
                        if !self.stopped && cap - r.v > alpha && cap - r.v < beta {
                            r = self.search(&c, cap - beta, cap - alpha, depth - 1, ply + 1);
                        }
                        r
                    };
                    scored(cap - r.v, r.proven)
                }
            };
            if self.stopped {
                self.path.pop();
                return scored(0, false);
            }
            all_proven &= s.proven;
            if s.v > best.v {
                best = s;
                best_pit = Some(m.pit);
                if s.v > alpha {
                    alpha = s.v;
                    self.update_pv(ply, m.pit, matches!(m.outcome, Outcome::Child { .. }));
                    if s.v >= beta {
                        if matches!(m.outcome, Outcome::Child { captured: 0, .. }) {
                            let k = &mut self.killers[ply];
                            if k[0] != Some(m.pit) {
                                k[1] = k[0];
                                k[0] = Some(m.pit);
                            }
                            let h = &mut self.history[side][m.pit as usize];
                            *h = (*h + depth * depth).min(400_000);
                        }
                        self.path.pop();
                        self.sh.engine.tt.put(key, Entry { score: s.v, depth, bound: Bound::Lower, proven: s.proven, best: Some(m.pit) });
                        return s;
                    }
                }
            }
        }
        self.path.pop();
        let bound = if best.v > alpha0 { Bound::Exact } else { Bound::Upper };
        let result = scored(best.v, all_proven);
        self.sh.engine.tt.put(key, Entry { score: best.v, depth, bound, proven: all_proven, best: best_pit });
        result
    }

    /// Captures only, with the evaluation as the score of stopping (never proven).
    /// `moves` are `nd`'s, which [`enter`](Self::enter) did not settle.
    fn quiescence(&mut self, nd: &Node, moves: &Moves, mut alpha: i32, beta: i32, ply: usize, qply: u32) -> Scored {
        let rules = self.sh.engine.rules;
        let stand = eval::evaluate(rules, &nd.board);
        if stand >= beta || qply >= QUIESCENCE_PLIES {
            return scored(stand, false);
        }
        let mut best = scored(stand, false);
        alpha = alpha.max(stand);
        for m in moves.as_slice() {
            let s = match m.outcome {
                Outcome::End { value } => scored(i32::from(value) * 100, true),
                Outcome::Child { captured, child } if captured > 0 => {
                    let cap = i32::from(captured) * 100;
                    let c = Node { board: child, cm: nd.cn, cn: nd.cm.saturating_add(captured) };
                    let r = match self.enter(&c, ply + 1) {
                        Ok((_, cm)) => self.quiescence(&c, &cm, cap - beta, cap - alpha, ply + 1, qply + 1),
                        Err(r) => r,
                    };
                    scored(cap - r.v, r.proven)
                }
                Outcome::Child { .. } => continue,
            };
            if self.stopped {
                return scored(0, false);
            }
            if s.v > best.v {
                // Only a refutation by a proven move is a proven bound; a stand-pat never is.
                best = scored(s.v, s.v >= beta && s.proven);
                if s.v > alpha {
                    alpha = s.v;
                    self.update_pv(ply, m.pit, matches!(m.outcome, Outcome::Child { .. }));
                    if s.v >= beta {
                        return best;
                    }
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests;
