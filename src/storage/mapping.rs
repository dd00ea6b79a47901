//! How the files of a database are read: opened as regular files only, memory-mapped, or read
//! with `pread` ([`ReadMode::Pread`]) whole into memory within a budget or piece by piece; their
//! headers checked; their payload checksums computed. Shared by the files of every kind
//! ([`super::layer`]).

use std::fs::{self, File, OpenOptions};
use std::path::Path;

use memmap2::Mmap;

use crate::error::{Damage, Error, FileKind, Result};
use crate::format::{Header, PAYLOAD_OFFSET};
use crate::rules::Ruleset;
use crate::sys::FileStamp;

/// Bytes of layers that [`ReadMode::Pread`] holds copied in memory in this process.
static COPIED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A copied layer's share of [`ReadMode::COPY_BUDGET`], given back when the layer is dropped.
pub(super) struct CopyGuard(u64);

impl CopyGuard {
    /// Takes `bytes` of the budget, or `None` when they do not fit in what is left.
    pub(super) fn reserve(bytes: u64) -> Option<CopyGuard> {
        use std::sync::atomic::Ordering::SeqCst;
        COPIED.fetch_update(SeqCst, SeqCst, |used| used.checked_add(bytes).filter(|&total| total <= ReadMode::COPY_BUDGET)).ok().map(|_| CopyGuard(bytes))
    }

    /// The bytes held.
    #[cfg(test)]
    fn bytes(&self) -> u64 {
        self.0
    }
}

impl Drop for CopyGuard {
    fn drop(&mut self) {
        COPIED.fetch_sub(self.0, std::sync::atomic::Ordering::SeqCst);
    }
}

/// How the values of a layer opened for probing are read ([`DatabaseDir::open_table`](super::DatabaseDir::open_table),
/// [`crate::probe::Database::read_mode`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReadMode {
    /// The file is memory-mapped and each value is one memory read (the default; the fastest).
    /// A file truncated in place by another program while mapped kills the process with
    /// `SIGBUS` when a removed page is read.
    #[default]
    Map,
    /// Each value is read from the file with one `pread` system call (about a microsecond when
    /// the file is cached, against tens of nanoseconds for a mapped read): a file truncated or
    /// rewritten under the reader gives an error or a value the identity check catches, never a
    /// crash. For long-running programs whose files another program may change (a server).
    /// Layers are instead read whole into memory when they are opened, as long as the copies fit
    /// in [`ReadMode::COPY_BUDGET`] (as safe: the copy is private; probes as fast as mapped ones;
    /// the memory is the layers' size). Forced-capture bounds and depths to capture are read the
    /// same way (copied within the same budget, else entry by entry). Packs are still read
    /// through a map.
    Pread,
}

impl ReadMode {
    /// The memory (one byte per value: 1 GiB, awari layers 0..23 with room to spare) in which
    /// [`ReadMode::Pread`] holds layers read whole when they are opened, in the order they are
    /// opened, in one process; a layer that does not fit in what is left is read value by value.
    /// A copy's share is given back when its layer is dropped (a database reopened after a file
    /// was replaced).
    pub const COPY_BUDGET: u64 = 1 << 30;
}

/// Reads exactly `buf.len()` bytes of `file` at `at`: a short file is [`Damage::Size`]
/// (`expected` the file's length when opened).
pub(super) fn read_exact_at(file: &File, path: &Path, buf: &mut [u8], at: u64, expected: u64) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        let mut done = 0;
        while done < buf.len() {
            match file.read_at(&mut buf[done..], at + done as u64) {
                Ok(0) => {
                    let found = file.metadata().map(|m| m.len()).unwrap_or(at + done as u64);
                    return Err(Error::corrupt(path, Damage::Size { expected, found }));
                }
                Ok(k) => done += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(path, e)),
            }
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        let _ = (file, buf, at, expected);
        Err(Error::Usage(format!("{}: reading with pread needs a Unix system", path.display())))
    }
}

