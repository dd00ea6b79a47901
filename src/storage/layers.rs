//! Open layers, bounds and depths to capture: checked headers, memory-mapped payloads (or, with
//! [`ReadMode::Pread`], private copies and `pread`), pages given back.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::bounds::{Bounds, Codec};
use crate::dtc::{DtcPayload, ESCAPE, NONE, RECORD_LEN};
use crate::error::{Damage, Error, FileKind, Result};
use crate::format::{Header, BOUNDS_TRIANGULAR, DTC_U8_ESCAPED, PAYLOAD_OFFSET, VALUE_EXACT_I8};
use crate::index::layer_size;
use crate::pack::PackLayer;
use crate::rules::Ruleset;
use crate::sys::FileStamp;

use super::*;

/// Where a layer's values are: a read-only map of its file (payload at an offset), or memory
/// (decoded from a pack or a `.zst`; or copied from the file by [`ReadMode::Pread`], holding its
/// share of the copy budget).
pub(super) enum Data {
    Map(Mmap, usize),
    Owned(Vec<u8>),
    Copied { values: Vec<u8>, _budget: CopyGuard },
}

/// Bytes of layers that [`ReadMode::Pread`] holds copied in memory in this process.
static COPIED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A copied layer's share of [`ReadMode::COPY_BUDGET`], given back when the layer is dropped.
pub(super) struct CopyGuard(u64);

impl CopyGuard {
    /// Takes `bytes` of the budget, or `None` when they do not fit in what is left.
    pub(super) fn reserve(bytes: u64) -> Option<CopyGuard> {
        use std::sync::atomic::Ordering::SeqCst;
        COPIED.fetch_update(SeqCst, SeqCst, |used| used.checked_add(bytes).filter(|&total| total <= ReadMode::COPY_BUDGET)).ok().map(|_| CopyGuard(bytes))
    }

    /// The bytes held.
    pub(super) fn bytes(&self) -> u64 {
        self.0
    }
}

impl Drop for CopyGuard {
    fn drop(&mut self) {
        COPIED.fetch_sub(self.0, std::sync::atomic::Ordering::SeqCst);
    }
}

/// How the values of a layer opened for probing are read ([`DatabaseDir::open_table_with`],
/// [`crate::probe::Database::read_mode`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReadMode {
    /// The file is memory-mapped and each value is one memory read (the default; the fastest).
    /// A file truncated in place by another program while mapped kills the process with
    /// `SIGBUS` when a removed page is read.
    #[default]
    Map,
    /// Each value is read from the file with one `pread` system call (about a microsecond when
    /// the file is cached, against tens of nanoseconds for a mapped read): a file truncated or
    /// rewritten under the reader gives an error or a value the identity check catches, never a
    /// crash. For long-running programs whose files another program may change (a server).
    /// Layers are instead read whole into memory when they are opened, as long as the copies fit
    /// in [`ReadMode::COPY_BUDGET`] (as safe: the copy is private; probes as fast as mapped ones;
    /// the memory is the layers' size). Forced-capture bounds and depths to capture are read the
    /// same way (copied within the same budget, else entry by entry). Packs are still read
    /// through a map.
    Pread,
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

/// Reads exactly `buf.len()` bytes of `file` at `at`: a short file is [`Damage::Size`]
/// (`expected` the file's length when opened).
fn read_exact_at(file: &File, path: &Path, buf: &mut [u8], at: u64, expected: u64) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        let mut done = 0;
        while done < buf.len() {
            match file.read_at(&mut buf[done..], at + done as u64) {
                Ok(0) => {
                    let found = file.metadata().map(|m| m.len()).unwrap_or(at + done as u64);
                    return Err(Error::corrupt(path, Damage::Size { expected, found }));
                }
                Ok(k) => done += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(path, e)),
            }
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        let _ = (file, buf, at, expected);
        Err(Error::Usage(format!("{}: reading with pread needs a Unix system", path.display())))
    }
}

/// Reads the first bytes of `file` into `buf` (as many as there are): the count read.
pub(super) fn read_prefix(file: &File, buf: &mut [u8]) -> usize {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_at(buf, 0).unwrap_or(0)
    }
    #[cfg(not(unix))]
    {
        let _ = (file, buf);
        0
    }
}

