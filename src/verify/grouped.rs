//! Re-deriving a layer whose children's layers do not fit in memory together ([`verify_within`]).
//!
//! A layer's same-layer children are read at random over the whole layer, its captures' children
//! at random over the lower layers: the files should stay in the page cache, or every miss is a
//! read from disk. Layer 36 of awari reads itself (13.3 GiB) and layers 22..34 (30 GiB) on a
//! machine of 24 GB. So the sources are split into groups that fit, and each group is one pass
//! over the layer in index order, looking only at the moves into it. Each move's value is
//! compared with the stored value on the spot: two bits per position record whether some move
//! was worth more than it (*exceeded*) and whether some move was worth exactly it (*attained*).
//! A stored value is right when no move exceeded it and one attained it, which is what
//! [`verify_values`] checks by taking the maximum. The mismatches' derived values are then
//! computed one by one (few of them: random reads anywhere are cheap).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use bitvec::prelude::{BitVec, Lsb0};
use rayon::prelude::*;

use super::values::{check_given, plan, plan_into, Plan, Step, BATCH};
use super::{layers_needed, CHUNK, MISMATCHES_KEPT};
use crate::error::{Error, Result};
use crate::index::{chunks, layer_size, unrank_unchecked, LayerWalker};
use crate::progress::Progress;
use crate::rules::Ruleset;
use crate::verify::{verify_values, LayerReport, Mismatch};

/// Memory [`verify_within`] takes besides the layers' pages: two bits per position of layer `n`.
pub(crate) fn marks_bytes(n: u32) -> u64 {
    layer_size(n).div_ceil(64) * 8 * 2
}

