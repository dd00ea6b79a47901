//! The build of the tests' own kind of file beside the values (each position's number of legal
//! moves; its tag and check are in `verify/moves.rs`): its [`CompanionPass`], the fifth and
//! last file a kind takes (docs/architecture.md, "A fourth kind").

use std::time::Instant;

use rayon::prelude::*;

use super::companion::{CompanionPass, Inputs};
use super::plan::{companion_action, CompanionPlan, Planner, ValuesPlan};
use super::stats::{CompanionStats, EntryStats};
use super::BuildObserver;
use crate::error::{Error, FileContent, Result};
use crate::format::PAYLOAD_OFFSET;
use crate::index::{layer_size, unrank_unchecked, LayerWalker};
use crate::rules::Ruleset;
use crate::storage::{DatabaseDir, Layer, LayerWriter};
use crate::sys::peak_memory;
use crate::verify::moves::{count_moves, MovesKind};

/// Positions per parallel work item.
const CHUNK: u64 = 1 << 14;

/// The statistics of layer `n` of `rules`, without time or memory.
fn counted(rules: Ruleset, n: u32) -> EntryStats {
    EntryStats { rules: rules.name().into(), layer: n, positions: layer_size(n), seconds: None, peak_memory_bytes: None }
}

/// Each layer's counts from its boards alone, by the move list of the generator (the check
/// counts the pits [`Ruleset::play`] accepts).
impl CompanionPass for MovesKind {
    type Stats = EntryStats;
    const DISTRIBUTED: bool = false;

    fn plan(planner: &Planner<'_>, n: u32, _values: &ValuesPlan<'_>) -> Result<CompanionPlan> {
        Ok(CompanionPlan {
            kind: FileContent::Moves,
            action: companion_action::<MovesKind>(planner.dir, n, None)?,
            memory_bytes: layer_size(n),
            scratch: false,
            disk_bytes: PAYLOAD_OFFSET + layer_size(n) + 4096,
            seconds_estimate: 0.0,
            fused: false,
        })
    }

    /// Counts only: an entry's relation with its moves is the verifier's to check.
    fn stats(rules: Ruleset, n: u32, _values: &Layer, _file: &Layer<MovesKind>) -> Result<EntryStats> {
        Ok(counted(rules, n))
    }

    fn agrees(stored: &EntryStats, counted: &EntryStats) -> bool {
        (&stored.rules, stored.layer, stored.positions) == (&counted.rules, counted.layer, counted.positions)
    }

    fn observed(stats: &EntryStats) -> CompanionStats<'_> {
        CompanionStats::Entries(FileContent::Moves, stats)
    }

    fn work_units(n: u32, _: Inputs<'_, MovesKind>) -> u64 {
        layer_size(n)
    }

    fn build(
        dir: &DatabaseDir,
        n: u32,
        values: &Layer,
        inputs: Inputs<'_, MovesKind>,
        observer: &dyn BuildObserver,
        start: Instant,
    ) -> Result<Option<(EntryStats, f64)>> {
        let rules = dir.rules();
        let mut writer = LayerWriter::create::<MovesKind>(dir, n, layer_size(n))?;
        writer.payload_mut().par_chunks_mut(CHUNK as usize).enumerate().try_for_each(|(c, bytes)| {
            let first = c as u64 * CHUNK;
            for (i, board) in LayerWalker::new(n, first..first + bytes.len() as u64)? {
                bytes[(i - first) as usize] = rules.moves(&board).len() as u8;
            }
            observer.advance(bytes.len() as u64);
            Ok::<(), Error>(())
        })?;
        MovesKind::spot_check(rules, n, values.values(), writer.payload(), inputs)?;
        let seconds = start.elapsed().as_secs_f64();
        writer.finish()?;
        Ok(Some((EntryStats { seconds: Some(seconds), peak_memory_bytes: peak_memory(), ..counted(rules, n) }, seconds)))
    }

    fn spot_check(rules: Ruleset, n: u32, _values: &[i8], payload: &[u8], _: Inputs<'_, MovesKind>) -> Result<()> {
        let step = (layer_size(n) / super::config::SPOT_CHECKS).max(1);
        match (0..layer_size(n)).step_by(step as usize).find(|&i| payload[i as usize] != count_moves(rules, &unrank_unchecked(n, i))) {
            Some(i) => Err(Error::Internal(format!("the move counts of layer {n} fail their check at index {i}"))),
            None => Ok(()),
        }
    }
}

