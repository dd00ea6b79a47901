//! `POST /api/v1/positions`: a batch of positions, each answered with its report (or its value
//! alone) or its error, in order, within the bounds of one request's work.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use oware::position::{Position, Side};
use oware::probe::Database;
use oware::{Error, Ruleset};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::errors::{ApiError, ApiResult};
use super::handlers::{answer_with, blocking};
use super::params::{parse_rules, parse_side, place, read_body, Ask};
use super::shared::Shared;
use super::{MAX_BATCH, MAX_BATCH_WORK, MAX_PLIES};
use crate::output::{ErrorDoc, SCHEMA_VERSION};
use crate::report::ReportDoc;

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

/// The answer (as JSON text) to the batch `body`, or the error that refuses it whole.
pub(crate) fn batch_answer(shared: &Shared, body: &[u8]) -> ApiResult<String> {
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

fn batch_results(db: &Database, req: &BatchRequest, rules: Ruleset, side: Option<Side>, max_plies: usize, values_only: bool) -> ApiResult<String> {
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
            Err(i) => BatchItem::Error { error: &errors[i].error },
        })
        .collect();
    #[derive(Serialize)]
    struct BatchBody<'a> {
        schema_version: u32,
        results: Vec<BatchItem<'a>>,
    }
    serde_json::to_string(&BatchBody { schema_version: SCHEMA_VERSION, results }).map_err(|e| ApiError::from(Error::Internal(e.to_string())))
}

/// `POST /api/v1/positions`: the body read first (bounded in size and time), then the batch
/// answered on a blocking thread once a permit of [`Shared::heavy`] is free.
pub(crate) async fn positions(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let body = read_body(&shared, &headers, body).await?;
    // Batches wait for a permit here, holding no blocking thread while they wait.
    let Ok(_permit) = shared.heavy.acquire().await else {
        return Err(ApiError::from(Error::Internal("the batch semaphore was closed".into())));
    };
    let worker = shared.clone();
    let text = blocking(move || batch_answer(&worker, &body)).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], text).into_response())
}
