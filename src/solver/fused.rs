//! Depths to capture recorded by the values' own propagation ([`FusedDepths`]).

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering::Relaxed};
use std::sync::Mutex;

use crate::error::{Error, MemoryLimit, Result};
use crate::index::layer_size;
use crate::sys::huge_zeroed;

/// Depths to capture recorded by the values' own propagation, in memory
/// ([`SolveOptions::depths`](super::SolveOptions::depths)): the level, within its threshold, at
/// which the level-synchronous propagation resolves each position.
///
/// That level is the depth to capture. Thresholds run from `n` down, so the positions of value
/// `t` and `-t` are exactly those threshold `t` resolves, and its levels follow the moves that
/// keep the value: a seed whose game is over has depth 0 (level 0), another seed (a win by a
/// capture or ending of value `t`, or a loss whose same-layer children were all won earlier, by
/// more, so that only its exits keep its value) depth 1; a win is resolved by the first child
/// lost by `t` (the least depth, levels coming in order), and a loss when its pending counter
/// reaches 0: the counter then still counts the children not won by `t + 1` or more, which for
/// a loss by `t` are exactly its value-keeping same-layer moves, so the last one is the
/// greatest depth. The build checks the result as it checks [`solve_dtc_share`](super::dtc::solve_dtc_share)'s (every depth
/// against its value, a spread of positions against their moves), and the tests compare the
/// two on every ruleset.
///
/// Memory: one byte per position (0: none yet; `d + 1` for a depth `d` of 253 or less; 255:
/// deeper, in a list).
pub(crate) struct FusedDepths {
    bytes: memmap2::MmapMut,
    deep: Mutex<Vec<(u64, u16)>>,
    complete: AtomicBool,
}

impl FusedDepths {
    /// Room for the depths of layer `n`'s positions.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the memory cannot be had.
    pub(crate) fn new(n: u32) -> Result<FusedDepths> {
        let len = layer_size(n).max(1) as usize;
        let bytes = huge_zeroed(len).map_err(|_| Error::OutOfMemory { layer: n, needed: len as u64, available: 0, limit: MemoryLimit::Refused })?;
        Ok(FusedDepths { bytes, deep: Mutex::new(Vec::new()), complete: AtomicBool::new(false) })
    }

    fn cells(&self) -> &[AtomicU8] {
        // SAFETY: a private, writable, zero-initialised map alive as long as `self`; every
        // access goes through this atomic view.
        unsafe { std::slice::from_raw_parts(self.bytes.as_ptr().cast::<AtomicU8>(), self.bytes.len()) }
    }

    /// Records `depth` for position `i` (resolved once, so set once).
    #[inline]
    pub(super) fn set(&self, i: u64, depth: u16) {
        let b = if depth <= 253 {
            depth as u8 + 1
        } else {
            self.deep.lock().unwrap_or_else(|p| p.into_inner()).push((i, depth));
            255
        };
        self.cells()[i as usize].store(b, Relaxed);
    }

    /// Marks the depths complete: the solve that recorded them ran every threshold level by
    /// level from the start (not resumed from a checkpoint).
    pub(super) fn finish(&self) {
        self.deep.lock().unwrap_or_else(|p| p.into_inner()).sort_unstable();
        self.complete.store(true, Relaxed);
    }

    /// Whether every threshold was recorded: only then are the depths those of the layer.
    pub(crate) fn complete(&self) -> bool {
        self.complete.load(Relaxed)
    }

    /// The depth recorded for position `i` (`None`: none, as for every position of value 0).
    ///
    /// # Panics
    /// When `i` is not a position of the layer.
    #[inline]
    pub(crate) fn depth(&self, i: u64) -> Option<u16> {
        match self.cells()[i as usize].load(Relaxed) {
            0 => None,
            255 => {
                let deep = self.deep.lock().unwrap_or_else(|p| p.into_inner());
                deep.binary_search_by_key(&i, |&(j, _)| j).ok().map(|k| deep[k].1)
            }
            b => Some(u16::from(b - 1)),
        }
    }
}
