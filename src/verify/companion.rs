//! What checking the files beside the values shares, whatever their kind (forced-capture bounds,
//! depths to capture; [`Kind`]): the one entry [`verify_companion`], which checks its inputs and
//! walks every position of the layer in parallel, keeping the first mismatches; the walk of a
//! directory's files of one kind ([`verify_companions`]); and what the report says of each
//! layer's file, whatever its kind ([`CompanionEntry`], [`CompanionStatus`],
//! [`CompanionReport`]) and how it reads in the JSON document. What one position's check is
//! lives with its kind ([`super::bounds`], [`super::dtc`]: its [`Check`]).

use std::ops::Range;
use std::path::Path;

use rayon::prelude::*;

use super::options::{VerifyObserver, VerifyOptions};
use super::report::{CompanionEntry, CompanionReport, CompanionStatus};
use super::{layers_needed, CHUNK, MISMATCHES_KEPT};
use crate::error::{Error, Result};
use crate::index::{chunks, layer_size, LayerWalker, MAX_STONES};
use crate::progress::Progress;
use crate::rules::{Board, Ruleset};
use crate::storage::{DatabaseDir, Format, Kind, Layer, LayerState};

/// How the verifier checks one kind of file beside the values ([`crate::storage::BoundsKind`],
/// [`crate::storage::DtcKind`]): the one trait of the verifier's seam.
pub(crate) trait Check: Kind {
    /// The report of one layer's check.
    type Report: Into<CompanionReport>;
    /// A layer's payload as the check reads it: its bytes (bounds), split into its parts
    /// (depths to capture).
    type Payload<'a>: Copy;
    /// What the check reads of the smaller layers: the bytes of their bounds (bounds are
    /// [`CHAINED`](Kind::CHAINED)), or their values (depths to capture).
    type Lower: Sync + 'static;

    /// The payload of an opened file.
    fn payload(file: &Layer<Self>) -> Self::Payload<'_>;

    /// The length of `this`, and the length layer `n`'s payload must have.
    fn lengths(this: Self::Payload<'_>, n: u32) -> (u64, u64);
    /// The length what the check reads of layer `m` below must have.
    fn lower_len(m: u32) -> u64;
    /// The error text for layer `m`'s [`Lower`](Self::Lower) missing when checking layer `n`.
    fn lower_missing(n: u32, m: u32) -> String;

    /// What the check of a larger layer reads of layer `m`, from its `values` or its own
    /// opened file of this kind (`None` when that is missing or damaged).
    fn lower<'a>(values: Option<&'a Layer>, own: Option<&'a Layer<Self>>) -> Option<&'a [Self::Lower]>;

    /// Checks every position of a layer (the inputs' lengths checked): see
    /// [`verify_companion`].
    ///
    /// # Errors
    /// As [`verify_companion`].
    fn check(inputs: &Inputs<'_, Self>, progress: &dyn Progress) -> Result<Self::Report>;
}

/// Checks every entry of layer `n`'s file of kind `K` against its moves: forced-capture bounds
/// against the two equations of [`crate::bounds`] over the children's stored bounds and
/// against the position's value; depths to capture first against the values
/// ([`crate::dtc::tally`]), then against the definition of [`crate::dtc`] over the children's
/// stored values and the same-layer children's stored depths.
///
/// Parameters: `values`, layer `n`'s values; `this`, its payload of kind `K`; `lower[m]`, for
/// every `m` in [`layers_needed`]`(n)`, what `K` reads of layer `m` (its bounds payload, or its
/// values: a capture ends the count of a depth); `path`, the file's (named in a damage);
/// `progress`, told of every position checked.
///
/// The equations hold for every fixed point of the bounds, not only the least one the builder
/// computes (the builder's result is the least by construction, and compared with a plain
/// iteration in the tests); those of the depths have only one solution in finite numbers. Odd
/// bytes anywhere are mismatches or damage, never a panic. The result does not depend on the
/// number of threads.
///
/// Cost: one move generation and up to six random reads of child entries or values per position
/// (depths: up to six of each), in parallel on the current rayon pool over index chunks;
/// depths first take one pass over the values and the payload.
///
/// # Errors
/// [`Error::Usage`] when `n > 48`, the values or the payload have the wrong length, or a needed
/// lower layer is not given; [`Error::Corrupt`] naming `path` when a payload of depths fails
/// the tally ([`Damage::DtcContradictsValue`](crate::error::Damage::DtcContradictsValue),
/// [`Damage::BadDtc`](crate::error::Damage::BadDtc)); [`Error::Interrupted`].
pub(crate) fn verify_companion<'a, K: Check>(
    rules: Ruleset,
    n: u32,
    values: &'a [i8],
    this: K::Payload<'a>,
    lower: &'a [&'a [K::Lower]],
    path: &'a Path,
    progress: &dyn Progress,
) -> Result<K::Report> {
    if n > MAX_STONES {
        return Err(Error::Usage(format!("layer {n} does not exist: at most {MAX_STONES} stones")));
    }
    let (len, expected) = K::lengths(this, n);
    if values.len() as u64 != layer_size(n) || len != expected {
        return Err(Error::Usage(format!("layer {n}: values or {} of the wrong length", K::CONTENT.what())));
    }
    for m in layers_needed(n) {
        if lower.get(m as usize).map(|l| l.len() as u64) != Some(K::lower_len(m)) {
            return Err(Error::Usage(K::lower_missing(n, m)));
        }
    }
    K::check(&Inputs { rules, n, values, this, lower, path }, progress)
}

