//! `oware serve` under hostile use (issue 24, items 1 to 8): files changed under it, half-open
//! and slow connections, heavy requests, SIGTERM, a missing directory, duplicate parameters,
//! foreign `Host` values and form posts, and errors hyper answers itself; then dtc and bounds
//! files truncated under it, analyses whose clients hung up, `/analyse`'s parameters and the
//! message it stops with; last, the page's files, each at its path with its type. Each test
//! failed before its fix.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{answer_of, json_of, read_answer, s, Server, SplitMix64};
use oware::index::{layer_size, unrank_unchecked};
use oware::position::Position;
use oware::probe::Database;
use oware::Ruleset;
use serde_json::Value;

fn pits(p: &Position) -> String {
    p.board().iter().map(u8::to_string).collect::<Vec<_>>().join(",")
}

fn kind(v: &Value) -> &str {
    v["error"]["kind"].as_str().unwrap_or_else(|| panic!("no error kind in {:.300}", v.to_string()))
}

/// Positions of layer `n`, from a seed.
fn layer_positions(n: u32, count: usize, seed: u64) -> Vec<Position> {
    let mut rng = SplitMix64(seed);
    (0..count).map(|_| Position::new(unrank_unchecked(n, rng.below(layer_size(n)))).unwrap()).collect()
}