impl ReadMode {
    /// The memory (one byte per value: 1 GiB, awari layers 0..23 with room to spare) in which
    /// [`ReadMode::Pread`] holds layers read whole when they are opened, in the order they are
    /// opened, in one process; a layer that does not fit in what is left is read value by value.
    /// A copy's share is given back when its layer is dropped (a database reopened after a file
    /// was replaced).
    pub const COPY_BUDGET: u64 = 1 << 30;
}

impl FileLayer {
    /// Opens `file` (at `path`, already checked to be a regular file of `len` bytes) as layer `n`
    /// of `rules`: this tool's format when `native` (header checked as [`Layer::open_file`] does,
    /// the payload checksum with `verify_payload`), else a published `scores.N` (its size).
    pub(super) fn open(path: &Path, file: File, rules: Ruleset, n: u32, native: bool, verify_payload: bool) -> Result<FileLayer> {
        let stamp = FileStamp::of(&file, path)?;
        let len = stamp.len;
        let (offset, entries, header) = if native {
            let mut head = vec![0u8; (PAYLOAD_OFFSET.min(len)) as usize];
            read_exact_at(&file, path, &mut head, 0, len)?;
            let header = Header::decode(&head, path)?;
            header.expect(VALUE_EXACT_I8, path)?;
            if header.rules != rules {
                return Err(Error::RulesetMismatch { path: path.into(), found: header.rules, expected: rules });
            }
            if header.stones != n {
                return Err(Error::LayerMismatch { path: path.into(), found: header.stones, expected: n });
            }
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
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut at = 0u64;
        while at < self.entries {
            let k = (self.entries - at).min(buf.len() as u64) as usize;
            read_exact_at(&self.file, &self.path, &mut buf[..k], self.offset + at, self.stamp.len)?;
            hasher.update(&buf[..k]);
            at += k as u64;
        }
        let computed = hasher.digest();
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

/// Opens `path` for reading as a regular file, never blocking on a FIFO and never mapping a
/// directory or device. `missing` builds the error for a path with nothing there.
pub(crate) fn open_regular(path: &Path, missing: impl FnOnce() -> Error) -> Result<File> {
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

/// Opens and maps `path` read-only (see [`open_regular`]).
pub(super) fn map_file(path: &Path, missing: impl FnOnce() -> Error) -> Result<(File, Mmap)> {
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

    pub(super) fn from_map(path: &Path, file: File, map: Mmap, rules: Ruleset, n: u32, verify_payload: bool) -> Result<Layer> {
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
}

/// Where the bytes of a file beside the layers (bounds, depths) are: a read-only map of it, or a
/// private copy read by [`ReadMode::Pread`] (holding its share of the copy budget).
pub(super) enum Bytes {
    Map(Mmap),
    Copied { bytes: Vec<u8>, _budget: CopyGuard },
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(map) => map,
            Bytes::Copied { bytes, .. } => bytes,
        }
    }
}

impl Bytes {
    /// Gives the pages of `bytes[at..]`'s `range` back to the system when they are mapped (a
    /// copy is private memory: nothing to give back).
    fn release(&self, at: usize, range: std::ops::Range<u64>) {
        if let Bytes::Map(map) = self {
            let b = &map[at..];
            // SAFETY: a read-only shared mapping of a file: dropping its pages loses nothing.
            unsafe { crate::sys::release_within(b.as_ptr(), b.len(), range) };
        }
    }
}

/// A file beside the layers read as [`ReadMode::Pread`] says: whole into memory when the copy
/// fits in what is left of [`ReadMode::COPY_BUDGET`], else left in the file (its stamp taken
/// when opened).
enum SideFile {
    Copied(Bytes, FileStamp),
    InFile(FileStamp),
}

impl SideFile {
    fn read(file: &File, path: &Path) -> Result<SideFile> {
        let stamp = FileStamp::of(file, path)?;
        if stamp.len == 0 {
            return Err(Error::corrupt(path, Damage::Empty));
        }
        let Some(budget) = CopyGuard::reserve(stamp.len) else { return Ok(SideFile::InFile(stamp)) };
        let mut bytes = vec![0u8; stamp.len as usize];
        read_exact_at(file, path, &mut bytes, 0, stamp.len)?;
        Ok(SideFile::Copied(Bytes::Copied { bytes, _budget: budget }, stamp))
    }
}

/// The header of a file read with `pread` (as [`header_of`]).
fn header_at(file: &File, path: &Path, len: u64, encoding: u32, rules: Ruleset, n: u32) -> Result<Header> {
    let mut head = vec![0u8; PAYLOAD_OFFSET.min(len) as usize];
    read_exact_at(file, path, &mut head, 0, len)?;
    header_of(&head, path, encoding, rules, n)
}

/// The checksum of `file`'s bytes from `offset` to `len` (its length when opened), read in
/// 1 MiB pieces.
fn checksum_from(file: &File, path: &Path, offset: u64, len: u64) -> Result<u64> {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut at = offset;
    while at < len {
        let k = (len - at).min(buf.len() as u64) as usize;
        read_exact_at(file, path, &mut buf[..k], at, len)?;
        hasher.update(&buf[..k]);
        at += k as u64;
    }
    Ok(hasher.digest())
}

/// The checked header of a file beside the layers (bounds, depths): decoded, holding `encoding`,
/// of layer `n` of `rules`.
///
/// # Errors
/// [`Error::Corrupt`] for a bad header or another kind of payload; [`Error::RulesetMismatch`] /
/// [`Error::LayerMismatch`] for another ruleset's or layer's file.
fn header_of(bytes: &[u8], path: &Path, encoding: u32, rules: Ruleset, n: u32) -> Result<Header> {
    let header = Header::decode(&bytes[..bytes.len().min(PAYLOAD_OFFSET as usize)], path)?;
    header.expect(encoding, path)?;
    if header.rules != rules {
        return Err(Error::RulesetMismatch { path: path.into(), found: header.rules, expected: rules });
    }
    if header.stones != n {
        return Err(Error::LayerMismatch { path: path.into(), found: header.stones, expected: n });
    }
    Ok(header)
}

/// One layer's forced-capture bounds ([`crate::bounds`]), memory-mapped read-only (or, opened
/// with [`ReadMode::Pread`], copied into memory).
///
/// Invariant: the payload holds [`crate::bounds::payload_len`]`(stones())` bytes. The file must
/// not be modified while it is mapped (see the module documentation).
pub struct BoundsLayer {
    pub(super) stones: u32,
    pub(super) path: PathBuf,
    pub(super) file: File,
    pub(super) stamp: FileStamp,
    pub(super) bytes: Bytes,
    pub(super) header: Header,
    pub(super) codec: Codec,
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

    pub(super) fn from_map(path: &Path, file: File, map: Mmap, rules: Ruleset, n: u32, verify_payload: bool) -> Result<BoundsLayer> {
        let stamp = FileStamp::of(&file, path)?;
        BoundsLayer::from_bytes(path, file, stamp, Bytes::Map(map), rules, n, verify_payload)
    }

    fn from_bytes(path: &Path, file: File, stamp: FileStamp, bytes: Bytes, rules: Ruleset, n: u32, verify_payload: bool) -> Result<BoundsLayer> {
        let header = header_of(&bytes, path, BOUNDS_TRIANGULAR, rules, n)?;
        let want = PAYLOAD_OFFSET + header.payload_len();
        if bytes.len() as u64 != want {
            return Err(Error::corrupt(path, Damage::Size { expected: want, found: bytes.len() as u64 }));
        }
        let layer = BoundsLayer { stones: n, path: path.into(), file, stamp, bytes, header, codec: Codec::new(n) };
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
    pub(crate) fn check_payload(&self) -> Result<()> {
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
        &self.bytes[PAYLOAD_OFFSET as usize..]
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

    /// Gives the pages of payload bytes `range` back to the system (when mapped).
    ///
    /// Cost: one `madvise` call.
    pub fn release(&self, range: std::ops::Range<u64>) {
        self.bytes.release(PAYLOAD_OFFSET as usize, range);
    }

    /// Checks that the open file still has the length and modification time it had when it
    /// was mapped.
    ///
    /// Cost: one `fstat`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] with [`Damage::ChangedWhileOpen`]; [`Error::Io`] when `fstat` fails.
    pub(crate) fn check_unchanged(&self) -> Result<()> {
        self.stamp.check(&self.file, &self.path)
    }

    /// Whether its path no longer names the file that was opened. Cost: one `stat`.
    pub(crate) fn replaced(&self) -> bool {
        self.stamp.replaced(&self.path)
    }
}

/// One layer's depths to capture ([`crate::dtc`]), memory-mapped read-only (or, opened with
/// [`ReadMode::Pread`], copied into memory).
///
/// Invariant: the payload splits into a [`DtcPayload`] of layer `stones()` (its length agrees
/// with its count of escaped depths). The file must not be modified while it is mapped (see the
/// module documentation).
pub struct DtcLayer {
    stones: u32,
    path: PathBuf,
    file: File,
    stamp: FileStamp,
    bytes: Bytes,
    header: Header,
}

impl std::fmt::Debug for DtcLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DtcLayer").field("stones", &self.stones).field("path", &self.path).finish()
    }
}

impl DtcLayer {
    /// Opens a dtc file at any path, expecting layer `n` of `rules`. See
    /// [`DatabaseDir::open_dtc`].
    ///
    /// # Errors
    /// As [`DatabaseDir::open_dtc`], with [`Error::Io`] for a missing file.
    pub fn open_file(path: &Path, rules: Ruleset, n: u32, verify_payload: bool) -> Result<DtcLayer> {
        let missing = || Error::io(path, std::io::Error::from(std::io::ErrorKind::NotFound));
        let (file, map) = map_file(path, missing)?;
        DtcLayer::from_map(path, file, map, rules, n, verify_payload)
    }

    pub(super) fn from_map(path: &Path, file: File, map: Mmap, rules: Ruleset, n: u32, verify_payload: bool) -> Result<DtcLayer> {
        let stamp = FileStamp::of(&file, path)?;
        DtcLayer::from_bytes(path, file, stamp, Bytes::Map(map), rules, n, verify_payload)
    }

    fn from_bytes(path: &Path, file: File, stamp: FileStamp, bytes: Bytes, rules: Ruleset, n: u32, verify_payload: bool) -> Result<DtcLayer> {
        let header = header_of(&bytes, path, DTC_U8_ESCAPED, rules, n)?;
        let least = PAYLOAD_OFFSET + header.payload_len();
        if (bytes.len() as u64) < least {
            return Err(Error::corrupt(path, Damage::Size { expected: least, found: bytes.len() as u64 }));
        }
        DtcPayload::new(n, &bytes[PAYLOAD_OFFSET as usize..]).map_err(|e| Error::corrupt(path, Damage::BadDtc { what: e.to_string() }))?;
        let layer = DtcLayer { stones: n, path: path.into(), file, stamp, bytes, header };
        if verify_payload {
            let computed = checksum_released(layer.raw(), &|r| layer.release(r));
            if computed != layer.header.payload_checksum {
                return Err(Error::corrupt(&layer.path, Damage::PayloadChecksum { stored: layer.header.payload_checksum, computed }));
            }
        }
        Ok(layer)
    }

    fn raw(&self) -> &[u8] {
        &self.bytes[PAYLOAD_OFFSET as usize..]
    }

    /// The payload, split into its parts.
    pub fn payload(&self) -> DtcPayload<'_> {
        DtcPayload::new(self.stones, self.raw()).expect("checked when opened")
    }

    /// The depth to capture of the position of index `i` (`None`: its value is 0).
    ///
    /// Cost: one byte read of the map; for a depth of 254 or more, a binary search of the
    /// escaped depths.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] when `i` is not an index of the layer; [`Error::Corrupt`]
    /// ([`Damage::BadDtc`]) for an escaped depth without its record.
    pub fn get(&self, i: u64) -> Result<Option<u16>> {
        let size = layer_size(self.stones);
        if i >= size {
            return Err(Error::IndexOutOfRange { layer: self.stones, index: i, size });
        }
        self.payload().get(i).map_err(|e| Error::corrupt(&self.path, Damage::BadDtc { what: e.to_string() }))
    }

    /// The layer number (stones on the board).
    pub fn stones(&self) -> u32 {
        self.stones
    }

    /// The file the depths were read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Gives the pages of payload bytes `range` back to the system (when mapped).
    ///
    /// Cost: one `madvise` call.
    pub fn release(&self, range: std::ops::Range<u64>) {
        self.bytes.release(PAYLOAD_OFFSET as usize, range);
    }

    /// Checks that the open file still has the length and modification time it had when it
    /// was mapped.
    ///
    /// Cost: one `fstat`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] with [`Damage::ChangedWhileOpen`]; [`Error::Io`] when `fstat` fails.
    pub(crate) fn check_unchanged(&self) -> Result<()> {
        self.stamp.check(&self.file, &self.path)
    }

    /// Whether its path no longer names the file that was opened. Cost: one `stat`.
    pub(crate) fn replaced(&self) -> bool {
        self.stamp.replaced(&self.path)
    }
}

/// A layer's forced-capture bounds opened for probing ([`DatabaseDir::open_bounds_with`]): in
/// memory (mapped, or copied by [`ReadMode::Pread`]), or read from the file entry by entry.
#[derive(Debug)]
#[non_exhaustive]
pub enum BoundsTable {
    /// Every entry at hand, mapped or copied.
    Layer(BoundsLayer),
    /// Entries read from the file one by one ([`ReadMode::Pread`]).
    File(BoundsFile),
}

impl BoundsTable {
    /// Opens `file` (at `path`, a regular file) as layer `n`'s bounds as [`ReadMode::Pread`]
    /// says: copied whole while the copy fits the budget, else read entry by entry.
    pub(super) fn read(path: &Path, file: File, rules: Ruleset, n: u32, verify_payload: bool) -> Result<BoundsTable> {
        Ok(match SideFile::read(&file, path)? {
            SideFile::Copied(bytes, stamp) => BoundsTable::Layer(BoundsLayer::from_bytes(path, file, stamp, bytes, rules, n, verify_payload)?),
            SideFile::InFile(stamp) => BoundsTable::File(BoundsFile::open(path, file, stamp, rules, n, verify_payload)?),
        })
    }

    /// The bounds of the position of index `i` (see [`BoundsLayer::get`]).
    ///
    /// Cost: one or two byte reads ([`BoundsTable::Layer`]) or one `pread` ([`BoundsTable::File`]).
    ///
    /// # Errors
    /// As [`BoundsLayer::get`]; for [`BoundsTable::File`], [`Error::Corrupt`] ([`Damage::Size`])
    /// when the file is now shorter and [`Error::Io`] when the read fails.
    #[inline]
    pub fn get(&self, i: u64) -> Result<Bounds> {
        match self {
            BoundsTable::Layer(b) => b.get(i),
            BoundsTable::File(b) => b.get(i),
        }
    }

    /// The layer number.
    pub fn stones(&self) -> u32 {
        match self {
            BoundsTable::Layer(b) => b.stones(),
            BoundsTable::File(b) => b.stones,
        }
    }

    /// The file the bounds are read from.
    pub fn path(&self) -> &Path {
        match self {
            BoundsTable::Layer(b) => b.path(),
            BoundsTable::File(b) => &b.path,
        }
    }

    /// See [`BoundsLayer::check_unchanged`].
    pub(crate) fn check_unchanged(&self) -> Result<()> {
        match self {
            BoundsTable::Layer(b) => b.check_unchanged(),
            BoundsTable::File(b) => b.stamp.check(&b.file, &b.path),
        }
    }

    /// Whether its path no longer names the file that was opened. Cost: one `stat`.
    pub(crate) fn replaced(&self) -> bool {
        match self {
            BoundsTable::Layer(b) => b.replaced(),
            BoundsTable::File(b) => b.stamp.replaced(&b.path),
        }
    }
}

/// A layer's forced-capture bounds read from their file one entry at a time with `pread`
/// ([`ReadMode::Pread`]): nothing is mapped, so a file truncated under the reader gives errors,
/// never `SIGBUS`.
pub struct BoundsFile {
    stones: u32,
    path: PathBuf,
    file: File,
    stamp: FileStamp,
    payload_len: u64,
    codec: Codec,
}

impl std::fmt::Debug for BoundsFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundsFile").field("stones", &self.stones).field("path", &self.path).finish()
    }
}

