//! `oware serve` for the tests: one [`Server`] on a free port, stopped when dropped, and the
//! HTTP/1.1 answers read off a plain socket (the tests speak HTTP themselves, so that they can
//! also send what no client library would).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::{s, OWARE};

/// A running `oware serve` on a free port, stopped when dropped.
pub struct Server {
    pub child: Child,
    pub port: u16,
}

impl Server {
    /// `oware serve --dir DIR EXTRA...` on a free port, once it accepts connections.
    pub fn start(dir: &Path, extra: &[&str]) -> Server {
        Server::spawn(dir, extra, Stdio::null())
    }

    /// As [`start`](Self::start), with the server's stderr piped (`child.stderr`).
    pub fn start_logged(dir: &Path, extra: &[&str]) -> Server {
        Server::spawn(dir, extra, Stdio::piped())
    }

    fn spawn(dir: &Path, extra: &[&str], stderr: Stdio) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(OWARE).args([&["serve", "--dir", s(dir), "--port", &port.to_string()][..], extra].concat()).stderr(stderr).spawn().unwrap();
        let mut server = Server { child, port };
        for _ in 0..400 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            if let Ok(Some(st)) = server.child.try_wait() {
                panic!("oware serve {extra:?} ended at start: {st}");
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("oware serve did not start");
    }

    pub fn connect(&self) -> TcpStream {
        let c = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        c
    }

    /// Sends `raw` and reads the answer to the end: status, lowercase head, body.
    pub fn raw(&self, raw: &[u8]) -> (u16, String, String) {
        let mut c = self.connect();
        // The server may answer (and close) before it has read everything.
        let _ = c.write_all(raw);
        read_answer(&mut c)
    }

    /// One request (`Connection: close`, a JSON body): status, lowercase head, body.
    fn send(&self, method: &str, path: &str, body: &str) -> (u16, String, String) {
        let raw = format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.raw(raw.as_bytes())
    }

    /// One request: the status and the body as text (a page, or JSON to read as text).
    pub fn text(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        let (status, _, body) = self.send(method, path, body);
        (status, body)
    }

    /// One request whose answer must be a JSON document: the status and the document.
    pub fn request(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        json_of(self.send(method, path, body))
    }

    pub fn get(&self, path: &str) -> (u16, Value) {
        self.request("GET", path, "")
    }

    /// A GET whose answer may never come (the server died): `None` then.
    pub fn try_get(&self, path: &str) -> Option<(u16, Value)> {
        let mut c = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        write!(c, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").ok()?;
        let mut raw = Vec::new();
        let _ = c.read_to_end(&mut raw);
        let text = String::from_utf8_lossy(&raw);
        if !text.starts_with("HTTP/") {
            return None;
        }
        Some(json_of(answer_of(&text)))
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads an answer to the end: status, lowercase head, body.
pub fn read_answer(c: &mut TcpStream) -> (u16, String, String) {
    let mut raw = Vec::new();
    let _ = c.read_to_end(&mut raw);
    answer_of(&String::from_utf8_lossy(&raw))
}

/// An answer's status, lowercase head and body.
pub fn answer_of(text: &str) -> (u16, String, String) {
    let status: u16 = text.split(' ').nth(1).and_then(|x| x.parse().ok()).unwrap_or_else(|| panic!("no status line in {text:?}"));
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((text, ""));
    let head = head.to_ascii_lowercase();
    let body = if head.contains("transfer-encoding: chunked") { dechunk(rest) } else { rest.to_string() };
    (status, head, body)
}

/// The answer's status and JSON body; panics unless the body is JSON and says so.
pub fn json_of((status, head, body): (u16, String, String)) -> (u16, Value) {
    assert!(head.contains("content-type: application/json"), "{status}: not JSON: {head}\n{body}");
    (status, serde_json::from_str(&body).unwrap_or_else(|e| panic!("{status}: {e}: {body:?}")))
}

/// A chunked body put back together.
pub fn dechunk(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || tail.len() < n + 2 {
            break;
        }
        out.push_str(&tail[..n]);
        rest = &tail[n + 2..];
    }
    out
}
