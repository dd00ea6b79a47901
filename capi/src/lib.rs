//! The C interface of `oware`: `liboware.so` and `include/oware.h` (generated from this file by
//! cbindgen; a test fails when the committed header is stale).
//!
//! A handle (`oware_db`) opens a database directory (native layers, packs, or the published 2002
//! files) for one ruleset; layers are opened lazily, on first use. Every function is
//! thread-safe: one handle may be probed from any number of threads at once. Return codes are 0
//! for success or the `oware` command's exit codes: 1 internal error, 2 bad argument (a NULL
//! pointer, invalid UTF-8, an unknown ruleset), 3 invalid position, 4 layer not built, 5 damaged
//! file, 6 a file of another ruleset, 7 I/O error, 8 verification failed (`oware_verify`). No panic crosses the boundary (each call
//! catches one and returns 1). The message of the last failure on the calling thread is kept for
//! `oware_last_error`.

#![allow(clippy::missing_safety_doc, non_camel_case_types)]

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

use oware_core::error::{ErrorKind, FileContent};
use oware_core::probe::Database;
use oware_core::storage::{DatabaseDir, ReadMode};
use oware_core::{Error, Position, Ruleset};

/// An open database: a directory and a ruleset. Opaque to C.
pub struct oware_db {
    db: Arc<Database>,
    /// The search engine over the layers, made by the first `oware_analyse`.
    engine: OnceLock<oware_core::search::Engine>,
}

/// Success.
pub const OWARE_OK: c_int = 0;
/// An internal error (a bug; the message says what).
pub const OWARE_INTERNAL: c_int = 1;
/// A bad argument: a NULL pointer, a ruleset name that is not UTF-8 or unknown.
pub const OWARE_BAD_ARGUMENT: c_int = 2;
/// An invalid position (more than 48 stones).
pub const OWARE_INVALID_POSITION: c_int = 3;
/// A layer the probe needs is not built (its values; for `oware_dtc` and `oware_move_dtcs` also
/// its depths to capture, `oware build --dtc`).
pub const OWARE_MISSING_LAYER: c_int = 4;
/// A layer file is damaged (header, checksum, a pack block).
pub const OWARE_DAMAGED: c_int = 5;
/// A layer file holds another ruleset or layer.
pub const OWARE_RULESET_MISMATCH: c_int = 6;
/// An I/O or system error.
pub const OWARE_IO: c_int = 7;
/// `oware_verify`: some value, bounds entry or depth to capture does not follow from its
/// children, or a published fact is contradicted.
pub const OWARE_VERIFY_FAILED: c_int = 8;

// The codes above are the `oware` program's exit statuses, whose one table is the library's
// (`ErrorKind::exit_status`): written as numbers because cbindgen copies only literal constants
// into the header, and checked against that table here, when this crate compiles.
const _: () = {
    let codes = [
        (OWARE_INTERNAL, ErrorKind::Internal),
        (OWARE_BAD_ARGUMENT, ErrorKind::Usage),
        (OWARE_INVALID_POSITION, ErrorKind::InvalidPosition),
        (OWARE_MISSING_LAYER, ErrorKind::LayerMissing),
        (OWARE_DAMAGED, ErrorKind::Damaged),
        (OWARE_RULESET_MISMATCH, ErrorKind::Foreign),
        (OWARE_IO, ErrorKind::Io),
        (OWARE_VERIFY_FAILED, ErrorKind::VerificationFailed),
    ];
    let mut i = 0;
    while i < codes.len() {
        assert!(codes[i].0 == codes[i].1.exit_status(), "an OWARE_ code differs from the exit status of its kind");
        i += 1;
    }
};

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

fn remember(message: String) {
    LAST_ERROR.with(|e| *e.borrow_mut() = message);
}

/// The return code of an error of kind `kind`: its exit status ([`ErrorKind::exit_status`]) from
/// [`OWARE_INTERNAL`] to [`OWARE_IO`]; [`OWARE_INTERNAL`] for the kinds of higher statuses (a
/// verification's failure, which only `oware_verify` returns, from its report; not enough memory,
/// a distributed build's failure, an interruption, which have no code of their own here).
fn code(kind: ErrorKind) -> c_int {
    match kind.exit_status() {
        status @ OWARE_INTERNAL..=OWARE_IO => status,
        _ => OWARE_INTERNAL,
    }
}

