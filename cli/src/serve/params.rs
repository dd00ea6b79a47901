//! Request parsing: the query parameters (each given once, none unknown), the position a request
//! names and its options, the game's history `/analyse` takes, and request bodies (bounded in
//! size and in time).

use std::collections::HashMap;

use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::Query;
use axum::http::{header, HeaderMap, StatusCode};
use oware::game::Captured;
use oware::position::{Position, Side};
use oware::search::MAX_HISTORY;
use oware::Ruleset;

use super::errors::{ApiError, ApiResult};
use super::shared::Shared;
use super::{MAX_BODY, MAX_PLIES};

/// Best-line length of a single-position request when not given.
const DEFAULT_PLIES: usize = 60;

/// The parameters naming a position, which every endpoint but `/info` takes.
const POSITION_PARAMS: [&str; 7] = ["pits", "position", "south", "north", "to_move", "rules", "captured"];

/// The query string as axum decodes it: its pairs in order, or why it could not be decoded.
pub(crate) type QueryPairs = std::result::Result<Query<Vec<(String, String)>>, QueryRejection>;

/// The options of one position's request.
pub(crate) struct Ask {
    pub(crate) rules: Ruleset,
    pub(crate) position: Position,
    pub(crate) side: Side,
    pub(crate) captured: Option<Captured>,
    pub(crate) max_plies: usize,
}

/// The ruleset `name` names (the server's default when none is named).
pub(crate) fn parse_rules(shared: &Shared, name: Option<&str>) -> ApiResult<Ruleset> {
    match name {
        None => Ok(shared.default_rules),
        Some(n) => n.parse().map_err(|e: String| ApiError::bad(format!("rules: {e}"))),
    }
}

fn parse_plies(text: Option<&str>, default: usize) -> ApiResult<usize> {
    match text {
        None => Ok(default),
        Some(t) => match t.trim().parse::<usize>() {
            Ok(k) if k <= MAX_PLIES => Ok(k),
            _ => Err(ApiError::bad(format!("max_plies must be a whole number 0..{MAX_PLIES}, not '{}'", t.escape_debug()))),
        },
    }
}

/// The side to move `text` names, if any.
pub(crate) fn parse_side(text: Option<&str>) -> ApiResult<Option<Side>> {
    text.map(|t| t.parse::<Side>().map_err(|e| ApiError::bad(format!("to_move: {e}")))).transpose()
}

/// A position and its side from the text forms a request may use (South when none is named).
pub(crate) fn place(text: &str, side: Option<Side>) -> ApiResult<(Position, Side)> {
    let (p, side) = Position::place(text, side).map_err(ApiError::from)?;
    Ok((p, side.unwrap_or(Side::South)))
}

/// The query parameters, each given once (a duplicate is refused rather than one of them
/// silently chosen).
pub(crate) fn params(query: QueryPairs) -> ApiResult<HashMap<String, String>> {
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

/// The parameters of a POST to `/analyse` or `/evaluate`: a JSON object with the query
/// string's names, each a string or a number (as the query string would give it); `history`
/// may also be an array of positions, each a string (`"4,4,4,4,4,4,4,4,4,4,4,4"`) or an array
/// of 12 counts. A POST carries what a request line cannot: a history of up to
/// [`MAX_HISTORY`] positions (a GET's 8 KiB request line holds about 330).
pub(crate) fn body_params(body: &[u8]) -> ApiResult<HashMap<String, String>> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| ApiError::bad(format!("the request body is not JSON: {e}")))?;
    let serde_json::Value::Object(object) = value else {
        return Err(ApiError::bad("the request body must be a JSON object of parameters, as {\"pits\": \"4,4,4,4,4,4,4,4,4,4,4,4\"}"));
    };
    let mut q = HashMap::with_capacity(object.len());
    for (key, v) in object {
        let bad = |what: &str| ApiError::bad(format!("parameter '{}': {what}", key.escape_debug()));
        let text = match v {
            serde_json::Value::String(t) => t,
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::Array(entries) if key == "history" => {
                if entries.len() > MAX_HISTORY {
                    return Err(ApiError::bad(format!("history names more than {MAX_HISTORY} positions")));
                }
                let mut out = Vec::with_capacity(entries.len());
                for (i, e) in entries.into_iter().enumerate() {
                    let entry = |what: &str| ApiError::bad(format!("history position {}: {what}", i + 1));
                    out.push(match e {
                        serde_json::Value::String(t) if !t.contains(';') => t,
                        serde_json::Value::Array(counts) => {
                            let counts: Option<Vec<String>> = counts.iter().map(|c| c.as_u64().map(|c| c.to_string())).collect();
                            counts.ok_or_else(|| entry("counts must be whole numbers"))?.join(",")
                        }
                        _ => return Err(entry("expected a string of 12 counts or an array of 12 counts")),
                    });
                }
                out.join(";")
            }
            _ => return Err(bad("expected a string or a number")),
        };
        q.insert(key, text);
    }
    Ok(q)
}

