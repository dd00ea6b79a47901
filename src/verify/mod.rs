//! The verifier: re-derives stored values from their children with the forward move generator.
//! (The published facts are checked by `check_facts`.)
//!
//! This code shares nothing with the builder's propagation: for every position it generates the
//! legal moves, reads each child's stored value (same layer or a smaller one) and checks that the
//! stored value is the best move's value, `max(captured - v(child), ending values)`. Any single
//! altered byte breaks this equation at its own position, so it is always found.
//!
//! What this check cannot see: values that are consistent with their children yet wrong as a
//! whole (a cycle of positions all claiming a win that can never be forced). Only a wrong solver
//! could produce those; the solver is cross-checked against a plain forward fixed-point iteration
//! on every position of layers 0..10 under every ruleset in the test suite. The facts of
//! `check_facts` (published values) are an independent check of exactly that kind of error.
//!
//! Entry points (inside the crate but [`verify_directory`], which runs them all):
//! - `derive_value`: one position, used by the builder's spot check (trusted inputs);
//! - `verify_values`: every position of a layer, in parallel, on values read from files
//!   (untrusted inputs: nothing here panics on odd bytes);
//! - `verify_companion`: every entry of a layer's file beside its values, of either kind
//!   (forced-capture bounds, depths to capture), against its children (through
//!   [`verify_directory`]);
//! - `check_facts`: the published facts against whatever layers are present.
//!
//! | module | what it is |
//! |---|---|
//! | `values` | re-deriving the values: `verify_values`, [`LayerReport`] |
//! | `companion` | what checking the files beside the values shares: `verify_companion` and the one trait of a kind's check, `Check` |
//! | `bounds` | forced-capture bounds: one position's derivation, the check of an entry, [`BoundsReport`] |
//! | `dtc` | depths to capture: one position's derivation, the check of a depth, [`DtcReport`] |
//! | `moves` | the tests' own kind (each position's number of moves): its tag, its storage and its check, in its one file |
//! | `facts` | the published facts (layer sizes, a position's value and its moves') checked against whatever layers are present: `check_facts` |
//! | [`manifest`] | the `SHA256SUMS` of a pack directory: written by `oware pack`, checked here |
//! | `grouped` | re-deriving a layer whose files do not fit in memory together, in passes over groups of them: `verify_within`, `source_groups` |
//! | `directory` | a whole directory: [`verify_directory`] |
//! | `options` | what a caller chooses and sees of it: [`VerifyOptions`], [`VerifyObserver`] |
//! | `report` | what a directory's verification found: [`DirectoryReport`], [`Finding`], and of each file beside the values, whatever its kind, [`CompanionEntry`], [`CompanionStatus`], [`CompanionReport`] |

mod bounds;
mod companion;
mod directory;
mod dtc;
mod facts;
mod grouped;
pub mod manifest;
#[cfg(test)]
pub(crate) mod moves;
mod options;
mod report;
mod values;

pub(crate) use bounds::derive_bounds;
pub use bounds::{BoundsMismatch, BoundsReport};
// The solver's tests check its depths to capture with the verifier's entry.
#[cfg(test)]
pub(crate) use companion::verify_companion;
pub use directory::verify_directory;
pub(crate) use dtc::{derive_dtc, dtc_damage};
pub use dtc::{DtcMismatch, DtcReport};
#[cfg(test)]
use facts::check_facts;
pub use facts::{FactReport, FactStatus};
pub(crate) use grouped::{marks_bytes, verify_within};
pub use options::{NoObserver, VerifyObserver, VerifyOptions};
pub use report::{
    CompanionEntry, CompanionReport, CompanionStatus, DirectoryReport, EntriesReport, EntryMismatch, Finding, LayerEntry, LayerStatus, ManifestCheck,
};
pub(crate) use values::{derive_value, verify_values};
pub use values::{LayerReport, Mismatch};

use std::ops::Range;

use crate::error::{FileContent, Result};
use crate::storage::{BoundsKind, DatabaseDir, DtcKind, Layer};

/// The walk of a directory's files of one kind beside the values ([`companion::verify_companions`]
/// of the kind's [`Check`](companion::Check)): the directory, the options, the range, the gap, the
/// values opened, the observer.
type CompanionWalk = fn(&DatabaseDir, &VerifyOptions, (u32, u32), Option<u32>, &[Option<Layer>], &mut dyn VerifyObserver) -> Result<Vec<CompanionEntry>>;

/// The verifier's registry of the kinds beside the values: each kind's walk, the one place that
/// names the kinds' checks (a kind added is its module above and its line here).
fn companion_walk(kind: FileContent) -> Option<CompanionWalk> {
    use companion::verify_companions;
    Some(match kind {
        FileContent::Bounds => verify_companions::<BoundsKind>,
        FileContent::Dtc => verify_companions::<DtcKind>,
        #[cfg(test)]
        FileContent::Moves => verify_companions::<moves::MovesKind>,
        _ => return None,
    })
}

/// How many mismatches a report keeps ([`LayerReport`], [`BoundsReport`], [`DtcReport`]): the
/// ones with the smallest indices.
pub const MISMATCHES_KEPT: usize = 10;

/// Positions per parallel work item of `verify_values` and `verify_companion`.
const CHUNK: u64 = 1 << 16;

/// The layers whose values re-deriving layer `n` reads besides its own: `0..=n-2`.
///
/// A capture takes whole pits holding 2 or 3 stones (the spare options leave out a whole pit), so
/// a move captures either nothing or at least 2 stones under every ruleset: layer `n - 1` is never
/// reached from layer `n`. A damaged or missing layer `n - 1` therefore does not prevent
/// verifying layer `n`.
pub(crate) fn layers_needed(n: u32) -> Range<u32> {
    0..n.saturating_sub(1)
}

#[cfg(test)]
mod tests;
