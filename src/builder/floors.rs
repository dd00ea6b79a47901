//! A layer's floors computed by the build's own exits pass (`oware pack` packs over them): the
//! best value of every position's moves that leave its layer, the lower layers read as the build
//! reads them within a memory limit (copied and read at random, streamed in index order, or out
//! of core in parts), instead of at random through their mappings.

use std::ops::Range;
use std::path::Path;

use super::companion::values_of;
use super::config::MIN_OUT_OF_CORE_MEMORY;
use super::plan::{resident_lower, Mode, OutOfCoreLimits};
use crate::error::{Error, Result};
use crate::index::layer_size;
use crate::progress::Progress;
use crate::rules::{layers_needed, Ruleset};
use crate::solver::{solve_layer_with, working_memory, SolveOptions};
use crate::storage::Layer;

/// How [`layer_floors`] reads the lower layers of layer `n` within `limit` bytes of memory
/// (`None`: no limit): as the build solves a layer's values (`Mode`), for the exits pass alone.
/// In memory (the lower layers a capture reaches copied) when its cells (one byte per position)
/// and that copy fit; streamed when the cells fit; else out of core within the limit. The
/// floors themselves are the caller's (a buffer of its own, in memory or a file).
pub fn floors_mode(n: u32, limit: Option<u64>) -> Mode {
    let cells = working_memory(n);
    match limit {
        None => Mode::InMemory { list_bytes: 0 },
        Some(m) if cells.saturating_add(resident_lower(n)) <= m => Mode::InMemory { list_bytes: 0 },
        Some(m) if cells <= m => Mode::Streamed { list_bytes: 0 },
        Some(m) => Mode::OutOfCore { limits: OutOfCoreLimits::for_positions(layer_size(n), m.max(MIN_OUT_OF_CORE_MEMORY)) },
    }
}

/// The least anonymous memory packing layer `n` takes, whatever the limit: the writer's own
/// ([`crate::pack::PackBuffers::working_memory`]) and the smallest out-of-core state of the
/// floors' exits pass.
pub fn least_pack_memory(n: u32) -> u64 {
    crate::pack::PackBuffers::working_memory(n) + MIN_OUT_OF_CORE_MEMORY
}

