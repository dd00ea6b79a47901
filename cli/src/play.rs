//! `oware play`: play in the terminal against perfect play, or two people with the oracle's
//! advice. Keyboard-driven, one line per command, fitting 80 columns; it reads standard input,
//! so a game can also be scripted.

use clap::Args;
use oware::game::{probe, Captured, End, Game, Probed, Verdict};
use oware::position::{house, parse_move, Side};
use oware::search::{Control, Engine, Report};
use oware::{Error, Result};

use crate::args::{open_engine, DatabaseArgs, SearchArgs, StartArgs};
use crate::input::{read_bounded, Line, MAX_LINE};
use crate::output::Stdout;
use crate::report::{game_values, signed, winner_words};
use crate::show::{stones, Ending};

/// Who the program plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Computer {
    /// Two people play; the values of the moves are shown at each turn.
    Nobody,
    /// Perfect play for South.
    South,
    /// Perfect play for North.
    North,
}

/// Arguments of `oware play`.
#[derive(Args, Debug)]
#[command(after_help = commands_help())]
pub(crate) struct PlayArgs {
    /// The side the computer takes (you play the other), or `nobody` for two players with
    /// advice. It plays perfectly inside the built layers and with the search engine above them
    /// (its strength: --movetime, --depth or --nodes per move).
    #[arg(long, value_enum, default_value_t = Computer::North)]
    computer: Computer,
    /// The computer's strength: 1 (a beginner's: one ply, any move within 3 stones of the best
    /// it sees) to 5 (full strength, the default); docs/engine.md, "Strength levels".
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=5))]
    level: u32,
    #[command(flatten)]
    start: StartArgs,
    #[command(flatten)]
    db: DatabaseArgs,
    #[command(flatten)]
    search: SearchArgs,
}

/// The commands at the prompt besides a house: none is a house letter (a..f in either case) or a
/// pit number, so that every house can be typed. `--help` and `?` show [`HELP`].
const COMMANDS: [(&[&str], Cmd, &str); 6] = [
    (&["h", "hint"], Cmd::Hint, "shows every move's value (above the layers, the engine's scores)"),
    (&["*", "best"], Cmd::Best, "plays a best move (one marked * by h) for the side to move"),
    (&["u", "undo"], Cmd::Undo, "takes back your last move"),
    (&["n", "new"], Cmd::New, "starts a new game"),
    (&["?", "help"], Cmd::Help, "shows this"),
    (&["q", "quit", "exit"], Cmd::Quit, "quits"),
];

/// A command at the prompt other than a move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmd {
    Hint,
    Best,
    Undo,
    New,
    Help,
    Quit,
}

