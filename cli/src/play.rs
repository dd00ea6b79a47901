//! `oware play`: play in the terminal against perfect play, or two people with the oracle's
//! advice. Keyboard-driven, one line per command, fitting 80 columns; it reads standard input,
//! so a game can also be scripted.

use clap::Args;
use oware::game::{analyse, Analysed, Captured, Verdict};
use oware::position::{house, parse_move, Position, Side};
use oware::probe::{format_share, Database, MoveResult};
use oware::search::{Control, Engine, Report, Root};
use oware::{Error, Result, Ruleset};

use super::analyse::{open_engine, stones, SearchArgs};
use super::game::StartArgs;
use super::output::Stdout;
use super::query::{read_bounded, Line, MAX_LINE};
use super::report::{signed, winner_words};
use super::DatabaseArgs;

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
pub struct PlayArgs {
    /// The side the computer takes (you play the other), or `nobody` for two players with
    /// advice. It plays perfectly inside the built layers and with the search engine above them
    /// (its strength: --movetime, --depth or --nodes per move).
    #[arg(long, value_enum, default_value_t = Computer::North)]
    computer: Computer,
    #[command(flatten)]
    start: StartArgs,
    #[command(flatten)]
    db: DatabaseArgs,
    #[command(flatten)]
    search: SearchArgs,
}

/// A state of the game, kept for undo.
#[derive(Clone, Copy)]
struct Turn {
    position: Position,
    side: Side,
    captured: Option<Captured>,
    /// The pit of the move that ended the game (a grand slam whose remainder goes to the
    /// opponent), played by the other side; `None` while the game goes on, or when it ended
    /// because the player to move has no legal move.
    ended_by: Option<u8>,
}

const HELP: &str = "commands: a house (A-F for South, a-f for North) plays it; h shows every
move's value; b plays a best move; u takes back your last move; n starts a new
game; q quits\n";