/// Reads the first bytes of `file` into `buf` (as many as there are): the count read.
pub(super) fn read_prefix(file: &File, buf: &mut [u8]) -> usize {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_at(buf, 0).unwrap_or(0)
    }
    #[cfg(not(unix))]
    {
        let _ = (file, buf);
        0
    }
}

/// The error for `path` when it is a symbolic link whose target does not exist (a dangling
/// link, or one through a link loop's end), `None` when nothing is there. A path that names
/// nothing but whose directory entry exists is unreadable, never absent: the file it stands for
/// may be on a disk not mounted, or renamed away, and must not read as "not built".
///
/// Cost: one `lstat` (and one `readlink` for a link).
pub(crate) fn dangling_link(path: &Path) -> Option<Error> {
    let meta = fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_symlink() {
        return None;
    }
    let target = fs::read_link(path).map_or_else(|_| "?".to_string(), |t| t.display().to_string());
    Some(Error::io(
        path,
        std::io::Error::new(std::io::ErrorKind::NotFound, format!("a symbolic link to '{target}', which does not exist: the file cannot be read")),
    ))
}

/// How [`open_checked`] opens a regular file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// For reading; nothing there is the caller's error.
    Read,
    /// For reading and writing, created (mode 0644) when nothing is there, never through a
    /// symbolic link at its name: a lock, a partial file that outlives the process.
    Update,
    /// For appending, created as [`Access::Update`]: a scratch file written in pieces.
    Append,
}

/// Opens `path` for reading as a regular file: the one way this crate opens a file it did not
/// just create. Nothing but a regular file is ever opened: a FIFO would block the `open` itself
/// for ever (where no flag set by Ctrl-C or SIGTERM is ever looked at), a device may have
/// effects on being opened. The path's type is checked before the open (links followed), the
/// open is non-blocking (`O_NONBLOCK`, `O_NOCTTY`: should the entry be swapped for a FIFO
/// between the check and the open, it returns at once) and the type is checked again on the
/// open file. `missing` builds the error for a path with nothing there.
///
/// Cost: one `stat`, one `open`, one `fstat`.
///
/// # Errors
/// [`Error::NotAFile`] for a directory, FIFO, device, socket or anything else that is not a
/// regular file; `missing()` when nothing is there; [`Error::Io`] for a dangling link or when
/// it cannot be opened.
pub(crate) fn open_regular(path: &Path, missing: impl FnOnce() -> Error) -> Result<File> {
    open_checked(path, Access::Read, missing)
}

/// As [`open_regular`], for reading and writing a file that is created when absent (mode
/// 0644), never through a symbolic link at its name (the open fails): a lock file, a partial
/// file that outlives the process.
///
/// # Errors
/// [`Error::NotAFile`] when something other than a regular file has the name; [`Error::Io`]
/// for a link at the name or when it cannot be opened or created.
pub(crate) fn open_regular_rw(path: &Path) -> Result<File> {
    open_checked(path, Access::Update, || Error::io(path, std::io::ErrorKind::NotFound.into()))
}

/// As [`open_regular_rw`], for appending (a scratch file written in pieces).
///
/// # Errors
/// As [`open_regular_rw`].
pub(crate) fn open_regular_append(path: &Path) -> Result<File> {
    open_checked(path, Access::Append, || Error::io(path, std::io::ErrorKind::NotFound.into()))
}

