//! How a failure reaches the user: its message and a hint (what to run or do next, which the
//! library's messages leave out) on stderr, and the exit code of its kind.

use std::path::Path;

use oware::error::{ClusterError, ErrorKind, FileContent, FileKind};
use oware::{Error, Ruleset};

use crate::output;

/// Prints an error (and its hint) on stderr and returns its exit code. A closed stdout ends the
/// program quietly with 141, as if `SIGPIPE` had ended it. [`Error::Interrupted`] is worded
/// for `build`, the one command that resumes; [`report_stopped`] words it for the others.
pub(crate) fn report(e: &Error) -> i32 {
    if output::is_closed_pipe(e) {
        return 141;
    }
    if matches!(e, Error::Interrupted) {
        output::note("interrupted: rerun the same command to resume (the finished layers and the last checkpoint are kept)");
        return exit_code(e.kind());
    }
    output::note(&format!("error: {e}"));
    if let Some(h) = hint(e) {
        output::note(&format!("hint: {h}"));
    }
    exit_code(e.kind())
}

/// [`report`] for a command that does not resume (verify, export, pack, unpack, import): after
/// Ctrl-C it says that the command stopped and left nothing half-written, not that a rerun
/// resumes it; any other error is reported as [`report`] does.
pub(crate) fn report_stopped(e: &Error) -> i32 {
    if matches!(e, Error::Interrupted) {
        output::note(STOPPED);
        return exit_code(e.kind());
    }
    report(e)
}

/// What a command that does not resume says after Ctrl-C.
pub(crate) const STOPPED: &str = "interrupted: stopped (nothing half-written is left; a rerun starts again)";

/// The process exit code of an error of kind `kind` ([`ErrorKind::exit_status`], the one table
/// of exit codes, documented in docs/cli.md, "Exit codes"). Besides these, 0 is success and 141
/// a closed stdout.
pub(crate) fn exit_code(kind: ErrorKind) -> i32 {
    kind.exit_status()
}

/// Advice for the user after an error: what to run or do next. The library's messages give
/// none (they name no command or option of this program); the program adds it here.
pub(crate) fn hint(e: &Error) -> Option<String> {
    match e {
        Error::LayerMissing { layer, dir, rules } => {
            let positions = oware::index::layer_size((*layer).min(oware::index::MAX_STONES));
            // A large layer: only the layers its positions need (not the one below it).
            let total: u64 = oware::rules::layers_needed(*layer).into_iter().map(oware::index::layer_size).sum();
            if *layer <= 28 {
                Some(format!("run `oware build --rules {rules} --max-stones {layer}{}`", dir_option(dir)))
            } else {
                let build = format!("oware build --rules {rules} --for {layer}{}", dir_option(dir));
                let published = if *rules == Ruleset::Awari {
                    " or probe the published 2002 awari databases (scores.0 .. scores.48) with `--format vu --dir DIR`"
                } else {
                    ""
                };
                Some(format!(
                    "layer {layer} holds {} positions ({} for the layers its positions need, 0..={} and {layer}); build them with `{build}` (see `oware build --dry-run`){published}",
                    oware::units::group_digits(positions),
                    oware::units::human_bytes(total),
                    layer.saturating_sub(2),
                ))
            }
        }
        Error::CompanionMissing { kind, layer, dir, rules } => {
            let kept = if *kind == FileContent::Dtc { " (the values already built are kept)" } else { "" };
            Some(format!("build them with `oware build --rules {rules} --max-stones {layer}{} --{}`{kept}", dir_option(dir), kind.name()))
        }
        Error::PublishedLayerMissing { .. } => Some("a directory of published files needs every scores.N the positions reach".into()),
        Error::Corrupt { path, damage } => Some(corrupt_hint(path, damage)),
        Error::RulesetMismatch { .. } | Error::LayerMismatch { .. } => {
            Some("this file belongs elsewhere: move it away, or give the right --rules or another --dir".into())
        }
        Error::OutOfMemory { limit: oware::error::MemoryLimit::Given, .. } => {
            Some("raise --max-memory, or build fewer layers with a smaller --max-stones".into())
        }
        Error::OutOfMemory { .. } => Some("free memory, or build fewer layers with a smaller --max-stones".into()),
        Error::DiskSpace { .. } => Some("free disk space, or use another --dir".into()),
        Error::NotAFile { path, found, expected: FileKind::File } => Some(not_a_file_hint(path, *found)),
        // Only the build's lock is refused this way (`flock` with `LOCK_NB`).
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::WouldBlock => Some("wait for it or use another --dir".into()),
        Error::Cluster(ClusterError::ForeignBinary { .. }) => Some("install one build on every node".into()),
        Error::Cluster(ClusterError::OtherOptions { .. }) => Some("run one command line on every rank".into()),
        Error::Cluster(ClusterError::ExchangeTooLarge { .. }) => Some("use more ranks or a smaller --max-memory".into()),
        Error::Interrupted => Some("rerun the same command (a build resumes from its finished layers)".into()),
        _ => None,
    }
}