/// Plays until the game ends (then says why, with the final score), the player quits, or
/// standard input ends. Input lines longer than [`MAX_LINE`] bytes, or not UTF-8, are refused
/// with a message and the game goes on.
///
/// # Errors
/// [`Error::Usage`] or [`Error::InvalidPosition`] for bad options; the probing errors of
/// [`analyse`] other than missing layers; [`Error::Output`] when stdout closes; [`Error::Io`]
/// when stdin cannot be read.
pub fn run(a: PlayArgs) -> Result<()> {
    let db = a.db.database()?;
    let engine = open_engine(&a.db, db.rules(), &a.search, false)?;
    let limits = a.search.limits(false);
    let (start, side, captured) = a.start.resolve()?;
    let first = Turn { position: start, side, captured, ended_by: None };
    let computer = match a.computer {
        Computer::Nobody => None,
        Computer::South => Some(Side::South),
        Computer::North => Some(Side::North),
    };
    let mut out = Stdout::new();
    out.write(&format!("oware play, rules {}: ", db.rules()))?;
    out.write(&match computer {
        Some(c) => format!("the computer plays {c}, you play {}\n(perfect play inside the built layers, the search engine above them)\n", c.other()),
        None => "two players, with the oracle's advice\n".to_string(),
    })?;
    out.write(HELP)?;
    let stdin = std::io::stdin();
    let interactive = std::io::IsTerminal::is_terminal(&stdin);
    let mut input = stdin.lock();
    let mut history: Vec<Turn> = Vec::new();
    let mut now = first;
    let mut buf = Vec::with_capacity(MAX_LINE + 1);
    // Whether the position changed since it was last shown.
    let mut fresh = true;
    loop {
        let here = analyse(&db, &now.position)?;
        if fresh {
            out.write(&show(&now, &here))?;
        }
        fresh = true;
        if here.game_over() {
            out.write(&game_end(db.rules(), &now))?;
            return Ok(());
        } else if computer == Some(now.side) {
            let (pit, how) = computer_move(&db, &engine, &limits, &now, &here, &history)?;
            out.write(&format!("{} plays {} ({how})\n", now.side, house(now.side, pit)))?;
            history.push(now);
            now = after(&now, &here, pit);
            continue;
        } else if computer.is_none() {
            out.write(&advice(&now, &here))?;
        }
        out.write(&format!("{} to move> ", now.side))?;
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
        match cmd {
            "" => fresh = false,
            "q" | "quit" | "exit" => return Ok(()),
            "h" | "?" | "help" | "hint" => {
                out.write(HELP)?;
                out.write(&advice(&now, &here))?;
                fresh = false;
            }
            "u" | "undo" => {
                // Back to the last turn that was not the computer's.
                let mut back = None;
                while let Some(t) = history.pop() {
                    if computer != Some(t.side) {
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
            "n" | "new" => {
                history.clear();
                now = first;
            }
            "b" | "best" if !here.game_over() => {
                let (pit, how) = computer_move(&db, &engine, &limits, &now, &here, &history)?;
                out.write(&format!("{} plays {} ({how})\n", now.side, house(now.side, pit)))?;
                history.push(now);
                now = after(&now, &here, pit);
            }
            _ => {
                // A house of the mover in either case, or a pit number.
                let text = match cmd.chars().next() {
                    Some(c) if cmd.len() == 1 && c.is_ascii_alphabetic() => match now.side {
                        Side::South => c.to_ascii_uppercase().to_string(),
                        Side::North => c.to_ascii_lowercase().to_string(),
                    },
                    _ => cmd.to_string(),
                };
                match parse_move(&text, now.side) {
                    Ok(pit) if here.get(pit).is_some() => {
                        history.push(now);
                        now = after(&now, &here, pit);
                    }
                    Ok(pit) => {
                        out.write(&format!("{} is not a legal move here\n", house(now.side, pit)))?;
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

/// The turn after `pit` is played.
fn after(now: &Turn, here: &Analysed, pit: u8) -> Turn {
    let Some(m) = here.get(pit) else { return *now };
    match m.result {
        MoveResult::Continues { captured, child } => {
            let mut c = now.captured;
            if let Some(c) = c.as_mut() {
                c.add(now.side, u32::from(captured));
            }
            Turn { position: child, side: now.side.other(), captured: c, ended_by: None }
        }
        // The game ends: every stone is shared out; show the empty board.
        MoveResult::EndsGame => {
            let mut c = now.captured;
            if let (Some(c), Some(v)) = (c.as_mut(), m.value) {
                let vd = Verdict::new(*c, now.position.stones(), v, now.side);
                *c = Captured { south: vd.south as u32, north: vd.north as u32 };
            }
            Turn { position: Position::new([0; 12]).unwrap_or(now.position), side: now.side.other(), captured: c, ended_by: Some(pit) }
        }
    }
}

/// The computer's move: perfect play when the layers cover the position, else the engine's
/// (its score said, as an estimate unless the search proved it). Returns the pit and how it was
/// chosen, for the message.
///
/// # Errors
/// The engine's errors (a layer that cannot be read).
fn computer_move(db: &Database, engine: &Engine, limits: &oware::search::Limits, now: &Turn, here: &Analysed, history: &[Turn]) -> Result<(u8, String)> {
    if let Some(pit) = best_pit(db, now, here) {
        return Ok((pit, "perfect play: exact".to_string()));
    }
    // The game since the last capture, for repetitions (positions with as many stones).
    let n = now.position.stones();
    let earlier: Vec<oware::Board> =
        history.iter().rev().take_while(|t| t.position.stones() == n).map(|t| *t.position.board()).collect::<Vec<_>>().into_iter().rev().collect();
    let root = Root { position: now.position, captured: now.captured.map(|c| (c.of(now.side), c.of(now.side.other()))), history: earlier };
    let r: Report = engine.search(&root, limits, &Control::new(), &mut |_| {})?;
    let pit = r.best_pit.or_else(|| here.moves.first().map(|m| m.pit)).unwrap_or(0);
    let what = if now.captured.is_some() { "final score" } else { "board" };
    Ok((pit, format!("engine: {what} {} stones, {}, depth {}", stones(r.score), if r.exact { "exact" } else { "estimate" }, r.depth)))
}

/// Why the game ended and its final score: the last lines of a session.
fn game_end(rules: Ruleset, now: &Turn) -> String {
    let mover = now.side;
    let board = now.position.board();
    let n = now.position.stones();
    let reason = match now.ended_by {
        Some(pit) => format!("{}'s grand slam with {} ends the game: the stones left on the board go to {mover}", mover.other(), house(mover.other(), pit)),
        None if board[..6].iter().all(|&s| s == 0) => {
            format!("{mover} has no stone to move: {} takes the {n} left on the board", mover.other())
        }
        None if board[6..].iter().all(|&s| s == 0) => {
            format!("{mover} cannot feed {}: {mover} takes the {n} stones in his row", mover.other())
        }
        None => format!("every move {mover} has would be a forbidden grand slam: each side takes the stones in his row"),
    };
    // The stones left on the board, shared out by the rule above (a move that ended the game
    // has shared them out already).
    let value = if now.ended_by.is_some() { 0 } else { rules.moves(board).ending().unwrap_or(0) };
    let score = match now.captured {
        Some(c) => {
            let vd = Verdict::new(c, n, value, mover);
            format!("final score: South {}, North {}: {}", format_share(vd.south), format_share(vd.north), winner_words(&vd, "a draw"))
        }
        None => {
            let vd = Verdict::new(Captured::default(), n, value, mover);
            format!(
                "of the {n} stones left on the board South takes {}, North {} (the captures before the start position are not known)",
                format_share(vd.south),
                format_share(vd.north)
            )
        }
    };
    format!("the game is over: {reason}\n{score}\n")
}

/// The move perfect play makes: the first ply of the best line when the position is covered.
fn best_pit(db: &Database, now: &Turn, here: &Analysed) -> Option<u8> {
    here.value?;
    match db.principal_variation(&now.position, 1) {
        Ok(line) => line.steps.first().map(|s| s.played.pit),
        Err(_) => here.best().first().copied(),
    }
}

/// The board, the captured stones and the value.
fn show(now: &Turn, here: &Analysed) -> String {
    let mut s = String::from("\n");
    s.push_str(&now.position.drawing_sides(now.side));
    let n = now.position.stones();
    if let Some(c) = now.captured {
        s.push_str(&format!("captured: South {}, North {}; {n} on the board\n", c.south, c.north));
    }
    match (here.value, now.captured) {
        (Some(v), Some(c)) => {
            let vd = Verdict::new(c, n, v, now.side);
            let who = winner_words(&vd, "a draw");
            s.push_str(&format!("value {} for {}: best play ends {}:{}, {who}\n", signed(v), now.side, format_share(vd.south), format_share(vd.north)));
        }
        (Some(v), None) => s.push_str(&format!("value {} for {}\n", signed(v), now.side)),
        (None, _) => match here.missing {
            Some(l) => s.push_str(&format!("not covered: layer {l} is not built\n")),
            None => s.push_str("not covered\n"),
        },
    }
    s
}

/// Every move's value, best ones marked.
fn advice(now: &Turn, here: &Analysed) -> String {
    if here.game_over() {
        return String::new();
    }
    let parts: Vec<String> = here
        .moves
        .iter()
        .map(|m| {
            let v = m.value.map_or("?".to_string(), signed);
            let star = if m.value.is_some() && m.value == here.value { "*" } else { "" };
            format!("{}{} {v}", house(now.side, m.pit), star)
        })
        .collect();
    format!("moves: {}  (* best)\n", parts.join(", "))
}
