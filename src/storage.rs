//! Database directories and layer files: where layers live, how they are found and read
//! (memory-mapped), and how files are written without ever damaging a complete one.
//!
//! Layout of a database directory `D` (default `databases/`):
//!
//! ```text
//! D/<ruleset>/layer-NN.owdb                 one layer, header + payload (docs/FORMAT.md)
//! D/<ruleset>/layer-NN.json                 statistics of that layer's build
//! D/<ruleset>/bounds-NN.owdb                its forced-capture bounds (`oware build --bounds`)
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
//! files by renaming, which leaves existing maps intact. [`Layer::check_unchanged`] tells whether an
//! open layer's file changed size since it was opened (the `oware` CLI checks it between queries
//! and reports [`Damage::ChangedWhileOpen`]).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::{Mmap, MmapMut};

use crate::bounds::{Bounds, Codec};
use crate::error::{Damage, Error, FileKind, Result};
use crate::format::{Header, BOUNDS_TRIANGULAR, HEADER_LEN, PAYLOAD_OFFSET, VALUE_EXACT_I8};
use crate::index::{layer_size, MAX_STONES};
use crate::pack::{is_pack, PackLayer};
use crate::rules::Ruleset;

/// The directory holding `rules`' layers under the database directory `base`.
pub fn ruleset_dir(base: &Path, rules: Ruleset) -> PathBuf {
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

/// Path of the forced-capture bounds of layer `n` of `rules` under `base` (see [`crate::bounds`]).
pub fn bounds_path(base: &Path, rules: Ruleset, n: u32) -> PathBuf {
    ruleset_dir(base, rules).join(format!("bounds-{n:02}.owdb"))
}

/// Path of the statistics file of layer `n` of `rules` under `base`.
pub fn stats_path(base: &Path, rules: Ruleset, n: u32) -> PathBuf {
    ruleset_dir(base, rules).join(format!("layer-{n:02}.json"))
}

/// Path of layer `n` in a directory of published 2002 files.
pub fn vu_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("scores.{n}"))
}

/// The on-disk format of a database directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// This tool's files: `<dir>/<ruleset>/layer-NN.owdb` with a header and checksum.
    Native,
    /// The published 2002 files: `<dir>/scores.N`, one signed byte per position, `awari` only.
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

/// What a layer's file looks like from its directory entry, before it is opened.
#[derive(Debug)]
pub enum LayerState {
    /// No file (nor a dangling link) at the layer's path.
    Absent,
    /// A regular file is there (not yet checked).
    Present,
    /// Something is there that cannot be read as a layer: a directory, a FIFO, a link loop, an
    /// entry without permission. The error says which.
    Unreadable(Error),
}

/// A database directory of one format and ruleset: the one place that knows where its layers
/// live, which are there, how to open them and what error each problem gives.
///
/// Cheap to clone; it holds paths only and opens nothing by itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseDir {
    base: PathBuf,
    format: Format,
    rules: Ruleset,
}

