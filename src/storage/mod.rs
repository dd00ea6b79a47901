//! Database directories and layer files: where layers live, how they are found and read
//! (memory-mapped), and how files are written without ever damaging a complete one.
//!
//! Layout of a database directory `D` (default `databases/`):
//!
//! ```text
//! D/<ruleset>/layer-NN.owdb                 one layer, header + payload (docs/FORMAT.md)
//! D/<ruleset>/layer-NN.json                 statistics of that layer's build
//! D/<ruleset>/bounds-NN.owdb                its forced-capture bounds (`oware build --bounds`)
//! D/<ruleset>/dtc-NN.owdb                   its depths to capture (`oware build --dtc`)
//! D/<ruleset>/.layer-NN.owdb.XXXXXX.tmp     a file being written (unique name; removed on failure)
//! ```
//!
//! Each ruleset has its own subdirectory and every header names its ruleset, so databases of
//! different rulesets can never be mixed up. The published 2002 format (`scores.N`, headerless,
//! one signed byte per position, `awari` only) is read too ([`Format::Vu`]).
//!
//! [`DatabaseDir`] is the one type that knows this layout: which layers are present, absent or
//! unreadable, how to open them, and which error each case gives. Every file this crate writes
//! goes through [`AtomicFile`]: a temporary created exclusively under a unique name (so a link
//! planted in the directory is never followed), removed on every failure path, and renamed over
//! the target only once complete and flushed.
//!
//! # Contract for files in use
//!
//! Layer files are memory-mapped. **A layer file must not be modified, truncated or overwritten in
//! place while a program has it open**: reading a page that a truncation removed kills the process
//! with `SIGBUS`, and no library can turn that into an error. This crate never does it: it replaces
//! files by renaming, which leaves existing maps intact. `Layer::check_unchanged` tells whether an
//! open layer's file changed size or modification time since it was opened (the `oware` CLI
//! checks it between queries and reports `Damage::ChangedWhileOpen`). A program whose files
//! another program may change (a server) reads them with [`ReadMode::Pread`] instead: no map, so
//! no `SIGBUS`, at the cost of one system call per value.

//!
//! | module | what it is |
//! |---|---|
//! | `directory` | [`DatabaseDir`]: the layout, what is present, opening layers |
//! | `layers` | [`Layer`], [`Table`], [`FileLayer`]: layers of values, open and checked |
//! | `companion` | [`CompanionLayer`], [`CompanionTable`], [`CompanionFile`] of a [`Companion`] kind: the bounds ([`BoundsLayer`], ...) and depths to capture ([`DtcLayer`], ...) beside a layer |
//! | `mapping` | [`ReadMode`] and what every file shares: opening regular files only, maps, `pread`, headers, checksums |
//! | `writers` | [`AtomicFile`], `LayerWriter` ([`DatabaseDir::write_layer`]), `ShareWriter`: writing without damaging a complete file |

mod companion;
mod directory;
mod layers;
mod mapping;
mod writers;

pub use companion::{
    BoundsFile, BoundsKind, BoundsLayer, BoundsTable, Companion, CompanionFile, CompanionKind, CompanionLayer, CompanionTable, DtcFile, DtcKind, DtcLayer,
    DtcTable,
};
pub use directory::{DatabaseDir, LayerState};
pub use layers::{FileLayer, Layer, Table};
pub(crate) use mapping::open_regular;
pub use mapping::ReadMode;
pub use writers::AtomicFile;
pub(crate) use writers::{checksum_released, partial_path, scan_released, write_atomic, DtcWriter, LayerWriter, ShareWriter};

use std::path::{Path, PathBuf};

use crate::error::{Error, FileKind};
use crate::index::MAX_STONES;
use crate::rules::Ruleset;

/// The directory holding `rules`' layers under the database directory `base`.
pub(crate) fn ruleset_dir(base: &Path, rules: Ruleset) -> PathBuf {
    base.join(rules.name())
}

/// Path of layer `n` of `rules` under `base` (this tool's format).
pub fn layer_path(base: &Path, rules: Ruleset, n: u32) -> PathBuf {
    ruleset_dir(base, rules).join(format!("layer-{n:02}.owdb"))
}

/// Path of layer `n` of `rules` under `base` as a pack (compressed, probed in place; see
/// [`crate::pack`]).
pub fn pack_path(base: &Path, rules: Ruleset, n: u32) -> PathBuf {
    ruleset_dir(base, rules).join(format!("layer-{n:02}.owpk"))
}