impl BoundsFile {
    /// Opens `file` as layer `n`'s bounds of `rules`, checked as [`BoundsLayer`]s are (header,
    /// size and, with `verify_payload`, the payload checksum, read in 1 MiB pieces).
    pub(super) fn open(path: &Path, file: File, stamp: FileStamp, rules: Ruleset, n: u32, verify_payload: bool) -> Result<BoundsFile> {
        let header = header_at(&file, path, stamp.len, BOUNDS_TRIANGULAR, rules, n)?;
        let want = PAYLOAD_OFFSET + header.payload_len();
        if stamp.len != want {
            return Err(Error::corrupt(path, Damage::Size { expected: want, found: stamp.len }));
        }
        if verify_payload {
            let computed = checksum_from(&file, path, PAYLOAD_OFFSET, stamp.len)?;
            if computed != header.payload_checksum {
                return Err(Error::corrupt(path, Damage::PayloadChecksum { stored: header.payload_checksum, computed }));
            }
        }
        Ok(BoundsFile { stones: n, path: path.into(), file, stamp, payload_len: header.payload_len(), codec: Codec::new(n) })
    }

    /// The bounds of the position of index `i`. Cost: one `pread` of at most 4 bytes.
    fn get(&self, i: u64) -> Result<Bounds> {
        let size = layer_size(self.stones);
        if i >= size {
            return Err(Error::IndexOutOfRange { layer: self.stones, index: i, size });
        }
        let at = self.codec.byte_of(i) as u64;
        let mut buf = [0u8; 4];
        let k = self.payload_len.saturating_sub(at).min(4) as usize;
        read_exact_at(&self.file, &self.path, &mut buf[..k], PAYLOAD_OFFSET + at, self.stamp.len)?;
        let code = self.codec.raw_from(&buf[..k], i);
        self.codec.decode(code).ok_or_else(|| Error::corrupt(&self.path, Damage::BadBoundsCode { index: i, code }))
    }
}

