//! The exits pass of a layer: for every position, the best value among its moves that leave the
//! layer (a capture into a smaller layer, or the end of the game) and the number of its moves
//! that stay in it. One pass, three ways of reading the lower layers ([`ExitsPass`]).

use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;

use rayon::prelude::*;

use super::cluster::{ask_owners, Ownership};
use super::forward::{forward, Forward};
use super::options::{OutOfCore, Share};
use super::pass::{exits, Pass};
use super::state::{open, prefetch, split, BestExit, Cell, Failure, BATCH, CHUNK, KEY_SHIFT};
use super::work::EXIT_UNITS;
use crate::error::Result;
use crate::index::{layer_size, rank_unchecked, LayerWalker};
use crate::progress::Progress;
use crate::rules::{Board, Ruleset};

/// How the exits pass reads the lower layers.
pub(super) enum ExitsPass<'a> {
    /// In memory, one process: the lower layers read at random, with prefetching, in segments
    /// between which a checkpoint may be taken. The layers a capture can reach are first copied
    /// into anonymous memory in 2 MB pages ([`Resident`]); `release_lower` then gives back the
    /// copied pages of the file mappings.
    Direct { release_lower: Option<&'a (dyn Fn(u32, Range<u64>) + Sync)> },
    /// Out of core, one process: part by part, the capture lookups collected, grouped by
    /// window of the lower layers and served window by window, each window's pages given back.
    Swept(&'a OutOfCore<'a>),
    /// One process with the cells in memory, the lower layers streamed in index order and none
    /// resident ([`super::streamed`]): the captures by the rows they sow, then the rest in index
    /// order. `release_lower` gives back the pages read, `release_out` those of the output
    /// behind the pass in index order.
    Streamed { release_lower: Option<&'a (dyn Fn(u32, Range<u64>) + Sync)>, release_out: Option<&'a (dyn Fn(Range<u64>) + Sync)> },
    /// A rank of a distributed solve: the lookups sent to the ranks owning the children, served
    /// there in sorted order and answered (`release_lower` out of core).
    Exchanged { share: &'a Share<'a>, release_lower: Option<&'a (dyn Fn(u32, Range<u64>) + Sync)> },
}

impl ExitsPass<'_> {
    /// Fills the cells of `p.own` from position `from` (relative to `p.own.start`; a checkpoint
    /// resumed inside the pass) on. `done(k)` is called when every position below `k` is
    /// complete, where the pass can stop for a checkpoint ([`ExitsPass::Exchanged`] has no such
    /// points: a rank cannot stop alone inside an exchange). A stop (cancellation or a failure)
    /// returns early with `Ok`: the caller's agreement reports it.
    ///
    /// # Errors
    /// What `done` returns; [`crate::Error::Cluster`] when the transport fails.
    pub(super) fn run(&self, p: &Pass, from: u64, done: &mut dyn FnMut(u64) -> Result<()>) -> Result<()> {
        let len = p.own.end - p.own.start;
        match self {
            ExitsPass::Direct { release_lower } => {
                debug_assert_eq!(p.own.start, 0, "one process solves the whole layer");
                let resident = Resident::new(p.n, p.lower, *release_lower);
                let lower = resident.as_ref().map_or_else(|| p.lower.to_vec(), Resident::layers);
                let segment = (len / 16).max(CHUNK).div_ceil(CHUNK) * CHUNK;
                for seg in split(from..len, segment) {
                    exits_in_memory(p.rules, p.n, &lower, p.cells, p.exits, seg.clone(), p.progress);
                    if p.stopped() {
                        return Ok(());
                    }
                    if seg.end < len {
                        done(seg.end)?;
                    }
                }
            }
            ExitsPass::Swept(o) => {
                debug_assert_eq!(p.own.start, 0, "one process solves the whole layer");
                let places = Places::new(p.n);
                for (pi, part) in p.parts.iter().enumerate() {
                    if part.end <= from {
                        continue;
                    }
                    p.progress.phase(&format!("exits {}/{}", pi + 1, p.parts.len()));
                    let start = part.start.max(from);
                    let mut on_flush = |k: u64| if k < len { done(k) } else { Ok(()) };
                    exits_out_of_core(p.rules, p.n, p.lower, p.cells, p.exits, start..part.end, o, &places, p.progress, p.failure, &mut on_flush)?;
                    (p.release_part)(part);
                    if p.stopped() {
                        return Ok(());
                    }
                }
            }
            ExitsPass::Streamed { release_lower, release_out } => super::streamed::exits_streamed(p, *release_lower, *release_out),
            ExitsPass::Exchanged { share, release_lower } => exits_shared(p, share, *release_lower)?,
        }
        Ok(())
    }
}