impl DatabaseDir {
    /// The database directory `base` in `format` for `rules`.
    ///
    /// Cost: one `stat` of `base`.
    ///
    /// # Errors
    /// [`Error::Usage`] for the published format with a ruleset other than `awari` (those files
    /// hold only `awari` values); [`Error::NotAFile`] when `base` exists but is not a directory;
    /// [`Error::Io`] when it cannot be examined. A missing directory is accepted (opening a
    /// layer then reports it missing).
    pub fn new(format: Format, base: impl Into<PathBuf>, rules: Ruleset) -> Result<DatabaseDir> {
        let base = base.into();
        if format == Format::Vu && rules != Ruleset::Awari {
            return Err(Error::Usage(format!("the published 2002 format (vu) holds only 'awari' values, not '{}'", rules.name())));
        }
        match fs::metadata(&base) {
            Ok(m) if !m.is_dir() => return Err(Error::NotAFile { path: base, found: FileKind::of(m.file_type()), expected: FileKind::Directory }),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&base, e)),
        }
        Ok(DatabaseDir { base, format, rules })
    }

    /// This tool's database directory `base` for `rules` (see [`new`](Self::new)).
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn native(base: impl Into<PathBuf>, rules: Ruleset) -> Result<DatabaseDir> {
        DatabaseDir::new(Format::Native, base, rules)
    }

    /// The directory given (for the native format, the parent of the ruleset's directory).
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The format of its files.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The ruleset of its values.
    pub fn rules(&self) -> Ruleset {
        self.rules
    }

    /// The directory the layer files are in: `<base>/<ruleset>` (native) or `<base>` (vu).
    pub fn layers_dir(&self) -> PathBuf {
        match self.format {
            Format::Native => ruleset_dir(&self.base, self.rules),
            Format::Vu => self.base.clone(),
        }
    }

    /// The path of layer `n`'s file in its uncompressed form (which may not exist): where a
    /// build writes it.
    pub fn layer_path(&self, n: u32) -> PathBuf {
        match self.format {
            Format::Native => layer_path(&self.base, self.rules, n),
            Format::Vu => vu_path(&self.base, n),
        }
    }

    /// The path layer `n` is read from: [`layer_path`](Self::layer_path) when anything is there,
    /// else its compressed form when that exists (a pack `layer-NN.owpk` beside a native layer's
    /// place, `scores.N.zst` beside a published file's), else `layer_path`.
    ///
    /// Cost: one or two `stat`s.
    pub fn found_path(&self, n: u32) -> PathBuf {
        let plain = self.layer_path(n);
        if fs::symlink_metadata(&plain).is_ok() {
            return plain;
        }
        let packed = match self.format {
            Format::Native => pack_path(&self.base, self.rules, n),
            Format::Vu => self.base.join(format!("scores.{n}.zst")),
        };
        if fs::symlink_metadata(&packed).is_ok() {
            packed
        } else {
            plain
        }
    }

    /// The path of layer `n`'s forced-capture bounds (native format).
    pub fn bounds_path(&self, n: u32) -> PathBuf {
        bounds_path(&self.base, self.rules, n)
    }

    /// Opens the forced-capture bounds of layer `n` and checks them: header fields, ruleset,
    /// layer, kind, size and, with `verify_payload`, the payload checksum.
    ///
    /// Cost: one `stat`, one `open`, one `mmap`; with `verify_payload`, one sequential read.
    ///
    /// # Errors
    /// [`Error::BoundsMissing`] when absent (or for the published format, which has none);
    /// [`Error::NotAFile`] for a directory, FIFO or other non-regular file;
    /// [`Error::RulesetMismatch`] / [`Error::LayerMismatch`] when the header names another
    /// ruleset or layer; [`Error::Corrupt`] for a bad header, size, checksum, or a file of values;
    /// [`Error::Io`] when it cannot be read.
    pub fn open_bounds(&self, n: u32, verify_payload: bool) -> Result<BoundsLayer> {
        let missing = || Error::BoundsMissing { layer: n, dir: self.layers_dir(), rules: self.rules };
        if n > MAX_STONES || self.format != Format::Native {
            return Err(missing());
        }
        let path = self.bounds_path(n);
        let (file, map) = map_file(&path, missing)?;
        BoundsLayer::from_map(&path, file, map, self.rules, n, verify_payload)
    }

    /// Whether a regular file is at layer `n`'s bounds path (nothing is opened).
    ///
    /// Cost: one `stat`.
    pub fn has_bounds(&self, n: u32) -> bool {
        self.format == Format::Native && n <= MAX_STONES && fs::metadata(self.bounds_path(n)).is_ok_and(|m| m.is_file())
    }

    /// The path of the statistics file of layer `n`'s bounds (`bounds-NN.json`).
    pub fn bounds_stats_path(&self, n: u32) -> PathBuf {
        ruleset_dir(&self.base, self.rules).join(format!("bounds-{n:02}.json"))
    }

    /// The path of layer `n`'s statistics file (native format).
    pub fn stats_path(&self, n: u32) -> PathBuf {
        stats_path(&self.base, self.rules, n)
    }

    /// The error for layer `n` being absent: [`Error::LayerMissing`] (native) or
    /// [`Error::PublishedLayerMissing`] (vu).
    pub fn missing(&self, n: u32) -> Error {
        match self.format {
            Format::Native => Error::LayerMissing { layer: n, dir: self.layers_dir(), rules: self.rules },
            Format::Vu => Error::PublishedLayerMissing { layer: n, path: self.layer_path(n) },
        }
    }

    /// What is at layer `n`'s path, from its directory entry only (nothing is opened). Layers
    /// above 48 are [`LayerState::Absent`].
    ///
    /// Cost: one `stat`.
    pub fn state(&self, n: u32) -> LayerState {
        if n > MAX_STONES {
            return LayerState::Absent;
        }
        let path = self.found_path(n);
        match fs::metadata(&path) {
            Ok(m) => match FileKind::of(m.file_type()) {
                FileKind::File => LayerState::Present,
                found => LayerState::Unreadable(Error::NotAFile { path, found, expected: FileKind::File }),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A dangling link reads as absent; a link loop or a denied lookup does not.
                LayerState::Absent
            }
            Err(e) => LayerState::Unreadable(Error::io(path, e)),
        }
    }

    /// The layers whose state is not [`LayerState::Absent`] (present or unreadable), in
    /// increasing order.
    ///
    /// Cost: one `stat` per possible layer (49).
    pub fn layers_on_disk(&self) -> Vec<u32> {
        (0..=MAX_STONES).filter(|&n| !matches!(self.state(n), LayerState::Absent)).collect()
    }

    /// The first layer, from 0 up, that is not present as a regular file, with its state
    /// (`None` when all 49 are present).
    ///
    /// Cost: one `stat` per layer up to it.
    pub fn first_not_present(&self) -> Option<(u32, LayerState)> {
        (0..=MAX_STONES).find_map(|n| match self.state(n) {
            LayerState::Present => None,
            s => Some((n, s)),
        })
    }

    /// Opens layer `n` for reading all its values and checks it: header fields, ruleset, layer
    /// number, size and, with `verify_payload`, the payload checksum (native format); the size
    /// (published format). A pack (see [`found_path`](Self::found_path)) is decoded whole into
    /// memory and always checked against its payload checksum; so is a `scores.N.zst`.
    ///
    /// Cost: one `stat`, one `open`, one `mmap`; with `verify_payload`, one sequential read of
    /// the layer. A pack or `.zst`: one parallel decoding pass and the layer's size in memory.
    ///
    /// # Errors
    /// [`missing`](Self::missing) when absent; [`Error::NotAFile`] for a directory, FIFO or
    /// other non-regular file; [`Error::RulesetMismatch`] / [`Error::LayerMismatch`] when the
    /// header names another ruleset or layer; [`Error::Corrupt`] for a bad header, size,
    /// checksum or a damaged pack block; [`Error::Io`] when it cannot be read.
    pub fn open(&self, n: u32, verify_payload: bool) -> Result<Layer> {
        match self.open_table(n, verify_payload)? {
            Table::Layer(layer) => Ok(layer),
            Table::Pack(pack) => {
                let mut values = vec![0u8; pack.header().entries as usize];
                pack.decode_into(&mut values)?;
                let header = Some(pack.header().clone());
                let (path, file, len) = (pack.path().to_path_buf(), pack.into_file(), 0);
                let len = file.metadata().map(|m| m.len()).unwrap_or(len);
                Ok(Layer { stones: n, path, file, len, data: Data::Owned(values), header })
            }
        }
    }

    /// Opens layer `n` for probing: a native or published file as by [`open`](Self::open), a
    /// pack as a [`PackLayer`] read in place (with `verify_payload`, every block's checksum is
    /// checked now; otherwise each group of blocks the first time it is read).
    ///
    /// Cost: as `open` for an uncompressed file; for a pack, one `mmap`, its model and table,
    /// and with `verify_payload` one sequential read of the pack.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_table(&self, n: u32, verify_payload: bool) -> Result<Table> {
        if n > MAX_STONES {
            return Err(self.missing(n));
        }
        let path = self.found_path(n);
        let (file, map) = map_file(&path, || self.missing(n))?;
        match self.format {
            Format::Native if is_pack(&map) => Ok(Table::Pack(PackLayer::open(&path, file, map, self.rules, n, verify_payload)?)),
            Format::Native => Ok(Table::Layer(Layer::from_map(&path, file, map, self.rules, n, verify_payload)?)),
            Format::Vu if path.extension().is_some_and(|e| e == "zst") => {
                let values = decompress_vu(&path, &map, n)?;
                let len = map.len() as u64;
                Ok(Table::Layer(Layer { stones: n, path, file, len, data: Data::Owned(values), header: None }))
            }
            Format::Vu => {
                if map.len() as u64 != layer_size(n) {
                    return Err(Error::corrupt(path, Damage::Size { expected: layer_size(n), found: map.len() as u64 }));
                }
                let len = map.len() as u64;
                Ok(Table::Layer(Layer { stones: n, path, file, len, data: Data::Map(map, 0), header: None }))
            }
        }
    }

    /// Creates the layers' directory (native format) if needed.
    ///
    /// # Errors
    /// [`Error::Io`] when it cannot be created.
    pub fn create(&self) -> Result<()> {
        let dir = self.layers_dir();
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))
    }

    /// Removes temporary files this crate left behind in the layers' directory (a killed
    /// process leaves its `.NAME.XXXXXX.tmp`). Only regular files with this crate's temporary
    /// names are removed; links and everything else are left alone. Call it only while holding
    /// the directory's build lock. Returns the paths removed.
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be listed or a file cannot be removed.
    pub fn remove_stale_temporaries(&self) -> Result<Vec<PathBuf>> {
        let dir = self.layers_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&dir, e)),
        };
        let mut removed = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&dir, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if !is_temporary_name(name) {
                continue;
            }
            let path = entry.path();
            match fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_file() => {
                    fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
                    removed.push(path);
                }
                _ => {}
            }
        }
        Ok(removed)
    }
}

