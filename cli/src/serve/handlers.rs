//! The handlers of `GET /api/v1/position`, `/moves` and `/info`, and of the routes that do not
//! exist, with the documents they answer; the batches of `POST /api/v1/positions` are
//! [`batch`](super::batch)'s, the searches of `GET /api/v1/analyse`
//! [`analysis`](super::analysis)'s, the page's files [`page`](super::page)'s.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{Method, StatusCode};
use axum::Json;
use oware::probe::Database;
use oware::Ruleset;
use serde::Serialize;

use super::errors::{ApiError, ApiResult};
use super::params::{ask_from_query, params, Ask, QueryPairs};
use super::shared::Shared;
use crate::output::SCHEMA_VERSION;
use crate::report::{report, ReportDoc};

/// Runs `f` on a blocking thread; a panic there is a 500 for this request only.
pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> ApiResult<T> + Send + 'static) -> ApiResult<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(ApiError::internal(format!("internal error while answering: {e}"))),
    }
}

/// Answers one position (blocking: probes the files), checking the files for changes as
/// [`Shared::with_database`] does.
pub(crate) fn answer(shared: &Shared, ask: &Ask) -> ApiResult<ReportDoc> {
    shared.with_database(ask.rules, |db| answer_with(db, ask))
}

/// Answers one position from `db`: the report of `query --json`.
pub(crate) fn answer_with(db: &Database, ask: &Ask) -> ApiResult<ReportDoc> {
    let analysis = db.solution(&ask.position, ask.max_plies).map_err(ApiError::from)?;
    Ok(report(db, &ask.position, ask.side, &analysis, ask.captured))
}

/// `GET /api/v1/position`: the report of one position.
pub(crate) async fn position(State(shared): State<Arc<Shared>>, q: QueryPairs) -> ApiResult<Json<ReportDoc>> {
    let q = params(q)?;
    blocking(move || {
        let ask = ask_from_query(&shared, &q)?;
        answer(&shared, &ask)
    })
    .await
    .map(Json)
}

/// The answer of `GET /api/v1/info`.
#[derive(Serialize)]
pub(crate) struct InfoDoc {
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

/// `GET /api/v1/info`: the version, the rulesets and their built layers.
pub(crate) async fn info(State(shared): State<Arc<Shared>>) -> ApiResult<Json<InfoDoc>> {
    blocking(move || {
        let mut rules = Vec::new();
        for r in Ruleset::ALL {
            // A format that holds only some rulesets (the 2002 files: awari) lists those.
            if let Ok((db, _)) = shared.database(r) {
                rules.push(RulesInfo { name: r.name(), layers: db.layers_present() });
            }
        }
        Ok(InfoDoc { schema_version: SCHEMA_VERSION, api: "v1", version: env!("CARGO_PKG_VERSION"), default_rules: shared.default_rules.name(), rules })
    })
    .await
    .map(Json)
}

/// `GET /api/v1/moves`: the legal moves of a position and where they lead, from the rules alone
/// (no database: the page plays on in positions the layers do not cover).
#[derive(Serialize)]
pub(crate) struct MovesDoc {
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
    /// The value of a move that ends the game (the mover's view of the stones it shares out),
    /// null for the others.
    value: Option<i8>,
}

/// The answer of `GET /api/v1/moves` to the parameters `q`.
pub(crate) fn moves_answer(shared: &Shared, q: &HashMap<String, String>) -> ApiResult<MovesDoc> {
    Ok(moves_doc(&ask_from_query(shared, q)?))
}

/// The legal moves of `ask`'s position and where they lead, from the rules alone.
pub(crate) fn moves_doc(ask: &Ask) -> MovesDoc {
    let moves = ask.rules.moves(ask.position.board());
    let list = moves
        .as_slice()
        .iter()
        .map(|m| {
            let (captured, child, value) = match m.outcome {
                oware::rules::Outcome::Child { captured, child } => (Some(captured), Some(child), None),
                oware::rules::Outcome::End { value } => (None, None, Some(value)),
            };
            RuleMoveDoc { pit: m.pit, house: oware::position::house(ask.side, m.pit).to_string(), captured, ends_game: child.is_none(), child, value }
        })
        .collect();
    MovesDoc {
        schema_version: SCHEMA_VERSION,
        rules: ask.rules.name(),
        to_move: ask.side.name(),
        absolute: ask.position.absolute(ask.side),
        moves: list,
        ending: moves.ending(),
    }
}

/// `GET /api/v1/moves`: the rules' moves of one position (answered at once: no file is read).
pub(crate) async fn moves(State(shared): State<Arc<Shared>>, q: QueryPairs) -> ApiResult<Json<MovesDoc>> {
    let q = params(q)?;
    moves_answer(&shared, &q).map(Json)
}

/// Any path without a route: 404.
pub(crate) async fn not_found() -> ApiError {
    ApiError::status(StatusCode::NOT_FOUND, "not_found", "no such page: see GET /api/v1/info, /api/v1/evaluate, /api/v1/position, POST /api/v1/positions")
}

/// A route asked with a method it does not take: 405.
pub(crate) async fn method_not_allowed(method: Method) -> ApiError {
    ApiError::status(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{method} is not allowed here: GET /api/v1/evaluate, /api/v1/position, /api/v1/moves, /api/v1/analyse, /api/v1/info; POST /api/v1/positions"),
    )
}
