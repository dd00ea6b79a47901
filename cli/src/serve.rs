//! `oware serve`: the analysis server. A versioned JSON API over HTTP (axum on tokio) and the
//! web page, every asset compiled into the binary.
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
//!   hangs up);
//! - `GET /api/v1/info`: version, rulesets and their built layers.
//!
//! Bad requests get 400, positions whose layers (or depths) are not built 404, damaged files
//! 500, each with `{"error": {"code", "kind", "message"}}`; so do the errors hyper answers itself (a
//! request line or head too long, a malformed request: see [`Guarded`]). Probing runs on tokio's
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

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Args;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use oware::error::ErrorKind;
use oware::game::Captured;
use oware::position::{Position, Side};
use oware::probe::Database;
use oware::search::{Control, Engine, Limits, Root};
use oware::storage::ReadMode;
use oware::{Error, Result, Ruleset};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{watch, Semaphore};

use super::analyse::{bound_name, line_houses};
use super::output::{note, ErrorDoc, SCHEMA_VERSION};
use super::report::{report, ReportDoc};
use super::{signals, DatabaseArgs, ThreadsArg};

/// The web page (HTML, CSS and script in one file).
const PAGE: &str = include_str!("../web/index.html");

/// Most positions in one batch request.
pub const MAX_BATCH: usize = 10_000;
/// Longest best line a request may ask for.
pub const MAX_PLIES: usize = 500;
/// Best-line length of a single-position request when not given.
const DEFAULT_PLIES: usize = 60;
/// Most work in one batch: positions × (1 + `max_plies`) (reports; `values_only` batches count
/// one per position). 10,000 reports without a line, or 200 with lines of 499 plies.
pub const MAX_BATCH_WORK: usize = 100_000;
/// Largest request body (a batch of 10,000 positions in the side form is about 0.5 MB).
pub const MAX_BODY: usize = 2 << 20;
/// Largest request line (URI included) and request head answered; longer ones get 414 / 431.
const MAX_URI: usize = 8 << 10;

/// Arguments of `oware serve`.
#[derive(Args, Debug)]
#[command(mut_args(|a| match a.get_id().as_str() {
    "threads" => a.value_name("THREADS").help("Worker threads for probing (default: one per core, at least 4)"),
    _ => a,
}))]
pub struct ServeArgs {
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
    /// connection (or a response the client does not read) is kept.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = parse_seconds)]
    client_timeout: f64,
    /// Seconds given to requests in progress to finish after Ctrl-C or SIGTERM.
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
        _ => Err(format!("'{text}' is not a number of seconds in 0..86400")),
    }
}

/// One ruleset's open database and when to look next for files replaced under it.
struct Opened {
    db: Arc<Database>,
    next_replaced_check: Instant,
}

/// What every request sees: the options and the databases opened so far (one per ruleset).
struct Shared {
    db: DatabaseArgs,
    default_rules: Ruleset,
    open: Mutex<HashMap<Ruleset, Opened>>,
    /// Batches running at once (the other blocking threads stay free for single positions).
    heavy: Semaphore,
    /// Seconds a request body may take to arrive.
    client_timeout: Duration,
    /// One search engine per ruleset, made on first use of `GET /api/v1/analyse` over the
    /// database then open (and made anew once that database is reopened).
    engines: Mutex<HashMap<Ruleset, EngineOn>>,
    /// Engine searches running at once (one thread each); a search holds its permit until it
    /// has stopped.
    searches: Arc<Semaphore>,
    /// The longest search `GET /api/v1/analyse` runs.
    max_movetime: Duration,
    /// On a loopback address: the `Host` values served (lowercase, without the port).
    hosts: Option<Vec<String>>,
}

/// A ruleset's search engine and the database it was made over.
type EngineOn = (Arc<Database>, Arc<Engine>);

/// How often (at most) the server looks for layer files replaced by rename.
const REPLACED_CHECK: Duration = Duration::from_millis(500);

impl Shared {
    /// The database of `rules` (opened on first use, layers read with `pread`), and whether to
    /// look now for files replaced under it.
    fn database(&self, rules: Ruleset) -> std::result::Result<(Arc<Database>, bool), ApiError> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if let Some(o) = open.get_mut(&rules) {
            let due = now >= o.next_replaced_check;
            if due {
                o.next_replaced_check = now + REPLACED_CHECK;
            }
            return Ok((o.db.clone(), due));
        }
        let db = Arc::new(self.db.database_for(rules).map_err(ApiError::from)?.read_mode(ReadMode::Pread));
        open.insert(rules, Opened { db: db.clone(), next_replaced_check: now + REPLACED_CHECK });
        Ok((db, false))
    }

    /// Drops `db` (when it is still the one open for `rules`): the next request opens the
    /// directory again, so a file changed or replaced is read anew.
    fn forget(&self, rules: Ruleset, db: &Arc<Database>) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.get(&rules).is_some_and(|o| Arc::ptr_eq(&o.db, db)) {
            open.remove(&rules);
        }
    }

    /// Runs `f` on the database of `rules`, then checks that no open file changed while it ran
    /// (or before): if one did, the database is reopened and `f` runs again, once, so that only
    /// the answers needing a damaged layer fail (naming it) and a file replaced by rename is
    /// read anew. A file still changing gives its error.
    fn with_database<T>(&self, rules: Ruleset, f: impl Fn(&Arc<Database>) -> std::result::Result<T, ApiError>) -> std::result::Result<T, ApiError> {
        let mut attempt = 0;
        loop {
            let (db, look_for_replaced) = self.database(rules)?;
            let result = f(&db);
            let changed = db.check_open_files().err();
            let replaced = look_for_replaced && !db.replaced_files().is_empty();
            if changed.is_none() && !replaced {
                return result;
            }
            self.forget(rules, &db);
            attempt += 1;
            if attempt == 2 {
                return match changed {
                    Some(e) => Err(ApiError::from(e)),
                    None => result,
                };
            }
        }
    }
}

