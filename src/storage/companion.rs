//! The files beside a layer's values, its companions: forced-capture bounds (`bounds-NN.owdb`,
//! [`crate::bounds`]) and depths to capture (`dtc-NN.owdb`, [`crate::dtc`]). Both are opened,
//! checked and read the same way, so one type of each role serves both kinds:
//!
//! | type | what it is | for bounds | for depths to capture |
//! |---|---|---|---|
//! | [`CompanionLayer`] | a file mapped read-only (or copied by [`ReadMode::Pread`]) | [`BoundsLayer`] | [`DtcLayer`] |
//! | [`CompanionFile`] | a file read entry by entry with `pread` | [`BoundsFile`] | [`DtcFile`] |
//! | [`CompanionTable`] | either, as opened for probing | [`BoundsTable`] | [`DtcTable`] |
//!
//! The kind is a type parameter ([`BoundsKind`], [`DtcKind`]: [`CompanionKind`]) so that each
//! kind's entries read as what they are ([`Bounds`], `Option<u16>`); [`Companion`] names the kind
//! at run time.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::bounds::{Bounds, Codec};
use crate::dtc::{DtcPayload, ESCAPE, NONE, RECORD_LEN};
use crate::error::{Damage, Error, Result};
use crate::format::{Header, BOUNDS_TRIANGULAR, DTC_U8_ESCAPED, PAYLOAD_OFFSET};
use crate::index::layer_size;
use crate::pack::DtcPack;
use crate::rules::Ruleset;
use crate::sys::FileStamp;

use super::mapping::{checksum_from, header_at, header_of, map_file, read_exact_at, Bytes, SideFile};
use super::*;

/// A kind of file beside a layer's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Companion {
    /// Forced-capture bounds (`bounds-NN.owdb`, `oware build --bounds`; [`crate::bounds`]).
    Bounds,
    /// Depths to capture (`dtc-NN.owdb`, `oware build --dtc`; [`crate::dtc`]).
    Dtc,
}

impl Companion {
    /// `bounds` or `dtc`: how its files' names start (`bounds-NN.owdb`, `bounds-NN.json`).
    pub fn name(self) -> &'static str {
        match self {
            Companion::Bounds => "bounds",
            Companion::Dtc => "dtc",
        }
    }

    /// What its files hold, in words: `bounds` or `depths to capture`.
    pub fn what(self) -> &'static str {
        match self {
            Companion::Bounds => "bounds",
            Companion::Dtc => "depths to capture",
        }
    }

    /// Whether a layer's file of this kind follows from the files of the same kind of the
    /// smaller layers its captures reach (bounds: a capture leads on to the child's bounds), not
    /// only from their values (depths to capture: a capture ends the count, so only the values
    /// of smaller layers are read).
    pub fn chained(self) -> bool {
        self == Companion::Bounds
    }

    /// The payload encoding its files' headers name.
    pub(crate) fn encoding(self) -> u32 {
        match self {
            Companion::Bounds => BOUNDS_TRIANGULAR,
            Companion::Dtc => DTC_U8_ESCAPED,
        }
    }

    /// The error for layer `layer`'s file of this kind absent from `dir` (of `rules`):
    /// [`Error::BoundsMissing`] or [`Error::DtcMissing`].
    pub(crate) fn missing(self, layer: u32, dir: PathBuf, rules: Ruleset) -> Error {
        match self {
            Companion::Bounds => Error::BoundsMissing { layer, dir, rules },
            Companion::Dtc => Error::DtcMissing { layer, dir, rules },
        }
    }
}

impl std::fmt::Display for Companion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

mod private {
    /// Keeps [`super::CompanionKind`] to the kinds of this crate.
    pub trait Sealed {}
}