fn open_checked(path: &Path, access: Access, missing: impl FnOnce() -> Error) -> Result<File> {
    let not_a_file = |found: FileKind| Error::NotAFile { path: path.into(), found, expected: FileKind::File };
    let creates = access != Access::Read;
    // A file this crate creates is never opened through a link: the open fails on one (below).
    let before = if creates { fs::symlink_metadata(path) } else { fs::metadata(path) };
    match before {
        Ok(m) if m.file_type().is_symlink() => {}
        Ok(m) => {
            let found = FileKind::of(m.file_type());
            if found != FileKind::File {
                return Err(not_a_file(found));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && creates => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(dangling_link(path).unwrap_or_else(missing)),
        Err(e) => return Err(Error::io(path, e)),
    }
    let mut options = OpenOptions::new();
    match access {
        Access::Read => options.read(true),
        Access::Update => options.read(true).write(true).create(true).truncate(false),
        Access::Append => options.append(true).create(true),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Should the entry be swapped for a FIFO or a device between the check and the open,
        // do not block (nor take a terminal as the controlling one).
        let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
        if creates {
            flags |= libc::O_NOFOLLOW;
            options.mode(0o644);
        }
        options.custom_flags(flags);
    }
    let file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !creates => return Err(dangling_link(path).unwrap_or_else(missing)),
        Err(e) => return Err(Error::io(path, e)),
    };
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    let found = FileKind::of(meta.file_type());
    if found != FileKind::File {
        return Err(not_a_file(found));
    }
    Ok(file)
}

/// Opens and maps `path` read-only (see [`open_regular`]).
pub(super) fn map_file(path: &Path, missing: impl FnOnce() -> Error) -> Result<(File, Mmap)> {
    let file = open_regular(path, missing)?;
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    if len == 0 {
        return Err(Error::corrupt(path, Damage::Empty));
    }
    // SAFETY: the map is read-only and this crate never writes to or truncates a finished layer
    // file; it replaces files by rename, which leaves existing maps valid. A file changed
    // underneath by another program is outside what this type can defend against (documented in
    // the module's contract; `Layer::check_unchanged` detects it between uses).
    let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    Ok((file, map))
}

/// Where the bytes of a layer's file are: a read-only map of it, a private copy read by
/// [`ReadMode::Pread`] (holding its share of the copy budget), or the file rebuilt in memory from
/// a compressed one.
pub(super) enum Bytes {
    Map(Mmap),
    Copied {
        bytes: Vec<u8>,
        _budget: CopyGuard,
    },
    /// Decoded from a pack (the native file's bytes rebuilt in memory) or a `scores.N.zst`.
    Decoded(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(map) => map,
            Bytes::Copied { bytes, .. } | Bytes::Decoded(bytes) => bytes,
        }
    }
}

impl Bytes {
    /// Gives the pages of `bytes[at..]`'s `range` back to the system when they are mapped (a
    /// copy is private memory: nothing to give back).
    pub(super) fn release(&self, at: usize, range: std::ops::Range<u64>) {
        if let Bytes::Map(map) = self {
            let b = &map[at..];
            // SAFETY: a read-only shared mapping of a file: dropping its pages loses nothing.
            unsafe { crate::sys::release_within(b.as_ptr(), b.len(), range) };
        }
    }
}

/// A layer's file read as [`ReadMode::Pread`] says: whole into memory when the copy
/// fits in what is left of [`ReadMode::COPY_BUDGET`], else left in the file (its stamp taken
/// when opened).
pub(super) enum SideFile {
    Copied(Bytes, FileStamp),
    InFile(FileStamp),
}

impl SideFile {
    /// Reads `file` (at `path`) as [`ReadMode::Pread`] says.
    ///
    /// Cost: one `fstat`; when the copy fits, one sequential read of the file and its size in
    /// memory.
    ///
    /// # Errors
    /// [`Error::Corrupt`] ([`Damage::Empty`]) for an empty file; as [`read_exact_at`].
    pub(super) fn read(file: &File, path: &Path) -> Result<SideFile> {
        let stamp = FileStamp::of(file, path)?;
        if stamp.len == 0 {
            return Err(Error::corrupt(path, Damage::Empty));
        }
        let Some(budget) = CopyGuard::reserve(stamp.len) else { return Ok(SideFile::InFile(stamp)) };
        let mut bytes = vec![0u8; stamp.len as usize];
        read_exact_at(file, path, &mut bytes, 0, stamp.len)?;
        Ok(SideFile::Copied(Bytes::Copied { bytes, _budget: budget }, stamp))
    }
}

