//! The transposition table: shared by every search thread, lock-free.
//!
//! Each slot is two atomic words, `key ^ data` and `data` (the "xor trick"): a slot torn by two
//! threads writing at once fails the key check and reads as empty, so no lock is needed and no
//! torn entry is ever used.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};

/// What a stored score says about the position's score.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// The score is the position's score (at the stored depth, or exactly when proven).
    Exact = 0,
    /// The position's score is at least the stored score.
    Lower = 1,
    /// The position's score is at most the stored score.
    Upper = 2,
}

/// One entry, unpacked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    /// Score in centi-stones, the mover's view of the stones still to be taken.
    pub score: i32,
    /// Depth searched below the position (meaningless when `proven`).
    pub depth: i32,
    pub bound: Bound,
    /// The bound holds for the true value: no heuristic leaf and no repetition below.
    pub proven: bool,
    /// Best (or refuting) pit, 0..5.
    pub best: Option<u8>,
}

/// Bytes per slot.
pub(crate) const SLOT_BYTES: usize = 16;

pub(crate) struct Table {
    /// The slots' memory: zeroed anonymous pages, huge where the system allows (a probe is a
    /// random access, and 4 KB pages add a page walk to most of them). Only `slots` reaches it.
    _memory: memmap2::MmapMut,
    /// `_memory` as slots: valid as long as it lives, never moved (a mapping does not move).
    slots: *const [AtomicU64; 2],
    mask: usize,
    generation: AtomicU8,
}

// SAFETY: the slots are atomics, shared by reference only; the mapping is owned by the table.
unsafe impl Send for Table {}
// SAFETY: as for Send: every access to the slots is an atomic operation.
unsafe impl Sync for Table {}

fn pack(e: &Entry, generation: u8) -> u64 {
    let score = (e.score as i16) as u16 as u64;
    let depth = e.depth.clamp(0, 255) as u64;
    let bound = e.bound as u64;
    let best = e.best.map_or(7, u64::from);
    score | depth << 16 | bound << 24 | u64::from(e.proven) << 26 | best << 27 | u64::from(generation) << 32
}

fn unpack(d: u64) -> (Entry, u8) {
    let bound = match (d >> 24) & 3 {
        0 => Bound::Exact,
        1 => Bound::Lower,
        _ => Bound::Upper,
    };
    let best = ((d >> 27) & 7) as u8;
    let e = Entry { score: i32::from(d as u16 as i16), depth: ((d >> 16) & 0xFF) as i32, bound, proven: (d >> 26) & 1 == 1, best: (best < 6).then_some(best) };
    (e, (d >> 32) as u8)
}

impl Table {
    /// A table of about `megabytes` MiB (rounded down to a power of two slots, at least 1024).
    pub(crate) fn new(megabytes: usize) -> Table {
        Table::new_unless(megabytes, &|| false)
    }

    /// [`new`](Self::new), but the pages are faulted in only until `stop` says so (asked every
    /// 16 MiB): the rest fault in as the search first writes them. A table of gigabytes takes
    /// seconds to fault in; a `stop` meanwhile must not wait for it.
    pub(crate) fn new_unless(megabytes: usize, stop: &dyn Fn() -> bool) -> Table {
        let want = (megabytes.max(1) << 20) / SLOT_BYTES;
        // The largest power of two not above `want`, at least 1024.
        let slots = (1usize << (usize::BITS - 1 - want.max(1024).leading_zeros())).max(1024);
        let mut memory = crate::sys::huge_zeroed(slots * SLOT_BYTES).unwrap_or_else(|e| panic!("no memory for a {megabytes} MiB table: {e}"));
        // One write a page faults the table in now, not during the first search (the kernel
        // zeroes each page at its first write: 5 % of a 2.5 s search's time otherwise).
        const CHUNK: usize = 16 << 20;
        for chunk in (0..memory.len()).step_by(CHUNK) {
            if stop() {
                break;
            }
            for off in (chunk..memory.len().min(chunk + CHUNK)).step_by(4096) {
                // SAFETY: `off` is inside the mapping; a volatile write is not elided.
                unsafe { std::ptr::write_volatile(memory.as_mut_ptr().add(off), 0) };
            }
        }
        // All-zero bytes are valid atomics (empty slots); the mapping is page-aligned.
        let ptr = memory.as_mut_ptr() as *const [AtomicU64; 2];
        Table { _memory: memory, slots: ptr, mask: slots - 1, generation: AtomicU8::new(0) }
    }

    #[inline(always)]
    fn slots(&self) -> &[[AtomicU64; 2]] {
        // SAFETY: `slots` points to `mask + 1` zero-initialised slots in `_memory`, which lives
        // as long as `self`; atomics allow shared access from every thread.
        unsafe { std::slice::from_raw_parts(self.slots, self.mask + 1) }
    }

