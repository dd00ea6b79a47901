//! The options several commands share and how they are read: the position, the ruleset, the
//! database directory and its format, `--json`, `--quiet`, `--threads`, `--max-stones`, the
//! search's options and where a game starts; each command's own options are in its file.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::Args;
use oware::game::Captured;
use oware::position::Side;
use oware::search::{Engine, Limits, MoverCaptured, DEFAULT_HASH_MB, MAX_DEPTH};
use oware::storage::{DatabaseDir, Format};
use oware::{Error, Position, Result, Ruleset};

use crate::output::note;

/// A position given on the command line: mover-first counts, or South/North rows.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct PositionArgs {
    /// The position: twelve pit counts in mover-first form (pits 0..5 are the mover's) separated
    /// by spaces or commas, e.g. `1 1 1 1 1 2 4 2 3 0 0 0`; or the JSON array `--json` prints;
    /// or the board as drawn, `"TOP / BOTTOM"` (with --to-move: North's row on top, South's
    /// below, as the South/North drawing shows them); or the side form, South's houses A..F,
    /// North's a..f and the side to move: `"S: 1 1 1 1 1 2  N: 4 2 3 0 0 0  S"`.
    #[arg(value_name = "POSITION", num_args = 0.., allow_negative_numbers = true)]
    pub(crate) counts: Vec<String>,
    /// South's six houses in sowing order, A..F (with --north and --to-move).
    #[arg(long, value_name = "COUNTS", requires_all = ["north", "to_move"])]
    pub(crate) south: Option<String>,
    /// North's six houses in sowing order, a..f (with --south and --to-move).
    #[arg(long, value_name = "COUNTS", requires_all = ["south", "to_move"])]
    pub(crate) north: Option<String>,
    /// Side to move, `south` or `north`: with --south/--north; with a drawn board (North on
    /// top); or with mover-first counts, to name the mover's side in the output.
    #[arg(long, value_name = "SIDE")]
    pub(crate) to_move: Option<Side>,
}

impl PositionArgs {
    /// The position given, or `None` when neither form was used.
    ///
    /// # Errors
    /// [`Error::InvalidPosition`] for malformed input; [`Error::Usage`] when both forms are
    /// given, or --to-move without a position.
    pub(crate) fn position(&self) -> Result<Option<Position>> {
        Ok(self.placed()?.map(|(p, _)| p))
    }

    /// The position given and its side to move when named (by --to-move or the side form), or
    /// `None` when no position was given.
    ///
    /// # Errors
    /// As [`position`](Self::position), also when --to-move contradicts the side form's side.
    pub(crate) fn placed(&self) -> Result<Option<(Position, Option<Side>)>> {
        let side = self.to_move;
        match (&self.south, &self.north, side) {
            (Some(s), Some(n), Some(side)) => {
                if !self.counts.is_empty() {
                    return Err(Error::Usage("give the position either as 12 counts or with --south/--north/--to-move, not both".into()));
                }
                Ok(Some((Position::from_sides(s, n, side)?, Some(side))))
            }
            _ if self.counts.is_empty() => match side {
                Some(_) => Err(Error::Usage("--to-move needs a position".into())),
                None => Ok(None),
            },
            _ => Ok(Some(Position::place(&self.counts.join(" "), side)?)),
        }
    }

    /// The position given, which is required, and its side to move when named.
    ///
    /// # Errors
    /// As [`placed`](Self::placed), and [`Error::Usage`] when no position was given.
    pub(crate) fn required_placed(&self) -> Result<(Position, Option<Side>)> {
        self.placed()?.ok_or_else(|| Error::Usage("a position is required (12 counts, or --south/--north/--to-move)".into()))
    }
}

/// The options that follow the position and the command's own options in the commands that read
/// no database (`index`, `moves`, `perft`): the ruleset, `--json` and `--quiet`. Each command
/// words the help of the last two ([`reword`]).
#[derive(Args, Debug, Clone)]
pub(crate) struct PositionCommandArgs {
    #[command(flatten)]
    pub(crate) rules: RulesArg,
    #[command(flatten)]
    pub(crate) json: JsonArg,
    #[command(flatten)]
    pub(crate) quiet: QuietArg,
}