/// The header of a file read with `pread` (as [`header_of`]).
pub(super) fn header_at(file: &File, path: &Path, len: u64, encoding: u32, rules: Ruleset, n: u32) -> Result<Header> {
    let mut head = vec![0u8; PAYLOAD_OFFSET.min(len) as usize];
    read_exact_at(file, path, &mut head, 0, len)?;
    header_of(&head, path, encoding, rules, n)
}

/// The checksum of `file`'s bytes from `offset` to `len` (its length when opened), read in
/// 1 MiB pieces.
pub(super) fn checksum_from(file: &File, path: &Path, offset: u64, len: u64) -> Result<u64> {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut at = offset;
    while at < len {
        let k = (len - at).min(buf.len() as u64) as usize;
        read_exact_at(file, path, &mut buf[..k], at, len)?;
        hasher.update(&buf[..k]);
        at += k as u64;
    }
    Ok(hasher.digest())
}

/// The checked header of a file of layer `n` of `rules` (values, bounds, depths): decoded, holding
/// `encoding`.
///
/// # Errors
/// [`Error::Corrupt`] for a bad header or another kind of payload; [`Error::RulesetMismatch`] /
/// [`Error::LayerMismatch`] for another ruleset's or layer's file.
pub(super) fn header_of(bytes: &[u8], path: &Path, encoding: u32, rules: Ruleset, n: u32) -> Result<Header> {
    let header = Header::decode(&bytes[..bytes.len().min(PAYLOAD_OFFSET as usize)], path)?;
    header.expect(encoding, path)?;
    if header.rules != rules {
        return Err(Error::RulesetMismatch { path: path.into(), found: header.rules, expected: rules });
    }
    if header.stones != n {
        return Err(Error::LayerMismatch { path: path.into(), found: header.stones, expected: n });
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing but a regular file is ever opened, for reading, updating or appending: a FIFO
    /// (or a link to one), a device, a socket or a directory is named and refused at once (a
    /// FIFO blocked the open of a build's lock, statistics or run record for ever).
    #[test]
    fn only_regular_files_are_opened_and_a_fifo_never_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        crate::test_support::mkfifo(&fifo);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        let socket = dir.path().join("socket");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let cases = [
            (fifo.clone(), FileKind::Fifo),
            (link.clone(), FileKind::Fifo),
            (socket, FileKind::Socket),
            (dir.path().to_path_buf(), FileKind::Directory),
            ("/dev/null".into(), FileKind::Device),
        ];
        for (path, kind) in cases {
            for access in [Access::Read, Access::Update, Access::Append] {
                let p = path.clone();
                let got = crate::test_support::within(&format!("{access:?} {}", path.display()), move || {
                    open_checked(&p, access, || Error::Internal("missing".into())).map(|_| ()).map_err(|e| e.to_string())
                });
                // A link is never followed by the opens that create (refused by the open itself).
                if access != Access::Read && path == link {
                    assert!(got.is_err(), "{access:?} {}", path.display());
                    continue;
                }
                let expected = format!("{} is {kind}, not a regular file", path.display());
                assert_eq!(got, Err(expected), "{access:?}");
            }
        }
        // The opens that create make a missing file (0644); reading one is the caller's error.
        let new = dir.path().join("new");
        assert!(matches!(open_regular(&new, || Error::Internal("missing".into())), Err(Error::Internal(_))));
        open_regular_rw(&new).unwrap();
        assert!(new.is_file());
        std::fs::remove_file(&new).unwrap();
        open_regular_append(&new).unwrap();
        assert!(new.is_file());
    }

    #[test]
    fn the_copy_budget_refuses_what_does_not_fit() {
        assert!(CopyGuard::reserve(ReadMode::COPY_BUDGET + 1).is_none());
        assert!(CopyGuard::reserve(u64::MAX).is_none());
        let one = CopyGuard::reserve(1).expect("one byte fits");
        assert_eq!(one.bytes(), 1);
    }
}
