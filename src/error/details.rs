//! The data inside errors: what was wrong with a position, a file, a cluster, a memory limit.

use std::fmt;
use std::path::Path;

use super::*;

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
    /// A symbolic link (where links are not followed).
    Symlink,
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
            FileKind::Symlink => "a symbolic link",
            FileKind::Other => "an unknown kind of file",
        })
    }
}

impl FileKind {
    /// The kind of a file type (as `metadata` gives it, links followed, or `symlink_metadata`).
    pub fn of(t: std::fs::FileType) -> FileKind {
        #[cfg(unix)]
        use std::os::unix::fs::FileTypeExt;
        if t.is_file() {
            return FileKind::File;
        }
        if t.is_dir() {
            return FileKind::Directory;
        }
        if t.is_symlink() {
            return FileKind::Symlink;
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

/// What a layer's file holds, as its name says: values (`layer-NN.owdb`, a pack, a published
/// file), forced-capture bounds (`bounds-NN.owdb`) or depths to capture (`dtc-NN.owdb`). The kind
/// at run time: the message of a damaged file names its kind by it, a missing file's error
/// ([`Error::CompanionMissing`](super::Error::CompanionMissing)) carries it, and the kinds of
/// [`crate::storage::Kind`] name theirs with it.
///
/// Everything said of a kind in words and numbers is one row of `FileContent::info`: a kind
/// beside the values is a variant, its row, and its place in [`FileContent::COMPANIONS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileContent {
    /// A layer's values.
    Values,
    /// A layer's forced-capture bounds.
    Bounds,
    /// A layer's depths to capture.
    Dtc,
    /// A kind that exists in the library's own tests only: each position's number of legal
    /// moves (`moves-NN.owdb`), built and verified through the same code as the others, to
    /// check that a kind is added in the files docs/architecture.md names.
    #[cfg(test)]
    Moves,
}

/// What one kind of file is called and how it reads, in words and numbers: a row of
/// `FileContent::info`.
#[derive(Debug)]
pub(crate) struct ContentInfo {
    /// How its files' names start (`layer`, `bounds`, `dtc`), the name of its part of
    /// `oware verify --json` and of the build's option.
    name: &'static str,
    /// The file's kind in words (`bounds file`).
    file: &'static str,
    /// What it holds, in few words (`bounds`).
    what: &'static str,
    /// What it holds, in full words (`forced-capture bounds`): a header's payload, a message.
    payload: &'static str,
    /// What is not built when its file is missing (`depths to capture (dtc)`).
    not_built: &'static str,
    /// One entry and several, in words.
    entry: (&'static str, &'static str),
    /// What an entry follows from: `children` or `moves`.
    derived_from: &'static str,
    /// What a verification found of every entry when none is wrong.
    checked_claim: &'static str,
    /// The stable name of its missing file's error kind (`bounds_missing`).
    missing_name: &'static str,
    /// The payload encoding its files' headers name (docs/FORMAT.md).
    encoding: u32,
}

impl FileContent {
    /// The kinds of file beside the values, in the order they are built, verified and reported.
    #[cfg(not(test))]
    pub const COMPANIONS: &'static [FileContent] = &[FileContent::Bounds, FileContent::Dtc];
    /// The kinds of file beside the values, in the order they are built, verified and reported
    /// (with the tests' own kind).
    #[cfg(test)]
    pub const COMPANIONS: &'static [FileContent] = &[FileContent::Bounds, FileContent::Dtc, FileContent::Moves];

    /// Every kind: the values, then [`COMPANIONS`](Self::COMPANIONS).
    pub fn all() -> impl Iterator<Item = FileContent> {
        std::iter::once(FileContent::Values).chain(FileContent::COMPANIONS.iter().copied())
    }

    /// The kind's row: everything said of it in words and numbers.
    const fn info(self) -> &'static ContentInfo {
        match self {
            FileContent::Values => &ContentInfo {
                name: "layer",
                file: "layer file",
                what: "values",
                payload: "values",
                not_built: "values",
                entry: ("value", "values"),
                derived_from: "children",
                checked_claim: "follows from its children",
                missing_name: "layer_missing",
                encoding: 1,
            },
            FileContent::Bounds => &ContentInfo {
                name: "bounds",
                file: "bounds file",
                what: "bounds",
                payload: "forced-capture bounds",
                not_built: "forced-capture bounds",
                entry: ("bounds entry", "bounds entries"),
                derived_from: "children",
                checked_claim: "satisfies its equations and agrees with its value",
                missing_name: "bounds_missing",
                encoding: 2,
            },
            FileContent::Dtc => &ContentInfo {
                name: "dtc",
                file: "dtc file",
                what: "depths to capture",
                payload: "depths to capture",
                not_built: "depths to capture (dtc)",
                entry: ("depth to capture", "depths to capture"),
                derived_from: "moves",
                checked_claim: "follows from its moves",
                missing_name: "dtc_missing",
                encoding: 3,
            },
            #[cfg(test)]
            FileContent::Moves => &ContentInfo {
                name: "moves",
                file: "moves file",
                what: "move counts",
                payload: "move counts",
                not_built: "move counts",
                entry: ("move count", "move counts"),
                derived_from: "moves",
                checked_claim: "counts its moves",
                missing_name: "moves_missing",
                encoding: 0x7E57,
            },
        }
    }

    /// The kinds whose flag is set in `asked`, in its order: what options such as `--bounds`
    /// and `--dtc` ask for ([`crate::BuildConfig::companions`],
    /// [`crate::verify::VerifyOptions::require`]).
    ///
    /// Cost: none.
    pub fn selected(asked: impl IntoIterator<Item = (bool, FileContent)>) -> Vec<FileContent> {
        asked.into_iter().filter_map(|(set, kind)| set.then_some(kind)).collect()
    }

    /// What the damaged file at `path` holds: told by `damage` when only one kind of file can
    /// have it (a bounds code, a depth), else by the file's name.
    pub fn of(path: &Path, damage: &Damage) -> FileContent {
        match damage {
            Damage::BadBoundsCode { .. } | Damage::BoundsInconsistent { .. } | Damage::BoundsContradictValue { .. } => return FileContent::Bounds,
            Damage::BadDtc { .. } | Damage::DtcContradictsValue { .. } | Damage::DtcInconsistent { .. } => return FileContent::Dtc,
            _ => {}
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        FileContent::COMPANIONS.iter().copied().find(|c| name.strip_prefix(c.name()).is_some_and(|r| r.starts_with('-'))).unwrap_or(FileContent::Values)
    }

    /// The kind whose files' headers name payload encoding `encoding`, if any.
    pub fn of_encoding(encoding: u32) -> Option<FileContent> {
        FileContent::all().find(|c| c.encoding() == encoding)
    }

    /// The payload encoding its files' headers name (docs/FORMAT.md).
    pub const fn encoding(self) -> u32 {
        self.info().encoding
    }

    /// How its files' names start: `layer` (`layer-NN.owdb`, `layer-NN.owpk`, `layer-NN.json`),
    /// `bounds`, `dtc`; also the name of its part of `oware verify --json` and of the build's
    /// option (`--bounds`, `--dtc`).
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The file's kind in words: `layer file`, `bounds file`, `dtc file`.
    pub fn file(self) -> &'static str {
        self.info().file
    }

    /// What it holds in words: `values`, `bounds`, `depths to capture`.
    pub fn what(self) -> &'static str {
        self.info().what
    }

