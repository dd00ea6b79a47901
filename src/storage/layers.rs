//! Open layers and bounds: checked headers, memory-mapped payloads, pages given back.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::bounds::{Bounds, Codec};
use crate::error::{Damage, Error, FileKind, Result};
use crate::format::{Header, BOUNDS_TRIANGULAR, PAYLOAD_OFFSET, VALUE_EXACT_I8};
use crate::index::layer_size;
use crate::pack::PackLayer;
use crate::rules::Ruleset;

use super::*;

/// Where a layer's values are: a read-only map of its file (payload at an offset), or memory
/// (decoded from a pack or a `.zst`).
pub(super) enum Data {
    Map(Mmap, usize),
    Owned(Vec<u8>),
}

/// One layer's values, memory-mapped read-only (or, from a compressed file, decoded into memory).
///
/// Invariant: `values().len() == layer_size(stones())`. The file must not be modified while it
/// is mapped (see the module documentation).
pub struct Layer {
    pub(super) stones: u32,
    pub(super) path: PathBuf,
    pub(super) file: File,
    pub(super) len: u64,
    pub(super) data: Data,
    pub(super) header: Option<Header>,
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
    pub(crate) fn check_unchanged(&self) -> Result<()> {
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

/// Checks that `file` (at `path`) still has the length `opened` it had when it was mapped.
pub(super) fn check_length(file: &File, path: &Path, opened: u64) -> Result<()> {
    let now = file.metadata().map_err(|e| Error::io(path, e))?.len();
    if now != opened {
        return Err(Error::corrupt(path, Damage::ChangedWhileOpen { opened, now }));
    }
    Ok(())
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
    pub(crate) fn check_payload(&self) -> Result<()> {
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
    pub(crate) fn check_unchanged(&self) -> Result<()> {
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
    pub(super) stones: u32,
    pub(super) path: PathBuf,
    pub(super) file: File,
    pub(super) len: u64,
    pub(super) map: Mmap,
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
    pub(crate) fn check_unchanged(&self) -> Result<()> {
        check_length(&self.file, &self.path, self.len)
    }
}
