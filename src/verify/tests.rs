//! The verifier as a library: every changed value is found in memory, built layers verify and
//! the published facts they cover pass, and the directory policy (`verify_directory`) reports its
//! entries, outcome and precedence. (`oware verify` on built
//! and damaged databases is the program's tests: `cli/tests/suite/verify_cli.rs`.)

use crate::test_support as common;

use common::copy_fixture;

use crate::index::layer_size;
use crate::progress::NoProgress;
use crate::storage::{native_path, DatabaseDir, Layer, ValuesKind};
use crate::verify::{derive_value, verify_values, MISMATCHES_KEPT};
use crate::Ruleset;

#[test]
fn any_changed_value_is_found_in_memory() {
    // Change single values of layer 8 in a copy: each change is a mismatch, and every reported
    // mismatch is real (checked with the builder's own derivation on the altered copy).
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_fixture(Ruleset::Awari, 8, dir);
    let layers: Vec<Layer> = (0..=8).map(|m| DatabaseDir::native(dir, Ruleset::Awari).unwrap().open_layer(m, true).unwrap()).collect();
    let lower: Vec<&[i8]> = layers.iter().map(|l| l.values()).collect();
    let size = layer_size(8);
    for k in 0..12u64 {
        let i = (k * 6_271 + 13) % size;
        let mut copy = layers[8].values().to_vec();
        copy[i as usize] = if copy[i as usize] == 8 { -8 } else { 8 };
        let r = verify_values(Ruleset::Awari, 8, &copy, &lower[..8], &NoProgress).unwrap();
        assert!(r.mismatches >= 1, "change at {i} not found");
        if r.mismatches as usize <= MISMATCHES_KEPT {
            assert!(r.first_mismatches.iter().any(|m| m.index == i), "change at {i} not listed: {:?}", r.first_mismatches);
        }
        for m in &r.first_mismatches {
            let d = derive_value(Ruleset::Awari, 8, &m.board, &copy, &lower[..8]);
            assert_eq!(i16::from(d), m.derived);
            assert_ne!(d, m.stored);
            assert_eq!(copy[m.index as usize], m.stored);
        }
    }
    // A value outside -n..n is reported as such.
    let mut copy = layers[8].values().to_vec();
    copy[0] = 100;
    let r = verify_values(Ruleset::Awari, 8, &copy, &lower[..8], &NoProgress).unwrap();
    assert!(r.first_mismatches.iter().any(|m| m.index == 0 && m.out_of_range(8)));
}

