//! How a bucket file holds its messages: in blocks, each sorted and written as the differences
//! between neighbours in LEB128 varints.
//!
//! A message is a position's index with flags in its high bits (bit 63 for the thresholds'
//! messages, a value above the index for the depths'). Its *key* rotates it left by one bit,
//! moving bit 63 to bit 0, so that sorting the thresholds' keys sorts them by position; any
//! `u64` round-trips. A block is its count, then the first key,
//! then each key's difference from the one before, every number in 7-bit groups, least
//! significant first, the high bit set on every group but the last. Messages for one part fall
//! in a range of about twice its length in keys, so `c` messages of a part of `P` positions take
//! about `log2(2P / c) / 7` bytes each, rounded up: one or two where eight bytes were written
//! raw (layer 22 in 7 parts: 147 MB of buckets at their largest, 0.82 bytes per position). The
//! solver's result does not depend on the order of a threshold's messages, so the order within
//! a block is free; ascending, it also makes the reader's accesses to the part ascending.

use std::io::{self, BufRead, Write};

/// `m`'s sort key: `m` rotated left by one bit (bit 63 to bit 0).
#[inline]
fn key(m: u64) -> u64 {
    m.rotate_left(1)
}

/// The message of key `k` (the inverse of [`key`]).
#[inline]
fn message(k: u64) -> u64 {
    k.rotate_right(1)
}

/// Writes `x` as a LEB128 varint.
#[inline]
fn put(w: &mut impl Write, mut x: u64) -> io::Result<()> {
    let mut buf = [0u8; 10];
    let mut i = 0;
    while x >= 0x80 {
        buf[i] = (x as u8) | 0x80;
        x >>= 7;
        i += 1;
    }
    buf[i] = x as u8;
    w.write_all(&buf[..=i])
}

/// Reads a LEB128 varint.
///
/// # Errors
/// `UnexpectedEof` when the input ends inside it, `InvalidData` when it does not fit 64 bits.
#[inline]
fn get(r: &mut impl BufRead) -> io::Result<u64> {
    let mut x = 0u64;
    let mut shift = 0u32;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "a bucket file ends inside a number"));
        }
        let mut used = 0;
        for &b in buf {
            used += 1;
            if shift == 63 && b > 1 {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "a number of a bucket file does not fit 64 bits"));
            }
            x |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                r.consume(used);
                return Ok(x);
            }
            shift += 7;
        }
        r.consume(used);
    }
}

/// Writes `block` as one block; it is left sorted by key, holding the keys.
///
/// Cost: a sort of `block`, and one to ten bytes written a message (one or two for dense ones).
///
/// # Errors
/// The writer's.
pub(super) fn write_block(w: &mut impl Write, block: &mut [u64]) -> io::Result<()> {
    if block.is_empty() {
        return Ok(());
    }
    for m in block.iter_mut() {
        *m = key(*m);
    }
    block.sort_unstable();
    put(w, block.len() as u64)?;
    let mut previous = 0;
    for &k in block.iter() {
        put(w, k - previous)?;
        previous = k;
    }
    Ok(())
}

/// Reads the messages of the blocks [`write_block`] wrote, one after another.
pub(super) struct Reader<R> {
    input: R,
    /// Messages left in the current block.
    left: u64,
    /// The last key read.
    previous: u64,
}

impl<R: BufRead> Reader<R> {
    pub(super) fn new(input: R) -> Reader<R> {
        Reader { input, left: 0, previous: 0 }
    }

    /// The next message.
    ///
    /// # Errors
    /// The reader's; `UnexpectedEof` when the input ends, `InvalidData` for a block of no
    /// messages or a key past 64 bits (neither is ever written).
    pub(super) fn next(&mut self) -> io::Result<u64> {
        if self.left == 0 {
            self.left = get(&mut self.input)?;
            self.previous = 0;
            if self.left == 0 {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "a bucket file holds an empty block"));
            }
        }
        let k = self.previous.checked_add(get(&mut self.input)?);
        let k = k.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "a key of a bucket file does not fit 64 bits"))?;
        self.left -= 1;
        self.previous = k;
        Ok(message(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A few blocks of messages (flags, repeats, the extremes of the range) come back in the
    /// order of each block's keys, and dense blocks take one or two bytes a message.
    #[test]
    fn blocks_come_back_sorted_by_position_with_their_flags() {
        let flag = 1u64 << 63;
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut blocks: Vec<Vec<u64>> = vec![
            vec![5, 5 | flag, 5, 0, (1 << 62) - 1, ((1 << 62) - 1) | flag, flag, u64::MAX, 0x00ff_0000_0000_1234],
            vec![42],
            (0..100_000).map(|_| (next() % 1_000_000) | (next() & flag)).collect(),
        ];
        let mut file = Vec::new();
        let mut expected = Vec::new();
        for b in &mut blocks {
            let mut sorted: Vec<u64> = b.clone();
            sorted.sort_by_key(|&m| m.rotate_left(1));
            expected.extend(sorted);
            write_block(&mut file, b).unwrap();
        }
        let mut reader = Reader::new(&file[..]);
        let got: Vec<u64> = (0..expected.len()).map(|_| reader.next().unwrap()).collect();
        assert_eq!(got, expected);
        assert_eq!(reader.next().unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        // 100,000 messages over 2,000,000 keys: gaps of about 20, one byte each.
        assert!(file.len() < 110_000 + 200, "{} bytes", file.len());
    }

    /// A file cut anywhere, or holding numbers no writer makes, is an error, never a panic or a
    /// wrong message read as right.
    #[test]
    fn damaged_files_are_errors() {
        let mut file = Vec::new();
        write_block(&mut file, &mut [1u64 << 40, 3, 1 << 63]).unwrap();
        for cut in 0..file.len() {
            let mut reader = Reader::new(&file[..cut]);
            let read = (0..3).map(|_| reader.next()).collect::<io::Result<Vec<u64>>>();
            assert!(read.is_err(), "cut at {cut}");
        }
        let empty_block = [0u8];
        assert_eq!(Reader::new(&empty_block[..]).next().unwrap_err().kind(), io::ErrorKind::InvalidData);
        let too_long = [1u8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
        assert_eq!(Reader::new(&too_long[..]).next().unwrap_err().kind(), io::ErrorKind::InvalidData);
        let overflow = [2u8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01];
        let mut r = Reader::new(&overflow[..]);
        r.next().unwrap();
        assert_eq!(r.next().unwrap_err().kind(), io::ErrorKind::InvalidData);
    }
}
