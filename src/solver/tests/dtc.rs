//! The dtc solver against a plain forward iteration of the definition ([`crate::solver::dtc`]).

use std::sync::atomic::AtomicU32;

use super::{as_i8, memory_layers};
use crate::index::{layer_size, rank_unchecked, unrank_unchecked};
use crate::progress::NoProgress;
use crate::rules::{Outcome, Ruleset};
use crate::solver::dtc::{depth_of, solve_dtc_share};

/// Depth to capture of every position of layer `n` by the solver: `None` for value 0.
pub(super) fn solver_dtc(rules: Ruleset, n: u32, layers: &[Vec<u8>]) -> Vec<Option<u16>> {
    let lower: Vec<&[i8]> = layers[..n as usize].iter().map(|l| as_i8(l)).collect();
    let values = as_i8(&layers[n as usize]);
    let cells: Vec<AtomicU32> = (0..layer_size(n)).map(|_| AtomicU32::new(0)).collect();
    solve_dtc_share(rules, n, values, &lower, &cells, 0..layer_size(n), None, &NoProgress).unwrap();
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

/// A dtc payload of layer `n` holding `depths` (escaped ones in the table).
fn payload_of(depths: &[Option<u16>]) -> Vec<u8> {
    use crate::dtc::{byte_of, record, DIRECT_MAX};
    let mut p: Vec<u8> = depths.iter().map(|&d| byte_of(d)).collect();
    let escaped: Vec<(u64, u16)> = depths.iter().enumerate().filter_map(|(i, d)| d.filter(|&d| d > DIRECT_MAX).map(|d| (i as u64, d))).collect();
    for &(i, d) in &escaped {
        p.extend_from_slice(&record(i, d).to_le_bytes());
    }
    p.extend_from_slice(&(escaped.len() as u64).to_le_bytes());
    p
}

#[test]
fn the_verifier_accepts_the_solver_dtc_and_finds_changed_depths() {
    use crate::dtc::DtcPayload;
    use crate::error::{Damage, Error};
    use crate::storage::DtcKind;
    use crate::verify::{verify_companion, MISMATCHES_KEPT};
    let rules = Ruleset::Awari;
    let path = std::path::Path::new("dtc-test.owdb");
    let layers = memory_layers(rules, 9);
    let lower: Vec<&[i8]> = layers.iter().map(|l| as_i8(l)).collect();
    for n in 0..=9 {
        let depths = solver_dtc(rules, n, layers);
        let bytes = payload_of(&depths);
        let r = verify_companion::<DtcKind>(rules, n, lower[n as usize], DtcPayload::new(n, &bytes).unwrap(), &lower, path, &NoProgress).unwrap();
        assert_eq!((r.layer, r.checked, r.mismatches), (n, layer_size(n), 0), "{rules} layer {n}: {:?}", r.first_mismatches);
        assert_eq!(r.greatest_depth, depths.iter().flatten().max().copied());
    }
    let n = 9;
    let values = lower[n as usize];
    let depths = solver_dtc(rules, n, layers);
    let check = |d: &[Option<u16>]| {
        let bytes = payload_of(d);
        verify_companion::<DtcKind>(rules, n, values, DtcPayload::new(n, &bytes).unwrap(), &lower, path, &NoProgress)
    };
    // One depth changed (and one made escaped): each is a mismatch, stored against derived.
    let i = (0..depths.len()).find(|&i| depths[i].is_some_and(|d| d > 2)).unwrap();
    for new in [depths[i].unwrap() + 1, depths[i].unwrap() - 1, 300] {
        let mut d = depths.clone();
        d[i] = Some(new);
        let r = check(&d).unwrap();
        assert!(r.mismatches >= 1 && !r.is_ok());
        let m = r.first_mismatches.iter().find(|m| m.index == i as u64).expect("the changed position is listed");
        assert_eq!((m.stored, m.derived, m.value, m.board), (Some(new), depths[i], values[i], unrank_unchecked(n, i as u64)));
    }
    // Every depth one too many: at least every game over (depth 0) breaks its equation; the
    // list holds the first ones by index.
    let shifted: Vec<Option<u16>> = depths.iter().map(|d| d.map(|d| d + 1)).collect();
    let r = check(&shifted).unwrap();
    let shallow = depths.iter().flatten().filter(|&&d| d == 0).count() as u64;
    assert!(shallow > 0 && r.mismatches >= shallow && r.mismatches <= depths.iter().flatten().count() as u64, "{} of {shallow}", r.mismatches);
    assert_eq!(r.first_mismatches.len(), MISMATCHES_KEPT);
    assert!(r.first_mismatches.windows(2).all(|w| w[0].index < w[1].index));
    // A depth on a position of value 0, none on one of another value: damage, not a mismatch.
    let zero = (0..depths.len()).find(|&i| values[i] == 0).unwrap();
    let mut d = depths.clone();
    d[zero] = Some(3);
    match check(&d) {
        Err(Error::Corrupt { damage: Damage::DtcContradictsValue { index, dtc: Some(3), value: 0 }, .. }) => assert_eq!(index, zero as u64),
        other => panic!("{other:?}"),
    }
    let mut d = depths.clone();
    d[i] = None;
    assert!(matches!(check(&d), Err(Error::Corrupt { damage: Damage::DtcContradictsValue { dtc: None, .. }, .. })));
    // An escaped byte without its record: damage.
    let mut bytes = payload_of(&depths);
    bytes[i] = crate::dtc::ESCAPE;
    let r = verify_companion::<DtcKind>(rules, n, values, DtcPayload::new(n, &bytes).unwrap(), &lower, path, &NoProgress);
    assert!(matches!(r, Err(Error::Corrupt { damage: Damage::BadDtc { .. }, .. })), "{r:?}");
    // A missing lower layer of values is a usage error, not a panic.
    assert!(matches!(
        verify_companion::<DtcKind>(rules, n, values, DtcPayload::new(n, &payload_of(&depths)).unwrap(), &lower[..3], path, &NoProgress),
        Err(Error::Usage(_))
    ));
}

/// Depths of layer `n` computed by `ranks` thread ranks (tiny lookup batches and outboxes, so
/// that exchanges come in many steps and outboxes spill to files), each rank's share put in
/// place; and the bytes the ranks sent each other.
fn distributed_dtc(rules: Ruleset, n: u32, layers: &[Vec<u8>], ranks: usize, work: &std::path::Path) -> (Vec<Option<u16>>, u64) {
    use crate::solver::cluster::{Metered, Ownership, ThreadCluster};
    use crate::solver::dtc::solve_dtc_layer;
    use crate::solver::Share;
    use std::sync::atomic::Ordering::Relaxed;
    let lower: Vec<&[i8]> = layers[..n as usize].iter().map(|l| as_i8(l)).collect();
    let values = as_i8(&layers[n as usize]);
    let owners = Ownership::new(layer_size(n), ranks);
    let cluster = ThreadCluster::new(ranks);
    let whole = std::sync::Mutex::new(vec![None; layer_size(n) as usize]);
    let bytes = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for (c, r) in cluster.iter().zip(0..) {
            let (lower, whole, bytes) = (&lower, &whole, &bytes);
            s.spawn(move || {
                let dir = work.join(format!("rank-{r}"));
                std::fs::create_dir_all(&dir).unwrap();
                let metered = Metered::new(c);
                let share = Share { cluster: &metered, work_dir: &dir, outbox_bytes: 1 << 10, lookups: 1 << 12 };
                let own = owners.range(r);
                let counted = super::Counting::default();
                let result = solve_dtc_layer(rules, n, values, lower, own.clone(), Some(&share), None, &counted);
                if result.is_err() {
                    c.leave();
                }
                let depths = result.unwrap();
                assert_eq!(counted.0.load(Relaxed), crate::solver::dtc_work_units(own.end - own.start), "rank {r}: progress");
                let mut w = whole.lock().unwrap();
                for i in own {
                    w[i as usize] = depths.depth(i, values[i as usize]);
                }
                bytes.fetch_add(metered.traffic().bytes_sent, Relaxed);
                let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
                assert!(left.is_empty(), "rank {r} left scratch files: {left:?}");
            });
        }
    });
    (whole.into_inner().unwrap(), bytes.into_inner())
}

