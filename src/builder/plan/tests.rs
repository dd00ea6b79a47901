//! The plan's own tests: statistics files read within a bound, a build short of disk naming
//! its files, estimates from the largest measured layer, and a checkpoint left counted.

use super::*;
use crate::builder::LayerStats;

fn write_stats(base: &Path, rules: Ruleset, n: u32, seconds: f64, mode: Option<&str>) {
    let mut s = LayerStats::from_histogram(rules, n, &[0; 256]);
    s.seconds = Some(seconds);
    s.threads = Some(2);
    s.mode = mode.map(str::to_string);
    let path = crate::storage::stats_path(base, rules, n);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec(&s).unwrap()).unwrap();
}

/// A statistics file is read only up to a bound: one padded past 1 MiB is unreadable (it was
/// read whole into memory, whatever its size).
#[test]
fn statistics_files_are_read_within_a_bound() {
    let dir = tempfile::tempdir().unwrap();
    let rules = Ruleset::Awari;
    write_stats(dir.path(), rules, 20, 10.0, None);
    assert!(read_stats(dir.path(), rules, 20).is_some());
    let path = crate::storage::stats_path(dir.path(), rules, 20);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.resize(bytes.len() + (1 << 20), b' ');
    std::fs::write(&path, bytes).unwrap();
    assert!(read_stats(dir.path(), rules, 20).is_none());
}

/// A build short of disk names the files it would write: `build --dtc` over built layers
/// said "not enough for layers none".
#[test]
fn a_build_short_of_disk_names_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let config = BuildConfig { rules: Ruleset::Awari, max_stones: 6, dir: dir.path().into(), max_memory: None, ..Default::default() };
    crate::builder::build(&config, &crate::builder::Silent).unwrap();
    let mut p = propose(&BuildConfig { companions: vec![crate::error::FileContent::Dtc], ..config.clone() }, 1).unwrap();
    assert_eq!(p.to_build().count(), 0);
    p.disk_free_bytes = Some(0);
    let msg = check_plan(&p).unwrap_err().to_string();
    assert!(msg.contains("not enough for the depths to capture of layers 0..6 ("), "{msg}");
    p.layers[6].action = LayerAction::Build { reason: None };
    let msg = check_plan(&p).unwrap_err().to_string();
    assert!(msg.contains("not enough for layer 6 and the depths to capture of layers 0..6 ("), "{msg}");
}

#[test]
fn estimates_come_from_the_largest_measured_layer() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    let rules = Ruleset::Awari;
    assert_eq!(Throughput::measured(base, rules, 49), None);
    // Too quick to measure anything: ignored.
    write_stats(base, rules, 10, 0.01, None);
    assert_eq!(Throughput::measured(base, rules, 49), None);
    write_stats(base, rules, 20, 10.0, None);
    write_stats(base, rules, 22, 20.0, Some("out_of_core"));
    std::fs::write(crate::storage::stats_path(base, rules, 23), b"{ not json").unwrap();
    // Another ruleset's measurement is not used.
    write_stats(base, Ruleset::Abapa(crate::rules::GrandSlam::NoCapture), 24, 1.0, None);
    // An in-memory measurement is preferred to a larger out-of-core one.
    assert_eq!(Throughput::measured(base, rules, 49).unwrap().positions, layer_size(20));
    std::fs::remove_file(crate::storage::stats_path(base, rules, 20)).unwrap();
    let t = Throughput::measured(base, rules, 49).unwrap();
    assert_eq!((t.positions, t.threads), (layer_size(22), 2));
    assert!((t.rate - layer_size(22) as f64 / 20.0 * OUT_OF_CORE_SLOWDOWN).abs() < 1.0);
    write_stats(base, rules, 20, 10.0, None);
    assert_eq!(Throughput::measured(base, rules, 22).unwrap().positions, layer_size(20));
    // A streamed layer counts as in memory (its exits pass is slower, its thresholds are not).
    write_stats(base, rules, 21, 10.0, Some("streamed"));
    assert_eq!(Throughput::measured(base, rules, 22).unwrap().positions, layer_size(21));
    std::fs::remove_file(crate::storage::stats_path(base, rules, 21)).unwrap();
    // The same layer, threads and mode give back the measured time.
    let ooc = Mode::OutOfCore { limits: OutOfCoreLimits::new(22, 1 << 30) };
    let same = t.seconds(layer_size(22), 2) * ooc.slowdown();
    assert!((same - 20.0).abs() < 1e-6, "{same}");
    assert!((t.seconds(layer_size(22), 2) - 10.0).abs() < 1e-6);
    assert!((t.seconds(layer_size(22), 4) - 5.0).abs() < 1e-6);
    // Larger layers take more than proportionally longer.
    let ratio = t.seconds(layer_size(30), 2) / 10.0;
    assert!(ratio > layer_size(30) as f64 / layer_size(22) as f64, "{ratio}");
    // The reference: layer 24 at 5.5 M positions/s on two threads.
    let r = Throughput::reference(2).seconds(layer_size(24), 2);
    assert!((r - layer_size(24) as f64 / 5.5e6).abs() < 1e-6, "{r}");
}

/// A layer that left a checkpoint is planned as checkpointed (its scratch counted) whatever its
/// estimate, as the pipeline resumes it: one process's, or any rank's.
#[test]
fn a_checkpoint_left_counts_as_checkpointed() {
    let dir = tempfile::tempdir().unwrap();
    let config = BuildConfig {
        rules: Ruleset::Awari,
        max_stones: 8,
        dir: dir.path().into(),
        max_memory: None,
        checkpoint_every: Some(std::time::Duration::from_secs(1_000_000)),
        ..Default::default()
    };
    let scratch = |c: &BuildConfig| propose(c, 1).unwrap().layers[8].scratch_bytes;
    let plain = scratch(&config);
    let work = dir.path().join("awari/.work/layer-08");
    std::fs::create_dir_all(work.join("rank-0001-of-0002")).unwrap();
    assert!(!checkpoint_left(&work));
    std::fs::write(work.join("rank-0001-of-0002").join(CHECKPOINT_FILE), b"x").unwrap();
    assert!(checkpoint_left(&work));
    assert_eq!(scratch(&config), plain + layer_size(8));
    std::fs::remove_dir_all(work.join("rank-0001-of-0002")).unwrap();
    std::fs::write(work.join(CHECKPOINT_FILE), b"x").unwrap();
    assert_eq!(scratch(&config), plain + layer_size(8));
    assert!(!checkpoint_left(&dir.path().join("awari/.work/layer-07")));
}