/// The groups of layers (`n` itself and `0..=n-2`) whose files re-deriving layer `n` reads
/// together, each at most `budget` bytes (a layer larger than `budget` alone), largest layers
/// first: first-fit decreasing. One group when everything fits.
pub(crate) fn source_groups(n: u32, budget: u64) -> Vec<Vec<u32>> {
    let mut layers: Vec<u32> = layers_needed(n).chain(std::iter::once(n)).collect();
    layers.sort_by_key(|&m| std::cmp::Reverse((layer_size(m), m)));
    let mut groups: Vec<(u64, Vec<u32>)> = Vec::new();
    for m in layers {
        let size = layer_size(m);
        match groups.iter_mut().find(|(used, _)| used + size <= budget) {
            Some((used, g)) => {
                *used += size;
                g.push(m);
            }
            None => groups.push((size, vec![m])),
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// Re-derives every position of layer `n` like [`verify_values`], reading the files of its
/// children's layers in groups of at most `budget` bytes ([`source_groups`]); `release(m)` is
/// called after each pass for every layer `m` of its group (give its pages back: the next group
/// needs the room). With one group this is [`verify_values`] itself. The report is the same as
/// [`verify_values`]'s but for the seconds.
///
/// Cost: one pass over the layer (move generation) per group, each ranking and reading only the
/// children in the group; [`marks_bytes`] of memory; then one derivation per mismatch kept.
///
/// # Errors
/// As [`verify_values`]; [`Error::Interrupted`] when `progress` is cancelled.
pub(crate) fn verify_within(
    rules: Ruleset,
    n: u32,
    this: &[i8],
    lower: &[&[i8]],
    budget: u64,
    release: &(dyn Fn(u32) + Sync),
    progress: &dyn Progress,
) -> Result<LayerReport> {
    let groups = source_groups(n, budget);
    if groups.len() == 1 {
        return verify_values(rules, n, this, lower, progress);
    }
    check_given(n, this, lower)?;
    let start = Instant::now();
    let size = layer_size(n);
    let exceeded: BitVec<AtomicU64, Lsb0> = BitVec::repeat(false, size as usize);
    let attained: BitVec<AtomicU64, Lsb0> = BitVec::repeat(false, size as usize);
    let ranges: Vec<Range<u64>> = chunks(n, CHUNK).collect();
    let passes = groups.len() as u64;
    for (g, group) in groups.iter().enumerate() {
        let mut inside = [false; 64];
        for &m in group {
            inside[m as usize] = true;
        }
        let g = g as u64;
        ranges.par_iter().for_each(|r| {
            if progress.cancelled() {
                return;
            }
            let mut batch = [(0u64, Plan::EMPTY); BATCH];
            let mut walker = LayerWalker::new(n, r.clone()).into_iter().flatten().peekable();
            while walker.peek().is_some() {
                let mut filled = 0;
                for (i, board) in walker.by_ref().take(BATCH) {
                    batch[filled] = (i, plan_into(rules, n, &board, |m| inside[m as usize]));
                    filled += 1;
                }
                for (i, p) in &batch[..filled] {
                    let stored = this[*i as usize];
                    let (over, hit) = compare(p, n, stored, inside[n as usize], this, lower);
                    if over {
                        exceeded.set_aliased(*i as usize, true);
                    }
                    if hit {
                        attained.set_aliased(*i as usize, true);
                    }
                }
            }
            // This pass's share of the chunk, so that the passes add up to the layer.
            let len = r.end - r.start;
            progress.advance(len * (g + 1) / passes - len * g / passes);
        });
        if progress.cancelled() {
            return Err(Error::Interrupted);
        }
        for &m in group {
            release(m);
        }
    }

    // A position is wrong when some move exceeded its value or none attained it.
    let (ex, at) = (exceeded.as_raw_slice(), attained.as_raw_slice());
    let tail = size % 64;
    let wrong = |w: usize| {
        let mut bits = ex[w].load(Relaxed) | !at[w].load(Relaxed);
        if tail != 0 && w + 1 == ex.len() {
            bits &= (1u64 << tail) - 1;
        }
        bits
    };
    let (mismatches, mut first) = (0..ex.len())
        .into_par_iter()
        .fold(
            || (0u64, Vec::new()),
            |(count, mut first): (u64, Vec<u64>), w| {
                let mut bits = wrong(w);
                let c = u64::from(bits.count_ones());
                while bits != 0 && first.len() < MISMATCHES_KEPT {
                    first.push(w as u64 * 64 + u64::from(bits.trailing_zeros()));
                    bits &= bits - 1;
                }
                (count + c, first)
            },
        )
        .reduce(
            || (0u64, Vec::new()),
            |a, b| {
                let mut first = a.1;
                first.extend(b.1);
                first.sort_unstable();
                first.truncate(MISMATCHES_KEPT);
                (a.0 + b.0, first)
            },
        );
    first.sort_unstable();
    let first_mismatches = first
        .into_iter()
        .map(|index| {
            let board = unrank_unchecked(n, index);
            let derived = plan(rules, n, &board).derive(this, lower).map_err(|m| Error::Internal(format!("layer {m} was checked as given")))?;
            Ok(Mismatch { index, board, stored: this[index as usize], derived })
        })
        .collect::<Result<Vec<Mismatch>>>()?;
    Ok(LayerReport { layer: n, checked: size, mismatches, first_mismatches, seconds: start.elapsed().as_secs_f64() })
}

/// The moves of `p` (those [`plan_into`] kept): whether one is worth more than `stored`,
/// whether one is worth exactly `stored`. With `own` (layer `n` in the group), the position's
/// ending value counts, and a stored value outside `-n..=n` counts as exceeded.
#[inline]
fn compare(p: &Plan, n: u32, stored: i8, own: bool, this: &[i8], lower: &[&[i8]]) -> (bool, bool) {
    let stored16 = i16::from(stored);
    let (mut over, mut hit) = (own && i64::from(stored).unsigned_abs() > u64::from(n), false);
    let mut see = |v: i16| {
        over |= v > stored16;
        hit |= v == stored16;
    };
    if let Some(e) = p.ending {
        if own {
            see(e);
        }
        return (over, hit);
    }
    for step in p.steps() {
        match *step {
            Step::End(v) => see(v),
            Step::Child { layer, rank, captured } => {
                let values = if captured == 0 { this } else { lower[layer as usize] };
                see(i16::from(captured) - i16::from(values[rank as usize]));
            }
        }
    }
    (over, hit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;

    /// Every needed layer falls in exactly one group, no group is over the budget unless it holds
    /// one layer, and a budget for everything makes one group.
    #[test]
    fn groups_cover_every_source_once() {
        for n in [2, 9, 24, 36, 48] {
            for budget in [1, layer_size(n) / 3, layer_size(n), 4 * layer_size(n), u64::MAX] {
                let groups = source_groups(n, budget);
                let mut all: Vec<u32> = groups.iter().flatten().copied().collect();
                all.sort_unstable();
                let mut want: Vec<u32> = layers_needed(n).chain(std::iter::once(n)).collect();
                want.sort_unstable();
                assert_eq!(all, want, "n {n} budget {budget}");
                for g in &groups {
                    let bytes: u64 = g.iter().map(|&m| layer_size(m)).sum();
                    assert!(bytes <= budget || g.len() == 1, "n {n} budget {budget}: {g:?}");
                }
            }
            assert_eq!(source_groups(n, u64::MAX).len(), 1);
        }
    }

    /// Against [`verify_values`] on solved layers and on damaged copies (values changed by one,
    /// swapped, out of range, a whole run garbage), with budgets that make 2 to every-layer
    /// groups, on three rulesets: the same counts and the same first mismatches.
    #[test]
    fn grouped_passes_report_what_one_pass_reports() {
        for rules in [Ruleset::ALL[0], Ruleset::ALL[1], Ruleset::ALL[3]] {
            let top = 11u32;
            let mut layers: Vec<Vec<i8>> = Vec::new();
            for n in 0..=top {
                let lower: Vec<&[i8]> = layers.iter().map(Vec::as_slice).collect();
                let mut out = vec![0u8; layer_size(n) as usize];
                crate::solver::solve_layer(rules, n, &lower, &mut out, &NoProgress).unwrap();
                layers.push(out.into_iter().map(|b| b as i8).collect());
            }
            let lower: Vec<&[i8]> = layers.iter().map(Vec::as_slice).collect();
            let good = &layers[top as usize];
            let mut damaged = good.clone();
            let len = damaged.len();
            damaged[0] = damaged[0].wrapping_add(1);
            damaged[len / 3] = -damaged[len / 3] + 2;
            damaged[len / 2] = 100;
            damaged[len - 1] = i8::MIN;
            for v in &mut damaged[len / 5..len / 5 + 40] {
                *v = v.wrapping_mul(3).wrapping_sub(7);
            }
            for this in [good, &damaged] {
                let one = verify_values(rules, top, this, &lower, &NoProgress).unwrap();
                for budget in [1, layer_size(top - 2), layer_size(top) + layer_size(top - 3)] {
                    assert!(source_groups(top, budget).len() > 1);
                    let released = std::sync::Mutex::new(Vec::new());
                    let release = |m: u32| released.lock().unwrap().push(m);
                    let grouped = verify_within(rules, top, this, &lower, budget, &release, &NoProgress).unwrap();
                    assert_eq!((grouped.checked, grouped.mismatches), (one.checked, one.mismatches), "{rules:?} budget {budget}");
                    assert_eq!(grouped.first_mismatches, one.first_mismatches, "{rules:?} budget {budget}");
                    let mut r = released.into_inner().unwrap();
                    r.sort_unstable();
                    assert_eq!(r, (0..=top).filter(|&m| m != top - 1).collect::<Vec<u32>>());
                }
                if std::ptr::eq(this, good) {
                    assert_eq!(one.mismatches, 0);
                } else {
                    assert!(one.mismatches >= 5, "{}", one.mismatches);
                }
            }
        }
    }
}