/// An error answer: an HTTP status and the error document.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    error: ErrorDoc<'static>,
}

impl ApiError {
    fn bad(message: impl Into<String>) -> ApiError {
        ApiError::status(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// An error of the HTTP exchange itself (the exit code of a usage error).
    fn status(status: StatusCode, kind: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, error: ErrorDoc { code: super::exit_code(ErrorKind::Usage), kind, message: message.into() } }
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let status = match e.kind() {
            ErrorKind::InvalidPosition | ErrorKind::NotInLayer | ErrorKind::IndexOutOfRange | ErrorKind::Usage => StatusCode::BAD_REQUEST,
            // Depths to capture not built are a missing layer too, as the C and Python
            // libraries have them.
            ErrorKind::LayerMissing | ErrorKind::BoundsMissing | ErrorKind::DtcMissing => StatusCode::NOT_FOUND,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError { status, error: ErrorDoc { message: client_message(&e), ..ErrorDoc::of(&e) } }
    }
}

/// The message of `e` for a web client: never a path of the server's file system (a file is
/// named by its file name, a database directory by its ruleset).
fn client_message(e: &Error) -> String {
    let text = e.to_string();
    let (path, shown) = match e {
        Error::LayerMissing { dir, rules, .. } | Error::BoundsMissing { dir, rules, .. } | Error::DtcMissing { dir, rules, .. } => {
            (dir, format!("the server's {rules} database"))
        }
        Error::PublishedLayerMissing { path, .. }
        | Error::RulesetMismatch { path, .. }
        | Error::LayerMismatch { path, .. }
        | Error::Corrupt { path, .. }
        | Error::NotAFile { path, .. }
        | Error::Io { path, .. }
        | Error::DiskSpace { path, .. } => (path, path.file_name().map_or_else(|| "a file".to_string(), |n| n.to_string_lossy().into_owned())),
        _ => return text,
    };
    let full = path.display().to_string();
    if full.is_empty() {
        text
    } else {
        text.replace(&full, &shown)
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    schema_version: u32,
    error: &'a ErrorDoc<'static>,
}

impl ApiError {
    fn body(&self) -> ErrorBody<'_> {
        ErrorBody { schema_version: SCHEMA_VERSION, error: &self.error }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}

/// The options of one position's request.
struct Ask {
    rules: Ruleset,
    position: Position,
    side: Side,
    captured: Option<Captured>,
    max_plies: usize,
}

fn parse_rules(shared: &Shared, name: Option<&str>) -> std::result::Result<Ruleset, ApiError> {
    match name {
        None => Ok(shared.default_rules),
        Some(n) => n.parse().map_err(|e: String| ApiError::bad(format!("rules: {e}"))),
    }
}

fn parse_plies(text: Option<&str>, default: usize) -> std::result::Result<usize, ApiError> {
    match text {
        None => Ok(default),
        Some(t) => match t.trim().parse::<usize>() {
            Ok(k) if k <= MAX_PLIES => Ok(k),
            _ => Err(ApiError::bad(format!("max_plies must be a whole number 0..{MAX_PLIES}, not '{}'", t.escape_debug()))),
        },
    }
}

fn parse_side(text: Option<&str>) -> std::result::Result<Option<Side>, ApiError> {
    text.map(|t| t.parse::<Side>().map_err(|e| ApiError::bad(format!("to_move: {e}")))).transpose()
}

/// A position and its side from the text forms a request may use (South when none is named).
fn place(text: &str, side: Option<Side>) -> std::result::Result<(Position, Side), ApiError> {
    let (p, side) = Position::place(text, side).map_err(ApiError::from)?;
    Ok((p, side.unwrap_or(Side::South)))
}

/// The query parameters, each given once (a duplicate is refused rather than one of them
/// silently chosen).
fn params(
    query: std::result::Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> std::result::Result<HashMap<String, String>, ApiError> {
    let Query(pairs) = query.map_err(|e| ApiError::bad(format!("query string: {}", e.body_text())))?;
    let mut q = HashMap::with_capacity(pairs.len());
    for (k, v) in pairs {
        if q.contains_key(&k) {
            return Err(ApiError::bad(format!("parameter '{}' given more than once", k.escape_debug())));
        }
        q.insert(k, v);
    }
    Ok(q)
}

/// The parameters naming a position, which every endpoint but `/info` takes.
const POSITION_PARAMS: [&str; 7] = ["pits", "position", "south", "north", "to_move", "rules", "captured"];

/// Refuses a parameter other than [`POSITION_PARAMS`] and `extra`.
fn check_known(q: &HashMap<String, String>, extra: &[&str]) -> std::result::Result<(), ApiError> {
    for key in q.keys() {
        if !POSITION_PARAMS.contains(&key.as_str()) && !extra.contains(&key.as_str()) {
            let known = POSITION_PARAMS.iter().chain(extra).copied().collect::<Vec<_>>().join(", ");
            return Err(ApiError::bad(format!("unknown parameter '{}' (known: {known})", key.escape_debug())));
        }
    }
    Ok(())
}

/// The position's request of `GET /api/v1/position` and `/moves`.
fn ask_from_query(shared: &Shared, q: &HashMap<String, String>) -> std::result::Result<Ask, ApiError> {
    check_known(q, &["max_plies"])?;
    ask_of(shared, q)
}

/// The position and options `q` gives (its parameters already checked).
fn ask_of(shared: &Shared, q: &HashMap<String, String>) -> std::result::Result<Ask, ApiError> {
    let get = |k: &str| q.get(k).map(String::as_str);
    let rules = parse_rules(shared, get("rules"))?;
    let side = parse_side(get("to_move"))?;
    let (position, side) = match (get("pits"), get("position"), get("south"), get("north")) {
        (Some(p), None, None, None) => place(p, side)?,
        (None, Some(p), None, None) => place(p, side)?,
        (None, None, Some(s), Some(n)) => {
            let side = side.ok_or_else(|| ApiError::bad("south and north need to_move"))?;
            (Position::from_sides(s, n, side).map_err(ApiError::from)?, side)
        }
        (None, None, None, None) => return Err(ApiError::bad("give the position: pits=, position=, or south=, north= and to_move=")),
        _ => return Err(ApiError::bad("give the position one way only: pits=, position=, or south= and north=")),
    };
    let captured = get("captured").map(Captured::parse).transpose().map_err(|e| ApiError::bad(format!("captured: {e}")))?;
    if let Some(c) = captured {
        c.check(position.stones()).map_err(|e| ApiError::bad(format!("captured: {e}")))?;
    }
    let max_plies = parse_plies(get("max_plies"), DEFAULT_PLIES)?;
    Ok(Ask { rules, position, side, captured, max_plies })
}

/// Answers one position (blocking: probes the files), checking the files for changes as
/// [`Shared::with_database`] does.
fn answer(shared: &Shared, ask: &Ask) -> std::result::Result<ReportDoc, ApiError> {
    shared.with_database(ask.rules, |db| answer_with(db, ask))
}

fn answer_with(db: &Database, ask: &Ask) -> std::result::Result<ReportDoc, ApiError> {
    let analysis = db.solution(&ask.position, ask.max_plies).map_err(ApiError::from)?;
    Ok(report(db, &ask.position, ask.side, &analysis, ask.captured))
}

/// Runs `f` on a blocking thread; a panic there is a 500 for this request only.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> std::result::Result<T, ApiError> + Send + 'static) -> std::result::Result<T, ApiError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            error: ErrorDoc {
                code: super::exit_code(ErrorKind::Internal),
                kind: ErrorKind::Internal.as_str(),
                message: format!("internal error while answering: {e}"),
            },
        }),
    }
}

