//! What a caller chooses of a solve: in memory or out of core and within which limits
//! ([`OutOfCore`]), checkpoints, progress and the other options of [`super::solve_layer_with`]
//! ([`SolveOptions`]), and a rank's share of a distributed solve ([`Share`]).

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use super::cluster::Cluster;
use super::fused::FusedDepths;
use super::work::WorkModel;
use crate::solver::spill::Checkpoint;

/// Limits of an out-of-core solve: how much of each kind of data may be resident at once.
pub(crate) struct OutOfCore<'a> {
    /// Positions per part (rounded to a multiple of [`CHUNK`](super::CHUNK)); the part's state
    /// takes one byte per position.
    pub(crate) part_len: u64,
    /// Bytes of capture lookups collected before they are served (8 per lookup: the
    /// child's place in the lower layers and the parent's offset, packed in one word).
    pub(crate) lookup_bytes: u64,
    /// Bytes of the lower layers read between two releases of their pages.
    pub(crate) lower_window: u64,
    /// Bytes of messages buffered in memory in front of the bucket files, half of them for the
    /// files of seed lists (the thresholds' message buffers also use `lookup_bytes` and
    /// `lower_window`, which only the exits pass needs).
    pub(crate) message_bytes: u64,
    /// Directory for the scratch files (state and buckets).
    pub(crate) work_dir: &'a Path,
    /// Gives back the pages of bytes `range` of lower layer `m` (a file mapping).
    pub(crate) release_lower: &'a (dyn Fn(u32, Range<u64>) + Sync),
    /// Gives back the pages of bytes `range` of the output (a file mapping).
    pub(crate) release_out: &'a (dyn Fn(Range<u64>) + Sync),
}

/// Options of [`solve_layer_with`](super::solve_layer_with).
#[derive(Default)]
pub(crate) struct SolveOptions<'a> {
    /// Solve out of core within these limits (`None`: the whole state in memory).
    pub(crate) out_of_core: Option<OutOfCore<'a>>,
    /// Save progress here at phase boundaries, and resume from it when it is valid.
    pub(crate) checkpoint: Option<&'a Checkpoint>,
    /// Least time between two checkpoints. When it is not zero, the interval also grows to
    /// [`CHECKPOINT_COST_RATIO`](super::driver::CHECKPOINT_COST_RATIO) times what the last save
    /// took, so that saving a large state costs at most about a tenth of the solve. Zero: at
    /// every phase boundary (for tests).
    pub(crate) checkpoint_every: Duration,
    /// Called after every checkpoint is saved (the build records its run's time there, so that
    /// a run killed outright still counts the time its checkpoint kept).
    pub(crate) saved: Option<&'a (dyn Fn() + Sync)>,
    /// Receives messages for the user (a checkpoint resumed or discarded).
    pub(crate) note: Option<&'a (dyn Fn(&str) + Sync)>,
    /// How progress is counted (`None`: [`WorkModel::new`] without expectations).
    pub(crate) work: Option<&'a WorkModel>,
    /// In memory: gives back the pages of bytes `range` of lower layer `m` (a file mapping)
    /// once they are copied into the solver's own memory (`None`: the pages stay mapped).
    pub(crate) release_lower: Option<&'a (dyn Fn(u32, Range<u64>) + Sync)>,
    /// With [`stream_lower`](Self::stream_lower): gives back the pages of bytes `range` of the
    /// output (a file mapping) behind the streamed exits pass (`None`: they stay mapped; the
    /// floors of `oware pack` give them back, an exits-only pass writing nothing after).
    pub(crate) release_out: Option<&'a (dyn Fn(Range<u64>) + Sync)>,
    /// In memory, one process: read the lower layers in order, none resident, in the exits pass
    /// (the streamed exits pass; the pass then takes no checkpoint of its own); else copy the
    /// ones a capture reaches into memory first when they fit (the direct exits pass).
    pub(crate) stream_lower: bool,
    /// The output outlives the process (a file a later run reopens with its contents), so
    /// checkpoints need not hold the best exits parked in it: they hold the cells and the exits'
    /// hash, half the size. A resumed solve checks the hash.
    pub(crate) exits_kept: bool,
    /// In memory, one part: propagate every threshold level by level (the same bytes; the
    /// level census of `scripts/bench-levels`, traced through the progress's
    /// [`trace`](crate::progress::Progress::trace)). Depths to capture propagate so anyway.
    pub(crate) levels: bool,
    /// In memory: bytes the thresholds' seed lists may take (four per entry; `None`: an eighth
    /// of the positions' entries, half a byte per position).
    pub(crate) list_bytes: Option<u64>,
    /// Also record every position's depth to capture here ([`FusedDepths`]): the thresholds
    /// then propagate level by level. Only a solve in memory, in one part, of one process, not
    /// resumed from a checkpoint, records them ([`FusedDepths::complete`] says whether it did).
    pub(crate) depths: Option<&'a FusedDepths>,
    /// Stop after the exits pass: `out` then holds every position's best exit as an `i8` (its
    /// floor, [`crate::pack::floor`]: the best value of a capture or a move that ends the game,
    /// the value of a game over, `i8::MIN` for none) instead of its value. What `oware pack`
    /// reads the lower layers with, within a memory limit (`builder::layer_floors`).
    pub(crate) exits_only: bool,
}

/// What a rank needs besides [`SolveOptions`] for its share of a distributed solve.
pub(crate) struct Share<'a> {
    /// The ranks and their transport.
    pub(crate) cluster: &'a dyn Cluster,
    /// This rank's own scratch directory (outbox buckets; out of core also the state and the
    /// parts' buckets). Ranks must not share one.
    pub(crate) work_dir: &'a Path,
    /// Bytes of messages for other ranks buffered in memory before they go to bucket files.
    pub(crate) outbox_bytes: u64,
    /// Capture lookups a rank collects before an exchange of the exits pass.
    pub(crate) lookups: u64,
}