    /// What a file's payload holds in full words: `values`, `forced-capture bounds`, `depths to
    /// capture`.
    pub fn payload(self) -> &'static str {
        self.info().payload
    }

    /// What is not built when its file is missing, in words: `values`, `forced-capture bounds`,
    /// `depths to capture (dtc)`.
    pub(crate) fn not_built(self) -> &'static str {
        self.info().not_built
    }

    /// `count` of its entries in words: `1 value`, `2 bounds entries`, `3 depths to capture`
    /// (without the number).
    pub fn entries(self, count: u64) -> &'static str {
        let (one, more) = self.info().entry;
        if count == 1 {
            one
        } else {
            more
        }
    }

    /// What an entry follows from: its `children` (values, bounds) or its `moves` (depths).
    pub(crate) fn derived_from(self) -> &'static str {
        self.info().derived_from
    }

    /// What a verification found of every entry checked when none is wrong (`oware verify`'s
    /// summary): `follows from its children`, `satisfies its equations and agrees with its
    /// value`, `follows from its moves`.
    pub(crate) fn checked_claim(self) -> &'static str {
        self.info().checked_claim
    }

    /// The kind of the error for its file not built: [`ErrorKind::LayerMissing`], else
    /// [`ErrorKind::CompanionMissing`] of this kind.
    pub(crate) fn missing_kind(self) -> ErrorKind {
        match self {
            FileContent::Values => ErrorKind::LayerMissing,
            companion => ErrorKind::CompanionMissing(companion),
        }
    }

    /// The stable name of the error kind of its file not built, as JSON documents give it:
    /// `layer_missing`, `bounds_missing`, `dtc_missing`.
    pub(crate) fn missing_name(self) -> &'static str {
        self.info().missing_name
    }
}

impl fmt::Display for FileContent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The message of a damaged file: `PATH: damaged KIND file: DAMAGE`, in the words of what it
/// holds ([`FileContent::of`]); of a manifest problem, `PATH: manifest check failed: WHAT`.
pub(super) fn corrupt_text(path: &Path, damage: &Damage) -> String {
    struct InFile<'a>(&'a Damage, FileContent);
    impl fmt::Display for InFile<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.fmt_in(f, self.1)
        }
    }
    let content = FileContent::of(path, damage);
    if let Damage::Manifest { .. } = damage {
        // The manifest, or a file its digest disagrees with: a manifest problem, whatever file
        // it names (`PATH: manifest check failed: WHAT`), not a damaged layer.
        return format!("{}: {}", path.display(), InFile(damage, content));
    }
    format!("{}: damaged {}: {}", path.display(), content.file(), InFile(damage, content))
}

