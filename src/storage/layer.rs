//! A layer's files of any [`Kind`] opened for reading: checked headers, memory-mapped bytes (or,
//! with [`ReadMode::Pread`], private copies and `pread`), pages given back. What every file
//! shares (regular files only, maps, headers, checksums) is [`super::mapping`]'s; what a kind
//! adds, its impl of [`Kind`] ([`super::kind`]).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::error::{Damage, Error, FileContent, Result};
use crate::format::{Header, PAYLOAD_OFFSET};
use crate::index::layer_size;
use crate::progress::Progress;
use crate::rules::Ruleset;
use crate::sys::FileStamp;

use super::mapping::{checksum_from, header_at, header_of, read_exact_at, Bytes, SideFile};
use super::*;

pub(crate) mod private {
    /// Keeps [`super::Kind`] to the kinds of this crate (a kind's tag may stand in any module
    /// of it: the tests' own kind stands beside its check).
    pub trait Sealed {}
}

/// A kind of a layer's file, as a type (shakmaty-syzygy's tag style): what [`Layer`],
/// [`Table`] and the kind-generic methods of [`DatabaseDir`] are generic over. Implemented by
/// [`ValuesKind`], [`BoundsKind`] and [`DtcKind`] only.
pub trait Kind: private::Sealed + Sized + Send + Sync + std::fmt::Debug + 'static {
    /// What its files hold, at run time: their names (`layer-NN.owdb`, `bounds-NN.owdb`,
    /// `dtc-NN.owdb`), words and missing-file error.
    const CONTENT: FileContent;
    /// Whether a layer's file follows from the files of the same kind of the smaller layers its
    /// captures reach (values, bounds: a capture leads on to the child's), not only from their
    /// values (depths to capture: a capture ends the count).
    const CHAINED: bool;
    /// The payload encoding its files' headers name (docs/FORMAT.md), its [`FileContent`]'s.
    #[doc(hidden)]
    const ENCODING: u32 = Self::CONTENT.encoding();
    /// Whether its files may be packed (`NAME-NN.owpk`, or for values in the published format
    /// `scores.N.zst`): read there when the uncompressed file is absent, decoded whole by
    /// [`DatabaseDir::open_layer`].
    #[doc(hidden)]
    const PACKED: bool;

    /// What one position's entry reads as: its value (`i8`), its [`Bounds`](crate::bounds::Bounds), or its depth to
    /// capture (`None` for a position of value 0).
    type Entry;
    /// What the reads need to know of an opened file beyond its header: the codec of the
    /// layer (bounds), the count of escaped depths (depths to capture).
    #[doc(hidden)]
    type Layout: Send + Sync;
    /// Its files packed and probed in place ([`Table::Pack`]).
    #[doc(hidden)]
    type Packed: PackedTable<Entry = Self::Entry>;

    /// Checks the size of layer `n`'s file (at `path`, `len` bytes; its checked `header`,
    /// `None` in the published format) and reads what the reads need; `read(buf, at)` fills
    /// `buf` from the file at `at`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] for a size that disagrees with the header or with itself; those of
    /// `read`.
    #[doc(hidden)]
    fn layout(path: &Path, n: u32, header: Option<&Header>, len: u64, read: &dyn Fn(&mut [u8], u64) -> Result<()>) -> Result<Self::Layout>;

    /// The entry of position `i` of a file in memory.
    ///
    /// # Errors
    /// As [`Layer::get`].
    #[doc(hidden)]
    fn entry(layer: &Layer<Self>, i: u64) -> Result<Self::Entry>;

    /// The entry of position `i` read from the file with `pread`.
    ///
    /// # Errors
    /// As [`entry`](Self::entry); [`Error::Corrupt`] ([`Damage::Size`]) when the file is now
    /// shorter; [`Error::Io`] when a read fails.
    #[doc(hidden)]
    fn read_entry(file: &FileLayer<Self>, i: u64) -> Result<Self::Entry>;

    /// Opens layer `n`'s pack at `path` (already mapped: `map`, `file`) in `dir` for probing,
    /// what its reads need opened as `mode` says.
    ///
    /// # Errors
    /// Those of the pack's opening; [`Error::Corrupt`] ([`Damage::WrongContent`]) for a kind
    /// that is never packed.
    #[doc(hidden)]
    fn open_packed(dir: &DatabaseDir, n: u32, path: &Path, file: File, map: Mmap, verify_payload: bool, mode: ReadMode) -> Result<Self::Packed>;

    /// Layer `n`'s pack at `path` (already mapped) decoded whole into memory and checked
    /// against its payload checksum: the file it packs, as [`DatabaseDir::open_layer`] gives it.
    ///
    /// # Errors
    /// As [`open_packed`](Self::open_packed); [`Error::Corrupt`] for a damaged block or a
    /// payload checksum that disagrees.
    #[doc(hidden)]
    fn unpack(dir: &DatabaseDir, n: u32, path: &Path, file: File, map: Mmap, verify_payload: bool) -> Result<Layer<Self>>;
}