/// The code for an error, its message ([`Error::binding_message`]) remembered.
fn fail(e: &Error) -> c_int {
    remember(e.binding_message());
    code(e.kind())
}

fn bad_argument(what: &str) -> c_int {
    remember(what.to_string());
    OWARE_BAD_ARGUMENT
}

/// Runs `f`, turning a panic into [`OWARE_INTERNAL`].
fn guard(f: impl FnOnce() -> c_int) -> c_int {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        remember("internal error: a panic was caught at the C boundary".into());
        OWARE_INTERNAL
    })
}

/// Runs the body of a call in [`guard`]: `Ok` returns [`OWARE_OK`], `Err` its code (the
/// failure's message already remembered).
fn call(f: impl FnOnce() -> Result<(), c_int>) -> c_int {
    guard(|| match f() {
        Ok(()) => OWARE_OK,
        Err(code) => code,
    })
}

/// Copies `message` into `buf` (`len` bytes), truncated and NUL-terminated. Nothing when `buf`
/// is NULL or `len` is 0.
unsafe fn copy_out(message: &str, buf: *mut c_char, len: usize) {
    if buf.is_null() || len == 0 {
        return;
    }
    let bytes = message.as_bytes();
    let k = bytes.len().min(len - 1);
    // SAFETY: the caller gives `len` writable bytes at `buf`.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), buf, k);
        *buf.add(k) = 0;
    }
}

unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str, c_int> {
    if p.is_null() {
        return Err(bad_argument(&format!("{what} is NULL")));
    }
    // SAFETY: the caller gives a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }.to_str().map_err(|_| bad_argument(&format!("{what} is not valid UTF-8")))
}

/// The directory `dir` and the ruleset `rules` (`awari` when NULL) of a call, read. The
/// directory is taken as the bytes it is (a Unix path need not be UTF-8).
///
/// # Safety
/// `dir` and `rules` (when not NULL) must be NUL-terminated strings.
unsafe fn dir_and_rules<'a>(dir: *const c_char, rules: *const c_char) -> Result<(&'a std::path::Path, Ruleset), c_int> {
    if dir.is_null() {
        return Err(bad_argument("dir is NULL"));
    }
    // SAFETY: as documented for the caller.
    let bytes = unsafe { CStr::from_ptr(dir) }.to_bytes();
    let dir = std::path::Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(bytes));
    let ruleset: Ruleset = if rules.is_null() {
        Ruleset::Awari
    } else {
        // SAFETY: as documented for the caller.
        unsafe { text(rules, "rules") }?.parse().map_err(|e: String| bad_argument(&e))?
    };
    Ok((dir, ruleset))
}

unsafe fn position(pits: *const u8) -> Result<Position, c_int> {
    if pits.is_null() {
        return Err(bad_argument("pits is NULL"));
    }
    let mut board = [0u8; 12];
    // SAFETY: the caller gives 12 readable bytes.
    unsafe { std::ptr::copy_nonoverlapping(pits, board.as_mut_ptr(), 12) };
    Position::new(board).map_err(|e| fail(&e))
}

/// The handle and the position of a probe: [`OWARE_BAD_ARGUMENT`] when `db` is NULL or
/// `outputs_null` (one of the call's output pointers is NULL; `names` lists `db` and them for the
/// message), then as [`position`].
///
/// # Safety
/// `db` is NULL or a handle from `oware_open` not yet closed; `pits` is NULL or points to 12
/// bytes.
unsafe fn probe_args<'a>(db: *const oware_db, pits: *const u8, outputs_null: bool, names: &str) -> Result<(&'a oware_db, Position), c_int> {
    if db.is_null() || outputs_null {
        return Err(bad_argument(&format!("{names} is NULL")));
    }
    // SAFETY: as documented for the caller.
    let pos = unsafe { position(pits) }?;
    // SAFETY: as documented for the caller, and not NULL.
    Ok((unsafe { &*db }, pos))
}