/// The lower layers a capture from layer `n` reaches (`0..=n - 2`: a capture takes at least two
/// stones), copied into anonymous memory in transparent huge pages. The exits pass reads them at
/// random, one read per capture: through the 4 KB pages of a file mapping nearly every read
/// also misses the TLB. From the copy the exits pass ran about 1.5 times as fast at layers 27
/// and 28 (docs/performance-history.md).
pub(super) struct Resident<'a> {
    map: memmap2::MmapMut,
    /// Offset of each layer `0..=n - 2` in `map`.
    offsets: Vec<usize>,
    /// The original layers (layer `n - 1`, never read by a capture, stays there).
    lower: &'a [&'a [i8]],
}

impl<'a> Resident<'a> {
    /// Copies `lower[0..=n - 2]` (in parallel), giving back each copied range of the file
    /// mappings with `release` when given. `None` when there is nothing to copy or the memory
    /// cannot be mapped (the pass then reads the mappings).
    ///
    /// Cost: one sequential read of the lower layers; memory: their size, for the pass's length.
    pub(super) fn new(n: u32, lower: &'a [&'a [i8]], release: Option<&(dyn Fn(u32, Range<u64>) + Sync)>) -> Option<Resident<'a>> {
        // Layers 0..=n - MIN_CAPTURE: the ones a capture reaches.
        let copied = ((n + 1).saturating_sub(crate::rules::MIN_CAPTURE) as usize).min(lower.len());
        let mut offsets = Vec::with_capacity(copied);
        let mut total = 0usize;
        for l in &lower[..copied] {
            offsets.push(total);
            total += l.len();
        }
        if total == 0 {
            return None;
        }
        let mut map = super::state::huge_zeroed(total).ok()?;
        let mut rest: &mut [u8] = &mut map[..];
        for (m, l) in lower[..copied].iter().enumerate() {
            let (dst, tail) = std::mem::take(&mut rest).split_at_mut(l.len());
            rest = tail;
            // SAFETY: i8 and u8 have the same size, alignment and valid bit patterns.
            let src = unsafe { std::slice::from_raw_parts(l.as_ptr().cast::<u8>(), l.len()) };
            const PIECE: usize = 1 << 24;
            dst.par_chunks_mut(PIECE).zip(src.par_chunks(PIECE)).enumerate().for_each(|(i, (d, s))| {
                d.copy_from_slice(s);
                if let Some(release) = release {
                    release(m as u32, (i * PIECE) as u64..(i * PIECE + s.len()) as u64);
                }
            });
        }
        Some(Resident { map, offsets, lower })
    }

    /// Every lower layer: the copies, and the original of any layer not copied.
    pub(super) fn layers(&self) -> Vec<&[i8]> {
        let base = self.map.as_ptr().cast::<i8>();
        self.lower
            .iter()
            .enumerate()
            .map(|(m, l)| match self.offsets.get(m) {
                // SAFETY: the copy of layer m lies at offsets[m] in the map, l.len() bytes long.
                Some(&off) => unsafe { std::slice::from_raw_parts(base.add(off), l.len()) },
                None => *l,
            })
            .collect()
    }
}

