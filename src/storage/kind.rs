//! The kinds of a layer's files, as types: its values ([`ValuesKind`]), its forced-capture
//! bounds ([`BoundsKind`], [`crate::bounds`]) and its depths to capture ([`DtcKind`],
//! `docs/dtc.md`). Every file of every kind is found, opened, checked and read the same way
//! ([`Layer`], [`Table`], [`DatabaseDir`]); what a kind is lives in its impl of the one tag
//! trait, [`Kind`]: what its files hold ([`FileContent`]: their names and words), the encoding
//! its headers name, how its size is checked, how one entry is read, and whether and how its
//! files are packed.
//!
//! The trait itself, and the values' tag [`ValuesKind`] (the default of [`Layer`] and [`Table`]),
//! stand beside what is generic over them, in `layer.rs`; the other kinds' tags and their impls
//! stand here, read by the probe, the search and the packs as well. A kind's tag and impl may
//! stand anywhere in the crate: a fourth kind's stand beside its check, in `src/verify/<kind>.rs`,
//! and its words and encoding in its [`FileContent`] (`src/error/details.rs`); the storage,
//! the errors, the builder and the verifier then take it as they take these three
//! (docs/architecture.md, "A fourth kind").

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use crate::bounds::{Bounds, Codec};
use crate::dtc::{ESCAPE, NONE, RECORD_LEN};
use crate::error::{Damage, Error, FileContent, Result};
use crate::format::{Header, PAYLOAD_OFFSET};
use crate::index::layer_size;
use crate::pack::{DtcPack, PackLayer};

use super::layer::{private, FileLayer, Kind, Layer, PackedTable, Table, ValuesKind};
use super::{DatabaseDir, ReadMode};
use crate::dtc::DtcPayload;

/// [`Error::IndexOutOfRange`] unless `i` is an index of layer `n`.
fn check_index(n: u32, i: u64) -> Result<()> {
    let size = layer_size(n);
    if i >= size {
        return Err(Error::IndexOutOfRange { layer: n, index: i, size });
    }
    Ok(())
}

/// A value read from layer `n`'s file at `path`, checked to lie in `-n..=n`.
fn in_range(path: &Path, n: u32, index: u64, value: i8) -> Result<i8> {
    if u32::from(value.unsigned_abs()) > n {
        return Err(Error::corrupt(path, Damage::ValueOutOfRange { index, value, stones: n }));
    }
    Ok(value)
}

// ---------------------------------------------------------------------------------------------
// Values.

impl private::Sealed for ValuesKind {}

impl Kind for ValuesKind {
    const CONTENT: FileContent = FileContent::Values;
    const CHAINED: bool = true;
    const PACKED: bool = true;
    type Entry = i8;
    type Layout = ();
    type Packed = PackLayer;

    /// A native file's size must be exactly the header's; a published file's, one byte per
    /// position.
    fn layout(path: &Path, n: u32, header: Option<&Header>, len: u64, _read: &dyn Fn(&mut [u8], u64) -> Result<()>) -> Result<()> {
        let want = header.map_or(layer_size(n), |h| PAYLOAD_OFFSET + h.entries);
        if len != want {
            return Err(Error::corrupt(path, Damage::Size { expected: want, found: len }));
        }
        Ok(())
    }

    /// One memory read; past the layer's end, [`Damage::Size`].
    #[inline]
    fn entry(layer: &Layer<ValuesKind>, i: u64) -> Result<i8> {
        let n = layer.stones();
        match layer.values().get(i as usize) {
            Some(&v) => in_range(layer.path(), n, i, v),
            None => Err(Error::corrupt(layer.path(), Damage::Size { expected: layer_size(n), found: layer.values().len() as u64 })),
        }
    }

    /// One `pread` of the position's byte.
    fn read_entry(file: &FileLayer<ValuesKind>, i: u64) -> Result<i8> {
        let n = file.stones();
        if i >= layer_size(n) {
            return Err(Error::corrupt(file.path(), Damage::Size { expected: layer_size(n), found: layer_size(n) }));
        }
        let mut b = [0u8; 1];
        file.read(&mut b, file.payload_offset() + i)?;
        in_range(file.path(), n, i, b[0] as i8)
    }

    fn open_packed(dir: &DatabaseDir, n: u32, path: &Path, file: File, map: Mmap, verify_payload: bool, _mode: ReadMode) -> Result<PackLayer> {
        PackLayer::open(path, file, map, dir.rules(), n, verify_payload)
    }

