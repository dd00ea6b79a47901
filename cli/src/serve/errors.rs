//! Error answers: an HTTP status and the one error document every failure is given,
//! `{"schema_version", "error": {"code", "kind", "message"}}` (the answers the HTTP layer writes
//! itself included: see [`transport`](super::transport)).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use oware::error::ErrorKind;
use oware::Error;
use serde::Serialize;

use crate::errors::exit_code;
use crate::output::{ErrorDoc, SCHEMA_VERSION};

/// The result of a step of a request: a value, or the error answer it fails with.
pub(crate) type ApiResult<T> = std::result::Result<T, ApiError>;

/// An error answer: an HTTP status and the error document.
#[derive(Debug)]
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) error: ErrorDoc<'static>,
}

impl ApiError {
    /// A bad request (400).
    pub(crate) fn bad(message: impl Into<String>) -> ApiError {
        ApiError::status(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// An error of the HTTP exchange itself (the exit code of a usage error).
    pub(crate) fn status(status: StatusCode, kind: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, error: ErrorDoc { code: exit_code(ErrorKind::Usage), kind, message: message.into() } }
    }

    /// A failure of the server itself (500, the exit code and kind of an internal error).
    pub(crate) fn internal(message: String) -> ApiError {
        let kind = ErrorKind::Internal;
        ApiError { status: StatusCode::INTERNAL_SERVER_ERROR, error: ErrorDoc { code: exit_code(kind), kind: kind.as_str(), message } }
    }

    /// The body of the answer: the only place the error document is put together.
    pub(crate) fn body(&self) -> ErrorBody<'_> {
        ErrorBody { schema_version: SCHEMA_VERSION, error: &self.error }
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let status = match e.kind() {
            ErrorKind::InvalidPosition | ErrorKind::NotInLayer | ErrorKind::IndexOutOfRange | ErrorKind::Usage => StatusCode::BAD_REQUEST,
            // Depths to capture not built are a missing layer too, as the C and Python
            // libraries have them.
            ErrorKind::LayerMissing | ErrorKind::CompanionMissing(_) => StatusCode::NOT_FOUND,
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
        Error::LayerMissing { dir, rules, .. } | Error::CompanionMissing { dir, rules, .. } => (dir, format!("the server's {rules} database")),
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

/// The body of an error answer.
#[derive(Serialize)]
pub(crate) struct ErrorBody<'a> {
    schema_version: u32,
    error: &'a ErrorDoc<'static>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oware::Ruleset;

    /// Old: depths to capture not built (`DtcMissing`, now `CompanionMissing`) answered 500, where the C and Python
    /// libraries report a missing layer, and its message showed the server's directory. New:
    /// 404, as a missing layer or missing bounds, the directory named by its ruleset.
    #[test]
    fn missing_depths_to_capture_are_a_missing_layer() {
        let dir = std::path::PathBuf::from("/srv/secret/awari");
        let rules = Ruleset::Awari;
        for e in [
            Error::LayerMissing { layer: 30, dir: dir.clone(), rules },
            Error::CompanionMissing { kind: oware::error::FileContent::Bounds, layer: 30, dir: dir.clone(), rules },
            Error::CompanionMissing { kind: oware::error::FileContent::Dtc, layer: 30, dir: dir.clone(), rules },
        ] {
            let kind = e.kind().as_str();
            let answer = ApiError::from(e);
            assert_eq!(answer.status, StatusCode::NOT_FOUND, "{kind}");
            assert_eq!(answer.error.kind, kind);
            let message = &answer.error.message;
            assert!(message.contains("the server's awari database") && !message.contains("/srv/secret"), "{kind}: {message}");
        }
    }
}
