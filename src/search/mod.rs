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
//! as split evenly. A layer value is the game's only where no capture can take a side past 24;
//! elsewhere the values under the 25-stone rule ([`GameValues`], up to 10 stones) replace it,
//! and above them it is an estimate. Under abapa with captured counts, a repeated position ends
//! the game and each side takes the stones in his row.
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
//!
//! ## Files
//!
//! | file | what it is |
//! |---|---|
//! | `mod.rs` | [`Engine`]: its tables, its searches and their lines |
//! | `api.rs` | the public types: [`Root`], [`Limits`], [`Control`], [`Report`], [`RootMove`], [`ScoreBound`] |
//! | `worker.rs` | one search thread: iterative deepening, the principal-variation and quiescence searches, repetitions |
//! | `shared.rs` | what the threads of one search share, and the layers' answer for a node |
//! | `tt.rs` | the transposition table, lock-free |
//! | `keys.rs` | the Zobrist keys |
//! | `eval.rs` | the static evaluation; its fitted weights in `weights.rs` (written by `scripts/fit-eval`) |
//! | `game_values.rs` | values under the 25-stone rule ([`GameValues`]) |
//! | `level.rs` | the playing strengths ([`Level`]) |
//! | [`time`] | time management ([`time::TimeControl`]) |

mod api;
pub(crate) mod eval;
mod game_values;
mod keys;
mod level;
mod shared;
pub mod time;
mod tt;
mod worker;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::position::Position;
use crate::probe::Database;
use crate::rules::{stones, Board, Outcome, Ruleset};
pub use api::{Control, Limits, MoverCaptured, Report, Root, RootMove, ScoreBound, MAX_HISTORY};
pub use game_values::{GameValue, GameValues};
use keys::board_key;
pub(crate) use keys::splitmix;
pub use level::Level;
use shared::{Node, Preference, Shared};
use tt::Table;
use worker::Worker;

/// Scores beyond every real score (centi-stones).
pub(crate) const INFINITE: i32 = 30_000;
/// Deepest ply a search path reaches (quiescence included).
pub(crate) const MAX_PLY: usize = 128;
/// Deepest nominal depth of an iteration.
pub const MAX_DEPTH: u32 = 100;
/// Plies of captures the quiescence search follows.
pub(crate) const QUIESCENCE_PLIES: u32 = 8;
/// Default size of the transposition table, MiB.
pub const DEFAULT_HASH_MB: usize = 64;

