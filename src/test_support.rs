//! The integration tests' helpers (`tests/common/`: the reference move generator, the shared
//! fixtures, boards by brute force, the seeded generator), included by their path for the unit
//! tests that drive the crate's internals: one copy of each helper for both. The files name the
//! library `oware`, as the integration tests see it; `src/lib.rs` gives the crate that name in
//! its own tests. Unit tests use them as `use crate::test_support as common;`.

// Not every unit test uses every helper (the files' `pub use` lists are for the integration tests).
#[allow(unused_imports)]
#[path = "../tests/common/mod.rs"]
mod common;

pub(crate) use common::*;