/// Whether `name` is a temporary this crate leaves in a layers directory: [`AtomicFile`]'s
/// `.layer-NN.owdb.XXXXXX.tmp` / `.layer-NN.json.XXXXXX.tmp` / `.bounds-NN.owdb.XXXXXX.tmp`, or the fixed `layer-NN.owdb.tmp` /
/// `layer-NN.json.tmp` of earlier versions. Nothing else matches.
fn is_temporary_name(name: &str) -> bool {
    let target = |t: &str| {
        t.strip_prefix("layer-")
            .and_then(|r| r.strip_suffix(".owdb").or_else(|| r.strip_suffix(".json")))
            .or_else(|| t.strip_prefix("bounds-").and_then(|r| r.strip_suffix(".owdb").or_else(|| r.strip_suffix(".json"))))
            .is_some_and(|nn| nn.len() == 2 && nn.bytes().all(|b| b.is_ascii_digit()))
    };
    if let Some(rest) = name.strip_prefix('.').and_then(|r| r.strip_suffix(".tmp")) {
        if let Some((t, random)) = rest.rsplit_once('.') {
            return target(t) && random.len() == 6 && random.bytes().all(|b| b.is_ascii_alphanumeric());
        }
        return false;
    }
    name.strip_suffix(".tmp").is_some_and(target)
}

/// Decompresses a published layer distributed as `scores.N.zst` (one zstd frame of exactly
/// `layer_size(n)` bytes).
fn decompress_vu(path: &Path, compressed: &[u8], n: u32) -> Result<Vec<u8>> {
    use std::io::Read;
    let want = layer_size(n);
    let bad = |what: String| Error::corrupt(path, Damage::Pack { what });
    let mut dec = zstd::stream::read::Decoder::with_buffer(compressed).map_err(|e| bad(format!("not a zstd file ({e})")))?;
    let mut out = Vec::with_capacity(want as usize);
    let read = (&mut dec).take(want + 1).read_to_end(&mut out).map_err(|e| bad(format!("does not decompress ({e})")))?;
    if read as u64 != want {
        return Err(Error::corrupt(path, Damage::Size { expected: want, found: read as u64 }));
    }
    Ok(out)
}

/// Where a layer's values are: a read-only map of its file (payload at an offset), or memory
/// (decoded from a pack or a `.zst`).
enum Data {
    Map(Mmap, usize),
    Owned(Vec<u8>),
}

