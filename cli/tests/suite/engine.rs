//! `oware engine` as a GUI drives it: a session over stdin and stdout, each answer awaited
//! before the next command (as a GUI waits for `uciok`, `readyok` and `bestmove`), against a
//! small database built here. Exact comparisons use `go depth` (single-threaded, reproducible).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::common::{oware_with_input, s, spawn_oware, OWARE};

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

    // A position inside the layers, with even stores: the exact score is its value under the
    // 25-stone rule, here the layer's.
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
    // The line starts with the move played, in houses, South's then North's (with 19:19 a
    // capture can take a side past 24: the line ends where the 25-stone rule's values have no
    // depth to follow, here after the move played).
    let pv = field(last, "pv").unwrap();
    assert!(pv.starts_with(played) && pv.chars().nth(1).is_none_or(|c| c.is_ascii_lowercase()), "{pv}");
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

    // An illegal move refuses the whole command, and no position is searched until the next
    // one: the previous position is not the game's (it was searched).
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
    assert_eq!(lines.last().unwrap(), "bestmove 0000", "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("info string no position to search: the last position command was refused (bad fen")), "{lines:?}");
    assert!(!lines.iter().any(|l| l.starts_with("info depth")), "{lines:?}");
    // The next position is searched.
    e.send("position fen 1-1-1-1-1-2-0-3-0-0-0-0-19-19-S");
    e.send("go depth 3");
    let lines = e.bestmove(Duration::from_secs(30));
    let last = lines.iter().rev().find(|l| l.starts_with("info depth")).unwrap();
    assert_eq!(field(last, "cp"), Some("200"), "{last}");

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
    // A `go` always answers (its irregular arguments said and read as `go` reads them).
    for go in ["go depth", "go movetime -5 depth 1", "go nodes 99999999999999999999999 depth 1", "go depth 3 wtime x"] {
        e.send(go);
        let got = e.bestmove(Duration::from_secs(10));
        assert!(got.iter().any(|l| l.starts_with("info string go")), "{go}: {got:?}");
    }
    for line in [
        "",
        "   ",
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

/// Builds awari layers 0..=12 with their depths to capture into `dir`.
fn build_dtc(dir: &Path) {
    let out = Command::new(OWARE).args(["build", "--max-stones", "12", "--dtc", "--quiet", "--dir"]).arg(dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `count` won positions of layers 10..=12 as fens, South to move and winning the game, each
/// with a depth to capture of at least 10 plies: the positions where an engine that keeps the
/// value without making progress circles (seeded, spread over the layers).
fn won_fens(dir: &Path, count: usize) -> Vec<String> {
    use oware::{index::unrank, Database, Position, Ruleset};
    let db = Database::open(dir, Ruleset::Awari).unwrap();
    let mut fens = Vec::new();
    let mut x = 0x5EED_u64;
    while fens.len() < count {
        let n = 10 + (fens.len() % 3) as u32;
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let p = Position::new(unrank(n, (x >> 11) % db.layer(n).unwrap().len()).unwrap()).unwrap();
        let left = 48 - n;
        let (south, north) = (left / 2, left - left / 2);
        let v = i32::from(db.value(&p).unwrap());
        if v + south as i32 - north as i32 <= 0 || db.dtc(&p).unwrap().map_or(true, |d| d < 10) {
            continue;
        }
        let pits: Vec<String> = p.board().iter().map(|c| c.to_string()).collect();
        fens.push(format!("{}-{south}-{north}-S", pits.join("-")));
    }
    fens
}

/// Engine against engine from won positions, driven as a GUI drives it (the position at the
/// last capture and the moves since) and refereed by `scripts/match`: the winner converts every
/// one. Before the engine saw the game's positions and the depths to capture, such games ended
/// level by repetition (6 of 100 in a sample lost outright).
#[test]
fn won_positions_are_converted_through_the_protocol() {
    let tmp = tempfile::tempdir().unwrap();
    build_dtc(tmp.path());
    let fens = won_fens(tmp.path(), 20);
    let file = tmp.path().join("won.fens");
    std::fs::write(&file, fens.join("\n")).unwrap();
    let json = tmp.path().join("games.json");
    let engine = format!("{OWARE} engine --dir {}", tmp.path().display());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/match");
    let out = Command::new("python3")
        .arg(&script)
        .args([&engine, &engine, "--fens"])
        .arg(&file)
        .args(["--single", "--movetime", "50", "--quiet", "--json"])
        .arg(&json)
        .output()
        .expect("python3 runs scripts/match");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let games = doc["time_controls"][0]["game_records"].as_array().unwrap();
    assert_eq!(games.len(), 20);
    for g in games {
        assert_eq!(g["start_side_ahead"], true, "not converted: {g}");
    }
}

/// `scripts/match --json F --resume` keeps the games already in F (written after each game) and
/// plays only the others; a file of another match is refused.
#[test]
fn a_match_resumes_from_its_file() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("match.json");
    let engine = format!("{OWARE} engine");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/match");
    let run = |extra: &[&str]| {
        let out = Command::new("python3")
            .arg(&script)
            .args([&engine, &engine, "--rules", "abapa", "--movetime", "5", "--max-plies", "16", "--no-startpos", "--opening", "Fb", "--json"])
            .arg(&json)
            .args(extra)
            .output()
            .expect("python3 runs scripts/match");
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let read = || -> serde_json::Value { serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap() };
    let (ok, err) = run(&[]);
    assert!(ok, "{err}");
    // As if the match had stopped after its first game.
    let mut doc = read();
    let first = doc["time_controls"][0]["game_records"][0].clone();
    doc["time_controls"][0]["game_records"].as_array_mut().unwrap().truncate(1);
    std::fs::write(&json, serde_json::to_vec(&doc).unwrap()).unwrap();
    let (ok, err) = run(&["--resume", "--opening", "Ab"]);
    assert!(ok, "{err}");
    assert!(err.contains("1 of 4 games taken from"), "{err}");
    let doc = read();
    let games = doc["time_controls"][0]["game_records"].as_array().unwrap();
    assert_eq!(games.len(), 4);
    assert_eq!(games[0], first, "the game played before is kept as it was");
    let keys: Vec<&str> = games.iter().map(|g| g["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["0/Fb/South", "0/Fb/North", "0/Ab/South", "0/Ab/North"]);
    assert_eq!(doc["time_controls"][0]["games"], 4);
    // Another match's file is not resumed.
    let (ok, err) = run(&["--resume", "--a-option", "Hash=2"]);
    assert!(!ok && err.contains("is another match"), "{err}");
}

/// The same positions through `oware play`, the computer playing both sides (`best` at each turn):
/// every game ends with South ahead.
#[test]
fn won_positions_are_converted_by_play() {
    let tmp = tempfile::tempdir().unwrap();
    build_dtc(tmp.path());
    for fen in won_fens(tmp.path(), 20) {
        let c: Vec<&str> = fen.split('-').collect();
        let side_form = format!("S: {}  N: {}  S", c[..6].join(" "), c[6..12].join(" "));
        let captured = format!("{}:{}", c[12], c[13]);
        let args = ["play", "--computer", "nobody", "--movetime", "50", "--dir", s(tmp.path()), "--from", &side_form, "--captured", &captured];
        let (code, text, err) = oware_with_input(&args, "best\n".repeat(1000));
        assert_eq!(code, 0, "{fen}: {err}");
        let last =
            text.lines().rev().find(|l| l.starts_with("final score")).unwrap_or_else(|| panic!("{fen}: no end: {}", &text[text.len().saturating_sub(2000)..]));
        assert!(last.ends_with("South wins"), "{fen}: {last}");
    }
}

/// The repetitions of the game given with `position ... moves` are scored as the rules end the
/// game there: awari splits the stones evenly, abapa gives each side his row. These were scored
/// from the layers (awari: `score cp -200 ... exact` for a move that repeats a position) or as
/// ordinary moves (abapa: -100 for a return to the fen's own position).
#[test]
fn the_games_repetitions_are_scored_by_the_rules() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path());
    let mut e = Session::start(&["--dir", tmp.path().to_str().unwrap()]);
    e.sync();
    e.send("position fen 3-0-0-0-0-0-0-2-2-0-0-1-20-20-S moves AcBeDdEbCeDdEcFfBaAeCdBcEeDdCbEdDcEdFeAcBbDaCdDbEaFfBaAeCcBeDbCdDcEaFfBbAaCeBdEcDb");
    e.send("go depth 12");
    let lines = e.bestmove(Duration::from_secs(30));
    let last_info = lines.iter().rev().find(|l| l.starts_with("info depth")).unwrap();
    assert_eq!(field(last_info, "cp"), Some("0"), "{lines:?}");
    // The position after C is an earlier one with South to move again: the game ends there.
    e.send("position fen 3-0-0-0-0-0-0-2-2-0-0-1-20-20-S moves AcBeDdEbCeDdEcFfBaAeCdBcEeDdCbEdDcEdFeAcBbDaCdDbEaFfBaAeCcBeDbCdDcEaFfBbAaCeBdEcDbC");
    e.send("go depth 3");
    let lines = e.bestmove(Duration::from_secs(30));
    assert_eq!(lines.last().unwrap(), "bestmove 0000", "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("the game is over: the last move repeated a position") && l.contains("score cp 0")), "{lines:?}");
    // Abapa: F returns to the fen's own position; each side takes his row: 24 each.
    e.send("setoption name Rules value abapa");
    e.sync();
    e.send("position fen 1-0-0-1-0-0-1-0-0-0-0-0-22-23-N moves aAbBcDdCeEf");
    e.send("go depth 20");
    let lines = e.bestmove(Duration::from_secs(30));
    let last_info = lines.iter().rev().find(|l| l.starts_with("info depth")).unwrap();
    assert!(lines.last().unwrap().starts_with("bestmove F"), "{lines:?}");
    assert_eq!(field(last_info, "cp"), Some("0"), "{lines:?}");
    assert!(last_info.ends_with("string exact"), "{lines:?}");
    // The 25-stone rule: the stones left count as split evenly, not by the layers.
    e.send("setoption name Rules value awari");
    e.sync();
    e.send("position fen 1-0-0-0-0-0-2-0-0-0-0-0-30-15-S");
    e.send("go depth 5");
    let lines = e.bestmove(Duration::from_secs(30));
    assert!(lines.iter().any(|l| l.contains("score cp 1500 for the side to move (exact)")), "{lines:?}");
    assert_eq!(lines.last().unwrap(), "bestmove 0000");
}

/// A search that would run for ages (`go depth 99`, `go depth 99999`, a clock of 2^64 - 1 ms)
/// stops within a second of the end of the input, and still answers. It searched on forever.
#[test]
fn the_end_of_input_stops_a_search_within_a_second() {
    for go in ["go depth 99", "go depth 99999", "go wtime 18446744073709551615"] {
        let mut child = spawn_oware(&["engine", "--dir", "/nonexistent/oware-test"]);
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "position startpos\n{go}").unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let closed = Instant::now();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let took = closed.elapsed();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(took < Duration::from_millis(1500), "{go}: {took:?} after the end of input");
        assert!(text.lines().any(|l| l.starts_with("bestmove ") && l != "bestmove 0000"), "{go}: {text}");
    }
}

/// Every `go` is answered with a `bestmove`, whatever its arguments; those it cannot take as
/// given are said in an `info string`. `go movetime -1`, `go movestogo -3` and `go nodes 1e30`
/// gave only an `info string` (a GUI waited forever), `go depth 101` and `go mate 3` were taken
/// silently.
#[test]
fn every_go_gets_a_bestmove() {
    let mut e = Session::start(&["--dir", "/nonexistent/oware-test"]);
    e.sync();
    e.send("position startpos");
    for (go, said) in [
        ("go depth 101 movetime 200", Some("read as 100")),
        ("go movetime -1 depth 2", Some("not a whole number")),
        ("go movestogo -3 depth 2", Some("not a whole number")),
        ("go nodes 1e30 depth 2", Some("not a whole number")),
        ("go wtime -1000 btime 1000", Some("read as no time left")),
        ("go mate 3 depth 2", Some("go mate 3 ignored")),
        ("go searchmoves A B depth 2", Some("searchmoves A B ignored")),
        ("go nodes 0 movetime 200", Some("a node count")),
        ("go depth 3 movetime 600", None),
    ] {
        e.send(go);
        let lines = e.bestmove(Duration::from_secs(60));
        assert!(lines.last().unwrap().starts_with("bestmove ") && lines.last().unwrap() != "bestmove 0000", "{go}: {lines:?}");
        match said {
            Some(words) => assert!(lines.iter().any(|l| l.starts_with("info string") && l.contains(words)), "{go}: {lines:?}"),
            None => assert!(!lines.iter().any(|l| l.starts_with("info string")), "{go}: {lines:?}"),
        }
    }
    // `go nodes 0` is one node's worth: the first iteration, no more.
    e.send("go nodes 1");
    let lines = e.bestmove(Duration::from_secs(10));
    let info = lines.iter().rev().find(|l| l.starts_with("info depth")).unwrap();
    assert_eq!(field(info, "depth"), Some("1"), "{lines:?}");
}

/// `setoption name Dir` with one damaged layer probes the layers below it and says which file
/// stopped it; it dropped every layer ("evaluation alone").
#[test]
fn a_damaged_layer_ends_the_tables_below_it() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path());
    let layer = tmp.path().join("awari").join("layer-07.owdb");
    let mut bytes = std::fs::read(&layer).unwrap();
    let at = bytes.len() - 1;
    bytes[at] ^= 1;
    std::fs::write(&layer, &bytes).unwrap();
    let mut e = Session::start(&[]);
    e.sync();
    e.send(&format!("setoption name Dir value {}", tmp.path().display()));
    let said = e.sync();
    assert!(said.iter().any(|l| l.contains("layer-07.owdb") && l.contains("not used")), "{said:?}");
    assert!(said.iter().any(|l| l.starts_with("info string probing layers 0..=6 of")), "{said:?}");
}

/// A legal awari game of at least `plies` plies from the start, as houses: each move the first
/// one (from a pseudo-random pit) that neither captures nor repeats a position, so that the game
/// lasts. Returns the moves and the game reached.
fn long_game(plies: usize) -> (Vec<char>, oware::game::Game) {
    use oware::game::Game;
    use oware::rules::Outcome;
    use oware::Ruleset;
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
    'games: loop {
        let mut g = Game::start(Ruleset::Awari);
        let mut moves = Vec::new();
        let mut seen = std::collections::HashSet::new();
        while moves.len() < plies {
            let board = *g.position().board();
            let legal = Ruleset::Awari.moves(&board);
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let n = legal.as_slice().len();
            if n == 0 {
                continue 'games;
            }
            let first = (seed >> 33) as usize % n;
            let quiet = (0..n).map(|k| legal.as_slice()[(first + k) % n]).find(|m| match m.outcome {
                Outcome::Child { captured, child } => captured == 0 && !seen.contains(&(child, g.side() == oware::position::Side::North)),
                Outcome::End { .. } => false,
            });
            let Some(m) = quiet.or_else(|| legal.as_slice().get(first).copied()) else { continue 'games };
            let side = g.side();
            g.play(m.pit).unwrap();
            seen.insert((*g.position().board(), g.side() == oware::position::Side::South));
            moves.push(oware::position::house(side, m.pit));
            if g.end().is_some() {
                continue 'games;
            }
        }
        return (moves, g);
    }
}

/// Item 4. A legal game of 2,100 plies as `position startpos moves ...` (over 4,096 bytes) is
/// read whole, and the next `go` searches its position. It was refused by the 4,096-byte line
/// limit ("line of 4223 bytes ignored"), and `go` searched the previous position.
#[test]
fn a_game_longer_than_any_line_is_read_and_searched() {
    let (moves, game) = long_game(2_100);
    let spaced: Vec<String> = moves.iter().map(char::to_string).collect();
    let line = format!("position startpos moves {}", spaced.join(" "));
    assert!(line.len() > 4_096, "{}", line.len());
    let legal: Vec<char> = oware::Ruleset::Awari.moves(game.position().board()).as_slice().iter().map(|m| oware::position::house(game.side(), m.pit)).collect();
    let mut e = Session::start(&["--dir", "/nonexistent/oware-test"]);
    e.sync();
    // A position whose moves are not the long game's.
    e.send("position fen 0-0-0-0-0-1-5-5-5-5-5-22-0-0-S");
    e.send(&line);
    assert_eq!(e.sync(), Vec::<String>::new());
    e.send("go depth 2");
    let lines = e.bestmove(Duration::from_secs(30));
    let played = field(lines.last().unwrap(), "bestmove").unwrap();
    assert!(played.len() == 1 && legal.contains(&played.chars().next().unwrap()), "{played} is not a move of the game's position ({legal:?}): {lines:?}");
    // The same game concatenated, and with an illegal last move: refused whole, then nothing
    // is searched until the next position.
    e.send(&format!("position startpos moves {}", moves.iter().collect::<String>()));
    e.send("go depth 1");
    let lines = e.bestmove(Duration::from_secs(30));
    assert!(field(lines.last().unwrap(), "bestmove").is_some_and(|m| m.len() == 1 && legal.contains(&m.chars().next().unwrap())), "{lines:?}");
    let wrong = if game.side() == oware::position::Side::South { 'a' } else { 'A' };
    e.send(&format!("{line} {wrong}"));
    e.send("go depth 1");
    let lines = e.bestmove(Duration::from_secs(30));
    assert_eq!(lines.last().unwrap(), "bestmove 0000", "{lines:?}");
    let why = format!("illegal move '{wrong}' at ply {}", moves.len() + 1);
    assert!(lines.iter().any(|l| l.starts_with("info string ") && l.contains(&why)), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("info string no position to search")), "{lines:?}");
    // Any other over-long line is still skipped unread.
    e.send(&format!("positions {}", "A ".repeat(5_000)));
    let said = e.sync();
    assert!(said.len() == 1 && said[0].contains("bytes ignored"), "{said:?}");
    e.send("quit");
    assert_eq!(e.child.wait().unwrap().code(), Some(0));
}

/// Item 9. `stop` is answered at once while the first `go` sets up a large table (4 GiB): the
/// table was set up before `stop` was read (bestmove 2 s after stop, 15.7 s under load).
#[test]
fn stop_is_prompt_while_a_large_table_is_set_up() {
    let mut e = Session::start(&["--dir", "/nonexistent/oware-test"]);
    e.sync();
    e.send("setoption name Hash value 4096");
    e.send("position startpos");
    e.send("go movetime 60000");
    let asked = Instant::now();
    e.send("stop");
    let lines = e.bestmove(Duration::from_secs(60));
    let took = asked.elapsed();
    assert!(took < Duration::from_millis(400), "bestmove {took:?} after stop: {lines:?}");
    assert!(field(lines.last().unwrap(), "bestmove").is_some_and(|m| m.len() == 1 && "ABCDEF".contains(m)), "{lines:?}");
    // The table set up is the one asked for: the next search uses it.
    e.send("go depth 3");
    e.bestmove(Duration::from_secs(60));
    e.send("quit");
    assert_eq!(e.child.wait().unwrap().code(), Some(0));
}

/// Item 10. Layers truncated in place under the engine: every `go` still gets a `bestmove`, the
/// problem said in an `info string`. The engine ended on a bus error without one (a GUI waits).
#[test]
fn layers_truncated_under_the_engine_still_get_a_bestmove() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path());
    let layer = |n: u32| tmp.path().join("awari").join(format!("layer-{n:02}.owdb"));
    let truncate = |n: u32| std::fs::OpenOptions::new().write(true).open(layer(n)).unwrap().set_len(4096 + 10).unwrap();
    let mut e = Session::start(&["--dir", tmp.path().to_str().unwrap()]);
    assert!(e.sync().iter().any(|l| l.starts_with("info string probing layers 0..=10")));
    // Between searches: the next `go` finds the file changed, opens the layers again and
    // searches without the damaged one.
    e.send("position fen 1-1-1-1-1-2-0-3-0-0-0-0-19-19-S");
    e.send("go depth 3");
    e.bestmove(Duration::from_secs(30));
    truncate(10);
    e.send("go depth 3");
    let lines = e.bestmove(Duration::from_secs(30));
    assert!(lines.iter().any(|l| l.starts_with("info string ") && l.contains("layer-10.owdb") && l.contains("changed while it was open")), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("info string probing layers 0..=9")), "{lines:?}");
    assert!(field(lines.last().unwrap(), "bestmove").is_some_and(|m| m.len() == 1 && "ABCDEF".contains(m)), "{lines:?}");

    // While it searches above the layers: a bus error answers before the engine ends, or the
    // search never read a removed page and answers at stop (the next `go` says what changed).
    e.send("position startpos moves FbDeAf");
    e.send("go infinite");
    std::thread::sleep(Duration::from_millis(300));
    for n in 5..=9 {
        truncate(n);
    }
    std::thread::sleep(Duration::from_millis(500));
    // The engine may have ended already.
    let stdin = e.stdin.as_mut().unwrap();
    let _ = writeln!(stdin, "stop").and_then(|()| stdin.flush());
    let lines = e.bestmove(Duration::from_secs(30));
    assert!(field(lines.last().unwrap(), "bestmove").is_some_and(|m| m.len() == 1 && "ABCDEF".contains(m)), "{lines:?}");
    if lines.iter().any(|l| l.starts_with("info string error: bus error")) {
        assert_eq!(e.child.wait().unwrap().code(), Some(5));
        return;
    }
    e.send("go depth 2");
    let lines = e.bestmove(Duration::from_secs(30));
    assert!(lines.iter().any(|l| l.starts_with("info string ") && l.contains("changed while it was open")), "{lines:?}");
    assert!(field(lines.last().unwrap(), "bestmove").is_some_and(|m| m.len() == 1 && "ABCDEF".contains(m)), "{lines:?}");
}

