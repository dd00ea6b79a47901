//! Probing built databases: exact values, move values and best lines, for other engines.
//!
//! A [`Database`] is opened once on a database directory and then probed from any number of
//! threads (it is `Send + Sync`). Layers are opened lazily, the first time a probe needs them,
//! and exactly once; after that a probe of a position in a layer costs one rank computation
//! (a dozen table lookups) and one read from the memory-mapped layer.
//!
//! Values are from the point of view of the player to move: the stones he will still capture
//! minus the stones the opponent will still capture, with endless play counting 0 (`docs/values.md`).
//! A value `v` of a position with `n` stones on the board implies the final split
//! `(n + v) / 2` stones for the mover and `(n - v) / 2` for the opponent ([`Split`]); the halves
//! can be fractional when endless play splits an odd number of stones.
//!
//! Positions whose opponent row (pits 6..11) has no empty pit belong to no layer (the 48-stone
//! start position is one); they are answered from their children, which are always in a layer.
//!
//! The files: [`Database`] and its opening here; values of positions and of their moves in
//! `values.rs`; the files beside the values (depths to capture, forced-capture bounds) in
//! `companions.rs`; the cache of the values a pack over floors resolves in `cache.rs`.
//!
//! ```
//! use oware::probe::Database;
//! use oware::builder::{self, BuildConfig, Silent};
//! use oware::{Position, Ruleset};
//!
//! # fn main() -> oware::Result<()> {
//! let dir = tempfile::tempdir().map_err(|e| oware::Error::io("tempdir", e))?;
//! let config = BuildConfig {
//!     rules: Ruleset::Awari,
//!     max_stones: 6,
//!     dir: dir.path().to_path_buf(),
//!     max_memory: None,
//!     ..Default::default()
//! };
//! builder::build(&config, &Silent)?;
//!
//! let db = Database::open(dir.path(), Ruleset::Awari)?;
//! // A lone stone in the mover's pit 0 is worth +1 (a published fact, layer 1).
//! let pos: Position = "1 0 0 0 0 0 0 0 0 0 0 0".parse()?;
//! assert_eq!(db.value(&pos)?, 1);
//! // A position outside every layer (full opponent row) is answered from its children.
//! let full: Position = "0 0 0 0 0 0 1 1 1 1 1 1".parse()?;
//! assert_eq!(db.value(&full)?, -6); // the mover cannot move: the opponent takes all six
//! # Ok(())
//! # }
//! ```

mod cache;
mod companions;
mod values;

use cache::ValueCache;

pub(crate) use companions::best_dtc;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::error::{Error, Result};
use crate::index::{rank_unchecked, MAX_STONES};
use crate::position::Position;
use crate::rules::{stones, Board, Ruleset};
use crate::storage::{BoundsKind, DatabaseDir, DtcKind, Format, LayerState, ReadMode, Table, ValuesKind};

/// Number of possible layers (0..=48).
const LAYERS: usize = MAX_STONES as usize + 1;

/// A database directory opened for probing: exact values of positions, of their moves, and the
/// best line.
///
/// `Database` is `Send + Sync`: share one (e.g. in an `Arc` or a `static`) between every thread
/// that probes. Each layer file is opened (memory-mapped, its header checked and, unless turned
/// off with [`verify_checksums`](Self::verify_checksums), its payload checksum verified) the
/// first time a probe needs it, and only once; an opening that fails is not remembered, so a
/// later probe tries again (after the missing layer has been built, say). The memory maps are
/// released when the `Database` is dropped.
///
/// # Files in use
/// The layer files must not be modified, truncated or overwritten in place while a `Database`
/// has them open: they are memory-mapped, and reading a page a truncation removed kills the
/// process with `SIGBUS` (see [`crate::storage`]). This crate never does it (it replaces files
/// by renaming, which leaves existing maps intact). A long-running program can call
/// [`check_open_files`](Self::check_open_files) between requests to detect a file changed under
/// it, or read the layers with [`ReadMode::Pread`] ([`read_mode`](Self::read_mode)), which never
/// maps them: a file truncated under it then gives errors, never a crash.
pub struct Database {
    dir: DatabaseDir,
    verify: bool,
    read: ReadMode,
    layers: [OnceLock<Table>; LAYERS],
    /// Serialises the opening of each layer, so that threads racing for the same unopened layer
    /// open (and verify) it once.
    opening: [Mutex<()>; LAYERS],
    /// The layers' forced-capture bounds, opened on first use like the layers.
    bounds: [OnceLock<Table<BoundsKind>>; LAYERS],
    opening_bounds: [Mutex<()>; LAYERS],
    /// The layers' depths to capture: looked for once (an absent file is remembered as `None`,
    /// so probes of databases without them cost nothing more), opened and checked like the
    /// layers.
    dtc: [OnceLock<Option<Table<DtcKind>>>; LAYERS],
    opening_dtc: [Mutex<()>; LAYERS],
    /// The values resolved in packs over floors (made when the first such probe comes).
    resolved: OnceLock<ValueCache>,
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let open: Vec<u32> = (0..LAYERS as u32).filter(|&n| self.layers[n as usize].get().is_some()).collect();
        f.debug_struct("Database").field("dir", &self.dir).field("verify_checksums", &self.verify).field("open_layers", &open).finish()
    }
}