/// The directory policy as a library call: the report's entries, summary and outcome, the
/// outcome's precedence (damage over missing layers), the error it stands for, the JSON, the
/// observer's calls and cancellation.
#[test]
fn verify_directory_reports_entries_outcome_and_precedence() {
    use crate::error::FileContent;
    use crate::progress::Progress;
    use crate::storage::DatabaseDir;
    use crate::verify::{verify_directory, CompanionEntry, Finding, LayerEntry, LayerStatus, NoObserver, VerifyObserver, VerifyOptions};

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    common::build(Ruleset::Awari, 8, dir);
    let db = DatabaseDir::native(dir, Ruleset::Awari).unwrap();

    let r = verify_directory(&db, &VerifyOptions::default(), &mut NoObserver).unwrap();
    assert_eq!((r.outcome, r.exit_code(), r.ok), (Finding::Ok, 0, true));
    assert_eq!(r.layers_requested, (0, 8));
    assert_eq!(r.positions_checked, (0..=8).map(layer_size).sum::<u64>());
    assert!(r.layers.iter().all(|e| e.status_name() == "ok") && r.companions.is_empty() && r.manifest.is_none());
    assert!(r.summary.starts_with("OK: layers 0..8 of awari"), "{}", r.summary);
    let doc: serde_json::Value = serde_json::from_str(&r.to_json().unwrap()).unwrap();
    assert_eq!((doc["outcome"].as_str(), doc["exit_code"].as_i64(), doc["ok"].as_bool()), (Some("ok"), Some(0), Some(true)));
    assert!(r.into_error().is_none());

    // A range: the layers below it that it reads are dependencies.
    let r = verify_directory(&db, &VerifyOptions { layers: Some(7..=8), require: vec![], max_memory: None }, &mut NoObserver).unwrap();
    assert_eq!(r.layers_in(crate::error::FileContent::Values, "dependency"), (0..=6).collect::<Vec<u32>>());
    // Bounds required but never built: missing bounds, the last class.
    let r = verify_directory(&db, &VerifyOptions { layers: None, require: vec![FileContent::Bounds], max_memory: None }, &mut NoObserver).unwrap();
    assert_eq!((r.outcome, r.exit_code()), (Finding::Missing(crate::error::FileContent::Bounds), 4));
    assert!(matches!(r.into_error(), Some(crate::Error::CompanionMissing { kind: crate::error::FileContent::Bounds, layer: 0, .. })));
    // Depths to capture required but never built: missing dtc (of the layers asked for), after
    // missing bounds.
    let r = verify_directory(&db, &VerifyOptions { layers: Some(7..=8), require: vec![FileContent::Dtc], max_memory: None }, &mut NoObserver).unwrap();
    assert_eq!(
        (r.outcome, r.exit_code(), r.layers_in(crate::error::FileContent::Dtc, "missing")),
        (Finding::Missing(crate::error::FileContent::Dtc), 4, vec![7, 8])
    );
    assert!(r.summary.contains("missing depths to capture of layers 7"), "{}", r.summary);
    assert!(matches!(r.into_error(), Some(crate::Error::CompanionMissing { kind: crate::error::FileContent::Dtc, layer: 7, .. })));
    let r = verify_directory(&db, &VerifyOptions { layers: None, require: vec![FileContent::Bounds, FileContent::Dtc], max_memory: None }, &mut NoObserver)
        .unwrap();
    assert_eq!((r.outcome, r.exit_code()), (Finding::Missing(crate::error::FileContent::Bounds), 4));

    // Layer 5 removed, layer 8's payload damaged: the damage dominates; layer 7 (reads 5) blocked.
    std::fs::remove_file(native_path::<ValuesKind>(dir, Ruleset::Awari, 5)).unwrap();
    let path = native_path::<ValuesKind>(dir, Ruleset::Awari, 8);
    let mut bytes = std::fs::read(&path).unwrap();
    let k = bytes.len() - 1;
    bytes[k] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    let r = verify_directory(&db, &VerifyOptions::default(), &mut NoObserver).unwrap();
    assert_eq!((r.outcome, r.exit_code(), r.ok), (Finding::Damaged(crate::error::FileContent::Values), 5, false));
    assert_eq!(
        (
            r.layers_in(crate::error::FileContent::Values, "missing"),
            r.layers_in(crate::error::FileContent::Values, "damaged"),
            r.layers_in(crate::error::FileContent::Values, "not-verified")
        ),
        (vec![5], vec![8], vec![7])
    );
    assert!(matches!(&r.layers[7].status, LayerStatus::Blocked { needs } if needs == &[5]));
    assert_eq!(r.summary, "FAILED: damaged or unreadable layer 8; missing layer 5; layer 7 not re-derived");
    assert!(matches!(r.into_error(), Some(crate::Error::Corrupt { .. })));
    // Without layer 8 in the range, the missing layer decides.
    let r = verify_directory(&db, &VerifyOptions { layers: Some(0..=6), require: vec![], max_memory: None }, &mut NoObserver).unwrap();
    assert_eq!((r.outcome, r.exit_code()), (Finding::Missing(crate::error::FileContent::Values), 4));
    assert!(matches!(r.into_error(), Some(crate::Error::LayerMissing { layer: 5, .. })));

    // The observer sees every stage in order; a cancelling progress stops with Interrupted.
    struct Log(Vec<String>, bool);
    struct Cancel;
    impl Progress for Cancel {
        fn cancelled(&self) -> bool {
            true
        }
    }
    impl VerifyObserver for Log {
        fn start(&mut self, first: u32, last: u32) {
            self.0.push(format!("start {first}..{last}"));
        }
        fn progress(&mut self, _n: u32) -> Box<dyn Progress> {
            if self.1 {
                Box::new(Cancel)
            } else {
                Box::new(NoProgress)
            }
        }
        fn layer(&mut self, e: &LayerEntry, earlier: &[LayerEntry]) -> crate::Result<()> {
            assert_eq!(earlier.len() as u32, e.layer);
            self.0.push(format!("layer {} {}", e.layer, e.status_name()));
            Ok(())
        }
        fn companion(&mut self, e: &CompanionEntry) -> crate::Result<()> {
            self.0.push(format!("{} {}", e.kind.name(), e.layer));
            Ok(())
        }
    }
    let mut log = Log(Vec::new(), false);
    verify_directory(&db, &VerifyOptions { layers: Some(0..=4), require: vec![], max_memory: None }, &mut log).unwrap();
    assert_eq!(log.0, ["start 0..4", "layer 0 ok", "layer 1 ok", "layer 2 ok", "layer 3 ok", "layer 4 ok"]);
    let mut log = Log(Vec::new(), true);
    assert!(matches!(verify_directory(&db, &VerifyOptions::default(), &mut log), Err(crate::Error::Interrupted)));
    // Nothing on disk: the missing layer 0, before the observer's start.
    let empty = tempfile::tempdir().unwrap();
    let mut log = Log(Vec::new(), false);
    let e = verify_directory(&DatabaseDir::native(empty.path(), Ruleset::Awari).unwrap(), &VerifyOptions::default(), &mut log).unwrap_err();
    assert!(matches!(e, crate::Error::LayerMissing { layer: 0, .. }) && log.0.is_empty());
}

