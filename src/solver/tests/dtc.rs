//! The dtc solver against a plain forward iteration of the definition ([`crate::solver::dtc`]).

use std::sync::atomic::AtomicU32;

use super::{as_i8, memory_layers};
use crate::index::{layer_size, rank_unchecked, unrank_unchecked};
use crate::progress::NoProgress;
use crate::rules::{Outcome, Ruleset};
use crate::solver::dtc::{depth_of, solve_dtc};

/// Depth to capture of every position of layer `n` by the solver: `None` for value 0.
pub(super) fn solver_dtc(rules: Ruleset, n: u32, layers: &[Vec<u8>]) -> Vec<Option<u16>> {
    let lower: Vec<&[i8]> = layers[..n as usize].iter().map(|l| as_i8(l)).collect();
    let values = as_i8(&layers[n as usize]);
    let cells: Vec<AtomicU32> = (0..layer_size(n)).map(|_| AtomicU32::new(0)).collect();
    solve_dtc(rules, n, values, &lower, &cells, &NoProgress).unwrap();
    cells.iter().zip(values).map(|(c, &v)| (v != 0).then(|| depth_of(c.load(std::sync::atomic::Ordering::Relaxed)))).collect()
}

/// The definition iterated to its fixed point, from "unknown" everywhere: a win takes
/// 1 + the least known depth among its value-keeping moves as soon as one is known (exits: 0);
/// a loss 1 + the greatest once all are known. Sweeps until nothing changes; the least
/// solution, since every depth is set once, from depths set before it.
pub(super) fn reference_dtc(rules: Ruleset, n: u32, layers: &[Vec<u8>]) -> Vec<Option<u16>> {
    let values = as_i8(&layers[n as usize]);
    let size = layer_size(n) as usize;
    let mut dtc: Vec<Option<u16>> = vec![None; size];
    let moves: Vec<_> = (0..size).map(|i| rules.moves(&unrank_unchecked(n, i as u64))).collect();
    for i in 0..size {
        if values[i] != 0 && moves[i].ending().is_some() {
            dtc[i] = Some(0);
        }
    }
    loop {
        let mut changed = false;
        let snapshot = dtc.clone();
        for i in 0..size {
            let v = values[i];
            if v == 0 || snapshot[i].is_some() {
                continue;
            }
            // Each value-keeping move's depth: Some(known) or None (not yet known).
            let mut keeping: Vec<Option<u16>> = Vec::new();
            for m in moves[i].as_slice() {
                match m.outcome {
                    Outcome::End { value } if value == v => keeping.push(Some(0)),
                    Outcome::End { .. } => {}
                    Outcome::Child { captured: 0, child } => {
                        let j = rank_unchecked(&child) as usize;
                        if -values[j] == v {
                            keeping.push(snapshot[j]);
                        }
                    }
                    Outcome::Child { captured, child } => {
                        let w = layers[(n - u32::from(captured)) as usize][rank_unchecked(&child) as usize] as i8;
                        if captured as i8 - w == v {
                            keeping.push(Some(0));
                        }
                    }
                }
            }
            assert!(!keeping.is_empty(), "no move keeps the value of position {i} of layer {n}");
            let d = if v > 0 {
                keeping.iter().flatten().min().copied()
            } else if keeping.iter().all(Option::is_some) {
                keeping.iter().flatten().max().copied()
            } else {
                None
            };
            if let Some(d) = d {
                dtc[i] = Some(d + 1);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    dtc
}

#[test]
fn dtc_equals_the_reference_on_layers_0_to_10_of_every_ruleset() {
    for rules in Ruleset::ALL {
        let layers = memory_layers(rules, 10);
        for n in 0..=10 {
            let fast = solver_dtc(rules, n, layers);
            let slow = reference_dtc(rules, n, layers);
            for (i, (f, s)) in fast.iter().zip(&slow).enumerate() {
                assert_eq!(f, s, "{rules} layer {n} position {:?} (index {i}, value {})", unrank_unchecked(n, i as u64), layers[n as usize][i] as i8);
            }
        }
    }
}

/// Prints the greatest depth per layer (`cargo test --release --lib dtc_maxima -- --ignored --nocapture`).
#[test]
#[ignore]
fn dtc_maxima() {
    let top: u32 = std::env::var("OWARE_DTC_TOP").ok().and_then(|s| s.parse().ok()).unwrap_or(16);
    for rules in [Ruleset::Awari] {
        let layers = memory_layers(rules, top);
        for n in 0..=top {
            let d = solver_dtc(rules, n, layers);
            let max = d.iter().flatten().max();
            let over = |t: u16| d.iter().flatten().filter(|&&x| x >= t).count();
            println!("{rules} {n}: max {max:?}, >=64: {}, >=128: {}, >=255: {}", over(64), over(128), over(255));
        }
    }
}