/// A kind of file beside a layer's values, as a type: what [`CompanionLayer`], [`CompanionFile`]
/// and [`CompanionTable`] hold. Implemented by [`BoundsKind`] and [`DtcKind`] only.
pub trait CompanionKind: private::Sealed + Sized + Send + Sync + std::fmt::Debug + 'static {
    /// The kind at run time.
    const KIND: Companion;
    /// What one position's entry reads as: [`Bounds`], or the depth to capture (`None` for a
    /// position of value 0).
    type Entry;
    /// What the reads need to know of an opened file beyond its header: the codec of the
    /// layer (bounds), the count of escaped depths (depths to capture).
    #[doc(hidden)]
    type Layout: Send + Sync;

    /// Checks the size of layer `n`'s file (at `path`, `len` bytes, its checked `header`) and
    /// reads what the reads need; `read(buf, at)` fills `buf` from the file at `at`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] for a size that disagrees with the header or with itself; those of
    /// `read`.
    #[doc(hidden)]
    fn layout(path: &Path, n: u32, header: &Header, len: u64, read: &dyn Fn(&mut [u8], u64) -> Result<()>) -> Result<Self::Layout>;

    /// The entry of position `i` (an index of the layer) of a file in memory.
    ///
    /// # Errors
    /// [`Error::Corrupt`] for an entry that cannot be read as one.
    #[doc(hidden)]
    fn entry(layer: &CompanionLayer<Self>, i: u64) -> Result<Self::Entry>;

    /// The entry of position `i` (an index of the layer) read from the file with `pread`.
    ///
    /// # Errors
    /// As [`entry`](Self::entry); [`Error::Corrupt`] ([`Damage::Size`]) when the file is now
    /// shorter; [`Error::Io`] when a read fails.
    #[doc(hidden)]
    fn read_entry(file: &CompanionFile<Self>, i: u64) -> Result<Self::Entry>;

    /// Its files packed and probed in place (depths: [`PackedDtc`]; bounds are never packed).
    #[doc(hidden)]
    type Packed: PackedCompanion<Entry = Self::Entry>;

    /// Opens layer `n`'s pack of this kind at `path` (already mapped: `map`, `file`) in `dir`
    /// for probing, the values it needs opened as `mode` says.
    ///
    /// # Errors
    /// Those of the pack's opening; [`Error::Corrupt`] ([`Damage::WrongContent`]) for a kind
    /// that is never packed.
    #[doc(hidden)]
    fn open_packed(dir: &DatabaseDir, n: u32, path: &Path, file: File, map: Mmap, verify_payload: bool, mode: ReadMode) -> Result<Self::Packed>;
}

/// A file beside the values packed and probed in place: what [`CompanionTable::Pack`] holds.
pub trait PackedCompanion: Send + Sync + std::fmt::Debug {
    /// What one position's entry reads as.
    type Entry;
    /// The entry of position `i`.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`]; [`Error::Corrupt`] for a damaged block; those of the reads
    /// it needs.
    fn get(&self, i: u64) -> Result<Self::Entry>;
    /// The layer number.
    fn stones(&self) -> u32;
    /// The pack file.
    fn path(&self) -> &Path;
    /// Checks that the files read are still those opened.
    ///
    /// # Errors
    /// [`Error::Corrupt`] with [`Damage::ChangedWhileOpen`]; [`Error::Io`].
    fn check_unchanged(&self) -> Result<()>;
    /// Whether a file read is no longer at its path.
    fn replaced(&self) -> bool;
}

/// A layer's depths to capture packed (`dtc-NN.owpk`), with the layer's values its contexts read.
#[derive(Debug)]
pub struct PackedDtc {
    pack: DtcPack,
    values: Table,
}

impl PackedCompanion for PackedDtc {
    type Entry = Option<u16>;
    /// Cost: the values of up to a block and on average half a block's decoding (about 20 µs
    /// with blocks of 512 depths, docs/performance.md).
    fn get(&self, i: u64) -> Result<Option<u16>> {
        self.pack.depth(i, |start, out| self.values.read_into(start, out))
    }
    fn stones(&self) -> u32 {
        self.pack.stones()
    }
    fn path(&self) -> &Path {
        self.pack.path()
    }
    fn check_unchanged(&self) -> Result<()> {
        self.pack.check_unchanged()?;
        self.values.check_unchanged()
    }
    fn replaced(&self) -> bool {
        self.pack.replaced() || self.values.replaced()
    }
}

/// No pack: bounds files are never packed.
#[derive(Debug)]
pub enum NoPack {}