/// A layer's file packed and probed in place: what [`Table::Pack`] holds (a [`PackLayer`](crate::pack::PackLayer) of
/// values, a [`PackedDtc`] of depths).
pub trait PackedTable: Send + Sync + std::fmt::Debug {
    /// What one position's entry reads as.
    type Entry;
    /// The entry of position `i`.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`]; [`Error::Corrupt`] for a damaged block or a value out of its
    /// range; those of the reads it needs.
    fn get(&self, i: u64) -> Result<Self::Entry>;
    /// The layer number.
    fn stones(&self) -> u32;
    /// The pack file.
    fn path(&self) -> &Path;
    /// The native header the pack carries (its payload checksum covers the decoded payload).
    fn header(&self) -> &Header;
    /// Entries per block.
    fn block_values(&self) -> u32;
    /// Checks that the files read are still those opened.
    ///
    /// # Errors
    /// [`Error::Corrupt`] with [`Damage::ChangedWhileOpen`]; [`Error::Io`].
    fn check_unchanged(&self) -> Result<()>;
    /// Whether a file read is no longer at its path.
    fn replaced(&self) -> bool;
}

/// A layer's values as a [`Kind`]: `layer-NN.owdb` (header, one signed byte per position), its
/// pack `layer-NN.owpk`, or a published `scores.N` (headerless) or `scores.N.zst`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ValuesKind;

/// One layer's file of kind `K` (its values by default; [`BoundsKind`], [`DtcKind`]),
/// memory-mapped read-only (or, from a compressed file or with [`ReadMode::Pread`], held in
/// memory).
///
/// Invariant: the header (none in the published format) names `K`'s encoding, the ruleset and
/// layer asked for, and the file's size agrees with it (for depths to capture, also with the
/// count of escaped depths in the payload's last 8 bytes); values hold one byte per position.
/// The file must not be modified while it is mapped (see the module documentation of
/// [`crate::storage`]).
pub struct Layer<K: Kind = ValuesKind> {
    /// The file opened (its layer, path, identity, header and layout).
    source: FileLayer<K>,
    /// Its bytes, the header's included (the payload at `source.offset`).
    bytes: Bytes,
}

impl<K: Kind> std::fmt::Debug for Layer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Layer").field("kind", &K::CONTENT).field("stones", &self.source.stones).field("path", &self.source.path).finish()
    }
}

impl<K: Kind> Layer<K> {
    /// A file mapped (`file`, `map`) at `path`, checked as layer `n`'s of `rules` in `format`.
    pub(super) fn from_map(path: &Path, file: File, map: Mmap, format: Format, rules: Ruleset, n: u32, verify_payload: bool) -> Result<Layer<K>> {
        let stamp = FileStamp::of(&file, path)?;
        Layer::from_bytes(path, file, stamp, Bytes::Map(map), format, rules, n, verify_payload)
    }

    /// A file's bytes rebuilt in memory from a pack at `path` (already checked against the
    /// payload checksum), checked as layer `n`'s of `dir`: header and size. `bytes` are a native
    /// file's (header then payload at [`PAYLOAD_OFFSET`]), or a published file's in the
    /// published format.
    pub(super) fn decoded(path: &Path, file: File, bytes: Vec<u8>, dir: &DatabaseDir, n: u32) -> Result<Layer<K>> {
        let stamp = FileStamp::of(&file, path)?;
        Layer::from_bytes(path, file, stamp, Bytes::Decoded(bytes), dir.format(), dir.rules(), n, false)
    }