/// The rulesets as the command line offers them: each name (as [`Ruleset::name`] spells it)
/// with its help line, in id order.
const RULES_HELP: [(Ruleset, &str); 7] = [
    (
        Ruleset::ALL[0],
        "Computer-Olympiad rules, the 2002 solution's: eradicating moves only when every move eradicates; a player who cannot move loses the remaining stones",
    ),
    (Ruleset::ALL[1], "International rules (feeding obligation); a grand slam is legal and captures nothing"),
    (Ruleset::ALL[2], "Abapa; a grand slam is not a legal move"),
    (Ruleset::ALL[3], "Abapa; a grand slam captures normally"),
    (Ruleset::ALL[4], "Abapa; a grand slam captures and the stones left go to the opponent, ending the game"),
    (Ruleset::ALL[5], "Abapa; a grand slam captures the chain except the pit where the last stone fell"),
    (Ruleset::ALL[6], "Abapa; a grand slam captures the chain except the pit where the chain ends"),
];

/// Parses `--rules` into the library's ruleset: exactly the names of [`Ruleset::ALL`] (no
/// aliases), offered with their help lines in `--help` and completions.
pub(crate) fn parse_rules() -> impl TypedValueParser<Value = Ruleset> {
    PossibleValuesParser::new(RULES_HELP.map(|(r, help)| PossibleValue::new(r.name()).help(help)))
        // Every value offered is a ruleset's name (checked by a test).
        .map(|name| name.parse().unwrap_or(Ruleset::Awari))
}

/// The ruleset option shared by every command.
#[derive(Args, Debug, Clone)]
pub(crate) struct RulesArg {
    /// Ruleset (docs/rules.md).
    #[arg(id = "rules", long = "rules", value_name = "RULES", value_parser = parse_rules(), default_value = "awari")]
    pub(crate) name: Ruleset,
}

impl RulesArg {
    /// The ruleset chosen.
    pub(crate) fn ruleset(&self) -> Ruleset {
        self.name
    }
}

/// The database directory option (the ruleset's files live in a subdirectory named after it).
#[derive(Args, Debug, Clone)]
pub(crate) struct DirArg {
    /// Database directory.
    #[arg(long = "dir", value_name = "DIR", env = "OWARE_DIR", default_value = "databases")]
    pub(crate) dir: PathBuf,
}

/// The ruleset, directory and format of the commands that read one database (`query`, `stats`,
/// `verify`, `game`, `play`, and `serve` for its default ruleset).
#[derive(Args, Debug, Clone)]
pub(crate) struct DatabaseArgs {
    #[command(flatten)]
    pub(crate) rules: RulesArg,
    #[command(flatten)]
    pub(crate) dir: DirArg,
    #[command(flatten)]
    pub(crate) format: FormatArg,
}

impl DatabaseArgs {
    /// The database of `rules` in the directory and format chosen (nothing is read yet).
    ///
    /// # Errors
    /// As [`database_dir`].
    pub(crate) fn database_for(&self, rules: Ruleset) -> Result<oware::probe::Database> {
        database_dir(&self.dir, self.format.format(), rules).map(oware::probe::Database::from_dir)
    }

    /// The database of the ruleset chosen.
    ///
    /// # Errors
    /// As [`database_dir`].
    pub(crate) fn database(&self) -> Result<oware::probe::Database> {
        self.database_for(self.rules.ruleset())
    }

    /// The database directory of the ruleset chosen.
    ///
    /// # Errors
    /// As [`database_dir`].
    pub(crate) fn dir(&self) -> Result<DatabaseDir> {
        database_dir(&self.dir, self.format.format(), self.rules.ruleset())
    }
}