/// Writes one entry per pit: `out[pit]` and `legal[pit] = 1` for each move of `moves` (its pit
/// and entry), `none` and 0 for the other pits.
///
/// # Safety
/// `out` and `legal` point to 6 writable elements each.
unsafe fn write_moves<T: Copy>(moves: impl IntoIterator<Item = (u8, T)>, none: T, out: *mut T, legal: *mut u8) {
    let (mut o, mut l) = ([none; 6], [0u8; 6]);
    for (pit, x) in moves {
        o[pit as usize] = x;
        l[pit as usize] = 1;
    }
    // SAFETY: as documented for the caller.
    unsafe {
        std::ptr::copy_nonoverlapping(o.as_ptr(), out, 6);
        std::ptr::copy_nonoverlapping(l.as_ptr(), legal, 6);
    }
}

/// Opens the database directory `dir` for ruleset `rules` (`"awari"` when NULL; see `oware build
/// --help` for the names). `dir` may hold native layers (`dir/RULES/layer-NN.owdb`), packs
/// (`dir/RULES/layer-NN.owpk`) or, for `awari`, the published 2002 files (`dir/scores.N`, plain
/// or `.zst`). Nothing is read yet: each layer is opened, and its checksums verified, on first use.
///
/// `dir` is taken as the bytes it is (a path need not be UTF-8).
///
/// Returns NULL on error, with the message in `err` (`err_len` bytes, NUL-terminated; `err` may
/// be NULL) and in `oware_last_error`: among others when `dir` does not exist, is empty or is not
/// a directory (`OWARE_IO`).
///
/// Cost: up to five `stat`s of `dir` and its entries.
///
/// # Safety
/// `dir` and `rules` are NULL or NUL-terminated strings; `err` is NULL or points to `err_len`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn oware_open(dir: *const c_char, rules: *const c_char, err: *mut c_char, err_len: usize) -> *mut oware_db {
    // SAFETY: as documented for the caller.
    unsafe { oware_open_with(dir, rules, 0, err, err_len) }
}

/// `oware_open_with` flag: read each value with `pread` instead of mapping the layer files (layers
/// are read whole into memory when opened while the copies fit in 1 GiB in the process). A value then costs about a
/// microsecond instead of tens of nanoseconds, but a layer file truncated or rewritten in place by
/// another program gives an error (`OWARE_DAMAGED`) instead of ending the process with `SIGBUS`:
/// for long-running programs whose files may change. Packs and bounds files are still mapped.
pub const OWARE_OPEN_PREAD: c_int = 1;

/// As `oware_open`, with `flags`: 0, or `OWARE_OPEN_PREAD`. Unknown flags are refused
/// (`OWARE_BAD_ARGUMENT`, NULL returned), so a program written for a later version fails clearly.
///
/// Cost: as `oware_open`.
///
/// # Safety
/// As `oware_open`.
#[no_mangle]
pub unsafe extern "C" fn oware_open_with(dir: *const c_char, rules: *const c_char, flags: c_int, err: *mut c_char, err_len: usize) -> *mut oware_db {
    let mut handle: *mut oware_db = std::ptr::null_mut();
    let code = guard(|| {
        if flags & !OWARE_OPEN_PREAD != 0 {
            return bad_argument(&format!("unknown flags {flags:#x} (known: OWARE_OPEN_PREAD = {OWARE_OPEN_PREAD})"));
        }
        let mode = if flags & OWARE_OPEN_PREAD != 0 { ReadMode::Pread } else { ReadMode::Map };
        // SAFETY: as documented for the caller.
        let (dir, ruleset) = match unsafe { dir_and_rules(dir, rules) } {
            Ok(x) => x,
            Err(c) => return c,
        };
        // A directory of published files (scores.N) is detected; otherwise this tool's layout.
        match DatabaseDir::detect(dir, ruleset) {
            Ok(d) => {
                handle = Box::into_raw(Box::new(oware_db { db: Arc::new(Database::from_dir(d).read_mode(mode)), engine: OnceLock::new() }));
                OWARE_OK
            }
            Err(e) => fail(&e),
        }
    });
    if code != OWARE_OK {
        LAST_ERROR.with(|e| unsafe { copy_out(&e.borrow(), err, err_len) });
    }
    handle
}

