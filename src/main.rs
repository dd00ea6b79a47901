//! The `oware` command-line program. Each command lives in its own file under `cli/`.

mod cli;

fn main() {
    // Like other Unix tools, end quietly when the reader of our output goes away
    // (`oware stats | head`) instead of failing on a closed pipe.
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to the default before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::exit(cli::run());
}
