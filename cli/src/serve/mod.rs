//! `oware serve`: the analysis server. A versioned JSON API over HTTP (axum on tokio) and the
//! web page, every asset compiled into the binary: the markup at `/` (and `/index.html`), its
//! style at `/page.css` and its script's ES modules at `/game.js`, `/board.js` and
//! `/analysis.js` (the files of `cli/web/`; see [`page`]).
//!
//! API v1 (docs/server.md documents it with `curl` examples):
//! - `GET /api/v1/position?pits=..&rules=..` (or `position=` in any accepted form, or
//!   `south=&north=&to_move=`; optional `to_move`, `captured=S:N`, `max_plies`): the report of
//!   `query --json`;
//! - `POST /api/v1/positions` with `{"rules", "positions": [..], "to_move", "max_plies",
//!   "values_only"}`: one report (or value) or error per position, in order;
//! - `GET /api/v1/moves?..` (the same position parameters): the legal moves and where they lead,
//!   from the rules alone;
//! - `GET /api/v1/analyse?..&movetime=`: the search engine's answer (stopped when its client
//!   hangs up); `POST` with the same parameters in a JSON object (a long `history`);
//! - `GET /api/v1/evaluate?..&movetime=&history=&max_plies=`: the page's one request per
//!   position: the report of `/position` where the tables hold the position, else the moves of
//!   `/moves`, the answer of `/analyse` and its line played out; `POST` as for `/analyse`;
//! - `GET /api/v1/info`: version, rulesets and their built layers.
//!
//! Bad requests get 400, positions whose layers (or depths) are not built 404, damaged files
//! 500, each with `{"error": {"code", "kind", "message"}}`; so do the errors hyper answers itself (a
//! request line or head too long, a malformed request: see [`transport`]). Probing runs on tokio's
//! blocking threads (batches under a semaphore that leaves threads for single positions); a
//! request that fails (even by a panic) fails alone.
//!
//! Hostile clients: connections are capped, a request head (or body) must arrive within the
//! client timeout and an idle keep-alive connection is closed after it, a response the client
//! does not read is dropped after it; layers, bounds and dtc files are read with `pread` (or
//! copied), never mapped, so a file truncated or rewritten under the server fails the requests
//! that need it, and the database (and the search engine over it) is reopened when a file
//! changed or was replaced. On a loopback address only `Host` values naming this machine are
//! served (no DNS rebinding), and POST bodies must be `application/json` (no cross-site form
//! posts).
//!
//! Here are the options, the routes and the start; [`params`] parses requests, [`handlers`],
//! [`batch`], [`analysis`] and [`evaluate`] answer them, [`page`] serves the page's files,
//! [`errors`] makes every error answer, [`shared`] keeps the databases and engines open,
//! [`guards`] refuses and bounds what hostile clients send, and [`transport`] guards the socket
//! under hyper.

mod analysis;
mod batch;
mod errors;
mod evaluate;
mod guards;
mod handlers;
mod page;
mod params;
mod shared;
mod transport;

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::{get, post};
use axum::Router;
use clap::Args;
use oware::{Error, Result};
use tokio::sync::Semaphore;

use self::analysis::{analyse, analyse_post};
use self::batch::positions;
use self::evaluate::{evaluate, evaluate_post};
use self::guards::{allowed_hosts, default_max_connections, guard, serve};
use self::handlers::{info, method_not_allowed, moves, not_found, position};
use self::shared::Shared;
use crate::args::{cores, DatabaseArgs, ThreadsArg};
use crate::output::note;
use crate::signals;

/// Most positions in one batch request.
pub(crate) const MAX_BATCH: usize = 10_000;
/// Longest best line a request may ask for.
pub(crate) const MAX_PLIES: usize = 500;
/// Most work in one batch: positions × (1 + `max_plies`) (reports; `values_only` batches count
/// one per position). 10,000 reports without a line, or 200 with lines of 499 plies.
pub(crate) const MAX_BATCH_WORK: usize = 100_000;
/// Largest request body (a batch of 10,000 positions in the side form is about 0.5 MB).
pub(crate) const MAX_BODY: usize = 2 << 20;