#[test]
fn distributed_dtc_is_the_one_process_dtc_on_every_ruleset() {
    let work = tempfile::tempdir().unwrap();
    for rules in Ruleset::ALL {
        let top = if rules == Ruleset::Awari { 13 } else { 10 };
        let layers = memory_layers(rules, top);
        for n in 0..=top {
            let one = solver_dtc(rules, n, layers);
            for ranks in [2, 3] {
                let (got, bytes) = distributed_dtc(rules, n, layers, ranks, work.path());
                assert!(got == one, "{rules} layer {n}, {ranks} ranks: differs from one process");
                if n >= 10 {
                    assert!(bytes > 0, "{rules} layer {n}: {ranks} ranks exchanged nothing");
                }
            }
        }
    }
}

/// The depths the values' own level-synchronous propagation records are the dtc pass's, on
/// every ruleset, and the values are unchanged; a solve that cannot record them (out of core)
/// says so.
#[test]
fn depths_recorded_by_the_values_propagation_are_the_dtc_pass_depths() {
    use crate::solver::{solve_layer_with, FusedDepths, OutOfCore, SolveOptions, CHUNK};
    for rules in Ruleset::ALL {
        let top = if rules == Ruleset::Awari { 13 } else { 10 };
        let layers = memory_layers(rules, top);
        for n in 0..=top {
            let lower: Vec<&[i8]> = layers[..n as usize].iter().map(|l| as_i8(l)).collect();
            let fused = FusedDepths::new(n).unwrap();
            let mut out = vec![0u8; layer_size(n) as usize];
            solve_layer_with(rules, n, &lower, &mut out, &NoProgress, &SolveOptions { depths: Some(&fused), ..Default::default() }).unwrap();
            assert!(out == layers[n as usize], "{rules} layer {n}: the values changed");
            assert!(fused.complete(), "{rules} layer {n}: depths not recorded");
            let pass = solver_dtc(rules, n, layers);
            for (i, want) in pass.iter().enumerate() {
                assert_eq!(
                    fused.depth(i as u64),
                    *want,
                    "{rules} layer {n} position {:?} (index {i}, value {})",
                    unrank_unchecked(n, i as u64),
                    layers[n as usize][i] as i8
                );
            }
        }
    }
    // Out of core the thresholds do not run level by level: no depths.
    let (rules, n) = (Ruleset::Awari, 11);
    let layers = memory_layers(rules, n);
    let lower: Vec<&[i8]> = layers[..n as usize].iter().map(|l| as_i8(l)).collect();
    let work = tempfile::tempdir().unwrap();
    let fused = FusedDepths::new(n).unwrap();
    let mut out = vec![0u8; layer_size(n) as usize];
    let ooc = OutOfCore {
        part_len: CHUNK,
        lookup_bytes: 1 << 16,
        lower_window: 1 << 16,
        message_bytes: 1 << 16,
        work_dir: work.path(),
        release_lower: &|_, _| {},
        release_out: &|_| {},
    };
    solve_layer_with(rules, n, &lower, &mut out, &NoProgress, &SolveOptions { out_of_core: Some(ooc), depths: Some(&fused), ..Default::default() }).unwrap();
    assert!(out == layers[n as usize] && !fused.complete());
}