/// What to do about `found` (a FIFO, a device, a directory...) where the program reads or
/// writes one of its files: it never opens one (a FIFO would block it for ever), so it has to go.
fn not_a_file_hint(path: &Path, found: FileKind) -> String {
    let remove = if found == FileKind::Directory { "rm -r" } else { "rm" };
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name.ends_with(".partial") || name.ends_with(".tmp") {
        // A link planted at a name of the program's own: what it held is written anew.
        return format!(
            "{name} is oware's own unfinished file, written anew: remove it (`{remove} {}`) and rerun the command",
            shell_quote(&path.display().to_string())
        );
    }
    format!(
        "oware opens only regular files there, never {found}: move it away or remove it (`{remove} {}`), then run the command again",
        shell_quote(&path.display().to_string())
    )
}

/// What to run after `path` was found damaged: the verify command of its kind of directory, and
/// the command that rewrites it there (never one that would write another kind of file into it:
/// `build` writes native layers, so it is named for native layers only).
fn corrupt_hint(path: &Path, damage: &oware::error::Damage) -> String {
    use oware::error::{Damage, FileContent};
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let dir = path.parent().unwrap_or(Path::new("."));
    let quoted = |p: &Path| shell_quote(&p.display().to_string());
    if name == "SHA256SUMS" {
        // The manifest of a pack directory: which ruleset's lines failed is not known here.
        return format!("check the packs with `oware verify --rules RULES --dir {}`; `oware pack` rewrites the manifest", quoted(dir));
    }
    // A native layer or pack lives in `<base>/<ruleset>/`.
    let rules = dir.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse::<Ruleset>().ok());
    let base = dir.parent().unwrap_or(Path::new("."));
    match rules {
        Some(r) if name.ends_with(".owpk") => {
            let listed = if matches!(damage, Damage::Manifest { .. }) { "its SHA-256 disagrees with the manifest: " } else { "" };
            format!(
                "{listed}check the packs with `oware verify --rules {r} --dir {}`; `oware pack --rules {r} --dir DB --out {}` re-creates them from the built layers in DB",
                quoted(base),
                quoted(base)
            )
        }
        Some(r) => {
            let opts = format!(" --rules {r}{}", dir_option(dir));
            // A dtc or bounds file is rebuilt by the build that asks for them.
            let content = FileContent::of(path, damage);
            let (option, what) = match content {
                FileContent::Dtc => (" --dtc", "depths to capture"),
                FileContent::Bounds => (" --bounds", "bounds"),
                _ => ("", "layers"),
            };
            if let (Damage::WrongContent { found, .. }, FileContent::Dtc | FileContent::Bounds) = (damage, content) {
                // A complete file of another kind is someone's data: the build refuses to replace
                // it, so naming the build alone would name the command that just refused.
                return format!(
                    "{name} holds {found}, not the {what} its name says, and `oware build` never replaces it: move it away or remove it (`rm {}`), then `oware build{opts} --max-stones N{option}` computes them",
                    quoted(path)
                );
            }
            format!("check the files with `oware verify{opts}`; `oware build{opts} --max-stones N{option}` replaces damaged {what}")
        }
        None if name.starts_with("scores.") => format!("check the published files with `oware verify --format vu --dir {}`", quoted(dir)),
        None => "check the directory with `oware verify`".to_string(),
    }
}