/// A layer's depths to capture opened for probing ([`DatabaseDir::open_dtc_with`]): in memory
/// (mapped, or copied by [`ReadMode::Pread`]), or read from the file depth by depth.
#[derive(Debug)]
#[non_exhaustive]
pub enum DtcTable {
    /// Every depth at hand, mapped or copied.
    Layer(DtcLayer),
    /// Depths read from the file one by one ([`ReadMode::Pread`]).
    File(DtcFile),
}

impl DtcTable {
    /// Opens `file` (at `path`, a regular file) as layer `n`'s depths as [`ReadMode::Pread`]
    /// says: copied whole while the copy fits the budget, else read depth by depth.
    pub(super) fn read(path: &Path, file: File, rules: Ruleset, n: u32, verify_payload: bool) -> Result<DtcTable> {
        Ok(match SideFile::read(&file, path)? {
            SideFile::Copied(bytes, stamp) => DtcTable::Layer(DtcLayer::from_bytes(path, file, stamp, bytes, rules, n, verify_payload)?),
            SideFile::InFile(stamp) => DtcTable::File(DtcFile::open(path, file, stamp, rules, n, verify_payload)?),
        })
    }

    /// The depth to capture of the position of index `i` (see [`DtcLayer::get`]).
    ///
    /// Cost: one byte read ([`DtcTable::Layer`]) or one `pread` ([`DtcTable::File`]); for a
    /// depth of 254 or more, a binary search of the escaped depths.
    ///
    /// # Errors
    /// As [`DtcLayer::get`]; for [`DtcTable::File`], [`Error::Corrupt`] ([`Damage::Size`]) when
    /// the file is now shorter and [`Error::Io`] when a read fails.
    #[inline]
    pub fn get(&self, i: u64) -> Result<Option<u16>> {
        match self {
            DtcTable::Layer(d) => d.get(i),
            DtcTable::File(d) => d.get(i),
        }
    }

