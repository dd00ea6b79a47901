//! The `go` command: its limits and clock, each irregular argument read one way and said.

use std::time::Duration;

use oware::position::{excerpt, Side};
use oware::search::time::{Clock, TimeControl};

/// A `go` command.
#[derive(Debug, Default)]
pub(crate) struct Go {
    pub(crate) movetime: Option<u64>,
    pub(crate) depth: Option<u32>,
    pub(crate) nodes: Option<u64>,
    /// wtime, btime, winc, binc (ms).
    clock: [Option<u64>; 4],
    movestogo: Option<u64>,
    pub(crate) infinite: bool,
    pub(crate) ponder: bool,
}

impl Go {
    /// The time a normal search of `side` gets ([`TimeControl::allocation`]): movetime, else
    /// from the clock, else the default when no limit at all was given (`None` when depth or
    /// nodes limit it).
    pub(crate) fn allocation(&self, side: Side) -> Option<Duration> {
        let (time, inc) = match side {
            Side::South => (self.clock[0], self.clock[2]),
            Side::North => (self.clock[1], self.clock[3]),
        };
        let clock = time.map(|time_ms| Clock { time_ms, increment_ms: inc.unwrap_or(0) });
        TimeControl { move_time_ms: self.movetime, clock, moves_to_go: self.movestogo }.allocation(self.depth.is_some() || self.nodes.is_some())
    }
}

/// The words `go` takes; `searchmoves` takes the moves after it up to the next one.
const GO_WORDS: [&str; 12] = ["movetime", "depth", "nodes", "wtime", "btime", "winc", "binc", "movestogo", "mate", "infinite", "ponder", "searchmoves"];

/// Reads a `go` command. One policy for every irregular argument: `go` always searches and
/// always answers `bestmove`, and each argument it cannot take as given is named in a note
/// (sent as `info string`) saying how it was read: a value out of its range is brought into it
/// (`depth 1..=100`, `nodes` and `movetime` at least 1, `movestogo` at least 1; a whole number too
/// large for 64 bits is too large for every range), a negative clock
/// reads as no time left, a value that is not a whole number and the arguments of chess this
/// engine does not search for (`mate`, `searchmoves`) or does not know are ignored.
pub(crate) fn parse_go(args: &[&str]) -> (Go, Vec<String>) {
    let mut go = Go::default();
    let mut notes = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let key = args[i];
        i += 1;
        let takes_number = matches!(key, "movetime" | "depth" | "nodes" | "wtime" | "btime" | "winc" | "binc" | "movestogo" | "mate");
        if !takes_number {
            match key {
                "infinite" => go.infinite = true,
                "ponder" => go.ponder = true,
                "searchmoves" => {
                    let from = i;
                    while i < args.len() && !GO_WORDS.contains(&args[i]) {
                        i += 1;
                    }
                    notes.push(format!("go searchmoves {} ignored: every move is searched", args[from..i].join(" ")));
                }
                other => notes.push(format!("go: unknown argument {} ignored", excerpt(other))),
            }
            continue;
        }
        let Some(text) = args.get(i).filter(|t| !GO_WORDS.contains(t)) else {
            notes.push(format!("go {key} needs a number: ignored"));
            continue;
        };
        i += 1;
        let negative = text.len() > 1 && text.starts_with('-') && text[1..].bytes().all(|b| b.is_ascii_digit());
        let clock = matches!(key, "wtime" | "btime" | "winc" | "binc");
        // A whole number too large for 64 bits is read as the largest value, as any other value
        // out of range is.
        let too_large = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) && text.parse::<u64>().is_err();
        let value = if negative && clock {
            notes.push(format!("go {key} {text} is negative: read as no time left"));
            0
        } else if too_large {
            u64::MAX
        } else {
            match text.parse::<u64>() {
                Ok(v) => v,
                Err(_) => {
                    notes.push(format!("go {key} {} is not a whole number of 0 or more: ignored", excerpt(text)));
                    continue;
                }
            }
        };
        if too_large && clock {
            notes.push(format!("go {key} {} is too large: a time in ms is 0..={}; read as {}", excerpt(text), u64::MAX, u64::MAX));
        }
        let mut at_least = |min: u64, max: u64, what: &str| -> u64 {
            let v = value.clamp(min, max);
            if too_large {
                notes.push(format!("go {key} {} is too large: {what} is {min}..={max}; read as {v}", excerpt(text)));
            } else if v != value {
                notes.push(format!("go {key} {value}: {what} is {min}..={max}; read as {v}"));
            }
            v
        };
        match key {
            "movetime" => go.movetime = Some(at_least(1, u64::MAX, "a move time in ms")),
            "depth" => go.depth = Some(at_least(1, u64::from(oware::search::MAX_DEPTH), "a depth") as u32),
            "nodes" => go.nodes = Some(at_least(1, u64::MAX, "a node count")),
            "movestogo" => go.movestogo = Some(at_least(1, u64::MAX, "moves to go")),
            "wtime" => go.clock[0] = Some(value),
            "btime" => go.clock[1] = Some(value),
            "winc" => go.clock[2] = Some(value),
            "binc" => go.clock[3] = Some(value),
            _ => {
                let mate = if too_large { excerpt(text) } else { value.to_string() };
                notes.push(format!("go mate {mate} ignored: the engine searches for the best score, not for a mate"));
            }
        }
    }
    (go, notes)
}