/// One layer's values, memory-mapped read-only (or, from a compressed file, decoded into memory).
///
/// Invariant: `values().len() == layer_size(stones())`. The file must not be modified while it
/// is mapped (see the module documentation).
pub struct Layer {
    stones: u32,
    path: PathBuf,
    file: File,
    len: u64,
    data: Data,
    header: Option<Header>,
}

/// A layer opened for probing ([`DatabaseDir::open_table`]): values in a file or memory, or a
/// pack read in place.
#[derive(Debug)]
pub enum Table {
    /// Every value at hand (a native or published file, or a decoded one).
    Layer(Layer),
    /// A pack: each probe decodes part of one block.
    Pack(PackLayer),
}

impl Table {
    /// The value of position `index`, checked to lie in `-n..=n`.
    ///
    /// Cost: one memory read ([`Table::Layer`]) or part of a block's decoding ([`Table::Pack`]).
    ///
    /// # Errors
    /// [`Error::Corrupt`] for a value outside `-n..=n`, a size that disagrees, a damaged pack
    /// block.
    #[inline]
    pub fn get(&self, index: u64) -> Result<i8> {
        let n = self.stones();
        let value = match self {
            Table::Layer(l) => match l.values().get(index as usize) {
                Some(&v) => v,
                None => {
                    let found = l.values().len() as u64;
                    return Err(Error::corrupt(l.path(), Damage::Size { expected: layer_size(n), found }));
                }
            },
            Table::Pack(p) => p.get(index)?,
        };
        if u32::from(value.unsigned_abs()) > n {
            return Err(Error::corrupt(self.path(), Damage::ValueOutOfRange { index, value, stones: n }));
        }
        Ok(value)
    }

    /// The layer number.
    pub fn stones(&self) -> u32 {
        match self {
            Table::Layer(l) => l.stones(),
            Table::Pack(p) => p.stones(),
        }
    }

    /// The number of positions.
    pub fn len(&self) -> u64 {
        match self {
            Table::Layer(l) => l.values().len() as u64,
            Table::Pack(p) => p.header().entries,
        }
    }

    /// Always false: every layer holds at least one position.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        match self {
            Table::Layer(l) => l.path(),
            Table::Pack(p) => p.path(),
        }
    }

    /// See [`Layer::check_unchanged`].
    ///
    /// # Errors
    /// As [`Layer::check_unchanged`].
    pub fn check_unchanged(&self) -> Result<()> {
        match self {
            Table::Layer(l) => l.check_unchanged(),
            Table::Pack(p) => p.check_unchanged(),
        }
    }
}

impl std::fmt::Debug for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Layer").field("stones", &self.stones).field("path", &self.path).finish()
    }
}

/// Opens `path` for reading as a regular file, never blocking on a FIFO and never mapping a
/// directory or device. `missing` builds the error for a path with nothing there.
fn open_regular(path: &Path, missing: impl FnOnce() -> Error) -> Result<File> {
    match fs::metadata(path) {
        Ok(m) => {
            let found = FileKind::of(m.file_type());
            if found != FileKind::File {
                return Err(Error::NotAFile { path: path.into(), found, expected: FileKind::File });
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing()),
        Err(e) => return Err(Error::io(path, e)),
    }
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Should the entry be swapped for a FIFO between the check and the open, do not block.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing()),
        Err(e) => return Err(Error::io(path, e)),
    };
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    let found = FileKind::of(meta.file_type());
    if found != FileKind::File {
        return Err(Error::NotAFile { path: path.into(), found, expected: FileKind::File });
    }
    Ok(file)
}

/// Checks that `file` (at `path`) still has the length `opened` it had when it was mapped.
fn check_length(file: &File, path: &Path, opened: u64) -> Result<()> {
    let now = file.metadata().map_err(|e| Error::io(path, e))?.len();
    if now != opened {
        return Err(Error::corrupt(path, Damage::ChangedWhileOpen { opened, now }));
    }
    Ok(())
}

/// Opens and maps `path` read-only (see [`open_regular`]).
fn map_file(path: &Path, missing: impl FnOnce() -> Error) -> Result<(File, Mmap)> {
    let file = open_regular(path, missing)?;
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    if len == 0 {
        return Err(Error::corrupt(path, Damage::Empty));
    }
    // SAFETY: the map is read-only and this crate never writes to or truncates a finished layer
    // file; it replaces files by rename, which leaves existing maps valid. A file changed
    // underneath by another program is outside what this type can defend against (documented in
    // the module's contract; `Layer::check_unchanged` detects it between uses).
    let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    Ok((file, map))
}

impl Layer {
    /// Opens layer `n` of `rules` in this tool's format under `base`: as
    /// [`DatabaseDir::open`] on `DatabaseDir::native(base, rules)`.
    ///
    /// # Errors
    /// As [`DatabaseDir::new`] and [`DatabaseDir::open`].
    pub fn open_native(base: &Path, rules: Ruleset, n: u32, verify_payload: bool) -> Result<Layer> {
        DatabaseDir::native(base, rules)?.open(n, verify_payload)
    }

    /// Opens `scores.N` of a published-format (2002) directory: as [`DatabaseDir::open`] on
    /// `DatabaseDir::new(Format::Vu, dir, Ruleset::Awari)`.
    ///
    /// # Errors
    /// As [`DatabaseDir::new`] and [`DatabaseDir::open`].
    pub fn open_vu(dir: &Path, n: u32) -> Result<Layer> {
        DatabaseDir::new(Format::Vu, dir, Ruleset::Awari)?.open(n, false)
    }