    /// The layer number.
    pub fn stones(&self) -> u32 {
        match self {
            DtcTable::Layer(d) => d.stones(),
            DtcTable::File(d) => d.stones,
        }
    }

    /// The file the depths are read from.
    pub fn path(&self) -> &Path {
        match self {
            DtcTable::Layer(d) => d.path(),
            DtcTable::File(d) => &d.path,
        }
    }

    /// See [`DtcLayer::check_unchanged`].
    pub(crate) fn check_unchanged(&self) -> Result<()> {
        match self {
            DtcTable::Layer(d) => d.check_unchanged(),
            DtcTable::File(d) => d.stamp.check(&d.file, &d.path),
        }
    }

    /// Whether its path no longer names the file that was opened. Cost: one `stat`.
    pub(crate) fn replaced(&self) -> bool {
        match self {
            DtcTable::Layer(d) => d.replaced(),
            DtcTable::File(d) => d.stamp.replaced(&d.path),
        }
    }
}

/// A layer's depths to capture read from their file one at a time with `pread`
/// ([`ReadMode::Pread`]): nothing is mapped, so a file truncated under the reader gives errors,
/// never `SIGBUS`.
pub struct DtcFile {
    stones: u32,
    path: PathBuf,
    file: File,
    stamp: FileStamp,
    /// Escaped depths in the table after the bytes.
    escaped: u64,
}

