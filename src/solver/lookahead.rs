//! Seeding by lists instead of scans ([`Lookahead`]): a threshold's scan gathers, for the
//! thresholds just below, the only open positions that can be their seeds, and those thresholds
//! visit their lists instead of every cell.

use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;

use rayon::prelude::*;

use super::state::{split, BestExit, Cell, State, CHUNK, RESOLVED};
use crate::error::Result;
use crate::progress::Progress;
use crate::solver::spill::Inboxes;

/// Seeding by lists instead of scans.
///
/// Every threshold below the first one this solve runs has seeds of one kind only: an open
/// position whose best exit is exactly `u` (it wins `u`), or exactly `-u` with no same-layer
/// move left (it loses `u`). A larger best exit would have made it a seed of an earlier
/// threshold; a position whose last same-layer move was refuted while its best exit was `-v`
/// or less for the threshold `v` then current lost at once; and a position's best exit does
/// not change while it is open. So a scan at threshold `t` can gather, for the thresholds
/// just below, the open positions whose best exit has that absolute value, and those
/// thresholds visit their lists instead of every cell. The lists hold at most `budget`
/// entries: an eighth of the positions, or fewer within a memory limit.
///
/// Where the cells stay resident (one part), the lists are kept in memory as four-byte
/// offsets: at most half a byte per position beside the cells' one (the copy of the lower
/// layers, where the exits pass made one, is gone by then). Out of core they would not fit the memory limit
/// beside a part's cells (tried: 471 MiB at its peak against a limit of 368 MiB at layer 24),
/// so there they go to files in the scratch directory ([`Inboxes`], one bucket per part and
/// threshold), written as the scan goes and read back in blocks.
pub(super) struct Lookahead {
    /// Open positions by the absolute value of their best exit, when the thresholds began.
    counts: [u64; 49],
    budget: u64,
    /// The last scan gathered the lists of thresholds `first..first + span`.
    first: i8,
    span: usize,
    /// Whether the threshold being seeded ([`Lookahead::begin`]) reads lists.
    listed: bool,
    lists: Lists,
}

/// Where a [`Lookahead`] keeps its lists.
pub(super) enum Lists {
    /// One resident part: its lists, by threshold (`first` first), each in the pieces a scan's
    /// chunks gathered.
    Memory(Vec<Vec<Vec<u32>>>),
    /// Parts out of core: the list of part `p` for threshold `first + i` in bucket
    /// `p * MAX_SPAN + i`, written chunk by chunk as the scan goes (so in ascending runs, not
    /// wholly ascending) and read in blocks of `block` entries.
    Disk { buckets: Inboxes, block: usize },
}

/// The most thresholds one scan gathers lists for (thresholds are at most 48).
pub(super) const MAX_SPAN: usize = 48;

impl Lookahead {
    /// Counts the open positions of `parts` of `cells` by their best exit (`exits`), giving
    /// back each part's pages after it (`release`, out of core). The lists hold at most `budget`
    /// entries (and an eighth of the positions). `None` when a part has more than
    /// `u32::MAX` cells (the lists hold offsets in a part as `u32`): every threshold then scans.
    ///
    /// Cost: one parallel pass over the cells.
    pub(super) fn new(cells: &[Cell], exits: &[BestExit], parts: &[Range<u64>], release: &dyn Fn(&Range<u64>), lists: Lists, budget: u64) -> Option<Lookahead> {
        if parts.iter().any(|p| p.end - p.start > u64::from(u32::MAX)) {
            return None;
        }
        let mut counts = [0u64; 49];
        for part in parts {
            let c = split(part.clone(), CHUNK)
                .par_iter()
                .map(|r| {
                    let mut c = [0u64; 49];
                    let (a, b) = (r.start as usize, r.end as usize);
                    for (cell, e) in cells[a..b].iter().zip(&exits[a..b]) {
                        let u = e.load(Relaxed).unsigned_abs() as usize;
                        if cell.load(Relaxed) & RESOLVED == 0 && u < c.len() {
                            c[u] += 1;
                        }
                    }
                    c
                })
                .reduce(
                    || [0u64; 49],
                    |mut a, b| {
                        a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                        a
                    },
                );
            counts.iter_mut().zip(c).for_each(|(x, y)| *x += y);
            release(part);
        }
        let len: u64 = parts.iter().map(|p| p.end - p.start).sum();
        Some(Lookahead { counts, budget: budget.min(len / 8), first: 0, span: 0, listed: false, lists })
    }

    /// Starts threshold `t`: it reads the lists an earlier scan gathered for it, or, when there
    /// are none, its scans gather the lists of as many thresholds below as the budget allows.
    pub(super) fn begin(&mut self, t: i8) {
        self.listed = t >= self.first && ((t - self.first) as usize) < self.span;
        if self.listed {
            return;
        }
        let mut lo = t;
        let mut total = 0u64;
        while lo > 1 && (t - lo) < MAX_SPAN as i8 && total + self.counts[(lo - 1) as usize] <= self.budget {
            lo -= 1;
            total += self.counts[lo as usize];
        }
        self.first = lo;
        self.span = (t - lo) as usize;
        if let Lists::Memory(l) = &mut self.lists {
            l.clear();
        }
    }

    /// Seeds threshold `t` (begun with [`Lookahead::begin`]) of `state`, part `part` (cells
    /// `0..len`): from its list, or by a scan that gathers the lists of the thresholds below.
    ///
    /// # Errors
    /// [`Error::Io`] when a list file cannot be written or read.
    pub(super) fn seed(&mut self, state: &State, part: usize, t: i8, len: u64, progress: &dyn Progress) -> Result<()> {
        let (first, span) = (self.first, self.span);
        match &mut self.lists {
            Lists::Memory(lists) if self.listed => {
                let list = std::mem::take(&mut lists[(t - first) as usize]);
                let blocks: Vec<&[u32]> = list.iter().map(Vec::as_slice).collect();
                state.seed_listed(t, &blocks, len, progress);
            }
            Lists::Memory(lists) => *lists = state.seed(t, 0..len, first..t, None, progress),
            Lists::Disk { buckets, block, .. } if self.listed => {
                let mut bucket = buckets.take(part * MAX_SPAN + (t - first) as usize)?;
                let total = bucket.len().max(1);
                let mut words = Vec::new();
                while !bucket.is_empty() {
                    bucket.next(*block, &mut words)?;
                    let blocks: Vec<&[u64]> = words.chunks(1 << 12).collect();
                    state.seed_listed(t, &blocks, len * words.len() as u64 / total, progress);
                }
                bucket.close()?;
            }
            Lists::Disk { buckets, .. } => {
                debug_assert!(span <= MAX_SPAN);
                let send = |gathered: Vec<Vec<u32>>| -> Result<()> {
                    for (i, list) in gathered.iter().enumerate().filter(|(_, l)| !l.is_empty()) {
                        let words: Vec<u64> = list.iter().map(|&k| u64::from(k)).collect();
                        buckets.send(part * MAX_SPAN + i, &words)?;
                    }
                    Ok(())
                };
                state.seed(t, 0..len, first..t, Some(&send), progress);
            }
        }
        Ok(())
    }
}
