//! The out-of-core solver against the in-memory one: with tiny limits (many parts, many
//! message rounds, many lookup sweeps and windows), every layer of every ruleset comes out
//! byte-identical; a checkpoint resumed from, in either mode, changes nothing.

use std::time::Duration;

use super::{as_i8, memory_layers, Counting};
use crate::index::layer_size;
use crate::progress::NoProgress;
use crate::rules::Ruleset;
use crate::solver::spill::Checkpoint;
use crate::solver::{solve_layer_with, OutOfCore, SolveOptions, WorkModel, CHUNK};

const TOP: u32 = 14;

/// The units a whole solve reports: everything its model counts but the caller's check.
fn solve_units(model: &WorkModel) -> u64 {
    model.total() - model.check()
}

/// Limits far below what the layer needs: `parts` parts (at least one chunk each), lookups
/// and lower-layer windows of 64 KiB.
fn tiny(work: &std::path::Path, n: u32, parts: u64) -> OutOfCore<'_> {
    OutOfCore {
        part_len: (layer_size(n) / parts).max(CHUNK),
        lookup_bytes: 1 << 16,
        lower_window: 1 << 16,
        message_bytes: 1 << 16,
        work_dir: work,
        release_lower: &|_, _| {},
        release_out: &|_| {},
    }
}

