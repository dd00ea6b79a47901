//! The layer file format (see `docs/FORMAT.md`): a fixed little-endian header, then at a page-aligned
//! offset one signed byte per position in index order.
//!
//! The header names everything a reader needs to trust the payload: what game and ruleset it
//! belongs to, how positions are indexed, how values are encoded, and a checksum of the payload.
//! The header carries its own checksum, so a damaged header is told apart from a damaged payload.

use crate::error::{Damage, Error, FileContent, Result};
use crate::index::{layer_size, MAX_STONES};
use crate::rules::Ruleset;
use std::path::Path;

/// Magic bytes at the start of every layer file.
pub(crate) const MAGIC: [u8; 8] = *b"OWAREDB\x1a";
/// The format version this code writes and reads.
pub(crate) const FORMAT_VERSION: u32 = 1;
/// Bytes of the header that carry data; the rest up to [`PAYLOAD_OFFSET`] is zero.
pub const HEADER_LEN: usize = 128;
/// Where the payload starts: one page, so the payload can be memory-mapped page-aligned.
pub const PAYLOAD_OFFSET: u64 = 4096;
/// Index scheme 1: rank in ascending lexicographic order of `(b[11], ..., b[0])` among the boards
/// with an empty opponent pit (the order of the published 2002 files).
pub(crate) const INDEX_LEXICOGRAPHIC_2002: u32 = 1;
/// Value encoding 1: one signed byte per position, the exact value `-n..=n` for the mover.
pub(crate) const VALUE_EXACT_I8: u32 = FileContent::Values.encoding();
/// Value encoding 2: forced-capture bounds (`crate::bounds`), one code of `bounds::width(n)` bits
/// per position, bit-packed.
pub const BOUNDS_TRIANGULAR: u32 = FileContent::Bounds.encoding();
/// Value encoding 3: depth to capture (`crate::dtc`), one byte per position, then the depths of
/// 254 and more as sorted records, then their number.
pub(crate) const DTC_U8_ESCAPED: u32 = FileContent::Dtc.encoding();
/// The payload checksum algorithm, by name (XXH3, 64-bit, seed 0).
pub(crate) const CHECKSUM_ALGORITHM: &str = "xxh3-64";

/// The decoded header of a layer file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Ruleset the values were computed under.
    pub rules: Ruleset,
    /// Stones on the board: the layer number.
    pub stones: u32,
    /// Number of positions; always `layer_size(stones)`.
    pub entries: u64,
    /// What the payload holds: values (`VALUE_EXACT_I8`), bounds ([`BOUNDS_TRIANGULAR`]) or
    /// depths to capture (`DTC_U8_ESCAPED`).
    pub encoding: u32,
    /// XXH3-64 of the payload bytes.
    pub payload_checksum: u64,
}

/// Checksum of a payload (and of a header's first 120 bytes), with the algorithm named by
/// [`CHECKSUM_ALGORITHM`]. Crate-private: files are written with their checksums by
/// [`DatabaseDir::write_layer`](crate::storage::DatabaseDir::write_layer) and checked when
/// opened, and a copy's checksum comes from
/// [`Layer::copy_payload`](crate::storage::Layer::copy_payload).
///
/// Cost: one sequential pass, several GB/s.
pub(crate) fn checksum(payload: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(payload)
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn get_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}
fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}
fn put_str(b: &mut [u8], at: usize, len: usize, s: &str) {
    let bytes = s.as_bytes();
    b[at..at + bytes.len().min(len)].copy_from_slice(&bytes[..bytes.len().min(len)]);
}
/// The bytes of a text field up to its first NUL.
fn get_bytes(b: &[u8], at: usize, len: usize) -> &[u8] {
    let raw = &b[at..at + len];
    let end = raw.iter().position(|&c| c == 0).unwrap_or(len);
    &raw[..end]
}

