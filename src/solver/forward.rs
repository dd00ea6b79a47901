//! The forward loop: a range of a layer's positions in index order, in chunks run in parallel;
//! each position's moves generated and the entries of its children it needs read in batches
//! of [`BATCH`] positions, every entry prefetched as soon as its child is known and read once
//! the batch's moves are all generated. What a pass needs of the children and does with them
//! is its kind ([`Forward`]): the exits pass in memory (`exits.rs`), the bounds' exits pass
//! (`bounds.rs`) and the depths' forward pass (`dtc.rs`).

use std::ops::Range;

use rayon::prelude::*;

use super::state::{split, BATCH, CHUNK};
use crate::index::LayerWalker;
use crate::rules::Board;

/// A kind of forward pass: what it needs of a position's children and what it makes of them.
/// The loop is generic over it (monomorphized: no dynamic call in the hot loop).
pub(super) trait Forward: Sync {
    /// A position waiting for the entries of its children.
    type Parent;
    /// One child's entry to read.
    type Lookup: Copy;

    /// Whether the pass stops: asked before each chunk, whose positions are then left alone.
    fn stopped(&self) -> bool;

    /// The moves of position `i` (`board`): `lookup` is called for each child whose entry the
    /// position needs, and the position returned to wait for them; `None` when it needs none
    /// and is done already (then `lookup` must not have been called).
    fn moves(&self, i: u64, board: &Board, lookup: impl FnMut(Self::Lookup)) -> Option<Self::Parent>;

    /// Starts reading the entry of `lookup` (a prefetch).
    fn prefetch(&self, lookup: Self::Lookup);

    /// Folds the entry of `lookup` into its parent.
    fn fold(&self, parent: &mut Self::Parent, lookup: Self::Lookup);

    /// A parent with every entry it asked for folded in.
    fn finish(&self, parent: &Self::Parent);

    /// A chunk of `positions` positions is done (for progress).
    fn chunk_done(&self, positions: u64);
}

// A batch's parents are numbered by a byte.
const _: () = assert!(BATCH <= 256);

/// Runs the forward pass `kind` over positions `range` of layer `n`, in chunks of [`CHUNK`]
/// positions on the current rayon thread pool.
///
/// Cost: one move generation per position; one prefetch and one read per lookup. Memory: per
/// thread, one batch's parents and lookups.
///
/// # Panics
/// When `n > 48`.
pub(super) fn forward<F: Forward>(n: u32, range: Range<u64>, kind: &F) {
    split(range, CHUNK).par_iter().for_each(|r| {
        if kind.stopped() {
            return;
        }
        let mut walker = LayerWalker::new(n, r.clone()).expect("n <= 48 was checked");
        let mut group: Vec<F::Parent> = Vec::with_capacity(BATCH);
        // (the parent's place in the group, the lookup)
        let mut lookups: Vec<(u8, F::Lookup)> = Vec::with_capacity(BATCH * 6);
        loop {
            // The moves of a batch of positions; the entries they need are prefetched...
            group.clear();
            lookups.clear();
            let mut took = 0;
            for (i, b) in walker.by_ref().take(BATCH) {
                took += 1;
                let k = group.len() as u8;
                let parent = kind.moves(i, &b, |l| {
                    kind.prefetch(l);
                    lookups.push((k, l));
                });
                match parent {
                    Some(p) => group.push(p),
                    None => debug_assert!(!lookups.last().is_some_and(|&(at, _)| at == k), "a position done at once asked for entries"),
                }
            }
            if took == 0 {
                break;
            }
            // ...then read once they are on their way.
            for &(k, l) in &lookups {
                kind.fold(&mut group[k as usize], l);
            }
            for p in &group {
                kind.finish(p);
            }
        }
        kind.chunk_done(r.end - r.start);
    });
}
