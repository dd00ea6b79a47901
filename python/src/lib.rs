//! The Python module `oware._oware` (re-exported as `oware`): a `Database` probed from Python,
//! one position at a time or a NumPy batch in parallel without the GIL.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use numpy::ndarray::ArrayView2;
use numpy::{PyArray1, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use oware_core::error::{ErrorKind, FileContent};
use oware_core::line::PvEnd;
use oware_core::probe::Database as Probe;
use oware_core::storage::{DatabaseDir, ReadMode};
use oware_core::{Error as OwareError, Position, Ruleset};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyList};
use rayon::prelude::*;
use rayon::ThreadPool;

create_exception!(oware, Error, PyException, "Every error of the package (the CLI's message).");
create_exception!(oware, InvalidPosition, Error, "A board that is not 12 counts of 0..48 stones with at most 48 in all.");
create_exception!(oware, MissingLayer, Error, "A layer the answer needs is not built.");
create_exception!(oware, DamagedFile, Error, "A layer file is damaged (header, size, checksum, a pack block).");
create_exception!(oware, RulesetMismatch, Error, "A layer file holds another ruleset's or layer's values.");

/// The Python exception for an error, with the bindings' message ([`OwareError::binding_message`]).
fn py_err(e: &OwareError) -> PyErr {
    py_err_msg(e, e.binding_message())
}

/// The Python exception of an error, with message `msg`: the one table from error kinds to
/// exception classes (`oware.Error` for any kind without a class of its own).
fn py_err_msg(e: &OwareError, msg: String) -> PyErr {
    match e.kind() {
        ErrorKind::InvalidPosition | ErrorKind::NotInLayer | ErrorKind::IndexOutOfRange => InvalidPosition::new_err(msg),
        ErrorKind::LayerMissing | ErrorKind::CompanionMissing(_) => MissingLayer::new_err(msg),
        ErrorKind::Damaged => DamagedFile::new_err(msg),
        ErrorKind::Foreign => RulesetMismatch::new_err(msg),
        _ => Error::new_err(msg),
    }
}

/// The worker threads of batches and verification, one pool per process.
///
/// After `fork` (`multiprocessing`'s default start method on Linux before Python 3.14) the child
/// has the parent's memory but none of its threads: a pool made before the fork would wait
/// forever for workers that are not there. So the pool remembers the process that made it, and a
/// child makes its own on first use (the parent's is left alone: its threads are not the
/// child's to stop).
fn pool() -> PyResult<Arc<ThreadPool>> {
    static POOL: Mutex<Option<(u32, Arc<ThreadPool>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut slot = POOL.lock().unwrap_or_else(|e| e.into_inner());
    match slot.as_ref() {
        Some((owner, pool)) if *owner == pid => Ok(Arc::clone(pool)),
        _ => {
            if let Some(inherited) = slot.take() {
                std::mem::forget(inherited);
            }
            let pool = Arc::new(rayon::ThreadPoolBuilder::new().build().map_err(|e| Error::new_err(format!("cannot start worker threads: {e}")))?);
            *slot = Some((pid, Arc::clone(&pool)));
            Ok(pool)
        }
    }
}

/// A path argument: `str`, `bytes` or any `os.PathLike` (whose `__fspath__` may give either).
/// Bytes are taken as they are, so a path that is not valid UTF-8 opens too.
fn path_arg(obj: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    let fspath = obj.py().import("os")?.call_method1("fspath", (obj,)).map_err(|_| PyTypeError::new_err("path must be a str, bytes or os.PathLike"))?;
    if let Ok(bytes) = fspath.downcast::<PyBytes>() {
        return Ok(PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(bytes.as_bytes())));
    }
    fspath.extract()
}

/// An integer argument `name` within `lo..=hi`: a ValueError naming the argument and its range
/// for any other int (negative, or too large for any machine type, included), a TypeError for
/// a value that is not an int. The bounds are the program's, where it has the same option.
fn int_arg(value: &Bound<'_, PyAny>, name: &str, lo: i128, hi: i128) -> PyResult<i128> {
    let out_of_range = || {
        let shown = value.str().map_or_else(|_| "?".to_string(), |s| s.to_string_lossy().into_owned());
        PyValueError::new_err(format!("{name} must be an integer in {lo}..={hi}, not {shown}"))
    };
    if !value.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an integer, not {}",
            value.get_type().name().map_or_else(|_| "?".to_string(), |n| n.to_string())
        )));
    }
    match value.extract::<i128>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(out_of_range()),
    }
}