/// The exact value of a position for its player to move: stones he will still capture minus
/// those the opponent will, with best play (endless play counts 0). `pits` is the board in
/// mover-first form: `pits[0..6]` the mover's houses in sowing order, `pits[6..12]` the
/// opponent's.
///
/// Returns 0 and stores the value in `*value`, or an error code (`*value` untouched).
///
/// Cost: one rank and one table read (plus a layer's opening on first use); a position whose
/// opponent row is full is answered from its children (up to six reads).
///
/// # Safety
/// `db` is a handle from `oware_open` not yet closed; `pits` points to 12 bytes; `value` to
/// one writable byte.
#[no_mangle]
pub unsafe extern "C" fn oware_value(db: *const oware_db, pits: *const u8, value: *mut i8) -> c_int {
    call(|| {
        // SAFETY: as documented for the caller.
        let (db, pos) = unsafe { probe_args(db, pits, value.is_null(), "db or value") }?;
        let v = db.db.value(&pos).map_err(|e| fail(&e))?;
        // SAFETY: as documented for the caller.
        unsafe { *value = v };
        Ok(())
    })
}

/// Checks that no file the handle has opened (layers, bounds) changed since it was opened: its
/// length or modification time (truncated, grown or rewritten in place under the program):
/// `OWARE_DAMAGED` naming the first such file, or 0. A long-running program calls it before each
/// batch of probes, since reading a page a truncation removed from a mapped file would end the
/// process (`SIGBUS`; or open with `OWARE_OPEN_PREAD`); files the tool writes are replaced by
/// renaming, so a handle opened again reads the new ones.
///
/// Cost: one `fstat` per open file (at most 98).
///
/// # Safety
/// `db` is a handle from `oware_open` not yet closed.
#[no_mangle]
pub unsafe extern "C" fn oware_check_open_files(db: *const oware_db) -> c_int {
    call(|| {
        if db.is_null() {
            return Err(bad_argument("db is NULL"));
        }
        // SAFETY: as documented for the caller.
        unsafe { &*db }.db.check_open_files().map_err(|e| fail(&e))
    })
}

/// Every move's value: for each pit `i` in 0..6 (the mover's houses), `legal[i]` is 1 when the
/// move is legal and `values[i]` its exact value for the mover (`captured - value(child)`, or
/// the game's final value for a move that ends it); an illegal move gets `legal[i] = 0`,
/// `values[i] = 0`. A position with no legal move has all six 0 (its value is the ruleset's
/// ending; see `oware_value`).
///
/// Cost: one move generation and one probe per legal move.
///
/// # Safety
/// `db` is a handle from `oware_open` not yet closed; `pits` points to 12 bytes; `values` and
/// `legal` to 6 writable bytes each.
#[no_mangle]
pub unsafe extern "C" fn oware_move_values(db: *const oware_db, pits: *const u8, values: *mut i8, legal: *mut u8) -> c_int {
    call(|| {
        // SAFETY: as documented for the caller.
        let (db, pos) = unsafe { probe_args(db, pits, values.is_null() || legal.is_null(), "db, values or legal") }?;
        let moves = db.db.move_values(&pos).map_err(|e| fail(&e))?;
        // SAFETY: as documented for the caller.
        unsafe { write_moves(moves.iter().map(|m| (m.pit, m.value)), 0, values, legal) };
        Ok(())
    })
}

/// The depth to capture of a position (`oware build --dtc`): how many plies best play takes to
/// the value's first capture (by either side) or the end of the game, the winner hurrying and the
/// loser delaying, both keeping the value. `pits` as for `oware_value`.
///
/// Returns 0 and stores the depth in `*dtc` (0 for a game already over with a non-zero value, no
/// move being legal), or -1 when the position's value is 0 (no capture can be forced: no depth);
/// or an error code (`*dtc` untouched): among others `OWARE_MISSING_LAYER` when the layer's
/// values or its dtc file (`RULES/dtc-NN.owdb`) are not built (for the latter `oware_last_error`
/// names `oware build --dtc`), `OWARE_INVALID_POSITION` as for `oware_value`.
///
/// Cost: one rank and one byte read of the dtc file (plus the file's opening on first use); a
/// position outside every layer is answered from its moves (up to six probes of values and
/// depths).
///
/// # Safety
/// `db` is a handle from `oware_open` not yet closed; `pits` points to 12 bytes; `dtc` to one
/// writable `int32_t`.
#[no_mangle]
pub unsafe extern "C" fn oware_dtc(db: *const oware_db, pits: *const u8, dtc: *mut i32) -> c_int {
    call(|| {
        // SAFETY: as documented for the caller.
        let (db, pos) = unsafe { probe_args(db, pits, dtc.is_null(), "db or dtc") }?;
        let d = db.db.dtc(&pos).map_err(|e| fail(&e))?;
        // SAFETY: as documented for the caller.
        unsafe { *dtc = d.map_or(-1, i32::from) };
        Ok(())
    })
}

