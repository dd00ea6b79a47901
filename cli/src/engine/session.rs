//! The session: the options, the game, the engine and the running search; each command read is
//! answered here (`go` starts the search thread, [`Job`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use oware::game::Game;
use oware::position::{excerpt, Side};
use oware::search::{Control, Limits};
use oware::Ruleset;

use super::go::parse_go;
use super::out::Out;
use super::position::parse_position;
use super::search::Job;
use super::setup::{lock, prepare, Options, Resize, Slot, MAX_ENGINE_THREADS, MAX_HASH_MB};
use crate::args::hash_fits;

/// How long a search may go on after the input ends before it is stopped.
const EOF_GRACE: Duration = Duration::from_millis(900);

/// A search running on its worker thread.
struct Search {
    control: Arc<Control>,
    /// The search may not send `bestmove` while set (`go infinite`, `go ponder`).
    hold: Arc<AtomicBool>,
    /// `go ponder`: the time to search after `ponderhit`, when the command gave one.
    ponder: Option<Option<Duration>>,
    /// Set just before the search sends `bestmove`: the thread is ending (joined at once).
    answered: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

/// The engine command between two commands: what it answers with and what it searches from.
pub(crate) struct Session {
    pub(crate) out: Arc<Out>,
    pub(crate) options: Options,
    /// The engine, rebuilt when the options change.
    engine: Slot,
    game: Game,
    /// Why the last `position` was refused: no position is searched until the next one.
    refused: Option<String>,
    search: Option<Search>,
}

impl Session {
    /// A session with these options, at the start position, no search running.
    pub(crate) fn new(options: Options, out: Arc<Out>) -> Session {
        let game = Game::start(options.rules);
        Session { out, options, engine: Arc::default(), game, refused: None, search: None }
    }

    /// Handles one line; `false` after `quit`.
    pub(crate) fn command(&mut self, line: &str) -> bool {
        self.reap();
        let line = line.trim();
        let mut words = line.split_whitespace();
        let Some(cmd) = words.next() else { return true };
        let rest: Vec<&str> = words.collect();
        match cmd {
            "uci" => self.uci(),
            "isready" => {
                // Options changed since the last search are applied now (opening the layers
                // can take a while), unless a search runs: then the answer is at once.
                if self.search.is_none() {
                    prepare(&self.engine, &self.options, &self.out, Resize::Now);
                }
                self.out.send("readyok");
            }
            "ucinewgame" => {
                self.settle();
                if let Some(p) = lock(&self.engine).as_ref() {
                    p.engine.clear();
                }
                self.game = Game::start(self.options.rules);
                self.refused = None;
            }
            "setoption" => self.setoption(line),
            "position" => self.position(&rest),
            "go" => self.go(&rest),
            "stop" => self.stop(),
            "ponderhit" => self.ponderhit(),
            "quit" => return false,
            // Standard UCI commands this engine has nothing to do for.
            "debug" | "register" => {}
            _ => self.out.info(&format!("unknown command {}", excerpt(line))),
        }
        true
    }

    /// Joins a search that has answered by itself (a GUI may send the next `go` as soon as it
    /// reads `bestmove`, before the thread has quite ended).
    pub(crate) fn reap(&mut self) {
        if self.search.as_ref().is_some_and(|s| s.answered.load(Ordering::SeqCst) || s.handle.is_finished()) {
            if let Some(s) = self.search.take() {
                let _ = s.handle.join();
            }
        }
    }

    fn uci(&self) {
        let o = &self.options;
        let out = &self.out;
        out.send(concat!("id name oware ", env!("CARGO_PKG_VERSION")));
        out.send("id author the oware project");
        out.send(&format!("option name Hash type spin default {} min 1 max {MAX_HASH_MB}", o.hash_mb));
        out.send(&format!("option name Threads type spin default {} min 1 max {MAX_ENGINE_THREADS}", o.threads));
        out.send(&format!("option name Dir type string default {}", o.dir.display()));
        let vars: String = Ruleset::names().iter().map(|n| format!(" var {n}")).collect();
        out.send(&format!("option name Rules type combo default {}{vars}", o.rules));
        out.send(&format!("option name EngineTurn type combo default {} var South var North", o.engine_turn.title()));
        out.send(&format!("option name MaxTable type spin default {} min 0 max 48", o.max_table));
        out.send(&format!("option name Level type spin default {} min 1 max {}", o.level, oware::search::Level::MAX));
        out.send("uciok");
    }

    /// `setoption name NAME [value VALUE]`: the name and value may hold spaces.
    fn setoption(&mut self, line: &str) {
        let Some((name, value)) = option_parts(line) else {
            self.out.info("setoption needs 'name NAME value VALUE'");
            return;
        };
        let value = value.unwrap_or_default();
        let number = |max: u64, min: u64| -> std::result::Result<u64, String> {
            match value.trim().parse::<u64>() {
                Ok(v) if (min..=max).contains(&v) => Ok(v),
                _ => Err(format!("{name} is a number {min}..={max}, not {}", excerpt(&value))),
            }
        };
        let result = match name.to_ascii_lowercase().as_str() {
            "hash" => number(MAX_HASH_MB, 1).and_then(|mb| hash_fits(mb).map_err(|m| format!("Hash {m}"))).map(|v| self.options.hash_mb = v),
            "threads" => number(MAX_ENGINE_THREADS, 1).map(|v| self.options.threads = v),
            "maxtable" => number(48, 0).map(|v| self.options.max_table = v as u32),
            "level" => number(u64::from(oware::search::Level::MAX), 1)
                .and_then(|v| oware::search::Level::new(v as u32).map_err(|e| e.to_string()))
                .map(|level| self.options.level = level),
            "dir" if value.trim().is_empty() => Err("Dir needs a directory".to_string()),
            "dir" => {
                self.options.dir = PathBuf::from(value.trim());
                Ok(())
            }
            "rules" => value.parse::<Ruleset>().map(|r| self.options.rules = r),
            "engineturn" => match value.trim().to_ascii_lowercase().as_str() {
                "south" | "s" => Ok(Side::South),
                "north" | "n" => Ok(Side::North),
                _ => Err(format!("EngineTurn is South or North, not {}", excerpt(&value))),
            }
            .map(|side| self.options.engine_turn = side),
            _ => Err(format!("unknown option {}", excerpt(&name))),
        };
        if let Err(msg) = result {
            self.out.info(&msg);
        }
    }

