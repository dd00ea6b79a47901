//! Verification of a whole database directory: the policy behind `oware verify`, the Python
//! `oware.verify` and the C `oware_verify`.
//!
//! [`verify_directory`] decides which layers to check (a range, or every layer on disk), opens
//! each one (header and payload checksum for the native format, the size for the published 2002
//! format), re-derives the values of the layers asked for with `verify_values`,
//! checks the forced-capture bounds and the depths to capture present (or all, when required)
//! with `crate::verify::verify_companion`, the published facts with `check_facts` and a
//! pack directory's `SHA256SUMS` with [`manifest::check`](super::manifest::check). It returns a
//! [`DirectoryReport`]: plain data, with a one-line summary and an [`Finding`] saying which class
//! of problem dominates (its types are in [`super::report`], re-exported by [`crate::verify`]).
//!
//! Precedence of the outcome (the exit status of `oware verify`):
//! 1. wrong values: some value, bounds entry or depth to capture does not follow from its
//!    children, or a published fact is contradicted ([`Error::VerifyFailed`], 8);
//! 2. otherwise a damaged, foreign or unreadable layer file (the first one's error: 5, 6 or 7);
//! 3. otherwise a damaged bounds file (likewise), then a damaged dtc file (likewise: a depth
//!    that contradicts its value, or a malformed table of escaped depths, is damage, 5);
//! 4. otherwise a pack manifest that does not match the files (5, or 7 when unreadable);
//! 5. otherwise a missing layer (4), then missing bounds when they were required (4), then
//!    missing depths to capture when they were required (4).

use std::ops::RangeInclusive;
use std::time::Instant;

use super::companion_walk;
use super::facts::check_facts;
use super::manifest;
use super::options::{VerifyObserver, VerifyOptions};
pub(super) use super::report::{DirectoryReport, LayerEntry, LayerStatus, ManifestCheck};
use crate::error::{Error, FileContent, Result};
use crate::storage::{DatabaseDir, Format, Layer, ValuesKind};
use crate::verify::{layers_needed, marks_bytes, verify_within};

/// The layers [`verify_directory`] re-derives: `options.layers`, or every layer from 0 to the
/// highest on disk; `None` when no range is given and nothing is on disk.
///
/// Cost: up to 49 `stat`s.
pub(crate) fn layers_to_verify(dir: &DatabaseDir, options: &VerifyOptions) -> Option<RangeInclusive<u32>> {
    match &options.layers {
        Some(r) => Some(r.clone()),
        None => dir.layers_on_disk().last().map(|&last| 0..=last),
    }
}

