//! `oware engine` as a GUI drives it: a session over stdin and stdout, each answer awaited
//! before the next command (as a GUI waits for `uciok`, `readyok` and `bestmove`), against a
//! small database built here. Exact comparisons use `go depth` (single-threaded, reproducible).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

const OWARE: &str = env!("CARGO_BIN_EXE_oware");

/// Builds awari layers 0..=10 into `dir`.
fn build(dir: &Path) {
    let out = Command::new(OWARE).args(["build", "--max-stones", "10", "--quiet", "--dir"]).arg(dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A running engine: commands in, lines out (read on a thread, so a wait can time out).
struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every line received so far.
    seen: Vec<String>,
}

impl Session {
    fn start(args: &[&str]) -> Session {
        let mut child = Command::new(OWARE).arg("engine").args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Session { stdin: child.stdin.take(), child, lines: rx, seen: Vec::new() }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The lines up to and including the first that satisfies `done`, within `timeout`.
    fn until(&mut self, timeout: Duration, done: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        let mut got = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    let end = done(&line);
                    got.push(line);
                    if end {
                        return got;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!("no answer within {timeout:?}; got {got:?}; whole session {:?}", self.seen),
                Err(RecvTimeoutError::Disconnected) => panic!("the engine closed stdout; got {got:?}"),
            }
        }
    }

    /// Sends `isready` and returns what came before `readyok`.
    fn sync(&mut self) -> Vec<String> {
        self.send("isready");
        let mut got = self.until(Duration::from_secs(10), |l| l == "readyok");
        got.pop();
        got
    }

    fn bestmove(&mut self, timeout: Duration) -> Vec<String> {
        self.until(timeout, |l| l.starts_with("bestmove"))
    }
}

/// The value and best moves (houses) `oware query` gives.
fn query(dir: &Path, side_form: &str) -> (i64, Vec<String>) {
    let out = Command::new(OWARE).args(["query", "--json", "--dir"]).arg(dir).arg(side_form).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let value = doc["value"].as_i64().unwrap();
    let moves = doc["moves"].as_array().unwrap();
    let best = moves.iter().filter(|m| m["best"].as_bool() == Some(true)).map(|m| m["house"].as_str().unwrap().to_string()).collect();
    (value, best)
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.iter().position(|w| *w == key).and_then(|i| words.get(i + 1).copied())
}

#[test]
fn a_scripted_session() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path());
    let mut e = Session::start(&["--dir", "/nonexistent/oware-test"]);

    e.send("uci");
    let id = e.until(Duration::from_secs(10), |l| l == "uciok");
    assert!(id[0].starts_with("id name oware "), "{id:?}");
    for option in
        ["Hash type spin default 64 min 1 max 65536", "Threads type spin default 1 min 1 max 256", "EngineTurn type combo default South var South var North"]
    {
        assert!(id.iter().any(|l| *l == format!("option name {option}")), "{option}: {id:?}");
    }
    let rules = id.iter().find(|l| l.starts_with("option name Rules ")).unwrap();
    assert!(rules.contains("default awari") && rules.contains("var abapa-spare-first"), "{rules}");
    assert!(id.iter().any(|l| l.starts_with("option name MaxTable type spin default 48")));
    // isready opens what the options name (here nothing).
    let said = e.sync();
    assert_eq!(said, vec!["info string no layers in /nonexistent/oware-test/awari: searching with the evaluation alone".to_string()]);

    // Options: names in any case; a bad value is refused with a message.
    e.send(&format!("setoption name dir value {}", tmp.path().display()));
    e.send("setoption name Hash value 16");
    e.send("setoption name Hash value lots");
    e.send("setoption name EngineTurn value North");
    e.send("setoption name Colour value blue");
    let said = e.sync();
    assert_eq!(said.len(), 3, "{said:?}");
    assert!(said[0].starts_with("info string Hash is a number") && said[1].contains("unknown option"), "{said:?}");
    assert!(said[2].starts_with("info string probing layers 0..=10 of"), "{said:?}");

    // A position inside the layers, with even stores: the exact score is the layer's value.
    let (value, best) = query(tmp.path(), "S: 1 1 1 1 1 2  N: 0 3 0 0 0 0  S");
    assert_eq!(value, 2);
    e.send("ucinewgame");
    e.send("position fen 1-1-1-1-1-2-0-3-0-0-0-0-19-19-S");
    e.send("go depth 3");
    let lines = e.bestmove(Duration::from_secs(30));
    let info: Vec<&String> = lines.iter().filter(|l| l.starts_with("info depth")).collect();
    let last = info.last().expect("an info line per iteration");
    assert_eq!(field(last, "cp"), Some("200"), "{last}");
    assert!(last.ends_with(" string exact"), "{last}");
    let bestmove = lines.last().unwrap();
    let played = field(bestmove, "bestmove").unwrap();
    assert!(best.iter().any(|b| b == played), "{played} is not among the database's best {best:?}");
    // The line starts with the move played, in houses, South's then North's.
    let pv = field(last, "pv").unwrap();
    assert!(pv.starts_with(played) && pv.chars().nth(1).is_some_and(|c| c.is_ascii_lowercase()), "{pv}");
    if let Some(ponder) = field(bestmove, "ponder") {
        assert_eq!(Some(ponder.chars().next().unwrap()), pv.chars().nth(1));
    }

    // North to move in the same position mirrored: the same value, North's houses.
    e.send("position fen 0-3-0-0-0-0-1-1-1-1-1-2-19-19-N");
    e.send("go depth 3");
    let lines = e.bestmove(Duration::from_secs(30));
    let last = lines.iter().rev().find(|l| l.starts_with("info depth")).unwrap();
    assert_eq!(field(last, "cp"), Some("200"), "{last}");
    let played = field(lines.last().unwrap(), "bestmove").unwrap();
    assert!(best.iter().any(|b| b.to_ascii_lowercase() == played), "{played} vs {best:?}");

    // MaxTable and Rules rebuild the engine (at the next isready or go).
    e.send("setoption name MaxTable value 8");
    assert_eq!(e.sync(), vec![format!("info string probing layers 0..=8 of {}", tmp.path().join("awari").display())]);
    e.send("setoption name Rules value abapa");
    assert_eq!(e.sync(), vec![format!("info string no layers in {}: searching with the evaluation alone", tmp.path().join("abapa").display())]);
    e.send("setoption name Rules value awari");
    e.send("setoption name MaxTable value 48");
    assert_eq!(e.sync().len(), 1);

    // A legal opening, concatenated and spaced: both give the same search (from a cleared
    // table: a search's lines depend on what earlier ones stored).
    e.send("ucinewgame");
    e.send("position startpos moves FbDe");
    e.send("go depth 2");
    let a = e.bestmove(Duration::from_secs(30));
    e.send("ucinewgame");
    e.send("position startpos moves F b De");
    e.send("go depth 2");
    let b = e.bestmove(Duration::from_secs(30));
    let strip = |ls: &[String]| -> Vec<String> { ls.iter().map(|l| l.split(" nodes ").next().unwrap().to_string()).collect() };
    assert_eq!(strip(&a), strip(&b));
    assert!(field(a.last().unwrap(), "bestmove").unwrap().chars().all(|c| c.is_ascii_uppercase()), "South is to move: {a:?}");

    // An illegal move refuses the whole command; the previous position stays.
    e.send("position fen 1-1-1-1-1-2-0-3-0-0-0-0-19-19-S");
    e.send("position startpos moves FbF");
    let said = e.sync();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].starts_with("info string illegal move 'F' at ply 3: "), "{said:?}");
    e.send("position startpos moves Fx");
    e.send("position fen 4-4-4-4-4-4-4-4-4-4-4-4-0-1-S");
    e.send("position fen 4-4-4-4-4-4-4-4-4-4-4-4-0-0");
    let said = e.sync();
    assert_eq!(said.len(), 3, "{said:?}");
    assert!(said[0].contains("illegal move 'x' at ply 2") && said[1].contains("bad fen") && said[2].contains("bad fen"), "{said:?}");
    e.send("go depth 3");
    let lines = e.bestmove(Duration::from_secs(30));
    let last = lines.iter().rev().find(|l| l.starts_with("info depth")).unwrap();
    assert_eq!(field(last, "cp"), Some("200"), "the position before the refused ones: {last}");

    // Unknown commands are answered and ignored.
    e.send("xyzzy 42");
    let said = e.sync();
    assert_eq!(said, vec!["info string unknown command 'xyzzy 42'".to_string()]);

    // go infinite: isready is answered while it searches; stop brings the bestmove.
    e.send("position startpos");
    e.send("go infinite");
    std::thread::sleep(Duration::from_millis(300));
    let during = e.sync();
    assert!(during.iter().all(|l| l.starts_with("info")), "no bestmove before stop: {during:?}");
    let asked = Instant::now();
    e.send("stop");
    let lines = e.bestmove(Duration::from_secs(5));
    assert!(asked.elapsed() < Duration::from_secs(2), "stop took {:?}", asked.elapsed());
    assert!(field(lines.last().unwrap(), "bestmove").is_some_and(|m| m.len() == 1 && "ABCDEF".contains(m)), "{lines:?}");

    // A timed search answers in time.
    let asked = Instant::now();
    e.send("go movetime 200");
    e.bestmove(Duration::from_secs(5));
    assert!(asked.elapsed() < Duration::from_secs(2), "movetime 200 took {:?}", asked.elapsed());

    // A clock.
    let asked = Instant::now();
    e.send("go wtime 3000 btime 3000 winc 0 binc 0");
    e.bestmove(Duration::from_secs(5));
    assert!(asked.elapsed() < Duration::from_secs(2), "3 s on the clock took {:?}", asked.elapsed());

    // A game over at the root: no move.
    e.send("position fen 0-0-0-0-0-0-0-0-0-0-0-1-23-24-S");
    e.send("go depth 2");
    let lines = e.bestmove(Duration::from_secs(5));
    assert_eq!(lines.last().unwrap(), "bestmove 0000", "{lines:?}");

    e.send("quit");
    let status = e.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn ponder_then_ponderhit() {
    let mut e = Session::start(&["--dir", "/nonexistent/oware-test"]);
    e.send("position startpos moves F");
    e.send("go ponder movetime 300");
    let said = e.sync();
    assert!(said.iter().any(|l| l.starts_with("info string no layers in /nonexistent/oware-test/awari")), "{said:?}");
    std::thread::sleep(Duration::from_millis(200));
    assert!(e.sync().iter().all(|l| l.starts_with("info")), "no bestmove while pondering");
    let hit = Instant::now();
    e.send("ponderhit");
    let lines = e.bestmove(Duration::from_secs(5));
    let took = hit.elapsed();
    assert!(took < Duration::from_secs(2), "ponderhit with 300 ms took {took:?}");
    assert!(field(lines.last().unwrap(), "bestmove").is_some_and(|m| "abcdef".contains(m)), "{lines:?}");
    // End of input is quit.
    drop(e.stdin.take());
    assert_eq!(e.child.wait().unwrap().code(), Some(0));
}

