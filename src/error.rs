//! Typed errors of the library, each of an [`ErrorKind`]: the category a program acts on (the
//! `oware` program maps kinds to exit codes, the Python binding to exception classes, the C
//! library to return codes, each in one place).
//!
//! Error payloads are data (layer numbers, paths, expected and found values, raw bytes as
//! numbers), not preformatted sentences, so a program can act on them; `Display` renders them
//! for people (escaping any byte read from a file). Advice such as which command to run next
//! belongs to the program that shows the error (the CLI adds it), not to the error.

use std::fmt;
use std::path::PathBuf;

use crate::rules::Ruleset;

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

    /// A layer's forced-capture bounds have not been built.
    #[error("the forced-capture bounds of layer {layer} of {rules} are not built in {}", .dir.display())]
    BoundsMissing {
        /// The layer.
        layer: u32,
        /// The ruleset's directory they were looked for in.
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

    /// A layer file is damaged: bad magic, wrong header field, wrong size or checksum.
    #[error("{}: damaged layer file: {damage}", .path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The first problem found.
        damage: Damage,
    },

    /// A path that should be a regular file (a layer, a statistics file) is something else: a
    /// directory, a FIFO, a device, a socket. Such files are never opened for reading (a FIFO
    /// would block forever).
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

    /// `verify` found values that do not follow from their children, or a contradicted fact.
    #[error("verification failed: {wrong_values} values do not follow from their children, {failed_facts} facts contradicted")]
    VerifyFailed {
        /// Positions whose stored value is wrong.
        wrong_values: u64,
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

/// What went wrong between the ranks of a distributed build, as data.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClusterError {
    /// A rank of an in-process (thread) cluster left it: it takes part in no more operations.
    RankLeft,
    /// Another rank stopped (interrupted or failed) and told the others at an agreement point.
    PeerStopped,
    /// These ranks run another `oware` binary than rank 0.
    ForeignBinary {
        /// The ranks that differ from rank 0.
        ranks: Vec<usize>,
    },
    /// These ranks were given other options (or see other directories) than rank 0.
    OtherOptions {
        /// The ranks that differ from rank 0.
        ranks: Vec<usize>,
    },
    /// MPI was initialised before the cluster was made.
    AlreadyInitialised,
    /// The MPI library does not offer `MPI_THREAD_FUNNELED`.
    NoFunneledThreading {
        /// The threading level it offers.
        offered: String,
    },
    /// An exchange between ranks would move more than 2^31 elements (MPI's counts are `int`).
    ExchangeTooLarge {
        /// Which count passed the limit.
        part: ExchangePart,
    },
}

/// Which count of an exchange between ranks passed a limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExchangePart {
    /// What one rank sends to one rank.
    ToOneRank,
    /// What one rank sends in all.
    InAll,
    /// What one rank receives in all.
    Received,
}

impl fmt::Display for ExchangePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ExchangePart::ToOneRank => "to one rank",
            ExchangePart::InAll => "in all",
            ExchangePart::Received => "received",
        })
    }
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |r: &[usize]| r.iter().map(usize::to_string).collect::<Vec<_>>().join(", ");
        match self {
            ClusterError::RankLeft => f.write_str("a rank of the thread cluster has left"),
            ClusterError::PeerStopped => f.write_str("another rank stopped"),
            ClusterError::ForeignBinary { ranks } => write!(f, "ranks {} run another oware binary than rank 0", list(ranks)),
            ClusterError::OtherOptions { ranks } => {
                write!(f, "ranks {} were given other options (or see other directories) than rank 0", list(ranks))
            }
            ClusterError::AlreadyInitialised => f.write_str("MPI was already initialised"),
            ClusterError::NoFunneledThreading { offered } => write!(f, "the MPI library offers only {offered} threading, not Funneled"),
            ClusterError::ExchangeTooLarge { part } => write!(f, "an exchange of more than 2^31 elements {part}"),
        }
    }
}

fn not_in_layer_reason(layer: u32, stones: u32) -> String {
    if stones == layer {
        "the opponent's row (pits 6..11) has no empty pit".into()
    } else {
        format!("the board holds {stones} stones")
    }
}

fn board_text(b: &[u8; 12]) -> String {
    b.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" ")
}

/// Which part of the input a position error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Part {
    /// The whole position (12 counts).
    Position,
    /// South's row (`--south`).
    SouthRow,
    /// North's row (`--north`).
    NorthRow,
    /// The top row of a drawn board.
    TopRow,
    /// The bottom row of a drawn board.
    BottomRow,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Part::Position => "position",
            Part::SouthRow => "South's row",
            Part::NorthRow => "North's row",
            Part::TopRow => "top row",
            Part::BottomRow => "bottom row",
        })
    }
}

