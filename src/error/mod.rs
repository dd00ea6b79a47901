//! Typed errors of the library, each of an [`ErrorKind`]: the category a program acts on (the
//! `oware` program maps kinds to exit codes, the Python binding to exception classes, the C
//! library to return codes, each in one place).
//!
//! Error payloads are data (layer numbers, paths, expected and found values, raw bytes as
//! numbers), not preformatted sentences, so a program can act on them; `Display` renders them
//! for people (escaping any byte read from a file). Advice such as which command to run next
//! belongs to the program that shows the error (the CLI adds it), not to the error: the one
//! exception is [`Error::binding_message`], the message the C and Python bindings report, which
//! have no program of their own to give advice.
//!
//! The files: the [`Error`] enum and its kinds' mapping here, the data inside the errors in
//! `details.rs` ([`Damage`], [`PositionError`], [`FileKind`], ...) and the categories programs
//! act on in `kind.rs` ([`ErrorKind`]).

use std::path::PathBuf;

use crate::rules::Ruleset;

mod details;
mod kind;

pub use details::{ClusterError, Damage, ExchangePart, FileContent, FileKind, MemoryLimit, Part, PositionError};
pub use kind::ErrorKind;

/// Everything that can go wrong in the library. No variant is a panic in disguise: each names the
/// problem (and the file, position or layer involved) so a user can act on it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A position given by the user could not be understood or is not a legal Oware board.
    #[error("invalid position: {0}")]
    InvalidPosition(PositionError),

    /// A board is not in the layer it was looked up in: it holds another number of stones, or its
    /// opponent row (pits 6..11) has no empty pit (such boards belong to no layer).
    #[error("board is not in layer {layer}: {}", not_in_layer_reason(*.layer, *.stones))]
    NotInLayer {
        /// The layer looked in.
        layer: u32,
        /// Stones on the board (equal to `layer` when the opponent row is full).
        stones: u32,
    },

    /// An index past the end of a layer.
    #[error("index {index} is out of range for layer {layer} ({size} boards)")]
    IndexOutOfRange {
        /// The layer.
        layer: u32,
        /// The index asked for.
        index: u64,
        /// The layer's number of boards (0 for a layer number above 48).
        size: u64,
    },

    /// A layer a query or build step needs has not been built.
    #[error("layer {layer} of {rules} is not built in {}", .dir.display())]
    LayerMissing {
        /// The layer.
        layer: u32,
        /// The ruleset's directory it was looked for in.
        dir: PathBuf,
        /// The ruleset.
        rules: Ruleset,
    },

    /// A layer's file beside its values (its forced-capture bounds, its depths to capture) has
    /// not been built. `kind` is never [`FileContent::Values`]: missing values are
    /// [`Error::LayerMissing`] (or [`Error::PublishedLayerMissing`]).
    #[error("the {} of layer {layer} of {rules} are not built in {}", .kind.not_built(), .dir.display())]
    CompanionMissing {
        /// What the file holds.
        kind: FileContent,
        /// The layer.
        layer: u32,
        /// The ruleset's directory it was looked for in.
        dir: PathBuf,
        /// The ruleset.
        rules: Ruleset,
    },

    /// A layer of a directory of published 2002 files (`scores.N`) is absent.
    #[error("{} not found: this directory of published files has no layer {layer}", .path.display())]
    PublishedLayerMissing {
        /// The layer.
        layer: u32,
        /// The `scores.N` path looked for.
        path: PathBuf,
    },

    /// A layer file exists but holds another ruleset's values.
    #[error("{}: file holds ruleset '{found}', expected '{expected}'", .path.display())]
    RulesetMismatch {
        /// The file.
        path: PathBuf,
        /// The ruleset its header names.
        found: Ruleset,
        /// The ruleset asked for.
        expected: Ruleset,
    },

    /// A layer file exists, is of the right ruleset, but holds another layer.
    #[error("{}: file holds layer {found}, expected layer {expected}", .path.display())]
    LayerMismatch {
        /// The file.
        path: PathBuf,
        /// The layer its header names.
        found: u32,
        /// The layer asked for.
        expected: u32,
    },

    /// A layer, bounds or dtc file is damaged: bad magic, wrong header field, wrong size or
    /// checksum, or content that contradicts itself. The message names the kind of file
    /// ([`FileContent::of`]: a dtc file, a bounds file, else a layer file).
    #[error("{}", details::corrupt_text(.path, .damage))]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The first problem found.
        damage: Damage,
    },

    /// A path that should be a regular file (a layer, a statistics file) is something else: a
    /// directory, a FIFO, a device, a socket (such files are never opened for reading: a FIFO
    /// would block forever); or a path that should be a directory is not one.
    #[error("{} is {found}, not {expected}", .path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is.
        found: FileKind,
        /// What it should be.
        expected: FileKind,
    },

    /// An operating-system error while reading or writing a file (disk full, permissions, ...).
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },

    /// Results could not be written to standard output or standard error.
    #[error("cannot write to {stream}: {source}")]
    Output {
        /// `stdout` or `stderr`.
        stream: &'static str,
        /// What the operating system said.
        source: std::io::Error,
    },

    /// Building a layer needs more memory than is available or allowed.
    #[error("layer {layer} needs {} of memory but {limit} is {}", crate::units::human_bytes(*.needed), crate::units::human_bytes(*.available))]
    OutOfMemory {
        /// The layer that would not fit.
        layer: u32,
        /// Bytes it needs.
        needed: u64,
        /// Bytes available or allowed.
        available: u64,
        /// Which limit applies.
        limit: MemoryLimit,
    },

    /// A build needs more disk space than the file system has free.
    #[error("{} has {} free, not enough for {what} ({})", .path.display(), crate::units::human_bytes(*.available), crate::units::human_bytes(*.needed))]
    DiskSpace {
        /// The directory written to.
        path: PathBuf,
        /// What needs the space (e.g. "layers 25..28").
        what: String,
        /// Bytes needed.
        needed: u64,
        /// Bytes free.
        available: u64,
    },

    /// Worker threads could not be started.
    #[error("cannot start {threads} worker threads: {reason}")]
    Threads {
        /// Threads asked for.
        threads: usize,
        /// What the system said.
        reason: String,
    },

    /// The work was interrupted (Ctrl-C, SIGTERM) before it finished; nothing complete was
    /// damaged and a rerun resumes.
    #[error("interrupted")]
    Interrupted,

    /// A failure inside the program that no input explains.
    #[error("internal error: {0}")]
    Internal(String),

    /// `verify` found values, bounds entries or depths to capture that do not follow from their
    /// children, or a contradicted fact.
    #[error("verification failed: {}", verify_failed_text(.wrong, *.failed_facts))]
    VerifyFailed {
        /// Of each kind of file ([`FileContent::Values`] first), the positions whose stored entry
        /// is wrong (kinds with none may be left out).
        wrong: Vec<(FileContent, u64)>,
        /// Published facts the layers contradict.
        failed_facts: u64,
    },

    /// A freshly built layer failed its spot check; it was not written.
    #[error("layer {layer} position {index} ({}) is {stored} but its children give {derived}; the layer was not written", board_text(.board))]
    SpotCheck {
        /// The layer.
        layer: u32,
        /// The position's index.
        index: u64,
        /// The board, mover-first.
        board: [u8; 12],
        /// The value computed by the solver.
        stored: i8,
        /// The value re-derived from its children.
        derived: i8,
    },

    /// Freshly built forced-capture bounds failed their check; they were not written.
    #[error("the forced-capture bounds of layer {layer} failed their check: {detail}; they were not written")]
    BoundsCheck {
        /// The layer.
        layer: u32,
        /// What was wrong, at which position.
        detail: String,
    },

    /// A request the tool cannot serve as asked (bad argument combination, unsupported format).
    #[error("{0}")]
    Usage(String),

    /// A distributed build failed between ranks: a transport error, or ranks that disagree
    /// (another binary, other options).
    #[error("distributed build: {0}")]
    Cluster(ClusterError),
}