impl std::fmt::Debug for DtcFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DtcFile").field("stones", &self.stones).field("path", &self.path).finish()
    }
}

impl DtcFile {
    /// Opens `file` as layer `n`'s depths of `rules`, checked as [`DtcLayer`]s are (header, size,
    /// the count of escaped depths against the size and, with `verify_payload`, the payload
    /// checksum, read in 1 MiB pieces).
    pub(super) fn open(path: &Path, file: File, stamp: FileStamp, rules: Ruleset, n: u32, verify_payload: bool) -> Result<DtcFile> {
        let header = header_at(&file, path, stamp.len, DTC_U8_ESCAPED, rules, n)?;
        let least = PAYLOAD_OFFSET + header.payload_len();
        if stamp.len < least {
            return Err(Error::corrupt(path, Damage::Size { expected: least, found: stamp.len }));
        }
        // The payload's last 8 bytes count its escaped depths, as DtcPayload::new checks.
        let len = stamp.len - PAYLOAD_OFFSET;
        let mut count = [0u8; 8];
        read_exact_at(&file, path, &mut count, stamp.len - 8, stamp.len)?;
        let escaped = u64::from_le_bytes(count);
        if escaped > len || crate::dtc::payload_len(n, escaped) != len {
            let what = crate::dtc::BadDtc::Length { len, escaped }.to_string();
            return Err(Error::corrupt(path, Damage::BadDtc { what }));
        }
        if verify_payload {
            let computed = checksum_from(&file, path, PAYLOAD_OFFSET, stamp.len)?;
            if computed != header.payload_checksum {
                return Err(Error::corrupt(path, Damage::PayloadChecksum { stored: header.payload_checksum, computed }));
            }
        }
        Ok(DtcFile { stones: n, path: path.into(), file, stamp, escaped })
    }