/// Every move's depth to capture, beside `oware_move_values`: for each pit `i` in 0..6, `legal[i]`
/// is 1 when the move is legal and `dtcs[i]` the depth left after it: 0 when the move captures or
/// ends the game, otherwise the child's depth (`oware_dtc` of the position it leads to), or -1
/// when the child's value is 0 (no depth). An illegal move gets `legal[i] = 0`, `dtcs[i] = -1`.
/// A position of non-zero value has depth 1 + the least of these depths when it wins, 1 + the
/// greatest when it loses, over the moves that keep the value (whose `oware_move_values` value
/// equals `oware_value`).
///
/// Returns 0, or an error code with nothing written: `OWARE_MISSING_LAYER` when a child's values,
/// or the dtc file of a child reached without a capture, are not built (`oware build --dtc`).
///
/// Cost: one move generation, one value probe per legal move and one depth probe per legal move
/// that neither captures nor ends the game.
///
/// # Safety
/// `db` is a handle from `oware_open` not yet closed; `pits` points to 12 bytes; `dtcs` to 6
/// writable `int32_t`; `legal` to 6 writable bytes.
#[no_mangle]
pub unsafe extern "C" fn oware_move_dtcs(db: *const oware_db, pits: *const u8, dtcs: *mut i32, legal: *mut u8) -> c_int {
    call(|| {
        // SAFETY: as documented for the caller.
        let (db, pos) = unsafe { probe_args(db, pits, dtcs.is_null() || legal.is_null(), "db, dtcs or legal") }?;
        let moves = move_dtcs(&db.db, &pos).map_err(|e| fail(&e))?;
        // SAFETY: as documented for the caller.
        unsafe { write_moves(moves.into_iter().map(|(pit, dtc)| (pit, dtc.map_or(-1, i32::from))), -1, dtcs, legal) };
        Ok(())
    })
}

/// Each legal move's pit and depth to capture after it: 0 for a capture or an ending move, else
/// the child's depth (`None` for value 0). A child whose layer has no dtc file is an error
/// ([`Error::CompanionMissing`] of the depths), where [`oware_core::probe::MoveValue::dtc`] would say `None`.
fn move_dtcs(db: &Database, pos: &Position) -> Result<Vec<(u8, Option<u16>)>, Error> {
    use oware_core::probe::MoveResult;
    db.move_values(pos)?
        .into_iter()
        .map(|m| match m.result {
            MoveResult::Continues { captured: 0, child } => Ok((m.pit, db.dtc(&child)?)),
            _ => Ok((m.pit, Some(0))),
        })
        .collect()
}

/// The root probe, what an engine asks at the root of its search: the position's value, every
/// move's value and a best move in one call. `values` and `legal` are filled as by
/// `oware_move_values`; `*value` receives the position's value (as `oware_value`); `*best_pit` the
/// pit (0..5) of the best move, the lowest pit among those of the largest value, or -1 when no
/// move is legal (the game is over: `*value` is then the ruleset's ending). The value equals the
/// best move's value whenever a move is legal.
///
/// Returns 0, or an error code with nothing written.
///
/// Cost: one move generation and one probe per legal move (the value is their maximum; a
/// position without a legal move costs one probe).
///
/// # Safety
/// `db` is a handle from `oware_open` not yet closed; `pits` points to 12 bytes; `value` to one
/// writable byte; `values` and `legal` to 6 writable bytes each; `best_pit` to one writable `int`.
#[no_mangle]
pub unsafe extern "C" fn oware_probe_root(
    db: *const oware_db,
    pits: *const u8,
    value: *mut i8,
    values: *mut i8,
    legal: *mut u8,
    best_pit: *mut c_int,
) -> c_int {
    call(|| {
        let outputs_null = value.is_null() || values.is_null() || legal.is_null() || best_pit.is_null();
        // SAFETY: as documented for the caller.
        let (db, pos) = unsafe { probe_args(db, pits, outputs_null, "db, value, values, legal or best_pit") }?;
        let moves = db.db.move_values(&pos).map_err(|e| fail(&e))?;
        let mut best: Option<(i8, u8)> = None;
        for m in &moves {
            if best.map_or(true, |(b, _)| m.value > b) {
                best = Some((m.value, m.pit));
            }
        }
        let root = match best {
            Some((b, _)) => b,
            // No legal move: the ending, from the table's own answer.
            None => db.db.value(&pos).map_err(|e| fail(&e))?,
        };
        // SAFETY: as documented for the caller.
        unsafe {
            write_moves(moves.iter().map(|m| (m.pit, m.value)), 0, values, legal);
            *value = root;
            *best_pit = best.map_or(-1, |(_, pit)| c_int::from(pit));
        }
        Ok(())
    })
}

