//! The engine command's readers: the FEN, `position`, long lines, `setoption`, `go`.

use std::time::Duration;

use oware::position::Side;
use oware::search::time::{DEFAULT_MOVE_TIME, MIN_MOVE_TIME};
use oware::search::MoverCaptured;
use oware::{Position, Ruleset};

use super::go::parse_go;
use super::position::{parse_fen, parse_position, read_input, Input};
use super::session::option_parts;
use crate::input::Line;

#[test]
fn fen_is_strict() {
    let g = parse_fen(Ruleset::Awari, "4-4-4-4-4-4-4-4-4-4-4-4-0-0-S").unwrap();
    assert_eq!(*g.position(), Position::start());
    let g = parse_fen(Ruleset::Awari, "1-0-0-0-0-0-0-0-0-0-0-2-20-25-N").unwrap();
    assert_eq!(g.side(), Side::North);
    assert_eq!(g.position().board(), &[0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0]);
    assert_eq!(g.root().captured, Some(MoverCaptured { mover: 25, opponent: 20 }));
    for bad in [
        "",
        "4-4-4-4-4-4-4-4-4-4-4-4-0-0",
        "4-4-4-4-4-4-4-4-4-4-4-4-0-0-X",
        "4-4-4-4-4-4-4-4-4-4-4-4-0-1-S",
        "4-4-4-4-4-4-4-4-4-4-4-4-0--S",
        "4-4-4-4-4-4-4-4-4-4-4-4-0-0-S-",
        "49-0-0-0-0-0-0-0-0-0-0-0-0-0-S",
        "x-4-4-4-4-4-4-4-4-4-4-4-0-0-S",
        "+4-4-4-4-4-4-4-4-4-4-4-4-0-0-S",
    ] {
        assert!(parse_fen(Ruleset::Awari, bad).is_err(), "{bad}");
    }
}

#[test]
fn moves_are_checked_and_refused_whole() {
    let g = parse_position(Ruleset::Awari, &["startpos", "moves", "FbDe"]).unwrap();
    let h = parse_position(Ruleset::Awari, &["startpos", "moves", "F", "b", "De"]).unwrap();
    assert_eq!(g.position(), h.position());
    assert_eq!(g.side(), Side::South);
    assert_eq!(g.history().len(), 4);
    let e = parse_position(Ruleset::Awari, &["startpos", "moves", "FF"]).unwrap_err();
    assert!(e.starts_with("illegal move 'F' at ply 2: North is to move"), "{e}");
    let e = parse_position(Ruleset::Awari, &["startpos", "moves", "Fbx"]).unwrap_err();
    assert!(e.contains("at ply 3"), "{e}");
    // An empty house.
    let e = parse_position(Ruleset::Awari, &["startpos", "moves", "FbF"]).unwrap_err();
    assert!(e.contains("empty"), "{e}");
    assert!(parse_position(Ruleset::Awari, &["startpos", "junk"]).is_err());
    assert!(parse_position(Ruleset::Awari, &[]).is_err());
}

/// A `position` line longer than any other command is read as it comes, in pieces of any
/// size, to the same game as when read whole; any other long line is skipped unread.
#[test]
fn long_position_lines_are_read_in_pieces() {
    let moves = "F b D e A f ";
    let mut text = format!("  position   startpos moves {moves}{}\nisready\n", " ".repeat(5_000));
    text.push_str(&format!("position fen 4-4-4-4-4-4-4-4-4-4-4-4-0-0-S moves {}Fb\n", " \t".repeat(3_000)));
    text.push_str(&format!("position startpos moves {}Fx\n", " ".repeat(5_000)));
    text.push_str(&format!("position fen {}\n", "1".repeat(5_000)));
    text.push_str(&format!("go {}\n", "1 ".repeat(5_000)));
    for capacity in [1, 7, 4096, 1 << 16] {
        let mut input = std::io::BufReader::with_capacity(capacity, text.as_bytes());
        let mut buf = Vec::new();
        let mut next = || read_input(&mut input, &mut buf, Ruleset::Awari).unwrap().unwrap();
        match next() {
            Input::Position(Ok(g)) => assert_eq!(g.position(), parse_position(Ruleset::Awari, &["startpos", "moves", "FbDeAf"]).unwrap().position()),
            _ => panic!("not a position"),
        }
        assert!(matches!(next(), Input::Line(Line::Text(t)) if t == b"isready"));
        assert!(matches!(next(), Input::Position(Ok(g)) if g.history().len() == 2));
        assert!(matches!(next(), Input::Position(Err(e)) if e.starts_with("illegal move 'x' at ply 2")));
        assert!(matches!(next(), Input::Position(Err(e)) if e.starts_with("bad fen '111") && e.contains("longer than 64 bytes")));
        assert!(matches!(next(), Input::Line(Line::TooLong { bytes: 10_003, .. })));
        assert!(read_input(&mut input, &mut buf, Ruleset::Awari).unwrap().is_none());
    }
}