/// The value of `cell`, opened with `open` by the first caller only: concurrent first callers
/// wait on `lock` for it. A failed opening is not remembered. `None` cells (a layer above 48)
/// give `missing()`.
fn open_once<'a, T>(
    cell: Option<&'a OnceLock<T>>,
    lock: Option<&Mutex<()>>,
    missing: impl FnOnce() -> Error,
    open: impl FnOnce() -> Result<T>,
) -> Result<&'a T> {
    let (Some(cell), Some(lock)) = (cell, lock) else {
        return Err(missing());
    };
    // A panic while another thread held the lock cannot leave the cell half-set (OnceLock is
    // set atomically), so a poisoned lock is safe to take over.
    let _guard = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(value) = cell.get() {
        return Ok(value);
    }
    let value = open()?;
    // Only this thread sets the cell (it holds the lock and the cell was empty).
    Ok(cell.get_or_init(|| value))
}

/// What a move does: the game goes on from a child position, or it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MoveResult {
    /// The game goes on from `child` (mover-first for the opponent, who moves next) after the
    /// mover captured `captured` stones.
    Continues {
        /// Stones the move captured.
        captured: u8,
        /// The position after the move, turned so that its mover (the opponent) is first.
        child: Position,
    },
    /// The move ends the game (a ruleset's ending, e.g. `abapa-remainder-to-opponent`'s grand
    /// slam); the move's value is the final result of every stone that was on the board.
    EndsGame,
}

/// One legal move of a position and its exact value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MoveValue {
    /// The pit played, 0..5, counted from the mover's first pit.
    pub pit: u8,
    /// Where the move leads.
    pub result: MoveResult,
    /// The move's value for the mover: `captured - v(child)`, or the game's final value for an
    /// ending move. The position's value is the largest of its moves' values.
    pub value: i8,
    /// The depth to capture after the move (`docs/dtc.md`): 0 when the move captures or ends
    /// the game, else the child's depth; `None` when the child's value is 0 or its layer has no
    /// dtc file. A position's depth is 1 + the least (winner) or greatest (loser) of its
    /// value-keeping moves' depths.
    pub dtc: Option<u16>,
}

impl MoveValue {
    /// Stones the move captures, or `None` for a move that ends the game (its value accounts for
    /// every stone on the board).
    pub fn captured(&self) -> Option<u8> {
        match self.result {
            MoveResult::Continues { captured, .. } => Some(captured),
            MoveResult::EndsGame => None,
        }
    }

    /// The position after the move (mover-first for the opponent), or `None` when the move ends
    /// the game.
    pub fn child(&self) -> Option<&Position> {
        match &self.result {
            MoveResult::Continues { child, .. } => Some(child),
            MoveResult::EndsGame => None,
        }
    }
}

/// The final split of the stones on the board implied by a value: with `n` stones and value
/// `v`, the mover ends with `(n + v) / 2` and the opponent with `(n - v) / 2`.
///
/// The shares are multiples of one half: they are fractional exactly when `n` and `v` differ in
/// parity, which only endless play (an even split of an odd number of remaining stones) can
/// cause. `Display` prints them as `8`, `8.5`, as `{}` prints each share (an `f64` that is a multiple
/// of one half prints with no trailing `.0`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Split {
    /// Stones the player to move ends with.
    pub mover: f64,
    /// Stones the opponent ends with.
    pub opponent: f64,
}

