//! `oware engine`: the search engine behind the UCI dialect of the Oware engines (Aalina and the
//! Aualé GUI), read on stdin, answered on stdout. `docs/uci.md` is the dialect's reference.
//!
//! The main thread reads commands, one per line, and answers the quick ones at once (`isready`
//! too while a search runs); `go` starts the search on a worker thread, which sends each
//! finished iteration's `info` line and then `bestmove`. Every message is one line, written
//! whole under one lock and flushed. Nothing the input holds makes the program panic: unknown
//! commands and bad arguments are answered with `info string ...` and ignored. End of input is
//! `quit`, except that a search with limits is let finish first. A closed stdout ends the
//! program quietly with 141, as the other commands do.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use clap::Args;
use oware::game::{Captured, End, Game};
use oware::position::{excerpt, house, Side};
use oware::probe::Database;
use oware::rules::{PITS, TOTAL_STONES};
use oware::search::time::{Clock, TimeControl};
use oware::search::{Control, Engine, Limits, Report, DEFAULT_HASH_MB};
use oware::{Error, Position, Result, Ruleset};

use super::analyse::hash_fits;
use super::query::Line;
use super::{DirArg, RulesArg};

/// How long a search may go on after the input ends before it is stopped.
const EOF_GRACE: Duration = Duration::from_millis(900);
/// Largest `Hash`, MiB.
const MAX_HASH_MB: u64 = 65536;
/// Largest `Threads`.
const MAX_ENGINE_THREADS: u64 = 256;

/// Arguments of `oware engine`.
#[derive(Args, Debug)]
pub struct EngineArgs {
    #[command(flatten)]
    rules: RulesArg,
    #[command(flatten)]
    dir: DirArg,
    /// Transposition table size in MiB, 1..=65536 (the UCI option Hash).
    #[arg(long, value_name = "MB", default_value_t = DEFAULT_HASH_MB as u64, value_parser = clap::value_parser!(u64).range(1..=MAX_HASH_MB))]
    hash: u64,
    /// Threads of timed searches, 1..=256 (the UCI option Threads); searches limited by depth
    /// or nodes use one, so that their answers are reproducible.
    #[arg(long, value_name = "T", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=MAX_ENGINE_THREADS))]
    threads: u64,
    /// Largest layer probed, 0..=48 (the UCI option MaxTable): layers above it are searched
    /// like any other position. Default: every layer built.
    #[arg(long, value_name = "N", default_value_t = 48, value_parser = clap::value_parser!(u32).range(0..=48))]
    max_table: u32,
}

