//! The `oware` program: the command line and its dispatch; each command is a file (or a folder)
//! of its own, and what several share is in rooms of its own (`args`, `input`, `errors`,
//! `show`, `report`, `output`, `progress`, `signals`). It is its own crate over the `oware`
//! library and uses only the library's public API. Results go to stdout, messages and progress
//! to stderr; every failure maps to the exit code of its kind ([`errors::exit_code`]).

use clap::{Args, CommandFactory, Parser, Subcommand};
use oware::error::ErrorKind;
use oware::{Error, Result};

mod analyse;
mod args;
mod build;
mod engine;
mod errors;
mod export;
mod game;
mod index;
mod input;
mod man;
mod moves;
mod output;
mod pack;
mod perft;
mod play;
mod progress;
mod query;
mod report;
mod serve;
mod show;
mod signals;
mod stats;
mod verify;

/// Exact-value Oware (Awari) endgame databases: build, query, verify.
#[derive(Parser, Debug)]
#[command(name = "oware", version, about, long_about = None)]
pub(crate) struct Cli {
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
    Man(man::ManArgs),
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
                return errors::report(lib);
            }
            let code = if e.use_stderr() { 2 } else { 0 };
            // Help and version go to stdout: a failure to write them is an output error.
            return match e.print() {
                Ok(()) => code,
                Err(source) if code == 0 => errors::report(&Error::Output { stream: "stdout", source }),
                Err(_) => code,
            };
        }
    };
    // Only a build resumes where it stopped; the others say so differently after Ctrl-C.
    let resumes = matches!(cli.command, Command::Build(_));
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
            Err(Error::Interrupted) => return errors::exit_code(ErrorKind::Interrupted),
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
        Command::Man(a) => man::run(a, Cli::command()),
    };
    match result {
        Ok(()) => 0,
        Err(e) if resumes => errors::report(&e),
        Err(e) => errors::report_stopped(&e),
    }
}

/// Arguments of `oware completions`.
#[derive(Args, Debug)]
pub(crate) struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
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
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }
}