    /// The file's `bytes` (a map or a copy) checked as layer `n`'s of `rules` in `format`:
    /// header, size and, with `verify_payload`, the payload checksum.
    #[allow(clippy::too_many_arguments)]
    fn from_bytes(path: &Path, file: File, stamp: FileStamp, bytes: Bytes, format: Format, rules: Ruleset, n: u32, verify_payload: bool) -> Result<Layer<K>> {
        let header = match format {
            Format::Native => Some(header_of(&bytes, path, K::ENCODING, rules, n)?),
            Format::Vu => None,
        };
        let read = |buf: &mut [u8], at: u64| {
            buf.copy_from_slice(&bytes[at as usize..at as usize + buf.len()]);
            Ok(())
        };
        let layout = K::layout(path, n, header.as_ref(), bytes.len() as u64, &read)?;
        let offset = if header.is_some() { PAYLOAD_OFFSET } else { 0 };
        let source = FileLayer { stones: n, path: path.into(), file, stamp, offset, header, layout };
        let layer = Layer { source, bytes };
        if verify_payload {
            layer.check_payload()?;
        }
        Ok(layer)
    }

    /// Recomputes the payload checksum and compares it with the header's. Always `Ok` for
    /// headerless (published-format) layers.
    ///
    /// Cost: one sequential read of the payload, its pages given back window by window.
    ///
    /// # Errors
    /// [`Error::Corrupt`] on a mismatch.
    pub(crate) fn check_payload(&self) -> Result<()> {
        let Some(h) = &self.source.header else { return Ok(()) };
        let computed = checksum_released(self.bytes(), &|r| self.release(r));
        if computed != h.payload_checksum {
            return Err(Error::corrupt(&self.source.path, Damage::PayloadChecksum { stored: h.payload_checksum, computed }));
        }
        Ok(())
    }

    /// Checks that the open file still has the length and modification time it had when it
    /// was opened: a file truncated in place would make reading its mapped pages crash the
    /// process, and one rewritten in place gives other entries.
    ///
    /// Cost: one `fstat`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] with [`Damage::ChangedWhileOpen`]; [`Error::Io`] when `fstat` fails.
    pub(crate) fn check_unchanged(&self) -> Result<()> {
        self.source.check_unchanged()
    }

    /// The entry of the position of index `i`: its value, its bounds, or its depth to capture
    /// (`None`: its value is 0).
    ///
    /// Cost: values, one memory read; bounds, one or two byte reads and a table read; depths,
    /// one byte read and, for a depth of 254 or more, a binary search of the escaped depths.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] when `i` is not an index of the layer (values:
    /// [`Error::Corrupt`] with [`Damage::Size`]); [`Error::Corrupt`] for a value outside
    /// `-n..=n` ([`Damage::ValueOutOfRange`]), an entry that holds no valid bounds code
    /// ([`Damage::BadBoundsCode`]) or an escaped depth without its record ([`Damage::BadDtc`]).
    #[inline]
    pub fn get(&self, i: u64) -> Result<K::Entry> {
        K::entry(self, i)
    }

    /// What the reads need of the file beyond its header ([`Kind::Layout`]).
    pub(super) fn layout(&self) -> &K::Layout {
        self.source.layout()
    }

    /// The layer number (stones on the board).
    pub fn stones(&self) -> u32 {
        self.source.stones
    }

    /// The file the entries were read from.
    pub fn path(&self) -> &Path {
        &self.source.path
    }

    /// The header, for this tool's files (`None` for the published format).
    pub fn header(&self) -> Option<&Header> {
        self.source.header.as_ref()
    }

    /// The whole payload, as in the file after its header (values: one byte per position).
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[self.source.offset as usize..]
    }

    /// Gives the pages of payload bytes `range` back to the system (when mapped): they leave
    /// the process's resident memory (and are read again from the file, or its cache, when next
    /// used).
    ///
    /// Cost: one `madvise` call.
    pub fn release(&self, range: std::ops::Range<u64>) {
        self.bytes.release(self.source.offset as usize, range);
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

impl Layer<ValuesKind> {
    /// The values, one per position in index order.
    #[inline]
    pub fn values(&self) -> &[i8] {
        let b = self.bytes();
        // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid.
        unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<i8>(), b.len()) }
    }

    /// The first value outside `-n..=n` (index and value), if any.
    ///
    /// Cost: one sequential pass over the payload.
    pub fn first_out_of_range(&self) -> Option<(u64, i8)> {
        let n = self.stones();
        self.values().iter().position(|&v| u32::from(v.unsigned_abs()) > n).map(|i| (i as u64, self.values()[i]))
    }
}

