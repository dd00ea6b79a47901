//! The `oware` program: argument parsing and dispatch, one file per command. It is its own crate
//! over the `oware` library and uses only the library's public API. Results go to stdout, messages
//! and progress to stderr; every failure maps to the exit code of its kind ([`exit_code`]).

use std::path::{Path, PathBuf};

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, CommandFactory, Parser, Subcommand};
use oware::error::{ClusterError, ErrorKind, FileContent};
use oware::position::Side;
use oware::storage::{DatabaseDir, Format};
use oware::{Error, Position, Result, Ruleset};

mod analyse;
mod build;
mod engine;
mod export;
mod game;
mod index;
mod moves;
mod output;
mod pack;
mod perft;
mod play;
mod progress;
mod query;
mod report;
mod serve;
mod signals;
mod stats;
mod verify;

/// Exact-value Oware (Awari) endgame databases: build, query, verify.
#[derive(Parser, Debug)]
#[command(name = "oware", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the legal moves of a position, what each captures and where it leads.
    Moves(moves::MovesArgs),
    /// Count the move sequences of a given length from a position (move-generator regression).
    Perft(perft::PerftArgs),
    /// Print the layer and index of a position, or the board at an index of a layer.
    Index(index::IndexArgs),
    /// Build the value databases of layers 0..N by retrograde analysis.
    Build(build::BuildArgs),
    /// Exact value, move values and best line of positions.
    Query(query::QueryArgs),
    /// Search a position with the engine: best move, score (exact or estimate), line, every move.
    Analyse(analyse::AnalyseArgs),
    /// Annotate a game record: each move's value against the best, errors, score and result.
    Game(game::GameArgs),
    /// Play in the terminal against perfect play, or two players with the oracle's advice.
    Play(play::PlayArgs),
    /// Play and analyse over the UCI protocol of the Oware engines (Aualé's GUI, match tools): search above the layers, exact inside them.
    Engine(engine::EngineArgs),
    /// Serve the analysis API and the web page over HTTP (localhost by default).
    Serve(serve::ServeArgs),
    /// Check built layers: headers, checksums, every value re-derived, published facts.
    Verify(verify::VerifyArgs),
    /// Count positions by value in each built layer.
    Stats(stats::StatsArgs),
    /// Write layers in another format (the headerless `scores.N` files of the 2002 solution).
    Export(export::ExportArgs),
    /// Compress layers into a pack directory that every reader probes in place (SHA256SUMS too).
    Pack(pack::PackArgs),
    /// Restore native layer files from a pack directory, byte for byte.
    Unpack(pack::UnpackArgs),
    /// Turn the published 2002 files (scores.N, plain or .zst) into native layers.
    Import(pack::ImportArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Write the manual pages, oware(1) and one per command, into a directory (or print one).
    Man(ManArgs),
}

/// A position given on the command line: mover-first counts, or South/North rows.
#[derive(Args, Debug, Clone, Default)]
pub struct PositionArgs {
    /// The position: twelve pit counts in mover-first form (pits 0..5 are the mover's) separated
    /// by spaces or commas, e.g. `1 1 1 1 1 2 4 2 3 0 0 0`; or the JSON array `--json` prints;
    /// or the board as drawn, `"TOP / BOTTOM"` (with --to-move: North's row on top, South's
    /// below, as the South/North drawing shows them); or the side form, South's houses A..F,
    /// North's a..f and the side to move: `"S: 1 1 1 1 1 2  N: 4 2 3 0 0 0  S"`.
    #[arg(value_name = "POSITION", num_args = 0.., allow_negative_numbers = true)]
    pub counts: Vec<String>,
    /// South's six houses in sowing order, A..F (with --north and --to-move).
    #[arg(long, value_name = "COUNTS", requires_all = ["north", "to_move"])]
    pub south: Option<String>,
    /// North's six houses in sowing order, a..f (with --south and --to-move).
    #[arg(long, value_name = "COUNTS", requires_all = ["south", "to_move"])]
    pub north: Option<String>,
    /// Side to move, `south` or `north`: with --south/--north; with a drawn board (North on
    /// top); or with mover-first counts, to name the mover's side in the output.
    #[arg(long, value_name = "SIDE")]
    pub to_move: Option<Side>,
}

