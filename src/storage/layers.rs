//! Layers of values opened for reading: checked headers, memory-mapped payloads (or, with
//! [`ReadMode::Pread`], private copies and `pread`), pages given back. The files beside them
//! (bounds, depths to capture) are read by [`super::companion`]; what both share, by
//! [`super::mapping`].

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::error::{Damage, Error, Result};
use crate::format::{Header, PAYLOAD_OFFSET, VALUE_EXACT_I8};
use crate::index::layer_size;
use crate::pack::PackLayer;
use crate::progress::Progress;
use crate::rules::Ruleset;
use crate::sys::FileStamp;

use super::mapping::{checksum_from, header_at, header_of, map_file, read_exact_at, CopyGuard};
use super::*;

/// Where a layer's values are: a read-only map of its file (payload at an offset), or memory
/// (decoded from a pack or a `.zst`; or copied from the file by [`ReadMode::Pread`], holding its
/// share of the copy budget).
pub(super) enum Data {
    Map(Mmap, usize),
    Owned(Vec<u8>),
    Copied { values: Vec<u8>, _budget: CopyGuard },
}

/// One layer's values, memory-mapped read-only (or, from a compressed file, decoded into memory).
///
/// Invariant: `values().len() == layer_size(stones())`. The file must not be modified while it
/// is mapped (see the module documentation).
pub struct Layer {
    pub(super) stones: u32,
    pub(super) path: PathBuf,
    pub(super) file: File,
    pub(super) stamp: FileStamp,
    pub(super) data: Data,
    pub(super) header: Option<Header>,
}

/// A layer opened for probing ([`DatabaseDir::open_table`]): values in a file or memory, or a
/// pack read in place.
#[derive(Debug)]
#[non_exhaustive]
pub enum Table {
    /// Every value at hand (a native or published file, or a decoded one).
    Layer(Layer),
    /// A pack: each probe decodes part of one block.
    Pack(PackLayer),
    /// Values read from the file one by one ([`ReadMode::Pread`]).
    File(FileLayer),
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
            Table::File(f) => f.get(index)?,
        };
        if u32::from(value.unsigned_abs()) > n {
            return Err(Error::corrupt(self.path(), Damage::ValueOutOfRange { index, value, stones: n }));
        }
        Ok(value)
    }

    /// The values of positions `start..start + out.len()` into `out`, one byte each as in a
    /// layer file (not range-checked: the readers of depths packs, their only users, take them
    /// as contexts).
    ///
    /// Cost: a copy ([`Table::Layer`]), one `pread` ([`Table::File`]), or the blocks the range
    /// touches decoded up to it ([`Table::Pack`]).
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] past the layer's end; [`Error::Corrupt`] for a damaged pack
    /// block or a file now shorter; [`Error::Io`] when a read fails.
    pub fn read_into(&self, start: u64, out: &mut [u8]) -> Result<()> {
        let end = start.saturating_add(out.len() as u64);
        if end > self.len() {
            return Err(Error::IndexOutOfRange { layer: self.stones(), index: end.saturating_sub(1), size: self.len() });
        }
        match self {
            Table::Layer(l) => {
                out.copy_from_slice(&l.bytes()[start as usize..end as usize]);
                Ok(())
            }
            Table::Pack(p) => p.read_into(start, out),
            Table::File(f) => read_exact_at(&f.file, &f.path, out, f.offset + start, f.stamp.len),
        }
    }

    /// The layer number.
    pub fn stones(&self) -> u32 {
        match self {
            Table::Layer(l) => l.stones(),
            Table::Pack(p) => p.stones(),
            Table::File(f) => f.stones,
        }
    }

    /// The number of positions.
    pub fn len(&self) -> u64 {
        match self {
            Table::Layer(l) => l.values().len() as u64,
            Table::Pack(p) => p.header().entries,
            Table::File(f) => f.entries,
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
            Table::File(f) => &f.path,
        }
    }

    /// See [`Layer::check_unchanged`].
    ///
    /// # Errors
    /// As [`Layer::check_unchanged`].
    pub(crate) fn check_unchanged(&self) -> Result<()> {
        match self {
            Table::Layer(l) => l.check_unchanged(),
            Table::Pack(p) => p.check_unchanged(),
            Table::File(f) => f.stamp.check(&f.file, &f.path),
        }
    }

    /// Whether its path no longer names the file that was opened (replaced by rename, or
    /// removed): the values read are those of the old file.
    ///
    /// Cost: one `stat`.
    pub(crate) fn replaced(&self) -> bool {
        match self {
            Table::Layer(l) => l.stamp.replaced(&l.path),
            Table::Pack(p) => p.replaced(),
            Table::File(f) => f.stamp.replaced(&f.path),
        }
    }
}

