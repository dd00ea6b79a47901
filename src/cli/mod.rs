//! Command-line interface: argument parsing and dispatch. Results go to stdout, messages and
//! progress to stderr; every failure maps to the exit code of its [`oware::Error`].

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use oware::position::Side;
use oware::{Error, Position, Result, Ruleset};

mod build;
mod export;
mod index;
mod moves;
mod perft;
mod query;
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
    /// Check built layers: headers, checksums, every value re-derived, published facts.
    Verify(verify::VerifyArgs),
    /// Count positions by value in each built layer.
    Stats(stats::StatsArgs),
    /// Write layers in another format (the headerless `scores.N` files of the 2002 solution).
    Export(export::ExportArgs),
}

/// A position given on the command line: mover-first counts, or South/North rows.
#[derive(Args, Debug, Clone, Default)]
pub struct PositionArgs {
    /// Twelve pit counts in mover-first form (pits 0..5 are the mover's), separated by spaces or
    /// commas, e.g. `1 1 1 1 1 2 4 2 3 0 0 0`.
    #[arg(value_name = "POSITION", num_args = 0.., allow_negative_numbers = true)]
    pub counts: Vec<String>,
    /// South's six houses in sowing order (with --north and --to-move).
    #[arg(long, value_name = "COUNTS", requires_all = ["north", "to_move"])]
    pub south: Option<String>,
    /// North's six houses in sowing order (with --south and --to-move).
    #[arg(long, value_name = "COUNTS", requires_all = ["south", "to_move"])]
    pub north: Option<String>,
    /// Side to move with --south/--north: `south` or `north`.
    #[arg(long, value_name = "SIDE", requires_all = ["south", "north"])]
    pub to_move: Option<String>,
}

impl PositionArgs {
    /// The position given, or `None` when neither form was used.
    ///
    /// # Errors
    /// [`Error::InvalidPosition`] for malformed input; [`Error::Usage`] when both forms are given.
    pub fn position(&self) -> Result<Option<Position>> {
        match (&self.south, &self.north, &self.to_move) {
            (Some(s), Some(n), Some(side)) => {
                if !self.counts.is_empty() {
                    return Err(Error::Usage(
                        "give the position either as 12 counts or with --south/--north/--to-move, not both".into(),
                    ));
                }
                Ok(Some(Position::from_sides(s, n, side.parse::<Side>()?)?))
            }
            _ if self.counts.is_empty() => Ok(None),
            _ => Ok(Some(self.counts.join(" ").parse()?)),
        }
    }

    /// The position given, which is required.
    ///
    /// # Errors
    /// As [`position`](Self::position), and [`Error::Usage`] when no position was given.
    pub fn required(&self) -> Result<Position> {
        self.position()?.ok_or_else(|| Error::Usage("a position is required (12 counts, or --south/--north/--to-move)".into()))
    }
}

/// The ruleset option shared by every command.
#[derive(Args, Debug, Clone)]
pub struct RulesArg {
    /// Ruleset: awari (the 2002 solution's), abapa, abapa-forbidden, abapa-capture,
    /// abapa-remainder-to-opponent, abapa-spare-last, abapa-spare-first.
    #[arg(long = "rules", value_name = "RULES", default_value = "awari")]
    pub rules: Ruleset,
}


/// The database directory option (the ruleset's files live in a subdirectory named after it).
#[derive(Args, Debug, Clone)]
pub struct DirArg {
    /// Database directory.
    #[arg(long = "dir", value_name = "DIR", default_value = "databases")]
    pub dir: PathBuf,
}

/// The database directory format option of the commands that read layers.
#[derive(Args, Debug, Clone)]
pub struct FormatArg {
    /// Directory format: `native` (this tool's `<dir>/<rules>/layer-NN.owdb`, with header and
    /// checksum) or `vu` (the published headerless `<dir>/scores.N` files of the 2002 solution,
    /// awari only; compressed `.zst` files are for distribution and are not read).
    #[arg(long = "format", value_name = "FORMAT", default_value = "native")]
    pub format: oware::storage::Format,
}

/// Whether to draw progress bars: only on a terminal, and never with --quiet.
pub fn show_progress(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// A rayon thread pool of `threads` workers (default: one per core).
///
/// # Errors
/// [`Error::Usage`] for zero threads or when the threads cannot be started.
pub fn thread_pool(threads: Option<usize>) -> Result<rayon::ThreadPool> {
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(t) = threads {
        if t == 0 {
            return Err(Error::Usage("--threads must be at least 1".into()));
        }
        pool = pool.num_threads(t);
    }
    pool.build().map_err(|e| Error::Internal(format!("cannot start threads: {e}")))
}

/// Parses the command line, runs the command and returns the process exit code.
pub fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    let result = match cli.command {
        Command::Moves(a) => moves::run(a),
        Command::Perft(a) => perft::run(a),
        Command::Index(a) => index::run(a),
        Command::Build(a) => build::run(a),
        Command::Query(a) => query::run(a),
        Command::Verify(a) => verify::run(a),
        Command::Stats(a) => stats::run(a),
        Command::Export(a) => export::run(a),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("oware: error: {e}");
            e.exit_code()
        }
    }
}