/// Checks that a transposition table of `megabytes` MiB fits the machine: at most three quarters
/// of the memory the system reports available (`MemAvailable`). A larger table would end the
/// process when [`Engine::set_hash_mb`] allocates it, or push the machine into swap. When the
/// system does not say, every size passes.
///
/// Cost: one read of `/proc/meminfo`.
///
/// # Errors
/// [`Error::Usage`] when the table does not fit, its message saying so: `4096 MiB is more than
/// three quarters of the 3000 MiB of memory available`.
pub fn check_hash_mb(megabytes: u64) -> Result<()> {
    match crate::sys::memory_available() {
        Some(available) if megabytes.saturating_mul(1 << 20) > available / 4 * 3 => {
            Err(Error::Usage(format!("{megabytes} MiB is more than three quarters of the {} MiB of memory available", available >> 20)))
        }
        _ => Ok(()),
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
    /// The largest layer it may probe (`max_table` of [`Engine::new`], at most 48).
    max_table: u32,
    /// Values under the 25-stone rule, for searches with captured counts.
    game_values: Arc<GameValues>,
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
                        Err(Error::CompanionMissing { .. }) => break,
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
        let max_table = max_table.unwrap_or(48).min(48);
        Ok(Engine {
            rules,
            db,
            tables,
            bounds,
            dtc,
            unusable,
            max_table,
            game_values: Arc::new(GameValues::new(rules)),
            tt: Table::new(DEFAULT_HASH_MB),
            threads: 1,
        })
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

    /// Whether the database now holds a file this engine would probe were it made now: the
    /// layer above its tables (within `max_table`), or the forced-capture bounds (abapa) or
    /// depths to capture of the layer above those it found, up to its tables. An engine's
    /// tables are fixed when it is made ([`Engine::new`]); a program that keeps one while
    /// layers are built (a server) asks this and makes a new one. Only regular files count (a
    /// layer still being written has another name until it is done).
    ///
    /// Cost: at most three `stat`s.
    pub fn outdated(&self) -> bool {
        use crate::storage::{BoundsKind, DtcKind, LayerState, ValuesKind};
        let Some(db) = &self.db else { return false };
        let dir = db.dir();
        let next = |top: Option<u32>| top.map_or(0, |t| t + 1);
        let present = |state: LayerState| matches!(state, LayerState::Present);
        let values = next(self.tables);
        if values <= self.max_table && present(dir.file_state::<ValuesKind>(values)) {
            return true;
        }
        let Some(top) = self.tables else { return false };
        let bounds = next(self.bounds);
        if matches!(self.rules, Ruleset::Abapa(_)) && bounds <= top && present(dir.file_state::<BoundsKind>(bounds)) {
            return true;
        }
        let dtc = next(self.dtc);
        dtc <= top && present(dir.file_state::<DtcKind>(dtc))
    }

    /// What breaks ties between root moves of equal score ([`Preference`]): under `abapa`, each
    /// move's floor (what its mover is sure of: the forced-capture bounds, or without them in a
    /// game the forced bounds under the 25-stone rule), then its depth to capture when the root
    /// is inside layers with depths built. Empty when neither is known.
    fn preferences(&self, root: &Root, clock: bool) -> Result<Vec<Preference>> {
        let Some(db) = &self.db else { return Ok(Vec::new()) };
        let position = &root.position;
        // A move into a position of value 0 has no depth (no capture is forced).
        let depths: Vec<(u8, u16)> = match self.dtc {
            Some(top) if position.stones() <= top => db.move_values(position)?.iter().filter_map(|m| Some((m.pit, m.dtc?))).collect(),
            _ => Vec::new(),
        };
        let mut out = Vec::new();
        for m in self.rules.moves(position.board()).as_slice() {
            let floor = match m.outcome {
                _ if !self.rules.own_side_repetition() => None,
                Outcome::End { value } => Some(i32::from(value) * 100),
                Outcome::Child { captured, child } => {
                    let game = root.captured.map(|c| (c.opponent.min(48), c.mover.min(48) + u32::from(captured)));
                    self.floor(&child, game, clock)?.map(|f| (i32::from(captured) - f) * 100)
                }
            };
            let dtc = depths.iter().find(|&&(p, _)| p == m.pit).map(|&(_, d)| d);
            out.push(Preference { pit: m.pit, floor, dtc });
        }
        if out.iter().all(|p| p.floor.is_none() && p.dtc.is_none()) {
            out.clear();
        }
        Ok(out)
    }

    /// The most the mover of `board` (abapa) can be held to, in stones: where the game is over
    /// by the 25-stone rule (`game`: captured counts, mover first), its end; else the
    /// forced-capture bounds when built (what each side can force, repetitions included); else
    /// in a game the bounds under the rule where solved; `None` when none knows.
    fn floor(&self, board: &Board, game: Option<(u32, u32)>, clock: bool) -> Result<Option<i32>> {
        let rule = match game {
            Some((m, o)) => self.rule_value(board, m, o, clock)?,
            None => GameValue::Layer,
        };
        if rule == GameValue::Decided {
            return Ok(Some(i32::from(self.rules.moves(board).ending().unwrap_or(0))));
        }
        let n = stones(board);
        if let (Some(db), Some(top)) = (&self.db, self.bounds) {
            if n <= top && crate::index::in_some_layer(board) {
                return Ok(Some(db.bounds_layer(n)?.get(crate::index::rank_unchecked(board))?.value_range(n).1));
            }
        }
        Ok(match rule {
            GameValue::Exact(g) => Some(i32::from(g)),
            GameValue::Between(_, high) => Some(i32::from(high)),
            _ => None,
        })
    }

    /// What the 25-stone rule makes of `board`'s value ([`GameValues`]); with a `clock`,
    /// without waiting for a layer to be solved.
    fn rule_value(&self, board: &Board, m: u32, o: u32, clock: bool) -> Result<GameValue> {
        if clock {
            self.game_values.value_now(board, m, o)
        } else {
            self.game_values.value(board, m, o)
        }
    }

    /// What the 25-stone rule makes of `board`'s value for the engine's line after a search:
    /// with a `clock`, only what is solved already (the line never waits; elsewhere it follows
    /// the layers' best moves), else as [`rule_value`](Self::rule_value).
    fn line_value(&self, board: &Board, m: u32, o: u32, clock: bool) -> Result<GameValue> {
        if clock {
            Ok(self.game_values.value_if_solved(board, m, o))
        } else {
            self.game_values.value(board, m, o)
        }
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

    /// [`set_hash_mb`](Self::set_hash_mb) for a search about to start under `control`: once
    /// `control` is stopped, the table's pages are no longer faulted in ahead (they are as the
    /// search writes them), so that a stop is answered at once whatever the table's size.
    ///
    /// Cost: allocates the table and zeroes it until `control` stops.
    pub fn set_hash_mb_for(&mut self, megabytes: usize, control: &Control) {
        // The old table is given back first: the two need not fit together.
        self.tt = Table::new(1);
        self.tt = Table::new_unless(megabytes, &|| control.stopped());
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
    /// With a `movetime` and the captured stones known, a search that would end early with an
    /// estimate while values under the 25-stone rule it met are solved on another thread
    /// ([`GameValues`]) waits for them within its time, forgets the table's scores and searches
    /// again (`on_info` then hears the new search's iterations from depth 1).
    ///
    /// Cost: what `limits` allow; stops early when the root's value is proven.
    ///
    /// # Errors
    /// A layer that cannot be read while searching ([`Error::Corrupt`], [`Error::Io`]);
    /// [`Error::Usage`] when the root's history since its last capture is not a game's (a
    /// position that no move without capture leads from to the next, or to the root).
    pub fn search(&self, root: &Root, limits: &Limits, control: &Control, on_info: &mut dyn FnMut(&Report)) -> Result<Report> {
        let start = Instant::now();
        if let Some(t) = limits.movetime {
            control.set_deadline(t);
        }
        let mut report = self.search_once(root, limits, control, on_info, start)?;
        // A clocked search with the captured stones known can end before its deadline with an
        // estimate where the 25-stone rule's values it met were being solved on another thread
        // (it does not wait for them): the rest of its time waits for them, and a search with
        // them gives the answer (issue 67, item 7: `play`'s first move inside the tables was
        // an estimate). The table forgets the scores made without them.
        while limits.movetime.is_some() && root.captured.is_some() && !report.exact && self.game_values.solving_in_background() {
            while self.game_values.solving_in_background() && !control.past_deadline() && !control.stopped() {
                std::thread::sleep(Duration::from_millis(2));
            }
            if control.past_deadline() || control.stopped() {
                break;
            }
            self.tt.clear();
            let again = self.search_once(root, limits, control, on_info, start)?;
            // Begun late (the values came near the deadline), the search again can end shallower
            // than the first, as shallow as its first iteration (a line of one ply, which the
            // page's test of the engine's line caught now and then): it replaces the first only
            // when it proves the value or searched as deep.
            if again.exact || again.depth >= report.depth {
                let nodes = report.nodes;
                report = Report { nodes: again.nodes + nodes, ..again };
            } else {
                report.nodes += again.nodes;
                break;
            }
        }
        Ok(report)
    }

    /// One search of [`search`](Self::search), its deadline set; `start`: when the search began.
    fn search_once(&self, root: &Root, limits: &Limits, control: &Control, on_info: &mut dyn FnMut(&Report), start: Instant) -> Result<Report> {
        self.tt.new_search();
        let game = root.captured.map(|c| (c.mover.min(48) as u8, c.opponent.min(48) as u8));
        // The game's positions that play can repeat: those since its last capture (as many
        // stones as the root; any before them hold more and cannot come again).
        let n0 = root.position.stones();
        let since = root.history.iter().rev().take_while(|b| stones(b) == n0).count();
        // Those must be a game's: each leads to the next, and the last to the root, by a move
        // that captures nothing (a made-up history could make up a repetition).
        let recent = &root.history[root.history.len() - since..];
        for (i, b) in recent.iter().enumerate() {
            let next = recent.get(i + 1).unwrap_or(root.position.board());
            if self.rules.quiet_move_between(b, next).is_none() {
                return Err(Error::Usage(format!(
                    "the game's position {} of {}: no move of {} leads from it to the next without a capture (a history is the game's positions since its last capture, in order)",
                    root.history.len() - since + i + 1,
                    root.history.len(),
                    self.rules
                )));
            }
        }
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
            prefer: self.preferences(root, limits.movetime.is_some())?,
            clock: limits.movetime.is_some(),
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
        // A deep enough line: where a table entry answered a node of it, the search's line
        // stops there (as short as one ply from a warm table); the entries know the moves.
        let plies = (report.depth as usize).max(report.pv.len()).min(MAX_PLY);
        self.extend_pv_from_table(&shared, &node, &history, &mut report.pv, plies);
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
        self.extend_pv(root, &mut report.pv, limits.movetime.is_some());
        Ok(report)
    }

    /// Follows the transposition table's moves past the end of `pv` (from `root`), up to `max`
    /// plies in all: a node of the line that a stored entry answered (left from an earlier
    /// iteration or search, or by another thread) ends the line the search passes up, though
    /// the entry holds its best move. Only the moves of exact scores and lower bounds are
    /// followed (not of upper bounds: every move failed there), legal ones, and never into a position the line or the game since its last capture (`history`)
    /// has had already.
    fn extend_pv_from_table(&self, shared: &Shared, root: &Node, history: &[(u64, u32)], pv: &mut Vec<u8>, max: usize) {
        let mut nd = *root;
        let mut seen: Vec<u64> = history.iter().map(|&(k, _)| k).collect();
        let play = |nd: &mut Node, seen: &mut Vec<u64>, pit: u8| -> bool {
            seen.push(board_key(&nd.board));
            match self.rules.play(&nd.board, pit as usize).map(|m| m.outcome) {
                Some(Outcome::Child { child, captured }) => {
                    if captured > 0 {
                        seen.clear();
                    }
                    *nd = Node { board: child, cm: nd.cn, cn: nd.cm.saturating_add(captured) };
                    true
                }
                _ => false,
            }
        };
        for &pit in pv.iter() {
            if !play(&mut nd, &mut seen, pit) {
                return;
            }
        }
        while pv.len() < max {
            let bkey = board_key(&nd.board);
            if seen.contains(&bkey) {
                return;
            }
            let Some(e) = self.tt.get(shared.key_with(bkey, stones(&nd.board), nd.cm, nd.cn)) else { return };
            // An exact score's move, or a move that reached a lower bound (a node searched
            // again with a narrower window keeps that bound in its entry).
            let (tt::Bound::Exact | tt::Bound::Lower, Some(pit)) = (e.bound, e.best) else { return };
            if self.rules.play(&nd.board, pit as usize).is_none() {
                return;
            }
            pv.push(pit);
            if !play(&mut nd, &mut seen, pit) {
                return;
            }
        }
    }

    /// Follows the layers' best moves past the end of a line that ends inside them, as long as
    /// the line repeats no position (of the game since its last capture, or of the line): a
    /// repetition ends the game. In a game (captured counts), the line goes on through the
    /// tables until the game ends: where the 25-stone rule cannot change the layers' values it
    /// follows their best moves; where it can and the value under the rule is solved
    /// ([`GameValue::Exact`]), a move that keeps that value ([`rule_move`](Self::rule_move));
    /// where it is not solved (more than [`GameValues::MAX_STONES`] stones, or, after a search
    /// with a clock, not solved yet: the line never waits), the layers' best moves, whose values
    /// the search took as its estimate there. It stops where the rule ends the game (a side past 24): the
    /// line's last move is the one that ends it.
    fn extend_pv(&self, root: &Root, pv: &mut Vec<u8>, clock: bool) {
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
        // In a game, the captured counts along the line (mover first).
        let mut game = root.captured.map(|c| (c.mover.min(48), c.opponent.min(48)));
        for &pit in pv.iter() {
            game = self.after(game, &board, pit);
            if !step(&mut board, pit, &mut seen, &mut ply) {
                return;
            }
        }
        while pv.len() < 60 && stones(&board) <= top {
            let Ok(position) = Position::new(board) else { return };
            let layers = || -> Option<u8> { db.best_moves(&position).ok()?.first().map(|m| m.pit) };
            let pit = match game.map(|(m, o)| (m, o, self.line_value(&board, m, o, clock))) {
                None | Some((_, _, Ok(GameValue::Layer | GameValue::Unknown))) => layers(),
                Some((m, o, Ok(GameValue::Exact(g)))) => self.rule_move(&board, m, o, g, clock),
                // The game is over (the rule's end), or under abapa the rule's value depends on
                // the game's path (no move is known to keep it).
                Some((_, _, Ok(GameValue::Decided | GameValue::Between(..)) | Err(_))) => None,
            };
            let Some(pit) = pit else { return };
            game = self.after(game, &board, pit);
            pv.push(pit);
            if !step(&mut board, pit, &mut seen, &mut ply) {
                return;
            }
        }
    }

    /// A move of `board` (mover first; the mover has captured `m` stones, the opponent `o`)
    /// that keeps its value under the 25-stone rule, `g`: captures first (the largest), which
    /// bring the game's end nearer, then the layers' order of value. `None` when no move's
    /// value is known to be `g` (a child whose value under the rule is not solved).
    fn rule_move(&self, board: &Board, m: u32, o: u32, g: i8, clock: bool) -> Option<u8> {
        let db = self.db.as_ref()?;
        let top = self.tables?;
        let mut keeping: Vec<(u8, u8, i32)> = Vec::new();
        for mv in self.rules.moves(board).as_slice() {
            let (value, captured, layer) = match mv.outcome {
                Outcome::End { value } => (Some(i32::from(value)), 0, i32::from(value)),
                Outcome::Child { captured, child } => {
                    let n = stones(&child);
                    let layer = (n <= top && crate::index::in_some_layer(&child))
                        .then(|| db.layer(n).and_then(|t| t.get(crate::index::rank_unchecked(&child))).ok())
                        .flatten()
                        .map(i32::from);
                    let child_value = match self.line_value(&child, o, m + u32::from(captured), clock).ok()? {
                        GameValue::Decided => Some(i32::from(self.rules.moves(&child).ending().unwrap_or(0))),
                        GameValue::Layer => layer,
                        GameValue::Exact(x) => Some(i32::from(x)),
                        GameValue::Between(..) | GameValue::Unknown => None,
                    };
                    (child_value.map(|v| i32::from(captured) - v), captured, i32::from(captured) - layer.unwrap_or(0))
                }
            };
            if value == Some(i32::from(g)) {
                keeping.push((mv.pit, captured, layer));
            }
        }
        keeping.sort_by_key(|&(pit, captured, layer)| (std::cmp::Reverse(captured), std::cmp::Reverse(layer), pit));
        keeping.first().map(|&(pit, _, _)| pit)
    }

    /// The captured counts (mover first) after `pit` is played from `board`.
    fn after(&self, game: Option<(u32, u32)>, board: &Board, pit: u8) -> Option<(u32, u32)> {
        let (m, o) = game?;
        let taken = match self.rules.play(board, pit as usize).map(|mv| mv.outcome) {
            Some(Outcome::Child { captured, .. }) => u32::from(captured),
            _ => 0,
        };
        Some((o, m + taken))
    }
}

#[cfg(test)]
mod tests;