/// The exits pass over `range` in memory: the lower layers read at random, with prefetching.
fn exits_in_memory(rules: Ruleset, n: u32, lower: &[&[i8]], cells: &[Cell], out: &[BestExit], range: Range<u64>, progress: &dyn Progress) {
    forward(n, range, &InMemory { rules, n, lower, cells, out, progress });
}

/// The exits pass in memory as a forward pass: a capture's child's value looked up (lower
/// layer, index), folded into the best exit.
struct InMemory<'a> {
    rules: Ruleset,
    n: u32,
    lower: &'a [&'a [i8]],
    cells: &'a [Cell],
    out: &'a [BestExit],
    progress: &'a dyn Progress,
}

impl Forward for InMemory<'_> {
    /// Index, best exit, same-layer moves, game over.
    type Parent = (u64, i8, u8, bool);
    /// Stones captured, the child's index.
    type Lookup = (u8, usize);

    fn stopped(&self) -> bool {
        self.progress.cancelled()
    }

    #[inline]
    fn moves(&self, i: u64, board: &Board, mut lookup: impl FnMut((u8, usize))) -> Option<Self::Parent> {
        let (best, pending, ended) = exits(self.rules, board, |captured, child| lookup((captured, rank_unchecked(child) as usize)));
        Some((i, best, pending, ended))
    }

    #[inline]
    fn prefetch(&self, (captured, j): (u8, usize)) {
        prefetch(&self.lower[(self.n - u32::from(captured)) as usize][j]);
    }

    #[inline]
    fn fold(&self, parent: &mut Self::Parent, (captured, j): (u8, usize)) {
        let v = self.lower[(self.n - u32::from(captured)) as usize][j];
        parent.1 = parent.1.max(captured as i8 - v);
    }

    /// A game over is marked (its depth to capture is 0; see `FusedDepths`).
    #[inline]
    fn finish(&self, &(i, best, pending, ended): &Self::Parent) {
        self.cells[i as usize].store(open(pending, ended), Relaxed);
        self.out[i as usize].store(best, Relaxed);
    }

    fn chunk_done(&self, positions: u64) {
        self.progress.advance(positions * EXIT_UNITS);
    }
}

/// The places of the lower layers a capture from layer `n` reaches (layers `0..=n - 2`, laid
/// end to end), and how the out-of-core pass packs a capture lookup into one `u64`: the child's
/// place in the high bits, the parent's offset from the first position of its run ([`Run`]) in
/// the low `parent_bits`. One word per lookup instead of a (key, parent) pair: half the memory,
/// so twice the lookups per sweep of the lower layers.
#[derive(Clone, Debug)]
struct Places {
    /// Place of the first position of each layer a capture reaches, then the end of the last
    /// (layer `m` covers `offsets[m]..offsets[m + 1]`).
    offsets: Vec<u64>,
    /// Bits of the parent's offset: a run covers at most `2^parent_bits` positions.
    parent_bits: u32,
}

/// Bits of the place of a child of a capture from layer `n` (at least 1, so the shifts stay
/// below 64): enough for the sum of the sizes of layers `0..=n - MIN_CAPTURE`.
const fn place_bits(n: u32) -> u32 {
    let mut total = 0u64;
    let mut m = 0;
    while m + crate::rules::MIN_CAPTURE <= n {
        total += layer_size(m);
        m += 1;
    }
    let bits = 64 - total.leading_zeros();
    if bits == 0 {
        1
    } else {
        bits
    }
}

// Up to 48 stones, places take at most 40 bits: the parent field keeps at least 24, so a run
// covers at least 16 M positions (512 chunks, far more than a group of chunks).
const _: () = {
    let mut n = 0;
    while n <= crate::index::MAX_STONES {
        assert!(place_bits(n) <= 40);
        n += 1;
    }
};

impl Places {
    /// The places of layer `n`'s captures, with every bit not taken by a place for the parent.
    fn new(n: u32) -> Places {
        Places::with_parent_bits(n, 64 - place_bits(n))
    }