    /// The depth of the position of index `i` (`None`: its value is 0). Cost: one `pread`; for
    /// a depth of 254 or more, one more per step of a binary search of the escaped depths.
    fn get(&self, i: u64) -> Result<Option<u16>> {
        let size = layer_size(self.stones);
        if i >= size {
            return Err(Error::IndexOutOfRange { layer: self.stones, index: i, size });
        }
        let mut b = [0u8; 1];
        read_exact_at(&self.file, &self.path, &mut b, PAYLOAD_OFFSET + i, self.stamp.len)?;
        match b[0] {
            NONE => Ok(None),
            ESCAPE => {
                let records = PAYLOAD_OFFSET + size;
                let (mut lo, mut hi) = (0, self.escaped);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    let mut r = [0u8; 8];
                    read_exact_at(&self.file, &self.path, &mut r, records + mid * RECORD_LEN, self.stamp.len)?;
                    let (j, d) = crate::dtc::split_record(u64::from_le_bytes(r));
                    match j.cmp(&i) {
                        std::cmp::Ordering::Equal => return Ok(Some(d)),
                        std::cmp::Ordering::Less => lo = mid + 1,
                        std::cmp::Ordering::Greater => hi = mid,
                    }
                }
                let what = crate::dtc::BadDtc::NoRecord { index: i }.to_string();
                Err(Error::corrupt(&self.path, Damage::BadDtc { what }))
            }
            d => Ok(Some(u16::from(d))),
        }
    }
}

#[cfg(test)]
mod pread_tests {
    use super::*;
    use crate::build::{self, BuildConfig, Silent};

    /// A layer read with `pread` gives the mapped values, and errors (never a crash) once its
    /// file is rewritten in place or truncated under it.
    #[test]
    fn the_copy_budget_refuses_what_does_not_fit() {
        assert!(CopyGuard::reserve(ReadMode::COPY_BUDGET + 1).is_none());
        assert!(CopyGuard::reserve(u64::MAX).is_none());
        let one = CopyGuard::reserve(1).expect("one byte fits");
        assert_eq!(one.bytes(), 1);
    }

