//! The engine command's standard output: one whole line per message, from the reader and the
//! search thread alike.

use std::io::Write;
use std::sync::Mutex;

use oware::Error;

use crate::errors::report;

/// Standard output shared by the reader and the search thread: one whole line per message.
#[derive(Default)]
pub(crate) struct Out {
    lock: Mutex<()>,
}

impl Out {
    /// Writes `line` and a newline, flushed. A failure ends the process: 141 for a closed pipe
    /// (quietly), else the exit code of [`Error::Output`] after the message.
    pub(crate) fn send(&self, line: &str) {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = std::io::stdout().lock();
        // One line, whatever a message quotes (a directory's name may hold a newline).
        let mut text: String = line.chars().map(|c| if c == '\n' || c == '\r' { ' ' } else { c }).collect();
        text.push('\n');
        if let Err(source) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            std::process::exit(report(&Error::Output { stream: "stdout", source }));
        }
    }

    /// `info string MSG`.
    pub(crate) fn info(&self, msg: &str) {
        self.send(&format!("info string {msg}"));
    }
}
