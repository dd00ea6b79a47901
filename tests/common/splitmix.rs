//! SplitMix64, the seeded generator of the tests, the benchmarks and the examples: one file that
//! each includes (`mod splitmix;` in `tests/common/mod.rs`, `#[path = "../tests/common/splitmix.rs"]`
//! in `benches/` and `examples/`, `#[path = "../../../tests/common/splitmix.rs"]` in
//! `cli/tests/common/mod.rs`), so that their inputs are the same on every run without the `rand`
//! crate. The library's own (`oware::search`'s, for its keys) is not public.
//!
//! Not every includer uses every item.
#![allow(dead_code)]

/// The golden gamma: what each step adds to the state.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function: `z` mixed.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One step of splitmix64: `x` advanced by the golden gamma, then mixed.
pub fn splitmix(x: u64) -> u64 {
    mix(x.wrapping_add(GAMMA))
}

/// A SplitMix64 generator: its state, advanced by the golden gamma at each draw.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        mix(self.0)
    }

    /// A number in `0..n` (`n > 0`); the tiny modulo bias does not matter here.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
}