/// [`int_arg`] of an optional argument.
fn opt_int_arg(value: Option<&Bound<'_, PyAny>>, name: &str, lo: i128, hi: i128) -> PyResult<Option<i128>> {
    value.map(|v| int_arg(v, name, lo, hi)).transpose()
}

/// The longest line `principal_variation` gives.
const MAX_LINE_PLIES: i128 = 10_000;

/// A board from any sequence of 12 integers.
fn board(obj: &Bound<'_, PyAny>) -> PyResult<Position> {
    // The length first: a long sequence is refused before any of it is copied.
    if let Ok(n) = obj.len() {
        if n != 12 {
            return Err(InvalidPosition::new_err(format!("a board has 12 pits, not {n}")));
        }
    }
    let counts: Vec<i64> = obj.extract().map_err(|_| InvalidPosition::new_err("a board is a sequence of 12 integers (mover-first pit counts)"))?;
    if counts.len() != 12 {
        return Err(InvalidPosition::new_err(format!("a board has 12 pits, not {}", counts.len())));
    }
    let mut b = [0u8; 12];
    for (i, &c) in counts.iter().enumerate() {
        if !(0..=48).contains(&c) {
            return Err(InvalidPosition::new_err(format!("pit {i} holds {c} stones: a pit holds 0..48")));
        }
        b[i] = c as u8;
    }
    Position::new(b).map_err(|e| py_err(&e))
}

/// A database directory opened for one ruleset: native layers (`path/RULES/layer-NN.owdb`),
/// packs (`path/RULES/layer-NN.owpk`) or, for awari, the published 2002 files (`path/scores.N`,
/// plain or `.zst`). Layers are opened lazily, each checked (header, checksum) on first use.
///
/// Thread-safe: share one Database between threads.
#[pyclass(frozen, module = "oware")]
struct Database {
    db: Probe,
    path: PathBuf,
}

#[pymethods]
impl Database {
    /// Opens `path` (a str, bytes or os.PathLike) for ruleset `rules` (one of
    /// `oware.RULESETS`). Nothing is read yet but the directory's existence: a path that does not
    /// exist or is not a directory raises `oware.Error` here, not on every probe after.
    ///
    /// `reads`: "map" (the default) maps the layer files, one memory read per value, the
    /// fastest; but a file truncated in place by another program while mapped ends the process
    /// (SIGBUS) when a removed page is read. "pread" reads each value with a system call (about a
    /// microsecond; layers are read whole into memory when opened while the copies fit in 1 GiB), so
    /// a file truncated or rewritten under the program raises `DamagedFile` instead: for
    /// long-running programs whose files may change (packs and bounds files are still mapped).
    #[new]
    #[pyo3(signature = (path, rules = "awari", verify_checksums = true, reads = "map"))]
    fn new(path: &Bound<'_, PyAny>, rules: &str, verify_checksums: bool, reads: &str) -> PyResult<Database> {
        let path = path_arg(path)?;
        let ruleset: Ruleset = rules.parse().map_err(|e: String| Error::new_err(e))?;
        let mode = match reads {
            "map" => ReadMode::Map,
            "pread" => ReadMode::Pread,
            other => return Err(PyValueError::new_err(format!("reads is \"map\" or \"pread\", not {other:?}"))),
        };
        let dir = DatabaseDir::detect(&path, ruleset).map_err(|e| py_err(&e))?;
        Ok(Database { db: Probe::from_dir(dir).verify_checksums(verify_checksums).read_mode(mode), path })
    }