/// What is wrong with a position given as text, as data.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PositionError {
    /// The wrong number of counts.
    WrongCount {
        /// Which part.
        part: Part,
        /// Counts expected.
        expected: usize,
        /// Counts found (counting stops at `expected + 1`).
        found: usize,
        /// The input, quoted by `position::excerpt`.
        excerpt: String,
    },
    /// A count is not a whole number.
    NotANumber {
        /// Which part.
        part: Part,
        /// Index of the count in its part.
        pit: usize,
        /// The token, quoted by `position::excerpt`.
        excerpt: String,
    },
    /// A count is negative.
    Negative {
        /// Which part.
        part: Part,
        /// Index of the count in its part.
        pit: usize,
        /// The token, quoted by `position::excerpt`.
        excerpt: String,
    },
    /// A count is above 48 (`found` is `None` when it does not even fit in 64 bits).
    PitTooLarge {
        /// Which part.
        part: Part,
        /// Index of the count in its part.
        pit: usize,
        /// The count.
        found: Option<u64>,
    },
    /// More than 48 stones on the board.
    TooManyStones {
        /// Stones found.
        total: u32,
    },
    /// The side to move is neither South nor North.
    BadSide {
        /// The input, quoted by `position::excerpt`.
        excerpt: String,
    },
    /// The input's structure is wrong (brackets, rows).
    Malformed {
        /// What is wrong.
        reason: &'static str,
        /// The input, quoted by `position::excerpt`.
        excerpt: String,
    },
    /// A move is not written as a house (`A`..`F`, `a`..`f`) or a pit (`0`..`5`), or names the
    /// other side's house.
    BadMove {
        /// What is wrong.
        reason: &'static str,
        /// The input, quoted by `position::excerpt`.
        excerpt: String,
    },
    /// The position's text names one side to move and the caller another.
    SideConflict {
        /// The side the text names (`South` or `North`).
        named: &'static str,
        /// The side given besides (`--to-move`, `to_move=`).
        given: &'static str,
    },
    /// A move is not legal in its position.
    IllegalMove {
        /// The house played (`A`..`F` for South, `a`..`f` for North).
        house: char,
        /// Why it is not legal.
        reason: &'static str,
    },
    /// An input line is longer than any position can be (it was not read into memory).
    LineTooLong {
        /// Its length.
        bytes: u64,
        /// The longest accepted.
        max: usize,
    },
}

impl fmt::Display for PositionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PositionError::WrongCount { part, expected, found, excerpt } if found > expected => {
                write!(f, "{part} needs {expected} pit counts, found more in {excerpt}")
            }
            PositionError::WrongCount { part, expected, found, excerpt } => {
                write!(f, "{part} needs {expected} pit counts, found {found} in {excerpt}")
            }
            PositionError::NotANumber { part, pit, excerpt } => {
                write!(f, "{part}: pit {pit} is {excerpt}, not a whole number")
            }
            PositionError::Negative { part, pit, excerpt } => write!(f, "{part}: pit {pit} has a negative count {excerpt}"),
            PositionError::PitTooLarge { part, pit, found: Some(v) } => {
                write!(f, "{part}: pit {pit} holds {v} stones; Oware has only {MAX}")
            }
            PositionError::PitTooLarge { part, pit, found: None } => {
                write!(f, "{part}: pit {pit} holds far more than {MAX} stones; Oware has only {MAX}")
            }
            PositionError::TooManyStones { total } => write!(f, "{total} stones on the board; Oware has only {MAX}"),
            PositionError::BadSide { excerpt } => write!(f, "side to move must be 'south' or 'north', not {excerpt}"),
            PositionError::Malformed { reason, excerpt } => write!(f, "{reason} in {excerpt}"),
            PositionError::BadMove { reason, excerpt } => write!(f, "move {excerpt}: {reason}"),
            PositionError::SideConflict { named, given } => {
                write!(f, "the position says {named} is to move, and {given} is given as the side to move")
            }
            PositionError::IllegalMove { house, reason } => write!(f, "move {house} is not legal here: {reason}"),
            PositionError::LineTooLong { bytes, max } => {
                write!(f, "line is {bytes} bytes long, more than the {max} bytes a position can take")
            }
        }
    }
}

/// The most stones an Oware board holds (for messages).
const MAX: u32 = crate::rules::TOTAL_STONES;

/// Which memory limit a build is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryLimit {
    /// The limit given by the caller (`--max-memory`).
    Given,
    /// What the system reports available (`MemAvailable`).
    Available,
    /// The system refused an allocation.
    Refused,
}