/// Verifies every layer 0..=max with the library; returns the total positions checked.
fn verify_all(rules: Ruleset, max: u32, dir: &std::path::Path) -> u64 {
    let layers: Vec<Layer> = (0..=max).map(|n| DatabaseDir::native(dir, rules).unwrap().open_layer(n, true).expect("intact")).collect();
    let values: Vec<&[i8]> = layers.iter().map(|l| l.values()).collect();
    let mut total = 0;
    for n in 0..=max {
        let r = verify_values(rules, n, layers[n as usize].values(), &values[..n as usize], &NoProgress).expect("verify");
        assert_eq!(r.layer, n);
        assert_eq!(r.checked, layer_size(n));
        assert_eq!(r.mismatches, 0, "{rules} layer {n}: {:?}", r.first_mismatches);
        assert!(r.is_ok() && r.first_mismatches.is_empty());
        total += r.checked;
    }
    total
}

#[test]
fn built_databases_verify_and_the_facts_they_cover_pass() {
    use crate::rules::{Board, GrandSlam};
    use crate::verify::{check_facts, FactStatus};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_fixture(Ruleset::Awari, 10, dir);
    copy_fixture(Ruleset::Abapa(GrandSlam::NoCapture), 8, dir);
    let abapa = Ruleset::Abapa(GrandSlam::NoCapture);

    assert_eq!(verify_all(Ruleset::Awari, 10, dir), (0..=10).map(layer_size).sum::<u64>());
    assert_eq!(verify_all(abapa, 8, dir), (0..=8).map(layer_size).sum::<u64>());

    // Facts: what layers 0..10 cover passes, the rest is not checkable (with the reason).
    let layers: Vec<Layer> = (0..=10).map(|n| DatabaseDir::native(dir, Ruleset::Awari).unwrap().open_layer(n, true).unwrap()).collect();
    let values: Vec<Option<&[i8]>> = layers.iter().map(|l| Some(l.values())).collect();
    let facts = check_facts(Ruleset::Awari, &values);
    let status = |id: &str| facts.iter().find(|f| f.id == id).map(|f| (f.status, f.detail.clone())).unwrap();
    assert_eq!(status("layer-size-formula").0, FactStatus::Passed);
    assert_eq!(status("layer-entry-counts").0, FactStatus::Passed);
    assert!(status("layer-entry-counts").1.contains("644,826"), "{}", status("layer-entry-counts").1);
    assert_eq!(status("layer-1-values").0, FactStatus::Passed);
    let (st, why) = status("published-position");
    assert_eq!(st, FactStatus::NotCheckable);
    assert!(why.contains("layers 13, 16") && why.contains("0..16"), "{why}");
    assert!(facts.iter().any(|f| f.id == "published-position" && f.statement.contains("16 stones")));
    let (st, why) = status("start-position");
    assert_eq!(st, FactStatus::NotCheckable);
    assert!(why.contains("layer 48"), "{why}");

    // A wrong layer-1 value is a failed fact.
    let mut l1 = values[1].unwrap().to_vec();
    let mut lone: Board = [0; 12];
    lone[5] = 1;
    l1[crate::index::rank(&lone).unwrap() as usize] = 1;
    let mut altered = values.clone();
    altered[1] = Some(&l1);
    let f = check_facts(Ruleset::Awari, &altered);
    assert_eq!(f.iter().find(|f| f.id == "layer-1-values").unwrap().status, FactStatus::Failed);
}
