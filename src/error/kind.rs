//! The categories of errors ([`ErrorKind`]) that programs act on.

use std::fmt;

use super::FileContent;

/// The category of an `Error`: what a program acts on. Stable: [`ErrorKind::as_str`] names
/// it in JSON documents, and the `oware` program, the Python binding and the C library each map
/// it (once) to an exit code, an exception class, a return code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A request that cannot be served as asked (bad argument combination, unsupported format).
    Usage,
    /// A position that cannot be understood or is not a legal board.
    InvalidPosition,
    /// A board looked up in a layer it is not in.
    NotInLayer,
    /// An index past the end of a layer.
    IndexOutOfRange,
    /// A layer is not built (or a published `scores.N` is absent).
    LayerMissing,
    /// A layer's file beside its values is not built: its forced-capture bounds
    /// ([`FileContent::Bounds`]), its depths to capture ([`FileContent::Dtc`]).
    CompanionMissing(FileContent),
    /// A damaged layer file.
    Damaged,
    /// A file of another ruleset or another layer.
    Foreign,
    /// An operating-system error on a file or directory, a path that is not a regular file, or
    /// not enough disk space.
    Io,
    /// Standard output or standard error could not be written.
    Output,
    /// Not enough memory.
    OutOfMemory,
    /// Worker threads could not be started.
    Threads,
    /// Values, bounds or depths to capture that do not follow from their children (`verify`, a build's checks).
    VerificationFailed,
    /// The ranks of a distributed build disagree or their transport failed.
    Cluster,
    /// Interrupted before the work finished.
    Interrupted,
    /// A failure inside the program that no input explains.
    Internal,
}

impl ErrorKind {
    /// The exit status of the `oware` program for an error of this kind: the one table of exit
    /// codes. It is also the `code` of the JSON error documents (query's batch errors, verify's
    /// report) and of the C library's return codes; docs/cli.md ("Exit codes") documents it.
    ///
    /// | code | kinds |
    /// |---|---|
    /// | 1 | internal error |
    /// | 2 | usage: a bad command line (also clap's own usage errors) |
    /// | 3 | invalid position, a board not in its layer, an index past a layer's end |
    /// | 4 | a layer (or its bounds, or its dtc) not built |
    /// | 5 | a damaged layer file |
    /// | 6 | a file of another ruleset or another layer |
    /// | 7 | I/O or system error (disk full or too small, permissions, output closed, threads) |
    /// | 8 | verification found wrong values (or bounds) |
    /// | 9 | not enough memory |
    /// | 10 | distributed build: ranks disagree or their transport failed |
    /// | 130 | interrupted |
    pub const fn exit_status(self) -> i32 {
        match self {
            ErrorKind::Internal => 1,
            ErrorKind::Usage => 2,
            ErrorKind::InvalidPosition | ErrorKind::NotInLayer | ErrorKind::IndexOutOfRange => 3,
            ErrorKind::LayerMissing | ErrorKind::CompanionMissing(_) => 4,
            ErrorKind::Damaged => 5,
            ErrorKind::Foreign => 6,
            ErrorKind::Io | ErrorKind::Output | ErrorKind::Threads => 7,
            ErrorKind::VerificationFailed => 8,
            ErrorKind::OutOfMemory => 9,
            ErrorKind::Cluster => 10,
            ErrorKind::Interrupted => 130,
        }
    }

    /// Every kind (one [`ErrorKind::CompanionMissing`] per kind of file beside the values).
    pub fn all() -> Vec<ErrorKind> {
        use ErrorKind::*;
        let mut all = vec![Usage, InvalidPosition, NotInLayer, IndexOutOfRange, LayerMissing];
        all.extend(FileContent::COMPANIONS.iter().copied().map(CompanionMissing));
        all.extend([Damaged, Foreign, Io, Output, OutOfMemory, Threads, VerificationFailed, Cluster, Interrupted, Internal]);
        all
    }

    /// The kind's stable name, as JSON documents give it (`"invalid_position"`, ...; a missing
    /// companion's names its kind: `"bounds_missing"`, `"dtc_missing"`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Usage => "usage",
            ErrorKind::InvalidPosition => "invalid_position",
            ErrorKind::NotInLayer => "not_in_layer",
            ErrorKind::IndexOutOfRange => "index_out_of_range",
            ErrorKind::LayerMissing => "layer_missing",
            ErrorKind::CompanionMissing(kind) => kind.missing_name(),
            ErrorKind::Damaged => "damaged_file",
            ErrorKind::Foreign => "foreign_file",
            ErrorKind::Io => "io",
            ErrorKind::Output => "output",
            ErrorKind::OutOfMemory => "out_of_memory",
            ErrorKind::Threads => "threads",
            ErrorKind::VerificationFailed => "verification_failed",
            ErrorKind::Cluster => "cluster",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
