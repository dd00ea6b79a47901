//! The lock of a ruleset's database directory for the length of a build.

use crate::error::{Error, Result};
use crate::storage::{open_regular_rw, DatabaseDir};

/// An exclusive lock on a ruleset's database directory for the length of a build, so two builds
/// never write the same files (released when dropped, or when the process dies).
pub struct BuildLock {
    _file: std::fs::File,
}

impl BuildLock {
    /// Takes the lock of `dir` (creating its directory).
    ///
    /// # Errors
    /// [`Error::Io`] when another process holds it or it cannot be created (a link at its
    /// name); [`Error::NotAFile`] when something other than a regular file has its name (a
    /// FIFO, a device: never opened).
    pub fn acquire(dir: &DatabaseDir) -> Result<BuildLock> {
        dir.create()?;
        let path = dir.layers_dir().join(".lock");
        // A regular file only (a FIFO there would block the open for ever), never through a
        // link planted at the lock's name.
        let file = open_regular_rw(&path)?;
        if crate::sys::lock_exclusive(&file).is_err() {
            return Err(Error::io(&path, std::io::Error::new(std::io::ErrorKind::WouldBlock, "another build is working on this directory")));
        }
        Ok(BuildLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::FileKind;
    use crate::Ruleset;

    /// A FIFO at the lock's name is named, never opened (the open for writing blocked for ever,
    /// deaf to SIGTERM); a regular file there is the lock as before.
    #[test]
    fn a_fifo_at_the_lock_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = DatabaseDir::native(tmp.path(), Ruleset::Awari).unwrap();
        dir.create().unwrap();
        let path = dir.layers_dir().join(".lock");
        crate::test_support::mkfifo(&path);
        let base = tmp.path().to_path_buf();
        let got = crate::test_support::within("taking a lock that is a FIFO", move || {
            BuildLock::acquire(&DatabaseDir::native(&base, Ruleset::Awari).unwrap()).map(|_| ())
        });
        assert!(matches!(&got, Err(Error::NotAFile { found: FileKind::Fifo, path: p, .. }) if *p == path), "{got:?}");
        std::fs::remove_file(&path).unwrap();
        let lock = BuildLock::acquire(&dir).unwrap();
        assert!(path.is_file());
        assert!(BuildLock::acquire(&dir).is_err(), "held");
        drop(lock);
    }
}
