//! The `oware` command-line program. Each command lives in its own file under `cli/`.

mod cli;

fn main() {
    std::process::exit(cli::run());
}