impl PackedCompanion for NoPack {
    type Entry = Bounds;
    fn get(&self, _: u64) -> Result<Bounds> {
        match *self {}
    }
    fn stones(&self) -> u32 {
        match *self {}
    }
    fn path(&self) -> &Path {
        match *self {}
    }
    fn check_unchanged(&self) -> Result<()> {
        match *self {}
    }
    fn replaced(&self) -> bool {
        match *self {}
    }
}

/// Forced-capture bounds as a [`CompanionKind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BoundsKind;

/// Depths to capture as a [`CompanionKind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DtcKind;

/// One layer's forced-capture bounds, memory-mapped (or copied into memory).
pub type BoundsLayer = CompanionLayer<BoundsKind>;
/// One layer's depths to capture, memory-mapped (or copied into memory).
pub type DtcLayer = CompanionLayer<DtcKind>;
/// One layer's forced-capture bounds read entry by entry with `pread`.
pub type BoundsFile = CompanionFile<BoundsKind>;
/// One layer's depths to capture read depth by depth with `pread`.
pub type DtcFile = CompanionFile<DtcKind>;
/// One layer's forced-capture bounds opened for probing.
pub type BoundsTable = CompanionTable<BoundsKind>;
/// One layer's depths to capture opened for probing.
pub type DtcTable = CompanionTable<DtcKind>;

/// One layer's file of kind `K` ([`BoundsLayer`], [`DtcLayer`]), memory-mapped read-only (or,
/// opened with [`ReadMode::Pread`], copied into memory).
///
/// Invariant: the header names `K`'s encoding, the ruleset and layer asked for, and the file's
/// size agrees with it (for depths to capture, also with the count of escaped depths in the
/// payload's last 8 bytes). The file must not be modified while it is mapped (see the module
/// documentation of [`crate::storage`]).
pub struct CompanionLayer<K: CompanionKind> {
    /// The file opened (its layer, path, identity and layout).
    source: CompanionFile<K>,
    /// Its bytes, the header's included.
    bytes: Bytes,
    header: Header,
}

impl<K: CompanionKind> std::fmt::Debug for CompanionLayer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompanionLayer").field("source", &self.source).finish()
    }
}

impl<K: CompanionKind> CompanionLayer<K> {
    /// Opens a file of kind `K` at any path, expecting layer `n` of `rules`. See
    /// [`DatabaseDir::open_companion`].
    ///
    /// # Errors
    /// As [`DatabaseDir::open_companion`], with
    /// [`Error::Io`] for a missing file.
    pub fn open_file(path: &Path, rules: Ruleset, n: u32, verify_payload: bool) -> Result<CompanionLayer<K>> {
        let missing = || Error::io(path, std::io::Error::from(std::io::ErrorKind::NotFound));
        let (file, map) = map_file(path, missing)?;
        CompanionLayer::from_map(path, file, map, rules, n, verify_payload)
    }

    pub(super) fn from_map(path: &Path, file: File, map: Mmap, rules: Ruleset, n: u32, verify_payload: bool) -> Result<CompanionLayer<K>> {
        let stamp = FileStamp::of(&file, path)?;
        CompanionLayer::from_bytes(path, file, stamp, Bytes::Map(map), rules, n, verify_payload)
    }

    /// A native file's bytes decoded from a pack at `path` (already checked against the payload
    /// checksum), checked as layer `n`'s of `rules`: header and size.
    pub(super) fn from_decoded(path: &Path, file: File, stamp: FileStamp, bytes: Vec<u8>, rules: Ruleset, n: u32) -> Result<CompanionLayer<K>> {
        CompanionLayer::from_bytes(path, file, stamp, Bytes::Decoded(bytes), rules, n, false)
    }