/// The database directory format option of the commands that read layers.
#[derive(Args, Debug, Clone)]
pub(crate) struct FormatArg {
    /// Directory format.
    #[arg(id = "format", long = "format", value_name = "FORMAT", value_enum, default_value_t = Format::Native)]
    pub(crate) name: Format,
}

impl FormatArg {
    /// The format chosen.
    pub(crate) fn format(&self) -> Format {
        self.name
    }
}

/// The `--json` option: results as JSON on stdout, for programs. Each command words its help
/// after what it prints ([`reword`]).
#[derive(Args, Debug, Clone)]
pub(crate) struct JsonArg {
    /// Print one JSON document on stdout instead of a line per layer.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The `--quiet` option: no progress bars and no messages besides errors. Each command words
/// its help after what it would say ([`reword`]).
#[derive(Args, Debug, Clone)]
pub(crate) struct QuietArg {
    /// No progress bar and no messages besides errors.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// The `--threads` option of the commands that work in parallel.
#[derive(Args, Debug, Clone)]
pub(crate) struct ThreadsArg {
    /// Worker threads, 1..=1024 (default: all cores).
    #[arg(long, value_name = "T", value_parser = parse_threads)]
    pub(crate) threads: Option<usize>,
}

/// The `--max-stones N` option of the commands that go through layers 0..=N (default: every
/// layer from 0 up to the first missing one). Each command words its help ([`reword`]).
#[derive(Args, Debug, Clone)]
pub(crate) struct MaxStonesArg {
    /// Layers 0..=N. Default: every layer from 0 up to the first missing.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=oware::index::MAX_STONES as i64))]
    pub(crate) max_stones: Option<u32>,
}

impl MaxStonesArg {
    /// The layers of `dir` to take: `0..=N` with `--max-stones N`, else those
    /// [`last_layer_to_take`] picks (`doing` names the command's work in its note, "packing").
    ///
    /// # Errors
    /// As [`last_layer_to_take`].
    pub(crate) fn layers(&self, dir: &DatabaseDir, doing: &str, quiet: bool) -> Result<Vec<u32>> {
        let last = match self.max_stones {
            Some(m) => m,
            None => last_layer_to_take(dir, doing, quiet)?,
        };
        Ok(dir.layers_up_to(last))
    }
}

/// The database directory a command reads: `--dir`, `--format` and `--rules` together.
///
/// # Errors
/// As [`DatabaseDir::new`].
pub(crate) fn database_dir(dir: &DirArg, format: Format, rules: Ruleset) -> Result<DatabaseDir> {
    DatabaseDir::new(format, &dir.dir, rules)
}

/// The highest layer a command reading a whole directory takes when `--max-stones` is not
/// given: 48 when every layer is there; else the last one below the first absent layer or,
/// when that is the one layer `build --for` leaves out ([`DatabaseDir::gap`]), the highest on
/// disk past it (the command then takes [`DatabaseDir::layers_up_to`] it). Unless `quiet`, a
/// note names the absent layer; `doing` says what the command does with the layers
/// ("exporting").
///
/// # Errors
/// The layer's own error when the first absent layer is unreadable; [`DatabaseDir::missing`]'s
/// when layer 0 is absent.
pub(crate) fn last_layer_to_take(dir: &DatabaseDir, doing: &str, quiet: bool) -> Result<u32> {
    let Some((k, state)) = dir.first_not_present() else { return Ok(oware::index::MAX_STONES) };
    if let oware::storage::LayerState::Unreadable(e) = state {
        return Err(e);
    }
    if k == 0 {
        return Err(dir.missing::<oware::storage::ValuesKind>(0));
    }
    let (last, why) = match (dir.gap(), dir.layers_on_disk().last()) {
        (Some(gap), Some(&top)) if gap == k => (top, format!("layer {k} is not built (layer {top} does not need it): {doing} layers 0..{}, {top}", k - 1)),
        _ => (k - 1, format!("layer {k} is not built: {doing} layers 0..{}", k - 1)),
    };
    if !quiet {
        note(&why);
    }
    Ok(last)
}

/// Rewords the help of shared options ([`JsonArg`], [`QuietArg`], [`MaxStonesArg`]) for one
/// command: `#[command(mut_args(reword(&[("json", "...")])))]` on its arguments struct. The
/// options keep their place (in help and completion scripts), that of their fields.
pub(crate) fn reword(words: &'static [(&'static str, &'static str)]) -> impl FnMut(clap::Arg) -> clap::Arg {
    move |a| match words.iter().find(|(id, _)| a.get_id().as_str() == *id) {
        Some((_, help)) => a.help(*help),
        None => a,
    }
}

/// The most worker threads `--threads` accepts.
pub(crate) const MAX_THREADS: usize = 1024;

/// Parses `--threads`: 1..=1024.
pub(crate) fn parse_threads(s: &str) -> std::result::Result<usize, String> {
    let t: usize = s.trim().parse().map_err(|_| format!("'{s}' is not a number of threads"))?;
    if t == 0 || t > MAX_THREADS {
        return Err(format!("{t} threads: give 1 to {MAX_THREADS} (this machine has {} cores)", cores()));
    }
    Ok(t)
}

/// This machine's cores: the default of `--threads`.
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A rayon thread pool of `threads` workers (default: one per core).
///
/// # Errors
/// [`Error::Threads`] when the threads cannot be started.
pub(crate) fn thread_pool(threads: Option<usize>) -> Result<rayon::ThreadPool> {
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(t) = threads {
        pool = pool.num_threads(t);
    }
    pool.build().map_err(|e| Error::Threads { threads: threads.unwrap_or_else(cores), reason: e.to_string() })
}

/// Parses `M:O`, the stones captured by the player to move and by the opponent (`--captured` of
/// `analyse` and `query`).
pub(crate) fn parse_captured(s: &str) -> std::result::Result<MoverCaptured, String> {
    let pair = s.split_once(':').and_then(|(m, o)| Some((m.trim().parse::<u32>().ok()?, o.trim().parse::<u32>().ok()?)));
    let (m, o) = pair.ok_or_else(|| format!("'{s}' is not MOVER:OPPONENT captured stones, like 20:16"))?;
    if m.saturating_add(o) > oware::rules::TOTAL_STONES {
        return Err(format!("{m} + {o} captured stones: a game has {} stones", oware::rules::TOTAL_STONES));
    }
    Ok(MoverCaptured { mover: m, opponent: o })
}

/// How long and with what the engine searches (shared by `analyse`, `play`, `game`).
#[derive(Args, Debug, Clone)]
pub(crate) struct SearchArgs {
    /// Time to search, in milliseconds (the default when neither --depth nor --nodes is given:
    /// 1000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub(crate) movetime: Option<u64>,
    /// Search to this depth in plies (1..=100); the answer does not depend on --threads.
    #[arg(long, value_name = "D", value_parser = clap::value_parser!(u32).range(1..=MAX_DEPTH as i64))]
    pub(crate) depth: Option<u32>,
    /// Search at most about this many nodes; the answer does not depend on --threads.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) nodes: Option<u64>,
    /// Search threads for a timed search (default: all cores).
    #[arg(long, value_name = "T", value_parser = parse_threads)]
    pub(crate) threads: Option<usize>,
    /// Size of the transposition table, MiB (1..=65536).
    #[arg(long, value_name = "MB", default_value_t = DEFAULT_HASH_MB, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65536))]
    pub(crate) hash: usize,
    /// Probe layers 0..=N only, even where more are built (the engine searches above them).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=48))]
    pub(crate) max_table: Option<u32>,
}

impl SearchArgs {
    /// The limits asked for: `--movetime` (default 1 s unless a depth or node limit is set).
    pub(crate) fn limits(&self, all_moves: bool) -> Limits {
        let movetime = match (self.movetime, self.depth, self.nodes) {
            (Some(ms), _, _) => Some(Duration::from_millis(ms)),
            (None, None, None) => Some(Duration::from_millis(1000)),
            _ => None,
        };
        Limits { depth: self.depth, movetime, nodes: self.nodes, all_moves }
    }
}

/// The engine for `rules` over the layers of the database chosen (every layer built from 0 up,
/// or up to `--max-table`), or over none (the evaluation alone, said on stderr unless `quiet`).
///
/// # Errors
/// As [`Engine::new`]: a present layer that is damaged or foreign.
pub(crate) fn open_engine(db: &DatabaseArgs, rules: Ruleset, search: &SearchArgs, quiet: bool) -> Result<Engine> {
    hash_fits(search.hash as u64).map_err(|msg| Error::Usage(format!("--hash: {msg}")))?;
    let mut engine = Engine::new(rules, Some(Arc::new(db.database_for(rules)?)), search.max_table)?;
    if let Some(e) = engine.unusable() {
        // Said whatever `quiet` asks: the answers lose the layers above the damaged file.
        let below = match (engine.tables(), engine.dtc_tables()) {
            (None, _) => "searching with the evaluation alone".to_string(),
            (Some(t), None) => format!("probing layers 0..={t}, without depths to capture"),
            (Some(t), Some(d)) => format!("probing layers 0..={t}, depths to capture of 0..={d}"),
        };
        note(&format!("{e}: not used, nor the files of its kind above it; {below}"));
    }
    if engine.tables().is_none() && !quiet {
        note(&format!("no layers of {rules} in {}: searching with the evaluation alone", db.dir.dir.display()));
    }
    engine.set_hash_mb(search.hash);
    engine.set_threads(search.threads.unwrap_or_else(cores));
    Ok(engine)
}

/// Refuses a transposition table larger than three quarters of the memory the system reports
/// available (allocating it would end the process, or push the machine into swap; the library's
/// `search::check_hash_mb`): the one guard of `--hash` and the engine's `Hash` option, which
/// put their own words before the message.
pub(crate) fn hash_fits(mb: u64) -> std::result::Result<u64, String> {
    oware::search::check_hash_mb(mb).map(|()| mb).map_err(|e| e.to_string())
}

/// Where a game starts: `--from`, `--to-move`, `--captured` (shared by `game` and `play`).
#[derive(Args, Debug)]
pub(crate) struct StartArgs {
    /// The starting position (any position form; the side form names the side to move).
    /// Default: the start position, South to move.
    #[arg(long, value_name = "POSITION", allow_hyphen_values = true)]
    from: Option<String>,
    /// Side to move at --from when its form does not name it (default south).
    #[arg(long, value_name = "SIDE")]
    to_move: Option<Side>,
    /// Stones captured before the start, `SOUTH:NORTH`. Default 0:0 from a full board; without
    /// it, a position with fewer stones gets no final score (nothing is guessed).
    #[arg(long, value_name = "S:N")]
    captured: Option<String>,
}

impl StartArgs {
    /// The starting position, its side to move and the stones captured before it, when known
    /// (given, or 0:0 for a full board).
    ///
    /// # Errors
    /// [`Error::InvalidPosition`] for a bad --from or --to-move, or when the two name different
    /// sides; [`Error::Usage`] for a bad --captured or one that does not fit the board.
    pub(crate) fn resolve(&self) -> Result<(Position, Side, Option<Captured>)> {
        let named = self.to_move;
        let (start, side) = match &self.from {
            None => (Position::start(), named.unwrap_or(Side::South)),
            Some(text) => {
                let (p, side) = Position::place(text, named)?;
                (p, side.unwrap_or(Side::South))
            }
        };
        let given = self.captured.as_deref().map(Captured::parse).transpose()?;
        Ok((start, side, Captured::known(given, start.stones())?))
    }
}

/// The first options of `export` and `pack`: the ruleset and the database directory they read,
/// the directory they write and the layers they take. Each command words the help of `--out` and
/// `--max-stones` ([`reword`]).
#[derive(Args, Debug)]
pub(crate) struct CopyArgs {
    #[command(flatten)]
    pub(crate) rules: RulesArg,
    #[command(flatten)]
    pub(crate) dir: DirArg,
    /// Directory to write (created if needed).
    #[arg(long, value_name = "OUT")]
    pub(crate) out: PathBuf,
    #[command(flatten)]
    pub(crate) max_stones: MaxStonesArg,
}

impl CopyArgs {
    /// The database directory read: the native layers of the ruleset chosen.
    ///
    /// # Errors
    /// As [`DatabaseDir::new`].
    pub(crate) fn source(&self) -> Result<DatabaseDir> {
        DatabaseDir::new(Format::Native, &self.dir.dir, self.rules.ruleset())
    }
}

/// The last options of `export`, `pack`, `unpack` and `import`: `--quiet`, then `--json`.
#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    #[command(flatten)]
    pub(crate) quiet: QuietArg,
    #[command(flatten)]
    pub(crate) json: JsonArg,
}

/// Parses a size: a number of bytes (`100`, `1.5`) with an optional unit, case-insensitive:
/// `K`, `M`, `G`, `T` and `KiB`, `MiB`, `GiB`, `TiB` are powers of 1024, `KB`, `MB`, `GB`, `TB`
/// (SI) powers of 1000; at most 1 EiB. Exponents (`1e3`), signs and other words are refused.
pub(crate) fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim_start());
    let bad = |why: &str| format!("'{s}' is not a size {why}(write e.g. 512M, 3G, 22GiB or 24GB)");
    if t.starts_with('-') {
        return Err(bad("(a size cannot be negative) "));
    }
    let mult: u64 = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KIB" => 1 << 10,
        "M" | "MIB" => 1 << 20,
        "G" | "GIB" => 1 << 30,
        "T" | "TIB" => 1 << 40,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => return Err(bad("")),
    };
    let digits = num.bytes().filter(u8::is_ascii_digit).count();
    if digits == 0 || num.bytes().filter(|&b| b == b'.').count() > 1 {
        return Err(bad(""));
    }
    let v: f64 = num.parse().map_err(|_| bad(""))?;
    let bytes = v * mult as f64;
    if !(v.is_finite() && bytes <= (1u64 << 60) as f64) {
        return Err(bad("(at most 1 EiB) "));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ruleset_has_a_command_line_name() {
        let offered: Vec<Ruleset> = RULES_HELP.iter().map(|&(r, _)| r).collect();
        assert_eq!(offered, Ruleset::ALL);
        let parser = parse_rules();
        let names: Vec<String> = parser.possible_values().into_iter().flatten().map(|v| v.get_name().to_string()).collect();
        assert_eq!(names, Ruleset::names());
        let cmd = clap::Command::new("oware");
        for r in Ruleset::ALL {
            assert_eq!(parser.parse_ref(&cmd, None, std::ffi::OsStr::new(r.name())).ok(), Some(r));
        }
    }

    #[test]
    fn threads_are_bounded() {
        assert_eq!(parse_threads("2"), Ok(2));
        assert!(parse_threads("0").is_err());
        assert!(parse_threads("100000").is_err());
        assert!(parse_threads("x").is_err());
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("3G").unwrap(), 3 << 30);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_size("22GiB").unwrap(), 22 << 30);
        assert_eq!(parse_size("22gib").unwrap(), 22 << 30);
        assert_eq!(parse_size("22gb").unwrap(), 22_000_000_000);
        assert_eq!(parse_size("512 MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("2TB").unwrap(), 2_000_000_000_000);
        assert_eq!(parse_size("64k").unwrap(), 64 << 10);
        for bad in ["1e3", "1E3G", "-1", "+1G", "1.2.3", ".", "G", "", "3 gigs", "0x10", "inf", "NaN", "2PB"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(parse_size("-1").unwrap_err().contains("negative"));
        assert_eq!(parse_size("100").unwrap(), 100);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("-1G").is_err());
        assert!(parse_size("1e30").is_err());
    }
}