/// The search engine's answer for a position, from any position: within the built layers exact,
/// above them the engine's search (alpha-beta over the layers, an evaluation at its leaves; see
/// `docs/engine.md`). `pits` is mover-first. The search runs for `movetime_ms` milliseconds, or to
/// `depth` plies when `movetime_ms` is 0 (then on one thread: the answer is reproducible); one of
/// them must be positive.
///
/// Writes `*best_pit` (0..5, or -1 when the game is over at the position), `*score` (centi-stones,
/// the mover's view: stones he will still capture minus the opponent's, times 100), `*exact` (1
/// when the search proved the score, 0 for an estimate) and `*depth_reached`.
///
/// The engine (a 64 MiB transposition table, one thread) is made on the handle's first call and
/// kept: calls on one handle share it, and may run from several threads at once.
///
/// Returns 0, or an error code with nothing written (`OWARE_BAD_ARGUMENT` for NULL pointers or
/// no limit; `OWARE_INVALID_POSITION`; `OWARE_DAMAGED` and others for a layer that cannot be read).
///
/// Cost: the time asked (at most); the first call also opens every layer present.
///
/// # Safety
/// `db` is a handle from `oware_open` not yet closed; `pits` points to 12 bytes; `best_pit`,
/// `score`, `exact` and `depth_reached` to one writable `int` each.
#[no_mangle]
pub unsafe extern "C" fn oware_analyse(
    db: *const oware_db,
    pits: *const u8,
    movetime_ms: u32,
    depth: u32,
    best_pit: *mut c_int,
    score: *mut c_int,
    exact: *mut c_int,
    depth_reached: *mut c_int,
) -> c_int {
    // SAFETY: as documented for the caller; no history.
    unsafe { oware_analyse_game(db, pits, std::ptr::null(), 0, movetime_ms, depth, best_pit, score, exact, depth_reached) }
}

/// As `oware_analyse`, from a position reached in a game: `history` holds the positions since
/// the last capture, `history_len` boards of 12 bytes each (mover-first, oldest first, the last
/// one the position just before `pits`, with the other side to move). A move that repeats one of
/// them ends the game as the rules say (awari splits the stones on the board evenly), and the
/// search scores it so. `history` may be NULL when `history_len` is 0.
///
/// Returns as `oware_analyse`; `OWARE_INVALID_POSITION` also for a board of the history that is
/// not a position; `OWARE_BAD_ARGUMENT` for a history whose positions since the last capture are
/// not a game's (each must lead to the next, and the last to `pits`, by a move that captures
/// nothing).
///
/// Cost: as `oware_analyse`, plus copying the history.
///
/// # Safety
/// As `oware_analyse`; `history` points to `12 * history_len` bytes (or is NULL with
/// `history_len` 0).
#[no_mangle]
pub unsafe extern "C" fn oware_analyse_game(
    db: *const oware_db,
    pits: *const u8,
    history: *const u8,
    history_len: usize,
    movetime_ms: u32,
    depth: u32,
    best_pit: *mut c_int,
    score: *mut c_int,
    exact: *mut c_int,
    depth_reached: *mut c_int,
) -> c_int {
    use oware_core::search::{Control, Engine, Limits, Root, MAX_DEPTH};
    call(|| {
        if db.is_null() || best_pit.is_null() || score.is_null() || exact.is_null() || depth_reached.is_null() {
            return Err(bad_argument("db, best_pit, score, exact or depth_reached is NULL"));
        }
        if history.is_null() && history_len > 0 {
            return Err(bad_argument("history is NULL with history_len > 0"));
        }
        if history_len > MAX_HISTORY {
            return Err(bad_argument(&format!("history_len {history_len} is more than {MAX_HISTORY} positions")));
        }
        if movetime_ms == 0 && (depth == 0 || depth > MAX_DEPTH) {
            return Err(bad_argument(&format!("give movetime_ms > 0, or depth 1..{MAX_DEPTH}")));
        }
        // SAFETY: as documented for the caller.
        let pos = unsafe { position(pits) }?;
        // SAFETY: as documented for the caller, and not NULL.
        let db = unsafe { &*db };
        let mut earlier = Vec::with_capacity(history_len);
        for i in 0..history_len {
            // SAFETY: `history` holds `12 * history_len` bytes, as documented for the caller.
            earlier.push(*unsafe { position(history.add(12 * i)) }?.board());
        }
        let engine = match db.engine.get() {
            Some(e) => e,
            None => {
                let e = Engine::new(db.db.rules(), Some(db.db.clone()), None).map_err(|e| fail(&e))?;
                db.engine.get_or_init(|| e)
            }
        };
        let limits = if movetime_ms > 0 {
            Limits { movetime: Some(std::time::Duration::from_millis(u64::from(movetime_ms))), ..Default::default() }
        } else {
            Limits { depth: Some(depth), ..Default::default() }
        };
        let root = Root::in_game(pos, None, earlier);
        let r = engine.search(&root, &limits, &Control::new(), &mut |_| {}).map_err(|e| fail(&e))?;
        // SAFETY: as documented for the caller.
        unsafe {
            *best_pit = r.best_pit.map_or(-1, c_int::from);
            *score = r.score;
            *exact = c_int::from(r.exact);
            *depth_reached = r.depth as c_int;
        }
        Ok(())
    })
}

