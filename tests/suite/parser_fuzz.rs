//! Property-based fuzzing of the text decoders and parsers that packs, manifests and play read:
//! the `SHA256SUMS` manifest, positions in every notation (mover-first counts, the JSON array,
//! the drawn form, the side form), moves, captured counts and game records.
//!
//! Hand-rolled like `format_fuzz.rs` (a seeded `SplitMix64`, no new dependency): each case is
//! either a valid input built from random values, checked to round-trip, or a random mutation
//! of one (bytes flipped, inserted, deleted, spliced with hostile snippets), checked never to
//! panic and, when accepted, to give a value that prints and parses back to itself.
//!
//! The suite runs a short campaign (a fixed number of cases per property, a few seconds);
//! `scripts/fuzz SECONDS` runs [`long`] for that long with a fresh seed and prints the cases,
//! the time and the findings. A finding is a panic or a broken property, reported with the
//! seed and the input so that it reproduces.

use std::time::{Duration, Instant};

use crate::common::{self, SplitMix64};

use oware::game::{annotate, record_moves, Captured};
use oware::position::{parse_move, Position, Side};
use oware::probe::Database;
use oware::rules::Ruleset;
use oware::verify::manifest::{self, Entry};

/// Snippets that parsers tend to trip on.
const HOSTILE: &[&str] = &[
    "",
    " ",
    "\t",
    "\n",
    "\r\n",
    "/",
    "//",
    "[",
    "]",
    ",",
    ";",
    ":",
    "*",
    "..",
    "../",
    "/etc/passwd",
    "\0",
    "\u{feff}",
    "é",
    "🂡",
    "-1",
    "+3",
    "49",
    "255",
    "256",
    "4294967296",
    "99999999999999999999",
    "S:",
    "N:",
    "South",
    "north",
    "to move",
    "S",
    "N",
    "1.",
    "12...",
    "AbCdEf",
    "g",
    "0x10",
    "  ",
    "layer-",
    ".owpk",
    "awari/",
    "abapa-no-capture/",
    "AWARI/",
    "0123456789abcdef",
];

fn pick<'a>(rng: &mut SplitMix64, items: &'a [&'a str]) -> &'a str {
    items[rng.below(items.len() as u64) as usize]
}

/// A random mutation of `text`: 1..=4 edits at byte level (the result may not be UTF-8; the
/// caller decides what to do with that).
fn mutate(rng: &mut SplitMix64, text: &str) -> Vec<u8> {
    let mut b = text.as_bytes().to_vec();
    for _ in 0..=rng.below(4) {
        let at = if b.is_empty() { 0 } else { rng.below(b.len() as u64 + 1) as usize };
        match rng.below(6) {
            0 if at < b.len() => b[at] ^= 1 << rng.below(8),
            1 if at < b.len() => {
                b.remove(at);
            }
            2 => b.insert(at, rng.below(256) as u8),
            3 => {
                let s = pick(rng, HOSTILE).as_bytes();
                b.splice(at..at, s.iter().copied());
            }
            4 if at < b.len() => {
                // Duplicate a slice of the text (repeated lines, rows, labels).
                let end = (at + 1 + rng.below(40) as usize).min(b.len());
                let copy = b[at..end].to_vec();
                b.splice(at..at, copy);
            }
            _ => b.truncate(at),
        }
    }
    b
}

fn ruleset(rng: &mut SplitMix64) -> Ruleset {
    Ruleset::ALL[rng.below(Ruleset::ALL.len() as u64) as usize]
}

fn hex(rng: &mut SplitMix64) -> String {
    (0..4).map(|_| format!("{:016x}", rng.next_u64())).collect()
}

/// Counts of one campaign.
#[derive(Default, Debug)]
struct Tally {
    cases: u64,
    accepted: u64,
    findings: Vec<String>,
}

impl Tally {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok && self.findings.len() < 20 {
            self.findings.push(what());
        }
    }
}