async fn position(
    State(shared): State<Arc<Shared>>,
    q: std::result::Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = match params(q) {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    let result = blocking(move || {
        let ask = ask_from_query(&shared, &q)?;
        answer(&shared, &ask)
    })
    .await;
    match result {
        Ok(doc) => Json(doc).into_response(),
        Err(e) => e.into_response(),
    }
}

/// The body of `POST /api/v1/positions`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchRequest {
    rules: Option<String>,
    positions: Vec<Value>,
    /// Best-line length for every position (default 0: no line).
    max_plies: Option<usize>,
    /// Side to move for positions that do not name it.
    to_move: Option<String>,
    /// Answer each position with its value only (`{"position", "to_move", "value"}`): the
    /// fastest form, for programs that need nothing else.
    values_only: Option<bool>,
}

/// The answer of `values_only`.
#[derive(Serialize)]
struct ValueItem {
    position: [u8; 12],
    to_move: &'static str,
    value: i8,
}

#[derive(Serialize)]
#[serde(untagged)]
enum BatchItem<'a> {
    Report(Box<ReportDoc>),
    Value(ValueItem),
    Error { error: &'a ErrorDoc<'static> },
}

fn batch_answer(shared: &Shared, body: &[u8]) -> std::result::Result<String, ApiError> {
    let req: BatchRequest = serde_json::from_slice(body).map_err(|e| ApiError::bad(format!("request body: {e}")))?;
    if req.positions.len() > MAX_BATCH {
        return Err(ApiError::bad(format!("{} positions in one batch: at most {MAX_BATCH}", req.positions.len())));
    }
    let rules = parse_rules(shared, req.rules.as_deref())?;
    let side = parse_side(req.to_move.as_deref())?;
    let max_plies = req.max_plies.unwrap_or(0);
    if max_plies > MAX_PLIES {
        return Err(ApiError::bad(format!("max_plies must be 0..{MAX_PLIES}")));
    }
    let values_only = req.values_only.unwrap_or(false);
    let work = if values_only { req.positions.len() } else { req.positions.len() * (1 + max_plies) };
    if work > MAX_BATCH_WORK {
        return Err(ApiError::bad(format!(
            "{} positions with max_plies {max_plies} is too much for one request: positions × (1 + max_plies) must be at most {MAX_BATCH_WORK} (split the batch, or ask for shorter lines)",
            req.positions.len()
        )));
    }
    shared.with_database(rules, |db| batch_results(db, &req, rules, side, max_plies, values_only))
}

