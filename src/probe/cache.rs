//! A cache of the values resolved in packs over floors: a probe there costs a block's decoding
//! and a search of the floor (microseconds), where a search engine asks the same positions again
//! and again (every iteration of its deepening reaches the same leaves).

use std::sync::atomic::{AtomicU64, Ordering};

/// Entries of the cache (a power of two): 8 MiB.
const SLOTS: usize = 1 << 20;
/// The bit of a filled entry.
const FILLED: u64 = 1 << 63;

/// A direct-mapped cache of values by (layer, index), shared by threads without a lock: each
/// entry is one atomic word holding its key and its value, so a read sees a whole entry or
/// another one, never a mix.
pub(super) struct ValueCache {
    slots: Box<[AtomicU64]>,
}

impl ValueCache {
    /// An empty cache.
    ///
    /// Cost: 8 MiB, zeroed.
    pub(super) fn new() -> ValueCache {
        ValueCache { slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect() }
    }

    /// The key of position `index` of layer `n` (`n <= 48`, `index < 2^38`: layer 48 has
    /// about 2^37.8 positions) in bits 8..52 of an entry.
    #[inline]
    fn key(n: u32, index: u64) -> u64 {
        (u64::from(n) << 38 | index) << 8
    }

    #[inline]
    fn slot(key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize
    }

    /// The value cached for position `index` of layer `n`, if any.
    #[inline]
    pub(super) fn get(&self, n: u32, index: u64) -> Option<i8> {
        let key = Self::key(n, index);
        let e = self.slots[Self::slot(key)].load(Ordering::Relaxed);
        (e & !0xff == (key | FILLED)).then_some(e as u8 as i8)
    }

    /// Remembers `value` for position `index` of layer `n` (in place of whatever the entry held).
    #[inline]
    pub(super) fn put(&self, n: u32, index: u64, value: i8) {
        let key = Self::key(n, index);
        self.slots[Self::slot(key)].store(key | FILLED | u64::from(value as u8), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_it_was_given_and_tells_keys_apart() {
        let c = ValueCache::new();
        assert_eq!(c.get(20, 5), None);
        c.put(20, 5, -7);
        c.put(19, 5, 3);
        c.put(48, (1 << 38) - 1, 48);
        assert_eq!((c.get(20, 5), c.get(19, 5), c.get(48, (1 << 38) - 1)), (Some(-7), Some(3), Some(48)));
        assert_eq!((c.get(20, 6), c.get(21, 5)), (None, None));
        c.put(20, 5, 0);
        assert_eq!(c.get(20, 5), Some(0));
    }
}