    /// Decoded into memory, always checked against the payload checksum; a pack over floors
    /// with the smaller layers' values, each opened the same way (bottom up, each once).
    fn unpack(dir: &DatabaseDir, n: u32, path: &Path, file: File, map: Mmap, verify_payload: bool) -> Result<Layer<ValuesKind>> {
        let pack = PackLayer::open(path, file, map, dir.rules(), n, verify_payload)?;
        let mut bytes = native_bytes(pack.header(), pack.header().entries);
        if pack.over_floors() {
            let lower = layers_below(dir, n, verify_payload)?;
            pack.decode_resolved(&mut bytes[PAYLOAD_OFFSET as usize..], &|child| value_in(&lower, child))?;
        } else {
            pack.decode_into(&mut bytes[PAYLOAD_OFFSET as usize..])?;
        }
        Layer::decoded(path, pack.into_file(), bytes, dir, n)
    }
}

/// The layers a capture from layer `n` reaches, `0..=n-2` (layer `n - 1` is never reached:
/// [`MIN_CAPTURE`](crate::rules::MIN_CAPTURE); `None` in its place), opened as
/// [`DatabaseDir::open_layer`] opens them, bottom up, each pack over floors resolved with the
/// ones below it.
///
/// Cost: each layer decoded or mapped once; memory: the packed ones decoded.
fn layers_below(dir: &DatabaseDir, n: u32, verify_payload: bool) -> Result<Vec<Option<Layer<ValuesKind>>>> {
    let mut lower: Vec<Option<Layer<ValuesKind>>> = Vec::with_capacity(n as usize);
    let needed = crate::rules::layers_needed(n);
    for m in 0..n {
        lower.push(if needed.contains(&m) { Some(open_with_lower(dir, m, verify_payload, &lower)?) } else { None });
    }
    Ok(lower)
}

/// Layer `m`'s values opened as [`DatabaseDir::open_layer`] opens them, a pack over floors
/// resolved with `lower`, the layers `0..m` already open.
fn open_with_lower(dir: &DatabaseDir, m: u32, verify_payload: bool, lower: &[Option<Layer<ValuesKind>>]) -> Result<Layer<ValuesKind>> {
    if dir.format() == crate::storage::Format::Native && dir.holds::<ValuesKind>(m) {
        let path = dir.found_path::<ValuesKind>(m);
        let (file, map) = super::mapping::map_file(&path, || dir.missing::<ValuesKind>(m))?;
        if crate::pack::is_pack(&map) {
            let pack = PackLayer::open(&path, file, map, dir.rules(), m, verify_payload)?;
            let mut bytes = native_bytes(pack.header(), pack.header().entries);
            pack.decode_resolved(&mut bytes[PAYLOAD_OFFSET as usize..], &|child| value_in(lower, child))?;
            return Layer::decoded(&path, pack.into_file(), bytes, dir, m);
        }
    }
    dir.open_layer::<ValuesKind>(m, verify_payload)
}

/// The value of `board` (a capture's child) in `lower`, the layers below it.
fn value_in(lower: &[Option<Layer<ValuesKind>>], board: &crate::rules::Board) -> Result<i8> {
    let m = crate::rules::stones(board);
    let layer =
        lower.get(m as usize).and_then(Option::as_ref).ok_or_else(|| Error::Internal(format!("a capture's child in layer {m}, not below its parent's")))?;
    ValuesKind::entry(layer, crate::index::rank_unchecked(board))
}

/// The bytes of a native file of `header` and `payload_len` payload bytes (zero) rebuilt in
/// memory: the header, then the payload at [`PAYLOAD_OFFSET`].
fn native_bytes(header: &Header, payload_len: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; (PAYLOAD_OFFSET + payload_len) as usize];
    bytes[..crate::format::HEADER_LEN].copy_from_slice(&header.encode());
    bytes
}