    /// Opens a layer file at any path, expecting layer `n` of `rules`. See
    /// [`DatabaseDir::open`].
    ///
    /// # Errors
    /// As [`DatabaseDir::open`], with [`Error::Io`] for a missing file.
    pub fn open_file(path: &Path, rules: Ruleset, n: u32, verify_payload: bool) -> Result<Layer> {
        let missing = || Error::io(path, std::io::Error::from(std::io::ErrorKind::NotFound));
        let (file, map) = map_file(path, missing)?;
        Layer::from_map(path, file, map, rules, n, verify_payload)
    }

    fn from_map(path: &Path, file: File, map: Mmap, rules: Ruleset, n: u32, verify_payload: bool) -> Result<Layer> {
        let header = Header::decode(&map[..map.len().min(PAYLOAD_OFFSET as usize)], path)?;
        header.expect(VALUE_EXACT_I8, path)?;
        if header.rules != rules {
            return Err(Error::RulesetMismatch { path: path.into(), found: header.rules, expected: rules });
        }
        if header.stones != n {
            return Err(Error::LayerMismatch { path: path.into(), found: header.stones, expected: n });
        }
        let want = PAYLOAD_OFFSET + header.entries;
        if map.len() as u64 != want {
            return Err(Error::corrupt(path, Damage::Size { expected: want, found: map.len() as u64 }));
        }
        let len = map.len() as u64;
        let data = Data::Map(map, PAYLOAD_OFFSET as usize);
        let layer = Layer { stones: n, path: path.into(), file, len, data, header: Some(header) };
        if verify_payload {
            layer.check_payload()?;
        }
        Ok(layer)
    }

    /// Recomputes the payload checksum and compares it with the header's.
    ///
    /// Cost: one sequential read of the payload.
    ///
    /// # Errors
    /// [`Error::Corrupt`] on a mismatch. Always `Ok` for headerless (published-format) layers.
    pub fn check_payload(&self) -> Result<()> {
        let Some(h) = &self.header else { return Ok(()) };
        let computed = checksum_released(self.bytes(), &|r| self.release(r));
        if computed != h.payload_checksum {
            return Err(Error::corrupt(&self.path, Damage::PayloadChecksum { stored: h.payload_checksum, computed }));
        }
        Ok(())
    }

    /// Checks that the open file still has the length it had when it was mapped: a file
    /// truncated in place would make reading its mapped pages crash the process.
    ///
    /// Cost: one `fstat`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] with [`Damage::ChangedWhileOpen`]; [`Error::Io`] when `fstat` fails.
    pub fn check_unchanged(&self) -> Result<()> {
        check_length(&self.file, &self.path, self.len)
    }

    /// The layer number (stones on the board).
    pub fn stones(&self) -> u32 {
        self.stones
    }

    /// The file this layer was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header, for this tool's files (`None` for the published format).
    pub fn header(&self) -> Option<&Header> {
        self.header.as_ref()
    }

    /// The payload bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.data {
            Data::Map(map, offset) => &map[*offset..],
            Data::Owned(v) => v,
        }
    }

    /// The values, one per position in index order.
    pub fn values(&self) -> &[i8] {
        let b = self.bytes();
        // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid.
        unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<i8>(), b.len()) }
    }

    /// Gives the pages of payload bytes `range` back to the system: they leave the process's
    /// resident memory (and are read again from the file, or its cache, when next used).
    ///
    /// Cost: one `madvise` call.
    pub fn release(&self, range: std::ops::Range<u64>) {
        if let Data::Map(..) = self.data {
            let b = self.bytes();
            // SAFETY: a read-only shared mapping of a file: dropping its pages loses nothing.
            unsafe { crate::sys::release_within(b.as_ptr(), b.len(), range) };
        }
    }

    /// The first value outside `-n..=n` (index and value), if any.
    ///
    /// Cost: one sequential pass over the payload.
    pub fn first_out_of_range(&self) -> Option<(u64, i8)> {
        let n = self.stones;
        self.values().iter().position(|&v| u32::from(v.unsigned_abs()) > n).map(|i| (i as u64, self.values()[i]))
    }
}

/// One layer's forced-capture bounds ([`crate::bounds`]), memory-mapped read-only.
///
/// Invariant: the payload holds [`crate::bounds::payload_len`]`(stones())` bytes. The file must
/// not be modified while it is mapped (see the module documentation).
pub struct BoundsLayer {
    stones: u32,
    path: PathBuf,
    file: File,
    len: u64,
    map: Mmap,
    header: Header,
    codec: Codec,
}

impl std::fmt::Debug for BoundsLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundsLayer").field("stones", &self.stones).field("path", &self.path).finish()
    }
}

impl BoundsLayer {
    /// Opens a bounds file at any path, expecting layer `n` of `rules`. See
    /// [`DatabaseDir::open_bounds`].
    ///
    /// # Errors
    /// As [`DatabaseDir::open_bounds`], with [`Error::Io`] for a missing file.
    pub fn open_file(path: &Path, rules: Ruleset, n: u32, verify_payload: bool) -> Result<BoundsLayer> {
        let missing = || Error::io(path, std::io::Error::from(std::io::ErrorKind::NotFound));
        let (file, map) = map_file(path, missing)?;
        BoundsLayer::from_map(path, file, map, rules, n, verify_payload)
    }

