//! The socket under hyper: [`Guarded`] fails writes the client does not take, and gives hyper's
//! own error answers the JSON error document every other error has.
//!
//! Why hyper's answers are rewritten here rather than hyper configured (checked in hyper 1.12): a
//! request its HTTP/1 parser refuses (a request target over its fixed `MAX_URI_LEN` of 65,534
//! bytes, a head over `max_buf_size` or `max_header_size` or with more fields than
//! `max_headers`, a malformed request line or field) never reaches the service, so neither axum
//! nor the router sees it: `Server::on_error` (`proto/h1/role.rs`) makes a head of status 400,
//! 414 or 431 alone, which `Conn::on_parse_error` (`proto/h1/conn.rs`) writes with no body
//! (`content-length: 0`). The options of `hyper::server::conn::http1::Builder` (`half_close`,
//! `keep_alive`, `title_case_headers`, `allow_multiple_spaces_in_request_line_delimiters`,
//! `ignore_invalid_headers`, `preserve_header_case`, `max_headers`, `max_header_size`,
//! `header_read_timeout`, `writev`, `max_buf_size`, `auto_date_header`, `pipeline_flush`,
//! `timer`) move those limits or change how heads are written; none gives that answer a body or
//! hands the error to the service. Nor has hyper a timeout for writes (`header_read_timeout`
//! bounds the reading of a head only): hence the stall guard.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::errors::ApiError;

/// A connection's socket as the HTTP layer sees it, with two guards:
/// - a write that makes no progress for the client timeout fails (a client that does not read
///   its responses no longer holds them in memory);
/// - hyper's own error answers (a request line or head too long: 414, 431; a malformed request:
///   400), which it sends with no body, are given the JSON error document every other error
///   has. They are recognised as a head written alone with an error status and
///   `content-length: 0`, which no answer of the application has.
pub(crate) struct Guarded<S> {
    inner: S,
    timeout: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
    /// A replacement being written, and how much of it is out.
    pending: Vec<u8>,
    sent: usize,
}

impl<S> Guarded<S> {
    pub(crate) fn new(inner: S, timeout: Duration) -> Guarded<S> {
        Guarded { inner, timeout, stalled: None, pending: Vec::new(), sent: 0 }
    }
}

/// The JSON version of hyper's body-less error answer `head`, if it is one.
pub(crate) fn json_error_answer(head: &[u8]) -> Option<Vec<u8>> {
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
    let error = ApiError::status(StatusCode::from_u16(code).ok()?, kind, message);
    // Written through a `serde_json::Value`, whose keys are in alphabetical order (`error`,
    // then `schema_version`): the order these answers have always had, where the application's
    // have `schema_version` first.
    let doc = serde_json::to_value(error.body()).ok()?.to_string();
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