    /// The ruleset's name.
    #[getter]
    fn rules(&self) -> &'static str {
        self.db.rules().name()
    }

    /// The directory given.
    #[getter]
    fn path(&self) -> &std::ffi::OsStr {
        // As `os.fsdecode` gives it: a name that is not UTF-8 keeps its bytes (surrogate escapes),
        // so the path opens again.
        self.path.as_os_str()
    }

    fn __repr__(&self) -> String {
        format!("oware.Database({:?}, rules={:?})", self.path, self.db.rules().name())
    }

    /// The layers present (files there, not yet checked).
    fn layers_present(&self) -> Vec<u32> {
        self.db.layers_present()
    }

    /// Checks that no layer file opened so far changed since it was opened (its size or its
    /// modification time): raises `oware.DamagedFile` naming the first one truncated, grown or
    /// rewritten in place. A long-running program calls it before a batch;
    /// reopen the Database to read files replaced on purpose. Cost: one `stat` per open layer.
    fn check_open_files(&self, py: Python<'_>) -> PyResult<()> {
        py.allow_threads(|| self.db.check_open_files()).map_err(|e| py_err(&e))
    }

    /// The exact value of `board` (12 mover-first counts) for its player to move.
    fn value(&self, py: Python<'_>, board: &Bound<'_, PyAny>) -> PyResult<i8> {
        let pos = self::board(board)?;
        py.allow_threads(|| self.db.value(&pos)).map_err(|e| py_err(&e))
    }

    /// Six entries, one per pit of the mover (0..5): the move's exact value, or None when the
    /// move is illegal.
    fn move_values(&self, py: Python<'_>, board: &Bound<'_, PyAny>) -> PyResult<Vec<Option<i8>>> {
        let pos = self::board(board)?;
        let moves = py.allow_threads(|| self.db.move_values(&pos)).map_err(|e| py_err(&e))?;
        let mut out = vec![None; 6];
        for m in moves {
            out[m.pit as usize] = Some(m.value);
        }
        Ok(out)
    }

    /// The pits (0..5) of every best move, in increasing order (empty when no move is legal).
    fn best_moves(&self, py: Python<'_>, board: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        let pos = self::board(board)?;
        let best = py.allow_threads(|| self.db.best_moves(&pos)).map_err(|e| py_err(&e))?;
        // Integers, not bytes (pyo3 turns a Vec<u8> into bytes).
        Ok(best.iter().map(|m| u32::from(m.pit)).collect())
    }

    /// The depth to capture of `board` (`oware build --dtc`): how many plies best play takes to
    /// the value's first capture (by either side) or the end of the game, the winner hurrying and
    /// the loser delaying, both keeping the value; 0 for a game already over. None when the value
    /// is 0 (no capture can be forced). `best_moves` follows the depths when they are built.
    ///
    /// Raises MissingLayer when the layer's depths (`RULES/dtc-NN.owdb`) are not built (the
    /// message names `oware build --dtc`), or its values.
    fn dtc(&self, py: Python<'_>, board: &Bound<'_, PyAny>) -> PyResult<Option<u16>> {
        let pos = self::board(board)?;
        py.allow_threads(|| self.db.dtc(&pos)).map_err(|e| py_err(&e))
    }

    /// Six entries, one per pit of the mover (0..5), beside `move_values`: the depth to capture
    /// left after the move, 0 when it captures or ends the game, otherwise the depth of the
    /// position it leads to; None when the move is illegal or leads to a position of value 0.
    /// A position of non-zero value has depth 1 + the least (winner) or greatest (loser) depth
    /// of its moves that keep the value (those of `move_values` equal to `value`).
    ///
    /// Raises MissingLayer when a child's depths are not built (`oware build --dtc`).
    fn move_dtcs(&self, py: Python<'_>, board: &Bound<'_, PyAny>) -> PyResult<Vec<Option<u16>>> {
        use oware_core::probe::MoveResult;
        let pos = self::board(board)?;
        let depths = py.allow_threads(|| -> Result<Vec<(u8, Option<u16>)>, OwareError> {
            self.db
                .move_values(&pos)?
                .into_iter()
                .map(|m| match m.result {
                    // MoveValue::dtc is None for a child without a dtc file too: asked of the
                    // child, that is an error.
                    MoveResult::Continues { captured: 0, child } => Ok((m.pit, self.db.dtc(&child)?)),
                    _ => Ok((m.pit, Some(0))),
                })
                .collect()
        });
        let mut out = vec![None; 6];
        for (pit, d) in depths.map_err(|e| py_err(&e))? {
            out[pit as usize] = d;
        }
        Ok(out)
    }

    /// A best line from `board`: `{"steps": [{"board", "value", "pit", "captured"}...], "end":
    /// ...}` where each step's board is mover-first for the player making the move, `captured`
    /// is None for a move that ends the game, and `end` is "game_over", "endless_play" (value 0
    /// and no capture can come any more), "repetition" (endless play, value 0), "cycle" or
    /// "ply_limit" (the names of `oware query --json`).
    /// `max_plies`: 0..=10000 (default 40).
    #[pyo3(signature = (board, max_plies = None))]
    fn principal_variation<'py>(&self, py: Python<'py>, board: &Bound<'py, PyAny>, max_plies: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyDict>> {
        let max_plies = opt_int_arg(max_plies, "max_plies", 0, MAX_LINE_PLIES)?.unwrap_or(40) as usize;
        let pos = self::board(board)?;
        let pv = py.allow_threads(|| self.db.principal_variation(&pos, max_plies)).map_err(|e| py_err(&e))?;
        let steps = PyList::empty(py);
        for s in &pv.steps {
            let d = PyDict::new(py);
            d.set_item("board", s.position.board().iter().map(|&c| u32::from(c)).collect::<Vec<u32>>())?;
            d.set_item("value", s.value)?;
            d.set_item("pit", s.played.pit)?;
            d.set_item("captured", s.played.captured())?;
            steps.append(d)?;
        }
        let out = PyDict::new(py);
        out.set_item("steps", steps)?;
        let end = match pv.end {
            PvEnd::GameOver => "game_over",
            PvEnd::Repetition { .. } => "repetition",
            PvEnd::Cycle { .. } => "cycle",
            PvEnd::EndlessPlay => "endless_play",
            PvEnd::PlyLimit => "ply_limit",
        };
        out.set_item("end", end)?;
        Ok(out)
    }

    /// The values of a batch: `boards` is a C-contiguous NumPy array of shape (N, 12) of any
    /// integer type, one mover-first board per row; returns an int8 array of N values. Runs in
    /// parallel on every core with the GIL released. An array in the other byte order, or not
    /// aligned in memory, is first copied into a native, aligned one (one pass over it).
    ///
    /// Raises TypeError for a non-integer or non-contiguous array, ValueError for a wrong shape,
    /// InvalidPosition naming the first bad row (a count outside 0..48, more than 48 stones).
    fn values<'py>(&self, py: Python<'py>, boards: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<i8>>> {
        self.batch_array(py, boards, |db, pos| db.value(pos))
    }

    /// The depths to capture of a batch (`oware build --dtc`; see `dtc`): `boards` as for
    /// `values` (a C-contiguous NumPy array of shape (N, 12) of any integer type); returns an
    /// int32 array of N depths, -1 where the value is 0 (no depth). Runs in parallel on every
    /// core with the GIL released.
    ///
    /// Raises as `values`, and MissingLayer naming the first row whose layer's depths (or values)
    /// are not built.
    fn dtcs<'py>(&self, py: Python<'py>, boards: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<i32>>> {
        self.batch_array(py, boards, |db, pos| db.dtc(pos).map(|d| d.map_or(-1, i32::from)))
    }
}