fn not_in_layer_reason(layer: u32, stones: u32) -> String {
    if stones == layer {
        "the opponent's row (pits 6..11) has no empty pit".into()
    } else {
        format!("the board holds {stones} stones")
    }
}

/// What `verify` found wrong, each kind in its own words (kinds with nothing wrong left out; the
/// values are named when nothing at all is counted).
fn verify_failed_text(wrong: &[(FileContent, u64)], facts: u64) -> String {
    let one = |k: u64, a: &'static str, b: &'static str| if k == 1 { a } else { b };
    let total: u64 = wrong.iter().map(|&(_, k)| k).sum::<u64>() + facts;
    let values = wrong.iter().find(|(c, _)| *c == FileContent::Values).map_or(0, |&(_, k)| k);
    let mut parts = Vec::new();
    if values == 0 && total == 0 {
        parts.push(format!("0 {} do not follow from their children", FileContent::Values.entries(0)));
    }
    for &(content, k) in wrong.iter().filter(|&&(_, k)| k > 0) {
        parts.push(format!("{k} {} {} not follow from {} {}", content.entries(k), one(k, "does", "do"), one(k, "its", "their"), content.derived_from()));
    }
    if facts > 0 {
        parts.push(format!("{facts} fact{} contradicted", one(facts, "", "s")));
    }
    parts.join(", ")
}

