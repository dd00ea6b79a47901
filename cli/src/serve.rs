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
//! - `GET /api/v1/info`: version, rulesets and their built layers.
//!
//! Bad requests get 400, positions whose layers are not built 404, damaged files 500, each
//! with `{"error": {"code", "kind", "message"}}`. Probing runs on tokio's blocking threads; a
//! request that fails (even by a panic) fails alone.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Args;
use oware::error::ErrorKind;
use oware::game::Captured;
use oware::position::{Position, Side};
use oware::probe::Database;
use oware::{Error, Result, Ruleset};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::output::{note, ErrorDoc, SCHEMA_VERSION};
use super::report::{report, ReportDoc};
use super::{DatabaseArgs, ThreadsArg};

/// The web page (HTML, CSS and script in one file).
const PAGE: &str = include_str!("../../web/index.html");

/// Most positions in one batch request.
pub const MAX_BATCH: usize = 10_000;
/// Longest best line a request may ask for.
pub const MAX_PLIES: usize = 500;
/// Best-line length of a single-position request when not given.
const DEFAULT_PLIES: usize = 60;

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
}

/// What every request sees: the options and the databases opened so far (one per ruleset).
struct Shared {
    db: DatabaseArgs,
    default_rules: Ruleset,
    open: Mutex<HashMap<Ruleset, Arc<Database>>>,
}

impl Shared {
    fn database(&self, rules: Ruleset) -> std::result::Result<Arc<Database>, ApiError> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(db) = open.get(&rules) {
            return Ok(db.clone());
        }
        let db = Arc::new(self.db.database_for(rules).map_err(ApiError::from)?);
        open.insert(rules, db.clone());
        Ok(db)
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
        let error = ErrorDoc { code: super::exit_code(ErrorKind::Usage), kind: "bad_request", message: message.into() };
        ApiError { status: StatusCode::BAD_REQUEST, error }
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let status = match e.kind() {
            ErrorKind::InvalidPosition | ErrorKind::NotInLayer | ErrorKind::IndexOutOfRange | ErrorKind::Usage => StatusCode::BAD_REQUEST,
            ErrorKind::LayerMissing | ErrorKind::BoundsMissing => StatusCode::NOT_FOUND,
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
        Error::LayerMissing { dir, rules, .. } | Error::BoundsMissing { dir, rules, .. } => (dir, format!("the server's {rules} database")),
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

fn ask_from_query(shared: &Shared, q: &HashMap<String, String>) -> std::result::Result<Ask, ApiError> {
    for key in q.keys() {
        if !matches!(key.as_str(), "pits" | "position" | "south" | "north" | "to_move" | "rules" | "captured" | "max_plies") {
            return Err(ApiError::bad(format!(
                "unknown parameter '{}' (known: pits, position, south, north, to_move, rules, captured, max_plies)",
                key.escape_debug()
            )));
        }
    }
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
    let captured = get("captured").map(Captured::parse).transpose().map_err(ApiError::from)?;
    let max_plies = parse_plies(get("max_plies"), DEFAULT_PLIES)?;
    Ok(Ask { rules, position, side, captured, max_plies })
}

/// Answers one position (blocking: probes the files). The files already open are checked for
/// changes first (as `query` does before each line), so a layer replaced or truncated under the
/// server gives errors, not a crash.
fn answer(shared: &Shared, ask: &Ask) -> std::result::Result<ReportDoc, ApiError> {
    let db = shared.database(ask.rules)?;
    db.check_open_files().map_err(ApiError::from)?;
    answer_with(&db, ask)
}

fn answer_with(db: &Database, ask: &Ask) -> std::result::Result<ReportDoc, ApiError> {
    if let Some(c) = ask.captured {
        c.check(ask.position.stones()).map_err(ApiError::from)?;
    }
    let analysis = db.analyse(&ask.position, ask.max_plies).map_err(ApiError::from)?;
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

async fn position(State(shared): State<Arc<Shared>>, Query(q): Query<HashMap<String, String>>) -> Response {
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
    let db = shared.database(rules)?;
    db.check_open_files().map_err(ApiError::from)?;
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
            Ok(BatchItem::Report(Box::new(answer_with(&db, &Ask { rules, position, side, captured: None, max_plies })?)))
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

async fn positions(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    match blocking(move || batch_answer(&shared, &body)).await {
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
            if let Ok(db) = shared.database(r) {
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

async fn moves(State(shared): State<Arc<Shared>>, Query(q): Query<HashMap<String, String>>) -> Response {
    match moves_answer(&shared, &q) {
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

/// The application: routes and shared state (also used by the tests).
fn app(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/index.html", get(page))
        .route("/api/v1/position", get(position))
        .route("/api/v1/positions", post(positions))
        .route("/api/v1/moves", get(moves))
        .route("/api/v1/info", get(info))
        .fallback(not_found)
        .with_state(shared)
}

/// Serves until interrupted (Ctrl-C or SIGTERM).
///
/// # Errors
/// [`Error::Io`] when the address cannot be bound; [`Error::Threads`] when the runtime cannot
/// start.
pub fn run(a: ServeArgs) -> Result<()> {
    // Open the default ruleset's directory now, so a bad --dir fails at once.
    a.db.database()?;
    let default_rules = a.db.rules.ruleset();
    let shared = Arc::new(Shared { db: a.db, default_rules, open: Mutex::new(HashMap::new()) });
    let threads = a.threads.threads.unwrap_or_else(|| super::cores().max(4));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(threads)
        .enable_all()
        .build()
        .map_err(|e| Error::Threads { threads, reason: e.to_string() })?;
    let addr = SocketAddr::new(a.host, a.port);
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| Error::io(format!("listening on {addr}"), e))?;
        let local = listener.local_addr().map_err(|e| Error::io("listening socket", e))?;
        note(&format!("serving {default_rules} on http://{local}/ (API: http://{local}/api/v1/info); Ctrl-C stops"));
        axum::serve(listener, app(shared)).with_graceful_shutdown(shutdown()).await.map_err(|e| Error::io("serving", e))
    })
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    note("stopping");
}