/// Issue 66, item 2: with the stores of the FEN (the captured stones), the `pv` of the last
/// `info` line stopped at its first capture into the tables ("D" over layers 0..10); it goes
/// on (as `/evaluate`'s line, cli/tests/suite/evaluate.rs).
#[test]
fn with_captured_counts_the_pv_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path());
    let mut e = Session::start(&["--dir", s(tmp.path())]);
    e.send("position fen 2-1-0-3-1-1-1-2-0-1-0-0-16-20-S");
    e.send("go depth 8");
    let said = e.bestmove(Duration::from_secs(30));
    let last = said.iter().rfind(|l| l.starts_with("info depth")).unwrap_or_else(|| panic!("{said:?}"));
    let pv: Vec<String> = field(last, "pv").unwrap().chars().map(String::from).collect();
    let first = crate::evaluate::first_capture(oware::Ruleset::Awari, [2, 1, 0, 3, 1, 1, 1, 2, 0, 1, 0, 0], &pv).unwrap();
    assert!(pv.len() >= first + 4, "the pv {pv:?} stops {} plies after its first capture", pv.len() - first - 1);
    e.send("quit");
}

/// Issue 66, item 6: the engine's `Level` option (1..=5): listed, set, refused out of range; at
/// level 1 `bestmove` is a legal move of a depth-1 search.
#[test]
fn the_level_option() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path());
    let mut e = Session::start(&["--dir", s(tmp.path())]);
    e.send("uci");
    let id = e.until(Duration::from_secs(10), |l| l == "uciok");
    assert!(id.iter().any(|l| l == "option name Level type spin default 5 min 1 max 5"), "{id:?}");
    e.send("setoption name Level value 9");
    let said = e.sync();
    assert!(said.iter().any(|l| l.contains("Level is a number 1..=5")), "{said:?}");
    e.send("setoption name Level value 1");
    e.send("position startpos");
    e.send("go movetime 2000");
    let said = e.bestmove(Duration::from_secs(30));
    let last = said.iter().rfind(|l| l.starts_with("info depth")).unwrap();
    assert_eq!(field(last, "depth"), Some("1"), "{said:?}");
    let best = said.last().unwrap();
    assert!(["A", "B", "C", "D", "E", "F"].contains(&field(best, "bestmove").unwrap()), "{best}");
    e.send("quit");
}