impl fmt::Display for MemoryLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemoryLimit::Given => "the limit given",
            MemoryLimit::Available => "the memory available",
            MemoryLimit::Refused => "what the system granted",
        })
    }
}

/// What a path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A named pipe.
    Fifo,
    /// A character or block device.
    Device,
    /// A Unix socket.
    Socket,
    /// Anything else.
    Other,
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileKind::File => "a regular file",
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO (named pipe)",
            FileKind::Device => "a device",
            FileKind::Socket => "a socket",
            FileKind::Other => "an unknown kind of file",
        })
    }
}

impl FileKind {
    /// The kind of a file type (as `metadata` gives it, links followed).
    pub fn of(t: std::fs::FileType) -> FileKind {
        #[cfg(unix)]
        use std::os::unix::fs::FileTypeExt;
        if t.is_file() {
            return FileKind::File;
        }
        if t.is_dir() {
            return FileKind::Directory;
        }
        #[cfg(unix)]
        {
            if t.is_fifo() {
                return FileKind::Fifo;
            }
            if t.is_char_device() || t.is_block_device() {
                return FileKind::Device;
            }
            if t.is_socket() {
                return FileKind::Socket;
            }
        }
        FileKind::Other
    }
}

/// What is wrong with a damaged layer file: the first problem found, as data.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Damage {
    /// The file has no bytes.
    Empty,
    /// The file is shorter than the header.
    ShortHeader {
        /// Its length.
        len: u64,
    },
    /// The first 8 bytes are not the format's magic.
    BadMagic {
        /// The bytes found.
        found: [u8; 8],
    },
    /// A numeric header field holds a value this version does not accept.
    HeaderField {
        /// The field's name.
        field: &'static str,
        /// What it must hold (for `stones`: the largest accepted value).
        expected: u64,
        /// What it holds.
        found: u64,
    },
    /// The ruleset id names no ruleset.
    UnknownRuleset {
        /// The id found.
        id: u32,
    },
    /// The ruleset id and the ruleset name field disagree.
    RulesetName {
        /// The id found.
        id: u32,
        /// The name field's bytes up to its first NUL.
        name: Vec<u8>,
    },
    /// A text field is not the one expected (e.g. an unknown checksum algorithm).
    TextField {
        /// The field's name.
        field: &'static str,
        /// Its bytes up to its first NUL.
        found: Vec<u8>,
    },
    /// A byte that must be zero (after a text field's end, reserved, padding) is not.
    NonZero {
        /// Where the byte is, in the file.
        at: u64,
        /// Its value.
        byte: u8,
    },
    /// The entry count and stone count fields disagree.
    EntriesDisagree {
        /// The entry count field.
        entries: u64,
        /// The stone count field.
        stones: u32,
        /// The number of positions of a layer of `stones` stones.
        layer_size: u64,
    },
    /// The header checksum does not match the header.
    HeaderChecksum {
        /// Stored in the header.
        stored: u64,
        /// Computed from the header.
        computed: u64,
    },
    /// The file's length is not what its header (or its layer) implies.
    Size {
        /// Bytes expected.
        expected: u64,
        /// Bytes found.
        found: u64,
    },
    /// The payload checksum does not match the payload: values were altered.
    PayloadChecksum {
        /// Stored in the header.
        stored: u64,
        /// Computed from the payload.
        computed: u64,
    },
    /// A stored value lies outside `-n..=n`.
    ValueOutOfRange {
        /// The position's index.
        index: u64,
        /// The value.
        value: i8,
        /// The layer's stones.
        stones: u32,
    },
    /// A stored value contradicts its moves' values (the best move is worth something else).
    Inconsistent {
        /// The position, mover-first.
        board: [u8; 12],
        /// Its stored value.
        stored: i8,
        /// The best value of its moves.
        best_move: i8,
    },
    /// A part of a pack file (model, block table, a block) is damaged; `what` names it.
    Pack {
        /// The part and what is wrong with it, e.g. "checksum mismatch in blocks 0..=63".
        what: String,
    },
    /// The file holds values where bounds were expected, or the other way round.
    WrongContent {
        /// What it holds ("values", "forced-capture bounds").
        found: &'static str,
        /// What was expected.
        expected: &'static str,
    },
    /// A bounds entry holds a code that is no pair of the layer.
    BadBoundsCode {
        /// The position's index.
        index: u64,
        /// The code found.
        code: u32,
    },
    /// Stored forced-capture bounds contradict the equations over the position's moves.
    BoundsInconsistent {
        /// The position, mover-first.
        board: [u8; 12],
        /// The stored bounds (mover, opponent).
        stored: (u8, u8),
        /// What the moves give (mover, opponent).
        derived: (u8, u8),
    },
    /// Stored forced-capture bounds contradict the position's value (`2 gM - n <= v <= n - 2 gN`
    /// and `gM + gN <= n` must hold).
    BoundsContradictValue {
        /// The position, mover-first.
        board: [u8; 12],
        /// The stored bounds (mover, opponent).
        bounds: (u8, u8),
        /// The position's value.
        value: i8,
    },
    /// The file was changed (truncated, extended or replaced in place) while it was open.
    ChangedWhileOpen {
        /// Its length when it was opened.
        opened: u64,
        /// Its length now.
        now: u64,
    },
}