#[test]
fn options_keep_spaces() {
    assert_eq!(option_parts("setoption name Dir value /tmp/my  db "), Some(("Dir".into(), Some("/tmp/my  db".into()))));
    assert_eq!(option_parts("setoption NAME Hash VALUE 16"), Some(("Hash".into(), Some("16".into()))));
    assert_eq!(option_parts("setoption name Clear Hash"), Some(("Clear Hash".into(), None)));
    assert_eq!(option_parts("setoption value 3"), None);
    assert_eq!(option_parts("setoption name"), None);
}

#[test]
fn clock_allocation() {
    let go = parse_go(&["wtime", "60000", "btime", "1000", "winc", "1000"]).0;
    assert_eq!(go.allocation(Side::South), Some(Duration::from_millis(3000 + 750)));
    assert_eq!(go.allocation(Side::North), Some(Duration::from_millis(50)));
    let go = parse_go(&["wtime", "9", "btime", "-20"]).0;
    assert_eq!(go.allocation(Side::South), Some(MIN_MOVE_TIME));
    assert_eq!(go.allocation(Side::North), Some(MIN_MOVE_TIME));
    let go = parse_go(&["wtime", "18446744073709551615", "winc", "18446744073709551615"]).0;
    assert_eq!(go.allocation(Side::South), Some(Duration::from_millis(u64::MAX / 3)));
    let go = parse_go(&["wtime", "3000", "winc", "3000", "movestogo", "1"]).0;
    assert_eq!(go.allocation(Side::South), Some(Duration::from_millis(1000)));
    assert_eq!(parse_go(&["depth", "3"]).0.allocation(Side::South), None);
    assert_eq!(parse_go(&[]).0.allocation(Side::South), Some(DEFAULT_MOVE_TIME));
}

/// Every irregular argument is read one way and said in a note; `go` always searches.
#[test]
fn irregular_go_arguments_are_read_and_said() {
    let cases: [(&[&str], &str); 15] = [
        (
            &["nodes", "99999999999999999999"],
            "go nodes '99999999999999999999' is too large: a node count is 1..=18446744073709551615; read as 18446744073709551615",
        ),
        (&["depth", "99999999999999999999"], "is too large: a depth is 1..=100; read as 100"),
        (&["wtime", "99999999999999999999"], "go wtime '99999999999999999999' is too large: a time in ms is 0..="),
        (&["depth", "101"], "go depth 101: a depth is 1..=100; read as 100"),
        (&["depth", "99999"], "read as 100"),
        (&["depth", "0"], "read as 1"),
        (&["nodes", "0"], "go nodes 0: a node count is 1..="),
        (&["nodes", "1e30"], "go nodes '1e30' is not a whole number of 0 or more: ignored"),
        (&["movetime", "-1"], "go movetime '-1' is not a whole number of 0 or more: ignored"),
        (&["movestogo", "-3"], "go movestogo '-3' is not a whole number of 0 or more: ignored"),
        (&["wtime", "-1000"], "go wtime -1000 is negative: read as no time left"),
        (&["mate", "3"], "go mate 3 ignored"),
        (&["searchmoves", "A", "B", "depth", "2"], "go searchmoves A B ignored"),
        (&["movetime"], "go movetime needs a number: ignored"),
        (&["sideways"], "go: unknown argument 'sideways' ignored"),
    ];
    for (args, said) in cases {
        let (_, notes) = parse_go(args);
        assert!(notes.iter().any(|n| n.contains(said)), "{args:?}: {notes:?}");
    }
    let (go, _) = parse_go(&["depth", "101"]);
    assert_eq!(go.depth, Some(100));
    let (go, _) = parse_go(&["searchmoves", "A", "B", "depth", "2"]);
    assert_eq!(go.depth, Some(2));
    let (go, _) = parse_go(&["nodes", "0"]);
    assert_eq!(go.nodes, Some(1));
    let (go, notes) = parse_go(&["nodes", "99999999999999999999", "depth", "99999999999999999999"]);
    assert_eq!((go.nodes, go.depth), (Some(u64::MAX), Some(100)));
    assert!(notes.iter().all(|n| !n.contains("not a whole number")), "{notes:?}");
    let (go, notes) = parse_go(&["depth", "3", "movetime", "600"]);
    assert!(notes.is_empty() && go.depth == Some(3) && go.movetime == Some(600));
}
