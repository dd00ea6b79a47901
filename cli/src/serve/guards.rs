//! The guards against hostile clients above the socket: the check every request passes before
//! its route (`Host` on a loopback address, the request line's length, the type of POST
//! bodies), and the loop that accepts connections, at most `--max-connections` open at once,
//! each with its head due within the client timeout, all of them stopped gracefully on Ctrl-C
//! or SIGTERM. The socket's own guards are [`transport`](super::transport)'s.

use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
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

/// Refuses, before any route: a request with more than one `Host` field; on a loopback address, a `Host` that does not name this machine
/// (a page elsewhere reaching the server through DNS rebinding); POST bodies that are not
/// `application/json` (a cross-site form post); request lines longer than [`MAX_URI`].
pub(crate) async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    // RFC 9112 (3.2): a request with more than one Host field is answered 400; which of them
    // the guard below or a proxy in front reads is not to be guessed.
    let hosts = request.headers().get_all(header::HOST).iter().count();
    if hosts > 1 {
        return ApiError::bad(format!("the request has {hosts} Host header fields: at most one is allowed")).into_response();
    }
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
pub(crate) fn host_name(host: &str) -> String {
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
pub(crate) fn allowed_hosts(addr: IpAddr) -> Option<Vec<String>> {
    if !addr.is_loopback() {
        return None;
    }
    let bound = match addr {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => format!("[{a}]"),
    };
    Some(vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into(), bound])
}

/// A request's connection: its socket's descriptor, valid while the request is answered (the
/// connection owns the socket and outlives its requests' handlers).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Peer(RawFd);

impl Peer {
    /// Resolves once the client has hung up or shut down its side of the connection: its
    /// socket reads the end of file, or fails. Requests already received stay in the socket
    /// (peeked, never read), and a request pipelined behind this one hides the end of file
    /// behind it: the watch then never resolves. Polled every 25 ms on a duplicate of the
    /// descriptor; never resolves when it cannot be duplicated.
    pub(crate) async fn hung_up(self) {
        // SAFETY: the descriptor is the connection's open socket while its request is answered
        // (see the type); the duplicate is owned here and closed when dropped.
        let dup = unsafe { libc::fcntl(self.0, libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            return std::future::pending().await;
        }
        // SAFETY: `dup` is a new descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(dup) };
        loop {
            tokio::time::sleep(Duration::from_millis(25)).await;
            let mut byte = 0u8;
            // SAFETY: a non-blocking peek of at most one byte into `byte`.
            let got = unsafe { libc::recv(fd.as_raw_fd(), std::ptr::addr_of_mut!(byte).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
            if got == 0 {
                return;
            }
            if got < 0 {
                let e = std::io::Error::last_os_error();
                if !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted) {
                    return;
                }
            }
        }
    }
}

/// 512 connections, or fewer when the limit of open files is low (a quarter of it is kept for
/// layer files and the rest of the process).
pub(crate) fn default_max_connections() -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given.
    let files = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 { limit.rlim_cur as usize } else { 1024 };
    (files.saturating_mul(3) / 4).saturating_sub(16).clamp(8, 512)
}

/// Accepts connections (at most `max_connections` open at once) until Ctrl-C or SIGTERM, then
/// closes the idle ones and gives the others `grace` to finish their requests.
pub(crate) async fn serve(listener: tokio::net::TcpListener, app: Router, max_connections: usize, client_timeout: Duration, grace: Duration) {
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
        // Each request carries its connection's socket, which a running analysis watches for
        // its client hanging up ([`Peer`]).
        let peer = Peer(stream.as_raw_fd());
        let tower = TowerToHyperService::new(app.clone());
        let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
            request.extensions_mut().insert(peer);
            hyper::service::Service::call(&tower, request)
        });
        let mut stop_rx = stop_rx.clone();
        tokio::spawn(async move {
            let io = TokioIo::new(Guarded::new(stream, client_timeout));
            let mut builder = hyper::server::conn::http1::Builder::new();
            // The head must arrive within the timeout, and the timer runs while a keep-alive
            // connection waits for its next request too: idle connections are closed.
            // `half_close`: a client that shuts down its side after a whole request (`nc -N`,
            // `shutdown(SHUT_WR)`) is still answered. Without it hyper closes the connection
            // at the end of file it reads while a request is being answered, so the answer is
            // lost (issue 52, item 3); a client that hangs up outright is then noticed when
            // its answer is written, and a running analysis watches its socket itself
            // ([`Peer`]).
            builder.timer(TokioTimer::new()).header_read_timeout(client_timeout).keep_alive(true).half_close(true);
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