/// The longest history `oware_analyse_game` takes (a game has far fewer positions between two
/// captures). Larger than the library's `search::MAX_HISTORY` (10,000), which the server and
/// Python take, on purpose: this bound has been the C function's since it was published, and a
/// C caller hands over a buffer it has already built (its length bounds only the copy, 12 bytes
/// a board), so lowering it would refuse calls that work today.
const MAX_HISTORY: usize = 1 << 20;

/// The largest layer `N` such that the files of every layer 0..=N are present in the handle's
/// directory: every position of at most `N` stones can be probed (as Fathom's `TB_LARGEST`). -1
/// when layer 0 is absent (nothing can be probed), or on a NULL handle. Files are found, not yet
/// checked: a damaged one is reported by the probe that reads it.
///
/// Cost: one `stat` per possible layer (49).
///
/// # Safety
/// `db` is NULL or a handle from `oware_open` not yet closed.
#[no_mangle]
pub unsafe extern "C" fn oware_largest(db: *const oware_db) -> c_int {
    if db.is_null() {
        return -1;
    }
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: as documented for the caller.
        let present = unsafe { &*db }.db.layers_present();
        let mut largest = -1;
        for (expected, n) in present.iter().enumerate() {
            if *n as usize != expected {
                break;
            }
            largest = *n as c_int;
        }
        largest
    }))
    .unwrap_or(-1)
}