/// Refuses a parameter other than [`POSITION_PARAMS`] and `extra`.
pub(crate) fn check_known(q: &HashMap<String, String>, extra: &[&str]) -> ApiResult<()> {
    for key in q.keys() {
        if !POSITION_PARAMS.contains(&key.as_str()) && !extra.contains(&key.as_str()) {
            let known = POSITION_PARAMS.iter().chain(extra).copied().collect::<Vec<_>>().join(", ");
            return Err(ApiError::bad(format!("unknown parameter '{}' (known: {known})", key.escape_debug())));
        }
    }
    Ok(())
}

/// The position's request of `GET /api/v1/position` and `/moves`.
pub(crate) fn ask_from_query(shared: &Shared, q: &HashMap<String, String>) -> ApiResult<Ask> {
    check_known(q, &["max_plies"])?;
    ask_of(shared, q)
}

/// The position and options `q` gives (its parameters already checked).
pub(crate) fn ask_of(shared: &Shared, q: &HashMap<String, String>) -> ApiResult<Ask> {
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

/// The `history` parameter of `/analyse`: the game's positions since its last capture, oldest
/// first, separated by `;`, each the 12 counts of the board as drawn (South's `A..F`, then
/// North's `a..f`, comma-separated). The sides to move alternate back from the position asked
/// about: the last one has the other side to move. Returns them mover-first.
///
/// Each must be a position the game could have passed through on its way to `root` (the
/// position asked about, `to_move` to move) since its last capture: a legal move of `rules`
/// that captures nothing leads from each to the next, and from the last to `root` (so each
/// holds as many stones as `root`). An empty value is no history; an empty entry (`;;`) is
/// refused.
pub(crate) fn parse_history(text: &str, rules: Ruleset, root: &Position, to_move: Side) -> ApiResult<Vec<oware::Board>> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let entries: Vec<&str> = text.split(';').take(MAX_HISTORY + 1).collect();
    if entries.len() > MAX_HISTORY {
        return Err(ApiError::bad(format!("history names more than {MAX_HISTORY} positions")));
    }
    let len = entries.len();
    let mut out = Vec::with_capacity(len);
    for (i, entry) in entries.iter().enumerate() {
        let bad = |why: String| ApiError::bad(format!("history position {} of {len}: {why}", i + 1));
        if entry.trim().is_empty() {
            return Err(bad("empty (positions are separated by one ';')".into()));
        }
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
        let position = Position::from_absolute(absolute, side).map_err(|e| bad(e.to_string()))?;
        let (held, root_stones) = (position.stones(), root.stones());
        if held != root_stones {
            return Err(bad(format!(
                "{held} stones, where the position asked about has {root_stones}: the history is the game's positions since its last capture, which hold as many"
            )));
        }
        out.push(*position.board());
    }
    // Each position leads to the next (the last to the root) by a move that captures nothing.
    for i in 0..len {
        let next = out.get(i + 1).unwrap_or(root.board());
        if rules.quiet_move_between(&out[i], next).is_none() {
            let after = if i + 1 == len { "the position asked about".to_string() } else { format!("history position {}", i + 2) };
            return Err(ApiError::bad(format!(
                "history position {} of {len}: no move of {rules} leads from it to {after} without a capture (the history is the game's positions since its last capture, each the one before the next)",
                i + 1
            )));
        }
    }
    Ok(out)
}

/// The request body, at most [`MAX_BODY`] bytes (a body announced longer is refused before any
/// of it is read) and read within the client timeout: 413, 408 or 400 (a malformed chunked body)
/// otherwise, as JSON.
pub(crate) async fn read_body(shared: &Shared, headers: &HeaderMap, body: Body) -> ApiResult<Bytes> {
    if let Some(n) = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok()) {
        if n > MAX_BODY as u64 {
            return Err(ApiError::status(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!("the request body ({n} bytes) is larger than {MAX_BODY} bytes"),
            ));
        }
    }
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
