//! Probing built databases: exact values, move values and best lines, for other engines.
//!
//! A [`Database`] is opened once on a database directory and then probed from any number of
//! threads (it is `Send + Sync`). Layers are opened lazily, the first time a probe needs them,
//! and exactly once; after that a probe of a position in a layer costs one rank computation
//! (a dozen table lookups) and one read from the memory-mapped layer.
//!
//! Values are from the point of view of the player to move: the stones he will still capture
//! minus the stones the opponent will still capture, with endless play counting 0 (`RULES.md`).
//! A value `v` of a position with `n` stones on the board implies the final split
//! `(n + v) / 2` stones for the mover and `(n - v) / 2` for the opponent ([`Split`]); the halves
//! can be fractional when endless play splits an odd number of stones.
//!
//! Positions whose opponent row (pits 6..11) has no empty pit belong to no layer (the 48-stone
//! start position is one); they are answered from their children, which are always in a layer.
//!
//! ```
//! use oware::probe::Database;
//! use oware::solver::{self, BuildConfig, Silent};
//! use oware::{Position, Ruleset};
//!
//! # fn main() -> oware::Result<()> {
//! let dir = tempfile::tempdir().map_err(|e| oware::Error::io("tempdir", e))?;
//! let config = BuildConfig {
//!     rules: Ruleset::Awari,
//!     max_stones: 6,
//!     dir: dir.path().to_path_buf(),
//!     max_memory: None,
//! };
//! solver::build(&config, &Silent)?;
//!
//! let db = Database::open(dir.path(), Ruleset::Awari)?;
//! // A lone stone in the mover's pit 0 is worth +1 (FACTS.md, layer 1).
//! let pos: Position = "1 0 0 0 0 0 0 0 0 0 0 0".parse()?;
//! assert_eq!(db.value(&pos)?, 1);
//! // A position outside every layer (full opponent row) is answered from its children.
//! let full: Position = "0 0 0 0 0 0 1 1 1 1 1 1".parse()?;
//! assert_eq!(db.value(&full)?, -6); // the mover cannot move: the opponent takes all six
//! # Ok(())
//! # }
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::error::{Error, Result};
use crate::index::{in_some_layer, layer_size, rank_unchecked, MAX_STONES};
use crate::position::Position;
use crate::rules::{stones, Board, Outcome, Ruleset};
use crate::storage::{layer_path, ruleset_dir, vu_path, Format, Layer};

/// Number of possible layers (0..=48).
const LAYERS: usize = MAX_STONES as usize + 1;

/// Most positions the search of [`Database::principal_variation`] (its rule 2) looks at before
/// giving up.
const PV_SEARCH_NODES: usize = 20_000;

/// Where a database's layer files live.
#[derive(Clone, Debug)]
enum Source {
    /// This tool's files: `<base>/<ruleset>/layer-NN.owdb`.
    Native { base: PathBuf },
    /// Published 2002 files: `<dir>/scores.N` (ruleset `awari`).
    Vu { dir: PathBuf },
}

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
/// The layer files must not be modified while they are mapped (this crate never does: it
/// replaces files by renaming, which leaves existing maps intact).
pub struct Database {
    source: Source,
    rules: Ruleset,
    verify: bool,
    layers: [OnceLock<Layer>; LAYERS],
    /// Serialises the opening of each layer, so that threads racing for the same unopened layer
    /// open (and verify) it once.
    opening: [Mutex<()>; LAYERS],
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let open: Vec<u32> = (0..LAYERS as u32).filter(|&n| self.layers[n as usize].get().is_some()).collect();
        f.debug_struct("Database")
            .field("source", &self.source)
            .field("rules", &self.rules)
            .field("verify_checksums", &self.verify)
            .field("open_layers", &open)
            .finish()
    }
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

/// Why a principal variation stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PvEnd {
    /// The game is over: the last move ended it, or the player to move next has no legal move
    /// (also when the line is empty because the starting position has no legal move).
    GameOver,
    /// The position after the last move already occurred before the move of step `first_ply`
    /// (0-based, an index into [`PrincipalVariation::steps`]) and its value is 0: best play
    /// goes round in a cycle, endless play, and the stones left on the board are split evenly
    /// (the value 0 says so).
    Repetition {
        /// Index of the step whose starting position the last move reached again.
        first_ply: usize,
    },
    /// The position after the last move already occurred before the move of step `first_ply`
    /// although its value is not 0. Endless play would be worth 0, so this line is not how the
    /// game goes: a value-only database cannot always show the forcing line (the way to the
    /// capture that realises the value may lie beyond the search bound of
    /// [`Database::principal_variation`]); the value itself is exact.
    Cycle {
        /// Index of the step whose starting position the last move reached again.
        first_ply: usize,
    },
    /// The line was cut at the requested number of plies (also when that number is 0).
    PlyLimit,
}

