//! `oware engine`: the search engine behind the UCI dialect of the Oware engines (Aalina and the
//! Aualé GUI), read on stdin, answered on stdout. `docs/uci.md` is the dialect's reference.
//!
//! The main thread reads commands, one per line, and answers the quick ones at once (`isready`
//! too while a search runs); `go` starts the search on a worker thread, which sends each
//! finished iteration's `info` line and then `bestmove`. Every message is one line, written
//! whole under one lock and flushed. Nothing the input holds makes the program panic: unknown
//! commands and bad arguments are answered with `info string ...` and ignored. End of input is
//! `quit`, except that a search with limits is let finish first. A closed stdout ends the
//! program quietly with 141, as the other commands do.
//!
//! The files: the reading of commands, `position` whole or in pieces (`position.rs`), and `go`
//! (`go.rs`); the session, which answers each command (`session.rs`); the UCI options and the
//! engine set up for them (`setup.rs`); the search thread (`search.rs`); the one way a message
//! is written (`out.rs`).

mod go;
mod out;
mod position;
mod search;
mod session;
mod setup;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use clap::Args;
use oware::position::Side;
use oware::search::DEFAULT_HASH_MB;
use oware::{Error, Result};

use self::out::Out;
use self::position::{read_input, Input};
use self::session::Session;
use self::setup::{Options, MAX_ENGINE_THREADS, MAX_HASH_MB};
use crate::args::{hash_fits, DirArg, RulesArg};
use crate::input::{Line, MAX_LINE};

/// Arguments of `oware engine`.
#[derive(Args, Debug)]
pub(crate) struct EngineArgs {
    #[command(flatten)]
    rules: RulesArg,
    #[command(flatten)]
    dir: DirArg,
    /// Transposition table size in MiB, 1..=65536 (the UCI option Hash).
    #[arg(long, value_name = "MB", default_value_t = DEFAULT_HASH_MB as u64, value_parser = clap::value_parser!(u64).range(1..=MAX_HASH_MB))]
    hash: u64,
    /// Threads of timed searches, 1..=256 (the UCI option Threads); searches limited by depth
    /// or nodes use one, so that their answers are reproducible.
    #[arg(long, value_name = "T", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=MAX_ENGINE_THREADS))]
    threads: u64,
    /// Largest layer probed, 0..=48 (the UCI option MaxTable): layers above it are searched
    /// like any other position. Default: every layer built.
    #[arg(long, value_name = "N", default_value_t = 48, value_parser = clap::value_parser!(u32).range(0..=48))]
    max_table: u32,
}

/// Runs the engine until `quit` or the end of the input.
///
/// # Errors
/// [`Error::Usage`] for a `--hash` larger than the memory available; [`Error::Io`] when stdin
/// cannot be read. A stdout that cannot be written ends the process
/// from the thread that found it (exit code 141 for a closed pipe, else that of
/// [`Error::Output`]).
pub(crate) fn run(a: EngineArgs) -> Result<()> {
    hash_fits(a.hash).map_err(|msg| Error::Usage(format!("--hash: {msg}")))?;
    let options = Options {
        hash_mb: a.hash,
        threads: a.threads,
        dir: a.dir.dir,
        rules: a.rules.ruleset(),
        max_table: a.max_table,
        engine_turn: Side::South,
        level: oware::search::Level::FULL,
    };
    let mut session = Session::new(options, Arc::new(Out::default()));
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut buf = Vec::with_capacity(MAX_LINE + 1);
    while let Some(line) = read_input(&mut input, &mut buf, session.options.rules).map_err(|e| Error::io("<stdin>", e))? {
        let text = match line {
            Input::Position(result) => {
                session.reap();
                session.positioned(result);
                continue;
            }
            Input::Line(Line::Text(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            Input::Line(Line::TooLong { bytes, .. }) => {
                session.out.info(&format!("line of {bytes} bytes ignored: a command has at most {MAX_LINE}"));
                continue;
            }
        };
        if !session.command(&text) {
            session.stop();
            return Ok(());
        }
    }
    session.end_of_input();
    Ok(())
}