    /// Starts loading the slot of `key` (a probe of it soon follows).
    #[inline(always)]
    pub(crate) fn prefetch(&self, key: u64) {
        crate::sys::prefetch(&self.slots()[key as usize & self.mask]);
    }

    /// Size in bytes.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        (self.mask + 1) * SLOT_BYTES
    }

    /// Forgets everything (a new game).
    pub(crate) fn clear(&self) {
        for s in self.slots().iter() {
            s[0].store(0, Relaxed);
            s[1].store(0, Relaxed);
        }
    }

    /// A new search begins: older entries become the first to be replaced.
    pub(crate) fn new_search(&self) {
        self.generation.fetch_add(1, Relaxed);
    }

    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<Entry> {
        let s = &self.slots()[key as usize & self.mask];
        let data = s[1].load(Relaxed);
        let check = s[0].load(Relaxed);
        if data == 0 || check ^ data != key {
            return None;
        }
        Some(unpack(data).0)
    }

    /// Stores `e` unless the slot holds something worth more: a proven entry of the same
    /// position is kept against an unproven one, and a deeper entry of the same position from
    /// the current search against a shallower one. An entry of another position from the current
    /// search is replaced only by a proven one or one searched at least as deep (depth-preferred):
    /// replaced always, the many shallow entries near the leaves evicted the deep ones that order
    /// the moves near the root (from the start to depth 19, 93 M nodes against 22 M).
    #[inline]
    pub(crate) fn put(&self, key: u64, e: Entry) {
        let g = self.generation.load(Relaxed);
        let s = &self.slots()[key as usize & self.mask];
        let old = s[1].load(Relaxed);
        if old != 0 {
            let (o, og) = unpack(old);
            if s[0].load(Relaxed) ^ old == key {
                if o.proven && !e.proven {
                    return;
                }
                if !e.proven && og == g && o.depth > e.depth && e.bound != Bound::Exact {
                    return;
                }
            } else if og == g && !e.proven && o.depth > e.depth {
                return;
            }
        }
        let data = pack(&e, g);
        s[0].store(key ^ data, Relaxed);
        s[1].store(data, Relaxed);
    }

    /// Permille of a sample of slots written by the current search (UCI `hashfull`).
    pub(crate) fn hashfull(&self) -> u32 {
        let g = self.generation.load(Relaxed);
        let n = (self.mask + 1).min(1000);
        let used = self.slots()[..n].iter().filter(|s| {
            let d = s[1].load(Relaxed);
            d != 0 && unpack(d).1 == g
        });
        (used.count() * 1000 / n) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_torn_slots_read_as_empty() {
        let t = Table::new(1);
        assert!(t.bytes() <= 1 << 20 && t.bytes() >= 1 << 19);
        let e = Entry { score: -4800, depth: 17, bound: Bound::Upper, proven: true, best: Some(5) };
        t.put(0xDEAD_BEEF_0000_0001, e);
        let g = t.get(0xDEAD_BEEF_0000_0001).unwrap();
        assert_eq!((g.score, g.depth, g.bound, g.proven, g.best), (-4800, 17, Bound::Upper, true, Some(5)));
        assert!(t.get(0xDEAD_BEEF_0000_0002).is_none());
        // A proven entry is not replaced by an unproven one of the same position.
        t.put(0xDEAD_BEEF_0000_0001, Entry { score: 0, depth: 40, bound: Bound::Exact, proven: false, best: None });
        assert!(t.get(0xDEAD_BEEF_0000_0001).unwrap().proven);
        // Tear the slot: the key check fails.
        let s = &t.slots()[1];
        s[1].store(s[1].load(Relaxed) ^ 1, Relaxed);
        assert!(t.get(0xDEAD_BEEF_0000_0001).is_none());
        t.clear();
        assert!(t.get(0xDEAD_BEEF_0000_0001).is_none());
    }

    #[test]
    fn a_deeper_entry_of_another_position_is_kept_within_a_search() {
        let t = Table::new(1);
        let slots = (t.mask + 1) as u64;
        // Two keys of the same slot.
        let (a, b) = (0x1234_0000_0000_0007u64, 0x1234_0000_0000_0007u64 + slots * 5);
        let e = |depth: i32| Entry { score: 100, depth, bound: Bound::Exact, proven: false, best: Some(1) };
        t.put(a, e(9));
        t.put(b, e(3));
        assert!(t.get(b).is_none(), "a shallower entry replaced a deeper one of this search");
        assert_eq!(t.get(a).unwrap().depth, 9);
        t.put(b, e(9));
        assert_eq!(t.get(b).unwrap().depth, 9, "an entry as deep replaces");
        // A proven entry replaces whatever the depth.
        t.put(a, Entry { proven: true, ..e(1) });
        assert!(t.get(a).unwrap().proven);
        // In the next search, anything replaces.
        t.new_search();
        t.put(b, e(1));
        assert_eq!(t.get(b).unwrap().depth, 1);
    }
}