#[test]
fn out_of_core_solves_are_byte_identical_on_every_ruleset() {
    for rules in Ruleset::ALL {
        let layers = memory_layers(rules, TOP);
        let work = tempfile::tempdir().unwrap();
        for n in 0..=TOP {
            let lower: Vec<&[i8]> = layers[..n as usize].iter().map(|l| as_i8(l)).collect();
            let mut out = vec![0xAAu8; layer_size(n) as usize];
            // Awari in as many parts as chunks, the others in 5 parts (to keep the test quick).
            let parts = if rules == Ruleset::Awari && n <= 12 { u64::MAX } else { 5 };
            // Progress is weighted by layer n - 2's values, as the builder does.
            let model = match n.checked_sub(2) {
                Some(m) => WorkModel::from_counts(n, &crate::builder::LayerStats::count(rules, m, as_i8(&layers[m as usize])).values),
                None => WorkModel::new(n, None),
            };
            let options = SolveOptions { out_of_core: Some(tiny(work.path(), n, parts)), work: Some(&model), ..Default::default() };
            let counted = Counting::default();
            solve_layer_with(rules, n, &lower, &mut out, &counted, &options).unwrap();
            assert!(out == layers[n as usize], "{} layer {n}: out of core differs from in memory", rules.name());
            assert_eq!(counted.get(), solve_units(&model), "{} layer {n}: progress ends at 100%", rules.name());
        }
        // Scratch files are gone.
        let left: Vec<_> = std::fs::read_dir(work.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

/// A progress that cancels after a given number of phases, to stop a solve mid-layer.
struct StopAfter {
    phases: std::sync::atomic::AtomicU32,
    stop_at: u32,
}

impl crate::progress::Progress for StopAfter {
    fn phase(&self, _name: &str) {
        self.phases.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn cancelled(&self) -> bool {
        self.phases.load(std::sync::atomic::Ordering::Relaxed) > self.stop_at
    }
}

#[test]
fn interrupted_solves_resume_from_checkpoints_in_either_mode() {
    let rules = Ruleset::Awari;
    let n = 12;
    let layers = memory_layers(rules, n);
    let lower: Vec<&[i8]> = layers[..n as usize].iter().map(|l| as_i8(l)).collect();
    let work = tempfile::tempdir().unwrap();
    let ckpt = Checkpoint::new(work.path().join("checkpoint"), rules.id(), n, layer_size(n));
    let mut resumed = 0;
    for (stop_at, first_ooc) in [(1u32, true), (3, false), (40, true), (9, false), (300, true), (5, true)] {
        let mut out = vec![0u8; layer_size(n) as usize];
        let first = SolveOptions {
            out_of_core: first_ooc.then(|| tiny(work.path(), n, u64::MAX)),
            checkpoint: Some(&ckpt),
            checkpoint_every: Duration::ZERO,
            ..Default::default()
        };
        let stop = StopAfter { phases: 0.into(), stop_at };
        let r = solve_layer_with(rules, n, &lower, &mut out, &stop, &first);
        assert!(matches!(r, Err(crate::Error::Interrupted)), "stop at {stop_at}: {r:?}");
        let had = ckpt.path().exists();
        resumed += usize::from(had);
        // Resume in the other mode.
        let notes = std::sync::Mutex::new(Vec::new());
        let note = |s: &str| notes.lock().unwrap().push(s.to_string());
        let second = SolveOptions {
            out_of_core: (!first_ooc).then(|| tiny(work.path(), n, u64::MAX)),
            checkpoint: Some(&ckpt),
            checkpoint_every: Duration::from_secs(3600),
            note: Some(&note),
            ..Default::default()
        };
        let mut out = vec![0u8; layer_size(n) as usize];
        let counted = Counting::default();
        solve_layer_with(rules, n, &lower, &mut out, &counted, &second).unwrap();
        assert!(out == layers[n as usize], "stop at {stop_at}: resumed solve differs");
        // A resumed solve counts what the checkpoint saved as done: the bar still ends at 100%.
        assert_eq!(counted.get(), solve_units(&WorkModel::new(n, None)), "stop at {stop_at}: progress");
        let resumed_note = notes.lock().unwrap().iter().any(|s| s.contains("resuming"));
        assert_eq!(resumed_note, had, "stop at {stop_at}: {:?}", notes.lock().unwrap());
        assert!(!ckpt.path().exists(), "the checkpoint is removed when the layer is done");
    }
    assert!(resumed >= 4, "only {resumed} runs left a checkpoint");
}

/// With the best exits kept in the output (a file that outlives the process), checkpoints hold
/// the cells and the exits' hash: a solve stopped at any phase resumes with the output as it
/// left it (the lower layers resident or streamed), and one whose exits changed meanwhile is
/// solved afresh.
#[test]
fn solves_with_exits_kept_in_the_output_resume_and_refuse_changed_exits() {
    let n = 12;
    for rules in [Ruleset::Awari, Ruleset::ALL[3]] {
        let layers = memory_layers(rules, n);
        let lower: Vec<&[i8]> = layers[..n as usize].iter().map(|l| as_i8(l)).collect();
        let work = tempfile::tempdir().unwrap();
        let ckpt = Checkpoint::new(work.path().join("checkpoint"), rules.id(), n, layer_size(n));
        let mut resumed = 0;
        for (stop_at, streamed, tamper) in [(1u32, false, false), (2, true, false), (5, false, false), (9, true, false), (4, false, true), (7, true, true)] {
            // The output, as the partial file keeps it between the two runs.
            let mut out = vec![0u8; layer_size(n) as usize];
            let first =
                SolveOptions { checkpoint: Some(&ckpt), checkpoint_every: Duration::ZERO, exits_kept: true, stream_lower: streamed, ..Default::default() };
            let stop = StopAfter { phases: 0.into(), stop_at };
            let r = solve_layer_with(rules, n, &lower, &mut out, &stop, &first);
            assert!(matches!(r, Err(crate::Error::Interrupted)), "{}: stop at {stop_at}: {r:?}", rules.name());
            let had = ckpt.path().exists();
            // Half the size of a checkpoint that holds the exits (before compression).
            if tamper {
                let k = out.len() / 3;
                out[k] ^= 1;
            }
            let notes = std::sync::Mutex::new(Vec::new());
            let note = |s: &str| notes.lock().unwrap().push(s.to_string());
            let second = SolveOptions {
                checkpoint: Some(&ckpt),
                checkpoint_every: Duration::ZERO,
                exits_kept: true,
                stream_lower: !streamed,
                note: Some(&note),
                ..Default::default()
            };
            solve_layer_with(rules, n, &lower, &mut out, &NoProgress, &second).unwrap();
            assert!(out == layers[n as usize], "{}: stop at {stop_at}: resumed solve differs", rules.name());
            let notes = notes.into_inner().unwrap();
            let resumed_note = notes.iter().any(|s| s.contains("resuming"));
            if tamper && had {
                assert!(notes.iter().any(|s| s.contains("changed")), "{}: stop at {stop_at}: {notes:?}", rules.name());
                assert!(!resumed_note);
            } else {
                assert_eq!(resumed_note, had, "{}: stop at {stop_at}: {notes:?}", rules.name());
                resumed += usize::from(had);
            }
            assert!(!ckpt.path().exists(), "the checkpoint is removed when the layer is done");
        }
        assert!(resumed >= 3, "{}: only {resumed} runs resumed", rules.name());
    }
}

#[test]
fn a_damaged_checkpoint_is_discarded_and_the_layer_solved_afresh() {
    let rules = Ruleset::ALL[1];
    let n = 11;
    let layers = memory_layers(rules, n);
    let lower: Vec<&[i8]> = layers[..n as usize].iter().map(|l| as_i8(l)).collect();
    let work = tempfile::tempdir().unwrap();
    let ckpt = Checkpoint::new(work.path().join("checkpoint"), rules.id(), n, layer_size(n));
    let stop = StopAfter { phases: 0.into(), stop_at: 4 };
    let first = SolveOptions { checkpoint: Some(&ckpt), checkpoint_every: Duration::ZERO, ..Default::default() };
    let mut out = vec![0u8; layer_size(n) as usize];
    assert!(solve_layer_with(rules, n, &lower, &mut out, &stop, &first).is_err());
    let mut bytes = std::fs::read(ckpt.path()).unwrap();
    let k = bytes.len() - 1000;
    bytes[k] ^= 0x40;
    std::fs::write(ckpt.path(), &bytes).unwrap();
    let notes = std::sync::Mutex::new(Vec::new());
    let note = |s: &str| notes.lock().unwrap().push(s.to_string());
    let second = SolveOptions { checkpoint: Some(&ckpt), note: Some(&note), ..Default::default() };
    solve_layer_with(rules, n, &lower, &mut out, &NoProgress, &second).unwrap();
    assert!(out == layers[n as usize]);
    let notes = notes.lock().unwrap();
    assert!(notes.iter().any(|s| s.contains("discarded") && s.contains("checksum")), "{notes:?}");
}

// ---- The build command, forced out of core ----