fn escaped(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Damage::Empty => write!(f, "file is empty"),
            Damage::ShortHeader { len } => write!(f, "file is {len} bytes, shorter than the header"),
            Damage::BadMagic { found } => {
                write!(f, "bad magic \"{}\": not an oware layer file", escaped(found))
            }
            Damage::HeaderField { field, expected, found } if *field == "stones" => {
                write!(f, "stone count field is {found}, at most {expected}")
            }
            Damage::HeaderField { field, expected, found } => {
                write!(f, "{field} field is {found}, expected {expected}")
            }
            Damage::UnknownRuleset { id } => write!(f, "unknown ruleset id {id}"),
            Damage::RulesetName { id, name } => {
                write!(f, "ruleset id {id} ({}) disagrees with ruleset name field \"{}\"", Ruleset::from_id(*id).map_or("?", |r| r.name()), escaped(name))
            }
            Damage::TextField { field, found } => write!(f, "unknown {field} \"{}\"", escaped(found)),
            Damage::NonZero { at, byte } => write!(f, "byte {at} of the header is {byte:#04x}, must be zero"),
            Damage::EntriesDisagree { entries, stones, layer_size } => {
                write!(f, "entry count field ({entries}) and stone count field ({stones}, a layer of {layer_size} positions) disagree: one of them was altered")
            }
            Damage::HeaderChecksum { stored, computed } => {
                write!(f, "header checksum mismatch (stored {stored:016x}, computed {computed:016x}): a header field was altered")
            }
            Damage::Size { expected, found } => {
                write!(f, "file is {found} bytes, expected {expected} (truncated or extended)")
            }
            Damage::PayloadChecksum { stored, computed } => {
                write!(f, "payload checksum mismatch (header {stored:016x}, payload {computed:016x}): values were altered")
            }
            Damage::ValueOutOfRange { index, value, stones } => {
                write!(f, "position {index} holds value {value}, outside -{stones}..={stones}")
            }
            Damage::Inconsistent { board, stored, best_move } => {
                write!(f, "position {} is stored as {stored:+} but its best move is worth {best_move:+}: the values contradict each other", board_text(board))
            }
            Damage::Pack { what } => write!(f, "damaged pack: {what}"),
            Damage::WrongContent { found, expected } => write!(f, "the file holds {found}, not {expected}"),
            Damage::BadBoundsCode { index, code } => write!(f, "bounds entry {index} holds code {code}, which is no pair of the layer"),
            Damage::BoundsInconsistent { board, stored, derived } => {
                write!(f, "position {} has stored bounds {}/{} but its moves give {}/{}", board_text(board), stored.0, stored.1, derived.0, derived.1)
            }
            Damage::BoundsContradictValue { board, bounds, value } => {
                write!(f, "position {} has bounds {}/{} that contradict its value {value}", board_text(board), bounds.0, bounds.1)
            }
            Damage::ChangedWhileOpen { opened, now } => {
                write!(f, "the file changed while it was open ({opened} bytes when opened, {now} now): layer files must not be modified while in use")
            }
        }
    }
}