/// One layer's file of kind `K` read one entry at a time with `pread` ([`ReadMode::Pread`]):
/// nothing is mapped, so a file truncated or rewritten under the reader gives errors (or
/// entries that `Table::check_unchanged` then rejects), never `SIGBUS`. (A [`Layer`] holds the
/// one it was read from.)
pub struct FileLayer<K: Kind = ValuesKind> {
    stones: u32,
    path: PathBuf,
    file: File,
    stamp: FileStamp,
    /// Where the payload starts in the file.
    offset: u64,
    header: Option<Header>,
    layout: K::Layout,
}

impl<K: Kind> std::fmt::Debug for FileLayer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileLayer").field("kind", &K::CONTENT).field("stones", &self.stones).field("path", &self.path).finish()
    }
}

impl<K: Kind> FileLayer<K> {
    /// Opens `file` (at `path`, a regular file, `stamp` taken) as layer `n`'s file of kind `K`
    /// of `rules` in `format`, checked as a [`Layer`] is (header, size and, with
    /// `verify_payload`, the payload checksum, read in 1 MiB pieces).
    pub(super) fn open(path: &Path, file: File, stamp: FileStamp, format: Format, rules: Ruleset, n: u32, verify_payload: bool) -> Result<FileLayer<K>> {
        let read = |buf: &mut [u8], at: u64| read_exact_at(&file, path, buf, at, stamp.len);
        let header = match format {
            Format::Native => Some(header_at(&file, path, stamp.len, K::ENCODING, rules, n)?),
            Format::Vu => None,
        };
        let layout = K::layout(path, n, header.as_ref(), stamp.len, &read)?;
        let offset = if header.is_some() { PAYLOAD_OFFSET } else { 0 };
        if let (true, Some(h)) = (verify_payload, &header) {
            let computed = checksum_from(&file, path, offset, stamp.len)?;
            if computed != h.payload_checksum {
                return Err(Error::corrupt(path, Damage::PayloadChecksum { stored: h.payload_checksum, computed }));
            }
        }
        Ok(FileLayer { stones: n, path: path.into(), file, stamp, offset, header, layout })
    }

    /// The entry of the position of index `i` (see [`Layer::get`]). Cost: one `pread` of at
    /// most 4 bytes; for a depth of 254 or more, one more per step of a binary search of the
    /// escaped depths.
    fn get(&self, i: u64) -> Result<K::Entry> {
        K::read_entry(self, i)
    }

    /// Fills `buf` from the file at `at`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] ([`Damage::Size`]) when the file is now shorter; [`Error::Io`].
    pub(crate) fn read(&self, buf: &mut [u8], at: u64) -> Result<()> {
        read_exact_at(&self.file, &self.path, buf, at, self.stamp.len)
    }

    /// Where the payload starts in the file.
    pub(super) fn payload_offset(&self) -> u64 {
        self.offset
    }

    /// What the reads need to know of the file (its kind's layout).
    pub(super) fn layout(&self) -> &K::Layout {
        &self.layout
    }

    /// The layer number (stones on the board).
    pub fn stones(&self) -> u32 {
        self.stones
    }

    /// The file the entries are read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header, for this tool's files (`None` for the published format).
    pub fn header(&self) -> Option<&Header> {
        self.header.as_ref()
    }