/// Path of layer `n`'s file of kind `kind` of `rules` under `base`: `bounds-NN.owdb` or
/// `dtc-NN.owdb` in the ruleset's directory.
pub fn companion_path(base: &Path, rules: Ruleset, kind: Companion, n: u32) -> PathBuf {
    ruleset_dir(base, rules).join(format!("{}-{n:02}.owdb", kind.name()))
}

/// Path of the forced-capture bounds of layer `n` of `rules` under `base` (see [`crate::bounds`]).
pub fn bounds_path(base: &Path, rules: Ruleset, n: u32) -> PathBuf {
    companion_path(base, rules, Companion::Bounds, n)
}

/// Path of the depths to capture of layer `n` of `rules` under `base` (see [`crate::dtc`]).
pub fn dtc_path(base: &Path, rules: Ruleset, n: u32) -> PathBuf {
    companion_path(base, rules, Companion::Dtc, n)
}

/// Path of the depths to capture of layer `n` of `rules` under `base` as a pack (`dtc-NN.owpk`,
/// see [`crate::pack`]).
pub fn dtc_pack_path(base: &Path, rules: Ruleset, n: u32) -> PathBuf {
    ruleset_dir(base, rules).join(format!("dtc-{n:02}.owpk"))
}

/// Path of the statistics file of layer `n` of `rules` under `base`.
pub(crate) fn stats_path(base: &Path, rules: Ruleset, n: u32) -> PathBuf {
    ruleset_dir(base, rules).join(format!("layer-{n:02}.json"))
}

/// Path of layer `n` in a directory of published 2002 files.
pub fn vu_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("scores.{n}"))
}

/// The on-disk format of a database directory. With the `cli` feature, the program's `--format`
/// option parses it (same names as [`Format::name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// This tool's files: `<dir>/<ruleset>/layer-NN.owdb` with a header and checksum.
    #[cfg_attr(feature = "clap", value(name = "native", help = "This tool's files: `<dir>/<rules>/layer-NN.owdb`, with header and checksum"))]
    Native,
    /// The published 2002 files: `<dir>/scores.N`, one signed byte per position, `awari` only.
    #[cfg_attr(feature = "clap", value(name = "vu", help = "The published headerless `<dir>/scores.N` files of the 2002 solution (awari only)"))]
    Vu,
}

impl Format {
    /// `native` or `vu`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "native",
            Format::Vu => "vu",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "native" | "owdb" => Ok(Format::Native),
            "vu" | "scores" => Ok(Format::Vu),
            _ => Err(format!("unknown format '{s}' (expected 'native' or 'vu')")),
        }
    }
}

/// What is at `path`, from its directory entry only (nothing is opened, so a FIFO never blocks):
/// absent (nothing there), a regular file, or something unreadable as a file (a dangling link
/// included: [`mapping::dangling_link`]).
fn entry_state(path: PathBuf) -> LayerState {
    match std::fs::metadata(&path) {
        Ok(m) => match FileKind::of(m.file_type()) {
            FileKind::File => LayerState::Present,
            found => LayerState::Unreadable(Error::NotAFile { path, found, expected: FileKind::File }),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => mapping::dangling_link(&path).map_or(LayerState::Absent, LayerState::Unreadable),
        Err(e) => LayerState::Unreadable(Error::io(path, e)),
    }
}

impl DatabaseDir {
    /// What is at layer `n`'s path of kind `kind`, as [`state`](Self::state) says of its
    /// values: a directory or a FIFO there is [`LayerState::Unreadable`], not absent (unlike
    /// [`has_companion`](Self::has_companion), which asks for a regular file). Always
    /// [`LayerState::Absent`] for the published format and above layer 48.
    ///
    /// Cost: one `stat`.
    pub fn companion_state(&self, kind: Companion, n: u32) -> LayerState {
        if self.format() != Format::Native || n > MAX_STONES {
            return LayerState::Absent;
        }
        entry_state(self.found_companion_path(kind, n))
    }

    /// What is at layer `n`'s bounds path: [`companion_state`](Self::companion_state).
    ///
    /// Cost: one `stat`.
    pub fn bounds_state(&self, n: u32) -> LayerState {
        self.companion_state(Companion::Bounds, n)
    }

    /// What is at layer `n`'s dtc path: [`companion_state`](Self::companion_state).
    ///
    /// Cost: one `stat`.
    pub fn dtc_state(&self, n: u32) -> LayerState {
        self.companion_state(Companion::Dtc, n)
    }
}
