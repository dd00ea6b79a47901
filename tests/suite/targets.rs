//! Only the layers a target needs (`BuildConfig::skip`, `for_stones`): no move of layer `n`
//! reaches layer `n - 1` under any ruleset, the plan of a target leaves that layer out, the
//! solver never reads it, and the bounds and depths of a target are those of a full build.
//! (`oware build --for` and every command on a directory with the gap are the program's tests:
//! `cli/tests/suite/build_for.rs`.)

use std::path::Path;

use oware::builder::{self, BuildConfig, LayerAction, Silent};
use oware::index::layer_size;
use oware::rules::{layer_not_needed, layers_needed, stones, Outcome, MIN_CAPTURE};
use oware::storage::DatabaseDir;
use oware::{Error, Ruleset};

use crate::common::{all_boards, random_board, SplitMix64};

/// Checks every move of `board` under `rules`: it captures nothing or at least
/// [`MIN_CAPTURE`] stones, and its child is in the parent's layer or 2 or more stones below.
fn check_moves(rules: Ruleset, board: &oware::Board) {
    let n = stones(board);
    for m in rules.moves(board).as_slice() {
        if let Outcome::Child { captured, child } = m.outcome {
            let c = stones(&child);
            assert_eq!(c + u32::from(captured), n, "{rules}: {board:?} pit {}", m.pit);
            assert!(captured == 0 || u32::from(captured) >= MIN_CAPTURE, "{rules}: {board:?} pit {} captures {captured}", m.pit);
            assert!(c == n || c + 2 <= n, "{rules}: {board:?} pit {} leads to layer {c} from layer {n}", m.pit);
        }
    }
}

#[test]
fn no_move_reaches_the_layer_below_under_any_ruleset() {
    // Every board of layers 0..=11 (rows of any shape, the opponent's full row included), under
    // every ruleset (grand slams of every option, feeding, eradication)...
    for rules in Ruleset::ALL {
        for n in 0..=11 {
            for b in all_boards(n) {
                check_moves(rules, &b);
            }
        }
    }
    // ...and random boards of every layer up to 48, shaped for chains and grand slams.
    let mut rng = SplitMix64(0x5eed_0f1a_7e00);
    for _ in 0..200_000 {
        let b = random_board(&mut rng);
        for rules in Ruleset::ALL {
            check_moves(rules, &b);
        }
    }
}

#[test]
fn the_layers_a_target_needs() {
    assert_eq!(layers_needed(0), vec![0]);
    assert_eq!(layers_needed(1), vec![0, 1]);
    assert_eq!(layers_needed(2), vec![0, 2]);
    assert_eq!(layers_needed(8), vec![0, 1, 2, 3, 4, 5, 6, 8]);
    assert_eq!(layers_needed(48).len(), 48);
    assert!(!layers_needed(48).contains(&47));
    assert_eq!((layer_not_needed(0), layer_not_needed(1), layer_not_needed(2), layer_not_needed(36)), (None, None, Some(1), Some(35)));
    let c = BuildConfig::default().for_stones(48);
    assert_eq!((c.max_stones, c.skip.as_slice()), (48, &[47][..]));
    assert!(c.wants(46) && !c.wants(47) && c.wants(48));
    assert!(BuildConfig::default().for_stones(1).skip.is_empty());
}

#[test]
fn a_layer_that_a_built_layer_needs_cannot_be_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let base = BuildConfig { max_stones: 8, dir: tmp.path().into(), ..Default::default() };
    for (skip, needed_by) in [
        (vec![6], "layer 8 needs it"),
        (vec![0], "layer 2 needs it"),
        (vec![7, 5], "layer 5 cannot be left out: layer 8 needs it"),
        (vec![9], "not one of them"),
    ] {
        let config = BuildConfig { skip: skip.clone(), ..base.clone() };
        match builder::propose(&config, 1) {
            Err(Error::Usage(m)) => assert!(m.contains(needed_by), "{skip:?}: {m}"),
            other => panic!("{skip:?}: {other:?}"),
        }
        assert!(matches!(builder::build(&config, &Silent), Err(Error::Usage(_))));
    }
    assert!(!tmp.path().join("awari").join("layer-00.owdb").exists(), "nothing is built");
    // The plan of a target: layer 7 skipped, with its reason, and no memory, disk or time.
    let plan = builder::propose(&base.clone().for_stones(8), 1).unwrap();
    assert_eq!(plan.layers.len(), 9);
    let seven = &plan.layers[7];
    assert!(matches!(&seven.action, LayerAction::Skip { reason } if reason.contains("not needed")), "{seven:?}");
    assert_eq!((seven.memory_bytes, seven.disk_bytes, seven.seconds_estimate), (0, 0, 0.0));
    assert_eq!(plan.to_build().map(|l| l.layer).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 5, 6, 8]);
    // No plan counts layer 7 in layer 8's memory (no capture reaches it): the cells and the
    // copy of layers 0..6, with or without the gap.
    let full = builder::propose(&base, 1).unwrap();
    let copied: u64 = (0..7).map(layer_size).sum();
    assert_eq!(full.layers[8].memory_bytes, plan.layers[8].memory_bytes);
    assert_eq!(plan.layers[8].memory_bytes, layer_size(8) + copied.max(layer_size(8) / 2));
}