impl Database {
    /// `probe` of every row of `boards` (a NumPy integer array of shape (N, 12), in any byte
    /// order or alignment: copied first when not native and aligned), in parallel on the pool
    /// with the GIL released.
    fn batch_array<'py, R, F>(&self, py: Python<'py>, boards: &Bound<'py, PyAny>, probe: F) -> PyResult<Bound<'py, PyArray1<R>>>
    where
        R: numpy::Element + Send,
        F: Fn(&Probe, &Position) -> Result<R, OwareError> + Sync,
    {
        let converted;
        let boards = match native_and_aligned(boards)? {
            Some(copy) => {
                converted = copy;
                &converted
            }
            None => boards,
        };
        macro_rules! try_dtype {
            ($($t:ty),*) => {$(
                if let Ok(a) = boards.downcast::<PyArrayDyn<$t>>() {
                    if !a.is_c_contiguous() {
                        return Err(PyTypeError::new_err("boards must be a C-contiguous array (use numpy.ascontiguousarray)"));
                    }
                    if a.ndim() != 2 || a.shape()[1] != 12 {
                        return Err(PyValueError::new_err(format!("boards must have shape (N, 12), not {:?}", a.shape())));
                    }
                    let ro = a.readonly();
                    let view = ro.as_array().into_dimensionality::<numpy::ndarray::Ix2>().map_err(|e| PyValueError::new_err(e.to_string()))?;
                    let out = self.batch(py, view, &probe)?;
                    return Ok(PyArray1::from_vec(py, out));
                }
            )*};
        }
        try_dtype!(u8, i8, i16, u16, i32, u32, i64, u64);
        Err(PyTypeError::new_err("boards must be a NumPy integer array of shape (N, 12)"))
    }