impl PackedTable for PackLayer {
    type Entry = i8;
    /// Cost: part of a block's decoding.
    ///
    /// A pack over floors refuses ([`Error::Usage`]): what it stores is not always the value
    /// (a [`Database`](crate::probe::Database) reads it with the smaller layers).
    fn get(&self, i: u64) -> Result<i8> {
        if self.over_floors() {
            return Err(over_floors(self.path()));
        }
        in_range(PackLayer::path(self), PackLayer::stones(self), i, PackLayer::get(self, i)?)
    }
    fn stones(&self) -> u32 {
        PackLayer::stones(self)
    }
    fn path(&self) -> &Path {
        PackLayer::path(self)
    }
    fn header(&self) -> &Header {
        PackLayer::header(self)
    }
    fn block_values(&self) -> u32 {
        PackLayer::block_values(self)
    }
    fn check_unchanged(&self) -> Result<()> {
        PackLayer::check_unchanged(self)
    }
    fn replaced(&self) -> bool {
        PackLayer::replaced(self)
    }
}

// ---------------------------------------------------------------------------------------------
// Forced-capture bounds.

/// A layer's forced-capture bounds as a [`Kind`]: `bounds-NN.owdb` (`oware build --bounds`;
/// [`crate::bounds`]). Never packed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BoundsKind;

impl private::Sealed for BoundsKind {}

impl Kind for BoundsKind {
    const CONTENT: FileContent = FileContent::Bounds;
    const CHAINED: bool = true;
    const PACKED: bool = false;
    type Entry = Bounds;
    type Layout = Codec;
    type Packed = NoPack<Bounds>;

    /// The size must be exactly the header's.
    fn layout(path: &Path, n: u32, header: Option<&Header>, len: u64, _read: &dyn Fn(&mut [u8], u64) -> Result<()>) -> Result<Codec> {
        let want = PAYLOAD_OFFSET + crate::bounds::payload_len(header.map_or(n, |h| h.stones));
        if len != want {
            return Err(Error::corrupt(path, Damage::Size { expected: want, found: len }));
        }
        Ok(Codec::new(n))
    }

    /// One or two byte reads and a table read; [`Error::IndexOutOfRange`] past the layer's end,
    /// [`Damage::BadBoundsCode`] for an entry that holds no valid code.
    fn entry(layer: &Layer<BoundsKind>, i: u64) -> Result<Bounds> {
        check_index(layer.stones(), i)?;
        let (codec, payload) = (layer.codec(), layer.bytes());
        codec.get(payload, i).ok_or_else(|| Error::corrupt(layer.path(), Damage::BadBoundsCode { index: i, code: codec.raw(payload, i) }))
    }

    /// One `pread` of the (up to) 4 bytes that hold the entry's code.
    fn read_entry(file: &FileLayer<BoundsKind>, i: u64) -> Result<Bounds> {
        check_index(file.stones(), i)?;
        let codec = file.layout();
        let at = codec.byte_of(i) as u64;
        let mut buf = [0u8; 4];
        let k = crate::bounds::payload_len(file.stones()).saturating_sub(at).min(4) as usize;
        file.read(&mut buf[..k], PAYLOAD_OFFSET + at)?;
        let code = codec.raw_from(&buf[..k], i);
        codec.decode(code).ok_or_else(|| Error::corrupt(file.path(), Damage::BadBoundsCode { index: i, code }))
    }

    fn open_packed(_: &DatabaseDir, _: u32, path: &Path, _: File, _: Mmap, _: bool, _: ReadMode) -> Result<NoPack<Bounds>> {
        Err(Error::corrupt(path, Damage::WrongContent { found: "a pack", expected: "forced-capture bounds" }))
    }

    fn unpack(_: &DatabaseDir, _: u32, path: &Path, _: File, _: Mmap, _: bool) -> Result<Layer<BoundsKind>> {
        Err(Error::corrupt(path, Damage::WrongContent { found: "a pack", expected: "forced-capture bounds" }))
    }
}

/// No pack, for a kind whose files are never packed (bounds): uninhabited, whatever the entry
/// `E`.
pub enum NoPack<E> {
    #[doc(hidden)]
    Never(std::convert::Infallible, std::marker::PhantomData<fn() -> E>),
}

impl<E> std::fmt::Debug for NoPack<E> {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.absurd()
    }
}

impl<E> NoPack<E> {
    /// Anything: no value of the type exists.
    fn absurd<T>(&self) -> T {
        match self {
            NoPack::Never(never, _) => match *never {},
        }
    }
}

