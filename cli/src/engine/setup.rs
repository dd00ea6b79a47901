//! The UCI options and the engine set up for them: built anew when the layers it probes change
//! (Dir, Rules, MaxTable, or a file changed under it), its table resized when Hash changes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use oware::position::Side;
use oware::probe::Database;
use oware::search::{Control, Engine, DEFAULT_HASH_MB};
use oware::Ruleset;

use super::out::Out;

/// Largest `Hash`, MiB.
pub(crate) const MAX_HASH_MB: u64 = 65536;
/// Largest `Threads`.
pub(crate) const MAX_ENGINE_THREADS: u64 = 256;

/// The UCI options.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Options {
    pub(crate) hash_mb: u64,
    pub(crate) threads: u64,
    pub(crate) dir: PathBuf,
    pub(crate) rules: Ruleset,
    pub(crate) max_table: u32,
    pub(crate) engine_turn: Side,
    /// The playing strength (`setoption name Level`): the move `bestmove` plays.
    pub(crate) level: oware::search::Level,
}

/// The engine as it was built, for the options it was built with.
pub(crate) struct Prepared {
    options: Options,
    pub(crate) engine: Arc<Engine>,
    /// The layers it probes (checked for files changed under it before each search).
    db: Option<Arc<Database>>,
}

/// The engine, shared by the reader (`isready`, `ucinewgame`) and the search thread, which
/// sets it up before it searches (so that `stop` is read while a large table is set up).
pub(crate) type Slot = Arc<Mutex<Option<Prepared>>>;

/// The engine slot, locked (a search thread that panicked leaves it usable).
pub(crate) fn lock(slot: &Mutex<Option<Prepared>>) -> std::sync::MutexGuard<'_, Option<Prepared>> {
    slot.lock().unwrap_or_else(|p| p.into_inner())
}

/// When [`prepare`] sets up a table of a new size.
#[derive(Clone, Copy)]
pub(crate) enum Resize<'a> {
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
pub(crate) fn prepare(slot: &Mutex<Option<Prepared>>, o: &Options, out: &Out, resize: Resize<'_>) -> Arc<Engine> {
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
