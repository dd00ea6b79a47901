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
    /// Depths to capture of layers `0..=dtc` are built (the root's moves are ranked by them).
    dtc: Option<u32>,
    /// The first file that could not be used.
    unusable: Option<Error>,
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
    /// A present layer that cannot be opened (damaged, foreign, unreadable) ends the layers
    /// probed below it, and its error is kept ([`unusable`](Self::unusable)); so do the
    /// forced-capture bounds (abapa) and the depths to capture, each probed up to its first
    /// missing or unusable file.
    ///
    /// Cost: opens (and, as `db` says, checks) every layer, bounds and dtc file used, once.
    ///
    /// # Errors
    /// None today: damaged files are reported by [`unusable`](Self::unusable); the `Result`
    /// is kept for errors of opening to come.
    pub fn new(rules: Ruleset, db: Option<Arc<Database>>, max_table: Option<u32>) -> Result<Engine> {
        let mut tables = None;
        let mut bounds = None;
        let mut dtc = None;
        let mut unusable = None;
        if let Some(db) = &db {
            let present = db.layers_present();
            for n in 0..=max_table.unwrap_or(48).min(48) {
                if !present.contains(&n) {
                    break;
                }
                if let Err(e) = db.layer(n) {
                    unusable = Some(e);
                    break;
                }
                tables = Some(n);
            }
            if let (Some(top), Ruleset::Abapa(_)) = (tables, rules) {
                for n in 0..=top {
                    match db.bounds_layer(n) {
                        Ok(_) => bounds = Some(n),
                        Err(Error::BoundsMissing { .. }) => break,
                        Err(e) => {
                            unusable.get_or_insert(e);
                            break;
                        }
                    }
                }
            }
            if let Some(top) = tables {
                for n in 0..=top {
                    match db.dtc_layer(n) {
                        Ok(Some(_)) => dtc = Some(n),
                        Ok(None) => break,
                        Err(e) => {
                            unusable.get_or_insert(e);
                            break;
                        }
                    }
                }
            }
        }
        Ok(Engine { rules, db, tables, bounds, dtc, unusable, tt: Table::new(DEFAULT_HASH_MB), threads: 1 })
    }

    /// The first file of the database that could not be used, when one could not: the layers
    /// (or bounds, or depths to capture) from its layer up are not probed.
    pub fn unusable(&self) -> Option<&Error> {
        self.unusable.as_ref()
    }

    /// The largest layer whose depths to capture are used (`0..=n` are), `None` without them.
    pub fn dtc_tables(&self) -> Option<u32> {
        self.dtc
    }

    /// The root's moves and their depths to capture, when the root is inside the layers and
    /// their depths are built: how the engine converts a won position (the winner among moves
    /// of equal score takes the least depth, the loser the greatest, as perfect play does).
    /// Empty otherwise.
    fn preferences(&self, root: &Root) -> Result<Vec<(u8, u16)>> {
        let (Some(db), Some(top)) = (&self.db, self.dtc) else { return Ok(Vec::new()) };
        if root.position.stones() > top {
            return Ok(Vec::new());
        }
        // A move into a position of value 0 has no depth (no capture is forced).
        Ok(db.move_values(&root.position)?.iter().filter_map(|m| Some((m.pit, m.dtc?))).collect())
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
        // The game's positions that play can repeat: those since its last capture (as many
        // stones as the root; any before them hold more and cannot come again).
        let n0 = root.position.stones();
        let since = root.history.iter().rev().take_while(|b| stones(b) == n0).count();
        let history: Vec<(u64, u32)> = root.history[root.history.len() - since..].iter().map(|b| (board_key(b), n0)).collect();
        let salt = history.iter().fold(0x005E_ED0F_0A7A_u64, |h, &(k, _)| splitmix(h ^ k)) | 1;
        let shared = Shared {
            engine: self,
            control,
            game: game.is_some(),
            nodes: AtomicU64::new(0),
            done: AtomicBool::new(false),
            error: Mutex::new(None),
            node_limit: limits.nodes,
            start,
            region: (since > 0).then_some(n0),
            salt,
            prefer: self.preferences(root)?,
        };
        let node = Node { board: *root.position.board(), cm: game.map_or(0, |g| g.0), cn: game.map_or(0, |g| g.1) };
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
        self.extend_pv(root, &mut report.pv);
        Ok(report)
    }

    /// Follows the layers' best moves past the end of a line that ends inside them, as long as
    /// the line repeats no position (of the game since its last capture, or of the line): a
    /// repetition ends the game.
    fn extend_pv(&self, root: &Root, pv: &mut Vec<u8>) {
        let (Some(db), Some(top)) = (&self.db, self.tables) else { return };
        let mut board = *root.position.board();
        let n0 = stones(&board);
        // Boards since the last capture, each with its ply's parity (the side to move).
        let mut seen: Vec<(Board, usize)> = Vec::new();
        let h = root.history.iter().rev().take_while(|b| stones(b) == n0).count();
        for (i, b) in root.history[root.history.len() - h..].iter().enumerate() {
            seen.push((*b, (h - i) % 2));
        }
        let mut ply = 0usize;
        let step = |board: &mut Board, pit: u8, seen: &mut Vec<(Board, usize)>, ply: &mut usize| -> bool {
            seen.push((*board, *ply % 2));
            match self.rules.play(board, pit as usize).map(|m| m.outcome) {
                Some(Outcome::Child { child, captured }) => {
                    if captured > 0 {
                        seen.clear();
                    }
                    *board = child;
                    *ply += 1;
                    !seen.iter().any(|&(b, p)| p == *ply % 2 && b == child)
                }
                _ => false,
            }
        };
        for &pit in pv.iter() {
            if !step(&mut board, pit, &mut seen, &mut ply) {
                return;
            }
        }
        while pv.len() < 60 && stones(&board) <= top {
            let Ok(position) = Position::new(board) else { return };
            let Ok(best) = db.best_moves(&position) else { return };
            let Some(m) = best.first() else { return };
            pv.push(m.pit);
            if !step(&mut board, m.pit, &mut seen, &mut ply) {
                return;
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

/// How far a score is known to be true (see the module's "Exact answers"). Ordered: a score
/// that rests on several is as good as the worst of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Proof {
    /// An estimate: it rests on an evaluated leaf, a stand-pat, or a repetition below the
    /// game's positions.
    Estimate,
    /// True for this node with the positions before it (the game's and the line's): it rests
    /// on repetitions of them. Never stored in the table as proven.
    Here,
    /// True whatever came before: layer values, game ends, and bounds that hold in any
    /// history.
    Proven,
}

/// A score and how far it is proven.
#[derive(Clone, Copy, Debug)]
struct Scored {
    v: i32,
    proof: Proof,
}

const fn scored(v: i32, proof: Proof) -> Scored {
    Scored { v, proof }
}

/// A proven score when `proven`, else an estimate.
const fn scored_if(v: i32, proven: bool) -> Scored {
    Scored { v, proof: if proven { Proof::Proven } else { Proof::Estimate } }
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
    /// The stone count of the game's positions before the root (since its last capture), when
    /// there are any: nodes of that count can repeat them.
    region: Option<u32>,
    /// Mixed into the table keys of those nodes: a digest of the game's positions, so that
    /// what depends on them serves only searches with the same ones.
    salt: u64,
    /// The root's moves' depths to capture (pit, plies), when the root is inside layers with
    /// depths built: among moves of equal score the winner takes the least, the loser the
    /// greatest ([`Engine::preferences`]).
    prefer: Vec<(u8, u16)>,
}

/// The key of a board alone (repetitions compare boards with the same side to move).
#[inline]
fn board_key(board: &Board) -> u64 {
    let mut k = 0u64;
    for (p, &c) in board.iter().enumerate() {
        k ^= ZOBRIST[p][c as usize];
    }
    k
}

impl Shared<'_> {
    /// The table key of a node from its board's key `k` and its stone count `n`: the board,
    /// the captured counts in a game, and the salt where the game's positions matter.
    #[inline]
    fn key_with(&self, mut k: u64, n: u32, cm: u8, cn: u8) -> u64 {
        if self.region(n) {
            k ^= self.salt;
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

    /// What the layers say of a node inside them (`None` above the layers or for a board
    /// outside every layer: its children are, one ply down).
    ///
    /// The layers' value is the position's value when nothing came before it (or when only
    /// positions with more stones did). With earlier positions of as many stones that play can
    /// repeat, the value is bounded only, by what holds in any history: under the even split of
    /// a repetition, between the value and 0 (a side that can keep the value at or above 0
    /// keeps it so, a repetition giving 0); under abapa's rule with captured counts, by the
    /// forced-capture bounds when they are built.
    #[inline]
    fn table(&self, nd: &Node, n: u32) -> Option<TableAnswer> {
        let e = self.engine;
        let top = e.tables?;
        if n > top || !in_some_layer(&nd.board) {
            return None;
        }
        let db = e.db.as_ref()?;
        let failed = |err| {
            self.fail(err);
            Some(TableAnswer { est: 0, low: 0, high: 0, clean: false })
        };
        let v = match db.layer(n).and_then(|t| t.get(rank_unchecked(&nd.board))) {
            Ok(v) => i32::from(v) * 100,
            Err(err) => return failed(err),
        };
        if self.game && matches!(e.rules, Ruleset::Abapa(_)) {
            // Abapa's own-side repetition: the even-split value is exact only where the
            // forced-capture bounds force the split; elsewhere it is clamped into them.
            if e.bounds.is_some_and(|b| n <= b) {
                return match db.bounds_layer(n).and_then(|b| b.get(rank_unchecked(&nd.board))) {
                    Ok(b) => {
                        let (low, high) = ((2 * i32::from(b.mover) - n as i32) * 100, (n as i32 - 2 * i32::from(b.opponent)) * 100);
                        Some(TableAnswer { est: v.clamp(low, high), low, high, clean: false })
                    }
                    Err(err) => failed(err),
                };
            }
            let n = n as i32 * 100;
            return Some(TableAnswer { est: v, low: -n, high: n, clean: false });
        }
        Some(TableAnswer { est: v, low: v.min(0), high: v.max(0), clean: true })
    }

    /// Whether a node of `n` stones can repeat a position of the game before the root (the
    /// game has positions of `n` stones since its last capture). Such nodes are searched, not
    /// settled by the layers, and their table entries are kept apart ([`Shared::salt`]).
    #[inline]
    fn region(&self, n: u32) -> bool {
        self.region == Some(n)
    }
}

/// The layers' answer for a node: `est` the layer value (or, under abapa with captured counts,
/// that value clamped into the bounds), `low..=high` what holds whatever came before.
/// `clean`: `est` is the true value when nothing came before (awari, or no captured counts).
#[derive(Clone, Copy, Debug)]
struct TableAnswer {
    est: i32,
    low: i32,
    high: i32,
    clean: bool,
}

impl TableAnswer {
    /// The answer at a node that follows a capture (or the game's positions do not matter).
    fn settled(self) -> Scored {
        if self.clean || self.low == self.high {
            scored(self.est, Proof::Proven)
        } else {
            scored(self.est, Proof::Estimate)
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

    /// The ruleset's score of a repetition at `nd`: each side his row under abapa with captured
    /// counts (the game's rule), else an even split (the layers' convention).
    fn repetition_score(&self, nd: &Node) -> i32 {
        match (self.sh.game, self.sh.engine.rules) {
            (true, rules @ Ruleset::Abapa(_)) => i32::from(rules.repetition_value(&nd.board)) * 100,
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

    /// What ends a node without a search: a position without moves (the rules share the stones
    /// out), the 25-stone rule (the game is over; the stones left on the board count as split
    /// evenly, by definition), the layers (except where the game's positions can repeat:
    /// [`Shared::region`]).
    #[inline]
    fn settled(&self, nd: &Node, n: u32, moves: &Moves) -> Option<Scored> {
        if let Some(e) = moves.ending() {
            return Some(scored(i32::from(e) * 100, Proof::Proven));
        }
        if self.decided(nd) {
            return Some(scored(0, Proof::Proven));
        }
        if !self.sh.region(n) {
            if let Some(t) = self.sh.table(nd, n) {
                return Some(t.settled());
            }
        }
        None
    }

    /// Whether `pit`, scoring `s` at the root, is to be preferred to the best move so far,
    /// `best` scoring `b`: a higher score, or at an equal score a better depth to capture (the
    /// winner the least, the loser the greatest; [`Shared::prefer`]).
    fn preferred(&self, pit: u8, s: i32, best: Option<(u8, i32)>) -> bool {
        let Some((bp, b)) = best else { return true };
        if s != b {
            return s > b;
        }
        let depth = |p: u8| self.sh.prefer.iter().find(|&&(q, _)| q == p).map(|&(_, d)| d);
        match (depth(pit), depth(bp)) {
            (Some(d), Some(e)) if s > 0 => d < e,
            (Some(d), Some(e)) if s < 0 => d > e,
            _ => false,
        }
    }

    fn iterate(&mut self, root: &Node, max_depth: u32, limits: &Limits, on_info: &mut dyn FnMut(&Report)) -> Report {
        let rules = self.sh.engine.rules;
        let moves = rules.moves(&root.board);
        let n = stones(&root.board);
        let bkey = board_key(&root.board);
        let mut report =
            Report { best_pit: None, score: 0, exact: false, depth: 0, seldepth: 0, nodes: 0, seconds: 0.0, pv: Vec::new(), moves: Vec::new(), hashfull: 0 };
        // A root with moves is searched even inside the layers, so that every move is ranked
        // (each is settled one ply down).
        if let Some(e) = moves.ending() {
            report.score = i32::from(e) * 100;
            report.exact = true;
            return report;
        }
        if self.decided(root) {
            report.exact = true;
            return report;
        }
        // A root that repeats a position of the game: the game ended there.
        if self.repeats(bkey, n) {
            report.score = self.repetition_score(root);
            report.exact = true;
            return report;
        }
        self.path.push((bkey, n));
        let mut order: Vec<RootMove> =
            moves.as_slice().iter().map(|m| RootMove { pit: m.pit, score: -INFINITE, bound: ScoreBound::Upper, exact: false }).collect();
        // With depths to capture, moves that tie with the best are scored exactly too, so that
        // the depth decides between them.
        let ties = !self.sh.prefer.is_empty();
        let first = 1 + (self.id as u32 % 2);
        for depth in first..=max_depth {
            // The main thread's first iteration always finishes (it is cheap).
            self.can_stop = depth > 1 || self.id > 0;
            if depth > first && (self.sh.control.stopped() || self.sh.done.load(Relaxed)) {
                break;
            }
            let mut alpha = -INFINITE;
            let mut best: Option<(u8, i32)> = None;
            let mut proof = Proof::Proven;
            for (i, rm) in order.iter_mut().enumerate() {
                let m = *moves.from_pit(rm.pit).expect("root move");
                let (s, full) = match m.outcome {
                    Outcome::End { value } => (scored(i32::from(value) * 100, Proof::Proven), true),
                    Outcome::Child { captured, child } => {
                        let cap = i32::from(captured) * 100;
                        let cnode = Node { board: child, cm: root.cn, cn: root.cm.saturating_add(captured) };
                        let d = depth as i32 - 1;
                        if limits.all_moves || i == 0 {
                            let r = self.search(&cnode, -INFINITE, INFINITE, d, 1);
                            (scored(cap - r.v, r.proof), true)
                        } else {
                            // A null window at alpha: a move above it (or, with ties, at it)
                            // is searched again with a full window.
                            let edge = cap - alpha;
                            let mut r = if ties { self.search(&cnode, edge, edge + 1, d, 1) } else { self.search(&cnode, edge - 1, edge, d, 1) };
                            let above = if ties { r.v <= edge } else { r.v < edge };
                            if !self.stopped && above {
                                let r = self.search(&cnode, -INFINITE, INFINITE, d, 1);
                                (scored(cap - r.v, r.proof), true)
                            } else {
                                if ties && !self.stopped && r.proof < Proof::Here {
                                    // Below alpha by an estimate: try for a proven bound at it.
                                    r = self.search(&cnode, edge - 1, edge, d, 1);
                                }
                                (scored(cap - r.v, r.proof), false)
                            }
                        }
                    }
                };
                if self.stopped {
                    break;
                }
                rm.score = s.v;
                rm.bound = if full { ScoreBound::Exact } else { ScoreBound::Upper };
                rm.exact = s.proof >= Proof::Here;
                proof = proof.min(s.proof);
                if full && self.preferred(rm.pit, s.v, best) {
                    best = Some((rm.pit, s.v));
                    self.update_pv(0, rm.pit, matches!(m.outcome, Outcome::Child { .. }));
                }
                alpha = alpha.max(s.v);
            }
            if self.stopped && depth > first {
                break;
            }
            let Some((pit, score)) = best else { break };
            // Best first for the next iteration; the others by their scores (stable).
            order.sort_by_key(|rm| std::cmp::Reverse(if rm.pit == pit { INFINITE } else { rm.score }));
            report.best_pit = Some(pit);
            report.score = score;
            report.exact = proof >= Proof::Here && !self.stopped;
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
            // The node limit is checked every 1024 nodes inside an iteration, and here between
            // iterations (those answered from the table take a few nodes each).
            if self.sh.node_limit.is_some_and(|l| self.sh.nodes.load(Relaxed) + self.pending >= l) {
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
            return Err(scored(0, Proof::Estimate));
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
        let bkey = board_key(&nd.board);
        let region = self.sh.region(n);
        if self.repeats(bkey, n) {
            // Among the game's positions a repetition ends the game: its score is the true one
            // for this line. Below them (after a capture in the line) it stays an estimate, so
            // that what is proven there holds without the line.
            return scored(self.repetition_score(nd), if region { Proof::Here } else { Proof::Estimate });
        }
        if region {
            // Inside the layers, where the game's positions can repeat: the layer value is
            // bounded only; the bounds hold whatever came before.
            if let Some(t) = self.sh.table(nd, n) {
                if t.low == t.high {
                    return scored(t.low, Proof::Proven);
                }
                if t.high <= alpha {
                    return scored(t.high, Proof::Proven);
                }
                if t.low >= beta {
                    return scored(t.low, Proof::Proven);
                }
                if depth <= 0 {
                    return scored(t.est, Proof::Estimate);
                }
            }
        }
        if depth <= 0 || ply >= MAX_PLY - QUIESCENCE_PLIES as usize - 2 {
            return self.quiescence(nd, &moves, alpha, beta, ply, 0);
        }
        let key = self.sh.key_with(bkey, n, nd.cm, nd.cn);
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
                    return scored_if(e.score, e.proven);
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

        self.path.push((bkey, n));
        let alpha0 = alpha;
        let mut best = scored(-INFINITE, Proof::Proven);
        let mut best_pit = None;
        let mut proof = Proof::Proven;
        for (count, &(_, i)) in list.iter().enumerate() {
            let m = slice[i];
            let s = match m.outcome {
                Outcome::End { value } => scored(i32::from(value) * 100, Proof::Proven),
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
                    scored(cap - r.v, r.proof)
                }
            };
            if self.stopped {
                self.path.pop();
                return scored(0, Proof::Estimate);
            }
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
                        // A bound proven only with the line's positions is stored as an
                        // estimate (it would not hold when the node is reached otherwise).
                        self.sh.engine.tt.put(key, Entry { score: s.v, depth, bound: Bound::Lower, proven: s.proof == Proof::Proven, best: Some(m.pit) });
                        return s;
                    }
                }
            }
            proof = proof.min(s.proof);
        }
        self.path.pop();
        let bound = if best.v > alpha0 { Bound::Exact } else { Bound::Upper };
        self.sh.engine.tt.put(key, Entry { score: best.v, depth, bound, proven: proof == Proof::Proven, best: best_pit });
        scored(best.v, proof)
    }

    /// Captures only, with the evaluation as the score of stopping (never proven).
    /// `moves` are `nd`'s, which [`enter`](Self::enter) did not settle.
    fn quiescence(&mut self, nd: &Node, moves: &Moves, mut alpha: i32, beta: i32, ply: usize, qply: u32) -> Scored {
        let rules = self.sh.engine.rules;
        let stand = eval::evaluate(rules, &nd.board);
        if stand >= beta || qply >= QUIESCENCE_PLIES {
            return scored(stand, Proof::Estimate);
        }
        let mut best = scored(stand, Proof::Estimate);
        alpha = alpha.max(stand);
        for m in moves.as_slice() {
            let s = match m.outcome {
                Outcome::End { value } => scored(i32::from(value) * 100, Proof::Proven),
                Outcome::Child { captured, child } if captured > 0 => {
                    let cap = i32::from(captured) * 100;
                    let c = Node { board: child, cm: nd.cn, cn: nd.cm.saturating_add(captured) };
                    let r = match self.enter(&c, ply + 1) {
                        Ok((_, cm)) => self.quiescence(&c, &cm, cap - beta, cap - alpha, ply + 1, qply + 1),
                        Err(r) => r,
                    };
                    scored(cap - r.v, r.proof)
                }
                Outcome::Child { .. } => continue,
            };
            if self.stopped {
                return scored(0, Proof::Estimate);
            }
            if s.v > best.v {
                // Only a refutation by a proven move is a proven bound; a stand-pat never is.
                best = scored(s.v, if s.v >= beta { s.proof } else { Proof::Estimate });
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
