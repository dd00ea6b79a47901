//! The lock of a ruleset's database directory for the length of a build.

use crate::error::{Error, Result};
use crate::storage::DatabaseDir;

/// An exclusive lock on a ruleset's database directory for the length of a build, so two builds
/// never write the same files (released when dropped, or when the process dies).
pub struct BuildLock {
    _file: std::fs::File,
}

impl BuildLock {
    /// Takes the lock of `dir` (creating its directory).
    ///
    /// # Errors
    /// [`Error::Io`] when another process holds it or it cannot be created.
    pub fn acquire(dir: &DatabaseDir) -> Result<BuildLock> {
        dir.create()?;
        let path = dir.layers_dir().join(".lock");
        let mut options = std::fs::OpenOptions::new();
        options.create(true).truncate(false).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // Never follow a link planted at the lock's name.
            options.custom_flags(libc::O_NOFOLLOW);
        }
        let file = options.open(&path).map_err(|e| Error::io(&path, e))?;
        if crate::sys::lock_exclusive(&file).is_err() {
            return Err(Error::io(&path, std::io::Error::new(std::io::ErrorKind::WouldBlock, "another build is working on this directory")));
        }
        Ok(BuildLock { _file: file })
    }
}