    fn batch<T, R, F>(&self, py: Python<'_>, view: ArrayView2<'_, T>, probe: &F) -> PyResult<Vec<R>>
    where
        T: Copy + Into<i128> + Send + Sync,
        R: Send,
        F: Fn(&Probe, &Position) -> Result<R, OwareError> + Sync,
    {
        let rows = view.as_slice().ok_or_else(|| PyTypeError::new_err("boards must be C-contiguous"))?;
        let n = view.nrows();
        let pool = pool()?;
        let result: Result<Vec<R>, (usize, PyErrKind)> = py.allow_threads(|| {
            pool.install(|| {
                (0..n)
                    .into_par_iter()
                    .with_min_len(4096)
                    .map(|r| {
                        let row = &rows[r * 12..r * 12 + 12];
                        let mut b = [0u8; 12];
                        for (i, &c) in row.iter().enumerate() {
                            let c: i128 = c.into();
                            if !(0..=48).contains(&c) {
                                return Err((r, PyErrKind::Invalid(format!("pit {i} holds {c} stones: a pit holds 0..48"))));
                            }
                            b[i] = c as u8;
                        }
                        let pos = Position::new(b).map_err(|e| (r, PyErrKind::Oware(e)))?;
                        probe(&self.db, &pos).map_err(|e| (r, PyErrKind::Oware(e)))
                    })
                    .collect()
            })
        });
        result.map_err(|(row, kind)| match kind {
            PyErrKind::Invalid(m) => InvalidPosition::new_err(format!("row {row}: {m}")),
            PyErrKind::Oware(e) => py_err_msg(&e, format!("row {row}: {}", e.binding_message())),
        })
    }
}

/// `boards` copied into native byte order and aligned memory when it is a NumPy array that is
/// neither (NumPy keeps both flags; reading such memory as Rust slices would be wrong, or
/// undefined behaviour); `None` when it can be read as it is (or is not an array at all: the
/// caller's checks name the problem).
fn native_and_aligned<'py>(boards: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let (Ok(dtype), Ok(flags)) = (boards.getattr("dtype"), boards.getattr("flags")) else {
        return Ok(None);
    };
    let swapped = !dtype.getattr("isnative")?.extract::<bool>()?;
    let aligned = flags.getattr("aligned")?.extract::<bool>()?;
    if !swapped && aligned {
        return Ok(None);
    }
    let native = if swapped { dtype.call_method1("newbyteorder", ("=",))? } else { dtype };
    // `astype` with copy: a new array, aligned, C-ordered, in the native byte order.
    Ok(Some(boards.call_method1("astype", (native, "C"))?))
}

/// Why a row of a batch failed (built without the GIL, turned into an exception after).
enum PyErrKind {
    Invalid(String),
    Oware(OwareError),
}