fn batch_results(
    db: &Database,
    req: &BatchRequest,
    rules: Ruleset,
    side: Option<Side>,
    max_plies: usize,
    values_only: bool,
) -> std::result::Result<String, ApiError> {
    let mut errors: Vec<ApiError> = Vec::new();
    let mut answers: Vec<std::result::Result<BatchItem, usize>> = Vec::with_capacity(req.positions.len());
    for item in &req.positions {
        let one = (|| {
            let (position, side) = match item {
                Value::String(s) => place(s, side)?,
                Value::Array(_) => {
                    let text = item.to_string();
                    (text.parse::<Position>().map_err(ApiError::from)?, side.unwrap_or(Side::South))
                }
                _ => return Err(ApiError::bad("a position is a string or an array of 12 counts")),
            };
            if values_only {
                let value = db.value(&position).map_err(ApiError::from)?;
                return Ok(BatchItem::Value(ValueItem { position: *position.board(), to_move: side.name(), value }));
            }
            Ok(BatchItem::Report(Box::new(answer_with(db, &Ask { rules, position, side, captured: None, max_plies })?)))
        })();
        answers.push(one.map_err(|e| {
            errors.push(e);
            errors.len() - 1
        }));
    }
    let results: Vec<BatchItem> = answers
        .into_iter()
        .map(|a| match a {
            Ok(item) => item,
            Err(i) => BatchItem::Error { error: errors[i].body().error },
        })
        .collect();
    #[derive(Serialize)]
    struct BatchBody<'a> {
        schema_version: u32,
        results: Vec<BatchItem<'a>>,
    }
    serde_json::to_string(&BatchBody { schema_version: SCHEMA_VERSION, results }).map_err(|e| ApiError::from(Error::Internal(e.to_string())))
}

/// The request body, read within the client timeout and at most [`MAX_BODY`] bytes: 408, 413
/// or 400 (a malformed chunked body) otherwise, as JSON.
async fn read_body(shared: &Shared, body: Body) -> std::result::Result<Bytes, ApiError> {
    match tokio::time::timeout(shared.client_timeout, axum::body::to_bytes(body, MAX_BODY)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) => {
            let inner = e.into_inner();
            if inner.downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                Err(ApiError::status(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", format!("the request body is larger than {MAX_BODY} bytes")))
            } else {
                Err(ApiError::bad(format!("the request body could not be read: {inner}")))
            }
        }
        Err(_) => Err(ApiError::status(
            StatusCode::REQUEST_TIMEOUT,
            "timeout",
            format!("the request body did not arrive within {} s", shared.client_timeout.as_secs_f64()),
        )),
    }
}

async fn positions(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    if let Some(n) = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok()) {
        if n > MAX_BODY as u64 {
            return ApiError::status(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!("the request body ({n} bytes) is larger than {MAX_BODY} bytes"),
            )
            .into_response();
        }
    }
    let body = match read_body(&shared, body).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    // Batches wait for a permit here, holding no blocking thread while they wait.
    let Ok(_permit) = shared.heavy.acquire().await else {
        return ApiError::from(Error::Internal("the batch semaphore was closed".into())).into_response();
    };
    let worker = shared.clone();
    match blocking(move || batch_answer(&worker, &body)).await {
        Ok(text) => ([(header::CONTENT_TYPE, "application/json")], text).into_response(),
        Err(e) => e.into_response(),
    }
}

#[derive(Serialize)]
struct InfoDoc {
    schema_version: u32,
    api: &'static str,
    version: &'static str,
    default_rules: &'static str,
    rules: Vec<RulesInfo>,
}

#[derive(Serialize)]
struct RulesInfo {
    name: &'static str,
    layers: Vec<u32>,
}