    /// `position (startpos | fen FEN) [moves M...]`: refused whole when anything is wrong.
    fn position(&mut self, args: &[&str]) {
        self.positioned(parse_position(self.options.rules, args));
    }

    /// A `position` read: the game to search from, or why it was refused (then no position is
    /// searched until the next one: `go` answers `bestmove 0000` and says why).
    pub(crate) fn positioned(&mut self, result: std::result::Result<Game, String>) {
        match result {
            Ok(game) => {
                self.game = game;
                self.refused = None;
            }
            Err(msg) => {
                self.out.info(&msg);
                self.refused = Some(msg);
            }
        }
    }

    fn go(&mut self, args: &[&str]) {
        if self.search.as_ref().is_some_and(|s| s.hold.load(Ordering::SeqCst)) {
            self.out.info("a search is running until stop: send stop first");
            return;
        }
        // A search with limits that has not answered yet (commands piped ahead of the answers):
        // this one waits for it.
        self.wait_for_search();
        let (go, notes) = parse_go(args);
        for note in notes {
            self.out.info(&note);
        }
        // The layers are opened here (their messages come before any answer to what follows);
        // a new table is set up by the search thread, where `stop` can cut it short.
        if self.refused.is_none() {
            prepare(&self.engine, &self.options, &self.out, Resize::Later);
        }
        let game = self.game.clone();
        let normal = go.allocation(game.side());
        let mut limits = Limits { depth: go.depth, nodes: go.nodes, ..Limits::default() };
        let waits = go.infinite || go.ponder;
        if !waits {
            limits.movetime = normal;
        }
        let control = Arc::new(Control::new());
        let hold = Arc::new(AtomicBool::new(waits));
        let answered = Arc::new(AtomicBool::new(false));
        let job = Job {
            slot: Arc::clone(&self.engine),
            options: self.options.clone(),
            game,
            refused: self.refused.clone(),
            limits,
            control: Arc::clone(&control),
            hold: Arc::clone(&hold),
            answered: Arc::clone(&answered),
            out: Arc::clone(&self.out),
        };
        let handle = match std::thread::Builder::new().name("search".into()).spawn(move || job.run()) {
            Ok(h) => h,
            Err(e) => {
                self.out.info(&format!("cannot start the search thread: {e}"));
                self.out.send("bestmove 0000");
                return;
            }
        };
        self.search = Some(Search { control, hold, ponder: go.ponder.then_some(normal), answered, handle });
    }

    /// Stops the running search; its `bestmove` is sent before this returns.
    pub(crate) fn stop(&mut self) {
        if let Some(s) = self.search.take() {
            s.control.stop();
            s.hold.store(false, Ordering::SeqCst);
            let _ = s.handle.join();
        }
    }

    /// The opponent played the move pondered on: the search goes on as a normal one.
    fn ponderhit(&mut self) {
        let Some(s) = &mut self.search else { return };
        let Some(time) = s.ponder.take() else { return };
        if let Some(t) = time {
            s.control.set_deadline(t);
        }
        s.hold.store(false, Ordering::SeqCst);
    }

    /// The input has ended: a search with limits is let finish (so that a piped script gets
    /// its answer), one that would wait for `stop` (`go infinite`, `go ponder`) is stopped.
    /// The input has ended: a search still running gets [`EOF_GRACE`] to answer by itself,
    /// then is stopped (it answers with its best so far), so the engine never outlives its GUI
    /// by more than that, whatever the limits (`go depth 99`, a clock of 2^64 ms).
    pub(crate) fn end_of_input(&mut self) {
        if let Some(s) = &self.search {
            let until = std::time::Instant::now() + EOF_GRACE;
            while !s.handle.is_finished() && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        self.stop();
    }

    /// Waits for a running search with limits to answer (it ends by itself).
    fn wait_for_search(&mut self) {
        if self.search.as_ref().is_some_and(|s| !s.hold.load(Ordering::SeqCst)) {
            if let Some(s) = self.search.take() {
                let _ = s.handle.join();
            }
        }
    }

    /// No search runs after this: one with limits is let answer, one that would wait for
    /// `stop` is stopped.
    fn settle(&mut self) {
        self.wait_for_search();
        self.stop();
    }
}

/// `setoption`'s name and value (each may hold spaces; the keywords in any case).
pub(crate) fn option_parts(line: &str) -> Option<(String, Option<String>)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, line.len()));
    }
    let word = |k: usize| &line[spans[k].0..spans[k].1];
    if spans.len() < 3 || !word(1).eq_ignore_ascii_case("name") {
        return None;
    }
    let value_at = (2..spans.len()).find(|&k| word(k).eq_ignore_ascii_case("value"));
    let name_end = value_at.unwrap_or(spans.len());
    if name_end == 2 {
        return None;
    }
    let name = line[spans[2].0..spans[name_end - 1].1].to_string();
    let value = value_at.map(|k| if k + 1 < spans.len() { line[spans[k + 1].0..].trim_end().to_string() } else { String::new() });
    Some((name, value))
}