const HELP: &str = "commands: a house plays it (A-F for South, a-f for North, either case), or its
pit number 0-5 from the mover's first house; h or hint shows every move's value
(above the layers, the engine's scores); * or best plays a best move; u or undo
takes back your last move; n or new starts a new game; ? or help shows this;
q, quit or exit quits\n";

/// Plays until the game ends (then says why, with the final score), the player quits, or
/// standard input ends. Input lines longer than [`MAX_LINE`] bytes, or not UTF-8, are refused
/// with a message and the game goes on.
///
/// # Errors
/// [`Error::Usage`] or [`Error::InvalidPosition`] for bad options; the probing errors of
/// [`probe`] other than missing layers; [`Error::Output`] when stdout closes; [`Error::Io`]
/// when stdin cannot be read.
pub(crate) fn run(a: PlayArgs) -> Result<()> {
    let db = a.db.database()?;
    let engine = open_engine(&a.db, db.rules(), &a.search, false)?;
    let limits = a.search.limits(false);
    let level = oware::search::Level::new(a.level)?;
    let (start, side, captured) = a.start.resolve()?;
    let first = Game::from_position(db.rules(), start, side, captured);
    let computer = match a.computer {
        Computer::Nobody => None,
        Computer::South => Some(Side::South),
        Computer::North => Some(Side::North),
    };
    let mut out = Stdout::new();
    out.write(&format!("oware play, rules {}: ", db.rules()))?;
    out.write(&match computer {
        Some(c) if level.is_full() => {
            format!("the computer plays {c}, you play {}\n(perfect play inside the built layers, the search engine above them)\n", c.other())
        }
        Some(c) => format!("the computer plays {c} at level {level} of {}, you play {}\n", oware::search::Level::MAX, c.other()),
        None => "two players, with the oracle's advice\n".to_string(),
    })?;
    out.write(HELP)?;
    let stdin = std::io::stdin();
    let interactive = std::io::IsTerminal::is_terminal(&stdin);
    let mut input = stdin.lock();
    // The games before each move, for undo.
    let mut history: Vec<Game> = Vec::new();
    let mut now = first.clone();
    let mut buf = Vec::with_capacity(MAX_LINE + 1);
    // Whether the position changed since it was last shown.
    let mut fresh = true;
    loop {
        let here = probe(&db, now.position())?;
        let shown = fresh;
        if fresh {
            out.write(&show(&now, &here))?;
        }
        fresh = true;
        if let Some(end) = now.end() {
            out.write(&game_end(&now, end))?;
            return Ok(());
        } else if computer == Some(now.side()) {
            let (pit, how) = computer_move(&engine, &limits, level, &now)?;
            out.write(&format!("{} plays {} ({how})\n", now.side(), house(now.side(), pit)))?;
            history.push(now.clone());
            now.play(pit)?;
            continue;
        } else if computer.is_none() && shown {
            out.write(&advice(&now, &here))?;
        }
        out.write(&format!("{} to move> ", now.side()))?;
        let line = match read_bounded(&mut input, &mut buf).map_err(|e| Error::io("<stdin>", e))? {
            None => {
                out.write("\n")?;
                return Ok(());
            }
            Some(Line::TooLong { bytes, .. }) => {
                out.write(&format!("\nthe line of {bytes} bytes is longer than {MAX_LINE}: ignored\n"))?;
                fresh = false;
                continue;
            }
            Some(Line::Text(bytes)) => match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(_) => {
                    out.write("\nthe line is not UTF-8 text: ignored\n")?;
                    fresh = false;
                    continue;
                }
            },
        };
        let cmd = line.trim();
        if !interactive {
            // A scripted game: show what was read, as a terminal would.
            out.write(&format!("{}\n", cmd.escape_debug()))?;
        }
        if cmd.is_empty() {
            fresh = false;
            continue;
        }
        match command(cmd) {
            Some(Cmd::Quit) => return Ok(()),
            Some(Cmd::Help) => {
                out.write(HELP)?;
                fresh = false;
            }
            Some(Cmd::Hint) => {
                match here.value {
                    Some(_) => out.write(&advice(&now, &here))?,
                    None => out.write(&engine_advice(&engine, &limits, &now)?)?,
                }
                fresh = false;
            }
            Some(Cmd::Undo) => {
                // Back to the last turn that was not the computer's.
                let mut back = None;
                while let Some(t) = history.pop() {
                    if computer != Some(t.side()) {
                        back = Some(t);
                        break;
                    }
                }
                match back {
                    Some(t) => now = t,
                    None => {
                        out.write("nothing to take back\n")?;
                        fresh = false;
                    }
                }
            }
            Some(Cmd::New) => {
                history.clear();
                now = first.clone();
            }
            Some(Cmd::Best) => {
                let (pit, how) = computer_move(&engine, &limits, oware::search::Level::FULL, &now)?;
                out.write(&format!("{} plays {} ({how})\n", now.side(), house(now.side(), pit)))?;
                history.push(now.clone());
                now.play(pit)?;
            }
            None => {
                // A house of the mover in either case, or a pit number.
                let text = match cmd.chars().next() {
                    Some(c) if cmd.len() == 1 && c.is_ascii_alphabetic() => match now.side() {
                        Side::South => c.to_ascii_uppercase().to_string(),
                        Side::North => c.to_ascii_lowercase().to_string(),
                    },
                    _ => cmd.to_string(),
                };
                match parse_move(&text, now.side()) {
                    Ok(pit) if here.get(pit).is_some() => {
                        history.push(now.clone());
                        now.play(pit)?;
                    }
                    Ok(pit) => {
                        out.write(&format!("{} is not a legal move here\n", house(now.side(), pit)))?;
                        fresh = false;
                    }
                    Err(_) => {
                        out.write(&format!("'{}' is not a command\n{HELP}", cmd.escape_debug()))?;
                        fresh = false;
                    }
                }
            }
        }
    }
}

/// The command `word` names, if it names one.
fn command(word: &str) -> Option<Cmd> {
    COMMANDS.iter().find(|(words, _, _)| words.contains(&word)).map(|&(_, c, _)| c)
}

/// The commands of `oware play`, for `--help`.
fn commands_help() -> String {
    let mut s = String::from("Commands at the prompt (one a line; none is a house letter):\n");
    s.push_str(&format!("  {:<13} {}\n", "A..F, a..f", "plays that house of the side to move (either case); 0..5 its pit"));
    for (words, _, what) in COMMANDS {
        s.push_str(&format!("  {:<13} {what}\n", words.join(", ")));
    }
    s
}

