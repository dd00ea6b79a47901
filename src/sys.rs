//! What talks to the operating system: memory figures (`/proc`), free disk (`statvfs`),
//! giving mapped pages back and asking for huge pages (`madvise`), prefetching, reserving disk (`posix_fallocate`) and the exclusive
//! lock of a directory (`flock`), and the one way the crate opens a file it did not just create
//! (`open_regular` and its twins: never a FIFO or a device, never blocking; below the storage and
//! the solver, which both open their files through it). Everything else in the crate reaches the system through the
//! standard library and memmap2 (with `libc` flags such as `O_NOFOLLOW` given to `OpenOptions`).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{Damage, Error, FileKind, Result};

/// Resident memory of the process beyond its data structures (code, thread stacks, buffers),
/// which the out-of-core builder (and `oware pack`) keep apart from `--max-memory`.
pub(crate) const FIXED_OVERHEAD: u64 = 64 << 20;

/// Creates the scratch directory `work` (and its parents) if needed.
///
/// # Errors
/// [`Error::NotAFile`] when something other than a directory is there (a file, a FIFO, a link:
/// never followed); [`Error::Io`] when it cannot be created.
pub(crate) fn create_work_dir(work: &Path) -> Result<()> {
    let made = std::fs::create_dir_all(work);
    match std::fs::symlink_metadata(work) {
        Ok(meta) if !meta.is_dir() => {
            let found = crate::error::FileKind::of(meta.file_type());
            Err(Error::NotAFile { path: work.into(), found, expected: FileKind::Directory })
        }
        Ok(_) => Ok(()),
        Err(e) => Err(Error::io(work, made.err().unwrap_or(e))),
    }
}

