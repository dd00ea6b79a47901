//! `GET /api/v1/evaluate`: one position as the page shows it, asked once: the tables' exact
//! report where the position's layers are built, else the search engine's answer with the
//! rules' moves and the engine's line played out. The client does not ask the tables first and
//! fall back on a 404: the server knows which answers.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::{Extension, Json};
use oware::error::ErrorKind;
use oware::position::house;
use oware::rules::Outcome;
use serde::Serialize;

use super::analysis::{check_game_counts, parse_movetime, search_answer, with_search, AnalyseDoc};
use super::errors::ApiResult;
use super::guards::Peer;
use super::handlers::{answer_with, blocking, moves_doc, MovesDoc};
use super::params::{ask_of, body_params, check_known, params, parse_history, read_body, Ask, QueryPairs};
use super::shared::Shared;
use crate::output::SCHEMA_VERSION;
use crate::report::ReportDoc;

/// The answer of `GET /api/v1/evaluate`.
#[derive(Serialize)]
pub(crate) struct EvaluateDoc {
    schema_version: u32,
    /// `tables` (the layers' exact report: `report`) or `engine` (the search's answer:
    /// `moves`, `engine` and `line`).
    source: &'static str,
    /// The answer `GET /api/v1/position` gives, where the tables answer.
    report: Option<ReportDoc>,
    /// The answer `GET /api/v1/moves` gives (the legal moves from the rules), where the engine
    /// answers.
    moves: Option<MovesDoc>,
    /// The answer `GET /api/v1/analyse` gives, where the engine answers.
    engine: Option<AnalyseDoc>,
    /// The engine's best line played out, ply by ply, where the engine answers.
    line: Option<Vec<LinePly>>,
}

/// One ply of the engine's line.
#[derive(Serialize)]
struct LinePly {
    ply: usize,
    /// The side that moves.
    side: &'static str,
    pit: u8,
    house: String,
    /// Null for a move that ends the game.
    captured: Option<u8>,
    ends_game: bool,
    /// The position the move is played from, South's houses first.
    absolute: [u8; 12],
    /// The position after the move, mover-first for the opponent (null when the game ends).
    child: Option<[u8; 12]>,
    /// The value of a move that ends the game (the mover's view), null for the others.
    value: Option<i8>,
}

/// The engine's line `pits` from `ask`'s position, played out (it stops at a move the rules
/// do not have, which a line never holds).
fn line_of(ask: &Ask, pits: &[u8]) -> Vec<LinePly> {
    let (mut board, mut side) = (*ask.position.board(), ask.side);
    let mut out = Vec::with_capacity(pits.len());
    for (i, &pit) in pits.iter().enumerate() {
        let Some(m) = ask.rules.play(&board, pit as usize) else { break };
        let absolute = match side {
            oware::position::Side::South => board,
            oware::position::Side::North => oware::rules::turned(&board),
        };
        let (captured, child, value) = match m.outcome {
            Outcome::Child { captured, child } => (Some(captured), Some(child), None),
            Outcome::End { value } => (None, None, Some(value)),
        };
        out.push(LinePly {
            ply: i + 1,
            side: side.name(),
            pit,
            house: house(side, pit).to_string(),
            captured,
            ends_game: child.is_none(),
            absolute,
            child,
            value,
        });
        let Some(child) = child else { break };
        board = child;
        side = side.other();
    }
    out
}

/// `GET /api/v1/evaluate`: the position's parameters (`captured` must make 48 stones with the
/// board, as for `/analyse`), `max_plies` for the tables' line, `movetime` and `history` for
/// the engine's search.
pub(crate) async fn evaluate(State(shared): State<Arc<Shared>>, peer: Option<Extension<Peer>>, q: QueryPairs) -> ApiResult<Json<EvaluateDoc>> {
    evaluate_with(shared, peer, params(q)?).await
}

/// `POST /api/v1/evaluate`: as the GET, its parameters a JSON object in the body
/// ([`body_params`]: a long `history` does not fit a request line).
pub(crate) async fn evaluate_post(
    State(shared): State<Arc<Shared>>,
    peer: Option<Extension<Peer>>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Json<EvaluateDoc>> {
    let q = body_params(&read_body(&shared, &headers, body).await?)?;
    evaluate_with(shared, peer, q).await
}

async fn evaluate_with(shared: Arc<Shared>, peer: Option<Extension<Peer>>, mut q: std::collections::HashMap<String, String>) -> ApiResult<Json<EvaluateDoc>> {
    check_known(&q, &["max_plies", "movetime", "history"])?;
    let history = q.remove("history");
    let movetime = parse_movetime(&shared, q.remove("movetime"))?;
    let ask = ask_of(&shared, &q)?;
    check_game_counts(&ask)?;
    let history = match history {
        Some(text) => parse_history(&text, ask.rules, &ask.position, ask.side)?,
        None => Vec::new(),
    };
    let ask = Arc::new(ask);
    let tables = {
        let (shared, ask) = (shared.clone(), ask.clone());
        blocking(move || match shared.with_database(ask.rules, |db| answer_with(db, &ask)) {
            Ok(report) => Ok(Some(report)),
            // The position (or a layer its moves lead to) is not built: the engine answers.
            Err(e) if e.error.kind == ErrorKind::LayerMissing.as_str() => Ok(None),
            Err(e) => Err(e),
        })
        .await?
    };
    if let Some(report) = tables {
        return Ok(Json(EvaluateDoc { schema_version: SCHEMA_VERSION, source: "tables", report: Some(report), moves: None, engine: None, line: None }));
    }
    let doc = with_search(shared, peer, move |shared, control| {
        let engine = search_answer(shared, &ask, movetime, history, control, None)?;
        let line = line_of(&ask, &engine.pv_pits);
        Ok(EvaluateDoc { schema_version: SCHEMA_VERSION, source: "engine", report: None, moves: Some(moves_doc(&ask)), engine: Some(engine), line: Some(line) })
    })
    .await?;
    Ok(Json(doc))
}

#[cfg(test)]
mod tests {
    use super::super::errors::ApiError;
    use super::*;

    #[test]
    fn an_unknown_kind_is_not_a_missing_layer() {
        // The fallback keys on the kind's name: it must be the one the errors carry.
        let e = ApiError::from(oware::Error::LayerMissing { layer: 30, dir: "/x".into(), rules: oware::Ruleset::Awari });
        assert_eq!(e.error.kind, ErrorKind::LayerMissing.as_str());
        assert_ne!(ApiError::bad("x").error.kind, ErrorKind::LayerMissing.as_str());
    }
}
