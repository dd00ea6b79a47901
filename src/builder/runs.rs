//! The time a layer's build takes over every run that works on it.
//!
//! A layer stopped and resumed from its checkpoint is built by several runs of the program. Its
//! statistics (`layer-NN.json`) must count all of them: the plan takes the speed of the largest
//! finished layer for its time estimates, and a layer that seemed to take only its last run's
//! few minutes would make the next one look short enough to need no checkpoints. So each run
//! keeps the count of runs and the seconds they took in the layer's work directory, beside its
//! checkpoint, in a one-line text file: `runs seconds`, written when a run begins, at each of
//! its checkpoints and when it stops. A run killed outright (SIGKILL, a crash, a power cut)
//! thus counts the time up to its last checkpoint, which is the work the next run keeps; what
//! it did after that checkpoint is done again, and counted, by the run that resumes.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::stats::read_small;
use crate::error::Result;
use crate::storage::write_atomic;

/// The file's name in a layer's work directory.
pub(super) const RUNS_FILE: &str = "runs.txt";

/// A layer's clock over its runs: the runs before this one and the seconds they took, and when
/// this one began.
#[derive(Debug)]
pub(super) struct RunClock {
    /// The work directory's file, when the layer has one (a layer built without scratch files
    /// or checkpoints is built by one run).
    path: Option<PathBuf>,
    earlier_runs: u32,
    earlier_seconds: f64,
    start: Instant,
}

impl RunClock {
    /// Starts this run's clock for the layer whose work directory is `work` (if it has one),
    /// counting the runs recorded there before, and records at once that this run began (a run
    /// killed outright is then counted, with the time its last checkpoint recorded). A
    /// missing or unreadable record counts no earlier run; one that cannot be written is not an
    /// error (the figures are informational; the layer's bytes do not depend on them).
    ///
    /// Cost: one small file read and written.
    ///
    /// # Errors
    /// [`Error::NotAFile`](crate::Error::NotAFile) when something other than a regular file
    /// has the record's name (a FIFO, a device: never opened, never replaced).
    pub(super) fn start(work: Option<&Path>) -> Result<RunClock> {
        let path = work.map(|w| w.join(RUNS_FILE));
        let (earlier_runs, earlier_seconds) = match &path {
            Some(p) => read(p)?.unwrap_or((0, 0.0)),
            None => (0, 0.0),
        };
        let clock = RunClock { path, earlier_runs, earlier_seconds, start: Instant::now() };
        clock.record(0.0);
        Ok(clock)
    }

    /// The runs that worked on the layer, this one included.
    pub(super) fn runs(&self) -> u32 {
        self.earlier_runs.saturating_add(1)
    }

    /// Seconds the layer has taken so far: the earlier runs' and this run's.
    pub(super) fn seconds(&self) -> f64 {
        self.earlier_seconds + self.start.elapsed().as_secs_f64()
    }

    /// Records this run's time so far, for the run that resumes the layer: called after each
    /// checkpoint is saved and when the run stops before the layer is done.
    ///
    /// Cost: one small file written.
    pub(super) fn record_now(&self) {
        self.record(self.start.elapsed().as_secs_f64());
    }

    /// Removes the record once the layer is done.
    pub(super) fn finished(&self) {
        if let Some(p) = &self.path {
            let _ = std::fs::remove_file(p);
        }
    }

    /// Writes `runs seconds` with `this` seconds of this run, atomically ([`write_atomic`]: a
    /// run stopped while writing leaves the old record whole, no planted link is followed).
    fn record(&self, this: f64) {
        let Some(path) = &self.path else { return };
        let line = format!("{} {:.3}\n", self.runs(), self.earlier_seconds + this);
        let _ = write_atomic(path, line.as_bytes());
    }
}

/// The runs and seconds recorded in `path`, if it holds a well-formed record.
///
/// # Errors
/// As [`read_small`].
fn read(path: &Path) -> Result<Option<(u32, f64)>> {
    Ok(read_small(path)?.and_then(|bytes| parse(&bytes)))
}

/// The runs and seconds of a record's bytes, if well formed.
fn parse(bytes: &[u8]) -> Option<(u32, f64)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut words = text.split_whitespace();
    let runs: u32 = words.next()?.parse().ok()?;
    let seconds: f64 = words.next()?.parse().ok()?;
    (words.next().is_none() && seconds.is_finite() && seconds >= 0.0).then_some((runs, seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_their_seconds_add_up_over_stops_and_the_record_goes_when_done() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunClock::start(Some(dir.path())).unwrap();
        assert_eq!(first.runs(), 1);
        assert_eq!(read(&dir.path().join(RUNS_FILE)).unwrap(), Some((1, 0.0)), "a run is counted when it starts");
        std::thread::sleep(std::time::Duration::from_millis(30));
        first.record_now();
        let (runs, seconds) = read(&dir.path().join(RUNS_FILE)).unwrap().unwrap();
        assert_eq!(runs, 1);
        assert!(seconds >= 0.03, "{seconds}");
        // A second run killed outright: counted, its time not.
        let killed = RunClock::start(Some(dir.path())).unwrap();
        assert_eq!(killed.runs(), 2);
        drop(killed);
        let third = RunClock::start(Some(dir.path())).unwrap();
        assert_eq!(third.runs(), 3);
        assert!(third.seconds() >= seconds);
        assert!(third.seconds() < seconds + 5.0);
        third.finished();
        assert!(!dir.path().join(RUNS_FILE).exists());
        assert!(!dir.path().join("runs.tmp").exists());
    }

    #[test]
    fn a_layer_without_a_work_directory_is_one_run_and_writes_nothing() {
        let clock = RunClock::start(None).unwrap();
        assert_eq!(clock.runs(), 1);
        clock.record_now();
        clock.finished();
        assert!(clock.seconds() >= 0.0);
    }

    #[test]
    fn malformed_records_count_no_earlier_run() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(RUNS_FILE);
        for bad in ["", "2", "x 3.0", "2 -1", "2 NaN", "2 3.0 4", "4294967296 1.0", "2 inf"] {
            std::fs::write(&p, bad).unwrap();
            assert_eq!(read(&p).unwrap(), None, "{bad:?}");
            let clock = RunClock::start(Some(dir.path())).unwrap();
            assert_eq!(clock.runs(), 1, "{bad:?}");
        }
        std::fs::write(&p, "2 12.5\n").unwrap();
        assert_eq!(read(&p).unwrap(), Some((2, 12.5)));
    }

    /// A FIFO at the record's name is named, never opened (the open blocked for ever).
    #[test]
    fn a_fifo_at_the_record_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        crate::test_support::mkfifo(&dir.path().join(RUNS_FILE));
        let work = dir.path().to_path_buf();
        let got = crate::test_support::within("a run clock over a FIFO", move || RunClock::start(Some(&work)).map(|_| ()));
        assert!(matches!(got, Err(crate::Error::NotAFile { found: crate::error::FileKind::Fifo, .. })), "{got:?}");
    }
}