/// A layer whose values are read from its file one at a time with `pread` ([`ReadMode::Pread`]):
/// nothing is mapped, so a file truncated or rewritten under the reader gives errors (or values
/// that `Table::check_unchanged` then rejects), never `SIGBUS`.
pub struct FileLayer {
    stones: u32,
    path: PathBuf,
    file: File,
    stamp: FileStamp,
    /// Where the payload starts in the file.
    offset: u64,
    entries: u64,
    header: Option<Header>,
}

impl std::fmt::Debug for FileLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileLayer").field("stones", &self.stones).field("path", &self.path).finish()
    }
}

impl FileLayer {
    /// Opens `file` (at `path`, already checked to be a regular file of `len` bytes) as layer `n`
    /// of `rules`: this tool's format when `native` (header checked as [`Layer::open_file`] does,
    /// the payload checksum with `verify_payload`), else a published `scores.N` (its size).
    pub(super) fn open(path: &Path, file: File, rules: Ruleset, n: u32, native: bool, verify_payload: bool) -> Result<FileLayer> {
        let stamp = FileStamp::of(&file, path)?;
        let len = stamp.len;
        let (offset, entries, header) = if native {
            let header = header_at(&file, path, len, VALUE_EXACT_I8, rules, n)?;
            let want = PAYLOAD_OFFSET + header.entries;
            if len != want {
                return Err(Error::corrupt(path, Damage::Size { expected: want, found: len }));
            }
            (PAYLOAD_OFFSET, header.entries, Some(header))
        } else {
            if len != layer_size(n) {
                return Err(Error::corrupt(path, Damage::Size { expected: layer_size(n), found: len }));
            }
            (0, len, None)
        };
        let layer = FileLayer { stones: n, path: path.into(), file, stamp, offset, entries, header };
        if verify_payload {
            layer.check_payload()?;
        }
        Ok(layer)
    }

    /// Recomputes the payload checksum (reading the file in 1 MiB pieces) and compares it with
    /// the header's. Always `Ok` for headerless (published-format) layers.
    fn check_payload(&self) -> Result<()> {
        let Some(h) = &self.header else { return Ok(()) };
        let computed = checksum_from(&self.file, &self.path, self.offset, self.stamp.len)?;
        if computed != h.payload_checksum {
            return Err(Error::corrupt(&self.path, Damage::PayloadChecksum { stored: h.payload_checksum, computed }));
        }
        Ok(())
    }

    /// Reads the whole payload into memory (checking its checksum there with `verify_payload`)
    /// and gives the layer as a [`Layer`] holding the copy: probes are then memory reads, and
    /// the copy is private, so no later change of the file can reach it (or crash the reader).
    ///
    /// Cost: one sequential read of the payload, and its size in memory.
    pub(super) fn into_memory(self, verify_payload: bool, budget: CopyGuard) -> Result<Layer> {
        let mut values = vec![0u8; self.entries as usize];
        read_exact_at(&self.file, &self.path, &mut values, self.offset, self.stamp.len)?;
        if verify_payload {
            if let Some(h) = &self.header {
                let computed = xxhash_rust::xxh3::xxh3_64(&values);
                if computed != h.payload_checksum {
                    return Err(Error::corrupt(&self.path, Damage::PayloadChecksum { stored: h.payload_checksum, computed }));
                }
            }
        }
        let FileLayer { stones, path, file, stamp, header, .. } = self;
        Ok(Layer { stones, path, file, stamp, data: Data::Copied { values, _budget: budget }, header })
    }