/// Item 1. Old: truncating a layer in place killed the server (SIGBUS, exit 5) or made every
/// later request of the ruleset fail, even after the file was replaced; rewriting it in place at
/// the same size gave wrong values with status 200. New: only the requests that need the layer
/// fail, with a 500 naming it; the file is read anew once replaced; no wrong value is served.
#[test]
fn serve_survives_layers_truncated_rewritten_and_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    common::copy_fixture(Ruleset::Awari, 12, tmp.path());
    let db = Database::open(common::fixture(Ruleset::Awari, 12), Ruleset::Awari).unwrap();
    let layer = tmp.path().join("awari/layer-12.owdb");
    let good = std::fs::read(&layer).unwrap();
    let mut server = Server::start(tmp.path(), &[]);
    let twelve = layer_positions(12, 200, 5);
    let small: Position = "0 0 1 0 0 0 0 1 0 0 1 0".parse().unwrap();
    let value_of = |server: &Server, p: &Position| server.get(&format!("/api/v1/position?pits={}&max_plies=0", pits(p)));
    let (st, v) = value_of(&server, &twelve[0]);
    assert_eq!((st, v["value"].clone()), (200, Value::from(db.value(&twelve[0]).unwrap())), "{v}");

    // Truncated in place while batches of layer 12 run.
    let body = serde_json::json!({"positions": twelve.iter().map(|p| p.board().to_vec()).collect::<Vec<_>>(), "values_only": true}).to_string();
    let load: Vec<_> = (0..3)
        .map(|_| {
            let (port, body) = (server.port, body.clone());
            std::thread::spawn(move || {
                for _ in 0..20 {
                    let Ok(mut c) = TcpStream::connect(("127.0.0.1", port)) else { return };
                    let _ = write!(
                        c,
                        "POST /api/v1/positions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    let mut sink = Vec::new();
                    let _ = c.read_to_end(&mut sink);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    std::fs::OpenOptions::new().write(true).open(&layer).unwrap().set_len(5096).unwrap();
    for t in load {
        t.join().unwrap();
    }
    assert!(server.alive(), "the server died when a layer was truncated under it");
    let (st, e) = value_of(&server, &twelve[1]);
    assert_eq!(st, 500, "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("layer-12.owdb"), "{e}");
    // Other layers are answered.
    let (st, v) = value_of(&server, &small);
    assert_eq!((st, v["value"].clone()), (200, Value::from(db.value(&small).unwrap())), "{v}");

    // Replaced by rename: read anew.
    let fresh = tmp.path().join("awari/fresh.tmp");
    std::fs::write(&fresh, &good).unwrap();
    std::fs::rename(&fresh, &layer).unwrap();
    let (st, v) = value_of(&server, &twelve[1]);
    assert_eq!((st, v["value"].clone()), (200, Value::from(db.value(&twelve[1]).unwrap())), "{v}");

    // Rewritten in place at the same size (every payload byte changed): no wrong value, only
    // errors naming the file.
    let mut bad = good.clone();
    let header = bad.len() - layer_size(12) as usize;
    for b in &mut bad[header..] {
        *b = b.wrapping_add(1) % 5;
    }
    std::thread::sleep(Duration::from_millis(20));
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(&layer).unwrap();
        f.write_all_at(&bad, 0).unwrap();
    }
    let (st, text) = server.request("POST", "/api/v1/positions", &body);
    assert_eq!(st, 200, "{text}");
    for (p, r) in twelve.iter().zip(text["results"].as_array().unwrap()) {
        match r.get("value") {
            Some(v) => assert_eq!(v, &Value::from(db.value(p).unwrap()), "a wrong value served for {p}"),
            None => assert!(r["error"]["message"].as_str().unwrap().contains("layer-12.owdb"), "{r}"),
        }
    }
    let (st, v) = value_of(&server, &small);
    assert_eq!(st, 200, "{v}");

    // A file renamed over an open, intact one is noticed (here a damaged one: its checksum
    // fails when it is opened), where the old file's values were served for ever.
    std::fs::write(&fresh, &good).unwrap();
    std::fs::rename(&fresh, &layer).unwrap();
    let (st, v) = value_of(&server, &twelve[2]);
    assert_eq!((st, v["value"].clone()), (200, Value::from(db.value(&twelve[2]).unwrap())), "{v}");
    std::fs::write(&fresh, &bad).unwrap();
    std::fs::rename(&fresh, &layer).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (st, v) = value_of(&server, &twelve[3]);
        if st == 500 {
            assert!(v["error"]["message"].as_str().unwrap().contains("layer-12.owdb"), "{v}");
            break;
        }
        assert_eq!(v["value"], Value::from(db.value(&twelve[3]).unwrap()));
        assert!(Instant::now() < deadline, "a layer replaced by rename was never read anew");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(server.alive());
}

/// Item 2. Old: sockets that sent part of a request head (or trickled it) stayed open for ever
/// and, past the file limit, locked every client out. New: `--client-timeout` closes them,
/// `--max-connections` caps them, and a normal client is answered meanwhile.
#[test]
fn serve_times_out_half_open_connections() {
    let dir = common::fixture(Ruleset::Awari, 12);
    let server = Server::start(dir, &["--max-connections", "8", "--client-timeout", "1"]);
    let mut slow: Vec<TcpStream> = (0..24)
        .map(|_| {
            let mut c = server.connect();
            c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            let _ = c.write_all(b"GET / HTTP/1.1\r\n");
            c
        })
        .collect();
    // One that trickles a header line every 200 ms.
    let port = server.port;
    let trickle = std::thread::spawn(move || {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let _ = c.write_all(b"GET / HTTP/1.1\r\n");
        for k in 0..150 {
            std::thread::sleep(Duration::from_millis(200));
            if c.write_all(format!("X-Slow-{k}: 1\r\n").as_bytes()).is_err() {
                return true;
            }
        }
        false
    });
    let (st, v) = server.get("/api/v1/info");
    assert_eq!(st, 200, "{v}");
    // Each half-open socket is closed by the server (EOF or reset, not the read timeout).
    for c in &mut slow {
        let mut buf = [0u8; 512];
        loop {
            match c.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    assert!(!matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut), "a half-open socket stayed open: {e}");
                    break;
                }
            }
        }
    }
    assert!(trickle.join().unwrap(), "a trickling client was never cut off");
    // An idle keep-alive connection is closed too.
    let mut idle = server.connect();
    idle.write_all(b"GET /api/v1/info HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0;
    loop {
        match idle.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => total += k,
            Err(e) => panic!("an idle keep-alive connection stayed open: {e}"),
        }
    }
    assert!(total > 0);
}

/// Item 3. Old: 10,000 positions with `max_plies` 500 were answered (172 MB). New: 400 with a
/// JSON error naming the limit; a batch within it is answered.
#[test]
fn serve_bounds_the_work_of_one_request() {
    let server = Server::start(common::fixture(Ruleset::Awari, 12), &[]);
    let one = "1 1 1 1 1 2 4 1 0 0 0 0";
    let body = serde_json::json!({"positions": vec![one; 10_000], "max_plies": 500}).to_string();
    let (st, e) = server.request("POST", "/api/v1/positions", &body);
    assert_eq!((st, kind(&e)), (400, "bad_request"), "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("at most 100000"), "{e}");
    let body = serde_json::json!({"positions": vec![one; 100], "max_plies": 60}).to_string();
    let (st, r) = server.request("POST", "/api/v1/positions", &body);
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["results"].as_array().unwrap().len(), 100);
    // values_only counts one per position.
    let body = serde_json::json!({"positions": vec![one; 10_000], "max_plies": 500, "values_only": true}).to_string();
    let (st, r) = server.request("POST", "/api/v1/positions", &body);
    assert_eq!(st, 200, "{r}");
}

/// Item 4. Old: SIGTERM ended the process at once, dropping the request in progress. New: the
/// request is answered, then the server exits (130, interrupted).
#[test]
fn serve_finishes_requests_in_progress_on_sigterm() {
    let mut server = Server::start(common::fixture(Ruleset::Awari, 12), &[]);
    let body = serde_json::json!({"positions": ["1 1 1 1 1 2 4 1 0 0 0 0", "0 0 1 0 0 0 0 1 0 0 1 0"], "values_only": true}).to_string();
    let mut c = server.connect();
    write!(c, "POST /api/v1/positions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len()).unwrap();
    c.write_all(&body.as_bytes()[..10]).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(server.child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    std::thread::sleep(Duration::from_millis(300));
    c.write_all(&body.as_bytes()[10..]).unwrap();
    let (st, v) = json_of(read_answer(&mut c));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["results"].as_array().unwrap().len(), 2);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = server.child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "the server did not stop after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
}

/// Item 5. Old: `serve --dir` of a missing directory served 404s. New: it fails at once, exit 7,
/// saying so.
#[test]
fn serve_of_a_missing_directory_fails_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-dir");
    let mut child =
        Command::new(common::OWARE).args(["serve", "--dir", s(&missing), "--port", "0"]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve of a missing directory kept running");
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(7), "{err}");
    assert!(err.contains("does not exist") && err.contains("no-such-dir"), "{err}");
}

/// Item 6. Old: `?pits=A&pits=B` answered for B. New: 400.
#[test]
fn serve_refuses_duplicate_parameters() {
    let server = Server::start(common::fixture(Ruleset::Awari, 12), &[]);
    for path in [
        "/api/v1/position?pits=1,1,1,1,1,2,4,1,0,0,0,0&pits=0,0,1,0,0,0,0,1,0,0,1,0",
        "/api/v1/position?pits=1,1,1,1,1,2,4,1,0,0,0,0&rules=awari&rules=awari",
        "/api/v1/moves?pits=1,1,1,1,1,2,4,1,0,0,0,0&to_move=north&to_move=south",
    ] {
        let (st, e) = server.get(path);
        assert_eq!((st, kind(&e)), (400, "bad_request"), "{path}: {e}");
        assert!(e["error"]["message"].as_str().unwrap().contains("more than once"), "{e}");
    }
}

/// Item 7. Old: any `Host` and `text/plain` POSTs were served. New: on a loopback address a
/// foreign `Host` gets 403, a POST that is not JSON 415.
#[test]
fn serve_refuses_foreign_hosts_and_form_posts() {
    let server = Server::start(common::fixture(Ruleset::Awari, 12), &[]);
    let get = |host: &str| json_of(server.raw(format!("GET /api/v1/info HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes()));
    for host in ["localhost", "localhost:8080", "127.0.0.1", &format!("127.0.0.1:{}", server.port), "[::1]:80", "LOCALHOST"] {
        let (st, v) = get(host);
        assert_eq!(st, 200, "{host}: {v}");
    }
    for host in ["evil.example", "evil.example:80", "localhost.evil.example", "127.0.0.1.nip.io", "[::2]"] {
        let (st, e) = get(host);
        assert_eq!((st, kind(&e)), (403, "forbidden_host"), "{host}: {e}");
    }
    let body = r#"{"positions": ["1 1 1 1 1 2 4 1 0 0 0 0"]}"#;
    for ct in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
        let raw = format!(
            "POST /api/v1/positions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let (st, e) = json_of(server.raw(raw.as_bytes()));
        assert_eq!((st, kind(&e)), (415, "unsupported_media_type"), "{ct}: {e}");
    }
    let raw = format!("POST /api/v1/positions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    assert_eq!(json_of(server.raw(raw.as_bytes())).0, 415);
    let raw = format!(
        "POST /api/v1/positions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    assert_eq!(json_of(server.raw(raw.as_bytes())).0, 200);
}

/// Item 8. Old: 414 and 431 had empty bodies, 413 and bad chunked bodies were text/plain, errors
/// on `captured` had kind `usage`. New: every error is a JSON document; `captured` errors are
/// `bad_request`.
#[test]
fn serve_answers_every_error_in_json() {
    let server = Server::start(common::fixture(Ruleset::Awari, 12), &[]);
    // A request line too long for the server, and one too long for HTTP parsing itself.
    for len in [20_000, 100_000] {
        let raw = format!("GET /api/v1/info?x={} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", "a".repeat(len));
        let (st, e) = json_of(server.raw(raw.as_bytes()));
        assert_eq!((st, kind(&e)), (414, "uri_too_long"), "{len}: {e}");
    }
    // Too many header fields, and a head larger than the parser's buffer.
    let many: String = (0..150).map(|k| format!("X-H{k}: 1\r\n")).collect();
    let big = format!("X-Big: {}\r\n", "b".repeat(600_000));
    for extra in [many, big] {
        let raw = format!("GET /api/v1/info HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{extra}\r\n");
        let (st, e) = json_of(server.raw(raw.as_bytes()));
        assert_eq!((st, kind(&e)), (431, "headers_too_large"), "{e}");
    }
    // A body over the limit, announced or chunked.
    let raw = "POST /api/v1/positions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{";
    let (st, e) = json_of(server.raw(raw.as_bytes()));
    assert_eq!((st, kind(&e)), (413, "payload_too_large"), "{e}");
    let mut raw =
        b"POST /api/v1/positions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            .to_vec();
    for _ in 0..3 {
        raw.extend_from_slice(format!("{:x}\r\n{}\r\n", 1 << 20, " ".repeat(1 << 20)).as_bytes());
    }
    raw.extend_from_slice(b"0\r\n\r\n");
    let (st, e) = json_of(server.raw(&raw));
    assert_eq!((st, kind(&e)), (413, "payload_too_large"), "{e}");
    // A malformed chunked body.
    let raw = b"POST /api/v1/positions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n";
    let (st, e) = json_of(server.raw(raw));
    assert_eq!((st, kind(&e)), (400, "bad_request"), "{e}");
    // A malformed request line.
    let (st, e) = json_of(server.raw(b"GET /\x01 nonsense\r\n\r\n"));
    assert_eq!((st, kind(&e)), (400, "bad_request"), "{e}");
    // A method a route does not take.
    let (st, e) = server.get("/api/v1/positions");
    assert_eq!((st, kind(&e)), (405, "method_not_allowed"), "{e}");
    // Bad captured stones.
    for captured in ["x", "40:40", "20"] {
        let (st, e) = server.get(&format!("/api/v1/position?pits=1,1,1,1,1,2,4,1,0,0,0,0&captured={captured}"));
        assert_eq!((st, kind(&e)), (400, "bad_request"), "{captured}: {e}");
        assert!(e["error"]["message"].as_str().unwrap().contains("captured"), "{e}");
    }
    // A query string that does not decode.
    let (st, e) = server.get("/api/v1/position?pits=%ZZ");
    assert_eq!(st, 400, "{e}");
}

#[test]
fn serve_reports_depths_to_capture_per_position_and_per_move() {
    let dir = tempfile::tempdir().unwrap();
    let config = oware::builder::BuildConfig {
        rules: oware::Ruleset::Awari,
        max_stones: 8,
        dir: dir.path().into(),
        companions: vec![oware::error::FileContent::Dtc],
        ..Default::default()
    };
    oware::builder::build(&config, &oware::builder::Silent).unwrap();
    let server = Server::start(dir.path(), &[]);
    // South wins 7 at once (E or F takes 2); North then delays as long as he can.
    let (status, v) = server.get("/api/v1/position?pits=0,0,0,0,2,1,1,0,0,0,0,3");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["dtc"], 1, "{v}");
    let moves = v["moves"].as_array().unwrap();
    assert!(moves.iter().filter(|m| m["best"] == true).all(|m| m["dtc"] == 0), "{v}");
    // From the position after E (North to move, lost), the line's first capture comes at ply dtc.
    let child: Vec<String> = moves[0]["child"].as_array().unwrap().iter().map(|c| c.to_string()).collect();
    let (_, after) = server.get(&format!("/api/v1/position?pits={}", child.join(",")));
    assert!(after["value"].as_i64().unwrap() < 0, "{after}");
    let d = after["dtc"].as_u64().unwrap();
    let pv = after["principal_variation"].as_array().unwrap();
    let first = pv.iter().position(|p| p["captured"].as_u64().unwrap_or(1) > 0 || p["ends_game"] == true).unwrap();
    assert_eq!(first as u64 + 1, d, "{after}");
    // Value 0: no depth.
    let (_, zero) = server.get("/api/v1/position?pits=0,0,0,0,0,0,0,0,0,0,0,0");
    assert!(zero["dtc"].is_null(), "{zero}");
}

/// A build of `rules`' layers `0..=max`, with their depths to capture and bounds when asked, in
/// a temporary directory.
fn build_with(rules: Ruleset, max: u32, dtc: bool, bounds: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let config = oware::builder::BuildConfig {
        rules,
        max_stones: max,
        dir: dir.path().into(),
        companions: oware::error::FileContent::selected([(bounds, oware::error::FileContent::Bounds), (dtc, oware::error::FileContent::Dtc)]),
        ..Default::default()
    };
    oware::builder::build(&config, &oware::builder::Silent).unwrap();
    dir
}

/// Whether the server is still running a moment after a request (a process killed by a signal
/// closes its sockets just before it can be reaped).
fn still_alive(server: &mut Server) -> bool {
    std::thread::sleep(Duration::from_millis(200));
    server.alive()
}

/// Old: depths to capture (`dtc-NN.owdb`) were mapped even under `serve`: truncated in place,
/// the next request that read one ended the server (SIGBUS, exit 5). New: they are read as the
/// layers are (`ReadMode::Pread`): the requests that need the file fail with a 500 naming it,
/// the others are answered, and the file is read anew once replaced.
#[test]
fn serve_survives_a_dtc_file_truncated_in_place() {
    let tmp = build_with(Ruleset::Awari, 8, true, false);
    let db = Database::open(tmp.path(), Ruleset::Awari).unwrap();
    // A position of layer 8 whose report reads dtc-08.owdb: a move that captures nothing and
    // leads to a child (of layer 8) of a value other than 0.
    let reads_dtc =
        |p: &Position| db.move_values(p).unwrap().iter().any(|m| m.value != 0 && matches!(m.result, oware::probe::MoveResult::Continues { captured: 0, .. }));
    let eight = layer_positions(8, 500, 11).into_iter().find(reads_dtc).expect("a position reading layer 8's depths");
    let dtc = tmp.path().join("awari/dtc-08.owdb");
    let good = std::fs::read(&dtc).unwrap();
    let mut server = Server::start(tmp.path(), &[]);
    let path = format!("/api/v1/position?pits={}", pits(&eight));
    let (st, before) = server.get(&path);
    assert_eq!(st, 200, "{before}");
    assert!(before["moves"].as_array().unwrap().iter().any(|m| m["captured"] == 0 && m["dtc"].is_u64()), "{before}");

    // Truncated in place into its header: every payload page is gone.
    std::fs::OpenOptions::new().write(true).open(&dtc).unwrap().set_len(1000).unwrap();
    let answer = server.try_get(&path);
    assert!(still_alive(&mut server), "the server died when a dtc file was truncated under it: {:?}", server.child.try_wait());
    let (st, e) = answer.expect("an answer");
    assert_eq!(st, 500, "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("dtc-08.owdb"), "{e}");
    // What does not need the file is answered: layer 8's values, reports of other layers.
    let body = serde_json::json!({"positions": [eight.board().to_vec()], "values_only": true}).to_string();
    let (st, v) = server.request("POST", "/api/v1/positions", &body);
    assert_eq!((st, v["results"][0]["value"].clone()), (200, Value::from(db.value(&eight).unwrap())), "{v}");
    let small: Position = "0 0 1 0 0 0 0 1 0 0 1 0".parse().unwrap();
    let (st, v) = server.get(&format!("/api/v1/position?pits={}", pits(&small)));
    assert_eq!(st, 200, "{v}");

    // Replaced by rename: read anew, the same report as before.
    let fresh = tmp.path().join("awari/fresh.tmp");
    std::fs::write(&fresh, &good).unwrap();
    std::fs::rename(&fresh, &dtc).unwrap();
    let (st, again) = server.get(&path);
    assert_eq!((st, &again), (200, &before));
    assert!(server.alive());
}

/// Old: forced-capture bounds were mapped under `serve` too: an abapa analysis after one was
/// truncated in place ended the server (SIGBUS). New: they are read as the layers are; the
/// server goes on.
#[test]
fn serve_survives_a_bounds_file_truncated_in_place() {
    let abapa: Ruleset = "abapa".parse().unwrap();
    let tmp = build_with(abapa, 8, false, true);
    let mut server = Server::start(tmp.path(), &["--rules", "abapa"]);
    // Eight stones, 20:20 captured: the game's score, where abapa's search reads the bounds.
    let path = "/api/v1/analyse?pits=1,0,2,1,0,0,1,1,0,2,0,0&captured=20:20&movetime=300";
    let (st, v) = server.get(path);
    assert_eq!(st, 200, "{v}");
    let bounds = tmp.path().join("abapa/bounds-08.owdb");
    std::fs::OpenOptions::new().write(true).open(&bounds).unwrap().set_len(1000).unwrap();
    for _ in 0..3 {
        let answer = server.try_get(path);
        assert!(still_alive(&mut server), "the server died when a bounds file was truncated under it: {:?}", server.child.try_wait());
        let (st, v) = answer.expect("an answer");
        assert!(st == 200 || st == 500, "{st}: {v}");
    }
    let (st, v) = server.get("/api/v1/position?pits=0,0,1,0,0,0,0,1,0,0,1,0");
    assert_eq!(st, 200, "{v}");
}

/// Old: an analysis whose client hung up ran to its end: 20 abandoned analyses of 5 s delayed
/// the next one of 100 ms by 12 to 26 s. New: the search stops when its client goes away.
#[test]
fn serve_stops_analyses_whose_clients_hung_up() {
    let server = Server::start(common::fixture(Ruleset::Awari, 12), &[]);
    // Each client goes away once its search has started (as one whose own timeout expired).
    for _ in 0..20 {
        let mut c = server.connect();
        c.write_all(b"GET /api/v1/analyse?pits=4,4,4,4,4,4,4,4,4,4,4,4&movetime=5000 HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let started = Instant::now();
    let (st, v) = server.get("/api/v1/analyse?pits=4,4,4,4,4,4,4,4,4,4,4,4&movetime=100");
    let took = started.elapsed();
    assert_eq!(st, 200, "{v}");
    assert!(took < Duration::from_secs(4), "an analysis of 100 ms took {took:?} after 20 abandoned ones");
}

/// Old: `/api/v1/analyse` took captured counts that do not make a game's 48 stones with the
/// board (`oware analyse --captured` refuses them), and took `max_plies`, which it ignored.
/// New: both are 400s, with `oware analyse`'s words for the first.
#[test]
fn serve_analyse_refuses_captured_counts_and_parameters_that_do_not_fit() {
    let server = Server::start(common::fixture(Ruleset::Awari, 12), &[]);
    let fourteen = "pits=2,2,1,1,1,1,2,1,1,1,0,1";
    for captured in ["1:1", "0:0", "17:16"] {
        let (st, e) = server.get(&format!("/api/v1/analyse?{fourteen}&captured={captured}&movetime=50"));
        assert_eq!((st, kind(&e)), (400, "bad_request"), "{captured}: {e}");
        let message = e["error"]["message"].as_str().unwrap();
        assert!(message.contains("captured and 14 on the board make") && message.contains("a game has 48 stones"), "{e}");
    }
    // More than 48: refused, as everywhere.
    let (st, e) = server.get(&format!("/api/v1/analyse?{fourteen}&captured=20:20&movetime=50"));
    assert_eq!((st, kind(&e)), (400, "bad_request"), "{e}");
    let (st, v) = server.get(&format!("/api/v1/analyse?{fourteen}&captured=17:17&movetime=50"));
    assert_eq!(st, 200, "{v}");
    let (st, v) = server.get(&format!("/api/v1/analyse?{fourteen}&movetime=50"));
    assert_eq!(st, 200, "{v}");
    let (st, e) = server.get(&format!("/api/v1/analyse?{fourteen}&max_plies=10&movetime=50"));
    assert_eq!((st, kind(&e)), (400, "bad_request"), "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("unknown parameter 'max_plies'"), "{e}");
    // And the other way round: movetime means nothing to /position.
    let (st, e) = server.get(&format!("/api/v1/position?{fourteen}&movetime=50"));
    assert_eq!((st, kind(&e)), (400, "bad_request"), "{e}");
    // Issue 67, item 6: 0 is a whole number; say what is wrong with it.
    let (st, e) = server.get(&format!("/api/v1/analyse?{fourteen}&movetime=0"));
    assert_eq!((st, kind(&e)), (400, "bad_request"), "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("at least 1 millisecond, not 0"), "{e}");
    let (st, e) = server.get(&format!("/api/v1/analyse?{fourteen}&movetime=1.5"));
    assert!(st == 400 && e["error"]["message"].as_str().unwrap().contains("whole number"), "{e}");
}

/// `history` gives `/analyse` the game's positions since the last capture: a move that repeats
/// one ends the game (awari: the stones split evenly) and is scored so, where the layers say -3.
/// The history is a real one (issue 52, item 11: each position leads to the next by a move):
/// eleven plies without a capture from the position South's only sensible move (E) returns to.
#[test]
fn serve_analyse_takes_the_games_history() {
    let server = Server::start(common::fixture(Ruleset::Awari, 12), &[]);
    let root = "south=0,0,0,0,1,0&north=0,1,0,0,0,1&to_move=south";
    let (st, v) = server.get(&format!("/api/v1/analyse?{root}&movetime=100"));
    assert_eq!((st, v["score"].as_f64()), (200, Some(-3.0)), "{v}");
    // Oldest first, North to move in the first (E leads back to it) and in the last.
    let history = "0,0,0,0,0,1,0,1,0,0,0,1;1,0,0,0,0,1,0,1,0,0,0,0;0,1,0,0,0,1,0,1,0,0,0,0;0,1,0,0,0,1,0,0,1,0,0,0;\
                   0,0,1,0,0,1,0,0,1,0,0,0;0,0,1,0,0,1,0,0,0,1,0,0;0,0,0,1,0,1,0,0,0,1,0,0;0,0,0,1,0,1,0,0,0,0,1,0;\
                   0,0,0,0,1,1,0,0,0,0,1,0;0,0,0,0,1,1,0,0,0,0,0,1;0,0,0,0,1,0,1,0,0,0,0,1";
    let (st, v) = server.get(&format!("/api/v1/analyse?{root}&history={history}&movetime=100"));
    assert_eq!(st, 200, "{v}");
    assert_eq!((v["score"].as_f64(), v["exact"].as_bool(), v["best_house"].as_str()), (Some(0.0), Some(true), Some("E")), "{v}");
    for bad in ["1,2,3", "0,0,0,0,0,1,1,0,0,0,1,x", "49,0,0,0,0,0,0,0,0,0,0,0"] {
        let (st, e) = server.get(&format!("/api/v1/analyse?{root}&history={bad}&movetime=50"));
        assert_eq!((st, kind(&e)), (400, "bad_request"), "{bad}: {e}");
        assert!(e["error"]["message"].as_str().unwrap().contains("history position 1 of 1"), "{e}");
    }
}

/// Old: stopped by SIGTERM or Ctrl-C, the server said "interrupted: rerun the same command to
/// resume (a build keeps its finished layers)". New: it says that it stopped serving.
#[test]
fn serve_says_it_stopped_when_signalled() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let mut server = Server::start_logged(common::fixture(Ruleset::Awari, 12), &[]);
        let (st, _) = server.get("/api/v1/info");
        assert_eq!(st, 200);
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(server.child.id() as libc::pid_t, signal) }, 0);
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(st) = server.child.try_wait().unwrap() {
                break st;
            }
            assert!(Instant::now() < deadline, "the server did not stop after signal {signal}");
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut err = String::new();
        server.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert_eq!(status.code(), Some(130), "{err}");
        assert!(!err.contains("resume") && !err.contains("build"), "signal {signal}: {err}");
        assert!(err.contains("stopped serving"), "signal {signal}: {err}");
    }
}

/// Issue 52, item 3. Old: a client that shut down its side after a whole request (`nc -N`,
/// `shutdown(SHUT_WR)`) got no answer: hyper closed the connection at the end of file it read
/// while the request was answered (20 of 20 times under load for `/info`). New: every route
/// answers it, many clients at once; an analysis is answered too (its search stops at the
/// half-close, as at a hang-up, and answers what it found).
#[test]
fn serve_answers_clients_that_half_close_after_a_whole_request() {
    let dir = common::fixture(Ruleset::Awari, 12);
    let server = Server::start(dir, &[]);
    let body = r#"{"positions": ["1 1 1 1 1 2 4 1 0 0 0 0", "0 0 1 0 0 0 0 1 0 0 1 0"]}"#;
    let requests: Vec<(String, u16)> = vec![
        ("GET /api/v1/info HTTP/1.1\r\nHost: localhost\r\n\r\n".into(), 200),
        ("GET /api/v1/position?pits=1,1,1,1,1,2,4,1,0,0,0,0 HTTP/1.1\r\nHost: localhost\r\n\r\n".into(), 200),
        ("GET /api/v1/moves?pits=1,1,1,1,1,2,4,1,0,0,0,0 HTTP/1.1\r\nHost: localhost\r\n\r\n".into(), 200),
        (format!("POST /api/v1/positions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()), 200),
        ("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".into(), 200),
        ("GET /nowhere HTTP/1.1\r\nHost: localhost\r\n\r\n".into(), 404),
        ("GET /api/v1/position?pits=99 HTTP/1.1\r\nHost: localhost\r\n\r\n".into(), 400),
        ("GET /api/v1/analyse?pits=4,4,4,4,4,4,4,4,4,4,4,4&movetime=300 HTTP/1.1\r\nHost: localhost\r\n\r\n".into(), 200),
    ];
    let half_closed = |raw: &str| -> String {
        let mut c = server.connect();
        c.write_all(raw.as_bytes()).unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        let mut got = Vec::new();
        let _ = c.read_to_end(&mut got);
        String::from_utf8_lossy(&got).into_owned()
    };
    for (raw, status) in &requests {
        let text = half_closed(raw);
        assert!(text.starts_with("HTTP/1.1 "), "no answer after a half-close to {:?}: {text:?}", raw.lines().next());
        assert_eq!(answer_of(&text).0, *status, "{text:.300}");
    }
    // Under load: eight clients at once, each half-closing after 25 requests in turn.
    let answered = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for t in 0..8 {
            let (requests, answered, half_closed) = (&requests, &answered, &half_closed);
            scope.spawn(move || {
                for k in 0..25 {
                    let (raw, status) = &requests[(t + k) % (requests.len() - 1)];
                    let text = half_closed(raw);
                    if text.starts_with("HTTP/1.1 ") && answer_of(&text).0 == *status {
                        answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(answered.into_inner(), 200, "half-closed requests answered of 200");
}

/// Issue 52, item 11. Old: `history` took any boards (an empty one, one of 48 stones before a
/// root of 16, `;;;`) and could answer `exact: true` from them; a request with two `Host`
/// fields was served. New: each history position must lead to the next (the last to the
/// position asked about) by a move that captures nothing, empty entries are refused, and two
/// `Host` fields are a 400.
#[test]
fn serve_refuses_impossible_histories_and_two_host_fields() {
    let server = Server::start(common::fixture(Ruleset::Awari, 12), &[]);
    // The root and the position before it (North to move: its move a leads to the root).
    let root = "south=0,0,0,0,1,0&north=0,1,0,0,0,1&to_move=south";
    let before = "0,0,0,0,1,0,1,0,0,0,0,1";
    let start = "4,4,4,4,4,4,4,4,4,4,4,4";
    for (history, says) in [
        ("0,0,0,0,0,0,0,0,0,0,0,0", "0 stones, where the position asked about has 3"),
        (start, "48 stones, where the position asked about has 3"),
        (";;;", "history position 1 of 4: empty"),
        (&format!("{before};"), "history position 2 of 2: empty"),
        // Three stones, but no move leads from it to the root (South's F cannot empty).
        ("0,0,0,0,0,1,0,1,0,0,1,0", "no move of awari leads from it to the position asked about"),
        // Each leads to the root, but not the first to the second.
        (&format!("{before};{before}"), "history position 1 of 2: no move of awari leads from it to history position 2"),
    ] {
        let (st, e) = server.get(&format!("/api/v1/analyse?{root}&history={history}&movetime=50"));
        assert_eq!((st, kind(&e)), (400, "bad_request"), "{history}: {e}");
        let message = e["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{history}: {message}");
    }
    // A root of 16 stones and a position of 48 before it.
    let sixteen = "pits=2,2,1,1,1,1,2,1,1,1,2,1";
    let (st, e) = server.get(&format!("/api/v1/analyse?{sixteen}&history={start}&movetime=50"));
    assert_eq!((st, kind(&e)), (400, "bad_request"), "{e}");
    // The real history, and none, are still taken.
    for history in [before, ""] {
        let (st, v) = server.get(&format!("/api/v1/analyse?{root}&history={history}&movetime=50"));
        assert_eq!(st, 200, "{history}: {v}");
    }
    // Two Host fields, whatever they say.
    for hosts in ["Host: localhost\r\nHost: localhost", "Host: localhost\r\nHost: evil.example", "Host: evil.example\r\nHost: localhost"] {
        let (st, e) = json_of(server.raw(format!("GET /api/v1/info HTTP/1.1\r\n{hosts}\r\nConnection: close\r\n\r\n").as_bytes()));
        assert_eq!((st, kind(&e)), (400, "bad_request"), "{hosts:?}: {e}");
        assert!(e["error"]["message"].as_str().unwrap().contains("2 Host header fields"), "{e}");
    }
}

/// The page's files (the page was one file of markup, style and script until it passed 800
/// lines): the markup at `/` and `/index.html`, its style and its three script modules, each at
/// its path with its media type and `Cache-Control: no-cache`, as the page always was; the
/// markup names the style and the entry module (and preloads the others), with nothing inline,
/// and the entry imports the other two. Other paths stay JSON 404s, and a foreign `Host` is
/// refused for the files as for the API.
#[test]
fn serve_answers_the_pages_files_with_their_types() {
    let server = Server::start(common::fixture(Ruleset::Awari, 12), &[]);
    let get = |path: &str, host: &str| server.raw(format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes());
    let (html, css, script) = ("text/html; charset=utf-8", "text/css; charset=utf-8", "text/javascript; charset=utf-8");
    for (path, content_type, holds) in [
        ("/", html, "<title>Oware analysis</title>"),
        ("/index.html", html, "<title>Oware analysis</title>"),
        ("/page.css", css, ".board {"),
        ("/game.js", script, "async function init()"),
        ("/board.js", script, "function buildBoard()"),
        ("/analysis.js", script, "async function evaluate(k)"),
    ] {
        let (st, head, body) = get(path, "localhost");
        assert_eq!(st, 200, "{path}: {head}");
        assert!(head.contains(&format!("\r\ncontent-type: {content_type}\r\n")), "{path}: {head}");
        assert!(head.contains("\r\ncache-control: no-cache\r\n"), "{path}: {head}");
        assert!(body.contains(holds), "{path} does not hold {holds:?}");
        let (st, e) = json_of(get(path, "evil.example"));
        assert_eq!((st, kind(&e)), (403, "forbidden_host"), "{path}: {e}");
    }
    let (_, _, markup) = get("/", "localhost");
    for names in [
        r#"<link rel="stylesheet" href="/page.css">"#,
        r#"<script type="module" src="/game.js"></script>"#,
        r#"<link rel="modulepreload" href="/board.js">"#,
        r#"<link rel="modulepreload" href="/analysis.js">"#,
    ] {
        assert!(markup.contains(names), "the page does not name {names}");
    }
    assert!(!markup.contains("<style") && !markup.contains("<script>"), "the page holds inline style or script");
    let (_, _, entry) = get("/game.js", "localhost");
    for import in [r#"from "./board.js";"#, r#"from "./analysis.js";"#] {
        assert!(entry.contains(import), "game.js does not import {import}");
    }
    for path in ["/page.js", "/web/page.css", "/tests/test_page.py", "/api/v1/game.js"] {
        let (st, e) = json_of(get(path, "localhost"));
        assert_eq!((st, kind(&e)), (404, "not_found"), "{path}: {e}");
    }
}

/// Issue 67, item 3: a server started before a layer was built showed it in `/position`, but
/// its engine (`/analyse`, `/evaluate`) kept searching with the tables it was made with until
/// the server restarted. The engine now sees what the server sees.
#[test]
fn serve_engine_probes_a_layer_built_after_it_started() {
    let dir = tempfile::tempdir().unwrap();
    common::copy_fixture(Ruleset::Awari, 9, dir.path());
    let server = Server::start(dir.path(), &[]);
    let ask = "/api/v1/analyse?pits=4,4,4,4,4,4,4,4,4,4,4,4&movetime=50";
    let (st, v) = server.get(ask);
    assert_eq!((st, &v["tables"]), (200, &serde_json::json!(9)), "{v}");
    // Layer 10 arrives as a build publishes it: written aside, renamed into place.
    let full = common::fixture(Ruleset::Awari, 10).join("awari");
    for name in ["layer-10.json", "layer-10.owdb"] {
        let tmp = dir.path().join("awari").join(format!("{name}.tmp"));
        std::fs::copy(full.join(name), &tmp).unwrap();
        std::fs::rename(&tmp, dir.path().join("awari").join(name)).unwrap();
    }
    let (st, v) = server.get("/api/v1/position?pits=1,1,1,1,1,1,1,1,1,1,0,0");
    assert_eq!(st, 200, "{v}");
    let (st, v) = server.get(ask);
    assert_eq!((st, &v["tables"]), (200, &serde_json::json!(10)), "{v}");
    let (st, v) = server.get("/api/v1/evaluate?pits=1,1,1,1,1,1,1,1,1,1,1,1&movetime=50");
    assert_eq!(st, 200, "{v}");
}

/// Issue 67, item 4: a history over GET could not reach its documented 10,000 positions (the
/// 8 KiB request target is a 414 at about 330), and the page's own requests failed so in a
/// long game without capture. `/analyse` and `/evaluate` take their parameters in a POST's
/// JSON body too: the whole 10,000.
#[test]
fn serve_takes_a_history_of_ten_thousand_positions_by_post() {
    let server = Server::start(common::fixture(Ruleset::Awari, 12), &[]);
    // The eleven plies of `serve_analyse_takes_the_games_history` lead back to the root: a
    // cycle, repeated (a repetition in the history itself ends nothing the server checks).
    let cycle = [
        "0,0,0,0,0,1,0,1,0,0,0,1",
        "1,0,0,0,0,1,0,1,0,0,0,0",
        "0,1,0,0,0,1,0,1,0,0,0,0",
        "0,1,0,0,0,1,0,0,1,0,0,0",
        "0,0,1,0,0,1,0,0,1,0,0,0",
        "0,0,1,0,0,1,0,0,0,1,0,0",
        "0,0,0,1,0,1,0,0,0,1,0,0",
        "0,0,0,1,0,1,0,0,0,0,1,0",
        "0,0,0,0,1,1,0,0,0,0,1,0",
        "0,0,0,0,1,1,0,0,0,0,0,1",
        "0,0,0,0,1,0,1,0,0,0,0,1",
    ];
    let root = "0,0,0,0,1,0,0,1,0,0,0,1";
    // The last `len` positions of the endless game ending with the cycle's last one.
    let history = |len: usize| -> Vec<&str> {
        let lap: Vec<&str> = std::iter::once(root).chain(cycle).collect();
        let mut out: Vec<&str> = lap.iter().copied().cycle().skip(lap.len() - len % lap.len()).take(len).collect();
        assert_eq!(out.last(), Some(&cycle[10]));
        out.shrink_to_fit();
        out
    };
    let (south, north) = ("0,0,0,0,1,0", "0,1,0,0,0,1");
    // Over GET, 491 positions do not fit the request line.
    let long = history(491).join(";");
    let (st, _) = server.text("GET", &format!("/api/v1/analyse?south={south}&north={north}&to_move=south&history={long}&movetime=50"), "");
    assert_eq!(st, 414);
    for path in ["/api/v1/analyse", "/api/v1/evaluate"] {
        let body = serde_json::json!({"south": south, "north": north, "to_move": "south", "movetime": 200, "history": history(10_000).join(";")});
        let (st, v) = server.request("POST", path, &body.to_string());
        assert_eq!(st, 200, "{path}: {v}");
        if path.ends_with("analyse") {
            // The root is in the history: the move that reached it repeated a position, and the
            // game is over (awari: the stones split evenly).
            assert_eq!((v["score"].as_f64(), v["exact"].as_bool(), v["moves"].as_array().map(Vec::len)), (Some(0.0), Some(true), Some(0)), "{v}");
        } else {
            assert_eq!(v["source"], "tables", "{v}");
        }
        // The history as an array, of strings or of counts.
        let counts: Vec<Vec<u32>> = history(600).iter().map(|h| h.split(',').map(|c| c.parse().unwrap()).collect()).collect();
        for list in [serde_json::json!(history(600)), serde_json::json!(counts)] {
            let body = serde_json::json!({"south": south, "north": north, "to_move": "south", "movetime": 100, "history": list});
            let (st, v) = server.request("POST", path, &body.to_string());
            assert_eq!(st, 200, "{path}: {v}");
        }
        // One more is refused, and so are bodies that are not an object of parameters.
        let body = serde_json::json!({"south": south, "north": north, "to_move": "south", "history": history(10_001).join(";")});
        let (st, e) = server.request("POST", path, &body.to_string());
        assert_eq!((st, kind(&e)), (400, "bad_request"), "{e}");
        assert!(e["error"]["message"].as_str().unwrap().contains("more than 10000 positions"), "{e}");
        for bad in ["[1]", "{\"pits\": [1,2]}", "{\"pits\": null}", "not json", "{\"history\": [[1, -1]], \"pits\": \"4,4,4,4,4,4,4,4,4,4,4,4\"}"] {
            let (st, e) = server.request("POST", path, bad);
            assert_eq!((st, kind(&e)), (400, "bad_request"), "{bad}: {e}");
        }
        // What a GET takes, a POST takes: the position alone.
        let (st, v) = server.request("POST", path, r#"{"pits": "4,4,4,4,4,4,4,4,4,4,4,4", "movetime": 50}"#);
        assert_eq!(st, 200, "{v}");
    }
}