/// Verifies the database directory `dir` for ruleset `rules` (`"awari"` when NULL) as `oware
/// verify --json` does: each layer's header and payload checksum, every value of the layers asked
/// for re-derived from its children, the forced-capture bounds present (all of them with
/// `require_bounds` non-zero), the depths to capture present of the layers asked for (all of them
/// with `require_dtc` non-zero), the published facts and a pack directory's `SHA256SUMS`. `dir`
/// may hold native layers, packs or (awari) the published 2002 files, as for `oware_open`.
///
/// Layers: `first_layer` and `last_layer` both negative for every layer from 0 to the highest on
/// disk (a gap is reported missing); otherwise `first_layer..=last_layer` within 0..48 (the
/// layers below it that they read are checked, not re-derived). `oware verify --max-stones N`
/// is `0, N`.
///
/// Returns the outcome, as the exit status of `oware verify`: 0 (`OWARE_OK`) when nothing is
/// wrong; otherwise the dominant problem: `OWARE_VERIFY_FAILED` (8, wrong values or a fact
/// contradicted) before `OWARE_DAMAGED` / `OWARE_RULESET_MISMATCH` / `OWARE_IO` (a damaged,
/// foreign or unreadable layer, then bounds file, then dtc file, then the manifest) before
/// `OWARE_MISSING_LAYER` (a layer, then required bounds, then required depths to capture,
/// absent). The report is then written to `report_json` (`len` bytes, truncated and
/// NUL-terminated; may be NULL) as one JSON object: the fields of `oware verify --json` without
/// `schema_version`, plus `outcome` (`"ok"`, `"wrong_values"`, `"damaged_layer"`,
/// `"damaged_bounds"`, `"damaged_dtc"`, `"manifest_mismatch"`, `"missing_layer"`,
/// `"missing_bounds"`, `"missing_dtc"`) and `exit_code`; its full length (without the NUL) is
/// stored in `*json_len` (may be NULL): larger than `len - 1` means truncated. The message of the
/// dominant problem is kept for `oware_last_error`.
///
/// When no report could be made the code is that of the error and `*json_len` is 0:
/// `OWARE_BAD_ARGUMENT` (NULL `dir`, a ruleset that is not UTF-8 or unknown, a bad layer
/// range), `OWARE_MISSING_LAYER` (no layer range given and no layer on disk), `OWARE_IO` (`dir`
/// does not exist or is not a directory).
///
/// Cost: reads and checksums every layer up to `last_layer` and re-derives every position of
/// the range, in parallel on every core (time grows with the positions re-derived: a long job
/// for large layers); the layers read stay mapped until it returns. Thread-safe; not
/// interruptible.
///
/// # Safety
/// `dir` and `rules` are NULL or NUL-terminated strings; `report_json` is NULL or points to `len`
/// writable bytes; `json_len` is NULL or points to one writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn oware_verify(
    dir: *const c_char,
    rules: *const c_char,
    first_layer: c_int,
    last_layer: c_int,
    require_bounds: c_int,
    require_dtc: c_int,
    report_json: *mut c_char,
    len: usize,
    json_len: *mut usize,
) -> c_int {
    use oware_core::verify::{verify_directory, NoObserver, VerifyOptions};
    let mut json = String::new();
    let code = guard(|| {
        // SAFETY: as documented for the caller.
        let (dir, ruleset) = match unsafe { dir_and_rules(dir, rules) } {
            Ok(x) => x,
            Err(c) => return c,
        };
        let top = oware_core::index::MAX_STONES as c_int;
        let layers = match (first_layer, last_layer) {
            (a, b) if a < 0 && b < 0 => None,
            (a, b) if 0 <= a && a <= b && b <= top => Some(a as u32..=b as u32),
            (a, b) => return bad_argument(&format!("layers {a}..{b}: give both negative, or 0 <= first <= last <= {top}")),
        };
        let options = VerifyOptions {
            layers,
            require: FileContent::selected([(require_bounds != 0, FileContent::Bounds), (require_dtc != 0, FileContent::Dtc)]),
            max_memory: None,
        };
        let report = match DatabaseDir::detect(dir, ruleset).and_then(|d| verify_directory(&d, &options, &mut NoObserver)) {
            Ok(r) => r,
            Err(e) => return fail(&e),
        };
        json = match report.to_json() {
            Ok(j) => j,
            Err(e) => return fail(&e),
        };
        let code = report.exit_code();
        if let Some(e) = report.into_error() {
            remember(e.to_string());
        }
        code
    });
    // SAFETY: as documented for the caller.
    unsafe {
        copy_out(&json, report_json, len);
        if !json_len.is_null() {
            *json_len = json.len();
        }
    }
    code
}

/// Copies the message of the last failure on the calling thread into `buf` (`len` bytes,
/// truncated, NUL-terminated) and returns the message's full length (0 when nothing failed yet).
///
/// # Safety
/// `buf` is NULL or points to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn oware_last_error(buf: *mut c_char, len: usize) -> usize {
    LAST_ERROR.with(|e| {
        let e = e.borrow();
        // SAFETY: as documented for the caller.
        unsafe { copy_out(&e, buf, len) };
        e.len()
    })
}

/// Closes a handle (NULL is ignored). The handle must not be used afterwards, nor be in use
/// by another thread.
///
/// # Safety
/// `db` is NULL or a handle from `oware_open` not yet closed.
#[no_mangle]
pub unsafe extern "C" fn oware_close(db: *mut oware_db) {
    if !db.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: as documented for the caller: ours, from Box::into_raw, closed once.
            drop(unsafe { Box::from_raw(db) });
        }));
    }
}