/// What is wrong with a damaged layer, bounds or dtc file: the first problem found, as data.
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
    /// A zstd-compressed file (a published `scores.N.zst`) does not decompress; `what` says how.
    Compressed {
        /// What is wrong, e.g. "not a zstd file (Unknown frame descriptor)".
        what: String,
    },
    /// A pack directory's `SHA256SUMS` is malformed or disagrees with the files; `what` says how.
    Manifest {
        /// What is wrong, e.g. "line 3: the digest is not 64 hex digits".
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
    /// A dtc file's payload is malformed (its length, or an escaped depth without its record).
    BadDtc {
        /// What is wrong.
        what: String,
    },
    /// A stored depth to capture contradicts the position's value (a depth for value 0, or
    /// none for another value).
    DtcContradictsValue {
        /// The position's index.
        index: u64,
        /// The stored depth (`None`: none).
        dtc: Option<u16>,
        /// The position's value.
        value: i8,
    },
    /// A stored depth to capture contradicts the definition over the position's moves.
    DtcInconsistent {
        /// The position, mover-first.
        board: [u8; 12],
        /// The stored depth.
        stored: Option<u16>,
        /// What the moves give.
        derived: Option<u16>,
    },
    /// The file was changed (truncated, extended or rewritten in place: its length or its
    /// modification time changed) while it was open.
    ChangedWhileOpen {
        /// Its length when it was opened.
        opened: u64,
        /// Its length now (the same when it was rewritten at the same size).
        now: u64,
    },
}

fn depth_text(d: Option<u16>) -> String {
    d.map_or_else(|| "none".to_string(), |d| d.to_string())
}

fn escaped(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

impl fmt::Display for Damage {
    /// The damage in the words of a layer file (an error's message words it for its file:
    /// [`FileContent`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_in(f, FileContent::Values)
    }
}

impl Damage {
    /// The damage in the words of a file holding `content`.
    fn fmt_in(&self, f: &mut fmt::Formatter<'_>, content: FileContent) -> fmt::Result {
        let file = content.file();
        match self {
            Damage::Empty => write!(f, "file is empty"),
            Damage::ShortHeader { len } => write!(f, "file is {len} bytes, shorter than the header"),
            Damage::BadMagic { found } => {
                write!(f, "bad magic \"{}\": not an oware {file}", escaped(found))
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
                write!(f, "payload checksum mismatch (header {stored:016x}, payload {computed:016x}): {} were altered", content.what())
            }
            Damage::ValueOutOfRange { index, value, stones } => {
                write!(f, "position {index} holds value {value}, outside -{stones}..={stones}")
            }
            Damage::Inconsistent { board, stored, best_move } => {
                write!(f, "position {} is stored as {stored:+} but its best move is worth {best_move:+}: the values contradict each other", board_text(board))
            }
            Damage::Pack { what } => write!(f, "damaged pack: {what}"),
            Damage::Compressed { what } => write!(f, "damaged zstd-compressed file: {what}"),
            Damage::Manifest { what } => write!(f, "manifest check failed: {what}"),
            Damage::WrongContent { found, expected } => write!(f, "the file holds {found}, not {expected}"),
            Damage::BadBoundsCode { index, code } => write!(f, "bounds entry {index} holds code {code}, which is no pair of the layer"),
            Damage::BoundsInconsistent { board, stored, derived } => {
                write!(f, "position {} has stored bounds {}/{} but its moves give {}/{}", board_text(board), stored.0, stored.1, derived.0, derived.1)
            }
            Damage::BoundsContradictValue { board, bounds, value } => {
                write!(f, "position {} has bounds {}/{} that contradict its value {value}", board_text(board), bounds.0, bounds.1)
            }
            Damage::BadDtc { what } => write!(f, "{what}"),
            Damage::DtcContradictsValue { index, dtc, value } => {
                write!(f, "position {index} has depth to capture {} but value {value}", depth_text(*dtc))
            }
            Damage::DtcInconsistent { board, stored, derived } => {
                write!(f, "position {} has depth to capture {} but its moves give {}", board_text(board), depth_text(*stored), depth_text(*derived))
            }
            Damage::ChangedWhileOpen { opened, now } if opened == now => {
                write!(f, "the file was rewritten in place while it was open (same size, {now} bytes, new modification time): {file}s must not be modified while in use")
            }
            Damage::ChangedWhileOpen { opened, now } => {
                write!(f, "the file changed while it was open ({opened} bytes when opened, {now} now): {file}s must not be modified while in use")
            }
        }
    }
}