impl Split {
    /// The split of `stones` stones implied by `value` for the player to move.
    ///
    /// ```
    /// use oware::probe::Split;
    /// let s = Split::new(16, 2);
    /// assert_eq!((s.mover, s.opponent), (9.0, 7.0));
    /// assert_eq!(Split::new(5, 0).to_string(), "mover 2.5, opponent 2.5");
    /// ```
    pub fn new(stones: u32, value: i8) -> Split {
        let n = f64::from(stones);
        let v = f64::from(value);
        Split { mover: (n + v) / 2.0, opponent: (n - v) / 2.0 }
    }

    /// The split implied by `value` for `position`'s player to move.
    pub fn of(position: &Position, value: i8) -> Split {
        Split::new(position.stones(), value)
    }
}

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A share is a multiple of one half: `{}` prints it as `8` or `8.5`.
        write!(f, "mover {}, opponent {}", self.mover, self.opponent)
    }
}

impl Database {
    /// Opens the database directory `dir` (this tool's format; `rules`' layers live in
    /// `dir/<ruleset name>/`) for probing. No layer is read yet: each is opened the first time a
    /// probe needs it, its payload checksum verified unless [`verify_checksums`](Self::verify_checksums)
    /// turns that off.
    ///
    /// Cost: one `stat` of `dir`.
    ///
    /// # Errors
    /// [`Error::NotAFile`] when `dir` exists but is not a directory. A missing directory is
    /// accepted: probes then report [`Error::LayerMissing`], naming the layer and ruleset.
    ///
    /// # Examples
    /// ```
    /// use oware::probe::Database;
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let db = Database::open(dir.path(), Ruleset::Abapa(oware::rules::GrandSlam::NoCapture))?;
    /// let pos: Position = "1 0 0 0 0 0 0 0 0 0 0 0".parse()?;
    /// // Nothing is built yet: the error names the layer and ruleset.
    /// let err = db.value(&pos).unwrap_err();
    /// assert!(matches!(err, Error::LayerMissing { layer: 1, .. }));
    /// assert!(err.to_string().contains("layer 1 of abapa is not built"));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn open(dir: impl AsRef<Path>, rules: Ruleset) -> Result<Database> {
        Ok(Database::from_dir(DatabaseDir::native(dir.as_ref(), rules)?))
    }

    /// A database on an already checked [`DatabaseDir`]: this tool's layers, packs, or a
    /// directory of the published 2002 files (`DatabaseDir::new(Format::Vu, dir, Ruleset::Awari)`:
    /// `scores.N`, one signed byte per position; no checksum, only their sizes are checked when
    /// they are opened, and every value read is checked to lie in `-n..=n`).
    ///
    /// Cost: nothing is opened.
    ///
    /// # Examples
    /// ```
    /// use oware::probe::Database;
    /// use oware::builder::{self, BuildConfig, Silent};
    /// use oware::storage::{vu_path, DatabaseDir, Format, ValuesKind};
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let config = BuildConfig { rules: Ruleset::Awari, max_stones: 6, dir: dir.path().into(), max_memory: None, ..Default::default() };
    /// builder::build(&config, &Silent)?;
    /// // Write the layers as published-format files, as `oware export` does.
    /// let vu = dir.path().join("vu");
    /// std::fs::create_dir(&vu).map_err(|e| Error::io(&vu, e))?;
    /// let native = DatabaseDir::native(dir.path(), Ruleset::Awari)?;
    /// for n in 0..=6 {
    ///     let layer = native.open_layer::<ValuesKind>(n, true)?;
    ///     std::fs::write(vu_path(&vu, n), layer.bytes()).map_err(|e| Error::io(&vu, e))?;
    /// }
    /// let db = Database::from_dir(DatabaseDir::new(Format::Vu, &vu, Ruleset::Awari)?);
    /// let native = Database::open(dir.path(), Ruleset::Awari)?;
    /// let pos: Position = "0 2 1 0 0 1 0 1 0 0 1 0".parse()?;
    /// assert_eq!(db.value(&pos)?, native.value(&pos)?);
    /// // The published files hold only awari values.
    /// let abapa = Ruleset::Abapa(oware::rules::GrandSlam::NoCapture);
    /// assert!(matches!(DatabaseDir::new(Format::Vu, &vu, abapa), Err(Error::Usage(_))));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn from_dir(dir: DatabaseDir) -> Database {
        Database {
            dir,
            verify: true,
            read: ReadMode::Map,
            layers: std::array::from_fn(|_| OnceLock::new()),
            opening: std::array::from_fn(|_| Mutex::new(())),
            bounds: std::array::from_fn(|_| OnceLock::new()),
            opening_bounds: std::array::from_fn(|_| Mutex::new(())),
            dtc: std::array::from_fn(|_| OnceLock::new()),
            opening_dtc: std::array::from_fn(|_| Mutex::new(())),
            resolved: OnceLock::new(),
        }
    }

    /// Sets whether each layer's payload checksum is verified when the layer is first opened
    /// (default: verified). Verification costs one sequential read of the whole layer (several
    /// GB/s once the file is cached; a 33 MB layer 18 takes milliseconds, a 2.7 GB layer 30
    /// about a second or the time to read it from disk), once per layer and `Database`. Without
    /// it only the header and the file size are checked, and a damaged value is noticed only
    /// if it falls outside `-n..=n`. Has no effect on published-format files (they have no
    /// checksum) or on layers already open.
    ///
    /// ```
    /// # use oware::{probe::Database, Error, Position, Ruleset};
    /// # let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?.verify_checksums(false);
    /// let pos: Position = "1 0 0 0 0 0 0 0 0 0 0 0".parse()?;
    /// assert!(matches!(db.value(&pos), Err(Error::LayerMissing { layer: 1, .. })));
    /// # Ok::<(), oware::Error>(())
    /// ```
    pub fn verify_checksums(mut self, verify: bool) -> Database {
        self.verify = verify;
        self
    }

    /// Sets how the values of layers opened from now on are read (default [`ReadMode::Map`]).
    ///
    /// [`ReadMode::Map`] maps each layer file: a probe is one memory read, but a file truncated
    /// in place by another program kills the process with `SIGBUS` when a removed page is read.
    /// [`ReadMode::Pread`] maps nothing: layers are read whole into memory when opened while the
    /// copies fit in [`ReadMode::COPY_BUDGET`] (1 GiB in the process: awari layers 0..23; probes
    /// as fast as mapped ones; memory the layers' size), the others are read value by value with one `pread`
    /// system call each (about a microsecond with the file in the page cache, against tens of
    /// nanoseconds mapped: a best line of 60 plies costs some 0.5 ms more). A file truncated or
    /// rewritten under it gives [`Error::Corrupt`] or values that
    /// [`check_open_files`](Self::check_open_files) then rejects, never a crash. Forced-capture
    /// bounds and depths to capture are read the same way (copied within the same budget, else
    /// entry by entry). Packs are still mapped.
    ///
    /// ```
    /// # use oware::{probe::Database, storage::ReadMode, Error, Position, Ruleset};
    /// # let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?.read_mode(ReadMode::Pread);
    /// let pos: Position = "1 0 0 0 0 0 0 0 0 0 0 0".parse()?;
    /// assert!(matches!(db.value(&pos), Err(Error::LayerMissing { layer: 1, .. })));
    /// # Ok::<(), oware::Error>(())
    /// ```
    pub fn read_mode(mut self, mode: ReadMode) -> Database {
        self.read = mode;
        self
    }

    /// The ruleset of the database's values (`awari` for published-format files).
    pub fn rules(&self) -> Ruleset {
        self.dir.rules()
    }

    /// The on-disk format of the database.
    pub fn format(&self) -> Format {
        self.dir.format()
    }

    /// The database directory.
    pub fn dir(&self) -> &DatabaseDir {
        &self.dir
    }

    /// The path of layer `n`'s file (which may not exist).
    pub(crate) fn layer_path(&self, n: u32) -> PathBuf {
        self.dir.path::<ValuesKind>(n)
    }

    /// Checks that no open layer, bounds or dtc file changed size or modification time since it
    /// was opened (see "Files in use" above): a program answering requests calls it before each
    /// one, so a file truncated under it gives an error instead of a crash, and after each one
    /// (with [`ReadMode::Pread`]), so that values read while a file was rewritten in place are
    /// not trusted.
    ///
    /// Cost: one `fstat` per open file (at most 147).
    ///
    /// # Errors
    /// [`Error::Corrupt`] with [`Damage::ChangedWhileOpen`](crate::error::Damage::ChangedWhileOpen)
    /// for the first changed file; [`Error::Io`] when `fstat` fails.
    pub fn check_open_files(&self) -> Result<()> {
        for cell in &self.layers {
            if let Some(layer) = cell.get() {
                layer.check_unchanged()?;
            }
        }
        for cell in &self.bounds {
            if let Some(b) = cell.get() {
                b.check_unchanged()?;
            }
        }
        for cell in &self.dtc {
            if let Some(Some(d)) = cell.get() {
                d.check_unchanged()?;
            }
        }
        Ok(())
    }

    /// The open files (layers, bounds and depths to capture) whose path now names another file or nothing: they
    /// were replaced by rename (as a rebuild does) or removed. The values still read are the old
    /// file's; a long-running program opens a new `Database` to read the new files.
    ///
    /// Cost: one `stat` per open file (at most 147).
    pub fn replaced_files(&self) -> Vec<PathBuf> {
        let layers = self.layers.iter().filter_map(OnceLock::get).filter(|t| t.replaced()).map(|t| t.path().to_path_buf());
        let bounds = self.bounds.iter().filter_map(OnceLock::get).filter(|b| b.replaced()).map(|b| b.path().to_path_buf());
        let dtc = self.dtc.iter().filter_map(|c| c.get().and_then(Option::as_ref)).filter(|d| d.replaced()).map(|d| d.path().to_path_buf());
        layers.chain(bounds).chain(dtc).collect()
    }

    /// The layers whose files exist, in increasing order. Nothing is opened or checked.
    ///
    /// Cost: one `stat` per possible layer (49).
    ///
    /// ```
    /// # use oware::{probe::Database, Ruleset, Error};
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?;
    /// assert!(db.layers_present().is_empty());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn layers_present(&self) -> Vec<u32> {
        (0..LAYERS as u32).filter(|&n| matches!(self.dir.file_state::<ValuesKind>(n), LayerState::Present)).collect()
    }

    /// Layer `n`, opened (and checked) on first use and kept open.
    ///
    /// Thread-safe: concurrent first calls for the same layer open it once; the others wait for
    /// it. A failed opening is not remembered.
    ///
    /// Cost: after the first call, one atomic load. The first call maps the file and checks its
    /// header and size, plus one sequential read of the layer when checksums are verified.
    ///
    /// # Errors
    /// [`Error::LayerMissing`] when the file does not exist (or `n > 48`),
    /// [`Error::RulesetMismatch`] when it holds another ruleset, [`Error::Corrupt`] when its
    /// header, size or checksum is wrong, [`Error::Io`] for other failures to read it.
    ///
    /// ```
    /// # use oware::{probe::Database, builder::{self, BuildConfig, Silent}, Ruleset, Error};
    /// # let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// # builder::build(&BuildConfig { rules: Ruleset::Awari, max_stones: 3, dir: dir.path().into(), max_memory: None, ..Default::default() }, &Silent)?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?;
    /// assert_eq!(db.layer(3)?.len(), 364);
    /// assert!(matches!(db.layer(4), Err(Error::LayerMissing { layer: 4, .. })));
    /// # Ok::<(), Error>(())
    /// ```
    #[inline]
    pub fn layer(&self, n: u32) -> Result<&Table> {
        match self.layers.get(n as usize).and_then(OnceLock::get) {
            Some(layer) => Ok(layer),
            None => self.open_layer(n),
        }
    }

    #[cold]
    fn open_layer(&self, n: u32) -> Result<&Table> {
        open_once(
            self.layers.get(n as usize),
            self.opening.get(n as usize),
            || self.missing(n),
            || self.dir.open_table::<ValuesKind>(n, self.verify, self.read),
        )
    }

    fn missing(&self, n: u32) -> Error {
        self.dir.missing::<ValuesKind>(n)
    }

    /// Opens layers `0..=max` now rather than at the first probe that needs them (e.g. before
    /// timing probes, or to report a damaged file at start-up).
    ///
    /// Cost: as [`layer`](Self::layer) for each layer not yet open.
    ///
    /// # Errors
    /// The first error of [`layer`](Self::layer) met, in increasing layer order.
    pub fn open_layers(&self, max: u32) -> Result<()> {
        for n in 0..=max {
            self.layer(n)?;
        }
        Ok(())
    }

    /// The value of a board in a layer (its opponent row has an empty pit): what its layer's
    /// file stores, or in a pack over floors the larger of that and the board's floor.
    ///
    /// Cost: one read of the layer; in a pack over floors one move generation more, and for
    /// each capture that could beat what is known the child's stored value, resolved in turn
    /// only when it could still beat it (see [`over_floor`](Self::over_floor)).
    ///
    /// # Errors
    /// As [`value`](Self::value).
    #[inline]
    pub(crate) fn lookup(&self, board: &Board) -> Result<i8> {
        let n = stones(board);
        let table = self.layer(n)?;
        if table.over_floors() {
            let index = rank_unchecked(board);
            let cache = self.resolved.get_or_init(ValueCache::new);
            if let Some(v) = cache.get(n, index) {
                return Ok(v);
            }
            let v = self.over_floor(table, board, None)?;
            cache.put(n, index, v);
            Ok(v)
        } else {
            table.get(rank_unchecked(board))
        }
    }

    /// The value of `board` in `table`, a pack over floors: the larger of what the pack stores
    /// (`stored` when already read) and the board's floor (docs/FORMAT.md, "Values over their
    /// floors"). The floor is searched lazily: a capture of `c` stones whose child holds `m`
    /// is skipped when even `c + m` (the child's value is at least `-m`), or `c` minus what the
    /// child's layer stores (the child's value is at least that), cannot beat the best known;
    /// only then is the child's own floor searched. A child's value in the cache of resolved
    /// values is taken from there, and a child resolved here is put there.
    ///
    /// Cost: one move generation; a position whose game is over reads nothing.
    fn over_floor(&self, table: &Table, board: &Board, stored: Option<i8>) -> Result<i8> {
        let x = crate::pack::Exit::of(self.rules(), board);
        if let Some(v) = x.ended {
            return Ok(v);
        }
        let here = match stored {
            Some(s) => s,
            None => table.stored(rank_unchecked(board))?,
        };
        let mut best = here.max(x.best_end);
        for &(c, ref child) in x.captures() {
            let c = c as i8;
            let m = stones(child);
            if c + m as i8 <= best {
                continue;
            }
            let lower = self.layer(m)?;
            let index = rank_unchecked(child);
            if !lower.over_floors() {
                best = best.max(c - lower.get(index)?);
                continue;
            }
            // A child resolved before (by a probe or another floor) costs no decoding.
            let cache = self.resolved.get_or_init(ValueCache::new);
            if let Some(v) = cache.get(m, index) {
                best = best.max(c - v);
                continue;
            }
            let s = lower.stored(index)?;
            if c - s <= best {
                continue;
            }
            let v = self.over_floor(lower, child, Some(s))?;
            cache.put(m, index, v);
            best = best.max(c - v);
        }
        Ok(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Database>();
    }

    #[test]
    fn splits_and_shares() {
        assert_eq!(Split::new(16, 0), Split { mover: 8.0, opponent: 8.0 });
        assert_eq!(Split::new(7, -7), Split { mover: 0.0, opponent: 7.0 });
        assert_eq!(Split::new(5, 2).to_string(), "mover 3.5, opponent 1.5");
        assert_eq!(Split::new(24, 0).to_string(), "mover 12, opponent 12");
        assert_eq!(Split::new(1, 0).to_string(), "mover 0.5, opponent 0.5");
    }

    #[test]
    fn shares_print_as_whole_numbers_or_halves() {
        // Every share a split or a game's verdict can hold (a multiple of one half, captured
        // counts included) prints with `{}` as `8` or `8.5`: no trailing `.0`, no exponent.
        for halves in 0..=2_000_u32 {
            let share = f64::from(halves) / 2.0;
            let want = if halves % 2 == 0 { format!("{}", halves / 2) } else { format!("{}.5", halves / 2) };
            assert_eq!(share.to_string(), want);
        }
        assert_eq!((f64::from(u32::MAX) + 0.5).to_string(), "4294967295.5");
    }

    #[test]
    fn no_layer_above_48() {
        let db = Database::open("/nonexistent-oware-dir", Ruleset::Awari).unwrap();
        assert!(matches!(db.layer(49), Err(Error::LayerMissing { layer: 49, .. })));
        assert!(matches!(db.layer(u32::MAX), Err(Error::LayerMissing { .. })));
    }

    #[test]
    fn file_as_dir_is_an_error() {
        let f = tempfile::NamedTempFile::new().unwrap();
        assert!(matches!(Database::open(f.path(), Ruleset::Awari), Err(Error::NotAFile { .. })));
    }
}