    /// The file's `bytes` (a map or a copy) checked as layer `n`'s of `rules`: header, size
    /// and, with `verify_payload`, the payload checksum.
    fn from_bytes(path: &Path, file: File, stamp: FileStamp, bytes: Bytes, rules: Ruleset, n: u32, verify_payload: bool) -> Result<CompanionLayer<K>> {
        let header = header_of(&bytes, path, K::KIND.encoding(), rules, n)?;
        let read = |buf: &mut [u8], at: u64| {
            buf.copy_from_slice(&bytes[at as usize..at as usize + buf.len()]);
            Ok(())
        };
        let layout = K::layout(path, n, &header, bytes.len() as u64, &read)?;
        let source = CompanionFile { stones: n, path: path.into(), file, stamp, layout };
        let layer = CompanionLayer { source, bytes, header };
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
        let computed = checksum_released(self.raw(), &|r| self.release(r));
        if computed != self.header.payload_checksum {
            return Err(Error::corrupt(&self.source.path, Damage::PayloadChecksum { stored: self.header.payload_checksum, computed }));
        }
        Ok(())
    }

    /// The whole payload, as in the file after its header.
    pub fn payload_bytes(&self) -> &[u8] {
        self.raw()
    }

    /// The payload bytes.
    fn raw(&self) -> &[u8] {
        &self.bytes[PAYLOAD_OFFSET as usize..]
    }

    /// The entry of the position of index `i`: its bounds, or its depth to capture (`None`: its
    /// value is 0).
    ///
    /// Cost: bounds, one or two byte reads and a table read; depths, one byte read and, for a
    /// depth of 254 or more, a binary search of the escaped depths.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] when `i` is not an index of the layer; [`Error::Corrupt`] when
    /// the entry holds no valid bounds code ([`Damage::BadBoundsCode`]) or is an escaped depth
    /// without its record ([`Damage::BadDtc`]).
    pub fn get(&self, i: u64) -> Result<K::Entry> {
        check_index(self.source.stones, i)?;
        K::entry(self, i)
    }

    /// The layer number (stones on the board).
    pub fn stones(&self) -> u32 {
        self.source.stones
    }

    /// The file the entries were read from.
    pub fn path(&self) -> &Path {
        &self.source.path
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
}

/// [`Error::IndexOutOfRange`] unless `i` is an index of layer `n`.
fn check_index(n: u32, i: u64) -> Result<()> {
    let size = layer_size(n);
    if i >= size {
        return Err(Error::IndexOutOfRange { layer: n, index: i, size });
    }
    Ok(())
}

impl CompanionLayer<BoundsKind> {
    /// The codec of the layer (for decoding the payload in bulk).
    pub fn codec(&self) -> &Codec {
        &self.source.layout
    }

    /// The payload bytes.
    pub fn payload(&self) -> &[u8] {
        self.raw()
    }
}

impl CompanionLayer<DtcKind> {
    /// The payload, split into its parts.
    pub fn payload(&self) -> DtcPayload<'_> {
        DtcPayload::new(self.source.stones, self.raw()).expect("checked when opened")
    }
}

/// One layer's file of kind `K` ([`BoundsFile`], [`DtcFile`]) read one entry at a time with
/// `pread` ([`ReadMode::Pread`]): nothing is mapped, so a file truncated under the reader gives
/// errors, never `SIGBUS`. (A [`CompanionLayer`] holds the one it was read from.)
pub struct CompanionFile<K: CompanionKind> {
    stones: u32,
    path: PathBuf,
    file: File,
    stamp: FileStamp,
    layout: K::Layout,
}

impl<K: CompanionKind> std::fmt::Debug for CompanionFile<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompanionFile").field("kind", &K::KIND).field("stones", &self.stones).field("path", &self.path).finish()
    }
}

impl<K: CompanionKind> CompanionFile<K> {
    /// Opens `file` (at `path`, `stamp` taken) as layer `n`'s file of kind `K` of `rules`,
    /// checked as a [`CompanionLayer`] is (header, size and, with `verify_payload`, the payload
    /// checksum, read in 1 MiB pieces).
    pub(super) fn open(path: &Path, file: File, stamp: FileStamp, rules: Ruleset, n: u32, verify_payload: bool) -> Result<CompanionFile<K>> {
        let header = header_at(&file, path, stamp.len, K::KIND.encoding(), rules, n)?;
        let read = |buf: &mut [u8], at: u64| read_exact_at(&file, path, buf, at, stamp.len);
        let layout = K::layout(path, n, &header, stamp.len, &read)?;
        if verify_payload {
            let computed = checksum_from(&file, path, PAYLOAD_OFFSET, stamp.len)?;
            if computed != header.payload_checksum {
                return Err(Error::corrupt(path, Damage::PayloadChecksum { stored: header.payload_checksum, computed }));
            }
        }
        Ok(CompanionFile { stones: n, path: path.into(), file, stamp, layout })
    }