/// The tests' own kind goes through the whole family as the others do, with nothing but its
/// five files: planned, built, checked on a second build, verified, its damage found, its
/// absence named by one error kind, rebuilt.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{build, plan, BuildConfig, LayerAction, Silent};
    use crate::error::{Damage, ErrorKind};
    use crate::verify::{verify_directory, CompanionReport, CompanionStatus, Finding, NoObserver, VerifyOptions};

    const TOP: u32 = 9;
    const RULES: Ruleset = Ruleset::Abapa(crate::rules::GrandSlam::NoCapture);

    fn options(require: Vec<FileContent>) -> VerifyOptions {
        VerifyOptions { layers: None, require, max_memory: None }
    }

    #[test]
    fn a_kind_in_five_files_is_planned_built_verified_and_rebuilt() {
        let tmp = tempfile::tempdir().unwrap();
        let config = BuildConfig {
            rules: RULES,
            max_stones: TOP,
            dir: tmp.path().into(),
            max_memory: None,
            companions: vec![FileContent::Moves, FileContent::Bounds],
            ..Default::default()
        };
        // Planned beside the bounds, in the order of the kinds.
        let p = plan(&config, 2).unwrap();
        let kinds: Vec<FileContent> = p.layers[3].companions.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [FileContent::Bounds, FileContent::Moves]);
        assert!(p.layers.iter().all(|l| matches!(l.companion(FileContent::Moves).unwrap().action, LayerAction::Build { reason: None })));

        build(&config, &Silent).unwrap();
        let db = DatabaseDir::native(tmp.path(), RULES).unwrap();
        for n in 0..=TOP {
            let file = db.open_layer::<MovesKind>(n, true).unwrap();
            let stats: EntryStats = serde_json::from_slice(&std::fs::read(db.stats_path::<MovesKind>(n)).unwrap()).unwrap();
            assert_eq!((stats.layer, stats.positions), (n, layer_size(n)));
            for i in 0..layer_size(n) {
                assert_eq!(file.get(i).unwrap(), count_moves(RULES, &unrank_unchecked(n, i)), "layer {n} index {i}");
            }
        }
        // A second build checks every file and builds nothing.
        let again = plan(&config, 2).unwrap();
        assert!(again.layers.iter().all(|l| matches!(l.companion(FileContent::Moves).unwrap().action, LayerAction::Check)));

        // The verifier checks every file of the kind, through the report every kind shares.
        let r = verify_directory(&db, &options(vec![FileContent::Moves]), &mut NoObserver).unwrap();
        assert_eq!(r.outcome, Finding::Ok, "{}", r.summary);
        let moves: Vec<_> = r.companions.iter().filter(|e| e.kind == FileContent::Moves).collect();
        assert_eq!(moves.len(), (TOP + 1) as usize);
        assert!(moves.iter().all(|e| matches!(e.report(), Some(CompanionReport::Entries(x)) if x.mismatches == 0 && x.checked == layer_size(e.layer))));
        assert!(r.summary.contains("move counts"), "{}", r.summary);

        // A wrong count (checksum restored, so the file opens): a mismatch, the verifier's
        // failure, named in the JSON document under the kind's name.
        let n = 7;
        let path = db.path::<MovesKind>(n);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = PAYLOAD_OFFSET as usize + 100;
        bytes[at] = if bytes[at] == 6 { 5 } else { bytes[at] + 1 };
        let header = crate::format::Header {
            payload_checksum: crate::format::checksum(&bytes[PAYLOAD_OFFSET as usize..]),
            ..crate::format::Header::decode(&bytes, &path).unwrap()
        };
        bytes[..crate::format::HEADER_LEN].copy_from_slice(&header.encode());
        std::fs::write(&path, &bytes).unwrap();
        let r = verify_directory(&db, &options(vec![]), &mut NoObserver).unwrap();
        assert_eq!((r.outcome, r.exit_code()), (Finding::WrongValues, 8));
        let wrong = r.companions.iter().find(|e| e.kind == FileContent::Moves && e.layer == n).unwrap();
        assert!(matches!(wrong.report(), Some(CompanionReport::Entries(x)) if x.mismatches == 1 && x.first_mismatches[0].index == 100));
        let doc: serde_json::Value = serde_json::from_str(&r.to_json().unwrap()).unwrap();
        assert!(doc.to_string().contains("\"moves\""), "{doc}");

        // A flipped byte without its checksum: damage, named as the kind's file.
        bytes[at] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let r = verify_directory(&db, &options(vec![]), &mut NoObserver).unwrap();
        assert_eq!(r.outcome, Finding::Damaged(FileContent::Moves));
        let damaged = r.companions.iter().find(|e| e.kind == FileContent::Moves && e.layer == n).unwrap();
        assert!(matches!(&damaged.status, CompanionStatus::Damaged(e) if e.to_string().contains("damaged moves file")), "{:?}", damaged.status);

        // Absent and required: the one error kind of missing files beside the values.
        std::fs::remove_file(&path).unwrap();
        let r = verify_directory(&db, &options(vec![FileContent::Moves]), &mut NoObserver).unwrap();
        assert_eq!((r.outcome, r.exit_code()), (Finding::Missing(FileContent::Moves), 4));
        let e = r.into_error().unwrap();
        assert_eq!(e.kind(), ErrorKind::CompanionMissing(FileContent::Moves));
        assert_eq!(e.to_string(), format!("the move counts of layer {n} of abapa are not built in {}", db.base().join("abapa").display()));
        assert_eq!(e.kind().as_str(), "moves_missing");
        assert!(ErrorKind::all().contains(&ErrorKind::CompanionMissing(FileContent::Moves)));

        // A new build plans it, rebuilds it, and the directory verifies again.
        let p = plan(&config, 2).unwrap();
        assert!(matches!(p.layers[n as usize].companion(FileContent::Moves).unwrap().action, LayerAction::Build { reason: None }));
        build(&config, &Silent).unwrap();
        assert_eq!(verify_directory(&db, &options(vec![FileContent::Moves]), &mut NoObserver).unwrap().outcome, Finding::Ok);

        // Never distributed: refused with several ranks, in its own words.
        let e = config.validate(2).unwrap_err();
        assert!(e.to_string().contains("move counts are built by one process"), "{e}");
        // A foreign payload at its path is refused, in words from its encoding.
        assert!(Damage::WrongContent { found: "a pack", expected: "move counts" }.to_string().contains("move counts"));
    }
}