async fn info(State(shared): State<Arc<Shared>>) -> Response {
    let result = blocking(move || {
        let mut rules = Vec::new();
        for r in Ruleset::ALL {
            // A format that holds only some rulesets (the 2002 files: awari) lists those.
            if let Ok((db, _)) = shared.database(r) {
                rules.push(RulesInfo { name: r.name(), layers: db.layers_present() });
            }
        }
        Ok(InfoDoc { schema_version: SCHEMA_VERSION, api: "v1", version: env!("CARGO_PKG_VERSION"), default_rules: shared.default_rules.name(), rules })
    })
    .await;
    match result {
        Ok(doc) => Json(doc).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `GET /api/v1/moves`: the legal moves of a position and where they lead, from the rules alone
/// (no database: the page plays on in positions the layers do not cover).
#[derive(Serialize)]
struct MovesDoc {
    schema_version: u32,
    rules: &'static str,
    to_move: &'static str,
    absolute: [u8; 12],
    /// Empty when the game is over.
    moves: Vec<RuleMoveDoc>,
    /// The value of a position without a legal move (the game is over).
    ending: Option<i8>,
}

#[derive(Serialize)]
struct RuleMoveDoc {
    pit: u8,
    house: String,
    captured: Option<u8>,
    ends_game: bool,
    child: Option<[u8; 12]>,
}

fn moves_answer(shared: &Shared, q: &HashMap<String, String>) -> std::result::Result<MovesDoc, ApiError> {
    let ask = ask_from_query(shared, q)?;
    let moves = ask.rules.moves(ask.position.board());
    let list = moves
        .as_slice()
        .iter()
        .map(|m| {
            let (captured, child) = match m.outcome {
                oware::rules::Outcome::Child { captured, child } => (Some(captured), Some(child)),
                oware::rules::Outcome::End { .. } => (None, None),
            };
            RuleMoveDoc { pit: m.pit, house: oware::position::house(ask.side, m.pit).to_string(), captured, ends_game: child.is_none(), child }
        })
        .collect();
    Ok(MovesDoc {
        schema_version: SCHEMA_VERSION,
        rules: ask.rules.name(),
        to_move: ask.side.name(),
        absolute: ask.position.absolute(ask.side),
        moves: list,
        ending: moves.ending(),
    })
}

async fn moves(State(shared): State<Arc<Shared>>, q: std::result::Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>) -> Response {
    let q = match params(q) {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    match moves_answer(&shared, &q) {
        Ok(doc) => Json(doc).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `GET /api/v1/analyse`: the search engine's answer, above the layers or inside them, within
/// a bounded time.
#[derive(Serialize)]
struct AnalyseDoc {
    schema_version: u32,
    rules: &'static str,
    to_move: &'static str,
    absolute: [u8; 12],
    best_pit: Option<u8>,
    best_house: Option<String>,
    /// Stones, the mover's view: the board's (as the values), or the game's final score when
    /// `captured` is given.
    score: f64,
    /// Proven by the search (else an estimate).
    exact: bool,
    depth: u32,
    nodes: u64,
    nps: u64,
    seconds: f64,
    /// The best line, as houses.
    pv: Vec<String>,
    moves: Vec<AnalyseMove>,
    /// Layers 0..=tables are probed (null: none).
    tables: Option<u32>,
}

#[derive(Serialize)]
struct AnalyseMove {
    pit: u8,
    house: String,
    score: f64,
    /// `exact`, or `upper` when the move was refuted without an exact score.
    bound: &'static str,
    exact: bool,
}

impl Shared {
    /// The engine of `rules` over `db`, the ruleset's open database: made on first use, and
    /// anew when the database was reopened (a file changed or was replaced), so that the engine
    /// reads what the other requests read. Without tables when it has no layer 0.
    fn engine(&self, rules: Ruleset, db: &Arc<Database>) -> std::result::Result<Arc<Engine>, ApiError> {
        if let Some((on, e)) = self.engines.lock().unwrap_or_else(|p| p.into_inner()).get(&rules) {
            if Arc::ptr_eq(on, db) {
                return Ok(e.clone());
            }
        }
        let engine = Arc::new(Engine::new(rules, Some(db.clone()), None).map_err(ApiError::from)?);
        let mut engines = self.engines.lock().unwrap_or_else(|p| p.into_inner());
        match engines.get(&rules) {
            Some((on, e)) if Arc::ptr_eq(on, db) => Ok(e.clone()),
            _ => {
                engines.insert(rules, (db.clone(), engine.clone()));
                Ok(engine)
            }
        }
    }
}

/// The most positions `history` may name (a game has far fewer between two captures).
const MAX_HISTORY: usize = 10_000;

/// The `history` parameter of `/analyse`: the game's positions since its last capture, oldest
/// first, separated by `;`, each the 12 counts of the board as drawn (South's `A..F`, then
/// North's `a..f`, comma-separated). The sides to move alternate back from the position asked
/// about: the last one has the other side to move. Returns them mover-first.
fn parse_history(text: &str, to_move: Side) -> std::result::Result<Vec<oware::Board>, ApiError> {
    let entries: Vec<&str> = text.split(';').filter(|e| !e.trim().is_empty()).take(MAX_HISTORY + 1).collect();
    if entries.len() > MAX_HISTORY {
        return Err(ApiError::bad(format!("history names more than {MAX_HISTORY} positions")));
    }
    let len = entries.len();
    let mut out = Vec::with_capacity(len);
    for (i, entry) in entries.iter().enumerate() {
        let bad = |why: String| ApiError::bad(format!("history position {} of {len}: {why}", i + 1));
        let counts: Vec<&str> = entry.split(',').map(str::trim).collect();
        if counts.len() != 12 {
            return Err(bad(format!("12 counts (South's A..F, then North's a..f), not {}", counts.len())));
        }
        let mut absolute = [0u8; 12];
        for (slot, c) in absolute.iter_mut().zip(&counts) {
            *slot = match c.parse::<u8>() {
                Ok(v) if v <= 48 => v,
                _ => return Err(bad(format!("'{}' is not a count 0..48", c.escape_debug()))),
            };
        }
        // The last entry has the other side to move, the one before it this side, and so on.
        let side = if (len - i) % 2 == 1 { to_move.other() } else { to_move };
        let board = match side {
            Side::South => absolute,
            Side::North => oware::rules::turned(&absolute),
        };
        let position = Position::new(board).map_err(|e| bad(e.to_string()))?;
        out.push(*position.board());
    }
    Ok(out)
}

/// Stops a search when dropped: hyper drops a request's future (the handler holding this) when
/// its client hangs up, and the search, on a blocking thread that cannot be cancelled, then
/// ends at once instead of running out its time.
struct StopOnDrop(Arc<Control>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}

fn analyse_answer(shared: &Shared, mut q: HashMap<String, String>, control: &Control) -> std::result::Result<AnalyseDoc, ApiError> {
    // `max_plies` has no meaning here: the engine's line is as long as its search.
    check_known(&q, &["movetime", "history"])?;
    let history = q.remove("history");
    let ms = match q.remove("movetime") {
        None => 500,
        Some(t) => match t.trim().parse::<u64>() {
            Ok(ms) if ms >= 1 => ms,
            _ => return Err(ApiError::bad(format!("movetime must be a whole number of milliseconds, not '{}'", t.escape_debug()))),
        },
    };
    let movetime = Duration::from_millis(ms).min(shared.max_movetime);
    let ask = ask_of(shared, &q)?;
    // The score is then the game's final score: the counts must be the game's, as
    // `oware analyse --captured` has them.
    if let Some(c) = ask.captured {
        let (south, north, board) = (c.of(Side::South), c.of(Side::North), ask.position.stones());
        let total = south + north + board;
        if total != oware::rules::TOTAL_STONES {
            return Err(ApiError::bad(format!(
                "{south} + {north} captured and {board} on the board make {total}: a game has {} stones",
                oware::rules::TOTAL_STONES
            )));
        }
    }
    let captured = ask.captured.map(|c| (c.of(ask.side), c.of(ask.side.other())));
    let history = match history {
        Some(text) => parse_history(&text, ask.side)?,
        None => Vec::new(),
    };
    let root = Root { position: ask.position, captured, history };
    let limits = Limits { movetime: Some(movetime), all_moves: true, ..Default::default() };
    // Checked for files changed under it as the other requests are (the engine is made anew
    // over a reopened database).
    let (engine, r) = shared.with_database(ask.rules, |db| {
        let engine = shared.engine(ask.rules, db)?;
        let r = engine.search(&root, &limits, control, &mut |_| {}).map_err(ApiError::from)?;
        Ok((engine, r))
    })?;
    let side = ask.side;
    let pv = line_houses(&r.pv, side);
    Ok(AnalyseDoc {
        schema_version: SCHEMA_VERSION,
        rules: ask.rules.name(),
        to_move: side.name(),
        absolute: ask.position.absolute(side),
        best_pit: r.best_pit,
        best_house: r.best_pit.map(|p| oware::position::house(side, p).to_string()),
        score: f64::from(r.score) / 100.0,
        exact: r.exact,
        depth: r.depth,
        nodes: r.nodes,
        nps: r.nps(),
        seconds: r.seconds,
        pv,
        moves: r
            .moves
            .iter()
            .map(|m| AnalyseMove {
                pit: m.pit,
                house: oware::position::house(side, m.pit).to_string(),
                score: f64::from(m.score) / 100.0,
                bound: bound_name(m.bound),
                exact: m.exact,
            })
            .collect(),
        tables: engine.tables(),
    })
}

async fn analyse(
    State(shared): State<Arc<Shared>>,
    q: std::result::Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = match params(q) {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    // A client that hangs up drops this future: the guard then stops its search (or it never
    // starts, when it was still waiting for its turn).
    let control = Arc::new(Control::new());
    let _stop = StopOnDrop(control.clone());
    // Searches take a core each for up to --max-movetime: at most one per core at once. The
    // permit goes with the search, so a stopped search holds it until it has ended.
    let Ok(permit) = shared.searches.clone().acquire_owned().await else {
        return ApiError::status(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", "the server is shutting down").into_response();
    };
    let result = blocking(move || {
        let _permit = permit;
        analyse_answer(&shared, q, &control)
    })
    .await;
    match result {
        Ok(doc) => Json(doc).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn page() -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], PAGE).into_response()
}

async fn not_found() -> Response {
    ApiError {
        status: StatusCode::NOT_FOUND,
        error: ErrorDoc { code: 2, kind: "not_found", message: "no such page: see GET /api/v1/info, /api/v1/position, POST /api/v1/positions".into() },
    }
    .into_response()
}

async fn method_not_allowed(method: Method) -> Response {
    ApiError::status(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{method} is not allowed here: GET /api/v1/position, /api/v1/moves, /api/v1/analyse, /api/v1/info; POST /api/v1/positions"),
    )
    .into_response()
}

/// Refuses, before any route: on a loopback address, a `Host` that does not name this machine
/// (a page elsewhere reaching the server through DNS rebinding); POST bodies that are not
/// `application/json` (a cross-site form post); request lines longer than [`MAX_URI`].
async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    if let Some(allowed) = &shared.hosts {
        if let Some(host) = request.headers().get(header::HOST) {
            let ok = host.to_str().ok().map(host_name).is_some_and(|h| allowed.contains(&h));
            if !ok {
                let shown = String::from_utf8_lossy(host.as_bytes()).escape_debug().to_string();
                return ApiError::status(
                    StatusCode::FORBIDDEN,
                    "forbidden_host",
                    format!("Host '{shown}' is not this server: on a loopback address only localhost, 127.0.0.1, [::1] and the address served are answered"),
                )
                .into_response();
            }
        }
    }
    let uri_len = request.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if uri_len > MAX_URI {
        return ApiError::status(StatusCode::URI_TOO_LONG, "uri_too_long", format!("the request target is {uri_len} bytes: at most {MAX_URI}")).into_response();
    }
    if request.method() == Method::POST {
        let json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return ApiError::status(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "POST bodies must be JSON, sent with Content-Type: application/json",
            )
            .into_response();
        }
    }
    next.run(request).await
}

/// A `Host` header's name, lowercase, without the port: `localhost`, `127.0.0.1`, `[::1]`.
fn host_name(host: &str) -> String {
    let host = host.trim().to_ascii_lowercase();
    if host.starts_with('[') {
        return match host.find(']') {
            Some(end) => host[..=end].to_string(),
            None => host,
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name.to_string(),
        _ => host,
    }
}

/// The `Host` names served on `addr` when it is a loopback address (`None` otherwise: every
/// name).
fn allowed_hosts(addr: IpAddr) -> Option<Vec<String>> {
    if !addr.is_loopback() {
        return None;
    }
    let bound = match addr {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => format!("[{a}]"),
    };
    Some(vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into(), bound])
}

/// The application: routes and shared state (also used by the tests).
fn app(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/index.html", get(page))
        .route("/api/v1/position", get(position))
        .route("/api/v1/positions", post(positions))
        .route("/api/v1/moves", get(moves))
        .route("/api/v1/info", get(info))
        .route("/api/v1/analyse", get(analyse))
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
pub fn run(a: ServeArgs) -> Result<()> {
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
    // Ctrl-C and SIGTERM set a flag (a second one ends the process at once).
    signals::cooperative();
    let default_rules = a.db.rules.ruleset();
    let threads = a.threads.threads.unwrap_or_else(|| super::cores().max(4));
    let max_connections = a.max_connections.map_or_else(default_max_connections, |n| n as usize);
    let client_timeout = Duration::from_secs_f64(a.client_timeout);
    let shutdown_timeout = Duration::from_secs_f64(a.shutdown_timeout);
    let shared = Arc::new(Shared {
        db: a.db,
        default_rules,
        open: Mutex::new(HashMap::new()),
        heavy: Semaphore::new(threads.saturating_sub(1).max(1)),
        client_timeout,
        engines: Mutex::new(HashMap::new()),
        searches: Arc::new(Semaphore::new(super::cores())),
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

/// 512 connections, or fewer when the limit of open files is low (a quarter of it is kept for
/// layer files and the rest of the process).
fn default_max_connections() -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given.
    let files = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 { limit.rlim_cur as usize } else { 1024 };
    (files.saturating_mul(3) / 4).saturating_sub(16).clamp(8, 512)
}

/// Accepts connections (at most `max_connections` open at once) until Ctrl-C or SIGTERM, then
/// closes the idle ones and gives the others `grace` to finish their requests.
async fn serve(listener: tokio::net::TcpListener, app: Router, max_connections: usize, client_timeout: Duration, grace: Duration) {
    let slots = Arc::new(Semaphore::new(max_connections));
    let (stop_tx, stop_rx) = watch::channel(false);
    let stop = stopped();
    tokio::pin!(stop);
    loop {
        let permit = tokio::select! {
            () = &mut stop => break,
            p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
        };
        let stream = tokio::select! {
            () = &mut stop => break,
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(_) => {
                    // Out of file descriptors, a connection reset before it was accepted: wait
                    // a little and go on.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let mut stop_rx = stop_rx.clone();
        tokio::spawn(async move {
            let io = TokioIo::new(Guarded::new(stream, client_timeout));
            let mut builder = hyper::server::conn::http1::Builder::new();
            // The head must arrive within the timeout, and the timer runs while a keep-alive
            // connection waits for its next request too: idle connections are closed.
            builder.timer(TokioTimer::new()).header_read_timeout(client_timeout).keep_alive(true);
            let conn = builder.serve_connection(io, service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stop_rx.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.as_mut().await;
                }
            }
            drop(permit);
        });
    }
    note("stopping: finishing the requests in progress");
    drop(listener);
    let _ = stop_tx.send(true);
    let all = u32::try_from(max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(grace, slots.acquire_many(all)).await.is_err() {
        note(&format!("stopping: requests still running after {} s are dropped", grace.as_secs_f64()));
    }
}

/// Resolves on Ctrl-C or SIGTERM (the flag [`signals`] sets; the process's handlers are the
/// CLI's, not tokio's).
async fn stopped() {
    while !signals::interrupted() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A connection's socket as the HTTP layer sees it, with two guards:
/// - a write that makes no progress for the client timeout fails (a client that does not read
///   its responses no longer holds them in memory);
/// - hyper's own error answers (a request line or head too long: 414, 431; a malformed request:
///   400), which it sends with no body, are given the JSON error document every other error
///   has. They are recognised as a head written alone with an error status and
///   `content-length: 0`, which no answer of the application has.
struct Guarded<S> {
    inner: S,
    timeout: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
    /// A replacement being written, and how much of it is out.
    pending: Vec<u8>,
    sent: usize,
}

impl<S> Guarded<S> {
    fn new(inner: S, timeout: Duration) -> Guarded<S> {
        Guarded { inner, timeout, stalled: None, pending: Vec::new(), sent: 0 }
    }
}

/// The JSON version of hyper's body-less error answer `head`, if it is one.
fn json_error_answer(head: &[u8]) -> Option<Vec<u8>> {
    if !(head.starts_with(b"HTTP/1.1 4") || head.starts_with(b"HTTP/1.1 5") || head.starts_with(b"HTTP/1.0 4")) || !head.ends_with(b"\r\n\r\n") {
        return None;
    }
    let text = std::str::from_utf8(head).ok()?;
    let lower = text.to_ascii_lowercase();
    let at = lower.find("\r\ncontent-length: 0\r\n")?;
    let code: u16 = text.get(9..12)?.parse().ok()?;
    let (kind, message) = match code {
        414 => ("uri_too_long", "the request line is too long".to_string()),
        431 => ("headers_too_large", "the request head is too large (too many or too long header fields)".to_string()),
        408 => ("timeout", "the request did not arrive in time".to_string()),
        400 => ("bad_request", "malformed HTTP request".to_string()),
        _ => ("bad_request", format!("HTTP error {code}")),
    };
    let doc = serde_json::json!({
        "schema_version": SCHEMA_VERSION,
        "error": {"code": super::exit_code(ErrorKind::Usage), "kind": kind, "message": message},
    })
    .to_string();
    let mut out = Vec::with_capacity(head.len() + doc.len() + 64);
    out.extend_from_slice(&head[..at]);
    out.extend_from_slice(format!("\r\ncontent-type: application/json\r\ncontent-length: {}\r\n", doc.len()).as_bytes());
    out.extend_from_slice(&head[at + "\r\ncontent-length: 0\r\n".len()..]);
    out.extend_from_slice(doc.as_bytes());
    Some(out)
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> Guarded<S> {
    /// Fails the write when it has made no progress for the timeout.
    fn stall(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let timeout = self.timeout;
        let sleep = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "the client does not read its answer"))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn write_inner(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, buf) {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => self.stall(cx),
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.pending.is_empty() {
            match json_error_answer(buf) {
                Some(answer) => {
                    this.pending = answer;
                    this.sent = 0;
                }
                None => return this.write_inner(cx, buf),
            }
        }
        // Write the replacement; the caller retries with the same buffer until it is out.
        while this.sent < this.pending.len() {
            let pending = std::mem::take(&mut this.pending);
            let r = this.write_inner(cx, &pending[this.sent..]);
            this.pending = pending;
            match ready!(r) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Ok(k) => this.sent += k,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        this.pending.clear();
        this.sent = 0;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        // An error head comes alone; anything else goes out as it is, in one system call.
        let mut parts = bufs.iter().filter(|b| !b.is_empty());
        if let (Some(first), None) = (parts.next(), parts.next()) {
            if !self.pending.is_empty() || json_error_answer(first).is_some() {
                return self.poll_write(cx, first);
            }
        }
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_write_vectored(cx, bufs) {
            Poll::Ready(r) => {
                this.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => this.stall(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    //! A fuzz campaign of the API's decoders, in process: query strings (as the parameters a
    //! request carries), JSON bodies of batches, `Host` values and the heads the server turns into
    //! JSON errors. Whatever the input, nothing panics, every refusal is a 4xx or 5xx error
    //! document, and every batch answer is valid JSON.

    use super::*;
    use clap::Parser;

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

    /// Old: depths to capture not built (`DtcMissing`) answered 500, where the C and Python
    /// libraries report a missing layer, and its message showed the server's directory. New:
    /// 404, as a missing layer or missing bounds, the directory named by its ruleset.
    #[test]
    fn missing_depths_to_capture_are_a_missing_layer() {
        let dir = std::path::PathBuf::from("/srv/secret/awari");
        let rules = Ruleset::Awari;
        for e in [
            Error::LayerMissing { layer: 30, dir: dir.clone(), rules },
            Error::BoundsMissing { layer: 30, dir: dir.clone(), rules },
            Error::DtcMissing { layer: 30, dir: dir.clone(), rules },
        ] {
            let kind = e.kind().as_str();
            let answer = ApiError::from(e);
            assert_eq!(answer.status, StatusCode::NOT_FOUND, "{kind}");
            assert_eq!(answer.error.kind, kind);
            let message = &answer.error.message;
            assert!(message.contains("the server's awari database") && !message.contains("/srv/secret"), "{kind}: {message}");
        }
    }

    #[test]
    fn the_api_decoders_survive_a_fuzz_campaign() {
        let tmp = tempfile::tempdir().unwrap();
        let config = oware::BuildConfig { rules: Ruleset::Awari, max_stones: 6, dir: tmp.path().to_path_buf(), max_memory: None, ..Default::default() };
        oware::build(&config, &oware::build::Silent).unwrap();
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