impl<E> PackedTable for NoPack<E> {
    type Entry = E;
    fn get(&self, _: u64) -> Result<E> {
        self.absurd()
    }
    fn stones(&self) -> u32 {
        self.absurd()
    }
    fn path(&self) -> &Path {
        self.absurd()
    }
    fn header(&self) -> &Header {
        self.absurd()
    }
    fn block_values(&self) -> u32 {
        self.absurd()
    }
    fn check_unchanged(&self) -> Result<()> {
        self.absurd()
    }
    fn replaced(&self) -> bool {
        self.absurd()
    }
}

// ---------------------------------------------------------------------------------------------
// Depths to capture.

/// A layer's depths to capture as a [`Kind`]: `dtc-NN.owdb` (`oware build --dtc`;
/// `docs/dtc.md`), or its pack `dtc-NN.owpk`, whose contexts read the layer's values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DtcKind;

impl private::Sealed for DtcKind {}

impl Kind for DtcKind {
    const CONTENT: FileContent = FileContent::Dtc;
    const CHAINED: bool = false;
    const PACKED: bool = true;
    type Entry = Option<u16>;
    /// The count of escaped depths (in the table after the bytes).
    type Layout = u64;
    type Packed = PackedDtc;

    /// The size must hold at least the bytes and the count, and agree with the count of escaped
    /// depths in the payload's last 8 bytes (as [`crate::dtc::DtcPayload::new`] checks).
    fn layout(path: &Path, n: u32, header: Option<&Header>, len: u64, read: &dyn Fn(&mut [u8], u64) -> Result<()>) -> Result<u64> {
        let least = PAYLOAD_OFFSET + crate::dtc::payload_len(header.map_or(n, |h| h.stones), 0);
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

    /// One byte read and, for a depth of 254 or more, a binary search of the escaped depths;
    /// [`Error::IndexOutOfRange`] past the layer's end, [`Damage::BadDtc`] for an escaped depth
    /// without its record.
    fn entry(layer: &Layer<DtcKind>, i: u64) -> Result<Option<u16>> {
        check_index(layer.stones(), i)?;
        layer.payload().get(i).map_err(|e| Error::corrupt(layer.path(), Damage::BadDtc { what: e.to_string() }))
    }

    /// One `pread` of the position's byte; for an escaped depth, a binary search of the records.
    fn read_entry(file: &FileLayer<DtcKind>, i: u64) -> Result<Option<u16>> {
        check_index(file.stones(), i)?;
        let mut b = [0u8; 1];
        file.read(&mut b, PAYLOAD_OFFSET + i)?;
        match b[0] {
            NONE => Ok(None),
            ESCAPE => {
                let records = PAYLOAD_OFFSET + layer_size(file.stones());
                let (mut lo, mut hi) = (0, *file.layout());
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
                Err(Error::corrupt(file.path(), Damage::BadDtc { what }))
            }
            d => Ok(Some(u16::from(d))),
        }
    }

    /// The pack, and the layer's values opened for probing as `mode` says: a pack whose
    /// contexts read stored values (codec 5) is read with the values' pack over floors, one of
    /// codec 3 with anything else.
    fn open_packed(dir: &DatabaseDir, n: u32, path: &Path, file: File, map: Mmap, verify_payload: bool, mode: ReadMode) -> Result<PackedDtc> {
        let pack = DtcPack::open(path, file, map, dir.rules(), n, verify_payload)?;
        let values = dir.open_table::<ValuesKind>(n, verify_payload, if pack.reads_stored() { ReadMode::Map } else { mode })?;
        let stored = matches!(&values, Table::Pack(p) if p.over_floors());
        if stored != pack.reads_stored() {
            return Err(dtc_values_disagree(path, values.path(), pack.reads_stored()));
        }
        Ok(PackedDtc { pack, values })
    }

    /// Decoded into memory with the layer's values (for codec 5, what their pack over floors
    /// stores), always checked against the payload checksum.
    fn unpack(dir: &DatabaseDir, n: u32, path: &Path, file: File, map: Mmap, verify_payload: bool) -> Result<Layer<DtcKind>> {
        let pack = DtcPack::open(path, file, map, dir.rules(), n, verify_payload)?;
        let payload = if pack.reads_stored() {
            let values = dir.open_table::<ValuesKind>(n, verify_payload, ReadMode::Map)?;
            let Table::Pack(p) = &values else { return Err(dtc_values_disagree(path, values.path(), true)) };
            if !p.over_floors() {
                return Err(dtc_values_disagree(path, values.path(), true));
            }
            let mut stored = vec![0u8; layer_size(n) as usize];
            p.decode_stored(&mut stored)?;
            // The values, and the depths they decide with their floors.
            let lower = layers_below(dir, n, verify_payload)?;
            let mut resolved = native_bytes(p.header(), p.header().entries);
            p.decode_resolved(&mut resolved[PAYLOAD_OFFSET as usize..], &|child| value_in(&lower, child))?;
            let values = &resolved[PAYLOAD_OFFSET as usize..];
            let rules = dir.rules();
            pack.decode_payload_with(&stored, &|j, b| {
                let board = crate::index::unrank_unchecked(n, j as u64);
                let v = values[j] as i8;
                Ok(crate::pack::decided_depth(rules, &board, v, |c| value_in(&lower, c))?.map_or(b, crate::dtc::byte_of))
            })?
        } else {
            let values = dir.open_layer::<ValuesKind>(n, verify_payload)?;
            pack.decode_payload(values.bytes())?
        };
        let mut bytes = native_bytes(pack.header(), 0);
        bytes.extend_from_slice(&payload);
        Layer::decoded(path, pack.into_file(), bytes, dir, n)
    }
}

/// The error of a pack over floors read as if it stored values.
fn over_floors(path: &Path) -> Error {
    Error::Usage(format!(
        "{}: a pack over floors stores values that only the smaller layers complete: read it through a database (oware::probe::Database)",
        path.display()
    ))
}

/// The error of a depths pack beside values it was not packed with: one whose contexts read
/// stored values (`stored`) beside values that are no pack over floors, or the reverse.
fn dtc_values_disagree(dtc: &Path, values: &Path, stored: bool) -> Error {
    let what = if stored {
        format!("it was packed beside a values pack over floors, and {} is not one: pack the layer again (oware pack)", values.display())
    } else {
        format!("it was packed beside the layer's values, and {} is a pack over floors: pack the layer again (oware pack)", values.display())
    };
    Error::corrupt(dtc, Damage::Pack { what })
}

/// A layer's depths to capture packed (`dtc-NN.owpk`), with the layer's values its contexts read.
#[derive(Debug)]
pub struct PackedDtc {
    pack: DtcPack,
    values: Table<ValuesKind>,
}

impl PackedDtc {
    /// Whether the depths are packed over floors (codec 5, beside a values pack over floors).
    pub(crate) fn over_floors(&self) -> bool {
        self.pack.reads_stored()
    }