    /// The entry of the position of index `i` (see [`CompanionLayer::get`]). Cost: one `pread`
    /// of at most 4 bytes; for a depth of 254 or more, one more per step of a binary search of
    /// the escaped depths.
    fn get(&self, i: u64) -> Result<K::Entry> {
        check_index(self.stones, i)?;
        K::read_entry(self, i)
    }

    /// Fills `buf` from the file at `at`.
    fn read(&self, buf: &mut [u8], at: u64) -> Result<()> {
        read_exact_at(&self.file, &self.path, buf, at, self.stamp.len)
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

/// One layer's file of kind `K` opened for probing ([`BoundsTable`], [`DtcTable`];
/// [`DatabaseDir::open_companion_with`]): in memory
/// (mapped, or copied by [`ReadMode::Pread`]), or read from the file entry by entry.
#[derive(Debug)]
#[non_exhaustive]
pub enum CompanionTable<K: CompanionKind> {
    /// Every entry at hand, mapped or copied.
    Layer(CompanionLayer<K>),
    /// Entries read from the file one by one ([`ReadMode::Pread`]).
    File(CompanionFile<K>),
    /// A pack probed in place (depths to capture only: `dtc-NN.owpk`).
    Pack(K::Packed),
}

impl<K: CompanionKind> CompanionTable<K> {
    /// Opens `file` (at `path`, a regular file) as layer `n`'s file of kind `K` as
    /// [`ReadMode::Pread`] says: copied whole while the copy fits the budget, else read entry by
    /// entry.
    pub(super) fn read(path: &Path, file: File, rules: Ruleset, n: u32, verify_payload: bool) -> Result<CompanionTable<K>> {
        Ok(match SideFile::read(&file, path)? {
            SideFile::Copied(bytes, stamp) => CompanionTable::Layer(CompanionLayer::from_bytes(path, file, stamp, bytes, rules, n, verify_payload)?),
            SideFile::InFile(stamp) => CompanionTable::File(CompanionFile::open(path, file, stamp, rules, n, verify_payload)?),
        })
    }

    /// The entry of the position of index `i` (see [`CompanionLayer::get`]).
    ///
    /// Cost: as [`CompanionLayer::get`] ([`CompanionTable::Layer`]), or one `pread` more or less
    /// in its place ([`CompanionTable::File`]).
    ///
    /// # Errors
    /// As [`CompanionLayer::get`]; for [`CompanionTable::File`], [`Error::Corrupt`]
    /// ([`Damage::Size`]) when the file is now shorter and [`Error::Io`] when a read fails.
    #[inline]
    pub fn get(&self, i: u64) -> Result<K::Entry> {
        match self {
            CompanionTable::Layer(l) => l.get(i),
            CompanionTable::File(f) => f.get(i),
            CompanionTable::Pack(p) => p.get(i),
        }
    }

    /// The layer number.
    pub fn stones(&self) -> u32 {
        match self {
            CompanionTable::Layer(l) => l.source.stones,
            CompanionTable::File(f) => f.stones,
            CompanionTable::Pack(p) => p.stones(),
        }
    }

    /// The file the entries are read from.
    pub fn path(&self) -> &Path {
        match self {
            CompanionTable::Layer(l) => &l.source.path,
            CompanionTable::File(f) => &f.path,
            CompanionTable::Pack(p) => p.path(),
        }
    }

    /// See [`CompanionFile::check_unchanged`].
    pub(crate) fn check_unchanged(&self) -> Result<()> {
        match self {
            CompanionTable::Layer(l) => l.source.check_unchanged(),
            CompanionTable::File(f) => f.check_unchanged(),
            CompanionTable::Pack(p) => p.check_unchanged(),
        }
    }

    /// Whether its path no longer names the file that was opened. Cost: one `stat`.
    pub(crate) fn replaced(&self) -> bool {
        match self {
            CompanionTable::Layer(l) => l.source.replaced(),
            CompanionTable::File(f) => f.replaced(),
            CompanionTable::Pack(p) => p.replaced(),
        }
    }
}

impl private::Sealed for BoundsKind {}

impl CompanionKind for BoundsKind {
    const KIND: Companion = Companion::Bounds;
    type Entry = Bounds;
    type Layout = Codec;

    /// The size must be exactly the header's.
    fn layout(path: &Path, n: u32, header: &Header, len: u64, _read: &dyn Fn(&mut [u8], u64) -> Result<()>) -> Result<Codec> {
        let want = PAYLOAD_OFFSET + header.payload_len();
        if len != want {
            return Err(Error::corrupt(path, Damage::Size { expected: want, found: len }));
        }
        Ok(Codec::new(n))
    }

    fn entry(layer: &BoundsLayer, i: u64) -> Result<Bounds> {
        let (codec, payload) = (layer.codec(), layer.payload());
        codec.get(payload, i).ok_or_else(|| Error::corrupt(layer.path(), Damage::BadBoundsCode { index: i, code: codec.raw(payload, i) }))
    }

    /// One `pread` of the (up to) 4 bytes that hold the entry's code.
    fn read_entry(file: &BoundsFile, i: u64) -> Result<Bounds> {
        let codec = &file.layout;
        let at = codec.byte_of(i) as u64;
        let mut buf = [0u8; 4];
        let k = crate::bounds::payload_len(file.stones).saturating_sub(at).min(4) as usize;
        file.read(&mut buf[..k], PAYLOAD_OFFSET + at)?;
        let code = codec.raw_from(&buf[..k], i);
        codec.decode(code).ok_or_else(|| Error::corrupt(&file.path, Damage::BadBoundsCode { index: i, code }))
    }

    type Packed = NoPack;

    fn open_packed(_: &DatabaseDir, _: u32, path: &Path, _: File, _: Mmap, _: bool, _: ReadMode) -> Result<NoPack> {
        Err(Error::corrupt(path, Damage::WrongContent { found: "a pack", expected: "forced-capture bounds" }))
    }
}

impl private::Sealed for DtcKind {}

impl CompanionKind for DtcKind {
    const KIND: Companion = Companion::Dtc;
    type Entry = Option<u16>;
    /// The count of escaped depths (in the table after the bytes).
    type Layout = u64;

    /// The size must hold at least the bytes and the count, and agree with the count of escaped
    /// depths in the payload's last 8 bytes (as [`DtcPayload::new`] checks).
    fn layout(path: &Path, n: u32, header: &Header, len: u64, read: &dyn Fn(&mut [u8], u64) -> Result<()>) -> Result<u64> {
        let least = PAYLOAD_OFFSET + header.payload_len();
        if len < least {
            return Err(Error::corrupt(path, Damage::Size { expected: least, found: len }));
        }
        let payload = len - PAYLOAD_OFFSET;
        let mut count = [0u8; 8];
        read(&mut count, len - 8)?;
        let escaped = u64::from_le_bytes(count);
        if escaped > payload || crate::dtc::payload_len(n, escaped) != payload {
            let what = crate::dtc::BadDtc::Length { len: payload, escaped }.to_string();
            return Err(Error::corrupt(path, Damage::BadDtc { what }));
        }
        Ok(escaped)
    }

    fn entry(layer: &DtcLayer, i: u64) -> Result<Option<u16>> {
        layer.payload().get(i).map_err(|e| Error::corrupt(layer.path(), Damage::BadDtc { what: e.to_string() }))
    }

    /// One `pread` of the position's byte; for an escaped depth, a binary search of the records.
    fn read_entry(file: &DtcFile, i: u64) -> Result<Option<u16>> {
        let mut b = [0u8; 1];
        file.read(&mut b, PAYLOAD_OFFSET + i)?;
        match b[0] {
            NONE => Ok(None),
            ESCAPE => {
                let records = PAYLOAD_OFFSET + layer_size(file.stones);
                let (mut lo, mut hi) = (0, file.layout);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    let mut r = [0u8; 8];
                    file.read(&mut r, records + mid * RECORD_LEN)?;
                    let (j, d) = crate::dtc::split_record(u64::from_le_bytes(r));
                    match j.cmp(&i) {
                        std::cmp::Ordering::Equal => return Ok(Some(d)),
                        std::cmp::Ordering::Less => lo = mid + 1,
                        std::cmp::Ordering::Greater => hi = mid,
                    }
                }
                let what = crate::dtc::BadDtc::NoRecord { index: i }.to_string();
                Err(Error::corrupt(&file.path, Damage::BadDtc { what }))
            }
            d => Ok(Some(u16::from(d))),
        }
    }

    type Packed = PackedDtc;

    /// The pack, and the layer's values opened for probing as `mode` says.
    fn open_packed(dir: &DatabaseDir, n: u32, path: &Path, file: File, map: Mmap, verify_payload: bool, mode: ReadMode) -> Result<PackedDtc> {
        let pack = DtcPack::open(path, file, map, dir.rules(), n, verify_payload)?;
        let values = dir.open_table_with(n, verify_payload, mode)?;
        Ok(PackedDtc { pack, values })
    }
}

#[cfg(test)]
mod pread_tests {
    use super::*;
    use crate::build::{self, BuildConfig, Silent};
    use crate::storage::mapping::open_regular;
    use crate::storage::DtcWriter;
    use std::fs::OpenOptions;