    /// Checks that the open file still has the length and modification time it had when it
    /// was opened (a mapped file truncated in place would make reading its pages crash the
    /// process).
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

/// One layer's file of kind `K` (its values by default) opened for probing
/// ([`DatabaseDir::open_table`]): in memory (mapped, or copied by [`ReadMode::Pread`]), a pack
/// read in place, or read from the file entry by entry.
#[derive(Debug)]
#[non_exhaustive]
pub enum Table<K: Kind = ValuesKind> {
    /// Every entry at hand (a native or published file mapped or copied, or one decoded).
    Layer(Layer<K>),
    /// A pack: each probe decodes part of one block (values; depths to capture, with the
    /// layer's values).
    Pack(K::Packed),
    /// Entries read from the file one by one ([`ReadMode::Pread`]).
    File(FileLayer<K>),
}

impl<K: Kind> Table<K> {
    /// Opens `file` (at `path`, a regular file) as layer `n`'s file of kind `K` in `dir` as
    /// [`ReadMode::Pread`] says: copied whole while the copy fits the budget, else read entry by
    /// entry.
    pub(super) fn read(path: &Path, file: File, dir: &DatabaseDir, n: u32, verify_payload: bool) -> Result<Table<K>> {
        let (format, rules) = (dir.format(), dir.rules());
        Ok(match SideFile::read(&file, path)? {
            SideFile::Copied(bytes, stamp) => Table::Layer(Layer::from_bytes(path, file, stamp, bytes, format, rules, n, verify_payload)?),
            SideFile::InFile(stamp) => Table::File(FileLayer::open(path, file, stamp, format, rules, n, verify_payload)?),
        })
    }

    /// The entry of the position of index `i` (see [`Layer::get`]).
    ///
    /// Cost: as [`Layer::get`] ([`Table::Layer`]), one `pread` more or less in its place
    /// ([`Table::File`]), or part of a block's decoding ([`Table::Pack`]).
    ///
    /// # Errors
    /// As [`Layer::get`]; for [`Table::File`], [`Error::Corrupt`] ([`Damage::Size`]) when the
    /// file is now shorter and [`Error::Io`] when a read fails; for [`Table::Pack`],
    /// [`Error::Corrupt`] for a damaged block.
    #[inline]
    pub fn get(&self, i: u64) -> Result<K::Entry> {
        match self {
            Table::Layer(l) => l.get(i),
            Table::Pack(p) => p.get(i),
            Table::File(f) => f.get(i),
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
        layer_size(self.stones())
    }

    /// Always false: every layer holds at least one position.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file the entries are read from.
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
            Table::File(f) => f.check_unchanged(),
        }
    }

    /// Whether its path no longer names the file that was opened (replaced by rename, or
    /// removed): the entries read are those of the old file.
    ///
    /// Cost: one `stat`.
    pub(crate) fn replaced(&self) -> bool {
        match self {
            Table::Layer(l) => l.source.replaced(),
            Table::Pack(p) => p.replaced(),
            Table::File(f) => f.replaced(),
        }
    }
}

impl Table<DtcKind> {
    /// Whether the table is a depths pack over floors (codec 5): where the value and the floor
    /// decide a depth ([`crate::pack::decided_depth`]), what it stores is not the depth.
    #[inline]
    pub(crate) fn over_floors(&self) -> bool {
        matches!(self, Table::Pack(p) if p.over_floors())
    }

    /// What the table stores at position `i`: its depth, or in a depths pack over floors the
    /// symbol stored, which is the depth where the value and the floor do not decide it.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    #[inline]
    pub(crate) fn stored(&self, i: u64) -> Result<Option<u16>> {
        match self {
            Table::Pack(p) => p.stored(i),
            _ => self.get(i),
        }
    }
}

impl Table<ValuesKind> {
    /// Whether the table is a pack over floors: what it stores ([`stored`](Self::stored)) is
    /// a position's value only with its floor ([`crate::pack::floor`]).
    #[inline]
    pub(crate) fn over_floors(&self) -> bool {
        matches!(self, Table::Pack(p) if p.over_floors())
    }

    /// What the table stores at position `i`: its value, or in a pack over floors the value
    /// stored, which is the position's value once the larger of it and the floor is taken.
    ///
    /// Cost: as [`get`](Self::get).
    ///
    /// # Errors
    /// As [`get`](Self::get).
    #[inline]
    pub(crate) fn stored(&self, i: u64) -> Result<i8> {
        match self {
            Table::Pack(p) if p.over_floors() => {
                let v = p.get(i)?;
                if u32::from(v.unsigned_abs()) > p.stones() {
                    return Err(Error::corrupt(p.path(), Damage::ValueOutOfRange { index: i, value: v, stones: p.stones() }));
                }
                Ok(v)
            }
            _ => self.get(i),
        }
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
    pub(crate) fn read_into(&self, start: u64, out: &mut [u8]) -> Result<()> {
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
            Table::File(f) => f.read(out, f.offset + start),
        }
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