    /// The number of values.
    pub(super) fn entries(&self) -> u64 {
        self.entries
    }

    /// The layer number (stones on the board).
    pub fn stones(&self) -> u32 {
        self.stones
    }

    /// The file the values are read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header, for this tool's files (`None` for the published format).
    pub fn header(&self) -> Option<&Header> {
        self.header.as_ref()
    }

    /// The stored value of position `index` (not range-checked: see [`Table::get`]).
    ///
    /// Cost: one `pread`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] ([`Damage::Size`]) when `index` is past the layer's end or the file
    /// is now shorter; [`Error::Io`] when the read fails.
    fn get(&self, index: u64) -> Result<i8> {
        if index >= self.entries {
            return Err(Error::corrupt(&self.path, Damage::Size { expected: layer_size(self.stones), found: self.entries }));
        }
        let mut b = [0u8; 1];
        read_exact_at(&self.file, &self.path, &mut b, self.offset + index, self.stamp.len)?;
        Ok(b[0] as i8)
    }
}

impl std::fmt::Debug for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Layer").field("stones", &self.stones).field("path", &self.path).finish()
    }
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

    pub(super) fn from_map(path: &Path, file: File, map: Mmap, rules: Ruleset, n: u32, verify_payload: bool) -> Result<Layer> {
        let header = header_of(&map, path, VALUE_EXACT_I8, rules, n)?;
        let want = PAYLOAD_OFFSET + header.entries;
        if map.len() as u64 != want {
            return Err(Error::corrupt(path, Damage::Size { expected: want, found: map.len() as u64 }));
        }
        let stamp = FileStamp::of(&file, path)?;
        let data = Data::Map(map, PAYLOAD_OFFSET as usize);
        let layer = Layer { stones: n, path: path.into(), file, stamp, data, header: Some(header) };
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
    pub(crate) fn check_payload(&self) -> Result<()> {
        let Some(h) = &self.header else { return Ok(()) };
        let computed = checksum_released(self.bytes(), &|r| self.release(r));
        if computed != h.payload_checksum {
            return Err(Error::corrupt(&self.path, Damage::PayloadChecksum { stored: h.payload_checksum, computed }));
        }
        Ok(())
    }

    /// Checks that the open file still has the length and modification time it had when it
    /// was mapped: a file truncated in place would make reading its mapped pages crash the
    /// process, and one rewritten in place gives other values.
    ///
    /// Cost: one `fstat`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] with [`Damage::ChangedWhileOpen`]; [`Error::Io`] when `fstat` fails.
    pub(crate) fn check_unchanged(&self) -> Result<()> {
        self.stamp.check(&self.file, &self.path)
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
            Data::Owned(v) | Data::Copied { values: v, .. } => v,
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

    /// Copies the payload to `w` block by block and returns the checksum of the bytes copied,
    /// computed on the way: for a layer opened without its payload checked, the header's
    /// `payload_checksum` exactly when what was copied is intact (`oware export` compares them
    /// before it renames the copy into place). `path` names the destination in errors;
    /// `progress` advances by each block's bytes and is asked before each block whether to stop.
    ///
    /// Cost: one sequential pass over the payload, in blocks of 8 MiB.
    ///
    /// # Errors
    /// [`Error::Io`] naming `path` when a write or the final flush fails; [`Error::Interrupted`]
    /// when `progress` is cancelled.
    pub fn copy_payload(&self, w: &mut impl Write, path: &Path, progress: &dyn Progress) -> Result<u64> {
        copy_hashed(self.bytes(), w, path, progress)
    }
}

/// Bytes copied per write by [`Layer::copy_payload`].
const COPY_BLOCK: usize = 8 << 20;

/// Copies `bytes` to `w` in blocks of [`COPY_BLOCK`], returning their
/// [`checksum`](crate::format::checksum), computed incrementally.
fn copy_hashed(bytes: &[u8], w: &mut impl Write, path: &Path, progress: &dyn Progress) -> Result<u64> {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for block in bytes.chunks(COPY_BLOCK) {
        if progress.cancelled() {
            return Err(Error::Interrupted);
        }
        h.update(block);
        w.write_all(block).map_err(|e| Error::io(path, e))?;
        progress.advance(block.len() as u64);
    }
    w.flush().map_err(|e| Error::io(path, e))?;
    Ok(h.digest())
}

#[cfg(test)]
mod copy_tests {
    use super::*;
    use crate::progress::NoProgress;

    #[test]
    fn the_checksum_of_a_copy_is_the_format_checksum() {
        // Lengths around the block size and xxh3's internal buffer sizes.
        for len in [0usize, 1, 240, 241, 1 << 10, 3 * COPY_BLOCK + 17] {
            let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let mut copy = Vec::new();
            let got = copy_hashed(&data, &mut copy, Path::new("copy"), &NoProgress).unwrap();
            assert_eq!(got, crate::format::checksum(&data), "length {len}");
            assert!(copy == data, "length {len}: the copy differs");
        }
    }

    #[test]
    fn a_cancelled_copy_stops_before_its_next_block() {
        struct Stop;
        impl Progress for Stop {
            fn cancelled(&self) -> bool {
                true
            }
        }
        let mut copy = Vec::new();
        assert!(matches!(copy_hashed(&[1, 2, 3], &mut copy, Path::new("copy"), &Stop), Err(Error::Interrupted)));
        assert!(copy.is_empty());
    }
}

#[cfg(test)]
mod pread_tests {
    use super::*;
    use crate::build::{self, BuildConfig, Silent};
    use crate::storage::mapping::open_regular;
    use std::fs::OpenOptions;

    /// A layer read with `pread` gives the mapped values, and errors (never a crash) once its
    /// file is rewritten in place or truncated under it.
    #[test]
    fn a_layer_read_with_pread_survives_changes_of_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let config = BuildConfig { rules: Ruleset::Awari, max_stones: 8, dir: dir.path().into(), max_memory: None, ..Default::default() };
        build::build(&config, &Silent).unwrap();
        let d = DatabaseDir::native(dir.path(), Ruleset::Awari).unwrap();
        let path = d.layer_path(8);
        let expected = d.open(8, true).unwrap().values().to_vec();
        let file = open_regular(&path, || Error::Internal("missing".into())).unwrap();
        let table = Table::File(FileLayer::open(&path, file, Ruleset::Awari, 8, true, true).unwrap());
        assert_eq!(table.len(), expected.len() as u64);
        for (i, &v) in expected.iter().enumerate() {
            assert_eq!(table.get(i as u64).unwrap(), v);
        }
        table.check_unchanged().unwrap();
        assert!(!table.replaced());
        // Rewritten in place at the same size: the identity check sees it.
        std::thread::sleep(std::time::Duration::from_millis(20));
        {
            use std::os::unix::fs::FileExt;
            let f = OpenOptions::new().write(true).open(&path).unwrap();
            f.write_all_at(&[0], PAYLOAD_OFFSET).unwrap();
        }
        assert!(matches!(table.check_unchanged(), Err(Error::Corrupt { damage: Damage::ChangedWhileOpen { .. }, .. })));
        // Truncated in place: reads past the new end are errors.
        OpenOptions::new().write(true).open(&path).unwrap().set_len(5000).unwrap();
        let last = table.len() - 1;
        assert!(matches!(table.get(last), Err(Error::Corrupt { damage: Damage::Size { .. }, .. })));
        // The small layers of ReadMode::Pread are private copies, checked the same way.
        let copy = d.open_table_with(7, true, ReadMode::Pread).unwrap();
        assert!(matches!(copy, Table::Layer(_)));
        // Replaced by rename: noticed.
        let tmp = dir.path().join("awari/replacement");
        std::fs::copy(d.layer_path(7), &tmp).unwrap();
        std::fs::rename(&tmp, d.layer_path(7)).unwrap();
        assert!(copy.replaced());
        copy.check_unchanged().unwrap();
    }
}