    fn from_map(path: &Path, file: File, map: Mmap, rules: Ruleset, n: u32, verify_payload: bool) -> Result<BoundsLayer> {
        let header = Header::decode(&map[..map.len().min(PAYLOAD_OFFSET as usize)], path)?;
        header.expect(BOUNDS_TRIANGULAR, path)?;
        if header.rules != rules {
            return Err(Error::RulesetMismatch { path: path.into(), found: header.rules, expected: rules });
        }
        if header.stones != n {
            return Err(Error::LayerMismatch { path: path.into(), found: header.stones, expected: n });
        }
        let want = PAYLOAD_OFFSET + header.payload_len();
        if map.len() as u64 != want {
            return Err(Error::corrupt(path, Damage::Size { expected: want, found: map.len() as u64 }));
        }
        let len = map.len() as u64;
        let layer = BoundsLayer { stones: n, path: path.into(), file, len, map, header, codec: Codec::new(n) };
        if verify_payload {
            layer.check_payload()?;
        }
        Ok(layer)
    }

    /// Recomputes the payload checksum and compares it with the header's.
    ///
    /// Cost: one sequential read of the payload, its pages given back window by window.
    ///
    /// # Errors
    /// [`Error::Corrupt`] on a mismatch.
    pub fn check_payload(&self) -> Result<()> {
        let computed = checksum_released(self.payload(), &|r| self.release(r));
        if computed != self.header.payload_checksum {
            return Err(Error::corrupt(&self.path, Damage::PayloadChecksum { stored: self.header.payload_checksum, computed }));
        }
        Ok(())
    }

    /// The bounds of the position of index `i`.
    ///
    /// Cost: one or two byte reads of the map and a table read.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] when `i` is not an index of the layer; [`Error::Corrupt`]
    /// ([`Damage::BadBoundsCode`]) when the entry holds no valid code.
    pub fn get(&self, i: u64) -> Result<Bounds> {
        let size = layer_size(self.stones);
        if i >= size {
            return Err(Error::IndexOutOfRange { layer: self.stones, index: i, size });
        }
        self.codec.get(self.payload(), i).ok_or_else(|| Error::corrupt(&self.path, Damage::BadBoundsCode { index: i, code: self.codec.raw(self.payload(), i) }))
    }

    /// The codec of the layer (for decoding the payload in bulk).
    pub fn codec(&self) -> &Codec {
        &self.codec
    }

    /// The payload bytes.
    pub fn payload(&self) -> &[u8] {
        &self.map[PAYLOAD_OFFSET as usize..]
    }

    /// The layer number (stones on the board).
    pub fn stones(&self) -> u32 {
        self.stones
    }

    /// The file the bounds were read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Gives the pages of payload bytes `range` back to the system.
    ///
    /// Cost: one `madvise` call.
    pub fn release(&self, range: std::ops::Range<u64>) {
        let b = self.payload();
        // SAFETY: a read-only shared mapping of a file: dropping its pages loses nothing.
        unsafe { crate::sys::release_within(b.as_ptr(), b.len(), range) };
    }

    /// Checks that the open file still has the length it had when it was mapped.
    ///
    /// Cost: one `fstat`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] with [`Damage::ChangedWhileOpen`]; [`Error::Io`] when `fstat` fails.
    pub fn check_unchanged(&self) -> Result<()> {
        check_length(&self.file, &self.path, self.len)
    }
}

/// A file being written: a temporary beside the target, created exclusively (`O_EXCL`, a
/// unique random name, never following a link), that replaces the target only in
/// [`commit`](Self::commit), by rename after an `fsync`.
///
/// Invariants: until `commit` succeeds the target is untouched; dropping an `AtomicFile` (any
/// error path, a panic) removes the temporary; a killed process leaves at most a temporary
/// named `.TARGET.XXXXXX.tmp`, which [`DatabaseDir::remove_stale_temporaries`] cleans up.
pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    path: PathBuf,
}

impl AtomicFile {
    /// Creates the temporary for `path` in `path`'s directory (which must exist).
    ///
    /// # Errors
    /// [`Error::Io`] when the temporary cannot be created.
    pub fn create(path: &Path) -> Result<AtomicFile> {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let prefix = format!(".{name}.");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp").rand_bytes(6);
        #[cfg(unix)]
        {
            // Like any file the tool writes: readable by all, as the umask allows (tempfile's
            // default, 0600, would hide published databases from other users).
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o644));
        }
        let tmp = builder.tempfile_in(dir).map_err(|e| Error::io(dir.join(format!(".{name}.XXXXXX.tmp")), e))?;
        Ok(AtomicFile { tmp, path: path.to_path_buf() })
    }

    /// The open temporary file.
    pub fn file(&self) -> &File {
        self.tmp.as_file()
    }

    /// The temporary's path (for messages).
    pub fn tmp_path(&self) -> &Path {
        self.tmp.path()
    }

    /// The target path.
    pub fn target(&self) -> &Path {
        &self.path
    }

    /// Flushes the temporary to disk and renames it over the target; then syncs the directory.
    ///
    /// # Errors
    /// [`Error::Io`] when flushing or renaming fails; the temporary is then removed and the
    /// target untouched.
    pub fn commit(self) -> Result<PathBuf> {
        self.tmp.as_file().sync_all().map_err(|e| Error::io(self.tmp.path(), e))?;
        let path = self.path;
        self.tmp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        sync_dir(&path);
        Ok(path)
    }
}

