//! The search's public types: what to search from ([`Root`]), how long ([`Limits`], [`Control`]),
//! and what it answers ([`Report`], [`RootMove`], [`ScoreBound`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::position::Position;
use crate::rules::Board;

/// The most positions of a game's history ([`Root::history`]) that the interfaces reading one
/// from outside take: the server's `history=` and Python's `Engine.analyse(history=...)`. A game
/// has far fewer positions between two captures; the bound keeps what a caller sends from
/// costing more than a game could. The search itself takes a history of any length. (The C
/// library's `oware_analyse_game` has had its own bound, 2^20 boards, since it was published: a
/// C caller passes a buffer it has already built, and lowering it would refuse calls that
/// work.)
pub const MAX_HISTORY: usize = 10_000;

/// Stones captured so far in a game, the player to move's first: how a mover-first interface
/// holds them, as the search's [`Root`], `oware analyse --captured M:O` and Python's
/// `captured=(mover, opponent)` do. [`Captured`](crate::game::Captured) counts the same stones by
/// side (South, North); `Captured::mover_first` and `Captured::from_mover_first` convert.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct MoverCaptured {
    /// The player to move's captured stones.
    pub mover: u32,
    /// The opponent's captured stones.
    pub opponent: u32,
}

/// What to search from: a position, and optionally the captured stones and the game so far.
#[derive(Clone, Debug)]
pub struct Root {
    /// The position, mover-first.
    pub position: Position,
    /// Stones captured so far by the player to move and by the opponent; `None` scores the
    /// board only, as the layers do (see the module's "Scores").
    pub captured: Option<MoverCaptured>,
    /// Earlier positions of the game, oldest first, each mover-first (so the last one is the
    /// position before `position`, with the other player to move). A position met again is a
    /// repetition. Those since the last capture (as many stones as `position`) must be a game's:
    /// each leads to the next, and the last to `position`, by a move that captures nothing
    /// ([`crate::rules::Ruleset::quiet_move_between`]); [`Engine::search`](super::Engine::search)
    /// refuses others.
    pub history: Vec<Board>,
}

impl Root {
    /// A root without captured counts or history.
    pub fn new(position: Position) -> Root {
        Root::in_game(position, None, Vec::new())
    }

    /// A root reached in a game: `position` (mover-first), the stones captured so far when known
    /// (`None` scores the board only) and the game's earlier positions, oldest first, each
    /// mover-first (see [`history`](Self::history) for what they must be; an empty history is
    /// none).
    pub fn in_game(position: Position, captured: Option<MoverCaptured>, history: Vec<Board>) -> Root {
        Root { position, captured, history }
    }
}

/// How long to search. Unset limits do not limit; with none set the search runs until
/// [`Control::stop`] (or until it proves the root's value).
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// Deepest iteration, in plies (1..=[`MAX_DEPTH`](super::MAX_DEPTH)). Makes the search single-threaded.
    pub depth: Option<u32>,
    /// Time for the search.
    pub movetime: Option<Duration>,
    /// Nodes to search at most (checked every 1024 nodes). Makes the search single-threaded.
    pub nodes: Option<u64>,
    /// Give every move of the root a full-window score ([`ScoreBound::Equal`]) rather than only
    /// the best: slower, what analysis wants.
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

    pub(super) fn past_deadline(&self) -> bool {
        let d = self.deadline_ms.load(Relaxed);
        d != u64::MAX && self.start.elapsed().as_millis() as u64 >= d
    }

    /// Time left to the deadline, if one is set.
    pub(super) fn left(&self) -> Option<Duration> {
        let d = self.deadline_ms.load(Relaxed);
        (d != u64::MAX).then(|| Duration::from_millis(d).saturating_sub(self.start.elapsed()))
    }
}

/// How a reported score relates to the move's score as the search would give it with a full
/// window. Whether a score is *proven* (the true value) is another matter: [`RootMove::exact`].
/// (The program's JSON and Python write `Equal` as `"exact"`, as they always have.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScoreBound {
    /// The score is the search's score of the move, not a bound.
    Equal,
    /// The move's score is at most this (the move was refuted without a full-window score).
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
    /// The best line, pits 0..5 each from its mover's first house; followed on through the
    /// layers when it ends inside them, with captured counts to the game's end
    /// (docs/engine.md, "The line").
    pub pv: Vec<u8>,
    /// Every legal move of the root, best first (only the best with a full-window score unless
    /// [`Limits::all_moves`]; the others bounded).
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