impl PositionArgs {
    /// The position given, or `None` when neither form was used.
    ///
    /// # Errors
    /// [`Error::InvalidPosition`] for malformed input; [`Error::Usage`] when both forms are
    /// given, or --to-move without a position.
    pub fn position(&self) -> Result<Option<Position>> {
        Ok(self.placed()?.map(|(p, _)| p))
    }

    /// The position given and its side to move when named (by --to-move or the side form), or
    /// `None` when no position was given.
    ///
    /// # Errors
    /// As [`position`](Self::position), also when --to-move contradicts the side form's side.
    pub fn placed(&self) -> Result<Option<(Position, Option<Side>)>> {
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
    pub fn required_placed(&self) -> Result<(Position, Option<Side>)> {
        self.placed()?.ok_or_else(|| Error::Usage("a position is required (12 counts, or --south/--north/--to-move)".into()))
    }
}

/// The options that follow the position and the command's own options in the commands that read
/// no database (`index`, `moves`, `perft`): the ruleset, `--json` and `--quiet`. Each command
/// words the help of the last two ([`reword`]).
#[derive(Args, Debug, Clone)]
pub struct PositionCommandArgs {
    #[command(flatten)]
    pub rules: RulesArg,
    #[command(flatten)]
    pub json: JsonArg,
    #[command(flatten)]
    pub quiet: QuietArg,
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
pub fn parse_rules() -> impl TypedValueParser<Value = Ruleset> {
    PossibleValuesParser::new(RULES_HELP.map(|(r, help)| PossibleValue::new(r.name()).help(help)))
        // Every value offered is a ruleset's name (checked by a test).
        .map(|name| name.parse().unwrap_or(Ruleset::Awari))
}

/// A position drawn for people, with its South/North labels and house names: mover-first counts
/// name no side, and then South is to move.
pub fn draw(pos: &Position, side: Option<Side>) -> String {
    pos.drawing_sides(side.unwrap_or(Side::South))
}

/// The ruleset option shared by every command.
#[derive(Args, Debug, Clone)]
pub struct RulesArg {
    /// Ruleset (docs/rules.md).
    #[arg(id = "rules", long = "rules", value_name = "RULES", value_parser = parse_rules(), default_value = "awari")]
    pub name: Ruleset,
}

impl RulesArg {
    /// The ruleset chosen.
    pub fn ruleset(&self) -> Ruleset {
        self.name
    }
}

/// The database directory option (the ruleset's files live in a subdirectory named after it).
#[derive(Args, Debug, Clone)]
pub struct DirArg {
    /// Database directory.
    #[arg(long = "dir", value_name = "DIR", env = "OWARE_DIR", default_value = "databases")]
    pub dir: PathBuf,
}

/// The ruleset, directory and format of the commands that read one database (`query`, `stats`,
/// `verify`, `game`, `play`, and `serve` for its default ruleset).
#[derive(Args, Debug, Clone)]
pub struct DatabaseArgs {
    #[command(flatten)]
    pub rules: RulesArg,
    #[command(flatten)]
    pub dir: DirArg,
    #[command(flatten)]
    pub format: FormatArg,
}

impl DatabaseArgs {
    /// The database of `rules` in the directory and format chosen (nothing is read yet).
    ///
    /// # Errors
    /// As [`database_dir`].
    pub fn database_for(&self, rules: Ruleset) -> Result<oware::probe::Database> {
        database_dir(&self.dir, self.format.format(), rules).map(oware::probe::Database::from_dir)
    }

