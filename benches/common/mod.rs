//! What the benchmarks share: a small deterministic random number generator, so every variant of
//! a comparison is timed on the same inputs.

/// SplitMix64: deterministic, seedable, good enough to draw benchmark inputs.
pub struct Rng(pub u64);

impl Rng {
    /// A value in `0..n` (`n > 0`; the modulo bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}