/// Runs the engine until `quit` or the end of the input.
///
/// # Errors
/// [`Error::Usage`] for a `--hash` larger than the memory available; [`Error::Io`] when stdin
/// cannot be read. A stdout that cannot be written ends the process
/// from the thread that found it (exit code 141 for a closed pipe, else that of
/// [`Error::Output`]).
pub fn run(a: EngineArgs) -> Result<()> {
    hash_fits(a.hash).map_err(|msg| Error::Usage(format!("--hash: {msg}")))?;
    let options = Options { hash_mb: a.hash, threads: a.threads, dir: a.dir.dir, rules: a.rules.ruleset(), max_table: a.max_table, engine_turn: Side::South };
    let mut session = Session::new(options, Arc::new(Out::default()));
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut buf = Vec::with_capacity(super::query::MAX_LINE + 1);
    while let Some(line) = read_input(&mut input, &mut buf, session.options.rules).map_err(|e| Error::io("<stdin>", e))? {
        let text = match line {
            Input::Position(result) => {
                session.reap();
                session.positioned(result);
                continue;
            }
            Input::Line(Line::Text(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            Input::Line(Line::TooLong { bytes, .. }) => {
                session.out.info(&format!("line of {bytes} bytes ignored: a command has at most {}", super::query::MAX_LINE));
                continue;
            }
        };
        if !session.command(&text) {
            session.stop();
            return Ok(());
        }
    }
    session.end_of_input();
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Output.

/// Standard output shared by the reader and the search thread: one whole line per message.
#[derive(Default)]
struct Out {
    lock: Mutex<()>,
}

impl Out {
    /// Writes `line` and a newline, flushed. A failure ends the process: 141 for a closed pipe
    /// (quietly), else the exit code of [`Error::Output`] after the message.
    fn send(&self, line: &str) {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = std::io::stdout().lock();
        // One line, whatever a message quotes (a directory's name may hold a newline).
        let mut text: String = line.chars().map(|c| if c == '\n' || c == '\r' { ' ' } else { c }).collect();
        text.push('\n');
        if let Err(source) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            std::process::exit(super::report(&Error::Output { stream: "stdout", source }));
        }
    }

    /// `info string MSG`.
    fn info(&self, msg: &str) {
        self.send(&format!("info string {msg}"));
    }
}

// ---------------------------------------------------------------------------------------------
// The session: options, the game, the engine and the running search.

/// The UCI options.
#[derive(Clone, Debug, PartialEq)]
struct Options {
    hash_mb: u64,
    threads: u64,
    dir: PathBuf,
    rules: Ruleset,
    max_table: u32,
    engine_turn: Side,
}

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

/// The engine as it was built, for the options it was built with.
struct Prepared {
    options: Options,
    engine: Arc<Engine>,
    /// The layers it probes (checked for files changed under it before each search).
    db: Option<Arc<Database>>,
}

/// The engine, shared by the reader (`isready`, `ucinewgame`) and the search thread, which
/// sets it up before it searches (so that `stop` is read while a large table is set up).
type Slot = Arc<Mutex<Option<Prepared>>>;

struct Session {
    out: Arc<Out>,
    options: Options,
    /// The engine, rebuilt when the options change.
    engine: Slot,
    game: Game,
    /// Why the last `position` was refused: no position is searched until the next one.
    refused: Option<String>,
    search: Option<Search>,
}

impl Session {
    fn new(options: Options, out: Arc<Out>) -> Session {
        let game = Game::start(options.rules);
        Session { out, options, engine: Arc::default(), game, refused: None, search: None }
    }

    /// Handles one line; `false` after `quit`.
    fn command(&mut self, line: &str) -> bool {
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
    fn reap(&mut self) {
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
    fn positioned(&mut self, result: std::result::Result<Game, String>) {
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
    fn stop(&mut self) {
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
    fn end_of_input(&mut self) {
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

/// The engine slot, locked (a search thread that panicked leaves it usable).
fn lock(slot: &Mutex<Option<Prepared>>) -> std::sync::MutexGuard<'_, Option<Prepared>> {
    slot.lock().unwrap_or_else(|p| p.into_inner())
}

/// When [`prepare`] sets up a table of a new size.
#[derive(Clone, Copy)]
enum Resize<'a> {
    /// Now, whole.
    Now,
    /// Now, until the search about to start under this control is stopped (`stop` is answered
    /// at once; the rest of the table is set up as the search writes it).
    Until(&'a Control),
    /// Not yet: the search thread does it.
    Later,
}

/// The engine for the options `o`: rebuilt when Dir, Rules or MaxTable changed, or when a file
/// it probes changed under it (truncated or rewritten in place: said in an `info string`, and
/// the layers are opened again, the damaged one then left out); its table resized when Hash
/// changed, as `resize` says.
fn prepare(slot: &Mutex<Option<Prepared>>, o: &Options, out: &Out, resize: Resize<'_>) -> Arc<Engine> {
    let mut slot = lock(slot);
    if let Some(Prepared { db: Some(db), .. }) = slot.as_ref() {
        if let Err(e) = db.check_open_files() {
            out.info(&format!("{e}: the layers are opened again"));
            *slot = None;
        }
    }
    let built = slot.as_ref().is_some_and(|p| p.options.dir == o.dir && p.options.rules == o.rules && p.options.max_table == o.max_table);
    if !built {
        *slot = None;
        let (engine, db) = build_engine(o, out);
        let options = Options { hash_mb: DEFAULT_HASH_MB as u64, threads: 1, ..o.clone() };
        *slot = Some(Prepared { options, engine: Arc::new(engine), db });
    }
    let p = slot.as_mut().expect("the engine was just built");
    if p.options.hash_mb != o.hash_mb || p.options.threads != o.threads {
        // No search holds the engine (each is joined before the next begins).
        if let Some(e) = Arc::get_mut(&mut p.engine) {
            if p.options.hash_mb != o.hash_mb {
                match resize {
                    Resize::Now => e.set_hash_mb(o.hash_mb as usize),
                    Resize::Until(c) => e.set_hash_mb_for(o.hash_mb as usize, c),
                    Resize::Later => {}
                }
                if !matches!(resize, Resize::Later) {
                    p.options.hash_mb = o.hash_mb;
                }
            }
            e.set_threads(o.threads as usize);
            p.options.threads = o.threads;
        }
    }
    p.options.engine_turn = o.engine_turn;
    Arc::clone(&p.engine)
}

/// A new engine for the options `o` (its table the default size, one thread), saying in
/// `info string`s which layers it probes, and the database it probes.
fn build_engine(o: &Options, out: &Out) -> (Engine, Option<Arc<Database>>) {
    let place = o.dir.join(o.rules.name());
    let without = |why: String| {
        out.info(&why);
        (Engine::new(o.rules, None, None).expect("an engine without layers opens nothing"), None)
    };
    let db = match Database::open(&o.dir, o.rules) {
        Ok(db) => Arc::new(db),
        Err(e) => return without(format!("{e}: searching with the evaluation alone")),
    };
    if !db.layers_present().contains(&0) {
        return without(format!("no layers in {}: searching with the evaluation alone", place.display()));
    }
    match Engine::new(o.rules, Some(Arc::clone(&db)), Some(o.max_table)) {
        Ok(e) => {
            if let Some(bad) = e.unusable() {
                out.info(&format!("{bad}: not used, nor the files of its kind above it"));
            }
            match e.tables() {
                Some(top) => {
                    let depths = match e.dtc_tables() {
                        None => String::new(),
                        Some(d) if d == top => " with their depths to capture".to_string(),
                        Some(d) => format!(" (depths to capture of 0..={d})"),
                    };
                    out.info(&format!("probing layers 0..={top} of {}{depths}", place.display()));
                }
                None => out.info(&format!("no usable layers in {}: searching with the evaluation alone", place.display())),
            }
            (e, Some(db))
        }
        Err(e) => without(format!("{e}: searching with the evaluation alone")),
    }
}

/// `setoption`'s name and value (each may hold spaces; the keywords in any case).
fn option_parts(line: &str) -> Option<(String, Option<String>)> {
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

/// Parses a `position` command's arguments into a game.
fn parse_position(rules: Ruleset, args: &[&str]) -> std::result::Result<Game, String> {
    let mut r = PositionReader::new(rules);
    r.feed(b"position");
    for a in args {
        r.feed(b" ");
        r.feed(a.as_bytes());
    }
    r.finish()
}

/// The longest word of a `position` command before its moves that is read whole (a FEN has at
/// most 43 bytes).
const MAX_POSITION_WORD: usize = 64;

/// Where a [`PositionReader`] is in its command.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    /// The word `position`.
    Command,
    /// `startpos` or `fen`.
    Base,
    /// The FEN after `fen`.
    Fen,
    /// `moves`, or the end.
    AfterBase,
    /// The moves.
    Moves,
    /// A word among the moves that is not one (its first bytes, for the message).
    BadMove,
}

/// A `position (startpos | fen FEN) [moves M...]` command read a piece at a time, its moves
/// played as they come: a legal game has no length the protocol could bound (a game of 2,100
/// plies is 4,223 bytes), so the line is never held, and memory is the game's whatever the
/// line's length. The first problem refuses the whole command; the rest of the line is then
/// only skipped.
struct PositionReader {
    rules: Ruleset,
    stage: Stage,
    /// The word being read (at most [`MAX_POSITION_WORD`] bytes of it are kept).
    word: Vec<u8>,
    game: Option<Game>,
    ply: usize,
    error: Option<String>,
}

impl PositionReader {
    fn new(rules: Ruleset) -> PositionReader {
        PositionReader { rules, stage: Stage::Command, word: Vec::new(), game: None, ply: 0, error: None }
    }

    /// Reads the next bytes of the command.
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.error.is_some() {
                return;
            }
            let space = b.is_ascii_whitespace();
            match self.stage {
                Stage::Moves if space => {}
                Stage::Moves => match b {
                    b'A'..=b'F' | b'a'..=b'f' => self.play(char::from(b)),
                    _ => {
                        self.stage = Stage::BadMove;
                        self.word.push(b);
                    }
                },
                // A character is at most 4 bytes: enough to name it.
                Stage::BadMove if space || self.word.len() == 4 => self.bad_move(),
                _ if space => self.end_word(),
                _ => {
                    if self.word.len() <= MAX_POSITION_WORD {
                        self.word.push(b);
                    }
                }
            }
        }
    }

    /// The game, or why the command is refused.
    fn finish(mut self) -> std::result::Result<Game, String> {
        match self.stage {
            Stage::BadMove => self.bad_move(),
            _ => self.end_word(),
        }
        if let Some(e) = self.error {
            return Err(e);
        }
        match (self.stage, self.game) {
            (Stage::Command | Stage::Base, _) => Err("position needs startpos or fen FEN".into()),
            (Stage::Fen, _) => Err("position fen needs a FEN: A-B-C-D-E-F-a-b-c-d-e-f-SouthStore-NorthStore-S|N".into()),
            (_, Some(game)) => Ok(game),
            (_, None) => Err("position needs startpos or fen FEN".into()),
        }
    }

    fn end_word(&mut self) {
        if self.word.is_empty() {
            return;
        }
        let word = String::from_utf8_lossy(&self.word).into_owned();
        self.word.clear();
        let long = word.len() > MAX_POSITION_WORD;
        match self.stage {
            Stage::Command => self.stage = Stage::Base,
            Stage::Base => match word.as_str() {
                "startpos" => {
                    self.game = Some(Game::start(self.rules));
                    self.stage = Stage::AfterBase;
                }
                "fen" => self.stage = Stage::Fen,
                _ => self.error = Some("position needs startpos or fen FEN".into()),
            },
            Stage::Fen if long => {
                let start: String = word.chars().take(20).collect();
                self.error = Some(format!("bad fen {}...: it is longer than {MAX_POSITION_WORD} bytes", excerpt(&start)));
            }
            Stage::Fen => match parse_fen(self.rules, &word) {
                Ok(game) => {
                    self.game = Some(game);
                    self.stage = Stage::AfterBase;
                }
                Err(e) => self.error = Some(e),
            },
            Stage::AfterBase if word == "moves" => self.stage = Stage::Moves,
            Stage::AfterBase => self.error = Some(format!("unexpected {} in position: moves come after 'moves'", excerpt(&word))),
            Stage::Moves | Stage::BadMove => {}
        }
    }

    /// A house letter among the moves.
    fn play(&mut self, c: char) {
        let Some(game) = self.game.as_mut() else { return };
        self.ply += 1;
        let ply = self.ply;
        let side = game.side();
        let pit = match (c, side) {
            ('A'..='F', Side::South) => c as u8 - b'A',
            ('a'..='f', Side::North) => c as u8 - b'a',
            ('A'..='F', Side::North) => {
                self.error = Some(format!("illegal move '{c}' at ply {ply}: North is to move (North's houses are a..f)"));
                return;
            }
            _ => {
                self.error = Some(format!("illegal move '{c}' at ply {ply}: South is to move (South's houses are A..F)"));
                return;
            }
        };
        if let Err(e) = game.play(pit) {
            self.error = Some(format!("illegal move '{c}' at ply {ply}: {}", illegal_reason(&e)));
        }
    }

    /// A word among the moves that is not a house: named by its first character.
    fn bad_move(&mut self) {
        let text = String::from_utf8_lossy(&self.word).chars().next().map(String::from).unwrap_or_default();
        self.word.clear();
        self.stage = Stage::Moves;
        self.error = Some(format!("illegal move {} at ply {}: a move is a house, A..F (South) or a..f (North)", excerpt(&text), self.ply + 1));
    }
}

/// What the engine reads: a line (at most [`MAX_LINE`](super::query::MAX_LINE) bytes kept), or
/// a `position` command longer than that, read as it came ([`PositionReader`]).
enum Input {
    Line(Line),
    Position(std::result::Result<Game, String>),
}

/// Reads the next command. A line longer than [`MAX_LINE`](super::query::MAX_LINE) bytes is
/// skipped without being held ([`Line::TooLong`]), unless it is a `position` command: then
/// its moves are played as they are read, whatever the line's length.
fn read_input(input: &mut impl std::io::BufRead, buf: &mut Vec<u8>, rules: Ruleset) -> std::io::Result<Option<Input>> {
    const MAX: usize = super::query::MAX_LINE;
    buf.clear();
    let mut len: u64 = 0;
    let mut any = false;
    let mut stream: Option<PositionReader> = None;
    loop {
        let chunk = super::query::fill_buf(input)?;
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        len += part.len() as u64;
        match stream.as_mut() {
            Some(reader) => reader.feed(part),
            None if buf.len() <= MAX => {
                let room = (MAX + 1 - buf.len()).min(part.len());
                buf.extend_from_slice(&part[..room]);
                let start = buf.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(buf.len());
                let word = &buf[start..];
                if buf.len() > MAX && word.starts_with(b"position") && word.get(8).is_some_and(u8::is_ascii_whitespace) {
                    let mut reader = PositionReader::new(rules);
                    reader.feed(buf);
                    reader.feed(&part[room..]);
                    stream = Some(reader);
                }
            }
            None => {}
        }
        let used = done.unwrap_or(chunk.len());
        input.consume(used);
        if done.is_some() {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    Ok(Some(match stream {
        Some(reader) => Input::Position(reader.finish()),
        None if buf.len() > MAX => Input::Line(Line::TooLong { bytes: len, first: None }),
        None => Input::Line(Line::Text(std::mem::take(buf))),
    }))
}

/// Parses `A-B-C-D-E-F-a-b-c-d-e-f-SouthStore-NorthStore-S|N`.
fn parse_fen(rules: Ruleset, fen: &str) -> std::result::Result<Game, String> {
    let bad = |why: &str| format!("bad fen {}: {why}", excerpt(fen));
    let parts: Vec<&str> = fen.split('-').take(16).collect();
    if parts.len() != 15 {
        return Err(bad("it is 14 counts and the side to move, joined by '-' (A..F, a..f, South's store, North's store, S or N)"));
    }
    let mut counts = [0u32; 14];
    for (i, (slot, text)) in counts.iter_mut().zip(&parts).enumerate() {
        if text.is_empty() || text.len() > 2 || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(&format!("count {} is not a number 0..48", i + 1)));
        }
        let v: u32 = text.parse().map_err(|_| bad("a count is not a number"))?;
        if v > TOTAL_STONES {
            return Err(bad(&format!("count {} is {v}, more than 48", i + 1)));
        }
        *slot = v;
    }
    let total: u32 = counts.iter().sum();
    if total != TOTAL_STONES {
        return Err(bad(&format!("the houses and stores hold {total} stones, not 48")));
    }
    let side = match parts[14] {
        "S" => Side::South,
        "N" => Side::North,
        _ => return Err(bad("the side to move is S or N")),
    };
    let mut absolute = [0u8; PITS];
    for (a, &c) in absolute.iter_mut().zip(&counts[..PITS]) {
        *a = c as u8;
    }
    let position = Position::from_absolute(absolute, side).map_err(|e| bad(&e.to_string()))?;
    let captured = Captured { south: counts[12], north: counts[13] };
    Ok(Game::from_position(rules, position, side, Some(captured)))
}

/// `the game is over: ...` with the reason and the final score for the side to move.
fn game_over(game: &Game, end: End) -> String {
    let why = match end {
        End::Captures => "a side has captured more than 24 stones (or both 24); the stones left count as split evenly".to_string(),
        End::NoMove { .. } => "the side to move has no legal move; the rules share out the stones left".to_string(),
        End::ByMove { .. } => "the last move ended it and shared out the stones left".to_string(),
        End::Repetition { .. } => match game.rules() {
            Ruleset::Awari => "the last move repeated a position; the stones left are split evenly".to_string(),
            Ruleset::Abapa(_) => "the last move repeated a position; each side takes the stones in his row".to_string(),
        },
        _ => "it has ended".to_string(),
    };
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

/// Why a move was refused, in the words of `info string illegal move ...`.
fn illegal_reason(e: &oware::Error) -> String {
    match e {
        oware::Error::InvalidPosition(oware::error::PositionError::IllegalMove { reason, .. }) => (*reason).to_string(),
        other => other.to_string(),
    }
}

/// A `go` command.
#[derive(Debug, Default)]
struct Go {
    movetime: Option<u64>,
    depth: Option<u32>,
    nodes: Option<u64>,
    /// wtime, btime, winc, binc (ms).
    clock: [Option<u64>; 4],
    movestogo: Option<u64>,
    infinite: bool,
    ponder: bool,
}

impl Go {
    /// The time a normal search of `side` gets ([`TimeControl::allocation`]): movetime, else
    /// from the clock, else the default when no limit at all was given (`None` when depth or
    /// nodes limit it).
    fn allocation(&self, side: Side) -> Option<Duration> {
        let (time, inc) = match side {
            Side::South => (self.clock[0], self.clock[2]),
            Side::North => (self.clock[1], self.clock[3]),
        };
        let clock = time.map(|time_ms| Clock { time_ms, increment_ms: inc.unwrap_or(0) });
        TimeControl { move_time_ms: self.movetime, clock, moves_to_go: self.movestogo }.allocation(self.depth.is_some() || self.nodes.is_some())
    }
}

/// The words `go` takes; `searchmoves` takes the moves after it up to the next one.
const GO_WORDS: [&str; 12] = ["movetime", "depth", "nodes", "wtime", "btime", "winc", "binc", "movestogo", "mate", "infinite", "ponder", "searchmoves"];

/// Reads a `go` command. One policy for every irregular argument: `go` always searches and
/// always answers `bestmove`, and each argument it cannot take as given is named in a note
/// (sent as `info string`) saying how it was read: a value out of its range is brought into it
/// (`depth 1..=100`, `nodes` and `movetime` at least 1, `movestogo` at least 1; a whole number too
/// large for 64 bits is too large for every range), a negative clock
/// reads as no time left, a value that is not a whole number and the arguments of chess this
/// engine does not search for (`mate`, `searchmoves`) or does not know are ignored.
fn parse_go(args: &[&str]) -> (Go, Vec<String>) {
    let mut go = Go::default();
    let mut notes = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let key = args[i];
        i += 1;
        let takes_number = matches!(key, "movetime" | "depth" | "nodes" | "wtime" | "btime" | "winc" | "binc" | "movestogo" | "mate");
        if !takes_number {
            match key {
                "infinite" => go.infinite = true,
                "ponder" => go.ponder = true,
                "searchmoves" => {
                    let from = i;
                    while i < args.len() && !GO_WORDS.contains(&args[i]) {
                        i += 1;
                    }
                    notes.push(format!("go searchmoves {} ignored: every move is searched", args[from..i].join(" ")));
                }
                other => notes.push(format!("go: unknown argument {} ignored", excerpt(other))),
            }
            continue;
        }
        let Some(text) = args.get(i).filter(|t| !GO_WORDS.contains(t)) else {
            notes.push(format!("go {key} needs a number: ignored"));
            continue;
        };
        i += 1;
        let negative = text.len() > 1 && text.starts_with('-') && text[1..].bytes().all(|b| b.is_ascii_digit());
        let clock = matches!(key, "wtime" | "btime" | "winc" | "binc");
        // A whole number too large for 64 bits is read as the largest value, as any other value
        // out of range is.
        let too_large = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) && text.parse::<u64>().is_err();
        let value = if negative && clock {
            notes.push(format!("go {key} {text} is negative: read as no time left"));
            0
        } else if too_large {
            u64::MAX
        } else {
            match text.parse::<u64>() {
                Ok(v) => v,
                Err(_) => {
                    notes.push(format!("go {key} {} is not a whole number of 0 or more: ignored", excerpt(text)));
                    continue;
                }
            }
        };
        if too_large && clock {
            notes.push(format!("go {key} {} is too large: a time in ms is 0..={}; read as {}", excerpt(text), u64::MAX, u64::MAX));
        }
        let mut at_least = |min: u64, max: u64, what: &str| -> u64 {
            let v = value.clamp(min, max);
            if too_large {
                notes.push(format!("go {key} {} is too large: {what} is {min}..={max}; read as {v}", excerpt(text)));
            } else if v != value {
                notes.push(format!("go {key} {value}: {what} is {min}..={max}; read as {v}"));
            }
            v
        };
        match key {
            "movetime" => go.movetime = Some(at_least(1, u64::MAX, "a move time in ms")),
            "depth" => go.depth = Some(at_least(1, u64::from(oware::search::MAX_DEPTH), "a depth") as u32),
            "nodes" => go.nodes = Some(at_least(1, u64::MAX, "a node count")),
            "movestogo" => go.movestogo = Some(at_least(1, u64::MAX, "moves to go")),
            "wtime" => go.clock[0] = Some(value),
            "btime" => go.clock[1] = Some(value),
            "winc" => go.clock[2] = Some(value),
            "binc" => go.clock[3] = Some(value),
            _ => {
                let mate = if too_large { excerpt(text) } else { value.to_string() };
                notes.push(format!("go mate {mate} ignored: the engine searches for the best score, not for a mate"));
            }
        }
    }
    (go, notes)
}

// ---------------------------------------------------------------------------------------------
// The search thread.

struct Job {
    /// The engine, set up for `options` by the search thread before it searches.
    slot: Slot,
    options: Options,
    game: Game,
    /// Why the last `position` was refused, if it was: nothing is searched.
    refused: Option<String>,
    limits: Limits,
    control: Arc<Control>,
    hold: Arc<AtomicBool>,
    answered: Arc<AtomicBool>,
    out: Arc<Out>,
}

impl Job {
    fn run(self) {
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
        super::signals::answer_on_bus_error(first);
        let best = self.search(side);
        super::signals::clear_bus_answer();
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
                super::signals::answer_on_bus_error(Some(house(side, pit) as u8));
            }
        };
        let result = engine.search(&root, &self.limits, &self.control, &mut on_info);
        match result {
            Ok(r) => {
                if r.best_pit.is_some() && r.pv != last_pv {
                    // The layers extended the line past the last iteration's.
                    self.out.send(&info_line(&r, side, r.score));
                }
                if r.best_pit.is_none() && r.depth == 0 {
                    self.out.info(&format!("the game is over: score cp {} for the side to move{}", r.score, if r.exact { " (exact)" } else { "" }));
                }
                match r.best_pit {
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
        let mut mover = side;
        for &pit in &r.pv {
            s.push(house(mover, pit));
            mover = mover.other();
        }
    }
    if r.exact {
        s.push_str(" string exact");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use oware::search::time::{DEFAULT_MOVE_TIME, MIN_MOVE_TIME};
    use oware::search::MoverCaptured;

    #[test]
    fn fen_is_strict() {
        let g = parse_fen(Ruleset::Awari, "4-4-4-4-4-4-4-4-4-4-4-4-0-0-S").unwrap();
        assert_eq!(*g.position(), Position::start());
        let g = parse_fen(Ruleset::Awari, "1-0-0-0-0-0-0-0-0-0-0-2-20-25-N").unwrap();
        assert_eq!(g.side(), Side::North);
        assert_eq!(g.position().board(), &[0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0]);
        assert_eq!(g.root().captured, Some(MoverCaptured { mover: 25, opponent: 20 }));
        for bad in [
            "",
            "4-4-4-4-4-4-4-4-4-4-4-4-0-0",
            "4-4-4-4-4-4-4-4-4-4-4-4-0-0-X",
            "4-4-4-4-4-4-4-4-4-4-4-4-0-1-S",
            "4-4-4-4-4-4-4-4-4-4-4-4-0--S",
            "4-4-4-4-4-4-4-4-4-4-4-4-0-0-S-",
            "49-0-0-0-0-0-0-0-0-0-0-0-0-0-S",
            "x-4-4-4-4-4-4-4-4-4-4-4-0-0-S",
            "+4-4-4-4-4-4-4-4-4-4-4-4-0-0-S",
        ] {
            assert!(parse_fen(Ruleset::Awari, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn moves_are_checked_and_refused_whole() {
        let g = parse_position(Ruleset::Awari, &["startpos", "moves", "FbDe"]).unwrap();
        let h = parse_position(Ruleset::Awari, &["startpos", "moves", "F", "b", "De"]).unwrap();
        assert_eq!(g.position(), h.position());
        assert_eq!(g.side(), Side::South);
        assert_eq!(g.history().len(), 4);
        let e = parse_position(Ruleset::Awari, &["startpos", "moves", "FF"]).unwrap_err();
        assert!(e.starts_with("illegal move 'F' at ply 2: North is to move"), "{e}");
        let e = parse_position(Ruleset::Awari, &["startpos", "moves", "Fbx"]).unwrap_err();
        assert!(e.contains("at ply 3"), "{e}");
        // An empty house.
        let e = parse_position(Ruleset::Awari, &["startpos", "moves", "FbF"]).unwrap_err();
        assert!(e.contains("empty"), "{e}");
        assert!(parse_position(Ruleset::Awari, &["startpos", "junk"]).is_err());
        assert!(parse_position(Ruleset::Awari, &[]).is_err());
    }

    /// A `position` line longer than any other command is read as it comes, in pieces of any
    /// size, to the same game as when read whole; any other long line is skipped unread.
    #[test]
    fn long_position_lines_are_read_in_pieces() {
        let moves = "F b D e A f ";
        let mut text = format!("  position   startpos moves {moves}{}\nisready\n", " ".repeat(5_000));
        text.push_str(&format!("position fen 4-4-4-4-4-4-4-4-4-4-4-4-0-0-S moves {}Fb\n", " \t".repeat(3_000)));
        text.push_str(&format!("position startpos moves {}Fx\n", " ".repeat(5_000)));
        text.push_str(&format!("position fen {}\n", "1".repeat(5_000)));
        text.push_str(&format!("go {}\n", "1 ".repeat(5_000)));
        for capacity in [1, 7, 4096, 1 << 16] {
            let mut input = std::io::BufReader::with_capacity(capacity, text.as_bytes());
            let mut buf = Vec::new();
            let mut next = || read_input(&mut input, &mut buf, Ruleset::Awari).unwrap().unwrap();
            match next() {
                Input::Position(Ok(g)) => assert_eq!(g.position(), parse_position(Ruleset::Awari, &["startpos", "moves", "FbDeAf"]).unwrap().position()),
                _ => panic!("not a position"),
            }
            assert!(matches!(next(), Input::Line(Line::Text(t)) if t == b"isready"));
            assert!(matches!(next(), Input::Position(Ok(g)) if g.history().len() == 2));
            assert!(matches!(next(), Input::Position(Err(e)) if e.starts_with("illegal move 'x' at ply 2")));
            assert!(matches!(next(), Input::Position(Err(e)) if e.starts_with("bad fen '111") && e.contains("longer than 64 bytes")));
            assert!(matches!(next(), Input::Line(Line::TooLong { bytes: 10_003, .. })));
            assert!(read_input(&mut input, &mut buf, Ruleset::Awari).unwrap().is_none());
        }
    }

    #[test]
    fn options_keep_spaces() {
        assert_eq!(option_parts("setoption name Dir value /tmp/my  db "), Some(("Dir".into(), Some("/tmp/my  db".into()))));
        assert_eq!(option_parts("setoption NAME Hash VALUE 16"), Some(("Hash".into(), Some("16".into()))));
        assert_eq!(option_parts("setoption name Clear Hash"), Some(("Clear Hash".into(), None)));
        assert_eq!(option_parts("setoption value 3"), None);
        assert_eq!(option_parts("setoption name"), None);
    }

    #[test]
    fn clock_allocation() {
        let go = parse_go(&["wtime", "60000", "btime", "1000", "winc", "1000"]).0;
        assert_eq!(go.allocation(Side::South), Some(Duration::from_millis(3000 + 750)));
        assert_eq!(go.allocation(Side::North), Some(Duration::from_millis(50)));
        let go = parse_go(&["wtime", "9", "btime", "-20"]).0;
        assert_eq!(go.allocation(Side::South), Some(MIN_MOVE_TIME));
        assert_eq!(go.allocation(Side::North), Some(MIN_MOVE_TIME));
        let go = parse_go(&["wtime", "18446744073709551615", "winc", "18446744073709551615"]).0;
        assert_eq!(go.allocation(Side::South), Some(Duration::from_millis(u64::MAX / 3)));
        let go = parse_go(&["wtime", "3000", "winc", "3000", "movestogo", "1"]).0;
        assert_eq!(go.allocation(Side::South), Some(Duration::from_millis(1000)));
        assert_eq!(parse_go(&["depth", "3"]).0.allocation(Side::South), None);
        assert_eq!(parse_go(&[]).0.allocation(Side::South), Some(DEFAULT_MOVE_TIME));
    }

    /// Every irregular argument is read one way and said in a note; `go` always searches.
    #[test]
    fn irregular_go_arguments_are_read_and_said() {
        let cases: [(&[&str], &str); 15] = [
            (
                &["nodes", "99999999999999999999"],
                "go nodes '99999999999999999999' is too large: a node count is 1..=18446744073709551615; read as 18446744073709551615",
            ),
            (&["depth", "99999999999999999999"], "is too large: a depth is 1..=100; read as 100"),
            (&["wtime", "99999999999999999999"], "go wtime '99999999999999999999' is too large: a time in ms is 0..="),
            (&["depth", "101"], "go depth 101: a depth is 1..=100; read as 100"),
            (&["depth", "99999"], "read as 100"),
            (&["depth", "0"], "read as 1"),
            (&["nodes", "0"], "go nodes 0: a node count is 1..="),
            (&["nodes", "1e30"], "go nodes '1e30' is not a whole number of 0 or more: ignored"),
            (&["movetime", "-1"], "go movetime '-1' is not a whole number of 0 or more: ignored"),
            (&["movestogo", "-3"], "go movestogo '-3' is not a whole number of 0 or more: ignored"),
            (&["wtime", "-1000"], "go wtime -1000 is negative: read as no time left"),
            (&["mate", "3"], "go mate 3 ignored"),
            (&["searchmoves", "A", "B", "depth", "2"], "go searchmoves A B ignored"),
            (&["movetime"], "go movetime needs a number: ignored"),
            (&["sideways"], "go: unknown argument 'sideways' ignored"),
        ];
        for (args, said) in cases {
            let (_, notes) = parse_go(args);
            assert!(notes.iter().any(|n| n.contains(said)), "{args:?}: {notes:?}");
        }
        let (go, _) = parse_go(&["depth", "101"]);
        assert_eq!(go.depth, Some(100));
        let (go, _) = parse_go(&["searchmoves", "A", "B", "depth", "2"]);
        assert_eq!(go.depth, Some(2));
        let (go, _) = parse_go(&["nodes", "0"]);
        assert_eq!(go.nodes, Some(1));
        let (go, notes) = parse_go(&["nodes", "99999999999999999999", "depth", "99999999999999999999"]);
        assert_eq!((go.nodes, go.depth), (Some(u64::MAX), Some(100)));
        assert!(notes.iter().all(|n| !n.contains("not a whole number")), "{notes:?}");
        let (go, notes) = parse_go(&["depth", "3", "movetime", "600"]);
        assert!(notes.is_empty() && go.depth == Some(3) && go.movetime == Some(600));
    }
}