/// The computer's move: the engine's, from the game as it stands (its positions since the
/// last capture included, so that it never walks into a repetition that costs it, and converts
/// a won position by the depths to capture where they are built). Inside the layers, with no
/// earlier position that play can repeat, its answer is the layers' perfect play, exact at
/// once. Below full strength (`level`), the level's search and a move drawn within its
/// margin. Returns the pit and how it was chosen, for the message.
///
/// # Errors
/// The engine's errors (a layer that cannot be read).
fn computer_move(engine: &Engine, limits: &oware::search::Limits, level: oware::search::Level, now: &Game) -> Result<(u8, String)> {
    let r: Report = engine.search(&now.root(), &level.limits(limits), &Control::new(), &mut |_| {})?;
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let pit = match level.choose(&r, seed) {
        Some(p) => p,
        None => now.rules().moves(now.position().board()).as_slice().first().map_or(0, |m| m.pit),
    };
    if !level.is_full() {
        return Ok((pit, format!("level {level}: depth {}", r.depth)));
    }
    if r.exact && engine.tables().is_some_and(|t| now.position().stones() <= t) {
        return Ok((pit, "perfect play: exact".to_string()));
    }
    let what = if now.captured().is_some() { "final score" } else { "board" };
    Ok((pit, format!("engine: {what} {} stones, {}, depth {}", stones(r.score), if r.exact { "exact" } else { "estimate" }, r.depth)))
}

/// Every move's score by the engine (above the layers): each an estimate unless proven.
///
/// # Errors
/// The engine's errors.
fn engine_advice(engine: &Engine, limits: &oware::search::Limits, now: &Game) -> Result<String> {
    let all = oware::search::Limits { all_moves: true, ..limits.clone() };
    let r: Report = engine.search(&now.root(), &all, &Control::new(), &mut |_| {})?;
    let parts: Vec<String> = r
        .moves
        .iter()
        .map(|m| {
            let star = if Some(m.pit) == r.best_pit { "*" } else { "" };
            let mark = if m.exact { "" } else { "~" };
            format!("{}{star} {mark}{}", house(now.side(), m.pit), stones(m.score))
        })
        .collect();
    let what = if now.captured().is_some() { "final scores" } else { "scores of the board" };
    Ok(format!("moves: {}  (* best)\n(the engine's {what}, ~ estimated, depth {})\n", parts.join(", "), r.depth))
}

/// Why the game ended and its final score: the last lines of a session.
fn game_end(game: &Game, end: End) -> String {
    let mover = game.side();
    let n = game.position().stones();
    let reason = Ending::of(game, end).words(game);
    let score = match game.verdict() {
        Some(vd) => format!("final score: South {}, North {}: {}", vd.south, vd.north, winner_words(&vd, "a draw")),
        None => {
            let value = match end {
                End::NoMove { value } | End::Repetition { value } => value,
                _ => 0,
            };
            let vd = Verdict::new(Captured::default(), n, value, mover);
            format!("of the {n} stones left on the board South takes {}, North {} (the captures before the start position are not known)", vd.south, vd.north)
        }
    };
    format!("the game is over: {reason}\n{score}\n")
}

/// The board, the captured stones and the value.
fn show(now: &Game, here: &Probed) -> String {
    let mut s = String::from("\n");
    s.push_str(&now.position().drawing_sides(now.side()));
    let n = now.position().stones();
    if let Some(c) = now.captured() {
        s.push_str(&format!("captured: South {}, North {}; {n} on the board\n", c.south, c.north));
    }
    match (here.value, now.captured()) {
        (Some(v), Some(c)) => {
            let vd = Verdict::in_game(game_values(now.rules()), c, now.position(), v, now.side());
            let who = winner_words(&vd, "a draw");
            if vd.score_known {
                s.push_str(&format!("value {} for {}: best play ends {}:{}, {who}\n", signed(v), now.side(), vd.south, vd.north));
            } else {
                s.push_str(&format!(
                    "value {} for {}: best play gives {who} (the final score under the 25-stone rule is not solved here)\n",
                    signed(v),
                    now.side()
                ));
            }
        }
        (Some(v), None) => s.push_str(&format!("value {} for {}\n", signed(v), now.side())),
        (None, _) => match here.missing {
            Some(l) => s.push_str(&format!("not covered: layer {l} is not built\n")),
            None => s.push_str("not covered\n"),
        },
    }
    s
}

/// Every move's value, best ones marked.
fn advice(now: &Game, here: &Probed) -> String {
    if here.game_over() {
        return String::new();
    }
    let parts: Vec<String> = here
        .moves
        .iter()
        .map(|m| {
            let v = m.value.map_or("?".to_string(), signed);
            let star = if m.value.is_some() && m.value == here.value { "*" } else { "" };
            format!("{}{} {v}", house(now.side(), m.pit), star)
        })
        .collect();
    format!("moves: {}  (* best)\n", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every house can be typed: no command word is read as a move (it was: `b` played a best
    /// move, so North's house b could not be typed), and every command is in the help.
    #[test]
    fn no_command_is_a_house() {
        for (words, cmd, what) in COMMANDS {
            for w in words {
                assert_eq!(command(w), Some(cmd));
                for side in [Side::South, Side::North] {
                    let as_typed = if w.len() == 1 { w.to_ascii_uppercase() } else { w.to_string() };
                    assert!(parse_move(&as_typed, side).is_err() && parse_move(w, side).is_err(), "{w} is a move for {side}");
                }
                assert!(HELP.contains(w) && commands_help().contains(w), "{w} ({what}) is not in the help");
            }
        }
    }
}