/// One ply of a principal variation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PvStep {
    /// The position before the move, mover-first for the player making it.
    pub position: Position,
    /// The exact value of `position` for its mover (equal to `played.value`).
    pub value: i8,
    /// The move played: a best move of `position`, chosen as described at
    /// [`Database::principal_variation`].
    pub played: MoveValue,
}

/// A best line: the steps played and why the line stops there.
///
/// Each step's position is the previous step's child ([`MoveValue::child`] of its `played`
/// move).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PrincipalVariation {
    /// The plies of the line, from the starting position on.
    pub steps: Vec<PvStep>,
    /// Why the line stops after the last step.
    pub end: PvEnd,
}

/// Everything known about one position: its value, its moves' values and a best line
/// ([`Database::analyse`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Analysis {
    /// The exact value of the position for its mover, as [`Database::value`].
    pub value: i8,
    /// Every legal move with its value, in increasing pit order, as
    /// [`Database::move_values`]; empty when the game is over.
    pub moves: Vec<MoveValue>,
    /// A best line from the position, as [`Database::principal_variation`].
    pub line: PrincipalVariation,
}

/// The final split of the stones on the board implied by a value: with `n` stones and value
/// `v`, the mover ends with `(n + v) / 2` and the opponent with `(n - v) / 2`.
///
/// The shares are multiples of one half: they are fractional exactly when `n` and `v` differ in
/// parity, which only endless play (an even split of an odd number of remaining stones) can
/// cause. `Display` prints them as `8`, `8.5`.
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