/// The five files docs/architecture.md names for a fourth kind are the only ones that name the
/// tests' own kind.
#[cfg(test)]
mod files {
    use std::collections::BTreeSet;
    use std::path::Path;

    /// Every `.rs` file under `dir`, relative to `root`.
    fn sources(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                sources(root, &p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }

    #[test]
    fn a_fourth_kind_takes_the_five_files_the_architecture_names() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut all = Vec::new();
        sources(root, &root.join("src"), &mut all);
        let naming: BTreeSet<String> = all
            .into_iter()
            .filter(|f| {
                let text = std::fs::read_to_string(root.join(f)).unwrap();
                text.contains("FileContent::Moves") || text.contains("MovesKind")
            })
            .collect();
        let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
        let section = &doc[doc.find("**A fourth kind**").expect("the section")..];
        let named: BTreeSet<String> = section
            .lines()
            .take_while(|l| !l.starts_with("The rest follows"))
            .filter_map(|l| l.split_once(". `").filter(|(k, _)| k.trim().parse::<u32>().is_ok()))
            .map(|(_, rest)| rest.split('`').next().unwrap().replace("<kind>", "moves"))
            .collect();
        assert_eq!(named.len(), 5, "the list in docs/architecture.md: {named:?}");
        assert_eq!(naming, named, "files naming the tests' kind, against docs/architecture.md's list");
    }
}