    /// A new directory with abapa's layers `0..=top`, their bounds and their depths to capture.
    fn abapa_with_bounds_and_depths(top: u32) -> (tempfile::TempDir, DatabaseDir) {
        let dir = tempfile::tempdir().unwrap();
        let abapa: Ruleset = "abapa".parse().unwrap();
        let config = BuildConfig { rules: abapa, max_stones: top, dir: dir.path().into(), max_memory: None, bounds: true, dtc: true, ..Default::default() };
        build::build(&config, &Silent).unwrap();
        let d = DatabaseDir::native(dir.path(), abapa).unwrap();
        (dir, d)
    }

    /// Bounds and depths to capture read with `pread` (copied whole, or entry by entry) give the
    /// mapped answers, and errors (never a crash) once their files are truncated under them.
    #[test]
    fn bounds_and_depths_read_with_pread_survive_truncation() {
        let (_dir, d) = abapa_with_bounds_and_depths(9);
        let abapa = d.rules();
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

    /// A pack of depths is told by its magic, not its name: at the `dtc-NN.owdb` path it is
    /// probed in place in both read modes (never decoded whole), with the native depths; a pack
    /// at a bounds path is named as the wrong content in both modes.
    #[test]
    fn a_pack_is_told_by_its_magic_in_both_read_modes() {
        let (_dir, d) = abapa_with_bounds_and_depths(9);
        let n = 9;
        let native = d.open_dtc(n, true).unwrap();
        let depths: Vec<Option<u16>> = (0..layer_size(n)).map(|i| native.get(i).unwrap()).collect();
        let header = native.header().clone();
        let payload = native.payload_bytes().to_vec();
        drop(native);
        let values = d.open(n, true).unwrap();
        let mut packed = std::io::Cursor::new(Vec::new());
        let path = d.dtc_path(n);
        crate::pack::pack_dtc(&header, &payload, values.bytes(), crate::pack::PackOptions::default(), &mut packed, &path, &path).unwrap();
        std::fs::write(&path, packed.get_ref()).unwrap();
        for mode in [ReadMode::Map, ReadMode::Pread] {
            let table = d.open_dtc_with(n, true, mode).unwrap();
            assert!(matches!(table, DtcTable::Pack(_)), "{mode:?}: {table:?}");
            for (i, want) in depths.iter().enumerate().step_by(7) {
                assert_eq!(table.get(i as u64).unwrap(), *want, "{mode:?}: depth of {i}");
            }
        }
        std::fs::write(d.bounds_path(n), packed.get_ref()).unwrap();
        for mode in [ReadMode::Map, ReadMode::Pread] {
            match d.open_bounds_with(n, true, mode) {
                Err(Error::Corrupt { damage: Damage::WrongContent { found: "a pack", .. }, .. }) => {}
                other => panic!("{mode:?}: {other:?}"),
            }
        }
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
}