#[test]
fn bounds_and_depths_to_capture_of_a_target_are_those_of_a_full_build() {
    let rules: Ruleset = "abapa".parse().unwrap();
    let (gapped, full) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let config = BuildConfig {
        rules,
        max_stones: 9,
        dir: full.path().into(),
        companions: vec![oware::error::FileContent::Bounds, oware::error::FileContent::Dtc],
        ..Default::default()
    };
    builder::build(&config, &Silent).unwrap();
    builder::build(&BuildConfig { dir: gapped.path().into(), ..config.clone() }.for_stones(9), &Silent).unwrap();
    let names = |d: &Path| {
        let mut v: Vec<String> =
            std::fs::read_dir(d.join("abapa")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).filter(|n| n.ends_with(".owdb")).collect();
        v.sort();
        v
    };
    let got = names(gapped.path());
    assert_eq!(got.len(), 3 * 9, "{got:?}");
    assert!(!got.iter().any(|n| n.contains("-08.")), "{got:?}");
    for name in &got {
        assert!(
            std::fs::read(gapped.path().join("abapa").join(name)).unwrap() == std::fs::read(full.path().join("abapa").join(name)).unwrap(),
            "{name} differs"
        );
    }
    // verify takes the gap, bounds and depths required.
    let report = oware::verify::verify_directory(
        &DatabaseDir::native(gapped.path(), rules).unwrap(),
        &oware::verify::VerifyOptions { layers: None, require: vec![oware::error::FileContent::Bounds, oware::error::FileContent::Dtc], max_memory: None },
        &mut oware::verify::NoObserver,
    )
    .unwrap();
    assert!(report.ok, "{}", report.summary);
    assert_eq!(report.layers_in(oware::error::FileContent::Values, "not-needed"), vec![8]);
    assert_eq!((report.layers_in(oware::error::FileContent::Dtc, "ok").len(), report.layers_in(oware::error::FileContent::Bounds, "ok").len()), (9, 9));
}

/// The memory the plan gives a layer's depths to capture is what the pass holds (its values and
/// new file, one byte per position each; four bytes of cells; two level lists of up to 13 bytes
/// for one position in 16; the smaller layers' values it reads), and docs/dtc.md gives the
/// same figures per position.
#[test]
fn the_dtc_memory_estimate_is_the_one_docs_dtc_md_gives() {
    let tmp = tempfile::tempdir().unwrap();
    // The depths' own pass (the values' propagation records them otherwise: below).
    let config = BuildConfig {
        rules: Ruleset::Awari,
        dir: tmp.path().into(),
        dtc_pass: true,
        max_memory: Some(1 << 50),
        companions: vec![oware::error::FileContent::Dtc],
        ..Default::default()
    };
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/dtc.md")).unwrap();
    let flat = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    // The number of bytes `flat` says before `words`.
    let stated = |words: &str| -> f64 {
        let before = flat.split(words).next().filter(|b| b.len() < flat.len()).unwrap_or_else(|| panic!("docs/dtc.md does not say '{words}'"));
        before.split_whitespace().last().unwrap().parse().unwrap()
    };
    let own = stated("bytes per position of the layer, plus the values of the smaller layers");
    // Layer 24 in a build of layers 0..=24, layer 48 in one `--for 48` (layer 47 left out).
    for (target, only, words) in [(24, false, "bytes per position of layer 24"), (48, true, "bytes per position of layer 48")] {
        let plan = builder::propose(&if only { config.clone().for_stones(target) } else { BuildConfig { max_stones: target, ..config.clone() } }, 1).unwrap();
        let n = target as usize;
        let size = layer_size(target) as f64;
        let dtc = plan.layers[n].companion(oware::error::FileContent::Dtc).unwrap();
        let lower: u64 = (0..target).filter(|&m| !only || Some(m) != layer_not_needed(target)).map(layer_size).sum();
        let per_position = (dtc.memory_bytes - lower) as f64 / size;
        assert!((per_position - own).abs() < 0.05, "layer {target}: {per_position:.3} bytes per position besides the smaller layers, docs/dtc.md says {own}");
        let all = dtc.memory_bytes as f64 / size;
        let said = stated(words);
        assert!((all - said).abs() < 0.05 * said, "layer {target}: {all:.2} bytes per position in all, docs/dtc.md says {said}");
        assert!(!dtc.fused);
        // Recorded by the values' propagation: the values' memory and the bytes docs/dtc.md
        // states per position.
        let fused_plan = builder::propose(
            &BuildConfig { dtc_pass: false, ..if only { config.clone().for_stones(target) } else { BuildConfig { max_stones: target, ..config.clone() } } },
            1,
        )
        .unwrap();
        let (layer, fused) = (&fused_plan.layers[n], fused_plan.layers[n].companion(oware::error::FileContent::Dtc).unwrap());
        assert!(fused.fused, "layer {target}: not recorded by the values' propagation");
        let more = stated("bytes per position more than the values alone");
        assert_eq!(fused.memory_bytes, layer.memory_bytes + (more as u64) * layer_size(target), "layer {target}");
    }
}