#[test]
fn hostile_input_never_breaks_it() {
    let mut e = Session::start(&["--dir", "/nonexistent/oware-test"]);
    for line in [
        "",
        "   ",
        "go depth",
        "go movetime -5",
        "go nodes 99999999999999999999999",
        "go depth 3 wtime x",
        "setoption",
        "setoption name",
        "setoption name Threads value 0",
        "setoption name MaxTable value 49",
        "setoption name Rules value chess",
        "setoption name Hash value 65536",
        "position",
        "position fen",
        "position fen 99999999999999999999-0-0-0-0-0-0-0-0-0-0-0-0-0-S",
        "position startpos moves \u{1b}[31m",
        "position startpos moves é",
        "stop",
        "ponderhit",
        "\u{0}\u{7f}",
    ] {
        e.send(line);
    }
    e.send(&"x".repeat(100_000));
    let said = e.sync();
    assert!(said.iter().all(|l| l.starts_with("info string ")), "{said:?}");
    assert!(said.iter().all(|l| !l.contains('\u{1b}')), "{said:?}");
    // It still plays.
    e.send("position startpos");
    e.send("go depth 2");
    e.bestmove(Duration::from_secs(10));
    e.send("quit");
    assert_eq!(e.child.wait().unwrap().code(), Some(0));
}

#[test]
fn a_closed_stdout_ends_it_with_141() {
    let mut child = Command::new(OWARE)
        .args(["engine", "--dir", "/nonexistent/oware-test"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    // The write may fail once the engine has gone: that is the point. A process another test
    // forks at the same moment can hold the pipe's read end open for an instant (until its
    // exec closes it), so one answer may still be written: keep asking until the engine meets
    // the closed pipe (at most 10 s).
    for line in std::iter::once("uci").chain(std::iter::repeat("isready")).take(200) {
        if writeln!(stdin, "{line}").and_then(|()| stdin.flush()).is_err() || child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}
