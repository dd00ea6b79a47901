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
//! Every file of a layer, whatever it holds, is one of three kinds ([`Kind`]: [`ValuesKind`],
//! [`BoundsKind`], [`DtcKind`]), and is found, opened, checked and read by one code generic over
//! its kind: [`DatabaseDir::open_layer`] gives a [`Layer`] (every entry at hand),
//! [`DatabaseDir::open_table`] a [`Table`] (opened for probing: in memory, a pack read in place,
//! or read entry by entry), [`Layer`] and [`Table`] being layers of values unless a kind is
//! named.
//!
//! | module | what it is |
//! |---|---|
//! | `directory` | [`DatabaseDir`]: the layout, what is present, opening a layer's file of any kind |
//! | `kind` | what each kind is: its tag ([`BoundsKind`], [`DtcKind`]; the values' is `layer`'s default) and its impl of [`Kind`], its packed file ([`PackedDtc`]) |
//! | `layer` | the one tag trait [`Kind`] and what is generic over it: [`Layer`], [`Table`], [`FileLayer`], a layer's file of a kind, open and checked; [`PackedTable`], a packed file probed in place; [`ValuesKind`], the default kind |
//! | `mapping` | [`ReadMode`] and what every file shares: opening regular files only (every file of the crate's own, never a FIFO or device), maps, `pread`, headers, checksums |
//! | `writers` | [`AtomicFile`], `LayerWriter` ([`DatabaseDir::write_layer`]), `ShareWriter`: writing without damaging a complete file |

mod directory;
mod kind;
mod layer;
mod mapping;
mod writers;

pub(crate) use crate::sys::{open_regular, open_regular_rw};
pub use directory::{DatabaseDir, LayerState};
pub use kind::{BoundsKind, DtcKind, NoPack, PackedDtc};
pub use layer::{FileLayer, Layer, Table};
pub use layer::{Kind, PackedTable, ValuesKind};
// A kind's tag may stand in any module of the crate (the tests' own kind stands beside its
// check); outside the tests every tag stands in `kind`.
#[allow(unused_imports)]
pub(crate) use layer::private;
pub use mapping::ReadMode;
pub use writers::AtomicFile;
// The layer file format's header and offsets (`docs/FORMAT.md`), and the byte of "no depth" in a
// dtc file, for programs that read or check files themselves.
pub use crate::dtc::NONE as DTC_NONE;
pub use crate::format::{Header, BOUNDS_TRIANGULAR, HEADER_LEN, PAYLOAD_OFFSET};
pub(crate) use writers::{checksum_released, partial_path, scan_released, write_atomic, DtcWriter, LayerWriter, ShareWriter};

use std::path::{Path, PathBuf};

use crate::rules::Ruleset;

/// The directory holding `rules`' layers under the database directory `base`.
pub(crate) fn ruleset_dir(base: &Path, rules: Ruleset) -> PathBuf {
    base.join(rules.name())
}

/// Path of layer `n`'s file of kind `K` of `rules` under `base`, in this tool's format:
/// `layer-NN.owdb`, `bounds-NN.owdb` or `dtc-NN.owdb` in the ruleset's directory.
pub fn native_path<K: Kind>(base: &Path, rules: Ruleset, n: u32) -> PathBuf {
    ruleset_dir(base, rules).join(format!("{}-{n:02}.owdb", K::CONTENT.name()))
}

/// Path of layer `n`'s file of kind `K` of `rules` under `base` as a pack (compressed, probed
/// in place; see [`crate::pack`]): `layer-NN.owpk` or `dtc-NN.owpk`.
pub fn pack_path<K: Kind>(base: &Path, rules: Ruleset, n: u32) -> PathBuf {
    ruleset_dir(base, rules).join(format!("{}-{n:02}.owpk", K::CONTENT.name()))
}

/// Path of the statistics file of layer `n` of `rules` under `base` (`layer-NN.json`; see
/// [`DatabaseDir`] for those of every kind).
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

#[cfg(test)]
mod tests;
