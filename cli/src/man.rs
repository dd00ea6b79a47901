//! `oware man`: the manual pages, oware(1) and one per command, generated from the command-line
//! definitions.

use std::path::PathBuf;

use clap::Args;
use oware::{Error, Result};

use crate::output;

/// Where the manual pages go.
#[derive(Args, Debug)]
pub(crate) struct ManArgs {
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

/// The manual pages, generated from the command-line definitions `cli` (the program's, from
/// `main.rs`): `(file name, roff text)`, oware(1) first, then one page per command in the order
/// of `oware --help`.
pub(crate) fn man_pages(cli: clap::Command) -> Vec<(String, Vec<u8>)> {
    let mut cli = cli.disable_help_subcommand(true);
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

/// Writes the manual pages of the command line `cli` into a directory, or prints one.
///
/// # Errors
/// [`Error::Usage`] for a command that has no page; [`Error::Io`] when the directory or a page
/// cannot be written; [`Error::Output`] when stdout cannot be written.
pub(crate) fn run(a: ManArgs, cli: clap::Command) -> Result<()> {
    let pages = man_pages(cli);
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
