//! The solver's own tests, beside it because they drive its internals (options, checkpoints,
//! shares of a cluster): every other way of solving a layer against the in-memory solver.

mod bounds;
mod distributed;
mod dtc;
mod out_of_core;
mod reference;
mod solved;

use crate::progress::Progress;

pub(super) use solved::{as_i8, memory_layers};

/// Counts the work units a solve reports.
#[derive(Default)]
struct Counting(std::sync::atomic::AtomicU64);

impl Progress for Counting {
    fn advance(&self, units: u64) {
        self.0.fetch_add(units, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Counting {
    fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}
