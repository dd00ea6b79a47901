//! [`DatabaseDir`]: the one type that knows a database directory's layout.

use std::fs::{self};
use std::path::{Path, PathBuf};

use crate::error::{Damage, Error, FileContent, FileKind, Result};
use crate::index::{layer_size, MAX_STONES};
use crate::pack::is_pack;
use crate::rules::Ruleset;

use super::layer::{Kind, ValuesKind};
use super::layer::{Layer, Table};
use super::mapping::*;
use super::*;

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

    /// The directory `base` for `rules` in the format it holds: the published 2002 files when
    /// `rules` is `awari`, `base` has no `awari/` subdirectory and holds `scores.0` (or
    /// `scores.0.zst`); otherwise this tool's layout (see [`new`](Self::new)). For programs that
    /// are given a directory without its format (the Python and C libraries), so unlike
    /// [`new`](Self::new) it insists that `base` exists and is a directory: a program given a
    /// wrong path learns it when it opens the database, not on every probe after.
    ///
    /// Cost: up to four `stat`s besides [`new`](Self::new)'s.
    ///
    /// # Errors
    /// [`Error::Io`] when `base` cannot be read (it does not exist, the path is empty, no
    /// permission), [`Error::NotAFile`] when it is not a directory, or as [`new`](Self::new).
    pub fn detect(base: impl Into<PathBuf>, rules: Ruleset) -> Result<DatabaseDir> {
        let base = base.into();
        let meta = fs::metadata(&base).map_err(|source| Error::Io { path: base.clone(), source })?;
        if !meta.is_dir() {
            return Err(Error::NotAFile { path: base, found: FileKind::of(meta.file_type()), expected: FileKind::Directory });
        }
        let published = rules == Ruleset::Awari && !base.join(rules.name()).exists() && (base.join("scores.0").exists() || base.join("scores.0.zst").exists());
        DatabaseDir::new(if published { Format::Vu } else { Format::Native }, base, rules)
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

    /// Whether this directory can hold layer `n`'s file of kind `K`: a layer of at most 48
    /// stones, and only values in the published format.
    pub(super) fn holds<K: Kind>(&self, n: u32) -> bool {
        n <= MAX_STONES && (self.format == Format::Native || K::CONTENT == FileContent::Values)
    }

    /// The path of layer `n`'s file of kind `K` in its uncompressed form (which may not exist):
    /// where a build writes it. `layer-NN.owdb`, `bounds-NN.owdb` or `dtc-NN.owdb` in the
    /// ruleset's directory; in the published format, values at `scores.N`.
    pub fn path<K: Kind>(&self, n: u32) -> PathBuf {
        match self.format {
            Format::Vu if K::CONTENT == FileContent::Values => vu_path(&self.base, n),
            _ => native_path::<K>(&self.base, self.rules, n),
        }
    }

    /// The path layer `n`'s file of kind `K` is read from: [`path`](Self::path) when anything
    /// is there, else its compressed form when the kind has one and it exists (a pack
    /// `layer-NN.owpk` or `dtc-NN.owpk` beside a native file's place, `scores.N.zst` beside a
    /// published file's), else `path`.
    ///
    /// Cost: one or two `stat`s.
    pub fn found_path<K: Kind>(&self, n: u32) -> PathBuf {
        let plain = self.path::<K>(n);
        if !K::PACKED || fs::symlink_metadata(&plain).is_ok() {
            return plain;
        }
        let packed = match self.format {
            Format::Native => pack_path::<K>(&self.base, self.rules, n),
            Format::Vu => self.base.join(format!("scores.{n}.zst")),
        };
        if fs::symlink_metadata(&packed).is_ok() {
            packed
        } else {
            plain
        }
    }

    /// The path of the statistics file of layer `n`'s file of kind `K` (`layer-NN.json`,
    /// `bounds-NN.json`, `dtc-NN.json`).
    pub(crate) fn stats_path<K: Kind>(&self, n: u32) -> PathBuf {
        ruleset_dir(&self.base, self.rules).join(format!("{}-{n:02}.json", K::CONTENT.name()))
    }

    /// The error for layer `n`'s file of kind `K` being absent: for values
    /// [`Error::LayerMissing`] (native) or [`Error::PublishedLayerMissing`] (vu), for the files
    /// beside them [`Error::CompanionMissing`].
    pub fn missing<K: Kind>(&self, n: u32) -> Error {
        match (K::CONTENT, self.format) {
            (FileContent::Values, Format::Native) => Error::LayerMissing { layer: n, dir: self.layers_dir(), rules: self.rules },
            (FileContent::Values, Format::Vu) => Error::PublishedLayerMissing { layer: n, path: self.path::<K>(n) },
            (kind, _) => Error::CompanionMissing { kind, layer: n, dir: self.layers_dir(), rules: self.rules },
        }
    }

    /// What is at layer `n`'s path of kind `K` (its [`found_path`](Self::found_path)), from its
    /// directory entry only (nothing is opened, so a FIFO never blocks): absent (nothing there),
    /// a regular file, or something unreadable as a file (a directory, a FIFO, a dangling link:
    /// [`LayerState::Unreadable`], never absent). Always [`LayerState::Absent`] for a file the
    /// directory cannot hold (above layer 48, the files beside the values in the published
    /// format).
    ///
    /// Cost: one `stat`.
    pub fn file_state<K: Kind>(&self, n: u32) -> LayerState {
        if !self.holds::<K>(n) {
            return LayerState::Absent;
        }
        let path = self.found_path::<K>(n);
        match fs::metadata(&path) {
            Ok(m) => match FileKind::of(m.file_type()) {
                FileKind::File => LayerState::Present,
                found => LayerState::Unreadable(Error::NotAFile { path, found, expected: FileKind::File }),
            },
            // Nothing there is absent; a dangling link, a link loop or a denied lookup is not.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => crate::sys::dangling_link(&path).map_or(LayerState::Absent, LayerState::Unreadable),
            Err(e) => LayerState::Unreadable(Error::io(path, e)),
        }
    }

    /// Whether a regular file is at layer `n`'s path of kind `K` (nothing is opened): unlike
    /// [`file_state`](Self::file_state), a directory or a FIFO there is not one.
    ///
    /// Cost: one `stat`.
    pub fn has<K: Kind>(&self, n: u32) -> bool {
        self.holds::<K>(n) && fs::metadata(self.found_path::<K>(n)).is_ok_and(|m| m.is_file())
    }

    /// The layers whose values are not [`LayerState::Absent`] (present or unreadable), in
    /// increasing order.
    ///
    /// Cost: one `stat` per possible layer (49).
    pub fn layers_on_disk(&self) -> Vec<u32> {
        (0..=MAX_STONES).filter(|&n| !matches!(self.file_state::<ValuesKind>(n), LayerState::Absent)).collect()
    }

    /// The first layer, from 0 up, whose values are not present as a regular file, with their
    /// state (`None` when all 49 are present). See [`gap`](Self::gap) for the one absent layer
    /// a directory may have without missing anything.
    ///
    /// Cost: one `stat` per layer up to it.
    pub fn first_not_present(&self) -> Option<(u32, LayerState)> {
        (0..=MAX_STONES).find_map(|n| match self.file_state::<ValuesKind>(n) {
            LayerState::Present => None,
            s => Some((n, s)),
        })
    }

    /// The gap `oware build --for` leaves, if this directory has one: layer `top - 1` absent,
    /// where `top` (2 or more) is the highest layer present and every other layer below it is
    /// present. No layer present needs it (layer `top` reads `0..=top-2`: a capture takes at
    /// least 2 stones), so consumers of the whole directory take `0..=top` without it.
    ///
    /// Cost: one `stat` per possible layer (49).
    pub fn gap(&self) -> Option<u32> {
        let state = |n| self.file_state::<ValuesKind>(n);
        let states: Vec<bool> = (0..=MAX_STONES).map(|n| matches!(state(n), LayerState::Present)).collect();
        let top = states.iter().rposition(|&p| p)? as u32;
        let gap = crate::rules::layer_not_needed(top)?;
        let absent = (0..top).filter(|&n| !states[n as usize]).collect::<Vec<u32>>();
        (absent == [gap] && matches!(state(gap), LayerState::Absent)).then_some(gap)
    }

    /// The layers of `0..=last` a consumer of the directory takes: all of them, less the
    /// directory's [`gap`](Self::gap) when it lies below `last` (a layer asked for as the last
    /// one is never left out).
    ///
    /// Cost: as [`gap`](Self::gap).
    pub fn layers_up_to(&self, last: u32) -> Vec<u32> {
        let gap = self.gap();
        (0..=last.min(MAX_STONES)).filter(|&n| !(Some(n) == gap && n < last)).collect()
    }

    /// Opens layer `n`'s file of kind `K` for reading all its entries and checks it: header
    /// fields, ruleset, layer number, kind, size and, with `verify_payload`, the payload
    /// checksum (native format); the size (values in the published format). A pack (see
    /// [`found_path`](Self::found_path)) is decoded whole into memory (depths to capture with
    /// the layer's values) and always checked against its payload checksum; so is a
    /// `scores.N.zst`.
    ///
    /// Cost: one `stat`, one `open`, one `mmap`; with `verify_payload`, one sequential read of
    /// the file. A pack or `.zst`: one parallel decoding pass and the payload's size in memory.
    ///
    /// # Errors
    /// [`missing`](Self::missing) when absent (or a file the directory cannot hold);
    /// [`Error::NotAFile`] for a directory, FIFO or other non-regular file;
    /// [`Error::RulesetMismatch`] / [`Error::LayerMismatch`] when the header names another
    /// ruleset or layer; [`Error::Corrupt`] for a bad header, size, checksum, a file of another
    /// kind or a damaged pack block; [`Error::Io`] when it cannot be read.
    ///
    /// # Examples
    /// ```
    /// use oware::builder::{self, BuildConfig, Silent};
    /// use oware::storage::{DatabaseDir, DtcKind, ValuesKind};
    /// use oware::{Error, Ruleset};
    ///
    /// let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// builder::build(&BuildConfig { rules: Ruleset::Awari, max_stones: 4, dir: tmp.path().into(), companions: vec![oware::error::FileContent::Dtc], ..Default::default() }, &Silent)?;
    /// let dir = DatabaseDir::native(tmp.path(), Ruleset::Awari)?;
    /// let values = dir.open_layer::<ValuesKind>(4, true)?;
    /// let depths = dir.open_layer::<DtcKind>(4, true)?;
    /// assert_eq!(values.values().len(), 1365);
    /// // A depth exactly where the value is not 0.
    /// assert_eq!(depths.get(7)?.is_some(), values.get(7)? != 0);
    /// assert!(matches!(dir.open_layer::<DtcKind>(5, true), Err(Error::CompanionMissing { layer: 5, .. })));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn open_layer<K: Kind>(&self, n: u32, verify_payload: bool) -> Result<Layer<K>> {
        let missing = || self.missing::<K>(n);
        if !self.holds::<K>(n) {
            return Err(missing());
        }
        let path = self.found_path::<K>(n);
        let (file, map) = map_file(&path, missing)?;
        match self.format {
            Format::Native if K::PACKED && is_pack(&map) => K::unpack(self, n, &path, file, map, verify_payload),
            Format::Vu if path.extension().is_some_and(|e| e == "zst") => {
                let values = decompress_vu(&path, &map, n)?;
                Layer::decoded(&path, file, values, self, n)
            }
            format => Layer::from_map(&path, file, map, format, self.rules, n, verify_payload),
        }
    }

    /// Opens layer `n`'s file of kind `K` for probing, read as `mode` says: as
    /// [`open_layer`](Self::open_layer) does, except that a pack is read in place (with
    /// `verify_payload` every block's checksum is checked now, otherwise each group of blocks
    /// the first time it is read; depths to capture with the layer's values opened the same
    /// way), told by its magic whatever the file's name. With [`ReadMode::Pread`] an
    /// uncompressed file is not mapped but copied into memory while the copies fit in
    /// [`ReadMode::COPY_BUDGET`] ([`Table::Layer`] holding a copy), else read entry by entry
    /// ([`Table::File`]; its header, size and, with `verify_payload`, checksum checked the same
    /// way), so that a file truncated under the reader cannot crash it. Packs stay mapped and
    /// `scores.N.zst` files are decoded into memory whatever the mode.
    ///
    /// Cost: as `open_layer` for an uncompressed file; for a pack, one `mmap`, its model and
    /// table, and with `verify_payload` one sequential read of the pack; with `ReadMode::Pread`,
    /// one sequential read of the file (a copy) or two or three `pread` calls (with
    /// `verify_payload`, one sequential read in 1 MiB pieces).
    ///
    /// # Errors
    /// As [`open_layer`](Self::open_layer); [`Error::Corrupt`] ([`Damage::WrongContent`]) for a
    /// pack where the kind has none (bounds).
    pub fn open_table<K: Kind>(&self, n: u32, verify_payload: bool, mode: ReadMode) -> Result<Table<K>> {
        let missing = || self.missing::<K>(n);
        if !self.holds::<K>(n) {
            return Err(missing());
        }
        let path = self.found_path::<K>(n);
        let native = self.format == Format::Native;
        if !native && path.extension().is_some_and(|e| e == "zst") {
            return self.open_layer(n, verify_payload).map(Table::Layer);
        }
        if mode == ReadMode::Map {
            let (file, map) = map_file(&path, missing)?;
            if native && is_pack(&map) {
                return Ok(Table::Pack(K::open_packed(self, n, &path, file, map, verify_payload, mode)?));
            }
            return Layer::from_map(&path, file, map, self.format, self.rules, n, verify_payload).map(Table::Layer);
        }
        let file = open_regular(&path, missing)?;
        let mut magic = [0u8; 8];
        if native && read_prefix(&file, &mut magic) == magic.len() && is_pack(&magic) {
            let (file, map) = map_file(&path, missing)?;
            return Ok(Table::Pack(K::open_packed(self, n, &path, file, map, verify_payload, mode)?));
        }
        Table::read(&path, file, self, n, verify_payload)
    }

    /// Creates the layers' directory (native format) if needed.
    ///
    /// # Errors
    /// [`Error::Io`] when it cannot be created.
    pub fn create(&self) -> Result<()> {
        let dir = self.layers_dir();
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))
    }

    /// Writes layer `n`'s file of kind `K` (native format) with a payload of `len` bytes: a
    /// temporary beside it, with its full size reserved on disk (a full disk is reported here,
    /// not as a crash while the payload is written), whose payload `fill` writes (initially
    /// zero: for values one byte per position, in index order); then the size is checked as a
    /// reader checks it, the header written with the payload checksum, and the file flushed and
    /// renamed into place. Returns the path.
    ///
    /// Invariants: the layer's file is untouched unless every step succeeds; on any error
    /// (`fill`'s included) the temporary is removed.
    ///
    /// Cost: the file's size on disk, and one read of the payload for its checksum.
    ///
    /// # Errors
    /// [`Error::Usage`] for a published-format directory; [`Error::Corrupt`] naming the file
    /// when `len` is no payload length of the kind (for depths to capture, one that disagrees
    /// with the count of escaped depths in the payload's last 8 bytes); [`Error::Io`] when the
    /// directory or the temporary cannot be created, the space cannot be reserved, or the file
    /// cannot be flushed and renamed; those of `fill`.
    ///
    /// # Examples
    /// ```
    /// use oware::index::layer_size;
    /// use oware::storage::{DatabaseDir, ValuesKind};
    /// use oware::{Error, Ruleset};
    ///
    /// let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let dir = DatabaseDir::native(tmp.path(), Ruleset::Awari)?;
    /// let path = dir.write_layer::<ValuesKind>(2, layer_size(2), |payload| {
    ///     payload.fill(0);
    ///     Ok(())
    /// })?;
    /// assert_eq!(path, dir.path::<ValuesKind>(2));
    /// // Header and checksum check out.
    /// assert_eq!(dir.open_layer::<ValuesKind>(2, true)?.header().map(|h| h.stones), Some(2));
    /// // A failing `fill` leaves nothing behind.
    /// assert!(dir.write_layer::<ValuesKind>(3, layer_size(3), |_| Err(Error::Interrupted)).is_err());
    /// assert_eq!(std::fs::read_dir(dir.layers_dir()).map_err(|e| Error::io("read_dir", e))?.count(), 1);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn write_layer<K: Kind>(&self, n: u32, len: u64, fill: impl FnOnce(&mut [u8]) -> Result<()>) -> Result<PathBuf> {
        let mut w = LayerWriter::create::<K>(self, n, len)?;
        fill(w.payload_mut())?;
        let file_len = crate::format::PAYLOAD_OFFSET + len;
        let header = crate::format::Header { encoding: K::ENCODING, ..crate::format::Header::new(self.rules, n, 0) };
        let payload = w.payload();
        let read = |buf: &mut [u8], at: u64| {
            let at = (at - crate::format::PAYLOAD_OFFSET) as usize;
            buf.copy_from_slice(&payload[at..at + buf.len()]);
            Ok(())
        };
        K::layout(&self.path::<K>(n), n, Some(&header), file_len, &read)?;
        w.finish()
    }

    /// Removes temporary files this crate left behind in the layers' directory (a killed
    /// process leaves its `.NAME.XXXXXX.tmp`). Only regular files with this crate's temporary
    /// names are removed; links and everything else are left alone. Call it only while holding
    /// the directory's build lock. Returns the paths removed.
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be listed or a file cannot be removed.
    pub(crate) fn remove_stale_temporaries(&self) -> Result<Vec<PathBuf>> {
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
/// `.NAME-NN.owdb.XXXXXX.tmp` / `.NAME-NN.json.XXXXXX.tmp` for the files of every kind
/// (`layer`, `bounds`, `dtc`), or the fixed `layer-NN.owdb.tmp` / `layer-NN.json.tmp` of earlier
/// versions. Nothing else matches.
pub(super) fn is_temporary_name(name: &str) -> bool {
    let target = |t: &str| {
        FileContent::all()
            .find_map(|c| t.strip_prefix(c.name()).and_then(|r| r.strip_prefix('-')).and_then(|r| r.strip_suffix(".owdb").or_else(|| r.strip_suffix(".json"))))
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
    let bad = |what: String| Error::corrupt(path, Damage::Compressed { what });
    let mut dec = zstd::stream::read::Decoder::with_buffer(compressed).map_err(|e| bad(format!("not a zstd file ({e})")))?;
    let mut out = Vec::with_capacity(want as usize);
    let read = (&mut dec).take(want + 1).read_to_end(&mut out).map_err(|e| bad(format!("does not decompress ({e})")))?;
    if read as u64 != want {
        return Err(Error::corrupt(path, Damage::Size { expected: want, found: read as u64 }));
    }
    Ok(out)
}