/// What checking layer `n`'s file of kind `K` reads, its lengths checked (see
/// [`verify_companion`]).
pub(crate) struct Inputs<'a, K: Check> {
    /// The ruleset of the values.
    pub(crate) rules: Ruleset,
    /// The layer, at most 48.
    pub(crate) n: u32,
    /// Layer `n`'s values, in index order.
    pub(crate) values: &'a [i8],
    /// Its payload of kind `K`.
    pub(crate) this: K::Payload<'a>,
    /// What the check reads of each smaller layer `m` it needs ([`layers_needed`]`(n)`).
    pub(crate) lower: &'a [&'a [K::Lower]],
    /// The file's path, named in a damage.
    pub(crate) path: &'a Path,
}

/// What walking a layer's positions found: positions checked, mismatches, the first
/// [`MISMATCHES_KEPT`] of them in index order.
pub(super) struct Walked<M> {
    pub(super) checked: u64,
    pub(super) mismatches: u64,
    pub(super) first: Vec<M>,
}

/// Walks every position of layer `n` (at most 48) in parallel over index chunks, asking `check`
/// of each (its index and board) what is wrong with it, if anything; `progress` is told of
/// every position.
///
/// # Errors
/// [`Error::Interrupted`] when `progress` cancels; [`Error::Usage`] when the walk does not cover
/// the layer.
pub(super) fn check_positions<M: Send>(n: u32, progress: &dyn Progress, check: impl Fn(u64, Board) -> Option<M> + Sync) -> Result<Walked<M>> {
    let ranges: Vec<Range<u64>> = chunks(n, CHUNK).collect();
    let (checked, mismatches, first) = ranges
        .into_par_iter()
        .map(|r| {
            let len = r.end - r.start;
            let mut acc = (0u64, 0u64, Vec::new());
            if progress.cancelled() {
                return acc;
            }
            for (i, board) in LayerWalker::new(n, r).into_iter().flatten() {
                acc.0 += 1;
                if let Some(m) = check(i, board) {
                    acc.1 += 1;
                    if acc.2.len() < MISMATCHES_KEPT {
                        acc.2.push((i, m));
                    }
                }
            }
            progress.advance(len);
            acc
        })
        .reduce(|| (0, 0, Vec::new()), merge_tallies);
    if progress.cancelled() {
        return Err(Error::Interrupted);
    }
    let size = layer_size(n);
    if checked != size {
        return Err(Error::Usage(format!("layer {n}: walked {checked} of {size} positions")));
    }
    Ok(Walked { checked, mismatches, first: first.into_iter().map(|(_, m)| m).collect() })
}