// Field offsets (see docs/FORMAT.md).
const OFF_VERSION: usize = 8;
const OFF_HEADER_LEN: usize = 12;
const OFF_RULESET: usize = 16;
const OFF_STONES: usize = 20;
const OFF_INDEX: usize = 24;
const OFF_ENCODING: usize = 28;
const OFF_ENTRIES: usize = 32;
const OFF_PAYLOAD: usize = 40;
const OFF_ALGO: usize = 48;
const OFF_CHECKSUM: usize = 64;
const OFF_RULES_NAME: usize = 72;
const OFF_HEADER_CHECKSUM: usize = 120;

impl Header {
    /// A header for layer `stones` of `rules` with the given payload checksum.
    pub fn new(rules: Ruleset, stones: u32, payload_checksum: u64) -> Header {
        Header { rules, stones, entries: layer_size(stones), encoding: VALUE_EXACT_I8, payload_checksum }
    }

    /// A header for the forced-capture bounds of layer `stones` of `rules`.
    pub fn bounds(rules: Ruleset, stones: u32, payload_checksum: u64) -> Header {
        Header { rules, stones, entries: layer_size(stones), encoding: BOUNDS_TRIANGULAR, payload_checksum }
    }

    /// A header for the depths to capture of layer `stones` of `rules`.
    pub fn dtc(rules: Ruleset, stones: u32, payload_checksum: u64) -> Header {
        Header { rules, stones, entries: layer_size(stones), encoding: DTC_U8_ESCAPED, payload_checksum }
    }