    /// The same with a narrower parent field (tests: many runs in a buffer).
    fn with_parent_bits(n: u32, parent_bits: u32) -> Places {
        assert!(parent_bits + place_bits(n) <= 64 && 1u64 << parent_bits >= CHUNK, "a chunk must fit the parent field");
        let reached = (n + 1).saturating_sub(crate::rules::MIN_CAPTURE);
        let offsets = (0..=reached)
            .scan(0u64, |acc, m| {
                let at = *acc;
                *acc += if m < reached { layer_size(m) } else { 0 };
                Some(at)
            })
            .collect();
        Places { offsets, parent_bits }
    }

    /// Positions one run may cover: its parents' offsets fit the parent field.
    fn span(&self) -> u64 {
        1 << self.parent_bits
    }

    /// The lookup of child `index` of layer `m` for the parent `offset` positions past its
    /// run's first.
    #[inline]
    fn pack(&self, m: u32, index: u64, offset: u64) -> u64 {
        debug_assert!(index < layer_size(m) && offset < self.span());
        ((self.offsets[m as usize] + index) << self.parent_bits) | offset
    }

    #[inline]
    fn place(&self, lookup: u64) -> u64 {
        lookup >> self.parent_bits
    }

    #[inline]
    fn offset(&self, lookup: u64) -> u64 {
        lookup & (self.span() - 1)
    }

    /// The layer holding `place`.
    fn layer_of(&self, place: u64) -> u32 {
        debug_assert!(place < self.offsets[self.offsets.len() - 1]);
        (self.offsets.partition_point(|&o| o <= place) - 1) as u32
    }

    /// Layer and index of `place`.
    #[cfg(test)]
    fn unpack_place(&self, place: u64) -> (u32, u64) {
        let m = self.layer_of(place);
        (m, place - self.offsets[m as usize])
    }
}

