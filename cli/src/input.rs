//! Reading input with a bound on what is held: a line of at most [`MAX_LINE`] bytes (a longer
//! one is skipped, never stored), for `query`'s batch mode, `play`'s prompt and the engine
//! command's commands; and reads that go on after a signal interrupts them, for every reader
//! of standard input and records.

use std::io::BufRead;

/// Longest input line read, in bytes (a position needs at most a few dozen, an engine command
/// as much; a longer line is skipped).
pub(crate) const MAX_LINE: usize = 4096;

/// One input line, read with a bound on its length.
pub(crate) enum Line {
    /// The line's text (without the newline), at most [`MAX_LINE`] bytes.
    Text(Vec<u8>),
    /// The line was longer than [`MAX_LINE`] bytes (it was skipped, not stored): its length and
    /// its first non-blank byte (so a long comment or blank line is still skipped).
    TooLong { bytes: u64, first: Option<u8> },
}

/// `input`'s next bytes, read again when a signal interrupted the read (empty at the end).
///
/// # Errors
/// Any other read error.
pub(crate) fn fill_buf(input: &mut impl BufRead) -> std::io::Result<&[u8]> {
    while let Err(e) = input.fill_buf() {
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    input.fill_buf()
}

/// Reads the next line of `input` in the pieces its buffer holds, handing each piece (without
/// the newline) to `part`, and never holding the line itself. The line's length in bytes, or
/// `None` at the end of the input. The one chunked line reader of [`read_bounded`] and of the
/// engine command's input (which streams a long `position` command instead of skipping it).
///
/// # Errors
/// Any read error but an interruption by a signal.
pub(crate) fn read_line_parts(input: &mut impl BufRead, mut part: impl FnMut(&[u8])) -> std::io::Result<Option<u64>> {
    let mut len: u64 = 0;
    let mut any = false;
    loop {
        let chunk = fill_buf(input)?;
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (piece, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        len += piece.len() as u64;
        part(piece);
        let used = done.unwrap_or(chunk.len());
        input.consume(used);
        if done.is_some() {
            break;
        }
    }
    Ok(any.then_some(len))
}

/// Reads the next line into `buf` without ever holding more than [`MAX_LINE`] bytes of it.
/// `None` at the end of the input.
pub(crate) fn read_bounded(input: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Option<Line>> {
    buf.clear();
    let mut first: Option<u8> = None;
    let read = read_line_parts(input, |part| {
        if first.is_none() {
            first = part.iter().copied().find(|b| !b.is_ascii_whitespace());
        }
        if buf.len() <= MAX_LINE {
            let room = MAX_LINE + 1 - buf.len();
            buf.extend_from_slice(&part[..part.len().min(room)]);
        }
    })?;
    let Some(len) = read else {
        return Ok(None);
    };
    Ok(Some(if buf.len() > MAX_LINE { Line::TooLong { bytes: len, first } } else { Line::Text(std::mem::take(buf)) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> Vec<String> {
        let mut r = std::io::BufReader::with_capacity(7, input);
        let mut buf = Vec::new();
        let mut got = Vec::new();
        while let Some(l) = read_bounded(&mut r, &mut buf).unwrap() {
            got.push(match l {
                Line::Text(t) => String::from_utf8(t).unwrap(),
                Line::TooLong { bytes, .. } => format!("<{bytes}>"),
            });
        }
        got
    }

    #[test]
    fn lines_are_bounded() {
        assert_eq!(lines(b"a\nbc\n\nd"), vec!["a", "bc", "", "d"]);
        let mut big = vec![b'1'; MAX_LINE + 10];
        big.extend_from_slice(b"\nok\n");
        assert_eq!(lines(&big), vec![format!("<{}>", MAX_LINE + 10), "ok".to_string()]);
        let mut skipped = format!("#{}\n", "c".repeat(MAX_LINE + 5)).into_bytes();
        skipped.extend_from_slice(format!("{}\nx\n", " ".repeat(MAX_LINE + 5)).as_bytes());
        let got = lines(&skipped);
        assert_eq!(got.len(), 3);
        let exact = vec![b'2'; MAX_LINE];
        assert_eq!(lines(&exact), vec!["2".repeat(MAX_LINE)]);
    }
}