    /// What the pack stores at position `i`: its depth, except in a pack over floors where the
    /// value and the floor decide it ([`crate::pack::decided_depth`]).
    ///
    /// # Errors
    /// As [`PackedTable::get`].
    pub(crate) fn stored(&self, i: u64) -> Result<Option<u16>> {
        self.pack.depth(i, |start, out| self.values.read_into(start, out))
    }
}

impl PackedTable for PackedDtc {
    type Entry = Option<u16>;
    /// Cost: the values of up to a block and on average half a block's decoding (about 20 µs
    /// with blocks of 512 depths, docs/performance.md).
    ///
    /// A pack of codec 5 refuses ([`Error::Usage`]): where the value and the floor decide the
    /// depth it stores anything (a [`Database`](crate::probe::Database) reads it).
    fn get(&self, i: u64) -> Result<Option<u16>> {
        if self.pack.reads_stored() {
            return Err(over_floors(self.pack.path()));
        }
        self.stored(i)
    }
    fn stones(&self) -> u32 {
        self.pack.stones()
    }
    fn path(&self) -> &Path {
        self.pack.path()
    }
    fn header(&self) -> &Header {
        self.pack.header()
    }
    fn block_values(&self) -> u32 {
        self.pack.block_values()
    }
    fn check_unchanged(&self) -> Result<()> {
        self.pack.check_unchanged()?;
        self.values.check_unchanged()
    }
    fn replaced(&self) -> bool {
        self.pack.replaced() || self.values.replaced()
    }
}

impl Layer<BoundsKind> {
    /// The codec of the layer (for decoding the payload in bulk).
    pub fn codec(&self) -> &crate::bounds::Codec {
        self.layout()
    }
}

impl Layer<DtcKind> {
    /// The payload, split into its parts.
    pub(crate) fn payload(&self) -> DtcPayload<'_> {
        DtcPayload::new(self.stones(), self.bytes()).expect("checked when opened")
    }
}