/// Verifies the database directory `dir` as `options` ask and reports everything found; see
/// the module documentation for what is checked and the outcome's precedence. Problems in the
/// files are in the report, never errors. Parallel work runs on the current rayon pool (call it
/// inside `ThreadPool::install` to choose the threads).
///
/// Parameters: `dir`, the directory (format and ruleset); `options`, the layers and whether
/// bounds and depths to capture are required; `observer`, told of each stage as it happens (use [`NoObserver`](super::NoObserver) when
/// nothing is to be shown).
///
/// Cost: opening and checksumming every layer of the range and the layers below it that it
/// reads, a full re-derivation of each layer in the range (one move generation per position, in
/// parallel), the same for every bounds and dtc file checked, and one SHA-256 pass over each pack file
/// listed in the manifest. Memory: every layer up to the range's end stays mapped (packs are
/// decoded into memory).
///
/// # Errors
/// [`DatabaseDir::missing`] of layer 0's values when no range is given and no layer is on disk
/// (before the observer's `start`); [`Error::Interrupted`] when the observer's progress cancels;
/// whatever an observer method returns; [`Error::Usage`] for a range beyond layer 48.
pub fn verify_directory(dir: &DatabaseDir, options: &VerifyOptions, observer: &mut dyn VerifyObserver) -> Result<DirectoryReport> {
    let Some(range) = layers_to_verify(dir, options) else { return Err(dir.missing::<ValuesKind>(0)) };
    let (first, last) = (*range.start(), *range.end());
    if last > crate::index::MAX_STONES || first > last {
        return Err(Error::Usage(format!("layers {first}..{last}: give a range within 0..{}", crate::index::MAX_STONES)));
    }
    let (rules, format) = (dir.rules(), dir.format());
    observer.start(first, last);

    // A pack directory's manifest: every listed file of this ruleset has its SHA-256.
    let manifest = match format {
        Format::Native => {
            let path = dir.base().join(manifest::MANIFEST);
            let progress = observer.manifest_progress();
            let result = manifest::check(dir.base(), rules, progress.as_ref());
            drop(progress);
            match result {
                // A directory of packs without a manifest: said, not a failure.
                Ok(None) if manifest::has_packs(dir.base(), rules) => Some(ManifestCheck { path, present: false, files_matched: 0, error: None }),
                Ok(None) => None,
                Ok(Some(c)) => Some(ManifestCheck { path, present: true, files_matched: c.matched.len(), error: None }),
                Err(Error::Interrupted) => return Err(Error::Interrupted),
                Err(e) => Some(ManifestCheck { path, present: true, files_matched: 0, error: Some(e) }),
            }
        }
        Format::Vu => None,
    };
    if let Some(m) = &manifest {
        observer.manifest(m)?;
    }

    // The gap `build --for` leaves (the one absent layer, right below the highest one) is not
    // needed by any layer present (layer B reads 0..=B-2): not a problem when the range goes
    // past it.
    let gap = dir.gap().filter(|&g| g >= first && g < last);
    let start = Instant::now();
    let mut layers: Vec<Option<Layer>> = Vec::new();
    let mut entries: Vec<LayerEntry> = Vec::new();
    for n in 0..=last {
        if n < first && n + 2 > last {
            // Below the range and read by none of its layers (layer B reads 0..=B-2): skipped.
            layers.push(None);
            continue;
        }
        let status = match dir.open_layer::<ValuesKind>(n, true) {
            Err(Error::LayerMissing { .. } | Error::PublishedLayerMissing { .. }) if Some(n) == gap => {
                layers.push(None);
                LayerStatus::NotNeeded
            }
            Err(e @ (Error::LayerMissing { .. } | Error::PublishedLayerMissing { .. })) => {
                layers.push(None);
                LayerStatus::Missing(e)
            }
            Err(e) => {
                layers.push(None);
                LayerStatus::Damaged(e)
            }
            Ok(layer) => {
                let needs: Vec<u32> = layers_needed(n).filter(|&m| layers[m as usize].is_none()).collect();
                let status = if n < first {
                    LayerStatus::Dependency
                } else if !needs.is_empty() {
                    LayerStatus::Blocked { needs }
                } else {
                    let lower: Vec<&[i8]> = layers.iter().map(|l| l.as_ref().map(|l| l.values()).unwrap_or(&[])).collect();
                    let progress = observer.progress(n);
                    // A tenth of the memory is left for everything else.
                    let memory = options.max_memory.or_else(crate::sys::memory_available).unwrap_or(u64::MAX);
                    let budget = memory.saturating_sub(marks_bytes(n)) / 10 * 9;
                    let release = |m: u32| match layers.get(m as usize) {
                        Some(Some(l)) => l.release(0..l.values().len() as u64),
                        _ if m == n => layer.release(0..layer.values().len() as u64),
                        _ => {}
                    };
                    let result = verify_within(rules, n, layer.values(), &lower, budget, &release, progress.as_ref());
                    drop(progress);
                    LayerStatus::Checked(result?)
                };
                layers.push(Some(layer));
                status
            }
        };
        let entry = LayerEntry { layer: n, status };
        observer.layer(&entry, &entries)?;
        entries.push(entry);
    }

    // Forced-capture bounds: those present (all, when required), each entry against its
    // children's bounds and its value. Depths to capture: likewise, of the layers asked for,
    // each entry against its value and its moves (children's values, same-layer children's
    // depths).
    let mut companions = Vec::new();
    for &kind in FileContent::COMPANIONS {
        let walk = companion_walk(kind).ok_or_else(|| Error::Internal(format!("no check of the {} is registered", kind.what())))?;
        companions.extend(walk(dir, options, (first, last), gap, &layers, observer)?);
    }
    let seconds = start.elapsed().as_secs_f64();

    let values: Vec<Option<&[i8]>> = layers.iter().map(|l| l.as_ref().map(|l| l.values())).collect();
    let facts = check_facts(rules, &values);

    Ok(DirectoryReport::tallied(dir.clone(), (first, last), entries, facts, companions, manifest, seconds))
}
