//! The retrograde solver: the algorithm that computes one layer's values from the finished
//! smaller layers, in memory or out of core. Of files it knows only its own scratch files and
//! checkpoints ([`crate::spill`]); the build pipeline ([`crate::build`]) owns the layer files,
//! the directories and the decision to resume, and calls [`solve_layer_with`].

pub mod bounds;
pub mod cluster;
pub mod distributed;
pub mod retro;

pub use bounds::{bounds_work_units, bounds_working_memory, solve_bounds};
pub use distributed::{share_buffers, solve_share, Share};
pub use retro::{solve_layer, solve_layer_with, work_units, working_memory, OutOfCore, SolveOptions, WorkModel, CHUNK};