fn board_text(b: &[u8; 12]) -> String {
    b.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" ")
}

impl Error {
    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidPosition(_) => ErrorKind::InvalidPosition,
            Error::NotInLayer { .. } => ErrorKind::NotInLayer,
            Error::IndexOutOfRange { .. } => ErrorKind::IndexOutOfRange,
            Error::LayerMissing { .. } | Error::PublishedLayerMissing { .. } => ErrorKind::LayerMissing,
            Error::CompanionMissing { kind, .. } => kind.missing_kind(),
            Error::RulesetMismatch { .. } | Error::LayerMismatch { .. } => ErrorKind::Foreign,
            Error::Corrupt { .. } => ErrorKind::Damaged,
            Error::NotAFile { .. } | Error::Io { .. } | Error::DiskSpace { .. } => ErrorKind::Io,
            Error::Output { .. } => ErrorKind::Output,
            Error::OutOfMemory { .. } => ErrorKind::OutOfMemory,
            Error::Threads { .. } => ErrorKind::Threads,
            Error::Interrupted => ErrorKind::Interrupted,
            Error::VerifyFailed { .. } | Error::SpotCheck { .. } | Error::BoundsCheck { .. } => ErrorKind::VerificationFailed,
            Error::Usage(_) => ErrorKind::Usage,
            Error::Internal(_) => ErrorKind::Internal,
            Error::Cluster(_) => ErrorKind::Cluster,
        }
    }

    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), source }
    }

    /// A damaged-file error.
    pub fn corrupt(path: impl Into<PathBuf>, damage: Damage) -> Error {
        Error::Corrupt { path: path.into(), damage }
    }

    /// The message the bindings report (the C library's `oware_last_error`, the Python
    /// exceptions): the error's own, plus for a file beside the values not built
    /// ([`Error::CompanionMissing`]) the build's option that makes it (`--bounds`, `--dtc`),
    /// which a probe's message cannot guess. The `oware` program gives its own advice instead.
    pub fn binding_message(&self) -> String {
        match self {
            Error::CompanionMissing { kind, .. } => format!("{self}: build them with `oware build --{}`", kind.name()),
            _ => self.to_string(),
        }
    }
}

/// An error, for programs: the `{"code", "kind", "message"}` object of the JSON documents that
/// report errors (`query --json` batch records, `stats --json` damaged layers, `verify --json`,
/// the HTTP API).
#[derive(serde::Serialize, Debug)]
pub struct ErrorDoc<'a> {
    /// The exit code the error would give ([`ErrorKind::exit_status`]).
    pub code: i32,
    /// A stable name of the kind of error ([`ErrorKind::as_str`]).
    pub kind: &'a str,
    /// The message, as on stderr.
    pub message: String,
}