/// The manifest: valid ones round-trip; mutated ones parse or are refused, never panic, and
/// what is accepted names only pack files and renders back to itself.
fn manifest_case(rng: &mut SplitMix64, t: &mut Tally) {
    let lines = rng.below(8) as usize;
    let entries: Vec<Entry> =
        (0..lines).map(|_| Entry { sha256: hex(rng), path: format!("{}/layer-{:02}.owpk", ruleset(rng).name(), rng.below(49)) }).collect();
    let text = manifest::render(&entries);
    t.cases += 1;
    let parsed = manifest::parse(text.as_bytes());
    t.check(parsed.as_ref() == Ok(&entries), || format!("manifest: valid text not read back: {text:?} -> {parsed:?}"));
    let bad = mutate(rng, &text);
    t.cases += 1;
    // The input as (lossy, escaped) text in findings.
    let shown = String::from_utf8_lossy(&bad).into_owned();
    let got = match std::panic::catch_unwind(|| manifest::parse(&bad)) {
        Err(_) => return t.check(false, || format!("manifest: panic on {shown:?}")),
        Ok(Err(_)) => return,
        Ok(Ok(got)) => got,
    };
    t.accepted += 1;
    for e in &got {
        let (rules, name) = e.path.split_once('/').unwrap_or(("", ""));
        let sound = Ruleset::ALL.iter().any(|r| r.name() == rules)
            && name.len() == "layer-00.owpk".len()
            && name.starts_with("layer-")
            && name.ends_with(".owpk")
            && !e.path.contains("..")
            && e.sha256.len() == 64
            && e.sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        t.check(sound, || format!("manifest: accepted an unsound line {e:?} from {shown:?}"));
    }
    let again = manifest::parse(manifest::render(&got).as_bytes());
    t.check(again.as_ref() == Ok(&got), || format!("manifest: accepted text does not round-trip: {shown:?}"));
}

/// Every notation of a random position, and mutations of each.
fn position_case(rng: &mut SplitMix64, t: &mut Tally) {
    let b = common::random_board(rng);
    let p = Position::new(b).unwrap();
    let side = if rng.below(2) == 0 { Side::South } else { Side::North };
    let a = p.absolute(side);
    let row = |r: &[u8]| r.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" ");
    let mut label = |s: Side| if rng.below(2) == 0 { s.name().to_string() } else { s.title()[..1].to_string() };
    let (ls, ln, lm) = (label(Side::South), label(Side::North), label(side));
    let side_form = format!("{ls}: {}  {ln}: {}  {lm}", row(&a[..6]), row(&a[6..]));
    let top: Vec<u8> = b[6..].iter().rev().copied().collect();
    let forms = [
        p.to_string(),
        b.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(","),
        serde_json::to_string(&b).unwrap(),
        format!("{} / {}", row(&top), row(&b[..6])),
    ];
    for f in &forms {
        t.cases += 1;
        let got = f.parse::<Position>();
        t.check(got.as_ref().ok() == Some(&p), || format!("position: {f:?} read as {got:?}, not {p}"));
    }
    t.cases += 1;
    let got = Position::parse_with_side(&side_form);
    t.check(matches!(&got, Ok((q, Some(s))) if *q == p && *s == side), || format!("position: side form {side_form:?} read as {got:?}"));
    // Mutations of every form.
    for f in forms.iter().chain(std::iter::once(&side_form)) {
        let bad = mutate(rng, f);
        let Ok(text) = String::from_utf8(bad) else { continue };
        t.cases += 1;
        let result = std::panic::catch_unwind(|| (Position::parse_with_side(&text), Position::place(&text, Some(Side::North))));
        match result {
            Err(_) => t.check(false, || format!("position: panic on {text:?}")),
            Ok((parsed, placed)) => {
                for q in [parsed.ok().map(|(q, _)| q), placed.ok().map(|(q, _)| q)].into_iter().flatten() {
                    t.accepted += 1;
                    t.check(q.stones() <= 48 && q.to_string().parse::<Position>().ok() == Some(q), || {
                        format!("position: {text:?} gave {q} that does not re-read")
                    });
                }
            }
        }
    }
}

