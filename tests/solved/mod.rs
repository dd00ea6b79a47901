//! Layers solved in memory, as the reference other ways of solving are compared with (test
//! files use it with `mod solved;`).

use oware::index::layer_size;
use oware::progress::NoProgress;
use oware::rules::Ruleset;
use oware::solver::solve_layer;

/// Layers `0..=top` of `rules`, solved in memory.
pub fn memory_layers(rules: Ruleset, top: u32) -> Vec<Vec<u8>> {
    let mut layers: Vec<Vec<u8>> = Vec::new();
    for n in 0..=top {
        let lower: Vec<&[i8]> = layers.iter().map(|l| as_i8(l)).collect();
        let mut out = vec![0u8; layer_size(n) as usize];
        solve_layer(rules, n, &lower, &mut out, &NoProgress).unwrap();
        layers.push(out);
    }
    layers
}

/// A layer's bytes as values.
pub fn as_i8(b: &[u8]) -> &[i8] {
    // SAFETY: same size and alignment, every bit pattern valid.
    unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<i8>(), b.len()) }
}