/// Arguments of `oware serve`.
#[derive(Args, Debug)]
#[command(mut_args(|a| match a.get_id().as_str() {
    "threads" => a.value_name("THREADS").help("Worker threads for probing (default: one per core, at least 4)"),
    _ => a,
}))]
pub(crate) struct ServeArgs {
    /// The directory, its format, and the ruleset of requests that do not name one.
    #[command(flatten)]
    db: DatabaseArgs,
    /// Port to listen on (0: any free port; the address is printed on stderr).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Address to listen on. The default serves this machine only.
    #[arg(long, default_value = "127.0.0.1")]
    host: std::net::IpAddr,
    #[command(flatten)]
    threads: ThreadsArg,
    /// Most connections open at once (default: 512, or less under a low limit of open files);
    /// further clients wait in the listen queue.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_connections: Option<u32>,
    /// Seconds a client has to send a request's head, or its body, and that an idle keep-alive
    /// connection (or a response the client does not read) is kept: more than 0, at most 86400.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = parse_seconds)]
    client_timeout: f64,
    /// Seconds given to requests in progress to finish after Ctrl-C or SIGTERM: more than 0, at
    /// most 86400.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = parse_seconds)]
    shutdown_timeout: f64,
    /// The longest engine search `GET /api/v1/analyse` runs, in milliseconds (its `movetime`
    /// is capped to it; default 5000).
    #[arg(long, value_name = "MS", default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    max_movetime: u64,
}

fn parse_seconds(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 86_400.0 => Ok(x),
        _ => Err(format!("'{text}' is not a number of seconds more than 0 and at most 86400")),
    }
}

/// The application: routes and shared state (also used by the tests).
fn app(shared: Arc<Shared>) -> Router {
    page::routes()
        .route("/api/v1/position", get(position))
        .route("/api/v1/positions", post(positions))
        .route("/api/v1/moves", get(moves))
        .route("/api/v1/info", get(info))
        .route("/api/v1/analyse", get(analyse).post(analyse_post))
        .route("/api/v1/evaluate", get(evaluate).post(evaluate_post))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared)
}

/// Serves until interrupted (Ctrl-C or SIGTERM), then lets the requests in progress finish
/// (at most `--shutdown-timeout` seconds) and ends with [`Error::Interrupted`].
///
/// # Errors
/// [`Error::Io`] when the directory does not exist or the address cannot be bound;
/// [`Error::Threads`] when the runtime cannot start.
pub(crate) fn run(a: ServeArgs) -> Result<()> {
    // The directory must exist: a typo would otherwise serve nothing but 404s.
    let dir = &a.db.dir.dir;
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(Error::io(dir, io::Error::other("the database directory is not a directory"))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(Error::io(dir, io::Error::new(io::ErrorKind::NotFound, "the database directory does not exist")));
        }
        Err(e) => return Err(Error::io(dir, e)),
    }
    // Open the default ruleset's directory now, so a bad --dir fails at once.
    a.db.database()?;
    let default_rules = a.db.rules.ruleset();
    let threads = a.threads.threads.unwrap_or_else(|| cores().max(4));
    let max_connections = a.max_connections.map_or_else(default_max_connections, |n| n as usize);
    let client_timeout = Duration::from_secs_f64(a.client_timeout);
    let shutdown_timeout = Duration::from_secs_f64(a.shutdown_timeout);
    // Ctrl-C and SIGTERM set a flag (a second one ends the process at once, and so does the
    // watchdog once the requests in progress have had their time).
    signals::cooperative_within(shutdown_timeout.saturating_add(signals::STOP_GRACE));
    let shared = Arc::new(Shared {
        db: a.db,
        default_rules,
        open: Mutex::new(HashMap::new()),
        heavy: Semaphore::new(threads.saturating_sub(1).max(1)),
        client_timeout,
        engines: Mutex::new(HashMap::new()),
        searches: Arc::new(Semaphore::new(cores())),
        max_movetime: Duration::from_millis(a.max_movetime),
        hosts: allowed_hosts(a.host),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(threads)
        .enable_all()
        .build()
        .map_err(|e| Error::Threads { threads, reason: e.to_string() })?;
    let addr = SocketAddr::new(a.host, a.port);
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| Error::io(format!("listening on {addr}"), e))?;
        let local = listener.local_addr().map_err(|e| Error::io("listening socket", e))?;
        note(&format!("serving {default_rules} on http://{local}/ (API: http://{local}/api/v1/info); Ctrl-C stops"));
        serve(listener, app(shared), max_connections, client_timeout, shutdown_timeout).await;
        Ok::<(), Error>(())
    });
    // Blocking work still running (a batch past the grace period) is not waited for.
    runtime.shutdown_timeout(Duration::from_millis(100));
    served?;
    // The caller exits with 130 (interrupted) and says nothing more: there is nothing to resume.
    note("stopped serving (Ctrl-C or SIGTERM)");
    Err(Error::Interrupted)
}