/// The exits pass over `range` (inside one part) out of core: moves are generated in index
/// order and the capture lookups collected; each full buffer is grouped by window of the lower
/// layers and served in one sweep, window by window, and the windows' pages given back.
/// `on_flush(done)` is called when every position below `done` is complete.
///
/// A lookup holds its parent as an offset from the first position of its run ([`Places`]); a
/// new run starts whenever the next group of chunks would take the parents past the offset's
/// bits. Runs are grouped apart and served in the same sweep, so that the buffer is served when
/// it is full however many positions it covers (from layer 36 up, a run covers fewer positions
/// than a buffer of a few GB of lookups needs).
#[allow(clippy::too_many_arguments)]
fn exits_out_of_core(
    rules: Ruleset,
    n: u32,
    lower: &[&[i8]],
    cells: &[Cell],
    out: &[BestExit],
    range: Range<u64>,
    o: &OutOfCore,
    places: &Places,
    progress: &dyn Progress,
    failure: &Failure,
    on_flush: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<()> {
    let cap = (o.lookup_bytes / 8).max(1 << 12) as usize;
    let span = places.span();
    let mut lookups: Vec<u64> = Vec::new();
    let mut runs: Vec<Run> = Vec::new();
    let ranges = split(range, CHUNK);
    // A group of chunks always fits a new run (chunks are at most CHUNK long).
    let group = rayon::current_num_threads().clamp(1, (span / CHUNK) as usize);
    for rs in ranges.chunks(group) {
        if progress.cancelled() || failure.failed.load(Relaxed) {
            return Ok(());
        }
        let end = rs[rs.len() - 1].end;
        if !runs.last().is_some_and(|r| end - r.base <= span) {
            // An empty run is replaced rather than kept.
            if runs.last().is_some_and(|r| r.from == lookups.len()) {
                runs.pop();
            }
            runs.push(Run { from: lookups.len(), base: rs[0].start });
        }
        let base = runs[runs.len() - 1].base;
        scan_exits(rules, n, rs, 0, cells, out, progress, &mut lookups, |captured, child, i| {
            places.pack(n - u32::from(captured), rank_unchecked(child), i - base)
        });
        if lookups.len() >= cap {
            serve(n, lower, out, &mut lookups, &mut runs, places, o);
            on_flush(end)?;
        }
    }
    serve(n, lower, out, &mut lookups, &mut runs, places, o);
    Ok(())
}

/// A run of a buffer of lookups: those from index `from` of the buffer on (to the next run's),
/// whose parents are offsets from position `base`.
struct Run {
    from: usize,
    base: u64,
}

/// Folds the value of each child of `lookups` (packed by `places`, in `runs`) into its
/// parent's best exit, sweeping the lower layers in order, window by window: a window is
/// `2^k` bytes of places, the largest power of two within `o.lower_window`. The lookups are not
/// sorted but only partitioned by window, in place ([`partition`]), each run in pieces, one
/// per thread, partitioned in parallel; then each window is served from every piece (its reads
/// fall within the window, which the pass has resident) and its pages are given back.
/// Empties `lookups` and `runs`.
///
/// Cost: two passes over the lookups to partition them, and one random read of the window
/// and one of the cells per lookup, prefetched in groups. A full sort of the buffer made the
/// exits pass of layer 24 about 2 s slower (docs/performance-history.md).
fn serve(n: u32, lower: &[&[i8]], out: &[BestExit], lookups: &mut Vec<u64>, runs: &mut Vec<Run>, places: &Places, o: &OutOfCore) {
    let offsets = &places.offsets;
    let total = offsets[offsets.len() - 1];
    if lookups.is_empty() || total == 0 {
        lookups.clear();
        runs.clear();
        return;
    }
    let shift = 63 - o.lower_window.max(1 << 16).leading_zeros();
    let windows = ((total - 1) >> shift) as usize + 1;
    // Each run in pieces (start, end, base), one per thread.
    let threads = rayon::current_num_threads().max(1);
    let mut pieces: Vec<(usize, usize, u64)> = Vec::new();
    for (k, r) in runs.iter().enumerate() {
        let end = runs.get(k + 1).map_or(lookups.len(), |s| s.from);
        let step = (end - r.from).div_ceil(threads).max(1);
        let mut a = r.from;
        while a < end {
            pieces.push((a, (a + step).min(end), r.base));
            a += step;
        }
    }
    // Partition every piece by window, in parallel: the window starts of each piece. The runs,
    // so the pieces, follow each other from the buffer's start to its end.
    debug_assert_eq!(runs[0].from, 0, "the first run starts the buffer");
    let mut slices: Vec<&mut [u64]> = Vec::with_capacity(pieces.len());
    let mut rest: &mut [u64] = &mut lookups[..];
    for &(a, b, _) in &pieces {
        let (piece, tail) = std::mem::take(&mut rest).split_at_mut(b - a);
        slices.push(piece);
        rest = tail;
    }
    let starts: Vec<Vec<usize>> = slices.into_par_iter().map(|piece| partition(piece, windows, |l| (places.place(l) >> shift) as usize)).collect();
    let words = &lookups[..];
    for w in 0..windows {
        let lo = (w as u64) << shift;
        let hi = (lo + (1 << shift)).min(total);
        // The layers the window overlaps: a place's layer is the last of them starting at or below it.
        let first = places.layer_of(lo) as usize;
        let last = places.layer_of(hi - 1) as usize;
        let segs: Vec<(&[u64], u64)> =
            pieces.iter().zip(&starts).map(|(&(a, _, base), st)| (&words[a + st[w]..a + st[w + 1]], base)).filter(|(seg, _)| !seg.is_empty()).collect();
        if segs.is_empty() {
            continue;
        }
        segs.par_iter().for_each(|&(seg, base)| {
            seg.par_chunks(1 << 14).for_each(|c| {
                let layer = |place: u64| {
                    let mut m = first;
                    while m < last && place >= offsets[m + 1] {
                        m += 1;
                    }
                    m
                };
                // Each lookup's layer, index in it and parent, found once.
                let mut targets = [(0usize, 0usize, 0usize); BATCH];
                for group in c.chunks(BATCH) {
                    // Prefetch the group's values and cells, then fold them in.
                    for (&l, target) in group.iter().zip(&mut targets) {
                        let place = places.place(l);
                        let m = layer(place);
                        *target = (m, (place - offsets[m]) as usize, (base + places.offset(l)) as usize);
                        prefetch(&lower[m][target.1]);
                        prefetch(&out[target.2]);
                    }
                    for &(m, j, parent) in &targets[..group.len()] {
                        out[parent].fetch_max((n - m as u32) as i8 - lower[m][j], Relaxed);
                    }
                }
            });
        });
        // Give back the window's pages, layer by layer.
        for m in first..=last {
            let a = lo.max(offsets[m]) - offsets[m];
            let b = hi.min(offsets[m + 1]) - offsets[m];
            (o.release_lower)(m as u32, a..b);
        }
    }
    lookups.clear();
    runs.clear();
}

/// Reorders `words` in place so that their keys (`key(w) < buckets`) ascend, and returns where
/// each bucket starts (`buckets + 1` entries, the last `words.len()`). The order within a
/// bucket is not kept.
///
/// Cost: one pass to count, one to move every word at most once (cycles of swaps); `key` is
/// called about twice per word.
fn partition(words: &mut [u64], buckets: usize, key: impl Fn(u64) -> usize) -> Vec<usize> {
    let mut start = vec![0usize; buckets + 1];
    for &w in words.iter() {
        start[key(w) + 1] += 1;
    }
    for b in 0..buckets {
        start[b + 1] += start[b];
    }
    // The next slot of each bucket not yet holding one of its own words.
    let mut next = start[..buckets].to_vec();
    for b in 0..buckets {
        while next[b] < start[b + 1] {
            let mut w = words[next[b]];
            let mut k = key(w);
            while k != b {
                std::mem::swap(&mut w, &mut words[next[k]]);
                next[k] += 1;
                k = key(w);
            }
            words[next[b]] = w;
            next[b] += 1;
        }
    }
    start
}

/// The exits pass over the chunks `rs` of cells (positions `offset + r` of layer `n`), in
/// parallel: each cell gets its position's best exit and same-layer move count, and
/// `lookup(captured, child, cell)` of every capture whose value a lower layer must give is
/// appended to `lookups`, in the chunks' order.
#[allow(clippy::too_many_arguments)]
fn scan_exits<T: Send>(
    rules: Ruleset,
    n: u32,
    rs: &[Range<u64>],
    offset: u64,
    cells: &[Cell],
    out: &[BestExit],
    progress: &dyn Progress,
    lookups: &mut Vec<T>,
    lookup: impl Fn(u8, &Board, u64) -> T + Sync,
) {
    let pieces: Vec<Vec<T>> = rs
        .par_iter()
        .map(|r| {
            let mut mine = Vec::new();
            let walker = LayerWalker::new(n, offset + r.start..offset + r.end).expect("n <= 48 was checked");
            for (i, b) in walker {
                let k = i - offset;
                let (best, pending, _) = exits(rules, &b, |captured, child| mine.push(lookup(captured, child, k)));
                cells[k as usize].store(open(pending, false), Relaxed);
                out[k as usize].store(best, Relaxed);
            }
            progress.advance((r.end - r.start) * EXIT_UNITS);
            mine
        })
        .collect();
    for p in pieces {
        lookups.extend(p);
    }
}

/// The exits pass of a rank's share: in batches of at most `share.lookups` capture lookups,
/// collected in index order, sent to the owners of the children, answered and folded in. Every
/// rank takes part in every exchange until no rank has positions left. Out of core
/// (`release_lower` given), each served slice's pages and each finished batch's cells are
/// given back.
fn exits_shared(p: &Pass, share: &Share, release_lower: Option<&(dyn Fn(u32, Range<u64>) + Sync)>) -> Result<()> {
    let Pass { rules, n, lower, cells, exits: out, ref own, parts, progress, failure, release_part } = *p;
    let cluster = share.cluster;
    let ranks = cluster.size();
    let owners: Vec<Ownership> = (0..n).map(|m| Ownership::new(layer_size(m), ranks)).collect();
    let mask = (1u64 << KEY_SHIFT) - 1;
    let dest = |key: u64| owners[(key >> KEY_SHIFT) as usize].owner(key & mask);
    let cap = share.lookups.max(1 << 12) as usize;
    // Share-relative chunks, in order; the batch boundaries fall between them.
    let ranges: Vec<Range<u64>> = parts.iter().flat_map(|p| split(p.clone(), CHUNK)).collect();
    let group = rayon::current_num_threads().max(1);
    let mut next = 0;
    let mut lookups: Vec<(u64, u64)> = Vec::new();
    loop {
        // Collect a batch.
        let first = next;
        while next < ranges.len() && lookups.len() < cap && !(progress.cancelled() || failure.failed.load(Relaxed)) {
            let rs = &ranges[next..(next + group).min(ranges.len())];
            scan_exits(rules, n, rs, own.start, cells, out, progress, &mut lookups, |captured, child, k| {
                ((u64::from(n - u32::from(captured)) << KEY_SHIFT) | rank_unchecked(child), k)
            });
            next += rs.len();
        }
        // Ask the owners, in destination order; each reads its slices in sorted order.
        lookups.par_sort_unstable_by_key(|&(key, _)| (dest(key), key));
        let answer = |key: u64| lower[(key >> KEY_SHIFT) as usize][(key & mask) as usize] as u8;
        let back = ask_owners(cluster, &lookups, &dest, &answer, &mut |lo, hi| {
            if let Some(release) = release_lower {
                for m in (lo >> KEY_SHIFT) as u32..=(hi >> KEY_SHIFT) as u32 {
                    release(m, owners[m as usize].range(cluster.rank()));
                }
            }
        })?;
        // Fold the answers into the parents' best exits.
        lookups.par_iter().zip(back.par_iter()).for_each(|(&(key, parent), &v)| {
            out[parent as usize].fetch_max((n - (key >> KEY_SHIFT) as u32) as i8 - v as i8, Relaxed);
        });
        lookups.clear();
        if next > first {
            release_part(&(ranges[first].start..ranges[next - 1].end));
        }
        let more = next < ranges.len() && !(progress.cancelled() || failure.failed.load(Relaxed));
        if !cluster.any(more)? {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::index::MAX_STONES;
    use crate::progress::NoProgress;
    use crate::solver::state::ENDED;
    use crate::solver::tests::{as_i8, memory_layers};

    #[test]
    fn lookups_pack_and_unpack_for_every_layer() {
        for n in 0..=MAX_STONES {
            let places = Places::new(n);
            assert!(place_bits(n) <= 40, "layer {n}: {} bits of place", place_bits(n));
            let total = places.offsets[places.offsets.len() - 1];
            assert!(total < 1 << place_bits(n), "layer {n}");
            assert_eq!(places.parent_bits, 64 - place_bits(n));
            let reached = (n + 1).saturating_sub(crate::rules::MIN_CAPTURE);
            assert_eq!(total, (0..reached).map(layer_size).sum::<u64>(), "layer {n}");
            let mut last = None;
            for m in 0..reached {
                let mut indices = vec![0, layer_size(m) / 2, layer_size(m) - 1];
                indices.dedup();
                for index in indices {
                    for offset in [0, 1, places.span() / 3, places.span() - 1] {
                        let l = places.pack(m, index, offset);
                        assert_eq!(places.unpack_place(places.place(l)), (m, index), "layer {n}: child {index} of layer {m}");
                        assert_eq!(places.offset(l), offset, "layer {n}: child {index} of layer {m}");
                        // Sorting the words sorts by layer, index, then parent.
                        assert!(last < Some(l), "layer {n}: child {index} of layer {m}, parent {offset}");
                        last = Some(l);
                    }
                }
            }
        }
    }

    #[test]
    fn partition_groups_words_by_key_in_place() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for (len, buckets) in [(0, 1), (1, 1), (5, 3), (1000, 1), (1000, 7), (4096, 64), (777, 1000)] {
            let mut words: Vec<u64> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state
                })
                .collect();
            let key = |w: u64| (w % buckets as u64) as usize;
            let mut before = words.clone();
            let start = partition(&mut words, buckets, key);
            assert_eq!(start.len(), buckets + 1);
            assert_eq!((start[0], start[buckets]), (0, len));
            for b in 0..buckets {
                assert!(words[start[b]..start[b + 1]].iter().all(|&w| key(w) == b), "{len} words, {buckets} buckets: bucket {b}");
            }
            before.sort_unstable();
            words.sort_unstable();
            assert_eq!(words, before, "{len} words, {buckets} buckets: the same words");
        }
    }

    /// A parent field of one or two chunks: a run per group or two of chunks, many of them in
    /// one buffer (a cap far above the layer's lookups) or a few (the smallest cap). The cells
    /// come out as in memory, the buffer is served only when full, and the pages released lie
    /// inside the layers.
    #[test]
    fn runs_of_narrow_parent_fields_fill_the_cells_as_in_memory() {
        let n = 12;
        for rules in Ruleset::ALL {
            let layers = memory_layers(rules, n - 1);
            let lower: Vec<&[i8]> = layers.iter().map(|l| as_i8(l)).collect();
            let len = layer_size(n);
            let expected: Vec<Cell> = (0..len).map(|_| Cell::new(0)).collect();
            let expected_exits: Vec<BestExit> = (0..len).map(|_| BestExit::new(0)).collect();
            exits_in_memory(rules, n, &lower, &expected, &expected_exits, 0..len, &NoProgress);
            for (parent_bits, lookup_bytes) in [(15, 1 << 30), (16, 1 << 30), (15, 0), (16, 0)] {
                let released = Mutex::new(Vec::new());
                let release = |m: u32, r: Range<u64>| released.lock().unwrap().push((m, r));
                let work = tempfile::tempdir().unwrap();
                let o = OutOfCore {
                    part_len: len,
                    lookup_bytes,
                    lower_window: 1 << 16,
                    message_bytes: 1 << 16,
                    work_dir: work.path(),
                    release_lower: &release,
                    release_out: &|_| {},
                };
                let places = Places::with_parent_bits(n, parent_bits);
                let cells: Vec<Cell> = (0..len).map(|_| Cell::new(0)).collect();
                let out: Vec<BestExit> = (0..len).map(|_| BestExit::new(0)).collect();
                let mut flushes = Vec::new();
                let mut on_flush = |k: u64| {
                    flushes.push(k);
                    Ok(())
                };
                let from = CHUNK / 2;
                exits_out_of_core(rules, n, &lower, &cells, &out, from..len, &o, &places, &NoProgress, &Failure::new(), &mut on_flush).unwrap();
                let what = format!("{}, {parent_bits} bits, {lookup_bytes} bytes", rules.name());
                // The same cells, but for the mark of a game over, which only the in-memory pass
                // sets (the depths recorded with the values need it).
                for i in from..len {
                    assert_eq!(cells[i as usize].load(Relaxed), expected[i as usize].load(Relaxed) & !ENDED, "{what}: position {i}");
                    assert_eq!(out[i as usize].load(Relaxed), expected_exits[i as usize].load(Relaxed), "{what}: position {i}'s best exit");
                }
                assert!(flushes.windows(2).all(|w| w[0] < w[1]), "{what}: {flushes:?}");
                if lookup_bytes == 0 {
                    assert!(flushes.len() > 4, "{what}: {} flushes", flushes.len());
                } else {
                    assert!(flushes.is_empty(), "{what}: {flushes:?}");
                }
                let released = released.into_inner().unwrap();
                assert!(released.len() > 4, "{what}: {} releases", released.len());
                for (m, r) in released {
                    assert!(m + crate::rules::MIN_CAPTURE <= n && r.start < r.end && r.end <= layer_size(m), "{what}: layer {m}: {r:?}");
                }
            }
        }
    }
}