    /// The database of the ruleset chosen.
    ///
    /// # Errors
    /// As [`database_dir`].
    pub fn database(&self) -> Result<oware::probe::Database> {
        self.database_for(self.rules.ruleset())
    }

    /// The database directory of the ruleset chosen.
    ///
    /// # Errors
    /// As [`database_dir`].
    pub fn dir(&self) -> Result<DatabaseDir> {
        database_dir(&self.dir, self.format.format(), self.rules.ruleset())
    }
}

/// The database directory format option of the commands that read layers.
#[derive(Args, Debug, Clone)]
pub struct FormatArg {
    /// Directory format.
    #[arg(id = "format", long = "format", value_name = "FORMAT", value_enum, default_value_t = Format::Native)]
    pub name: Format,
}

impl FormatArg {
    /// The format chosen.
    pub fn format(&self) -> Format {
        self.name
    }
}

/// The `--json` option: results as JSON on stdout, for programs. Each command words its help
/// after what it prints ([`reword`]).
#[derive(Args, Debug, Clone)]
pub struct JsonArg {
    /// Print one JSON document on stdout instead of a line per layer.
    #[arg(long)]
    pub json: bool,
}

/// The `--quiet` option: no progress bars and no messages besides errors. Each command words
/// its help after what it would say ([`reword`]).
#[derive(Args, Debug, Clone)]
pub struct QuietArg {
    /// No progress bar and no messages besides errors.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The `--threads` option of the commands that work in parallel.
#[derive(Args, Debug, Clone)]
pub struct ThreadsArg {
    /// Worker threads, 1..=1024 (default: all cores).
    #[arg(long, value_name = "T", value_parser = parse_threads)]
    pub threads: Option<usize>,
}

/// The `--max-stones N` option of the commands that go through layers 0..=N (default: every
/// layer from 0 up to the first missing one). Each command words its help ([`reword`]).
#[derive(Args, Debug, Clone)]
pub struct MaxStonesArg {
    /// Layers 0..=N. Default: every layer from 0 up to the first missing.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=oware::index::MAX_STONES as i64))]
    pub max_stones: Option<u32>,
}

impl MaxStonesArg {
    /// The layers of `dir` to take: `0..=N` with `--max-stones N`, else those
    /// [`last_layer_to_take`] picks (`doing` names the command's work in its note, "packing").
    ///
    /// # Errors
    /// As [`last_layer_to_take`].
    pub fn layers(&self, dir: &DatabaseDir, doing: &str, quiet: bool) -> Result<Vec<u32>> {
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
pub fn database_dir(dir: &DirArg, format: Format, rules: Ruleset) -> Result<DatabaseDir> {
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
pub fn last_layer_to_take(dir: &DatabaseDir, doing: &str, quiet: bool) -> Result<u32> {
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
        output::note(&why);
    }
    Ok(last)
}

/// Rewords the help of shared options ([`JsonArg`], [`QuietArg`], [`MaxStonesArg`]) for one
/// command: `#[command(mut_args(reword(&[("json", "...")])))]` on its arguments struct. The
/// options keep their place (in help and completion scripts), that of their fields.
pub fn reword(words: &'static [(&'static str, &'static str)]) -> impl FnMut(clap::Arg) -> clap::Arg {
    move |a| match words.iter().find(|(id, _)| a.get_id().as_str() == *id) {
        Some((_, help)) => a.help(*help),
        None => a,
    }
}

/// The most worker threads `--threads` accepts.
pub const MAX_THREADS: usize = 1024;

/// Parses `--threads`: 1..=1024.
pub fn parse_threads(s: &str) -> std::result::Result<usize, String> {
    let t: usize = s.trim().parse().map_err(|_| format!("'{s}' is not a number of threads"))?;
    if t == 0 || t > MAX_THREADS {
        return Err(format!("{t} threads: give 1 to {MAX_THREADS} (this machine has {} cores)", cores()));
    }
    Ok(t)
}

pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A rayon thread pool of `threads` workers (default: one per core).
///
/// # Errors
/// [`Error::Threads`] when the threads cannot be started.
pub fn thread_pool(threads: Option<usize>) -> Result<rayon::ThreadPool> {
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(t) = threads {
        pool = pool.num_threads(t);
    }
    pool.build().map_err(|e| Error::Threads { threads: threads.unwrap_or_else(cores), reason: e.to_string() })
}

/// The `--dir` option that reaches `layers_dir` (a ruleset's directory), for suggested commands:
/// empty for the default `databases`.
fn dir_option(layers_dir: &Path) -> String {
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

/// The process exit code of an error of kind `kind` ([`ErrorKind::exit_status`], the one table
/// of exit codes, documented in docs/cli.md, "Exit codes"). Besides these, 0 is success and 141
/// a closed stdout.
pub fn exit_code(kind: ErrorKind) -> i32 {
    kind.exit_status()
}

/// Advice for the user after an error: what to run or do next. The library's messages give
/// none (they name no command or option of this program); the program adds it here.
pub fn hint(e: &Error) -> Option<String> {
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
        // Only the build's lock is refused this way (`flock` with `LOCK_NB`).
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::WouldBlock => Some("wait for it or use another --dir".into()),
        Error::Cluster(ClusterError::ForeignBinary { .. }) => Some("install one build on every node".into()),
        Error::Cluster(ClusterError::OtherOptions { .. }) => Some("run one command line on every rank".into()),
        Error::Cluster(ClusterError::ExchangeTooLarge { .. }) => Some("use more ranks or a smaller --max-memory".into()),
        Error::Interrupted => Some("rerun the same command (a build resumes from its finished layers)".into()),
        _ => None,
    }
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

fn main() {
    std::process::exit(run());
}

/// Parses the command line, runs the command and returns the process exit code.
fn run() -> i32 {
    signals::install();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // A value the library's parser refused (`--to-move`: an invalid position) is
            // reported as that error, with its own message and exit code.
            if let Some(lib) = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<Error>()) {
                return report(lib);
            }
            let code = if e.use_stderr() { 2 } else { 0 };
            // Help and version go to stdout: a failure to write them is an output error.
            return match e.print() {
                Ok(()) => code,
                Err(source) if code == 0 => report(&Error::Output { stream: "stdout", source }),
                Err(_) => code,
            };
        }
    };
    let result = match cli.command {
        Command::Moves(a) => moves::run(a),
        Command::Perft(a) => perft::run(a),
        Command::Index(a) => index::run(a),
        Command::Build(a) => build::run(a),
        Command::Query(a) => query::run(a),
        Command::Analyse(a) => analyse::run(a),
        Command::Game(a) => game::run(a),
        // Stopped by Ctrl-C or SIGTERM, the server has said so: there is nothing to resume.
        Command::Serve(a) => match serve::run(a) {
            Err(Error::Interrupted) => return exit_code(ErrorKind::Interrupted),
            r => r,
        },
        Command::Play(a) => play::run(a),
        Command::Engine(a) => engine::run(a),
        Command::Verify(a) => verify::run(a),
        Command::Stats(a) => stats::run(a),
        Command::Export(a) => export::run(a),
        Command::Pack(a) => pack::run_pack(a),
        Command::Unpack(a) => pack::run_unpack(a),
        Command::Import(a) => pack::run_import(a),
        Command::Completions(a) => completions(a),
        Command::Man(a) => man(a),
    };
    match result {
        Ok(()) => 0,
        Err(e) => report(&e),
    }
}

/// Prints an error (and its hint) on stderr and returns its exit code. A closed stdout ends the
/// program quietly with 141, as if `SIGPIPE` had ended it.
fn report(e: &Error) -> i32 {
    if output::is_closed_pipe(e) {
        return 141;
    }
    if matches!(e, Error::Interrupted) {
        output::note("interrupted: rerun the same command to resume (a build keeps its finished layers)");
        return exit_code(e.kind());
    }
    output::note(&format!("error: {e}"));
    if let Some(h) = hint(e) {
        output::note(&format!("hint: {h}"));
    }
    exit_code(e.kind())
}

/// Arguments of `oware completions`.
#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Where the manual pages go.
#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write every page (`oware.1`, `oware-build.1`, ...) into this directory, created if
    /// needed, e.g. `~/.local/share/man/man1`; without it, print one page on stdout (`oware man |
    /// man -l -`).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The command whose page to print (without --dir): `build` for oware-build(1).
    #[arg(value_name = "COMMAND", conflicts_with = "dir")]
    command: Option<String>,
}

/// The date the manual pages carry: that of the version (changed with it, as CHANGELOG.md
/// records), so that the pages are the same on every machine.
const MANUAL_DATE: &str = "2026-11-24";

/// The manual pages, generated from the command-line definitions: `(file name, roff text)`,
/// oware(1) first, then one page per command in the order of `oware --help`.
pub fn man_pages() -> Vec<(String, Vec<u8>)> {
    let mut cli = Cli::command().disable_help_subcommand(true);
    cli.build();
    let render = |cmd: clap::Command| {
        let page = clap_mangen::Man::new(cmd).date(MANUAL_DATE).source(concat!("oware ", env!("CARGO_PKG_VERSION"))).manual("oware manual");
        let mut text = Vec::new();
        page.render(&mut text).expect("rendering into memory cannot fail");
        (page.get_filename(), text)
    };
    let mut pages = vec![render(cli.clone())];
    pages.extend(cli.get_subcommands().filter(|s| !s.is_hide_set()).cloned().map(render));
    pages
}

/// Writes the manual pages into a directory, or prints one.
fn man(a: ManArgs) -> Result<()> {
    let pages = man_pages();
    let Some(dir) = a.dir else {
        let wanted = a.command.map_or("oware.1".to_string(), |c| format!("oware-{c}.1"));
        let Some((_, text)) = pages.iter().find(|(name, _)| *name == wanted) else {
            let known: Vec<&str> = pages.iter().skip(1).map(|(name, _)| name.trim_start_matches("oware-").trim_end_matches(".1")).collect();
            return Err(Error::Usage(format!(
                "no manual page for '{}': the commands are {}",
                wanted.trim_start_matches("oware-").trim_end_matches(".1"),
                known.join(", ")
            )));
        };
        return output::Stdout::new().write(&String::from_utf8_lossy(text));
    };
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
    for (name, text) in &pages {
        let path = dir.join(name);
        let tmp = oware::storage::AtomicFile::create(&path)?;
        std::io::Write::write_all(&mut tmp.file(), text).map_err(|source| Error::Io { path: tmp.tmp_path().to_path_buf(), source })?;
        tmp.commit()?;
    }
    output::note(&format!("wrote {} manual pages into {} (oware.1 and one per command)", pages.len(), dir.display()));
    Ok(())
}

/// Prints a shell completion script.
fn completions(a: CompletionsArgs) -> Result<()> {
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut Cli::command(), "oware", &mut buf);
    output::Stdout::new().write(&String::from_utf8_lossy(&buf))
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
        let cmd = Cli::command();
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
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn exit_codes_are_the_documented_ones() {
        let table = [
            (ErrorKind::Internal, 1),
            (ErrorKind::Usage, 2),
            (ErrorKind::InvalidPosition, 3),
            (ErrorKind::NotInLayer, 3),
            (ErrorKind::IndexOutOfRange, 3),
            (ErrorKind::LayerMissing, 4),
            (ErrorKind::BoundsMissing, 4),
            (ErrorKind::DtcMissing, 4),
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
        for k in ErrorKind::ALL {
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
        let mut ours: std::collections::BTreeSet<i32> = ErrorKind::ALL.iter().map(|&k| exit_code(k)).collect();
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