/// Formats a stone share (a multiple of one half) as `8` or `8.5`.
///
/// ```
/// assert_eq!(oware::probe::format_share(8.0), "8");
/// assert_eq!(oware::probe::format_share(7.5), "7.5");
/// ```
pub fn format_share(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mover {}, opponent {}", format_share(self.mover), format_share(self.opponent))
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
    /// [`Error::Io`] when `dir` exists but is not a directory. A missing directory is accepted:
    /// probes then report [`Error::LayerMissing`], whose message says how to build the layer.
    ///
    /// # Examples
    /// ```
    /// use oware::probe::Database;
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let db = Database::open(dir.path(), Ruleset::Abapa(oware::rules::GrandSlam::NoCapture))?;
    /// let pos: Position = "1 0 0 0 0 0 0 0 0 0 0 0".parse()?;
    /// // Nothing is built yet: the error names the command that builds the layer.
    /// let err = db.value(&pos).unwrap_err();
    /// assert!(matches!(err, Error::LayerMissing { layer: 1, .. }));
    /// assert!(err.to_string().contains("oware build --rules abapa --max-stones 1"));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn open(dir: impl AsRef<Path>, rules: Ruleset) -> Result<Database> {
        let base = dir.as_ref().to_path_buf();
        check_dir(&base)?;
        Ok(Database::with_source(Source::Native { base }, rules))
    }

    /// Opens a directory of published 2002 files (`dir/scores.N`: headerless, one signed byte
    /// per position, ruleset `awari`). Such files carry no checksum: only their sizes are
    /// checked when they are opened, and every value read is checked to lie in `-n..=n`.
    ///
    /// Cost: one `stat` of `dir`.
    ///
    /// # Errors
    /// [`Error::Io`] when `dir` exists but is not a directory.
    ///
    /// # Examples
    /// ```
    /// use oware::probe::Database;
    /// use oware::solver::{self, BuildConfig, Silent};
    /// use oware::storage::{vu_path, Layer};
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let config = BuildConfig { rules: Ruleset::Awari, max_stones: 6, dir: dir.path().into(), max_memory: None };
    /// solver::build(&config, &Silent)?;
    /// // Write the layers as published-format files, as `oware export` does.
    /// let vu = dir.path().join("vu");
    /// std::fs::create_dir(&vu).map_err(|e| Error::io(&vu, e))?;
    /// for n in 0..=6 {
    ///     let layer = Layer::open_native(dir.path(), Ruleset::Awari, n, true)?;
    ///     std::fs::write(vu_path(&vu, n), layer.bytes()).map_err(|e| Error::io(&vu, e))?;
    /// }
    /// let db = Database::open_vu(&vu)?;
    /// let native = Database::open(dir.path(), Ruleset::Awari)?;
    /// let pos: Position = "0 2 1 0 0 1 0 1 0 0 1 0".parse()?;
    /// assert_eq!(db.value(&pos)?, native.value(&pos)?);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn open_vu(dir: impl AsRef<Path>) -> Result<Database> {
        let dir = dir.as_ref().to_path_buf();
        check_dir(&dir)?;
        Ok(Database::with_source(Source::Vu { dir }, Ruleset::Awari))
    }

    /// Opens `dir` in the given format: [`open`](Self::open) for [`Format::Native`],
    /// [`open_vu`](Self::open_vu) for [`Format::Vu`].
    ///
    /// Cost: one `stat` of `dir`.
    ///
    /// # Errors
    /// As `open` / `open_vu`; [`Error::Usage`] for the published format with a ruleset other
    /// than `awari` (those files hold only `awari` values).
    ///
    /// # Examples
    /// ```
    /// use oware::probe::Database;
    /// use oware::storage::Format;
    /// use oware::{Error, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// assert!(Database::open_format(Format::Vu, dir.path(), Ruleset::Awari).is_ok());
    /// let abapa = Ruleset::Abapa(oware::rules::GrandSlam::NoCapture);
    /// assert!(matches!(Database::open_format(Format::Vu, dir.path(), abapa), Err(Error::Usage(_))));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn open_format(format: Format, dir: impl AsRef<Path>, rules: Ruleset) -> Result<Database> {
        match format {
            Format::Native => Database::open(dir, rules),
            Format::Vu if rules != Ruleset::Awari => Err(Error::Usage(format!(
                "the published 2002 format holds only 'awari' values, not '{}'",
                rules.name()
            ))),
            Format::Vu => Database::open_vu(dir),
        }
    }

    fn with_source(source: Source, rules: Ruleset) -> Database {
        Database {
            source,
            rules,
            verify: true,
            layers: std::array::from_fn(|_| OnceLock::new()),
            opening: std::array::from_fn(|_| Mutex::new(())),
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
    /// # use oware::{probe::Database, Ruleset};
    /// let db = Database::open("databases", Ruleset::Awari)?.verify_checksums(false);
    /// assert!(!db.verifies_checksums());
    /// # Ok::<(), oware::Error>(())
    /// ```
    pub fn verify_checksums(mut self, verify: bool) -> Database {
        self.verify = verify;
        self
    }

    /// Whether payload checksums are verified when layers are opened.
    pub fn verifies_checksums(&self) -> bool {
        self.verify
    }

    /// The ruleset of the database's values (`awari` for published-format files).
    pub fn rules(&self) -> Ruleset {
        self.rules
    }

    /// The on-disk format of the database.
    pub fn format(&self) -> Format {
        match self.source {
            Source::Native { .. } => Format::Native,
            Source::Vu { .. } => Format::Vu,
        }
    }

    /// The path of layer `n`'s file (which may not exist).
    pub fn layer_path(&self, n: u32) -> PathBuf {
        match &self.source {
            Source::Native { base } => layer_path(base, self.rules, n),
            Source::Vu { dir } => vu_path(dir, n),
        }
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
        (0..LAYERS as u32).filter(|&n| self.layer_path(n).is_file()).collect()
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
    /// # use oware::{probe::Database, solver::{self, BuildConfig, Silent}, Ruleset, Error};
    /// # let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// # solver::build(&BuildConfig { rules: Ruleset::Awari, max_stones: 3, dir: dir.path().into(), max_memory: None }, &Silent)?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?;
    /// assert_eq!(db.layer(3)?.values().len(), 364);
    /// assert!(matches!(db.layer(4), Err(Error::LayerMissing { layer: 4, .. })));
    /// # Ok::<(), Error>(())
    /// ```
    #[inline]
    pub fn layer(&self, n: u32) -> Result<&Layer> {
        match self.layers.get(n as usize).and_then(OnceLock::get) {
            Some(layer) => Ok(layer),
            None => self.open_layer(n),
        }
    }

    #[cold]
    fn open_layer(&self, n: u32) -> Result<&Layer> {
        let (Some(cell), Some(lock)) = (self.layers.get(n as usize), self.opening.get(n as usize)) else {
            return Err(self.missing(n));
        };
        // A panic while another thread held the lock cannot leave the cell half-set (OnceLock
        // is set atomically), so a poisoned lock is safe to take over.
        let _guard = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(layer) = cell.get() {
            return Ok(layer);
        }
        let layer = match &self.source {
            Source::Native { base } => Layer::open_native(base, self.rules, n, self.verify)?,
            Source::Vu { dir } => Layer::open_vu(dir, n)?,
        };
        if layer.values().len() as u64 != layer_size(n) {
            return Err(Error::Corrupt {
                path: layer.path().into(),
                reason: format!("{} values, but layer {n} has {} positions", layer.values().len(), layer_size(n)),
            });
        }
        // Only this thread sets the cell (we hold its lock and it was empty).
        Ok(cell.get_or_init(|| layer))
    }

    fn missing(&self, n: u32) -> Error {
        let dir = match &self.source {
            Source::Native { base } => ruleset_dir(base, self.rules),
            Source::Vu { dir } => dir.clone(),
        };
        Error::LayerMissing { layer: n, dir, rules: self.rules.name().into() }
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

    /// The stored value of a board in a layer (its opponent row has an empty pit).
    #[inline]
    fn lookup(&self, board: &Board) -> Result<i8> {
        let n = stones(board);
        let layer = self.layer(n)?;
        let index = rank_unchecked(board);
        let value = layer.values().get(index as usize).copied();
        match value {
            Some(v) if u32::from(v.unsigned_abs()) <= n => Ok(v),
            _ => Err(self.bad_value(layer, index, value)),
        }
    }

    #[cold]
    fn bad_value(&self, layer: &Layer, index: u64, value: Option<i8>) -> Error {
        let reason = match value {
            Some(v) => format!("position {index} holds value {v}, outside -{n}..={n}", n = layer.stones()),
            None => format!("position {index} is past the end of the file"),
        };
        Error::Corrupt { path: layer.path().into(), reason }
    }

    /// The exact value of `position` for its player to move: stones he will still capture minus
    /// stones the opponent will still capture, with both playing their best and endless play
    /// counting 0. Between `-n` and `n` for `n` stones on the board.
    ///
    /// A position in a layer is read from its layer. A position outside every layer (its
    /// opponent row has no empty pit, like the start position) is answered from its children:
    /// the best of `captured - v(child)` and the values of moves that end the game, or the
    /// ruleset's ending value when it has no legal move.
    ///
    /// Cost: a position in a layer takes one rank computation and one read from a memory-mapped
    /// file (plus the layer's opening on first use, see [`layer`](Self::layer)); one outside
    /// every layer takes one move generation and up to six such probes.
    ///
    /// # Errors
    /// [`Error::LayerMissing`] when a layer needed is not built (the message names the command
    /// that builds it), [`Error::RulesetMismatch`] when its file holds another ruleset's values,
    /// [`Error::Corrupt`] when the file is damaged (bad header, size, checksum, or a value
    /// outside `-n..=n`), [`Error::Io`] when it cannot be read.
    ///
    /// # Examples
    /// ```
    /// use oware::probe::Database;
    /// use oware::solver::{self, BuildConfig, Silent};
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let config = BuildConfig { rules: Ruleset::Awari, max_stones: 6, dir: dir.path().into(), max_memory: None };
    /// solver::build(&config, &Silent)?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?;
    ///
    /// // Layer 1 (FACTS.md): a lone stone in the mover's pit 5 is worth -1 ...
    /// assert_eq!(db.value(&"0 0 0 0 0 1 0 0 0 0 0 0".parse()?)?, -1);
    /// // ... and on the opponent's side too.
    /// assert_eq!(db.value(&"0 0 0 0 0 0 0 0 1 0 0 0".parse()?)?, -1);
    /// // The start position's children hold 48 stones: layer 48 is not built here.
    /// assert!(matches!(db.value(&Position::start()), Err(Error::LayerMissing { layer: 48, .. })));
    /// # Ok::<(), Error>(())
    /// ```
    #[inline]
    pub fn value(&self, position: &Position) -> Result<i8> {
        let board = position.board();
        if in_some_layer(board) {
            self.lookup(board)
        } else {
            self.value_from_children(board)
        }
    }

    fn value_from_children(&self, board: &Board) -> Result<i8> {
        let moves = self.rules.moves(board);
        if let Some(ending) = moves.ending() {
            return Ok(ending);
        }
        let mut best: Option<i8> = None;
        for m in moves.as_slice() {
            let v = match m.outcome {
                Outcome::End { value } => value,
                // A child always has an empty opponent pit (the pit just played): in a layer.
                Outcome::Child { captured, child } => captured as i8 - self.child_value(&child)?,
            };
            best = Some(best.map_or(v, |b| b.max(v)));
        }
        // `moves` is never empty without an ending; an empty board (0 stones) is in layer 0.
        Ok(best.unwrap_or(0))
    }

    /// The value of a child board (any board: a child is in a layer, but check rather than trust).
    #[inline]
    fn child_value(&self, child: &Board) -> Result<i8> {
        if in_some_layer(child) {
            self.lookup(child)
        } else {
            self.value_from_children(child)
        }
    }

    /// Every legal move of `position` with its exact value, in increasing pit order. Empty when
    /// the position has no legal move (the game is over; [`value`](Self::value) then gives the
    /// ruleset's ending value).
    ///
    /// Cost: one move generation and one probe per move that does not end the game (at most six).
    ///
    /// # Errors
    /// As [`value`](Self::value), for the layers of the children.
    ///
    /// # Examples
    /// ```
    /// use oware::probe::{Database, MoveResult};
    /// use oware::solver::{self, BuildConfig, Silent};
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let config = BuildConfig { rules: Ruleset::Awari, max_stones: 6, dir: dir.path().into(), max_memory: None };
    /// solver::build(&config, &Silent)?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?;
    ///
    /// let pos: Position = "0 0 0 0 2 1 1 0 0 0 0 0".parse()?;
    /// let moves = db.move_values(&pos)?;
    /// assert_eq!(moves.iter().map(|m| m.pit).collect::<Vec<_>>(), vec![4, 5]);
    /// // Pit 5 sows one stone onto the opponent's 1 and captures the 2.
    /// assert_eq!(moves[1].captured(), Some(2));
    /// // Every move's value is captured - v(child); the position's value is the best of them.
    /// for m in &moves {
    ///     if let MoveResult::Continues { captured, child } = m.result {
    ///         assert_eq!(m.value, captured as i8 - db.value(&child)?);
    ///     }
    /// }
    /// assert_eq!(db.value(&pos)?, moves.iter().map(|m| m.value).max().unwrap_or(i8::MIN));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn move_values(&self, position: &Position) -> Result<Vec<MoveValue>> {
        let moves = self.rules.moves(position.board());
        let mut out = Vec::with_capacity(moves.len());
        for m in moves.as_slice() {
            let mv = match m.outcome {
                Outcome::End { value } => MoveValue { pit: m.pit, result: MoveResult::EndsGame, value },
                Outcome::Child { captured, child } => {
                    let value = captured as i8 - self.child_value(&child)?;
                    let child = Position::new(child)?;
                    MoveValue { pit: m.pit, result: MoveResult::Continues { captured, child }, value }
                }
            };
            out.push(mv);
        }
        Ok(out)
    }

    /// The best moves of `position`: every legal move whose value equals the position's value,
    /// in increasing pit order. Empty when the position has no legal move.
    ///
    /// Cost: as [`move_values`](Self::move_values).
    ///
    /// # Errors
    /// As [`value`](Self::value), for the layers of the children.
    ///
    /// # Examples
    /// ```
    /// use oware::probe::Database;
    /// use oware::solver::{self, BuildConfig, Silent};
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let config = BuildConfig { rules: Ruleset::Awari, max_stones: 6, dir: dir.path().into(), max_memory: None };
    /// solver::build(&config, &Silent)?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?;
    ///
    /// // A lone stone in pit 3: playing it keeps the stone home and eradicates; +1.
    /// let best = db.best_moves(&"0 0 0 1 0 0 0 0 0 0 0 0".parse()?)?;
    /// assert_eq!((best.len(), best[0].pit, best[0].value), (1, 3, 1));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn best_moves(&self, position: &Position) -> Result<Vec<MoveValue>> {
        let mut moves = self.move_values(position)?;
        let best = moves.iter().map(|m| m.value).max();
        moves.retain(|m| Some(m.value) == best);
        Ok(moves)
    }

    /// The best line from `position`, at most `max_plies` moves long: every move played is a
    /// best move (its value equals its position's value).
    ///
    /// A value-only database says which moves keep the value, not which of them make progress:
    /// the winner may have a waiting move of the same value as the capture that realises it, and
    /// playing waiting moves forever would be worth 0, not the value. So the move of each ply is
    /// chosen among the best moves as follows:
    /// 1. a move that captures or ends the game (or leaves the opponent without a legal move),
    ///    the lowest-numbered one: its value comes from a smaller layer or from the end of the
    ///    game, so it cannot lead back to an earlier position;
    /// 2. otherwise, when the value is not 0, the next move of a shortest sequence of best moves
    ///    (of both players, lowest pits first) that leads to a position with such a move. It is
    ///    found by a breadth-first search over the best moves that looks at no more than
    ///    20 000 positions, which only fails for lines longer than any seen in the
    ///    tests: a value `v != 0` means endless play (worth 0) is not best play, so such a
    ///    sequence exists;
    /// 3. otherwise (value 0, or the search gave up), the lowest-numbered move whose position
    ///    after the move has not occurred earlier in the line, or else the lowest-numbered one.
    ///
    /// The line stops when the game ends ([`PvEnd::GameOver`]), when a position repeats
    /// ([`PvEnd::Repetition`] when its value is 0: endless play; [`PvEnd::Cycle`] otherwise,
    /// which only a search that gave up can cause), or after `max_plies` moves
    /// ([`PvEnd::PlyLimit`]). The choice depends only on the line so far, so a shorter
    /// `max_plies` cuts the same line.
    ///
    /// Cost: per ply, as [`move_values`](Self::move_values), plus a hash-map insertion; memory
    /// grows with the length of the line. When rule 2 searches, as `move_values` for each
    /// position it looks at (usually a handful, at most 20 000, once per stretch of the line
    /// between two captures).
    ///
    /// # Errors
    /// As [`value`](Self::value), for every position on the line or looked at by the search,
    /// and their children.
    ///
    /// # Examples
    /// ```
    /// use oware::probe::{Database, PvEnd};
    /// use oware::solver::{self, BuildConfig, Silent};
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let config = BuildConfig { rules: Ruleset::Awari, max_stones: 6, dir: dir.path().into(), max_memory: None };
    /// solver::build(&config, &Silent)?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?;
    ///
    /// let pos: Position = "0 0 0 0 2 1 1 0 0 0 0 0".parse()?;
    /// let line = db.principal_variation(&pos, 100)?;
    /// assert_eq!(line.steps[0].value, db.value(&pos)?);
    /// // Each step plays a best move, and the next step starts where it led.
    /// for (i, step) in line.steps.iter().enumerate() {
    ///     assert!(db.best_moves(&step.position)?.contains(&step.played));
    ///     if let Some(next) = line.steps.get(i + 1) {
    ///         assert_eq!(step.played.child(), Some(&next.position));
    ///     }
    /// }
    /// assert_eq!(line.end, PvEnd::GameOver);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn principal_variation(&self, position: &Position, max_plies: usize) -> Result<PrincipalVariation> {
        if max_plies == 0 {
            let over = self.rules.moves(position.board()).ending().is_some();
            let end = if over { PvEnd::GameOver } else { PvEnd::PlyLimit };
            return Ok(PrincipalVariation { steps: Vec::new(), end });
        }
        let moves = self.move_values(position)?;
        self.line_from(position, moves, max_plies, PV_SEARCH_NODES)
    }

    /// The value, the move values and the best line of `position` together, probing the
    /// position's moves once: as [`value`](Self::value), [`move_values`](Self::move_values) and
    /// [`principal_variation`](Self::principal_variation)`(position, max_plies)`.
    ///
    /// Cost: as `move_values` plus `principal_variation` without its first ply's probes.
    ///
    /// # Errors
    /// As [`principal_variation`](Self::principal_variation).
    ///
    /// # Examples
    /// ```
    /// use oware::probe::{Database, PvEnd};
    /// use oware::solver::{self, BuildConfig, Silent};
    /// use oware::{Error, Position, Ruleset};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let config = BuildConfig { rules: Ruleset::Awari, max_stones: 4, dir: dir.path().into(), max_memory: None };
    /// solver::build(&config, &Silent)?;
    /// let db = Database::open(dir.path(), Ruleset::Awari)?;
    ///
    /// let pos: Position = "0 0 0 0 2 1 1 0 0 0 0 0".parse()?;
    /// let a = db.analyse(&pos, 60)?;
    /// assert_eq!(a.value, db.value(&pos)?);
    /// assert_eq!(a.moves, db.move_values(&pos)?);
    /// assert_eq!(a.line, db.principal_variation(&pos, 60)?);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn analyse(&self, position: &Position, max_plies: usize) -> Result<Analysis> {
        let board = position.board();
        let moves = self.move_values(position)?;
        let value = if in_some_layer(board) {
            self.lookup(board)?
        } else {
            match (moves.iter().map(|m| m.value).max(), self.rules.moves(board).ending()) {
                (Some(best), _) => best,
                (None, ending) => ending.unwrap_or(0),
            }
        };
        let line = if max_plies == 0 {
            self.principal_variation(position, 0)?
        } else {
            self.line_from(position, moves.clone(), max_plies, PV_SEARCH_NODES)?
        };
        Ok(Analysis { value, moves, line })
    }

    /// The principal variation from `position`, whose move values are `moves`; `max_plies >= 1`;
    /// the searches of rule 2 look at no more than `search_limit` positions.
    fn line_from(
        &self,
        position: &Position,
        mut moves: Vec<MoveValue>,
        max_plies: usize,
        search_limit: usize,
    ) -> Result<PrincipalVariation> {
        let mut steps: Vec<PvStep> = Vec::new();
        let mut seen: HashMap<Position, usize> = HashMap::new();
        // Pits still to play from a search (rule 2), the next one last.
        let mut plan: Vec<u8> = Vec::new();
        let mut current = *position;
        let end = loop {
            let Some(value) = moves.iter().map(|m| m.value).max() else { break PvEnd::GameOver };
            seen.insert(current, steps.len());
            let played = self.choose(&current, &moves, value, &seen, &mut plan, search_limit)?;
            steps.push(PvStep { position: current, value, played });
            let MoveResult::Continues { child, .. } = played.result else { break PvEnd::GameOver };
            if let Some(&first_ply) = seen.get(&child) {
                break if steps[first_ply].value == 0 {
                    PvEnd::Repetition { first_ply }
                } else {
                    PvEnd::Cycle { first_ply }
                };
            }
            if self.rules.moves(child.board()).ending().is_some() {
                break PvEnd::GameOver;
            }
            if steps.len() >= max_plies {
                break PvEnd::PlyLimit;
            }
            current = child;
            moves = self.move_values(&current)?;
        };
        Ok(PrincipalVariation { steps, end })
    }

    /// Whether a move cannot lead back to its position: it ends the game, captures, or leaves
    /// the opponent without a legal move.
    fn makes_progress(&self, m: &MoveValue) -> bool {
        match &m.result {
            MoveResult::EndsGame => true,
            MoveResult::Continues { captured, child } => {
                *captured > 0 || self.rules.moves(child.board()).ending().is_some()
            }
        }
    }

    /// The move a principal variation plays at `current` (value `value`, legal moves `moves`,
    /// not empty), following the rules of [`principal_variation`](Self::principal_variation).
    fn choose(
        &self,
        current: &Position,
        moves: &[MoveValue],
        value: i8,
        seen: &HashMap<Position, usize>,
        plan: &mut Vec<u8>,
        search_limit: usize,
    ) -> Result<MoveValue> {
        let best: Vec<MoveValue> = moves.iter().filter(|m| m.value == value).copied().collect();
        if let Some(m) = best.iter().find(|m| self.makes_progress(m)) {
            plan.clear();
            return Ok(*m);
        }
        if plan.is_empty() && value != 0 {
            *plan = self.path_to_progress(current, moves, seen, search_limit)?.unwrap_or_default();
        }
        if let Some(pit) = plan.pop() {
            if let Some(m) = best.iter().find(|m| m.pit == pit) {
                return Ok(*m);
            }
            plan.clear(); // cannot happen: the search followed best moves
        }
        let fresh = best.iter().find(|m| m.child().is_some_and(|c| !seen.contains_key(c)));
        // `best` is not empty: `value` is the largest move value.
        Ok(*fresh.or(best.first()).unwrap_or(&moves[0]))
    }

    /// A shortest sequence of best moves from `start` (whose legal moves are `start_moves`) to a
    /// position with a best move that makes progress, avoiding the positions in `seen`: its
    /// pits, the first move last. `None` when the search gives up after `limit` positions or
    /// finds none.
    fn path_to_progress(
        &self,
        start: &Position,
        start_moves: &[MoveValue],
        seen: &HashMap<Position, usize>,
        limit: usize,
    ) -> Result<Option<Vec<u8>>> {
        struct Node {
            parent: usize,
            pit: u8,
            moves: Vec<MoveValue>,
        }
        let mut visited: HashSet<Position> = seen.keys().copied().collect();
        visited.insert(*start);
        let mut nodes = vec![Node { parent: usize::MAX, pit: 0, moves: start_moves.to_vec() }];
        let mut next = 0;
        while next < nodes.len() {
            let value = nodes[next].moves.iter().map(|m| m.value).max();
            let children: Vec<(u8, Position)> = nodes[next]
                .moves
                .iter()
                .filter(|m| Some(m.value) == value)
                .filter_map(|m| m.child().map(|c| (m.pit, *c)))
                .collect();
            for (pit, child) in children {
                if !visited.insert(child) {
                    continue;
                }
                if nodes.len() >= limit {
                    return Ok(None);
                }
                let moves = self.move_values(&child)?;
                let best = moves.iter().map(|m| m.value).max();
                let found = moves.iter().any(|m| Some(m.value) == best && self.makes_progress(m));
                nodes.push(Node { parent: next, pit, moves });
                if found || best.is_none() {
                    let mut path = Vec::new();
                    let mut at = nodes.len() - 1;
                    while at != 0 {
                        path.push(nodes[at].pit);
                        at = nodes[at].parent;
                    }
                    return Ok(Some(path));
                }
            }
            next += 1;
        }
        Ok(None)
    }
}