/// Moves, captured counts and game records (annotated against a small database).
fn record_case(rng: &mut SplitMix64, t: &mut Tally, db: &Database) {
    let houses = ["A", "B", "C", "D", "E", "F", "a", "b", "c", "d", "e", "f", "1", "6", "0", "x"];
    let n = rng.below(12) as usize;
    let mut record = String::new();
    for i in 0..n {
        if i % 2 == 0 && rng.below(2) == 0 {
            record.push_str(&format!("{}. ", i / 2 + 1));
        }
        record.push_str(pick(rng, &houses));
        record.push_str(pick(rng, &[" ", ",", ";", "  ", ""]));
    }
    let bad = mutate(rng, &record);
    let text = String::from_utf8_lossy(&bad).into_owned();
    for text in [record.as_str(), text.as_str()] {
        t.cases += 1;
        let moves = std::panic::catch_unwind(|| record_moves(text));
        let Ok(moves) = moves else {
            t.check(false, || format!("record: panic in record_moves on {text:?}"));
            continue;
        };
        for m in &moves {
            let _ = parse_move(m, Side::South);
        }
        // A start of at most 8 stones, so that every position is in the database's layers.
        let mut b = [0u8; 12];
        for _ in 0..rng.below(9) {
            b[rng.below(12) as usize] += 1;
        }
        let start = Position::new(b).unwrap();
        let side = if rng.below(2) == 0 { Side::South } else { Side::North };
        let captured = if rng.below(2) == 0 { None } else { Some(Captured { south: 20, north: 48 - 20 - start.stones() }) };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| annotate(db, start, side, captured, &moves)));
        match result {
            Err(_) => t.check(false, || format!("record: panic annotating {moves:?} from {start} ({side})")),
            Ok(Ok(_)) => t.accepted += 1,
            Ok(Err(e)) => t.check(matches!(e.kind(), oware::ErrorKind::Usage | oware::ErrorKind::InvalidPosition), || {
                format!("record: {moves:?} from {start}: unexpected error {e}")
            }),
        }
    }
    let valid = format!("{}:{}", rng.below(60), rng.below(60));
    let pair = mutate(rng, &valid);
    let pair = String::from_utf8_lossy(&pair).into_owned();
    t.cases += 1;
    let ok = std::panic::catch_unwind(|| {
        if let Ok(c) = Captured::parse(&pair) {
            // What parses is a pair of counts of at most 48 stones.
            assert!(c.south + c.north <= 48, "{c:?}");
        }
    });
    t.check(ok.is_ok(), || format!("captured: panic or unsound pair on {pair:?}"));
}

/// Runs the three properties from `seed` until `cases` cases or `budget` time, whichever first.
/// `quiet`: keep the messages of panics (findings, counted and reported) off the output; the
/// hook is process-wide, so only the long run, alone in its process, uses it.
fn campaign(seed: u64, cases: u64, budget: Duration, quiet: bool) -> (Tally, Duration) {
    let db = Database::open(common::fixture(Ruleset::Awari, 8), Ruleset::Awari).unwrap();
    let mut rng = SplitMix64(seed);
    let mut t = Tally::default();
    let start = Instant::now();
    let hook = quiet.then(|| {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        hook
    });
    while t.cases < cases && start.elapsed() < budget {
        manifest_case(&mut rng, &mut t);
        position_case(&mut rng, &mut t);
        record_case(&mut rng, &mut t, &db);
    }
    if let Some(hook) = hook {
        std::panic::set_hook(hook);
    }
    (t, start.elapsed())
}

#[test]
fn parsers_survive_a_short_fuzz_campaign() {
    // A fixed seed and case count: the same cases on every run (a second or two in release; the
    // time budget is only an upper bound for a slow machine).
    let (t, _) = campaign(0x5eed_0024, 1_000_000, Duration::from_secs(300), false);
    assert!(t.findings.is_empty(), "{} findings:\n{}", t.findings.len(), t.findings.join("\n"));
    assert!(t.accepted > 0 && t.cases >= 100_000, "{t:?}");
}

/// The long campaign of `scripts/fuzz`: `OWARE_FUZZ_SECONDS` (default 60) from `OWARE_FUZZ_SEED`
/// (default: the clock), printing cases, time and findings.
#[test]
#[ignore = "long: run by scripts/fuzz"]
fn long() {
    let seconds: u64 = std::env::var("OWARE_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let seed: u64 = std::env::var("OWARE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64));
    let (t, took) = campaign(seed, u64::MAX, Duration::from_secs(seconds), true);
    println!("fuzz: seed {seed}: {} cases ({} accepted inputs) in {:.1} s, {} findings", t.cases, t.accepted, took.as_secs_f64(), t.findings.len());
    for f in &t.findings {
        println!("finding: {f}");
    }
    assert!(t.findings.is_empty(), "{} findings (seed {seed})", t.findings.len());
}
