//! `GET /api/v1/analyse`: the search engine's answer, above the layers or inside them, within a
//! bounded time, stopped when its client hangs up.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::StatusCode;
use axum::{Extension, Json};
use oware::position::Side;
use oware::search::{Control, Level, Limits, Root};
use serde::Serialize;

use super::errors::{ApiError, ApiResult};
use super::guards::Peer;
use super::handlers::blocking;
use super::params::{ask_of, body_params, check_known, params, parse_history, read_body, Ask, QueryPairs};
use super::shared::Shared;
use crate::output::SCHEMA_VERSION;
use crate::show::{bound_name, line_houses};

/// `GET /api/v1/analyse`: the search engine's answer, above the layers or inside them, within
/// a bounded time.
#[derive(Serialize)]
pub(crate) struct AnalyseDoc {
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
    /// The same line as pits, each from its mover's first house (for [`evaluate`](super::evaluate)).
    #[serde(skip)]
    pub(crate) pv_pits: Vec<u8>,
    moves: Vec<AnalyseMove>,
    /// Layers 0..=tables are probed (null: none).
    tables: Option<u32>,
    /// With `level` asked (1..=5): the move the computer plays at that strength (below the
    /// top, drawn among the moves within the level's margin of the best), else null.
    level_move: Option<LevelMove>,
}

/// The move the computer plays at a strength level.
#[derive(Serialize)]
struct LevelMove {
    level: u8,
    pit: u8,
    house: String,
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

/// Stops a search when dropped: hyper drops a request's future (the handler holding this) when
/// its client hangs up, and the search, on a blocking thread that cannot be cancelled, then
/// ends at once instead of running out its time.
struct StopOnDrop(Arc<Control>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// The search time `movetime` asks for (ms, default 500), capped by `--max-movetime`.
pub(crate) fn parse_movetime(shared: &Shared, text: Option<String>) -> ApiResult<Duration> {
    let ms = match text {
        None => 500,
        Some(t) => match t.trim().parse::<u64>() {
            Ok(0) => return Err(ApiError::bad("movetime must be at least 1 millisecond, not 0".to_string())),
            Ok(ms) => ms,
            _ => return Err(ApiError::bad(format!("movetime must be a whole number of milliseconds, not '{}'", t.escape_debug()))),
        },
    };
    Ok(Duration::from_millis(ms).min(shared.max_movetime))
}

/// Refuses captured counts that do not make a game's 48 stones with the board: the scores
/// are then the game's final score, as `oware analyse --captured` has them.
pub(crate) fn check_game_counts(ask: &Ask) -> ApiResult<()> {
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
    Ok(())
}

/// The search engine's answer for `ask` (its counts checked, [`check_game_counts`]), within
/// `movetime`, after the game's positions `history` (mover-first, [`parse_history`]).
/// With a `level` (not `None`), the search is that level's and the answer has its move.
pub(crate) fn search_answer(
    shared: &Shared,
    ask: &Ask,
    movetime: Duration,
    history: Vec<oware::Board>,
    control: &Control,
    level: Option<Level>,
) -> ApiResult<AnalyseDoc> {
    let root = Root::in_game(ask.position, ask.captured.map(|c| c.mover_first(ask.side)), history);
    let full = Limits { movetime: Some(movetime), all_moves: true, ..Default::default() };
    let limits = level.map_or_else(|| full.clone(), |l| l.limits(&full));
    // Checked for files changed under it as the other requests are (the engine is made anew
    // over a reopened database).
    let (engine, r) = shared.with_database(ask.rules, |db| {
        let engine = shared.engine(ask.rules, db)?;
        let r = engine.search(&root, &limits, control, &mut |_| {}).map_err(ApiError::from)?;
        Ok((engine, r))
    })?;
    let side = ask.side;
    let pv = line_houses(&r.pv, side);
    let level_move = level.and_then(|l| {
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let pit = l.choose(&r, seed)?;
        Some(LevelMove { level: l.get(), pit, house: oware::position::house(side, pit).to_string() })
    });
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
        pv_pits: r.pv,
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
        level_move,
    })
}

fn analyse_answer(shared: &Shared, mut q: HashMap<String, String>, control: &Control) -> ApiResult<AnalyseDoc> {
    // `max_plies` has no meaning here: the engine's line is as long as its search.
    check_known(&q, &["movetime", "history", "level"])?;
    let history = q.remove("history");
    let level = match q.remove("level") {
        None => None,
        Some(t) => Some(
            t.trim()
                .parse::<u32>()
                .ok()
                .and_then(|n| Level::new(n).ok())
                .ok_or_else(|| ApiError::bad(format!("level must be 1 (a beginner's) to {} (full strength), not '{}'", Level::MAX, t.escape_debug())))?,
        ),
    };
    let movetime = parse_movetime(shared, q.remove("movetime"))?;
    let ask = ask_of(shared, &q)?;
    check_game_counts(&ask)?;
    let history = match history {
        Some(text) => parse_history(&text, ask.rules, &ask.position, ask.side)?,
        None => Vec::new(),
    };
    search_answer(shared, &ask, movetime, history, control, level)
}

/// Runs `work` (a search, given its [`Control`]) on a blocking thread once a search permit is
/// free (one search per core at once), and stops it when its client hangs up (`peer`) or the
/// request's future is dropped.
pub(crate) async fn with_search<T: Send + 'static>(
    shared: Arc<Shared>,
    peer: Option<Extension<Peer>>,
    work: impl FnOnce(&Shared, &Control) -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    // Dropping this future (the connection closed under it) stops the search too.
    let control = Arc::new(Control::new());
    let _stop = StopOnDrop(control.clone());
    let stop = control.clone();
    let run = async move {
        // Searches take a core each for up to --max-movetime: at most one per core at once.
        // The permit goes with the search, so a stopped search holds it until it has ended.
        let Ok(permit) = shared.searches.clone().acquire_owned().await else {
            return Err(ApiError::status(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", "the server is shutting down"));
        };
        blocking(move || {
            let _permit = permit;
            work(&shared, &control)
        })
        .await
    };
    tokio::pin!(run);
    if let Some(Extension(peer)) = peer {
        tokio::select! {
            r = &mut run => return r,
            () = peer.hung_up() => stop.stop(),
        }
    }
    run.await
}

/// `GET /api/v1/analyse`: one search at a time per core, on a blocking thread.
///
/// A client that hangs up, or shuts down its side of the connection, while its analysis waits
/// or runs stops the search: the iterations finished so far are answered (at least the first,
/// which always finishes), to a client still reading. Only an analysis does so: every other
/// request is answered in full after a half-close.
pub(crate) async fn analyse(State(shared): State<Arc<Shared>>, peer: Option<Extension<Peer>>, q: QueryPairs) -> ApiResult<Json<AnalyseDoc>> {
    let q = params(q)?;
    with_search(shared, peer, move |shared, control| analyse_answer(shared, q, control)).await.map(Json)
}

/// `POST /api/v1/analyse`: as the GET, its parameters a JSON object in the body
/// ([`body_params`]: a long `history` does not fit a request line).
pub(crate) async fn analyse_post(
    State(shared): State<Arc<Shared>>,
    peer: Option<Extension<Peer>>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Json<AnalyseDoc>> {
    let q = body_params(&read_body(&shared, &headers, body).await?)?;
    with_search(shared, peer, move |shared, control| analyse_answer(shared, q, control)).await.map(Json)
}
