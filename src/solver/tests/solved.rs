//! Layers solved in memory, as the reference other ways of solving are compared with (the
//! solver's unit tests, the bounds' and the verifier's).

use std::sync::Mutex;

use crate::index::layer_size;
use crate::progress::NoProgress;
use crate::rules::Ruleset;
use crate::solver::solve_layer;

/// The layers solved so far, per ruleset.
type Solved = Vec<(Ruleset, &'static [Vec<u8>])>;

/// Layers `0..=top` of `rules`, solved in memory: once per test binary and ruleset, shared by
/// every test that asks (read-only; layer `n` depends on layers `0..n` only, so a shorter list
/// is a prefix of a longer one).
pub(crate) fn memory_layers(rules: Ruleset, top: u32) -> &'static [Vec<u8>] {
    static SOLVED: Mutex<Solved> = Mutex::new(Vec::new());
    let mut all = SOLVED.lock().unwrap_or_else(|e| e.into_inner());
    let known: &[Vec<u8>] = all.iter().find(|(r, _)| *r == rules).map(|(_, l)| *l).unwrap_or(&[]);
    if known.len() > top as usize {
        return &known[..=top as usize];
    }
    let mut layers: Vec<Vec<u8>> = known.to_vec();
    for n in known.len() as u32..=top {
        let lower: Vec<&[i8]> = layers.iter().map(|l| as_i8(l)).collect();
        let mut out = vec![0u8; layer_size(n) as usize];
        solve_layer(rules, n, &lower, &mut out, &NoProgress).unwrap();
        layers.push(out);
    }
    let layers: &'static [Vec<u8>] = Vec::leak(layers);
    all.retain(|(r, _)| *r != rules);
    all.push((rules, layers));
    layers
}

/// A layer's bytes as values.
pub(crate) fn as_i8(b: &[u8]) -> &[i8] {
    // SAFETY: same size and alignment, every bit pattern valid.
    unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<i8>(), b.len()) }
}