/// Memory the system reports available (`MemAvailable` of `/proc/meminfo`), if known.
pub(crate) fn memory_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Peak resident memory of this process so far (`VmHWM` of `/proc/self/status`), if known.
pub(crate) fn peak_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Gives the memory the allocator holds free back to the system (glibc keeps freed memory of
/// its heap, so a layer's peak would carry the earlier layers' leftovers).
pub(crate) fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator's own arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Anonymous resident memory of this process now (`RssAnon` of `/proc/self/status`): its own
/// allocations, without the pages of mapped files.
pub(crate) fn anonymous_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with("RssAnon:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The peak of this process's anonymous resident memory (`RssAnon`: its own allocations) while
/// it lives, sampled every 20 ms by a thread of its own (Linux keeps no peak of it; `VmHWM`
/// counts the pages of mapped files too). A peak shorter than the interval may be missed.
pub struct AnonymousPeak {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    peak: std::sync::Arc<std::sync::atomic::AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl AnonymousPeak {
    /// Starts sampling (`None` where the figure is not available).
    pub fn start() -> Option<AnonymousPeak> {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
        let first = anonymous_memory()?;
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let peak = std::sync::Arc::new(AtomicU64::new(first));
        let (s, p) = (stop.clone(), peak.clone());
        let thread = std::thread::Builder::new()
            .name("anon-peak".into())
            .spawn(move || {
                while !s.load(Relaxed) {
                    if let Some(now) = anonymous_memory() {
                        p.fetch_max(now, Relaxed);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            })
            .ok()?;
        Some(AnonymousPeak { stop, peak, thread: Some(thread) })
    }

    /// The largest figure sampled so far (a last sample taken now included).
    pub fn peak(&self) -> u64 {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(now) = anonymous_memory() {
            self.peak.fetch_max(now, Relaxed);
        }
        self.peak.load(Relaxed)
    }
}

impl Drop for AnonymousPeak {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Whether two paths (or their nearest existing ancestors) are on one file system.
pub(crate) fn same_file_system(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let dev = |p: &Path| p.ancestors().find_map(|q| std::fs::metadata(q).ok()).map(|m| m.dev());
        dev(a) == dev(b)
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        true
    }
}

/// Free bytes on the file system holding `path` (or its nearest existing ancestor), if known,
/// at most `cap` when given (the build's [`disk_free_cap`](crate::builder::BuildConfig::disk_free_cap),
/// for tests of the plan's disk checks).
pub(crate) fn disk_free(path: &Path, cap: Option<u64>) -> Option<u64> {
    let real = disk_free_real(path);
    match cap {
        Some(cap) => Some(real.map_or(cap, |r| r.min(cap))),
        None => real,
    }
}

fn disk_free_real(path: &Path) -> Option<u64> {
    let mut p = path.to_path_buf();
    loop {
        if p.exists() {
            break;
        }
        if !p.pop() {
            p = PathBuf::from(".");
            break;
        }
        if p.as_os_str().is_empty() {
            p = PathBuf::from(".");
            break;
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).ok()?;
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: a plain system call with a valid C string and a zeroed out-struct.
        if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
            return None;
        }
        Some(s.f_bavail as u64 * s.f_frsize as u64)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// [`release_pages`] of the bytes `range` (clamped to `0..len`) of the mapping of `len` bytes at
/// `ptr`.
///
/// # Safety
/// As [`release_pages`], for the whole `len` bytes at `ptr`.
pub(crate) unsafe fn release_within(ptr: *const u8, len: usize, range: Range<u64>) {
    let end = usize::try_from(range.end).unwrap_or(usize::MAX).min(len);
    let start = usize::try_from(range.start).unwrap_or(usize::MAX).min(end);
    // SAFETY: `start..end` lies inside the caller's mapping.
    unsafe { release_pages(ptr.add(start), end - start) };
}

/// Gives the pages of `bytes` (a part of a shared file mapping) back to the system: they leave
/// the process's resident memory and are read again from the file (or its cache) on next use.
/// Only whole pages inside `bytes` are released.
///
/// # Safety
/// `bytes` must lie inside a `MAP_SHARED` mapping of a file (or a read-only file mapping),
/// where dropping pages loses nothing; on private or anonymous memory it would zero the data.
pub(crate) unsafe fn release_pages(ptr: *const u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = (ptr as usize).div_ceil(PAGE) * PAGE;
        let end = (ptr as usize + len) / PAGE * PAGE;
        if end > start {
            // SAFETY: the caller guarantees a shared file mapping; a failure only leaves the
            // pages resident.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}

/// Reserves `len` bytes of disk for `file` so later writes through a map cannot hit a full disk
/// (which would kill the process with SIGBUS instead of returning an error).
pub(crate) fn reserve(file: &File, len: u64) -> std::io::Result<()> {
    if !allocate(file, len)? {
        // No fallocate on this file system: allocate by writing zeros.
        write_zeros(file, len)?;
    }
    Ok(())
}

/// Like [`reserve`], and the bytes are written with zeros as well ([`write_zeros`]; once only
/// where the file system has no `fallocate`).
pub(crate) fn reserve_written(file: &File, len: u64) -> std::io::Result<()> {
    // Reserved first where the file system can, so that a full disk fails at once.
    allocate(file, len)?;
    write_zeros(file, len)
}

/// `fallocate`s `len` bytes of `file`: false when the file system (or the system) cannot.
fn allocate(file: &File, len: u64) -> std::io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: a plain system call on a file descriptor we own.
        let r = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
        if r == 0 {
            return Ok(true);
        }
        if r != libc::EOPNOTSUPP && r != libc::EINVAL {
            return Err(std::io::Error::from_raw_os_error(r));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, len);
    Ok(false)
}

/// Writes `len` zero bytes at the start of `file`, in pieces of 2 MiB (the size of the page
/// cache's largest folios on x86-64, which the pieces then fill whole).
///
/// The out-of-core state file is written this way before it is mapped. On ext4, blocks only
/// reserved by `fallocate` (unwritten extents) are zeroed in the page cache by the page faults
/// that first write to them, piece by piece; zeros written beforehand in large pieces cost
/// less (layer 24 out of core: about 3 s of 72 s, `docs/performance-history.md`).
///
/// # Errors
/// The write's I/O error (a full disk among them).
fn write_zeros(file: &File, len: u64) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom};
    const PIECE: u64 = 2 << 20;
    let zeros = vec![0u8; PIECE.min(len) as usize];
    let mut f = file;
    f.seek(SeekFrom::Start(0))?;
    let mut left = len;
    while left > 0 {
        let k = left.min(PIECE) as usize;
        f.write_all(&zeros[..k])?;
        left -= k as u64;
    }
    f.flush()
}

/// Takes an exclusive lock on `file` without waiting (`flock`); it is released when the file is
/// closed, or when the process dies.
///
/// # Errors
/// [`std::io::ErrorKind::WouldBlock`] when another process holds it; other I/O errors as the
/// system reports them.
pub(crate) fn lock_exclusive(file: &File) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: a plain system call on a file descriptor the caller owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(if e.raw_os_error() == Some(libc::EWOULDBLOCK) { std::io::Error::from(std::io::ErrorKind::WouldBlock) } else { e });
        }
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

/// What a file was when it was opened: its length, modification time and identity (device and
/// inode). A file truncated, extended or rewritten in place changes length or modification
/// time; a file replaced by rename leaves the open one as it was but its path names another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileStamp {
    pub(crate) len: u64,
    modified: Option<SystemTime>,
    id: (u64, u64),
}

impl FileStamp {
    fn from_meta(m: &std::fs::Metadata) -> FileStamp {
        #[cfg(unix)]
        let id = {
            use std::os::unix::fs::MetadataExt;
            (m.dev(), m.ino())
        };
        #[cfg(not(unix))]
        let id = (0, 0);
        FileStamp { len: m.len(), modified: m.modified().ok(), id }
    }

    /// The stamp of the open `file` (at `path`, for the error).
    ///
    /// # Errors
    /// [`Error::Io`] when `fstat` fails.
    pub(crate) fn of(file: &File, path: &Path) -> Result<FileStamp> {
        Ok(FileStamp::from_meta(&file.metadata().map_err(|e| Error::io(path, e))?))
    }

    /// Checks that the open `file` still has this stamp's length and modification time.
    ///
    /// Cost: one `fstat`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] with [`Damage::ChangedWhileOpen`]; [`Error::Io`] when `fstat` fails.
    pub(crate) fn check(&self, file: &File, path: &Path) -> Result<()> {
        let now = FileStamp::of(file, path)?;
        if now.len != self.len || now.modified != self.modified {
            return Err(Error::corrupt(path, Damage::ChangedWhileOpen { opened: self.len, now: now.len }));
        }
        Ok(())
    }

    /// Whether `path` no longer names the file this stamp was taken of (it was replaced by
    /// rename, or removed).
    ///
    /// Cost: one `stat`.
    pub(crate) fn replaced(&self, path: &Path) -> bool {
        match std::fs::metadata(path) {
            Ok(m) => FileStamp::from_meta(&m).id != self.id,
            Err(_) => true,
        }
    }
}

/// Takes an exclusive lock on `file` (`flock`), waiting while another process holds it: it tries
/// without blocking every 20 ms, so that `cancelled` (checked between tries) can stop the wait.
/// Returns `Ok(false)` when `cancelled` said to stop before the lock was taken.
///
/// # Errors
/// The I/O errors of `flock` other than the lock being held.
pub(crate) fn lock_exclusive_waiting(file: &File, cancelled: &dyn Fn() -> bool) -> std::io::Result<bool> {
    loop {
        match lock_exclusive(file) {
            Ok(()) => return Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if cancelled() {
                    return Ok(false);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Zeroed anonymous memory, in transparent huge pages where the system allows: the solver's
/// cells and the search's table are accessed at random, and 2 MB pages cut the TLB misses that
/// would otherwise dominate.
pub(crate) fn huge_zeroed(len: usize) -> std::io::Result<memmap2::MmapMut> {
    let map = memmap2::MmapMut::map_anon(len.max(1))?;
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    Ok(map)
}

/// Asks the CPU to start loading the cache line of `r`.
#[inline(always)]
pub(crate) fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint with no effect on memory; any address is allowed.
    unsafe {
        core::arch::x86_64::_mm_prefetch(r as *const T as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
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
}