/// The layers asked of `verify`: `layers` (an int N, or a pair (A, B), inclusive) or
/// `max_stones` (0..=N); `None` for every layer on disk.
fn verify_range(layers: Option<&Bound<'_, PyAny>>, max_stones: Option<u32>) -> PyResult<Option<std::ops::RangeInclusive<u32>>> {
    let top = oware_core::index::MAX_STONES;
    let check = |a: i64, b: i64| -> PyResult<std::ops::RangeInclusive<u32>> {
        if a < 0 || b > i64::from(top) || a > b {
            return Err(PyValueError::new_err(format!("layers {a}..{b}: give a range within 0..{top}")));
        }
        Ok(a as u32..=b as u32)
    };
    match (layers, max_stones) {
        (Some(_), Some(_)) => Err(PyValueError::new_err("give layers or max_stones, not both")),
        (None, Some(m)) => check(0, i64::from(m)).map(Some),
        (None, None) => Ok(None),
        (Some(l), None) => {
            if let Ok(n) = l.extract::<i64>() {
                return check(n, n).map(Some);
            }
            let (a, b): (i64, i64) = l.extract().map_err(|_| PyTypeError::new_err("layers is an int N or a pair (A, B)"))?;
            check(a, b).map(Some)
        }
    }
}

/// Verifies a database directory, as `oware verify --json` does, and returns the report as a
/// dict: the fields of `oware verify --json` (`ok`, `summary`, `layers` with each layer's
/// `status` and `first_mismatches`, `bounds`, `dtc`, `facts`, `manifest`, totals) plus
/// `outcome` (`ok`, `wrong_values`, `damaged_layer`, `damaged_bounds`, `damaged_dtc`,
/// `manifest_mismatch`, `missing_layer`, `missing_bounds` or `missing_dtc`) and `exit_code`
/// (that of `oware verify`).
///
/// Parameters: `path`, the directory as a str, bytes or os.PathLike (native layers, packs, or awari's published `scores.N`);
/// `rules`, a ruleset of `oware.RULESETS`; `layers`, an int N or a pair (A, B) of layers to
/// re-derive, or `max_stones` N for 0..N; by default every layer on disk; `bounds`, require
/// every layer's forced-capture bounds; `dtc`, require the depths to capture of every layer
/// asked for (without them, the bounds and dtc files present are checked). Problems in the files are in the report, not raised.
///
/// Cost: every layer asked for is read, checksummed and re-derived in parallel on every core
/// with the GIL released (minutes for large layers; not interruptible).
///
/// Raises Error for an unknown ruleset or a path that is not a directory, MissingLayer when no
/// layer is on disk and none were asked for, ValueError/TypeError for bad layer arguments.
#[pyfunction]
#[pyo3(signature = (path, rules = "awari", layers = None, max_stones = None, bounds = false, dtc = false))]
fn verify<'py>(
    py: Python<'py>,
    path: &Bound<'py, PyAny>,
    rules: &str,
    layers: Option<&Bound<'py, PyAny>>,
    max_stones: Option<&Bound<'py, PyAny>>,
    bounds: bool,
    dtc: bool,
) -> PyResult<Bound<'py, PyAny>> {
    use oware_core::verify::{verify_directory, NoObserver, VerifyOptions};
    let max_stones = opt_int_arg(max_stones, "max_stones", 0, i128::from(oware_core::index::MAX_STONES))?.map(|n| n as u32);
    let path = path_arg(path)?;
    let ruleset: Ruleset = rules.parse().map_err(|e: String| Error::new_err(e))?;
    let options = VerifyOptions { layers: verify_range(layers, max_stones)?, require: FileContent::selected([(bounds, FileContent::Bounds), (dtc, FileContent::Dtc)]), max_memory: None };
    let dir = DatabaseDir::detect(&path, ruleset).map_err(|e| py_err(&e))?;
    let pool = pool()?;
    let json = py.allow_threads(|| pool.install(|| verify_directory(&dir, &options, &mut NoObserver).and_then(|r| r.to_json()))).map_err(|e| py_err(&e))?;
    py.import("json")?.call_method1("loads", (json,))
}

/// The search engine: best moves and scores from any position, exact inside the built layers
/// (and wherever the search proves them), estimates above them. Thread-safe; searches release
/// the GIL.
#[pyclass(frozen, module = "oware")]
struct Engine {
    engine: oware_core::search::Engine,
}

