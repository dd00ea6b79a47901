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
    NotInLayer { layer: u32, reason: String },

    /// An index past the end of a layer.
    #[error("index {index} is out of range for layer {layer} ({size} boards)")]
    IndexOutOfRange { layer: u32, index: u64, size: u64 },

    /// A layer a query or build step needs has not been built.
    #[error("layer {layer} is not built in {dir}: run `oware build --rules {rules} --max-stones {layer}`")]
    LayerMissing { layer: u32, dir: PathBuf, rules: String },

    /// A layer file exists but holds another ruleset's values.
    #[error("{path}: file holds ruleset '{found}', expected '{expected}'")]
    RulesetMismatch { path: PathBuf, found: String, expected: String },

    /// A layer file is damaged: bad magic, wrong header field, wrong size or checksum.
    #[error("{path}: damaged layer file: {reason}")]
    Corrupt { path: PathBuf, reason: String },

    /// An operating-system error while reading or writing a file (disk full, permissions, ...).
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },

    /// Building a layer needs more memory than is available or allowed.
    #[error("layer {layer} needs {needed} of memory but only {available} is available{hint}")]
    OutOfMemory { layer: u32, needed: String, available: String, hint: String },

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
    /// | 2 | bad command line (also clap's own usage errors) |
    /// | 3 | invalid position |
    /// | 4 | layer not built |
    /// | 5 | damaged layer file |
    /// | 6 | ruleset mismatch |
    /// | 7 | I/O error (disk full, permissions, ...) |
    /// | 8 | verification found wrong values |
    /// | 9 | not enough memory |
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::InvalidPosition(_) | Error::NotInLayer { .. } | Error::IndexOutOfRange { .. } => 3,
            Error::LayerMissing { .. } => 4,
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