/// The `--dir` option that reaches `layers_dir` (a ruleset's directory), for suggested commands:
/// empty for the default `databases`.
pub(crate) fn dir_option(layers_dir: &Path) -> String {
    let base = layers_dir.parent().unwrap_or(Path::new("."));
    if base == Path::new("databases") {
        String::new()
    } else {
        format!(" --dir {}", shell_quote(&base.display().to_string()))
    }
}

/// `s` quoted for a POSIX shell when it needs it.
fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+,:@".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn exit_codes_are_the_documented_ones() {
        let table = [
            (ErrorKind::Internal, 1),
            (ErrorKind::Usage, 2),
            (ErrorKind::InvalidPosition, 3),
            (ErrorKind::NotInLayer, 3),
            (ErrorKind::IndexOutOfRange, 3),
            (ErrorKind::LayerMissing, 4),
            (ErrorKind::CompanionMissing(FileContent::Bounds), 4),
            (ErrorKind::CompanionMissing(FileContent::Dtc), 4),
            (ErrorKind::Damaged, 5),
            (ErrorKind::Foreign, 6),
            (ErrorKind::Io, 7),
            (ErrorKind::Output, 7),
            (ErrorKind::Threads, 7),
            (ErrorKind::VerificationFailed, 8),
            (ErrorKind::OutOfMemory, 9),
            (ErrorKind::Cluster, 10),
            (ErrorKind::Interrupted, 130),
        ];
        for k in ErrorKind::all() {
            let code = table.iter().find(|(kind, _)| *kind == k).map(|&(_, c)| c);
            assert_eq!(Some(exit_code(k)), code, "{k:?}");
        }
        // The table of docs/cli.md ("Exit codes") lists exactly these codes, with 0 (success) and 141
        // (a closed stdout).
        let doc = include_str!("../../docs/cli.md");
        let section = doc.split("\n## Exit codes\n").nth(1).expect("docs/cli.md has an exit code table");
        let documented: std::collections::BTreeSet<i32> = section
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .filter_map(|l| l.trim_start_matches('|').split('|').next()?.trim().parse().ok())
            .collect();
        let mut ours: std::collections::BTreeSet<i32> = ErrorKind::all().iter().map(|&k| exit_code(k)).collect();
        ours.extend([0, 141]);
        assert_eq!(documented, ours);
    }

    #[test]
    fn hints_name_the_options_the_library_does_not() {
        let e = Error::CompanionMissing {
            kind: FileContent::Bounds,
            layer: 4,
            dir: PathBuf::from("/tmp/db/abapa"),
            rules: Ruleset::Abapa(oware::rules::GrandSlam::NoCapture),
        };
        assert!(!e.to_string().contains("oware") && !e.to_string().contains("--"), "{e}");
        assert_eq!(hint(&e).unwrap(), "build them with `oware build --rules abapa --max-stones 4 --dir /tmp/db --bounds`");
        let e = Error::Cluster(ClusterError::OtherOptions { ranks: vec![2] });
        assert_eq!(hint(&e).unwrap(), "run one command line on every rank");
        let e = Error::Cluster(ClusterError::ForeignBinary { ranks: vec![1, 3] });
        assert_eq!(e.to_string(), "distributed build: ranks 1, 3 run another oware binary than rank 0");
        assert_eq!(hint(&e).unwrap(), "install one build on every node");
        let e = Error::Cluster(ClusterError::ExchangeTooLarge { part: oware::error::ExchangePart::InAll });
        assert!(hint(&e).unwrap().contains("--max-memory"));
        assert_eq!(hint(&Error::Cluster(ClusterError::PeerStopped)), None);
        let locked = Error::io("/tmp/db/awari/.lock", std::io::Error::new(std::io::ErrorKind::WouldBlock, "another build is working on this directory"));
        assert_eq!(hint(&locked).unwrap(), "wait for it or use another --dir");
        assert_eq!(hint(&Error::io("/tmp/x", std::io::Error::other("x"))), None);
        let fifo = Error::NotAFile { path: PathBuf::from("/tmp/my db/awari/.lock"), found: FileKind::Fifo, expected: FileKind::File };
        assert_eq!(fifo.to_string(), "/tmp/my db/awari/.lock is a FIFO (named pipe), not a regular file");
        assert_eq!(
            hint(&fifo).unwrap(),
            "oware opens only regular files there, never a FIFO (named pipe): move it away or remove it (`rm '/tmp/my db/awari/.lock'`), then run the command again"
        );
        let dir = Error::NotAFile { path: PathBuf::from("/tmp/db"), found: FileKind::File, expected: FileKind::Directory };
        assert_eq!(hint(&dir), None);
    }

    #[test]
    fn hints_keep_the_directory() {
        let e = Error::LayerMissing { layer: 7, dir: PathBuf::from("/tmp/my db/awari"), rules: Ruleset::Awari };
        let h = hint(&e).unwrap();
        assert!(h.contains("--dir '/tmp/my db'"), "{h}");
        let e = Error::LayerMissing { layer: 7, dir: PathBuf::from("databases/awari"), rules: Ruleset::Awari };
        assert!(!hint(&e).unwrap().contains("--dir"));
        let e = Error::LayerMissing { layer: 48, dir: PathBuf::from("databases/awari"), rules: Ruleset::Awari };
        let h = hint(&e).unwrap();
        assert!(h.contains("published 2002") && !h.contains("  "), "{h:?}");
        let e = Error::corrupt("/tmp/db/abapa/layer-05.owdb", oware::error::Damage::Empty);
        let h = hint(&e).unwrap();
        assert!(h.contains("oware verify --rules abapa --dir /tmp/db`") && !h.contains("  "), "{h}");
    }

    #[test]
    fn hints_after_pack_and_manifest_errors_name_pack_commands() {
        use oware::error::Damage;
        // A damaged pack: verify the pack directory, re-pack; never `build` (native layers) or `--format vu`.
        let e = Error::corrupt("/tmp/packs/awari/layer-05.owpk", Damage::Pack { what: "block 3".into() });
        let h = hint(&e).unwrap();
        assert!(h.contains("oware verify --rules awari --dir /tmp/packs`") && h.contains("oware pack --rules awari --dir DB --out /tmp/packs"), "{h}");
        assert!(!h.contains("build") && !h.contains("vu"), "{h}");
        let e = Error::corrupt("/tmp/packs/SHA256SUMS", Damage::Manifest { what: "line 2: x".into() });
        let h = hint(&e).unwrap();
        assert!(h.contains("--dir /tmp/packs`") && !h.contains("vu") && !h.contains("build"), "{h}");
        let e = Error::corrupt("/tmp/packs/abapa/layer-02.owpk", Damage::Manifest { what: "SHA-256 differs".into() });
        let h = hint(&e).unwrap();
        assert!(h.contains("manifest") && h.contains("--rules abapa") && !h.contains("build"), "{h}");
        // Published files keep the vu hint.
        let e = Error::corrupt("/data/vu/scores.7.zst", Damage::Compressed { what: "not a zstd file".into() });
        assert!(e.to_string().contains("zstd") && !e.to_string().contains("pack"), "{e}");
        assert!(hint(&e).unwrap().contains("--format vu --dir /data/vu"));
    }
}
