//! The retrograde solver: the algorithm that computes one layer's values from the finished
//! smaller layers, in memory. It knows nothing of files, directories or resumption: the build
//! pipeline ([`crate::build`]) owns those and calls [`solve_layer`].

pub mod retro;

pub use retro::{solve_layer, work_units, working_memory};