/// A layer file being written: a preallocated, memory-mapped [`AtomicFile`] that becomes the
/// layer only in [`finish`](Self::finish).
pub struct LayerWriter {
    rules: Ruleset,
    stones: u32,
    /// What the payload holds ([`VALUE_EXACT_I8`] or [`BOUNDS_TRIANGULAR`]).
    encoding: u32,
    map: MmapMut,
    file: AtomicFile,
}

impl LayerWriter {
    /// Creates the temporary file of layer `n` in `dir` (native format), with its full size
    /// reserved on disk, so a full disk is reported here and not as a crash while values are
    /// written through the map.
    ///
    /// # Errors
    /// [`Error::Usage`] for a published-format directory; [`Error::Io`] when the directory cannot
    /// be created or the space cannot be reserved (the temporary is then removed).
    pub fn create(dir: &DatabaseDir, n: u32) -> Result<LayerWriter> {
        LayerWriter::create_kind(dir, n, VALUE_EXACT_I8)
    }

    /// As [`create`](Self::create), for layer `n`'s forced-capture bounds
    /// ([`DatabaseDir::bounds_path`], [`crate::bounds::payload_len`] payload bytes).
    ///
    /// # Errors
    /// As [`create`](Self::create).
    pub fn create_bounds(dir: &DatabaseDir, n: u32) -> Result<LayerWriter> {
        LayerWriter::create_kind(dir, n, BOUNDS_TRIANGULAR)
    }

    fn create_kind(dir: &DatabaseDir, n: u32, encoding: u32) -> Result<LayerWriter> {
        if dir.format() != Format::Native {
            return Err(Error::Usage("layers are written in the native format only".into()));
        }
        dir.create()?;
        let (path, payload) =
            if encoding == BOUNDS_TRIANGULAR { (dir.bounds_path(n), crate::bounds::payload_len(n)) } else { (dir.layer_path(n), layer_size(n)) };
        let file = AtomicFile::create(&path)?;
        let len = PAYLOAD_OFFSET + payload;
        crate::sys::reserve(file.file(), len).map_err(|e| Error::io(file.tmp_path(), e))?;
        // SAFETY: the file was just created by us (exclusively, under a unique name) with its full
        // length reserved; nothing else writes or truncates it while the map lives.
        let map = unsafe { MmapMut::map_mut(file.file()) }.map_err(|e| Error::io(file.tmp_path(), e))?;
        Ok(LayerWriter { rules: dir.rules(), stones: n, encoding, map, file })
    }

    /// The temporary file's path (where the other ranks of a distributed build write their
    /// shares: [`ShareWriter`]).
    pub fn tmp_path(&self) -> &Path {
        self.file.tmp_path()
    }

    /// The payload (one byte per position, in index order), initially zero.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.map[PAYLOAD_OFFSET as usize..]
    }

    /// The payload, and a handle that gives its pages back to the system while it is written
    /// (out-of-core builds keep only a window of the output resident).
    pub fn payload_and_pages(&mut self) -> (&mut [u8], PayloadPages<'_>) {
        let payload = &mut self.map[PAYLOAD_OFFSET as usize..];
        let pages = PayloadPages { ptr: payload.as_ptr() as usize, len: payload.len(), _borrow: std::marker::PhantomData };
        (payload, pages)
    }

    /// Gives the pages of payload bytes `range` back to the system (the bytes stay in the file).
    pub fn release(&self, range: std::ops::Range<u64>) {
        let b = &self.map[PAYLOAD_OFFSET as usize..];
        // SAFETY: a shared mapping of our own file: dropping its pages loses nothing.
        unsafe { crate::sys::release_within(b.as_ptr(), b.len(), range) };
    }

    /// The payload bytes as written so far.
    pub fn payload(&self) -> &[u8] {
        &self.map[PAYLOAD_OFFSET as usize..]
    }

    /// The payload as values.
    pub fn values(&self) -> &[i8] {
        let b = &self.map[PAYLOAD_OFFSET as usize..];
        // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid.
        unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<i8>(), b.len()) }
    }

    /// Writes the header with the payload checksum, flushes everything to disk and renames the
    /// file into place. Returns the final path.
    ///
    /// # Errors
    /// [`Error::Io`] when flushing or renaming fails; the final path is then untouched.
    pub fn finish(mut self) -> Result<PathBuf> {
        let sum = checksum_released(&self.map[PAYLOAD_OFFSET as usize..], &|r| self.release(r));
        let mut header = Header::new(self.rules, self.stones, sum);
        header.encoding = self.encoding;
        self.map[..HEADER_LEN].copy_from_slice(&header.encode());
        self.map.flush().map_err(|e| Error::io(self.file.tmp_path(), e))?;
        drop(self.map);
        self.file.commit()
    }
}

/// One rank's share of a layer file being written by the ranks of a distributed build: a shared
/// writable mapping of payload bytes `range` of the temporary file another rank (rank 0)
/// created with [`LayerWriter::create`]. Ranks write disjoint shares whose ends are multiples of
/// the page size, so no two ranks ever write one page.
pub struct ShareWriter {
    map: Option<MmapMut>,
    path: PathBuf,
}

