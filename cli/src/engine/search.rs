//! The search thread: one `go`'s search, its `info` lines and its `bestmove`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use oware::game::{End, Game};
use oware::position::{house, Side};
use oware::search::{Control, Limits, Report};

use super::out::Out;
use super::setup::{prepare, Options, Resize, Slot};
use crate::show::{line_houses, Ending};
use crate::signals;

/// One `go`: what its search thread needs, and how it answers.
pub(crate) struct Job {
    /// The engine, set up for `options` by the search thread before it searches.
    pub(crate) slot: Slot,
    pub(crate) options: Options,
    pub(crate) game: Game,
    /// Why the last `position` was refused, if it was: nothing is searched.
    pub(crate) refused: Option<String>,
    pub(crate) limits: Limits,
    pub(crate) control: Arc<Control>,
    /// The search may not send `bestmove` while set (`go infinite`, `go ponder`).
    pub(crate) hold: Arc<AtomicBool>,
    /// Set just before the search sends `bestmove`.
    pub(crate) answered: Arc<AtomicBool>,
    pub(crate) out: Arc<Out>,
}

impl Job {
    pub(crate) fn run(self) {
        let best = self.answer();
        // `go infinite` and `go ponder` answer only after stop (or ponderhit).
        while self.hold.load(Ordering::SeqCst) && !self.control.stopped() {
            std::thread::sleep(Duration::from_millis(2));
        }
        self.answered.store(true, Ordering::SeqCst);
        self.out.send(&best);
    }

    /// Searches and returns the `bestmove` line. A bus error while it searches (a layer
    /// truncated in place under the engine) still answers: with the best move so far.
    fn answer(&self) -> String {
        if let Some(why) = &self.refused {
            self.out.info(&format!("no position to search: the last position command was refused ({why}); send a position"));
            return "bestmove 0000".into();
        }
        if let Some(end) = self.game.end() {
            self.out.info(&game_over(&self.game, end));
            return "bestmove 0000".into();
        }
        let side = self.game.side();
        let first = self.game.rules().moves(self.game.position().board()).as_slice().first().map(|m| house(side, m.pit) as u8);
        signals::answer_on_bus_error(first);
        let best = self.search(side);
        signals::clear_bus_answer();
        best
    }

    fn search(&self, side: Side) -> String {
        let engine = prepare(&self.slot, &self.options, &self.out, Resize::Until(&self.control));
        let root = self.game.root();
        let base = root.captured.map_or(0, |c| (c.mover as i32 - c.opponent as i32) * 100);
        let mut last_pv: Vec<u8> = Vec::new();
        let out = Arc::clone(&self.out);
        let mut on_info = |r: &Report| {
            out.send(&info_line(r, side, r.score + base));
            last_pv.clone_from(&r.pv);
            if let Some(&pit) = r.pv.first() {
                signals::answer_on_bus_error(Some(house(side, pit) as u8));
            }
        };
        // Below full strength: the level's search, and a move drawn within its margin.
        let level = self.options.level;
        let limits = level.limits(&self.limits);
        let result = engine.search(&root, &limits, &self.control, &mut on_info);
        match result {
            Ok(r) => {
                if r.best_pit.is_some() && r.pv != last_pv {
                    // The layers extended the line past the last iteration's.
                    self.out.send(&info_line(&r, side, r.score));
                }
                if r.best_pit.is_none() && r.depth == 0 {
                    self.out.info(&format!("the game is over: score cp {} for the side to move{}", r.score, if r.exact { " (exact)" } else { "" }));
                }
                match level.choose(&r, seed()) {
                    None => "bestmove 0000".into(),
                    Some(pit) => {
                        let mut s = format!("bestmove {}", house(side, pit));
                        if r.pv.len() >= 2 && r.pv[0] == pit {
                            s.push_str(&format!(" ponder {}", house(side.other(), r.pv[1])));
                        }
                        s
                    }
                }
            }
            Err(e) => {
                self.out.info(&format!("search failed: {e}"));
                // Never leave the GUI without a move: the first legal one.
                let moves = engine.rules().moves(root.position.board());
                match moves.as_slice().first() {
                    Some(m) => format!("bestmove {}", house(side, m.pit)),
                    None => "bestmove 0000".into(),
                }
            }
        }
    }
}

/// A seed for a level's draw: the clock's nanoseconds.
fn seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// An `info` line: the iteration's depths, score (centi-stones, the side to move's view),
/// counts and best line (houses, concatenated as Aalina writes them); `string exact` at the
/// end when the score is proven.
fn info_line(r: &Report, side: Side, score: i32) -> String {
    let ms = (r.seconds * 1000.0) as u64;
    let mut s = format!(
        "info depth {} seldepth {} score cp {score} nodes {} nps {} time {ms} hashfull {}",
        r.depth,
        r.seldepth.max(r.depth),
        r.nodes,
        r.nps(),
        r.hashfull
    );
    if !r.pv.is_empty() {
        s.push_str(" pv ");
        s.push_str(&line_houses(&r.pv, side).concat());
    }
    if r.exact {
        s.push_str(" string exact");
    }
    s
}

/// `the game is over: ...` with the reason and the final score for the side to move.
fn game_over(game: &Game, end: End) -> String {
    let why = Ending::of(game, end).uci_words();
    match game.verdict() {
        Some(v) => {
            let (me, them) = match game.side() {
                Side::South => (v.south, v.north),
                Side::North => (v.north, v.south),
            };
            format!("the game is over: {why}: score cp {} for the side to move (exact)", ((me - them) * 100.0).round() as i64)
        }
        None => format!("the game is over: {why}"),
    }
}
