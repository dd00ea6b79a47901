//! Throughput of `oware serve`: requests per second for single positions (with and without the
//! best line) and for batches of 1,000, from several keep-alive clients on loopback.
//!
//! `cargo bench --bench serve` (or `scripts/bench-serve`), with the layers in `databases/`
//! (`OWARE_DIR` to change it; `OWARE_BENCH_MAX` the highest layer sampled, default 20;
//! `OWARE_BENCH_SECONDS` per measurement, default 10). It starts `target/release/oware serve`
//! (`OWARE_BIN` to run another build) itself on a free port and prints one line per measurement:
//! the requests per second, and the server's own CPU time per request (user and system, from
//! `/proc`), which varies far less than the rate on a shared machine and is the figure to compare
//! two builds by.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oware::index::{layer_size, unrank_unchecked};

#[path = "../tests/common/splitmix.rs"]
mod splitmix;
use splitmix::SplitMix64;

/// A keep-alive HTTP/1.1 client: one request at a time, bodies read by Content-Length.
struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Client {
    fn new(port: u16) -> Client {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_nodelay(true).unwrap();
        Client { reader: BufReader::new(s.try_clone().unwrap()), writer: s }
    }

    fn call(&mut self, method: &str, path: &str, body: &str) -> (u16, usize) {
        write!(self.writer, "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len())
            .unwrap();
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status: u16 = line.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status line");
        let mut len = 0usize;
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
        }
        let mut buf = vec![0u8; len];
        self.reader.read_exact(&mut buf).unwrap();
        (status, len)
    }
}

fn positions(seed: u64, count: usize, max: u32) -> Vec<String> {
    let mut rng = SplitMix64(seed);
    (0..count)
        .map(|_| {
            let n = 1 + rng.below(u64::from(max)) as u32;
            let b = unrank_unchecked(n, rng.below(layer_size(n)));
            b.iter().map(u8::to_string).collect::<Vec<_>>().join(",")
        })
        .collect()
}

/// The CPU time (user and system) the process `pid` has used so far, in microseconds; `None`
/// where `/proc` does not tell.
fn cpu_micros(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks * 1e6 / clock_ticks())
}

/// Clock ticks per second of `/proc`'s times (`getconf CLK_TCK`; 100 where it does not answer).
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf").arg("CLK_TCK").output().ok().and_then(|o| String::from_utf8(o.stdout).ok()).and_then(|s| s.trim().parse().ok()).unwrap_or(100.0)
    })
}

/// One measurement: requests per second, bytes received, and the server's CPU microseconds per
/// request.
struct Measured {
    rps: f64,
    bytes: usize,
    cpu_per_request: Option<f64>,
}

impl Measured {
    fn cpu(&self) -> String {
        self.cpu_per_request.map_or_else(|| "server CPU unknown".into(), |us| format!("{us:>6.0} us server CPU each"))
    }
}

/// Runs `clients` threads for `secs` seconds, each sending the requests `make(thread, k)`
/// gives, against the server `pid` listening on `port`.
fn measure(port: u16, pid: u32, clients: usize, secs: f64, make: impl Fn(usize, usize) -> (String, String, String) + Sync) -> Measured {
    let cpu_before = cpu_micros(pid);
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    let (done, bytes) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|t| {
                let make = &make;
                s.spawn(move || {
                    let mut c = Client::new(port);
                    let (mut n, mut bytes) = (0usize, 0usize);
                    while Instant::now() < deadline {
                        let (m, p, b) = make(t, n);
                        let (st, len) = c.call(&m, &p, &b);
                        assert_eq!(st, 200, "{p}");
                        n += 1;
                        bytes += len;
                    }
                    (n, bytes)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    let cpu = cpu_micros(pid).zip(cpu_before).map(|(after, before)| after - before);
    Measured { rps: done as f64 / start.elapsed().as_secs_f64(), bytes, cpu_per_request: cpu.map(|c| c / done.max(1) as f64) }
}

fn main() {
    let dir = std::env::var("OWARE_DIR").unwrap_or_else(|_| "databases".into());
    let max: u32 = std::env::var("OWARE_BENCH_MAX").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let secs: f64 = std::env::var("OWARE_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(10.0);
    // OWARE_BIN: another build of the program (to compare two versions side by side).
    let bin = std::env::var("OWARE_BIN").unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/oware").into());
    let bin = bin.as_str();
    // Positions are sampled from layers 1..=max: each must be built (a missing one would be
    // answered 404 and the measurement cut short).
    for n in 1..=max {
        let layer = std::path::Path::new(&dir).join("awari").join(format!("layer-{n:02}.owdb"));
        if !layer.is_file() {
            eprintln!("bench serve: {} is missing: build awari layers 0..={max} into {dir} or set OWARE_BENCH_MAX lower", layer.display());
            std::process::exit(2);
        }
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = Command::new(bin)
        .args(["serve", "--dir", &dir, "--port", &port.to_string()])
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{bin}: {e} (cargo build --release first)"));
    let mut up = false;
    for _ in 0..200 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(up, "the server did not start");
    let pool = positions(1, 100_000, max);
    // Warm the page cache of the layers sampled.
    let pid = server.id();
    let _ =
        measure(port, pid, 2, 2.0, |t, k| ("GET".into(), format!("/api/v1/position?pits={}&max_plies=0", pool[(t * 50_000 + k) % pool.len()]), String::new()));
    println!("oware serve on layers 1..{max} of {dir}, {secs} s per line, {} cores", std::thread::available_parallelism().map_or(1, |n| n.get()));
    for clients in [1, 4, 16] {
        let m = measure(port, pid, clients, secs, |t, k| {
            ("GET".into(), format!("/api/v1/position?pits={}&max_plies=0", pool[(t * 6151 + k) % pool.len()]), String::new())
        });
        println!("single position, value and moves: {clients:>2} clients {:>9.0} requests/s, {}", m.rps, m.cpu());
    }
    for clients in [1, 4] {
        let m = measure(port, pid, clients, secs, |t, k| ("GET".into(), format!("/api/v1/position?pits={}", pool[(t * 6151 + k) % pool.len()]), String::new()));
        println!("single position with best line:   {clients:>2} clients {:>9.0} requests/s, {}", m.rps, m.cpu());
    }
    let batches: Vec<String> = (0..50)
        .map(|i| {
            let items: Vec<String> = positions(100 + i, 1000, max).iter().map(|p| format!("\"{p}\"")).collect();
            format!("{{\"rules\":\"awari\",\"positions\":[{}]}}", items.join(","))
        })
        .collect();
    for (what, body_of) in [("full reports", ""), ("values only", ",\"values_only\":true")] {
        for clients in [1, 4] {
            let m = measure(port, pid, clients, secs, |t, k| {
                let b = &batches[(t * 7 + k) % batches.len()];
                ("POST".into(), "/api/v1/positions".into(), format!("{}{body_of}}}", &b[..b.len() - 1]))
            });
            println!(
                "batches of 1,000, {what:<12}: {clients:>2} clients {:>7.1} requests/s = {:>7.0} positions/s ({:.0} KB per answer), {}",
                m.rps,
                m.rps * 1000.0,
                m.bytes as f64 / (m.rps * secs) / 1000.0,
                m.cpu()
            );
        }
    }
    let _ = server.kill();
    let _ = server.wait();
}