impl ShareWriter {
    /// Maps payload bytes `range` of the temporary layer file `path` of layer `n` for writing.
    ///
    /// # Errors
    /// [`Error::NotAFile`] / [`Error::Io`] when `path` is not a regular file that can be opened
    /// for writing; [`Error::Corrupt`] when it does not have the length of layer `n`'s file.
    pub fn open(path: &Path, n: u32, range: std::ops::Range<u64>) -> Result<ShareWriter> {
        let file = open_regular(path, || Error::io(path, std::io::ErrorKind::NotFound.into()))?;
        drop(file);
        let file = OpenOptions::new().read(true).write(true).open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let expected = PAYLOAD_OFFSET + layer_size(n);
        if len != expected || range.end > layer_size(n) {
            return Err(Error::corrupt(path, Damage::Size { expected, found: len }));
        }
        let map = if range.is_empty() {
            None
        } else {
            // SAFETY: the temporary is written only through the ranks' disjoint share maps until
            // every rank has flushed; nothing truncates it while the map lives.
            let m = unsafe { memmap2::MmapOptions::new().offset(PAYLOAD_OFFSET + range.start).len((range.end - range.start) as usize).map_mut(&file) }
                .map_err(|e| Error::io(path, e))?;
            Some(m)
        };
        Ok(ShareWriter { map, path: path.into() })
    }

    /// The share's bytes.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.map.as_deref_mut().unwrap_or(&mut [])
    }

    /// The share's bytes, and a handle giving their pages back while they are written.
    pub fn bytes_and_pages(&mut self) -> (&mut [u8], PayloadPages<'_>) {
        let bytes = self.map.as_deref_mut().unwrap_or(&mut []);
        let pages = PayloadPages { ptr: bytes.as_ptr() as usize, len: bytes.len(), _borrow: std::marker::PhantomData };
        (bytes, pages)
    }

    /// Writes the share to the file (`msync`), so that the rank finishing the file reads it.
    ///
    /// # Errors
    /// [`Error::Io`] when the write-back fails.
    pub fn finish(self) -> Result<()> {
        if let Some(m) = &self.map {
            m.flush().map_err(|e| Error::io(&self.path, e))?;
        }
        Ok(())
    }
}

/// Gives back the pages of a [`LayerWriter`]'s payload while the payload is borrowed for
/// writing (see [`LayerWriter::payload_and_pages`]).
pub struct PayloadPages<'a> {
    ptr: usize,
    len: usize,
    _borrow: std::marker::PhantomData<&'a ()>,
}

impl PayloadPages<'_> {
    /// Gives the pages of payload bytes `range` back to the system (the bytes stay in the file).
    pub fn release(&self, range: std::ops::Range<u64>) {
        // SAFETY: the writer's shared file mapping, alive for 'a: dropping pages loses nothing.
        unsafe { crate::sys::release_within(self.ptr as *const u8, self.len, range) };
    }
}

/// Bytes read (and then given back) at a time by [`scan_released`].
const WINDOW: usize = 64 << 20;

/// Calls `f` on `values` (a file mapping) window by window, giving each window's pages back with
/// `release` once it is read, so the whole file is never resident at once.
pub fn scan_released<T>(values: &[T], release: &dyn Fn(std::ops::Range<u64>), mut f: impl FnMut(&[T])) {
    let window = WINDOW / std::mem::size_of::<T>().max(1);
    for (k, w) in values.chunks(window).enumerate() {
        f(w);
        let a = (k * WINDOW) as u64;
        release(a..a + std::mem::size_of_val(w) as u64);
    }
}

/// [`checksum`](crate::format::checksum) of `bytes` (a file mapping), read with
/// [`scan_released`].
pub fn checksum_released(bytes: &[u8], release: &dyn Fn(std::ops::Range<u64>)) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    scan_released(bytes, release, |w| h.update(w));
    h.digest()
}

/// Best-effort fsync of the directory holding `path`, so a rename survives a power cut.
pub fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent() {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

/// Writes a small file atomically through an [`AtomicFile`].
///
/// # Errors
/// [`Error::Io`] on any failure; `path` is then untouched and no temporary is left.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let f = AtomicFile::create(path)?;
    let mut w = f.file();
    w.write_all(bytes).map_err(|e| Error::io(f.tmp_path(), e))?;
    f.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_are_recognised() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("layer-05.owdb");
        let f = AtomicFile::create(&target).unwrap();
        let name = f.tmp_path().file_name().unwrap().to_str().unwrap().to_string();
        assert!(is_temporary_name(&name), "{name}");
        assert!(is_temporary_name(".layer-12.json.Ab3dE9.tmp"));
        assert!(is_temporary_name("layer-05.owdb.tmp"), "earlier versions' name");
        for other in ["layer-05.owdb", ".my-own-notes-file.tmp", ".layer-05.owdb.toolong1.tmp", "notes.tmp", ".layer-5.owdb.abcdef.tmp"] {
            assert!(!is_temporary_name(other), "{other}");
        }
        drop(f);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0, "dropping removes the temporary");
    }

    #[cfg(unix)]
    #[test]
    fn written_files_are_readable_by_others() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("layer-01.json");
        write_atomic(&target, b"{}").unwrap();
        let mode = fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
        let umask = status.lines().find_map(|l| l.strip_prefix("Umask:")).and_then(|u| u32::from_str_radix(u.trim(), 8).ok()).unwrap_or(0o022);
        assert_eq!(mode, 0o644 & !umask, "{mode:o} with umask {umask:o}");
    }

    #[test]
    fn atomic_write_never_follows_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        fs::write(&victim, "keep").unwrap();
        let target = dir.path().join("layer-05.json");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&victim, dir.path().join("layer-05.json.tmp")).unwrap();
        write_atomic(&target, b"new").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
    }
}