/// Fills `out` (one entry per position of layer `n`) with every position's floor
/// ([`crate::pack::floor`]: the best of its captures and its moves that end the game, the value
/// of a game over, [`crate::pack::NO_FLOOR`] for none), by the build's exits pass in `mode`
/// ([`floors_mode`]). `lower[m]` holds the values of every layer a capture from `n` reaches
/// (`0..=n - 2`); out of core, the scratch files go to `work_dir` (created if needed, emptied
/// of them after) and `release_out(range)` gives back the pages of `out`'s `range` (a file
/// mapping) as each part is done; streamed, behind the pass in index order. `progress` may cancel, and traces the pass.
///
/// Cost: the build's exits pass (a move generation per position, a lookup per capture), in
/// `mode`'s memory besides `out`.
///
/// # Errors
/// [`Error::Internal`] when `out` or a lower layer has the wrong length (the caller opens them);
/// [`Error::NotAFile`] when something other than a directory is at `work_dir` (out of core);
/// [`Error::Io`] for the scratch files (a full disk included); [`Error::Interrupted`] when
/// `progress` is cancelled.
#[allow(clippy::too_many_arguments)]
pub fn layer_floors(
    rules: Ruleset,
    n: u32,
    lower: &[Option<Layer>],
    mode: Mode,
    work_dir: &Path,
    out: &mut [i8],
    release_out: &(dyn Fn(Range<u64>) + Sync),
    progress: &dyn Progress,
) -> Result<()> {
    if out.len() as u64 != layer_size(n) {
        return Err(Error::Internal(format!("floors of layer {n}: {} entries", out.len())));
    }
    for m in layers_needed(n).into_iter().filter(|&m| m < n) {
        if lower.get(m as usize).and_then(Option::as_ref).map(|l| l.bytes().len() as u64) != Some(layer_size(m)) {
            return Err(Error::Internal(format!("floors of layer {n}: lower layer {m} not open")));
        }
    }
    let values = values_of(lower);
    let mut lower_values: Vec<&[i8]> = (0..n).map(|m| values.get(m as usize).copied().unwrap_or(&[])).collect();
    // Layer n - 1 is never read (no capture takes one stone).
    if let Some(l) = lower_values.last_mut() {
        if l.len() as u64 != layer_size(n - 1) {
            *l = &[];
        }
    }
    let release_lower = |m: u32, r: Range<u64>| {
        if let Some(Some(layer)) = lower.get(m as usize) {
            layer.release(r);
        }
    };
    let limits = mode.out_of_core().copied();
    if limits.is_some() {
        crate::sys::create_work_dir(work_dir)?;
        // What an interrupted run left (its state, message buckets) is never read.
        crate::solver::spill::remove_stale(work_dir)?;
    }
    let options = SolveOptions {
        out_of_core: limits.as_ref().map(|l| l.solve_within(work_dir, &release_lower, release_out)),
        release_lower: Some(&release_lower),
        release_out: Some(release_out),
        stream_lower: matches!(mode, Mode::Streamed { .. }),
        exits_only: true,
        ..Default::default()
    };
    // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid.
    let bytes: &mut [u8] = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast(), out.len()) };
    solve_layer_with(rules, n, &lower_values, bytes, progress, &options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;
    use crate::storage::{DatabaseDir, ValuesKind};
    use crate::test_support as common;

    /// Every position of layers 2..=10 of every ruleset: the floors of the exits pass, in
    /// memory, streamed and out of core in several parts, are those of the simple definition
    /// ([`crate::pack::floors`]).
    #[test]
    fn the_exits_pass_gives_every_floor_in_every_mode() {
        for rules in Ruleset::ALL {
            let max = 10;
            let src = common::fixture(rules, max);
            let d = DatabaseDir::native(src, rules).unwrap();
            let lower: Vec<Option<Layer>> = (0..=max).map(|m| Some(d.open_layer::<ValuesKind>(m, true).unwrap())).collect();
            for n in 2..=max {
                let want = crate::pack::floors(rules, n, &|c| lower[crate::rules::stones(c) as usize].as_ref().unwrap().get(crate::index::rank(c)?)).unwrap();
                let size = layer_size(n);
                let parts = OutOfCoreLimits {
                    part_len: crate::solver::CHUNK,
                    parts: size.div_ceil(crate::solver::CHUNK),
                    lookup_bytes: 4096,
                    lower_window: 8192,
                    message_bytes: 4096,
                };
                for mode in [Mode::InMemory { list_bytes: 0 }, Mode::Streamed { list_bytes: 0 }, Mode::OutOfCore { limits: parts }] {
                    let (work, scratch) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
                    // The floors in a scratch file, as `oware pack` keeps them within a limit,
                    // its pages given back as the pass asks (and counted).
                    let mut buffers = crate::pack::PackBuffers::new(n, Some(scratch.path())).unwrap();
                    let (got, _, pages) = buffers.split();
                    let given_back = std::sync::Mutex::new(vec![0u8; size as usize]);
                    let release = |r: Range<u64>| {
                        assert!(r.start <= r.end && r.end <= size, "{rules} layer {n}: {r:?}");
                        given_back.lock().unwrap()[r.start as usize..r.end as usize].iter_mut().for_each(|c| *c = c.saturating_add(1));
                        pages.release(r);
                    };
                    layer_floors(rules, n, &lower[..n as usize], mode, work.path(), got, &release, &NoProgress).unwrap();
                    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
                        panic!("{rules} layer {n} {}: position {i} floor {} for {}", mode.name(), got[i], want[i]);
                    }
                    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0, "{rules} layer {n} {}: scratch left", mode.name());
                    // Streamed, each position's floor is given back once, behind the pass; out
                    // of core at least once; in memory never (nothing limits it).
                    let g = given_back.into_inner().unwrap();
                    let ok = match mode {
                        Mode::InMemory { .. } => g.iter().all(|&c| c == 0),
                        Mode::Streamed { .. } => g.iter().all(|&c| c == 1),
                        Mode::OutOfCore { .. } => g.iter().all(|&c| c >= 1),
                    };
                    assert!(ok, "{rules} layer {n} {}: pages given back {:?} times", mode.name(), g.iter().collect::<std::collections::BTreeSet<_>>());
                }
            }
        }
    }

    #[test]
    fn the_mode_follows_the_limit() {
        let n = 20;
        assert_eq!(floors_mode(n, None).name(), "in_memory");
        assert_eq!(floors_mode(n, Some(working_memory(n) + resident_lower(n))).name(), "in_memory");
        assert_eq!(floors_mode(n, Some(working_memory(n))).name(), "streamed");
        assert_eq!(floors_mode(n, Some(working_memory(n) - 1)).name(), "out_of_core");
    }
}