#[cfg(test)]
mod tests {
    //! A fuzz campaign of the API's decoders, in process: query strings (as the parameters a
    //! request carries), JSON bodies of batches, `Host` values and the heads the server turns into
    //! JSON errors. Whatever the input, nothing panics, every refusal is a 4xx or 5xx error
    //! document, and every batch answer is valid JSON.

    use super::batch::batch_answer;
    use super::errors::ApiError;
    use super::guards::host_name;
    use super::handlers::{answer, moves_answer};
    use super::params::ask_from_query;
    use super::transport::json_error_answer;
    use super::*;
    use clap::Parser;
    use oware::Ruleset;
    use serde_json::Value;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[self.below(items.len())]
        }
    }

    /// `text` with a few random byte changes, insertions and deletions (kept as UTF-8, as the
    /// query decoder hands strings over).
    fn mutate(rng: &mut Rng, text: &str) -> Vec<u8> {
        let mut b = text.as_bytes().to_vec();
        for _ in 0..rng.below(4) {
            let at = rng.below(b.len() + 1);
            match rng.below(3) {
                0 if at < b.len() => b[at] = rng.next() as u8,
                1 => {
                    let pool = b"0123456789 ,:-[]{}\"SNabcdefABCDEF\\\x00\xff";
                    b.insert(at, pool[rng.below(pool.len())]);
                }
                _ if at < b.len() => {
                    b.remove(at);
                }
                _ => {}
            }
        }
        b
    }

    fn shared(dir: &std::path::Path) -> Shared {
        let cli = crate::Cli::try_parse_from(["oware", "serve", "--dir", dir.to_str().unwrap()]).unwrap();
        let crate::Command::Serve(a) = cli.command else { unreachable!() };
        Shared {
            db: a.db,
            default_rules: Ruleset::Awari,
            open: Mutex::new(HashMap::new()),
            heavy: Semaphore::new(1),
            engines: Mutex::new(HashMap::new()),
            searches: Arc::new(Semaphore::new(1)),
            max_movetime: Duration::from_millis(2000),
            client_timeout: Duration::from_secs(1),
            hosts: allowed_hosts("127.0.0.1".parse().unwrap()),
        }
    }

    fn refused_properly(e: &ApiError, input: &dyn std::fmt::Debug) {
        assert!(e.status.is_client_error() || e.status.is_server_error(), "{input:?}: status {}", e.status);
        assert!(!e.error.message.is_empty(), "{input:?}: an error without a message");
    }

    #[test]
    fn the_api_decoders_survive_a_fuzz_campaign() {
        let tmp = tempfile::tempdir().unwrap();
        let config = oware::BuildConfig { rules: Ruleset::Awari, max_stones: 6, dir: tmp.path().to_path_buf(), max_memory: None, ..Default::default() };
        oware::build(&config, &oware::builder::Silent).unwrap();
        let shared = shared(tmp.path());
        let keys = ["pits", "position", "south", "north", "to_move", "rules", "captured", "max_plies", "pitz", ""];
        let values = [
            "1 0 0 0 0 0 0 0 0 0 0 0",
            "0,1,0,0,2,0,0,0,1,0,0,0",
            "[1,0,0,0,0,0,0,0,0,0,0,2]",
            "S: 1 0 0 0 0 0  N: 0 0 0 0 0 1  S",
            "0 0 0 0 0 1 / 1 0 0 0 0 0",
            "1 0 0 0 0 0",
            "S",
            "N",
            "north",
            "awari",
            "abapa",
            "chess",
            "3:4",
            "24:24",
            "40",
            "100000",
            "-1",
            "4 4 4 4 4 4 4 4 4 4 4 4",
            "",
        ];
        let mut rng = Rng(0x5eed);
        let (mut answered, mut refused) = (0u32, 0u32);
        for case in 0..20_000 {
            let mut q = HashMap::new();
            for _ in 0..1 + rng.below(4) {
                let seed = rng.pick(&values);
                let value = String::from_utf8_lossy(&mutate(&mut rng, seed)).into_owned();
                q.insert(rng.pick(&keys).to_string(), value);
            }
            match ask_from_query(&shared, &q).and_then(|ask| answer(&shared, &ask).map(|_| ())) {
                Ok(()) => answered += 1,
                Err(e) => {
                    refused_properly(&e, &(case, &q));
                    refused += 1;
                }
            }
            if let Err(e) = moves_answer(&shared, &q) {
                refused_properly(&e, &(case, &q));
            }
        }
        assert!(answered > 50 && refused > 100, "answered {answered}, refused {refused}");
        let body = r#"{"rules":"awari","positions":["1 0 0 0 0 0 0 0 0 0 0 0",[0,1,0,0,2,0,0,0,1,0,0,0],"S: 1 0 0 0 0 0  N: 0 0 0 0 0 1  S"],"max_plies":3,"values_only":false,"to_move":"S"}"#;
        let (mut answered, mut refused) = (0u32, 0u32);
        for case in 0..5_000 {
            let input = mutate(&mut rng, body);
            match batch_answer(&shared, &input) {
                Ok(text) => {
                    serde_json::from_str::<Value>(&text)
                        .unwrap_or_else(|e| panic!("case {case}: invalid JSON answer ({e}) to {}", String::from_utf8_lossy(&input)));
                    answered += 1;
                }
                Err(e) => {
                    refused_properly(&e, &String::from_utf8_lossy(&input));
                    refused += 1;
                }
            }
        }
        assert!(answered > 50 && refused > 50, "answered {answered}, refused {refused}");
        for _ in 0..20_000 {
            let seed = rng.pick(&["localhost:8080", "[::1]:80", "127.0.0.1", "evil.example", "[::1"]);
            let host = String::from_utf8_lossy(&mutate(&mut rng, seed)).into_owned();
            let _ = host_name(&host);
            let seed = rng.pick(&[
                "HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n\r\n",
                "HTTP/1.1 200 OK\r\n\r\n",
                "HTTP/1.0 400 Bad Request\r\ncontent-length: 0\r\n\r\n",
            ]);
            let head = mutate(&mut rng, seed);
            if let Some(answer) = json_error_answer(&head) {
                let text = String::from_utf8_lossy(&answer);
                let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
                serde_json::from_str::<Value>(body).unwrap_or_else(|e| panic!("invalid JSON error ({e}) for head {:?}", String::from_utf8_lossy(&head)));
            }
        }
    }
}
