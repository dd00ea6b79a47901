//! [`DatabaseDir`]: the one type that knows a database directory's layout.

use std::fs::{self};
use std::path::{Path, PathBuf};

use crate::error::{Damage, Error, FileKind, Result};
use crate::index::{layer_size, MAX_STONES};
use crate::pack::{is_pack, DtcPack, PackLayer};
use crate::rules::Ruleset;
use crate::sys::FileStamp;

use super::layers::*;
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
    pub(crate) fn found_path(&self, n: u32) -> PathBuf {
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

    /// The path of layer `n`'s file of kind `kind` (native format): `bounds-NN.owdb` or
    /// `dtc-NN.owdb`.
    pub fn companion_path(&self, kind: Companion, n: u32) -> PathBuf {
        companion_path(&self.base, self.rules, kind, n)
    }

    /// The path layer `n`'s file of kind `kind` is read from: its
    /// [`companion_path`](Self::companion_path) when anything is there, else for depths to
    /// capture their pack (`dtc-NN.owpk`) when that exists, else `companion_path`.
    ///
    /// Cost: one or two `stat`s.
    pub fn found_companion_path(&self, kind: Companion, n: u32) -> PathBuf {
        let plain = self.companion_path(kind, n);
        if kind == Companion::Dtc && fs::symlink_metadata(&plain).is_err() {
            let packed = dtc_pack_path(&self.base, self.rules, n);
            if fs::symlink_metadata(&packed).is_ok() {
                return packed;
            }
        }
        plain
    }

    /// The path of layer `n`'s forced-capture bounds (native format).
    pub fn bounds_path(&self, n: u32) -> PathBuf {
        self.companion_path(Companion::Bounds, n)
    }

    /// The path of layer `n`'s depths to capture (native format).
    pub fn dtc_path(&self, n: u32) -> PathBuf {
        self.companion_path(Companion::Dtc, n)
    }

    /// The path of the statistics file of layer `n`'s file of kind `kind` (`bounds-NN.json`,
    /// `dtc-NN.json`).
    pub(crate) fn companion_stats_path(&self, kind: Companion, n: u32) -> PathBuf {
        ruleset_dir(&self.base, self.rules).join(format!("{}-{n:02}.json", kind.name()))
    }

    /// Opens layer `n`'s file of kind `K` (its forced-capture bounds, its depths to capture) and
    /// checks it: header fields, ruleset, layer, kind, size and, with `verify_payload`, the
    /// payload checksum.
    ///
    /// Cost: one `stat`, one `open`, one `mmap`; with `verify_payload`, one sequential read.
    ///
    /// # Errors
    /// [`Error::BoundsMissing`] / [`Error::DtcMissing`] when absent (or for the published
    /// format, which has none); [`Error::NotAFile`] for a directory, FIFO or other non-regular
    /// file; [`Error::RulesetMismatch`] / [`Error::LayerMismatch`] when the header names another
    /// ruleset or layer; [`Error::Corrupt`] for a bad header, size, checksum, or a file of
    /// another kind; [`Error::Io`] when it cannot be read.
    ///
    /// A pack of depths (`dtc-NN.owpk`, read where `dtc-NN.owdb` is absent) is decoded whole into
    /// memory, with the layer's values, and always checked against its payload checksum.
    pub fn open_companion<K: CompanionKind>(&self, n: u32, verify_payload: bool) -> Result<CompanionLayer<K>> {
        let missing = || K::KIND.missing(n, self.layers_dir(), self.rules);
        if n > MAX_STONES || self.format != Format::Native {
            return Err(missing());
        }
        let path = self.found_companion_path(K::KIND, n);
        let (file, map) = map_file(&path, missing)?;
        if K::KIND == Companion::Dtc && is_pack(&map) {
            let pack = DtcPack::open(&path, file, map, self.rules, n, verify_payload)?;
            let values = self.open(n, verify_payload)?;
            let mut bytes = vec![0u8; crate::format::PAYLOAD_OFFSET as usize];
            bytes[..crate::format::HEADER_LEN].copy_from_slice(&pack.header().encode());
            bytes.extend_from_slice(&pack.decode_payload(values.bytes())?);
            let file = pack.into_file();
            let stamp = FileStamp::of(&file, &path)?;
            return CompanionLayer::from_decoded(&path, file, stamp, bytes, self.rules, n);
        }
        CompanionLayer::from_map(&path, file, map, self.rules, n, verify_payload)
    }

    /// Opens layer `n`'s file of kind `K` for probing as
    /// [`open_companion`](Self::open_companion) does, read as `mode` says: with
    /// [`ReadMode::Pread`] the file is not mapped but copied into memory while the copies fit in
    /// [`ReadMode::COPY_BUDGET`], else read entry by entry ([`CompanionTable::File`]), so that a
    /// file truncated under the reader cannot crash it.
    ///
    /// Cost: as `open_companion`; with `ReadMode::Pread`, one sequential read of the file (a
    /// copy) or two or three `pread` calls (with `verify_payload`, one sequential read in 1 MiB
    /// pieces).
    ///
    /// # Errors
    /// As [`open_companion`](Self::open_companion).
    pub fn open_companion_with<K: CompanionKind>(&self, n: u32, verify_payload: bool, mode: ReadMode) -> Result<CompanionTable<K>> {
        let missing = || K::KIND.missing(n, self.layers_dir(), self.rules);
        if n > MAX_STONES || self.format != Format::Native {
            return Err(missing());
        }
        // A pack is told by its magic, whatever the file's name, and stays mapped (as the
        // values' packs do) whatever the mode.
        let path = self.found_companion_path(K::KIND, n);
        if mode == ReadMode::Map {
            let (file, map) = map_file(&path, missing)?;
            if is_pack(&map) {
                return Ok(CompanionTable::Pack(K::open_packed(self, n, &path, file, map, verify_payload, mode)?));
            }
            return CompanionLayer::from_map(&path, file, map, self.rules, n, verify_payload).map(CompanionTable::Layer);
        }
        let file = open_regular(&path, missing)?;
        let mut magic = [0u8; 8];
        if read_prefix(&file, &mut magic) == magic.len() && is_pack(&magic) {
            let (file, map) = map_file(&path, missing)?;
            return Ok(CompanionTable::Pack(K::open_packed(self, n, &path, file, map, verify_payload, mode)?));
        }
        CompanionTable::read(&path, file, self.rules, n, verify_payload)
    }

    /// Opens the forced-capture bounds of layer `n`: [`open_companion`](Self::open_companion).
    ///
    /// # Errors
    /// As [`open_companion`](Self::open_companion) ([`Error::BoundsMissing`] when absent).
    pub fn open_bounds(&self, n: u32, verify_payload: bool) -> Result<BoundsLayer> {
        self.open_companion(n, verify_payload)
    }

    /// Opens the forced-capture bounds of layer `n` for probing:
    /// [`open_companion_with`](Self::open_companion_with).
    ///
    /// # Errors
    /// As [`open_companion`](Self::open_companion) ([`Error::BoundsMissing`] when absent).
    pub fn open_bounds_with(&self, n: u32, verify_payload: bool, mode: ReadMode) -> Result<BoundsTable> {
        self.open_companion_with(n, verify_payload, mode)
    }

    /// Opens the depths to capture of layer `n`: [`open_companion`](Self::open_companion).
    ///
    /// # Errors
    /// As [`open_companion`](Self::open_companion) ([`Error::DtcMissing`] when absent).
    pub fn open_dtc(&self, n: u32, verify_payload: bool) -> Result<DtcLayer> {
        self.open_companion(n, verify_payload)
    }

    /// Opens the depths to capture of layer `n` for probing:
    /// [`open_companion_with`](Self::open_companion_with).
    ///
    /// # Errors
    /// As [`open_companion`](Self::open_companion) ([`Error::DtcMissing`] when absent).
    pub fn open_dtc_with(&self, n: u32, verify_payload: bool, mode: ReadMode) -> Result<DtcTable> {
        self.open_companion_with(n, verify_payload, mode)
    }

    /// Opens layer `n`'s packed depths to capture (`dtc-NN.owpk`, whatever else is there) as a
    /// [`DtcPack`]: header, model, tables and, with `verify_blocks`, every group's checksum.
    ///
    /// Cost: one `mmap`, the model's decompression, one pass over the tables.
    ///
    /// # Errors
    /// [`Error::DtcMissing`] when absent; [`Error::NotAFile`]; as [`DtcPack::open`].
    pub fn open_dtc_pack(&self, n: u32, verify_blocks: bool) -> Result<DtcPack> {
        let missing = || Companion::Dtc.missing(n, self.layers_dir(), self.rules);
        if n > MAX_STONES || self.format != Format::Native {
            return Err(missing());
        }
        let path = dtc_pack_path(&self.base, self.rules, n);
        let (file, map) = map_file(&path, missing)?;
        DtcPack::open(&path, file, map, self.rules, n, verify_blocks)
    }

    /// Writes layer `n`'s depths to capture (native format, `dtc-NN.owdb`) from a whole dtc
    /// `payload` (as [`CompanionLayer::payload_bytes`] gives it): a temporary with its full size
    /// reserved, the header with the payload checksum, flushed and renamed into place. Returns
    /// the path.
    ///
    /// # Errors
    /// [`Error::Corrupt`] when the payload does not split ([`crate::dtc::DtcPayload::new`]);
    /// [`Error::Io`] when writing fails (the temporary is removed, the final path untouched).
    pub fn write_dtc_payload(&self, n: u32, payload: &[u8]) -> Result<PathBuf> {
        let path = self.dtc_path(n);
        let split = crate::dtc::DtcPayload::new(n, payload).map_err(|e| Error::corrupt(&path, Damage::BadDtc { what: e.to_string() }))?;
        let mut w = super::writers::DtcWriter::create(self, n, split.escaped())?;
        let (bytes, records) = w.parts_mut();
        let size = bytes.len();
        bytes.copy_from_slice(&payload[..size]);
        records.copy_from_slice(&payload[size..payload.len() - 8]);
        w.finish()
    }

    /// Whether a regular file is at layer `n`'s path of kind `kind` (nothing is opened).
    ///
    /// Cost: one `stat`.
    pub fn has_companion(&self, kind: Companion, n: u32) -> bool {
        self.format == Format::Native && n <= MAX_STONES && fs::metadata(self.found_companion_path(kind, n)).is_ok_and(|m| m.is_file())
    }

    /// Whether a regular file is at layer `n`'s bounds path (nothing is opened).
    ///
    /// Cost: one `stat`.
    pub fn has_bounds(&self, n: u32) -> bool {
        self.has_companion(Companion::Bounds, n)
    }

    /// Whether a regular file is at layer `n`'s dtc path (nothing is opened).
    ///
    /// Cost: one `stat`.
    pub fn has_dtc(&self, n: u32) -> bool {
        self.has_companion(Companion::Dtc, n)
    }

    /// The path of layer `n`'s statistics file (native format).
    pub(crate) fn stats_path(&self, n: u32) -> PathBuf {
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
            // Nothing there is absent; a dangling link, a link loop or a denied lookup is not.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => super::mapping::dangling_link(&path).map_or(LayerState::Absent, LayerState::Unreadable),
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
    /// (`None` when all 49 are present). See [`gap`](Self::gap) for the one absent layer a
    /// directory may have without missing anything.
    ///
    /// Cost: one `stat` per layer up to it.
    pub fn first_not_present(&self) -> Option<(u32, LayerState)> {
        (0..=MAX_STONES).find_map(|n| match self.state(n) {
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
        let states: Vec<bool> = (0..=MAX_STONES).map(|n| matches!(self.state(n), LayerState::Present)).collect();
        let top = states.iter().rposition(|&p| p)? as u32;
        let gap = crate::rules::layer_not_needed(top)?;
        let absent = (0..top).filter(|&n| !states[n as usize]).collect::<Vec<u32>>();
        (absent == [gap] && matches!(self.state(gap), LayerState::Absent)).then_some(gap)
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

    /// Opens layer `n` for reading all its values and checks it: header fields, ruleset, layer
    /// number, size and, with `verify_payload`, the payload checksum (native format); the size
    /// (published format). A pack (see `found_path`) is decoded whole into
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
                let (path, file) = (pack.path().to_path_buf(), pack.into_file());
                let stamp = FileStamp::of(&file, &path)?;
                Ok(Layer { stones: n, path, file, stamp, data: Data::Owned(values), header })
            }
            Table::File(f) => Err(Error::Internal(format!("{}: opened for pread by open_table", f.path().display()))),
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
                let stamp = FileStamp::of(&file, &path)?;
                Ok(Table::Layer(Layer { stones: n, path, file, stamp, data: Data::Owned(values), header: None }))
            }
            Format::Vu => {
                if map.len() as u64 != layer_size(n) {
                    return Err(Error::corrupt(path, Damage::Size { expected: layer_size(n), found: map.len() as u64 }));
                }
                let stamp = FileStamp::of(&file, &path)?;
                Ok(Table::Layer(Layer { stones: n, path, file, stamp, data: Data::Map(map, 0), header: None }))
            }
        }
    }

    /// Opens layer `n` for probing as [`open_table`](Self::open_table) does, its values read as
    /// `mode` says: with [`ReadMode::Pread`] a native or published uncompressed file is not
    /// mapped but read value by value ([`Table::File`]; its header, size and, with
    /// `verify_payload`, checksum checked the same way), or, while the copies fit in
    /// [`ReadMode::COPY_BUDGET`], read whole into memory ([`Table::Layer`] holding a copy), so that a file
    /// truncated under the reader cannot crash it. Packs and `scores.N.zst` files are opened as by `open_table`
    /// (a pack stays mapped; a `.zst` is decoded into memory).
    ///
    /// Cost: as `open_table`; with `ReadMode::Pread` the header and size checks take two `pread`
    /// calls and the checksum one sequential read of the file in 1 MiB pieces.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_table_with(&self, n: u32, verify_payload: bool, mode: ReadMode) -> Result<Table> {
        if mode == ReadMode::Map || n > MAX_STONES {
            return self.open_table(n, verify_payload);
        }
        let path = self.found_path(n);
        if path.extension().is_some_and(|e| e == "zst") {
            return self.open_table(n, verify_payload);
        }
        let file = open_regular(&path, || self.missing(n))?;
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        if len == 0 {
            return Err(Error::corrupt(&path, Damage::Empty));
        }
        let native = self.format == Format::Native;
        if native {
            let mut magic = [0u8; 8];
            if read_prefix(&file, &mut magic) == magic.len() && is_pack(&magic) {
                return self.open_table(n, verify_payload);
            }
        }
        if let Some(budget) = CopyGuard::reserve(layer_size(n)) {
            // Checked (size and header) first, then read whole: the checksum is computed on the copy.
            let layer = FileLayer::open(&path, file, self.rules, n, native, false)?;
            if layer.entries() <= budget.bytes() {
                return Ok(Table::Layer(layer.into_memory(verify_payload, budget)?));
            }
            return Ok(Table::File(layer));
        }
        Ok(Table::File(FileLayer::open(&path, file, self.rules, n, native, verify_payload)?))
    }

    /// Creates the layers' directory (native format) if needed.
    ///
    /// # Errors
    /// [`Error::Io`] when it cannot be created.
    pub fn create(&self) -> Result<()> {
        let dir = self.layers_dir();
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))
    }

    /// Writes layer `n`'s file (native format): a temporary beside it, with its full size
    /// reserved on disk (a full disk is reported here, not as a crash while values are written),
    /// whose payload `fill` writes (one byte per position, in index order, initially zero); then
    /// the header with the payload checksum, flushed and renamed into place. Returns the path.
    ///
    /// Invariants: the layer's file is untouched unless every step succeeds; on any error
    /// (`fill`'s included) the temporary is removed.
    ///
    /// Cost: the layer's size on disk, and one read of the payload for its checksum.
    ///
    /// # Errors
    /// [`Error::Usage`] for a published-format directory; [`Error::Io`] when the directory or
    /// the temporary cannot be created, the space cannot be reserved, or the file cannot be
    /// flushed and renamed; those of `fill`.
    ///
    /// # Examples
    /// ```
    /// use oware::storage::DatabaseDir;
    /// use oware::{Error, Ruleset};
    ///
    /// let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    /// let dir = DatabaseDir::native(tmp.path(), Ruleset::Awari)?;
    /// let path = dir.write_layer(2, |payload| {
    ///     payload.fill(0);
    ///     Ok(())
    /// })?;
    /// assert_eq!(path, dir.layer_path(2));
    /// assert_eq!(dir.open(2, true)?.header().map(|h| h.stones), Some(2)); // header and checksum check out
    /// // A failing `fill` leaves nothing behind.
    /// assert!(dir.write_layer(3, |_| Err(Error::Interrupted)).is_err());
    /// assert_eq!(std::fs::read_dir(dir.layers_dir()).map_err(|e| Error::io("read_dir", e))?.count(), 1);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn write_layer(&self, n: u32, fill: impl FnOnce(&mut [u8]) -> Result<()>) -> Result<PathBuf> {
        let mut w = LayerWriter::create(self, n)?;
        fill(w.payload_mut())?;
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
/// `.layer-NN.owdb.XXXXXX.tmp` / `.layer-NN.json.XXXXXX.tmp` / `.bounds-NN.owdb.XXXXXX.tmp` /
/// `.dtc-NN.owdb.XXXXXX.tmp` (and their `.json`), or the fixed `layer-NN.owdb.tmp` /
/// `layer-NN.json.tmp` of earlier versions. Nothing else matches.
pub(super) fn is_temporary_name(name: &str) -> bool {
    let target = |t: &str| {
        t.strip_prefix("layer-")
            .and_then(|r| r.strip_suffix(".owdb").or_else(|| r.strip_suffix(".json")))
            .or_else(|| t.strip_prefix("bounds-").and_then(|r| r.strip_suffix(".owdb").or_else(|| r.strip_suffix(".json"))))
            .or_else(|| t.strip_prefix("dtc-").and_then(|r| r.strip_suffix(".owdb").or_else(|| r.strip_suffix(".json"))))
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
