//! The one way every command writes: results to stdout through [`Stdout`] (fallible: a full disk
//! or a closed pipe is an [`Error::Output`], never a panic), messages to stderr through
//! [`note`] (best effort: a message that cannot be written is dropped, never a panic). Durations
//! for people are written here too ([`human_duration`]); counts, sizes and layer lists come from
//! `oware::units`, whose forms the library's own messages and reports use.

use std::io::Write;

use oware::{Error, Result};
use serde::Serialize;

/// Version of the JSON documents the commands print (`schema_version` in each). Raised when a
/// field is removed or changes meaning; adding fields keeps it.
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// Standard output for results: every write is flushed at once (so a program reading our output
/// line by line gets each answer when it is ready) and every failure is an error.
pub(crate) struct Stdout {
    _private: (),
}

impl Stdout {
    /// Standard output (locked for each write, so it can be shared between threads).
    pub(crate) fn new() -> Stdout {
        Stdout { _private: () }
    }

    /// Writes `text` as is and flushes.
    ///
    /// # Errors
    /// [`Error::Output`] when stdout cannot be written (closed pipe, full disk).
    pub(crate) fn write(&mut self, text: &str) -> Result<()> {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|source| Error::Output { stream: "stdout", source })
    }

    /// Writes `line` and a newline.
    ///
    /// # Errors
    /// As [`write`](Self::write).
    pub(crate) fn line(&mut self, line: &str) -> Result<()> {
        let mut s = String::with_capacity(line.len() + 1);
        s.push_str(line);
        s.push('\n');
        self.write(&s)
    }

    /// Writes `value` as one line of JSON.
    ///
    /// # Errors
    /// As [`write`](Self::write); [`Error::Internal`] if the value cannot be serialised.
    pub(crate) fn json<T: Serialize>(&mut self, value: &T) -> Result<()> {
        let text = serde_json::to_string(value).map_err(|e| Error::Internal(format!("JSON output: {e}")))?;
        self.line(&text)
    }
}

/// Writes `oware: <msg>` on stderr. Best effort: when stderr cannot be written the message is
/// dropped (there is nowhere left to report it), and the exit code still tells the outcome.
pub(crate) fn note(msg: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "oware: {msg}");
}

/// A duration for people: `12 s`, `4.5 min`, `3.2 h`, `2.1 days`, `3.4 years` (estimates and
/// timings of `build` and `perft`; the library's messages give no durations).
pub(crate) fn human_duration(seconds: f64) -> String {
    let s = seconds.max(0.0);
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.1} min", s / 60.0)
    } else if s < 172_800.0 {
        format!("{:.1} h", s / 3600.0)
    } else if s < 3.15e7 {
        format!("{:.1} days", s / 86_400.0)
    } else {
        format!("{:.1} years", s / 3.15e7)
    }
}

/// Whether an error is stdout's reader having gone away (`oware stats | head`).
pub(crate) fn is_closed_pipe(e: &Error) -> bool {
    matches!(e, Error::Output { stream: "stdout", source } if source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// An error, for programs: the library's `{"code", "kind", "message"}` object.
pub(crate) use oware::error::ErrorDoc;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(human_duration(12.0), "12 s");
        assert_eq!(human_duration(270.0), "4.5 min");
        assert_eq!(human_duration(3.0 * 86_400.0), "3.0 days");
        assert_eq!(human_duration(6.3e7), "2.0 years");
    }
}