    /// What the payload of encoding `encoding` holds, in words (for messages).
    pub fn kind(encoding: u32) -> &'static str {
        FileContent::of_encoding(encoding).map_or("an unknown payload", FileContent::payload)
    }

    /// Checks that the payload holds what the caller expects (`encoding`). `path` only names the
    /// file in errors.
    ///
    /// # Errors
    /// [`Error::Corrupt`] with [`Damage::WrongContent`] when it holds the other kind.
    pub fn expect(&self, encoding: u32, path: &Path) -> Result<()> {
        if self.encoding != encoding {
            return Err(Error::corrupt(path, Damage::WrongContent { found: Header::kind(self.encoding), expected: Header::kind(encoding) }));
        }
        Ok(())
    }

    /// The header as the [`HEADER_LEN`] bytes that start a layer file.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..8].copy_from_slice(&MAGIC);
        put_u32(&mut b, OFF_VERSION, FORMAT_VERSION);
        put_u32(&mut b, OFF_HEADER_LEN, HEADER_LEN as u32);
        put_u32(&mut b, OFF_RULESET, self.rules.id());
        put_u32(&mut b, OFF_STONES, self.stones);
        put_u32(&mut b, OFF_INDEX, INDEX_LEXICOGRAPHIC_2002);
        put_u32(&mut b, OFF_ENCODING, self.encoding);
        put_u64(&mut b, OFF_ENTRIES, self.entries);
        put_u64(&mut b, OFF_PAYLOAD, PAYLOAD_OFFSET);
        put_str(&mut b, OFF_ALGO, 16, CHECKSUM_ALGORITHM);
        put_u64(&mut b, OFF_CHECKSUM, self.payload_checksum);
        put_str(&mut b, OFF_RULES_NAME, 32, self.rules.name());
        let hc = checksum(&b[..OFF_HEADER_CHECKSUM]);
        put_u64(&mut b, OFF_HEADER_CHECKSUM, hc);
        b
    }

    /// Decodes and validates a header: every field must hold a value this version understands and
    /// the header checksum must match. `path` only names the file in errors.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming the first field found wrong.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<Header> {
        let bad = |damage: Damage| Error::corrupt(path, damage);
        let field = |field: &'static str, expected: u64, found: u64| bad(Damage::HeaderField { field, expected, found });
        if bytes.len() < HEADER_LEN {
            return Err(bad(Damage::ShortHeader { len: bytes.len() as u64 }));
        }
        if bytes[..8] != MAGIC {
            let mut found = [0u8; 8];
            found.copy_from_slice(&bytes[..8]);
            return Err(bad(Damage::BadMagic { found }));
        }
        let version = get_u32(bytes, OFF_VERSION);
        if version != FORMAT_VERSION {
            return Err(field("format version", FORMAT_VERSION.into(), version.into()));
        }
        let stored = get_u64(bytes, OFF_HEADER_CHECKSUM);
        let computed = checksum(&bytes[..OFF_HEADER_CHECKSUM]);
        // Check named fields before the header checksum, so a changed field is reported by name.
        let hl = get_u32(bytes, OFF_HEADER_LEN);
        if hl as usize != HEADER_LEN {
            return Err(field("header length", HEADER_LEN as u64, hl.into()));
        }
        let rid = get_u32(bytes, OFF_RULESET);
        let rules = Ruleset::from_id(rid).ok_or_else(|| bad(Damage::UnknownRuleset { id: rid }))?;
        let name = get_bytes(bytes, OFF_RULES_NAME, 32);
        if name != rules.name().as_bytes() {
            return Err(bad(Damage::RulesetName { id: rid, name: name.to_vec() }));
        }
        let stones = get_u32(bytes, OFF_STONES);
        if stones > MAX_STONES {
            return Err(field("stones", MAX_STONES.into(), stones.into()));
        }
        let index = get_u32(bytes, OFF_INDEX);
        if index != INDEX_LEXICOGRAPHIC_2002 {
            return Err(field("index scheme", INDEX_LEXICOGRAPHIC_2002.into(), index.into()));
        }
        let enc = get_u32(bytes, OFF_ENCODING);
        if FileContent::of_encoding(enc).is_none() {
            return Err(field("value encoding", VALUE_EXACT_I8.into(), enc.into()));
        }
        let entries = get_u64(bytes, OFF_ENTRIES);
        if entries != layer_size(stones) {
            return Err(bad(Damage::EntriesDisagree { entries, stones, layer_size: layer_size(stones) }));
        }
        let off = get_u64(bytes, OFF_PAYLOAD);
        if off != PAYLOAD_OFFSET {
            return Err(field("payload offset", PAYLOAD_OFFSET, off));
        }
        let algo = get_bytes(bytes, OFF_ALGO, 16);
        if algo != CHECKSUM_ALGORITHM.as_bytes() {
            return Err(bad(Damage::TextField { field: "checksum algorithm", found: algo.to_vec() }));
        }
        // Text fields end in NULs, the reserved bytes and the padding are zero (docs/FORMAT.md).
        let zero_ranges = [(OFF_ALGO + algo.len(), OFF_ALGO + 16), (OFF_RULES_NAME + name.len(), OFF_HEADER_CHECKSUM)];
        for (from, to) in zero_ranges {
            if let Some(i) = (from..to).find(|&i| bytes[i] != 0) {
                return Err(bad(Damage::NonZero { at: i as u64, byte: bytes[i] }));
            }
        }
        if stored != computed {
            return Err(bad(Damage::HeaderChecksum { stored, computed }));
        }
        let end = bytes.len().min(PAYLOAD_OFFSET as usize);
        if let Some(i) = (HEADER_LEN..end).find(|&i| bytes[i] != 0) {
            return Err(bad(Damage::NonZero { at: i as u64, byte: bytes[i] }));
        }
        Ok(Header { rules, stones, entries, encoding: enc, payload_checksum: get_u64(bytes, OFF_CHECKSUM) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_damage() {
        let h = Header::new(Ruleset::Awari, 12, 0xdead_beef);
        let mut page = vec![0u8; PAYLOAD_OFFSET as usize];
        page[..HEADER_LEN].copy_from_slice(&h.encode());
        let p = Path::new("x");
        assert_eq!(Header::decode(&page, p).unwrap(), h);
        for at in [0, OFF_VERSION, OFF_RULESET, OFF_STONES, OFF_ENTRIES, OFF_CHECKSUM, OFF_HEADER_CHECKSUM, 500] {
            let mut d = page.clone();
            d[at] ^= 0x04;
            assert!(Header::decode(&d, p).is_err(), "flip at {at} not caught");
        }
    }
}