/// Checks that `dir` is a directory or does not exist.
fn check_dir(dir: &Path) -> Result<()> {
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => Err(Error::io(
            dir,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a directory"),
        )),
        _ => Ok(()),
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
        assert_eq!(format_share(12.0), "12");
        assert_eq!(format_share(0.5), "0.5");
    }

    #[test]
    fn no_layer_above_48() {
        let db = Database::open("/nonexistent-oware-dir", Ruleset::Awari).unwrap();
        assert!(matches!(db.layer(49), Err(Error::LayerMissing { layer: 49, .. })));
        assert!(matches!(db.layer(u32::MAX), Err(Error::LayerMissing { .. })));
    }

    /// Without the search of rule 2, winning lines of small layers do go round in circles (the
    /// review's bug); such a line is reported as a cycle, never as endless play.
    #[test]
    fn cycles_without_the_search() {
        let dir = tempfile::tempdir().unwrap();
        let config = crate::solver::BuildConfig {
            rules: Ruleset::Awari,
            max_stones: 8,
            dir: dir.path().to_path_buf(),
            max_memory: None,
        };
        crate::solver::build(&config, &crate::solver::Silent).unwrap();
        let db = Database::open(dir.path(), Ruleset::Awari).unwrap();
        let (mut cycles, mut with_search) = (0, 0);
        for n in 1..=8 {
            for (_, board) in crate::index::LayerWalker::new(n, 0..layer_size(n)).unwrap() {
                let p = Position::new(board).unwrap();
                let moves = db.move_values(&p).unwrap();
                let line = db.line_from(&p, moves.clone(), 200, 0).unwrap();
                match line.end {
                    PvEnd::Cycle { first_ply } => {
                        assert_ne!(line.steps[first_ply].value, 0, "{p}");
                        cycles += 1;
                        let full = db.line_from(&p, moves, 200, PV_SEARCH_NODES).unwrap();
                        with_search += u32::from(matches!(full.end, PvEnd::Cycle { .. }));
                    }
                    PvEnd::Repetition { first_ply } => assert_eq!(line.steps[first_ply].value, 0, "{p}"),
                    PvEnd::GameOver | PvEnd::PlyLimit => {}
                }
            }
        }
        eprintln!("layers 1..=8 without the search: {cycles} cycles; with it: {with_search}");
        assert!(cycles > 0);
        assert_eq!(with_search, 0);
    }

    #[test]
    fn file_as_dir_is_an_error() {
        let f = tempfile::NamedTempFile::new().unwrap();
        assert!(matches!(Database::open(f.path(), Ruleset::Awari), Err(Error::Io { .. })));
    }
}
