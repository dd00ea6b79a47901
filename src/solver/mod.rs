//! The retrograde solver: the algorithm that computes one layer's values from the finished
//! smaller layers, in memory or out of core, in one process or among the ranks of a cluster.
//! Of files it knows only its own scratch files and checkpoints ([`spill`], which the build also uses to hold a layer's checkpoint); the build
//! pipeline ([`crate::builder`]) owns the layer files, the directories and the decision to
//! resume.
//!
//! | module | what it is |
//! |---|---|
//! | `driver` | the one per-layer driver: setup, checkpoints, the exits pass, the threshold rounds, the final write ([`solve_layer_with`], [`solve_share`]) |
//! | `options` | what a caller chooses of a solve: out of core and its limits, checkpoints, a rank's share ([`SolveOptions`], [`OutOfCore`], [`Share`]) |
//! | `pass` | what every way of running the exits pass shares: the pass's work and one position's exits |
//! | `exits` | the exits pass, with its ways of reading the lower layers (resident in memory, sorted out of core, exchanged among ranks) |
//! | `forward` | the forward loop: a layer's positions in index order, their children's entries read in prefetched batches, one loop for every kind of pass (`Forward`: the exits pass in memory, the bounds' exits pass, the depths' forward pass) |
//! | `streamed` | the exits pass that reads each lower layer once, in order, by the rows the captures sow |
//! | `state` | the cells and the hot loop: seeding, propagation to predecessors, routing of updates to other parts and ranks |
//! | `lookahead` | seeding by lists instead of scans: a threshold's scan gathers the seeds of the thresholds below |
//! | `work` | how a solve is counted for progress and estimates ([`WorkModel`]) |
//! | [`cluster`] | the seam to a distributed engine ([`cluster::Cluster`]; [`cluster::Solo`] is one process) |
//! | [`bounds`] | the forced-capture bounds of a layer, by the same kind of propagation |
//! | `fused` | the depths to capture recorded by the values' own propagation ([`FusedDepths`]) |
//! | `spill` | the scratch files of a solve out of core or over ranks (state on disk, message buckets in a compact codec) and the checkpoints |
//! | `dtc` | the depths to capture of a layer, a breadth-first pass over its finished values |

pub(crate) mod bounds;
pub(crate) mod cluster;
mod driver;
pub(crate) mod dtc;
mod exits;
mod forward;
mod fused;
mod lookahead;
mod options;
mod pass;
pub(crate) mod spill;
mod state;
mod streamed;
mod work;

#[cfg(test)]
mod tests;

pub(crate) use bounds::{bounds_work_units, bounds_working_memory, solve_bounds};
pub(crate) use cluster::EXCHANGE_STEP;
#[cfg(test)]
pub(crate) use driver::solve_layer;
pub(crate) use driver::{share_buffers, solve_layer_with, solve_share};
pub(crate) use dtc::{dtc_work_units, dtc_working_memory, solve_dtc_layer};
pub(crate) use fused::FusedDepths;
pub(crate) use options::{OutOfCore, Share, SolveOptions};
pub(crate) use state::CHUNK;
pub(crate) use work::{working_memory, WorkModel};