impl ErrorDoc<'_> {
    /// The document of `e`.
    pub fn of(e: &Error) -> ErrorDoc<'static> {
        ErrorDoc { code: e.kind().exit_status(), kind: e.kind().as_str(), message: e.to_string() }
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// One error of every variant with the kind it must have (the match in [`Error::kind`] is
    /// exhaustive; this pins each variant's kind, which the exit codes, JSON kinds, Python
    /// exceptions and C codes are derived from).
    fn every_variant() -> Vec<(Error, ErrorKind)> {
        let io = || std::io::Error::other("x");
        let p = || PathBuf::from("p");
        // One missing-file error per kind beside the values (the tests' own kind too).
        let companions = FileContent::COMPANIONS
            .iter()
            .map(|&kind| (Error::CompanionMissing { kind, layer: 7, dir: p(), rules: Ruleset::Awari }, ErrorKind::CompanionMissing(kind)));
        let first = vec![
            (Error::InvalidPosition(PositionError::TooManyStones { total: 49 }), ErrorKind::InvalidPosition),
            (Error::NotInLayer { layer: 3, stones: 4 }, ErrorKind::NotInLayer),
            (Error::IndexOutOfRange { layer: 2, index: 78, size: 78 }, ErrorKind::IndexOutOfRange),
            (Error::LayerMissing { layer: 7, dir: p(), rules: Ruleset::Awari }, ErrorKind::LayerMissing),
        ];
        let rest = vec![
            (Error::PublishedLayerMissing { layer: 7, path: p() }, ErrorKind::LayerMissing),
            (Error::RulesetMismatch { path: p(), found: Ruleset::Awari, expected: Ruleset::Awari }, ErrorKind::Foreign),
            (Error::LayerMismatch { path: p(), found: 3, expected: 4 }, ErrorKind::Foreign),
            (Error::Corrupt { path: p(), damage: Damage::Empty }, ErrorKind::Damaged),
            (Error::NotAFile { path: p(), found: FileKind::Fifo, expected: FileKind::File }, ErrorKind::Io),
            (Error::Io { path: p(), source: io() }, ErrorKind::Io),
            (Error::Output { stream: "stdout", source: io() }, ErrorKind::Output),
            (Error::OutOfMemory { layer: 30, needed: 2, available: 1, limit: MemoryLimit::Given }, ErrorKind::OutOfMemory),
            (Error::DiskSpace { path: p(), what: "layer 30".into(), needed: 2, available: 1 }, ErrorKind::Io),
            (Error::Threads { threads: 4, reason: "no".into() }, ErrorKind::Threads),
            (Error::Interrupted, ErrorKind::Interrupted),
            (Error::Internal("x".into()), ErrorKind::Internal),
            (Error::VerifyFailed { wrong: vec![(FileContent::Values, 1)], failed_facts: 0 }, ErrorKind::VerificationFailed),
            (Error::SpotCheck { layer: 3, index: 0, board: [0; 12], stored: 1, derived: 0 }, ErrorKind::VerificationFailed),
            (Error::BoundsCheck { layer: 3, detail: "x".into() }, ErrorKind::VerificationFailed),
            (Error::Usage("x".into()), ErrorKind::Usage),
            (Error::Cluster(ClusterError::PeerStopped), ErrorKind::Cluster),
        ];
        first.into_iter().chain(companions).chain(rest).collect()
    }

    #[test]
    fn every_variant_has_its_kind() {
        for (e, kind) in every_variant() {
            // A new variant must be added to `every_variant` (this match fails to compile).
            match &e {
                Error::InvalidPosition(_)
                | Error::NotInLayer { .. }
                | Error::IndexOutOfRange { .. }
                | Error::LayerMissing { .. }
                | Error::CompanionMissing { .. }
                | Error::PublishedLayerMissing { .. }
                | Error::RulesetMismatch { .. }
                | Error::LayerMismatch { .. }
                | Error::Corrupt { .. }
                | Error::NotAFile { .. }
                | Error::Io { .. }
                | Error::Output { .. }
                | Error::OutOfMemory { .. }
                | Error::DiskSpace { .. }
                | Error::Threads { .. }
                | Error::Interrupted
                | Error::Internal(_)
                | Error::VerifyFailed { .. }
                | Error::SpotCheck { .. }
                | Error::BoundsCheck { .. }
                | Error::Usage(_)
                | Error::Cluster(_) => {}
            }
            assert_eq!(e.kind(), kind, "{e:?}");
        }
        // Every kind is some variant's.
        for k in ErrorKind::all() {
            assert!(every_variant().iter().any(|(_, kind)| *kind == k), "{k:?} is no variant's kind");
        }
    }

    #[test]
    fn kind_names_are_stable_and_distinct() {
        let names: Vec<&str> = ErrorKind::all().iter().map(|k| k.as_str()).collect();
        // The names users see: the tests' own kind beside the values (after the depths) aside.
        let tests_own: Vec<&str> = FileContent::COMPANIONS.iter().skip(2).map(|k| k.missing_name()).collect();
        let shipped: Vec<&str> = names.iter().copied().filter(|n| !tests_own.contains(n)).collect();
        assert_eq!(
            shipped,
            [
                "usage",
                "invalid_position",
                "not_in_layer",
                "index_out_of_range",
                "layer_missing",
                "bounds_missing",
                "dtc_missing",
                "damaged_file",
                "foreign_file",
                "io",
                "output",
                "out_of_memory",
                "threads",
                "verification_failed",
                "cluster",
                "interrupted",
                "internal"
            ]
        );
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn messages_name_the_kind_of_file_and_of_mismatch() {
        let sum = || Damage::PayloadChecksum { stored: 1, computed: 2 };
        let checksum = "payload checksum mismatch (header 0000000000000001, payload 0000000000000002)";
        for (path, words) in [
            ("/db/awari/layer-07.owdb", "damaged layer file: {c}: values were altered"),
            ("/db/awari/bounds-07.owdb", "damaged bounds file: {c}: bounds were altered"),
            ("/db/awari/dtc-07.owdb", "damaged dtc file: {c}: depths to capture were altered"),
        ] {
            assert_eq!(Error::corrupt(path, sum()).to_string(), format!("{path}: {}", words.replace("{c}", checksum)));
        }
        // A damage only one kind of file can have names that kind, whatever the file's name.
        let e = Error::corrupt("/tmp/x.owdb", Damage::DtcContradictsValue { index: 3, dtc: Some(2), value: 0 });
        assert_eq!(e.to_string(), "/tmp/x.owdb: damaged dtc file: position 3 has depth to capture 2 but value 0");
        assert!(Error::corrupt("/tmp/x.owdb", Damage::BadBoundsCode { index: 0, code: 9 }).to_string().contains("damaged bounds file"));
        // Issue 52, item 12: a manifest problem is named so, not "damaged layer file".
        let e = Error::corrupt("/packs/SHA256SUMS", Damage::Manifest { what: "awari/layer-12.owpk is listed but missing".into() });
        assert_eq!(e.to_string(), "/packs/SHA256SUMS: manifest check failed: awari/layer-12.owpk is listed but missing");
        let e = Error::corrupt("/packs/awari/dtc-07.owpk", Damage::Manifest { what: "SHA-256 a differs from the manifest's b".into() });
        assert_eq!(e.to_string(), "/packs/awari/dtc-07.owpk: manifest check failed: SHA-256 a differs from the manifest's b");
        assert_eq!(e.kind(), ErrorKind::Damaged);
        let failed = |v, b, d, f| {
            let wrong = vec![(FileContent::Values, v), (FileContent::Bounds, b), (FileContent::Dtc, d)];
            Error::VerifyFailed { wrong, failed_facts: f }.to_string()
        };
        assert_eq!(failed(1, 0, 0, 0), "verification failed: 1 value does not follow from its children");
        assert_eq!(failed(0, 0, 1, 0), "verification failed: 1 depth to capture does not follow from its moves");
        assert_eq!(
            failed(3, 2, 4, 1),
            "verification failed: 3 values do not follow from their children, 2 bounds entries do not follow from their children, 4 depths to capture do not follow from their moves, 1 fact contradicted"
        );
        assert_eq!(failed(0, 0, 0, 2), "verification failed: 2 facts contradicted");
    }

    #[test]
    fn binding_messages_name_the_build_of_missing_companions() {
        let dtc = Error::CompanionMissing { kind: FileContent::Dtc, layer: 4, dir: PathBuf::from("/db/awari"), rules: Ruleset::Awari };
        let bounds = Error::CompanionMissing { kind: FileContent::Bounds, layer: 4, dir: PathBuf::from("/db/awari"), rules: Ruleset::Awari };
        assert_eq!(bounds.binding_message(), format!("{bounds}: build them with `oware build --bounds`"));
        assert_eq!(bounds.to_string(), "the forced-capture bounds of layer 4 of awari are not built in /db/awari");
        assert_eq!(dtc.to_string(), "the depths to capture (dtc) of layer 4 of awari are not built in /db/awari");
        assert_eq!(dtc.binding_message(), format!("{dtc}: build them with `oware build --dtc`"));
        let values = Error::LayerMissing { layer: 4, dir: PathBuf::from("/db/awari"), rules: Ruleset::Awari };
        assert_eq!(values.binding_message(), values.to_string());
    }

    #[test]
    fn cluster_messages() {
        assert_eq!(Error::Cluster(ClusterError::PeerStopped).to_string(), "distributed build: another rank stopped");
        assert_eq!(ClusterError::OtherOptions { ranks: vec![2, 5] }.to_string(), "ranks 2, 5 were given other options (or see other directories) than rank 0");
        assert_eq!(ClusterError::ForeignBinary { ranks: vec![1] }.to_string(), "ranks 1 run another oware binary than rank 0");
        assert_eq!(ClusterError::ExchangeTooLarge { part: ExchangePart::ToOneRank }.to_string(), "an exchange of more than 2^31 elements to one rank");
        assert_eq!(ClusterError::NoFunneledThreading { offered: "Single".into() }.to_string(), "the MPI library offers only Single threading, not Funneled");
    }
}
