//! The guards against hostile clients above the socket: the check every request passes before
//! its route (`Host` on a loopback address, the request line's length, the type of POST
//! bodies), and the loop that accepts connections, at most `--max-connections` open at once,
//! each with its head due within the client timeout, all of them stopped gracefully on Ctrl-C
//! or SIGTERM. The socket's own guards are [`transport`](super::transport)'s.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::{watch, Semaphore};

use super::errors::ApiError;
use super::shared::Shared;
use super::transport::Guarded;
use crate::output::note;
use crate::signals;

/// Largest request line (URI included) and request head answered; longer ones get 414 / 431.
const MAX_URI: usize = 8 << 10;

/// Refuses, before any route: on a loopback address, a `Host` that does not name this machine
/// (a page elsewhere reaching the server through DNS rebinding); POST bodies that are not
/// `application/json` (a cross-site form post); request lines longer than [`MAX_URI`].
pub(super) async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
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
pub(super) fn host_name(host: &str) -> String {
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
pub(super) fn allowed_hosts(addr: IpAddr) -> Option<Vec<String>> {
    if !addr.is_loopback() {
        return None;
    }
    let bound = match addr {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => format!("[{a}]"),
    };
    Some(vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into(), bound])
}

/// 512 connections, or fewer when the limit of open files is low (a quarter of it is kept for
/// layer files and the rest of the process).
pub(super) fn default_max_connections() -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given.
    let files = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 { limit.rlim_cur as usize } else { 1024 };
    (files.saturating_mul(3) / 4).saturating_sub(16).clamp(8, 512)
}

/// Accepts connections (at most `max_connections` open at once) until Ctrl-C or SIGTERM, then
/// closes the idle ones and gives the others `grace` to finish their requests.
pub(super) async fn serve(listener: tokio::net::TcpListener, app: Router, max_connections: usize, client_timeout: Duration, grace: Duration) {
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
