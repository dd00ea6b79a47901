//! Typed errors of the library, each with a distinct process exit code for the CLI.

use std::path::PathBuf;

/// Everything that can go wrong in the library. No variant is a panic in disguise: each names the
/// problem (and the file, position or layer involved) so a user can act on it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A position given by the user could not be understood or is not a legal Oware board.
    #[error("invalid position: {0}")]
    InvalidPosition(String),

    /// A board is not in the layer it was looked up in (wrong stone count, or full opponent row).
    #[error("board is not in layer {layer}: {reason}")]
    NotInLayer {
        /// The layer looked in.
        layer: u32,
        /// Why the board is not in it.
        reason: String,
    },

    /// An index past the end of a layer.
    #[error("index {index} is out of range for layer {layer} ({size} boards)")]
    IndexOutOfRange {
        /// The layer.
        layer: u32,
        /// The index asked for.
        index: u64,
        /// The layer's number of boards.
        size: u64,
    },

    /// A layer a query or build step needs has not been built.
    #[error("layer {layer} is not built in {dir}: run `oware build --rules {rules} --max-stones {layer}`")]
    LayerMissing {
        /// The layer.
        layer: u32,
        /// The ruleset's directory it was looked for in.
        dir: PathBuf,
        /// The ruleset's name, for the suggested command.
        rules: String,
    },

    /// A layer of a directory of published 2002 files (`scores.N`) is absent.
    #[error("{path} not found: this directory of published files has no layer {layer}")]
    PublishedLayerMissing {
        /// The layer.
        layer: u32,
        /// The `scores.N` path looked for.
        path: PathBuf,
    },

    /// A layer file exists but holds another ruleset's values.
    #[error("{path}: file holds ruleset '{found}', expected '{expected}'")]
    RulesetMismatch {
        /// The file.
        path: PathBuf,
        /// The ruleset its header names.
        found: String,
        /// The ruleset asked for.
        expected: String,
    },

    /// A layer file is damaged: bad magic, wrong header field, wrong size or checksum.
    #[error("{path}: damaged layer file: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The first problem found.
        reason: String,
    },

    /// An operating-system error while reading or writing a file (disk full, permissions, ...).
    #[error("{path}: {source}")]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },

    /// Building a layer needs more memory than is available or allowed.
    #[error("layer {layer} needs {needed} of memory but only {available} is available{hint}")]
    OutOfMemory {
        /// The layer that would not fit.
        layer: u32,
        /// Memory it needs, for people.
        needed: String,
        /// Memory available or allowed, for people.
        available: String,
        /// More context (which limit, which layers are complete), starting with a space or empty.
        hint: String,
    },

    /// A failure inside the program that no input explains (threads cannot start, ...).
    #[error("internal error: {0}")]
    Internal(String),

    /// `verify` found values that do not follow from their children.
    #[error("verification failed: {0}")]
    VerifyFailed(String),

    /// A request the tool cannot serve as asked (bad argument combination, unsupported format).
    #[error("{0}")]
    Usage(String),
}

impl Error {
    /// The process exit code for this error. Stable; documented in the README.
    ///
    /// | code | meaning |
    /// |---|---|
    /// | 1 | internal error |
    /// | 2 | bad command line (also clap's own usage errors) |
    /// | 3 | invalid position or board index |
    /// | 4 | layer not built |
    /// | 5 | damaged layer file |
    /// | 6 | ruleset mismatch |
    /// | 7 | I/O error (disk full, permissions, ...) |
    /// | 8 | verification found wrong values |
    /// | 9 | not enough memory |
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Internal(_) => 1,
            Error::Usage(_) => 2,
            Error::InvalidPosition(_) | Error::NotInLayer { .. } | Error::IndexOutOfRange { .. } => 3,
            Error::LayerMissing { .. } | Error::PublishedLayerMissing { .. } => 4,
            Error::Corrupt { .. } => 5,
            Error::RulesetMismatch { .. } => 6,
            Error::Io { .. } => 7,
            Error::VerifyFailed(_) => 8,
            Error::OutOfMemory { .. } => 9,
        }
    }

    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), source }
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