/// Merges two chunks' tallies (positions checked, mismatches, the first mismatches found with
/// their indices): the counts add up and the [`MISMATCHES_KEPT`] mismatches of least index are
/// kept.
fn merge_tallies<M>(mut a: (u64, u64, Vec<(u64, M)>), b: (u64, u64, Vec<(u64, M)>)) -> (u64, u64, Vec<(u64, M)>) {
    a.0 += b.0;
    a.1 += b.1;
    a.2.extend(b.2);
    a.2.sort_by_key(|&(i, _)| i);
    a.2.truncate(MISMATCHES_KEPT);
    a
}

/// Checks the files of kind `K` of `dir` for layers `first..=last` (`layers[m]`: layer `m`'s
/// values, `None` when missing, damaged or not opened): those present, or all when `options`
/// require them, except the directory's `gap`. Below the range, the files a chained kind's
/// check reads are opened and checked (header, checksum), not checked entry by entry. Each
/// layer's entry is given to `observer` as it is done.
///
/// A file is checked entry by entry ([`verify_companion`]) when its layer is in the range and
/// its layer's values, and what its check reads of the layers below, are at hand; otherwise it
/// is [`CompanionStatus::Unchecked`]. A payload that contradicts the values is damage.
///
/// Cost: opening and checksumming each file; [`verify_companion`] for each file checked.
///
/// # Errors
/// [`Error::Interrupted`] when the observer's progress cancels; whatever an observer method
/// returns.
pub(super) fn verify_companions<K: Check>(
    dir: &DatabaseDir,
    options: &VerifyOptions,
    (first, last): (u32, u32),
    gap: Option<u32>,
    layers: &[Option<Layer>],
    observer: &mut dyn VerifyObserver,
) -> Result<Vec<CompanionEntry>> {
    let mut opened: Vec<Option<Layer<K>>> = Vec::new();
    let mut entries = Vec::new();
    for n in 0..=last {
        // Below the range, only a chained kind's files are read, those of the layers the range
        // reads (layer B reads 0..=B-2). Anything at the path is checked (a directory or a FIFO
        // there is unreadable, never skipped as absent).
        let read = n >= first || (K::CHAINED && n + 2 <= last);
        let present = !matches!(dir.file_state::<K>(n), LayerState::Absent);
        if !read || dir.format() != Format::Native || (!options.require.contains(&K::CONTENT) && !present) || Some(n) == gap {
            opened.push(None);
            continue;
        }
        let status = match dir.open_layer::<K>(n, true) {
            Err(e @ Error::CompanionMissing { .. }) => {
                opened.push(None);
                CompanionStatus::Missing(e)
            }
            Err(e) => {
                opened.push(None);
                CompanionStatus::Damaged(e)
            }
            Ok(file) => {
                let lower: Vec<Option<&[K::Lower]>> = (0..n as usize).map(|m| K::lower(layers[m].as_ref(), opened[m].as_ref())).collect();
                let lower_ok = layers_needed(n).all(|m| lower[m as usize].is_some());
                let status = match &layers[n as usize] {
                    Some(values) if n >= first && lower_ok => {
                        let lower: Vec<&[K::Lower]> = lower.iter().map(|l| l.unwrap_or(&[])).collect();
                        let progress = observer.progress(n);
                        let result = verify_companion::<K>(dir.rules(), n, values.values(), K::payload(&file), &lower, file.path(), progress.as_ref());
                        drop(progress);
                        match result {
                            Ok(r) => CompanionStatus::Checked(r.into()),
                            Err(e @ Error::Corrupt { .. }) => CompanionStatus::Damaged(e),
                            Err(e) => return Err(e),
                        }
                    }
                    _ => CompanionStatus::Unchecked,
                };
                // Only a chained kind's files are read again, by the larger layers' checks.
                opened.push(K::CHAINED.then_some(file));
                status
            }
        };
        let entry = CompanionEntry { kind: K::CONTENT, layer: n, status };
        observer.companion(&entry)?;
        entries.push(entry);
    }
    Ok(entries)
}