/// The category of an [`Error`]: what a program acts on. Stable: [`ErrorKind::as_str`] names
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
    /// A layer's forced-capture bounds are not built.
    BoundsMissing,
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
    /// Values or bounds that do not follow from their children (`verify`, a build's checks).
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
    /// | 4 | a layer (or its bounds) not built |
    /// | 5 | a damaged layer file |
    /// | 6 | a file of another ruleset or another layer |
    /// | 7 | I/O or system error (disk full or too small, permissions, output closed, threads) |
    /// | 8 | verification found wrong values (or bounds) |
    /// | 9 | not enough memory |
    /// | 10 | distributed build: ranks disagree or their transport failed |
    /// | 130 | interrupted |
    pub fn exit_status(self) -> i32 {
        match self {
            ErrorKind::Internal => 1,
            ErrorKind::Usage => 2,
            ErrorKind::InvalidPosition | ErrorKind::NotInLayer | ErrorKind::IndexOutOfRange => 3,
            ErrorKind::LayerMissing | ErrorKind::BoundsMissing => 4,
            ErrorKind::Damaged => 5,
            ErrorKind::Foreign => 6,
            ErrorKind::Io | ErrorKind::Output | ErrorKind::Threads => 7,
            ErrorKind::VerificationFailed => 8,
            ErrorKind::OutOfMemory => 9,
            ErrorKind::Cluster => 10,
            ErrorKind::Interrupted => 130,
        }
    }

    /// Every kind.
    pub const ALL: [ErrorKind; 16] = [
        ErrorKind::Usage,
        ErrorKind::InvalidPosition,
        ErrorKind::NotInLayer,
        ErrorKind::IndexOutOfRange,
        ErrorKind::LayerMissing,
        ErrorKind::BoundsMissing,
        ErrorKind::Damaged,
        ErrorKind::Foreign,
        ErrorKind::Io,
        ErrorKind::Output,
        ErrorKind::OutOfMemory,
        ErrorKind::Threads,
        ErrorKind::VerificationFailed,
        ErrorKind::Cluster,
        ErrorKind::Interrupted,
        ErrorKind::Internal,
    ];

    /// The kind's stable name, as JSON documents give it (`"invalid_position"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Usage => "usage",
            ErrorKind::InvalidPosition => "invalid_position",
            ErrorKind::NotInLayer => "not_in_layer",
            ErrorKind::IndexOutOfRange => "index_out_of_range",
            ErrorKind::LayerMissing => "layer_missing",
            ErrorKind::BoundsMissing => "bounds_missing",
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

impl Error {
    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidPosition(_) => ErrorKind::InvalidPosition,
            Error::NotInLayer { .. } => ErrorKind::NotInLayer,
            Error::IndexOutOfRange { .. } => ErrorKind::IndexOutOfRange,
            Error::LayerMissing { .. } | Error::PublishedLayerMissing { .. } => ErrorKind::LayerMissing,
            Error::BoundsMissing { .. } => ErrorKind::BoundsMissing,
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
        vec![
            (Error::InvalidPosition(PositionError::TooManyStones { total: 49 }), ErrorKind::InvalidPosition),
            (Error::NotInLayer { layer: 3, stones: 4 }, ErrorKind::NotInLayer),
            (Error::IndexOutOfRange { layer: 2, index: 78, size: 78 }, ErrorKind::IndexOutOfRange),
            (Error::LayerMissing { layer: 7, dir: p(), rules: Ruleset::Awari }, ErrorKind::LayerMissing),
            (Error::BoundsMissing { layer: 7, dir: p(), rules: Ruleset::Awari }, ErrorKind::BoundsMissing),
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
            (Error::VerifyFailed { wrong_values: 1, failed_facts: 0 }, ErrorKind::VerificationFailed),
            (Error::SpotCheck { layer: 3, index: 0, board: [0; 12], stored: 1, derived: 0 }, ErrorKind::VerificationFailed),
            (Error::BoundsCheck { layer: 3, detail: "x".into() }, ErrorKind::VerificationFailed),
            (Error::Usage("x".into()), ErrorKind::Usage),
            (Error::Cluster(ClusterError::PeerStopped), ErrorKind::Cluster),
        ]
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
                | Error::BoundsMissing { .. }
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
        for k in ErrorKind::ALL {
            assert!(every_variant().iter().any(|(_, kind)| *kind == k), "{k:?} is no variant's kind");
        }
    }

    #[test]
    fn kind_names_are_stable_and_distinct() {
        let names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "usage",
                "invalid_position",
                "not_in_layer",
                "index_out_of_range",
                "layer_missing",
                "bounds_missing",
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
    fn cluster_messages() {
        assert_eq!(Error::Cluster(ClusterError::PeerStopped).to_string(), "distributed build: another rank stopped");
        assert_eq!(ClusterError::OtherOptions { ranks: vec![2, 5] }.to_string(), "ranks 2, 5 were given other options (or see other directories) than rank 0");
        assert_eq!(ClusterError::ForeignBinary { ranks: vec![1] }.to_string(), "ranks 1 run another oware binary than rank 0");
        assert_eq!(ClusterError::ExchangeTooLarge { part: ExchangePart::ToOneRank }.to_string(), "an exchange of more than 2^31 elements to one rank");
        assert_eq!(ClusterError::NoFunneledThreading { offered: "Single".into() }.to_string(), "the MPI library offers only Single threading, not Funneled");
    }
}