#[pymethods]
impl Engine {
    /// An engine for `rules` probing the layers of the database in `path` (every layer built
    /// from 0 up, or up to `max_table`); `path=None` searches with the evaluation alone.
    /// `hash_mb`: its transposition table; `threads`: threads of timed searches.
    #[new]
    /// `hash_mb`: 1..=65536 (default 64); `threads`: 1..=1024 (default 1); `max_table`: 0..=48
    /// (as the program's `--hash`, `--threads` and `--max-table`).
    #[pyo3(signature = (path = None, rules = "awari", hash_mb = None, threads = None, max_table = None))]
    fn new(
        path: Option<&Bound<'_, PyAny>>,
        rules: &str,
        hash_mb: Option<&Bound<'_, PyAny>>,
        threads: Option<&Bound<'_, PyAny>>,
        max_table: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Engine> {
        let ruleset: Ruleset = rules.parse().map_err(|e: String| Error::new_err(e))?;
        let hash_mb = opt_int_arg(hash_mb, "hash_mb", 1, 65536)?.unwrap_or(64) as usize;
        let threads = opt_int_arg(threads, "threads", 1, 1024)?.unwrap_or(1) as usize;
        let max_table = opt_int_arg(max_table, "max_table", 0, i128::from(oware_core::index::MAX_STONES))?.map(|n| n as u32);
        let db = match path {
            None => None,
            Some(p) => {
                let dir = DatabaseDir::detect(&path_arg(p)?, ruleset).map_err(|e| py_err(&e))?;
                Some(Arc::new(Probe::from_dir(dir)))
            }
        };
        let mut engine = oware_core::search::Engine::new(ruleset, db, max_table).map_err(|e| py_err(&e))?;
        engine.set_hash_mb(hash_mb);
        engine.set_threads(threads);
        Ok(Engine { engine })
    }

    /// The largest layer probed (layers 0..=n are), or None.
    #[getter]
    fn tables(&self) -> Option<u32> {
        self.engine.tables()
    }

    /// Forgets earlier searches (a new game).
    fn clear(&self) {
        self.engine.clear();
    }

    /// Searches `board` (12 mover-first counts) for `movetime_ms` milliseconds (1..=86400000),
    /// or to `depth` (1..=100), or about `nodes` nodes (1 or more; 1 s when none is given);
    /// `captured=(mover, opponent)` (each 0..=48, making 48 with the board) scores the game's
    /// final result (the 25-stone rule ends it). Returns a dict: `best_pit` (None when the game
    /// is over), `score` (stones, mover's view), `exact`, `depth`, `nodes`, `nps`, `seconds`,
    /// `pv` (a list of pits, 0..5 of the player to move at each ply, as `best_pit`) and
    /// `moves` (`{"pit", "score", "bound", "exact"}` for every move). `history`: the game's
    /// positions since its last capture (boards, each mover-first for its player to move,
    /// oldest first, the last one just before `board`; at most 10000); each must lead to the
    /// next, and the last to `board`, by a move that captures nothing (InvalidPosition
    /// otherwise). A move that repeats one of them ends the game as the rules say, and is
    /// scored so. Bad numbers raise ValueError naming the argument.
    #[pyo3(signature = (board, movetime_ms = None, depth = None, nodes = None, captured = None, history = None))]
    #[allow(clippy::too_many_arguments)]
    fn analyse<'py>(
        &self,
        py: Python<'py>,
        board: &Bound<'py, PyAny>,
        movetime_ms: Option<&Bound<'py, PyAny>>,
        depth: Option<&Bound<'py, PyAny>>,
        nodes: Option<&Bound<'py, PyAny>>,
        captured: Option<&Bound<'py, PyAny>>,
        history: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        use oware_core::search::{Control, Limits, MoverCaptured, Root, ScoreBound, MAX_DEPTH, MAX_HISTORY};
        use std::time::Duration;
        let pos = self::board(board)?;
        let movetime_ms = opt_int_arg(movetime_ms, "movetime_ms", 1, 86_400_000)?.map(|v| v as u64);
        let depth = opt_int_arg(depth, "depth", 1, i128::from(MAX_DEPTH))?.map(|v| v as u32);
        let nodes = opt_int_arg(nodes, "nodes", 1, i128::from(u64::MAX))?.map(|v| v as u64);
        let captured = match captured {
            None => None,
            Some(c) => {
                let pair: (Bound<'py, PyAny>, Bound<'py, PyAny>) =
                    c.extract().map_err(|_| PyTypeError::new_err("captured must be a pair (mover, opponent) of integers"))?;
                let m = int_arg(&pair.0, "captured[0]", 0, 48)? as u32;
                let o = int_arg(&pair.1, "captured[1]", 0, 48)? as u32;
                if m + o + pos.stones() != 48 {
                    return Err(PyValueError::new_err(format!("captured {m} + {o} and {} on the board do not make 48", pos.stones())));
                }
                Some(MoverCaptured { mover: m, opponent: o })
            }
        };
        let movetime = match (movetime_ms, depth, nodes) {
            (Some(ms), _, _) => Some(Duration::from_millis(ms)),
            (None, None, None) => Some(Duration::from_secs(1)),
            _ => None,
        };
        let limits = Limits { depth, movetime, nodes, all_moves: true };
        let history = match history {
            None => Vec::new(),
            Some(h) => {
                // The length first: a long sequence is refused before any of it is read.
                let len = h.len().map_err(|_| PyTypeError::new_err("history must be a sequence of boards"))?;
                if len > MAX_HISTORY {
                    return Err(PyValueError::new_err(format!("history holds {len} positions: at most {MAX_HISTORY}")));
                }
                let items: Vec<Bound<'py, PyAny>> = h.extract().map_err(|_| PyTypeError::new_err("history must be a sequence of boards"))?;
                items.iter().map(|b| self::board(b).map(|p| *p.board())).collect::<PyResult<Vec<_>>>()?
            }
        };
        let rules = self.engine.rules();
        for (i, h) in history.iter().enumerate() {
            let next = history.get(i + 1).unwrap_or(pos.board());
            if rules.quiet_move_between(h, next).is_none() {
                let after = if i + 1 == history.len() { "board".to_string() } else { format!("history[{}]", i + 1) };
                return Err(InvalidPosition::new_err(format!(
                    "history[{i}]: no move of {rules} leads from it to {after} without a capture (history is the game's positions since its last capture, oldest first)"
                )));
            }
        }
        let root = Root::in_game(pos, captured, history);
        let r = py.allow_threads(|| self.engine.search(&root, &limits, &Control::new(), &mut |_| {})).map_err(|e| py_err(&e))?;
        let out = PyDict::new(py);
        out.set_item("best_pit", r.best_pit)?;
        out.set_item("score", f64::from(r.score) / 100.0)?;
        out.set_item("exact", r.exact)?;
        out.set_item("depth", r.depth)?;
        out.set_item("nodes", r.nodes)?;
        out.set_item("nps", r.nps())?;
        out.set_item("seconds", r.seconds)?;
        // Integers, not bytes (pyo3 turns a Vec<u8> into bytes).
        out.set_item("pv", r.pv.iter().map(|&p| u32::from(p)).collect::<Vec<u32>>())?;
        let moves = PyList::empty(py);
        for m in &r.moves {
            let d = PyDict::new(py);
            d.set_item("pit", m.pit)?;
            d.set_item("score", f64::from(m.score) / 100.0)?;
            d.set_item(
                "bound",
                match m.bound {
                    ScoreBound::Equal => "exact",
                    ScoreBound::Upper => "upper",
                    ScoreBound::Lower => "lower",
                },
            )?;
            d.set_item("exact", m.exact)?;
            moves.append(d)?;
        }
        out.set_item("moves", moves)?;
        Ok(out)
    }

    fn __repr__(&self) -> String {
        format!("oware.Engine(rules={:?}, tables={:?})", self.engine.rules().name(), self.engine.tables())
    }
}

#[pymodule]
fn _oware(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Database>()?;
    m.add_class::<Engine>()?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add("Error", py.get_type::<Error>())?;
    m.add("InvalidPosition", py.get_type::<InvalidPosition>())?;
    m.add("MissingLayer", py.get_type::<MissingLayer>())?;
    m.add("DamagedFile", py.get_type::<DamagedFile>())?;
    m.add("RulesetMismatch", py.get_type::<RulesetMismatch>())?;
    m.add("RULESETS", Ruleset::names())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