    /// Bounds and depths to capture read with `pread` (copied whole, or entry by entry) give the
    /// mapped answers, and errors (never a crash) once their files are truncated under them.
    #[test]
    fn bounds_and_depths_read_with_pread_survive_truncation() {
        let dir = tempfile::tempdir().unwrap();
        let abapa: Ruleset = "abapa".parse().unwrap();
        let config = BuildConfig { rules: abapa, max_stones: 9, dir: dir.path().into(), max_memory: None, bounds: true, dtc: true, ..Default::default() };
        build::build(&config, &Silent).unwrap();
        let d = DatabaseDir::native(dir.path(), abapa).unwrap();
        let n = 9;
        let size = layer_size(n);
        let (bounds, dtc) = (d.open_bounds(n, true).unwrap(), d.open_dtc(n, true).unwrap());
        let copied = (d.open_bounds_with(n, true, ReadMode::Pread).unwrap(), d.open_dtc_with(n, true, ReadMode::Pread).unwrap());
        assert!(matches!(copied, (BoundsTable::Layer(_), DtcTable::Layer(_))), "{copied:?}");
        // Entry by entry, as when the copies do not fit.
        let open = |path: &Path| {
            let file = open_regular(path, || Error::Internal("missing".into())).unwrap();
            let stamp = FileStamp::of(&file, path).unwrap();
            (file, stamp)
        };
        let (file, stamp) = open(&d.bounds_path(n));
        let bounds_file = BoundsTable::File(BoundsFile::open(&d.bounds_path(n), file, stamp, abapa, n, true).unwrap());
        let (file, stamp) = open(&d.dtc_path(n));
        let dtc_file = DtcTable::File(DtcFile::open(&d.dtc_path(n), file, stamp, abapa, n, true).unwrap());
        for i in 0..size {
            let b = bounds.get(i).unwrap();
            assert_eq!((copied.0.get(i).unwrap(), bounds_file.get(i).unwrap()), (b, b), "bounds of {i}");
            let depth = dtc.get(i).unwrap();
            assert_eq!((copied.1.get(i).unwrap(), dtc_file.get(i).unwrap()), (depth, depth), "depth of {i}");
        }
        assert!(matches!(bounds_file.get(size), Err(Error::IndexOutOfRange { .. })));
        assert!(matches!(dtc_file.get(size), Err(Error::IndexOutOfRange { .. })));
        bounds_file.check_unchanged().unwrap();
        dtc_file.check_unchanged().unwrap();
        assert!(!bounds_file.replaced() && !dtc_file.replaced());
        drop((bounds, dtc));
        // Truncated in place into the header: errors, and the identity check sees it.
        for path in [d.bounds_path(n), d.dtc_path(n)] {
            OpenOptions::new().write(true).open(&path).unwrap().set_len(1000).unwrap();
        }
        for i in [0, size / 2, size - 1] {
            assert!(matches!(bounds_file.get(i), Err(Error::Corrupt { damage: Damage::Size { .. }, .. })));
            assert!(matches!(dtc_file.get(i), Err(Error::Corrupt { damage: Damage::Size { .. }, .. })));
            // The copies are private: still the values read when opened.
            copied.0.get(i).unwrap();
            copied.1.get(i).unwrap();
        }
        assert!(bounds_file.check_unchanged().is_err() && dtc_file.check_unchanged().is_err());
        assert!(copied.0.check_unchanged().is_err() && copied.1.check_unchanged().is_err());
        // Opened again: refused, naming the file.
        assert!(matches!(d.open_bounds_with(n, false, ReadMode::Pread), Err(Error::Corrupt { .. })));
        assert!(matches!(d.open_dtc_with(n, false, ReadMode::Pread), Err(Error::Corrupt { .. })));
    }

    /// Escaped depths (254 or more, in the table after the bytes) read with `pread` are the
    /// mapped ones, and an escape without its record is the same error.
    #[test]
    fn escaped_depths_read_with_pread() {
        let dir = tempfile::tempdir().unwrap();
        let d = DatabaseDir::native(dir.path(), Ruleset::Awari).unwrap();
        let n = 2;
        let mut w = DtcWriter::create(&d, n, 3).unwrap();
        {
            let (bytes, records) = w.parts_mut();
            bytes.fill(NONE);
            bytes[2] = 7;
            for i in [1, 5, 40, 41] {
                bytes[i] = ESCAPE;
            }
            for (k, (i, depth)) in [(1, 300), (5, 400), (40, 1000)].into_iter().enumerate() {
                records[k * 8..k * 8 + 8].copy_from_slice(&crate::dtc::record(i, depth).to_le_bytes());
            }
        }
        w.finish().unwrap();
        let mapped = d.open_dtc(n, true).unwrap();
        let path = d.dtc_path(n);
        let file = open_regular(&path, || Error::Internal("missing".into())).unwrap();
        let stamp = FileStamp::of(&file, &path).unwrap();
        let read = DtcFile::open(&path, file, stamp, Ruleset::Awari, n, true).unwrap();
        for i in 0..layer_size(n) {
            match (mapped.get(i), read.get(i)) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "depth of {i}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                (a, b) => panic!("{i}: mapped {a:?}, read {b:?}"),
            }
        }
        assert_eq!((read.get(1).unwrap(), read.get(40).unwrap(), read.get(2).unwrap(), read.get(0).unwrap()), (Some(300), Some(1000), Some(7), None));
        assert!(matches!(read.get(41), Err(Error::Corrupt { damage: Damage::BadDtc { .. }, .. })));
    }

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
