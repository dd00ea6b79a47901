//! Scratch files of the out-of-core builder: the solver's state on disk, the message buckets
//! between parts of a layer, and checkpoints inside a layer.
//!
//! Everything here lives in a work directory the build pipeline chooses and removes when the
//! layer is done. The state file is memory-mapped shared and the pages of a part are given back
//! to the system ([`ScratchState::release`]) when the solver moves on, so the process's
//! resident memory holds one part at a time; the file system's cache does the rest.
//!
//! Checkpoint files carry a header (magic, version, ruleset, layer, progress) and a checksum of
//! the header and of the payload: a damaged, truncated or foreign checkpoint is never trusted.

use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU8;
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::format::checksum;
use crate::sys::{open_regular, open_regular_append};
use crate::sys::{release_within, reserve_written};

mod codec;

/// Creates a new file (never following a link at its name), replacing an old one.
pub(crate) fn create_file(path: &Path) -> Result<File> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => return Err(Error::io(path, std::io::Error::other("is a directory"))),
        Ok(_) => fs::remove_file(path).map_err(|e| Error::io(path, e))?,
        Err(_) => {}
    }
    let mut options = OpenOptions::new();
    options.read(true).write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW).mode(0o644);
    }
    options.open(path).map_err(|e| Error::io(path, e))
}

/// Name of the scratch state file in a work directory.
pub(crate) const STATE_FILE: &str = "state.bin";

/// The name the build gives a layer's checkpoint in its work directory.
pub(crate) const CHECKPOINT_FILE: &str = "checkpoint.bin";

/// Whether anything but a directory is at `path` (a file, a link, even a dangling one, a
/// FIFO): what the build takes for a checkpoint left by an earlier run, which
/// [`Checkpoint::load`] then uses or discards with its reason. A directory there is passed
/// over, as before (a checkpoint saved over it fails, naming it).
///
/// Cost: one `lstat`.
pub(crate) fn something_at(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| !m.is_dir())
}

/// The solver's state of a whole layer in a file: one byte per position, memory-mapped shared.
pub(crate) struct ScratchState {
    map: memmap2::MmapMut,
}

impl ScratchState {
    /// Creates (or replaces) the state file `path` for `positions` positions, zeroed, with its
    /// disk space reserved and written.
    ///
    /// Cost: a sequential write of one byte per position.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be created or the disk cannot hold it.
    pub(crate) fn create(path: &Path, positions: u64) -> Result<ScratchState> {
        let file = create_file(path)?;
        // Written with zeros, not only reserved: the page faults of the solve cost less
        // (`sys::write_zeros`).
        reserve_written(&file, positions.max(1)).map_err(|e| Error::io(path, e))?;
        // SAFETY: the file was just created by us under the build's lock; nothing else writes or
        // truncates it while the map lives.
        let map = unsafe { memmap2::MmapMut::map_mut(&file) }.map_err(|e| Error::io(path, e))?;
        Ok(ScratchState { map })
    }

    /// The state cells, one per position.
    pub(crate) fn cells(&self) -> &[AtomicU8] {
        // SAFETY: any byte is a valid AtomicU8; all access during the solve goes through this
        // atomic view.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().cast::<AtomicU8>(), self.map.len()) }
    }

    /// Gives the pages of cells `range` back to the system (they stay in the file).
    pub(crate) fn release(&self, range: Range<u64>) {
        let bytes = range;
        // SAFETY: a shared mapping of our own file: dropping pages loses nothing.
        unsafe { release_within(self.map.as_ptr(), self.map.len(), bytes) };
    }
}

/// Message buckets between the parts of a layer: one file per part (appended to, then read and
/// emptied when the part is processed), with a bounded in-memory buffer in front of each.
///
/// A message is a `u64`: a position's global index, and bit 63 for "a child was lost". The
/// files hold them in sorted blocks of differences, one or two bytes a message where they are
/// dense (`codec`); the order in which a bucket gives them back is not the order they were sent.
pub(crate) struct Inboxes {
    dir: PathBuf,
    /// The files' names begin with it.
    prefix: &'static str,
    /// Per part: buffered messages, and how many are in the file.
    parts: Vec<Mutex<(Vec<u64>, u64)>>,
    /// Messages buffered per part before they are written to its file.
    buffer: usize,
}

/// Whether `name` is one of the scratch files this module writes in a work directory: the
/// state, a bucket of messages or of seed lists (being written or being read) or a
/// checkpoint's temporary.
fn is_scratch_name(name: &str) -> bool {
    name == STATE_FILE
        || ((name.starts_with("inbox-") || name.starts_with("lists-")) && (name.ends_with(".bin") || name.ends_with(".reading")))
        || ((name.starts_with(".checkpoint.") || name.starts_with(".runs.txt.")) && name.ends_with(".tmp"))
}

/// Removes what an interrupted solve left in `dir` that a new solve must not read: the state,
/// message buckets (whatever the number of parts then), checkpoint temporaries and those of the
/// run record (`runs.txt`, written at every checkpoint, so a kill may land in its write). The
/// checkpoint itself, anything not named like this module's scratch files, and anything that is
/// not a regular file are left alone. Returns the paths removed.
///
/// Cost: one directory listing.
///
/// # Errors
/// [`Error::Io`] when `dir` cannot be listed or a stale file cannot be removed (a missing `dir`
/// is not an error).
pub(crate) fn remove_stale(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut removed = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_file && entry.file_name().to_str().is_some_and(is_scratch_name) {
            let path = entry.path();
            fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
            removed.push(path);
        }
    }
    removed.sort();
    Ok(removed)
}

impl Inboxes {
    /// Buckets for `parts` parts in `dir`, buffering up to `buffer_bytes` in memory in all.
    ///
    /// # Errors
    /// [`Error::Io`] when old bucket files cannot be removed.
    pub(crate) fn new(dir: &Path, parts: usize, buffer_bytes: u64) -> Result<Inboxes> {
        Inboxes::named(dir, "inbox", parts, buffer_bytes)
    }

    /// Like [`Inboxes::new`], with files named `{prefix}-NNNNN.bin` (`prefix` is `inbox` or
    /// `lists`, the names [`remove_stale`] knows).
    ///
    /// # Errors
    /// [`Error::Io`] when old bucket files cannot be removed.
    pub(crate) fn named(dir: &Path, prefix: &'static str, parts: usize, buffer_bytes: u64) -> Result<Inboxes> {
        debug_assert!(is_scratch_name(&format!("{prefix}-00000.bin")));
        let inboxes = Inboxes {
            dir: dir.into(),
            prefix,
            parts: (0..parts).map(|_| Mutex::new((Vec::new(), 0))).collect(),
            buffer: ((buffer_bytes / 8 / parts.max(1) as u64) as usize).max(1024),
        };
        for p in 0..parts {
            for path in [inboxes.path(p), inboxes.reading(p)] {
                if fs::symlink_metadata(&path).is_ok() {
                    fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
                }
            }
        }
        Ok(inboxes)
    }

    fn path(&self, part: usize) -> PathBuf {
        self.dir.join(format!("{}-{part:05}.bin", self.prefix))
    }

    /// Where a taken bucket is read from.
    fn reading(&self, part: usize) -> PathBuf {
        self.dir.join(format!("{}-{part:05}.reading", self.prefix))
    }

    /// Adds `messages` to part `part`'s bucket.
    ///
    /// # Errors
    /// [`Error::Io`] when the bucket file cannot be written (a full disk included).
    pub(crate) fn send(&self, part: usize, messages: &[u64]) -> Result<()> {
        let mut guard = self.parts[part].lock().unwrap_or_else(|e| e.into_inner());
        if guard.0.len() + messages.len() > self.buffer {
            // The buffer never grows past its size: what would not fit goes to the file with
            // it, each a sorted block.
            let path = self.path(part);
            let mut extra = messages.to_vec();
            let written = append(&path, &mut [&mut guard.0[..], &mut extra[..]]);
            guard.1 += (guard.0.len() + messages.len()) as u64;
            guard.0.clear();
            written?;
        } else {
            if guard.0.capacity() == 0 {
                guard.0.reserve_exact(self.buffer);
            }
            guard.0.extend_from_slice(messages);
        }
        Ok(())
    }

    /// Whether part `part` has messages waiting.
    pub(crate) fn pending(&self, part: usize) -> bool {
        let guard = self.parts[part].lock().unwrap_or_else(|e| e.into_inner());
        !guard.0.is_empty() || guard.1 > 0
    }

    /// Whether any part has messages waiting.
    pub(crate) fn any_pending(&self) -> bool {
        (0..self.parts.len()).any(|p| self.pending(p))
    }

    /// Takes every message waiting for part `part`, calling `f` on blocks of at most
    /// `block` messages; the bucket is empty afterwards. Messages sent to this part while `f`
    /// runs are kept for the next call.
    ///
    /// # Errors
    /// [`Error::Io`] when the bucket file cannot be read or removed; `f`'s errors.
    pub(crate) fn drain(&self, part: usize, block: usize, mut f: impl FnMut(&[u64]) -> Result<()>) -> Result<u64> {
        let mut bucket = self.take(part)?;
        let count = bucket.len();
        let mut words = Vec::new();
        while !bucket.is_empty() {
            bucket.next(block, &mut words)?;
            f(&words)?;
        }
        bucket.close()?;
        Ok(count)
    }

    /// Takes every message waiting for part `part` as a [`Bucket`] to read in blocks; the part's
    /// bucket is empty afterwards, and messages sent to it from now on wait for the next take.
    ///
    /// # Errors
    /// [`Error::Io`] when the bucket file cannot be taken (renamed) or opened.
    pub(crate) fn take(&self, part: usize) -> Result<Bucket> {
        let taken = self.reading(part);
        let (buffered, in_file) = {
            // The file is renamed under the lock, so its length and the count agree.
            let mut guard = self.parts[part].lock().unwrap_or_else(|e| e.into_inner());
            if guard.1 > 0 {
                let path = self.path(part);
                fs::rename(&path, &taken).map_err(|e| Error::io(&path, e))?;
            }
            let buffered = std::mem::take(&mut guard.0);
            let n = std::mem::replace(&mut guard.1, 0);
            (buffered, n)
        };
        let file = if in_file > 0 {
            let f = open_regular(&taken, || Error::io(&taken, std::io::ErrorKind::NotFound.into()))?;
            Some(codec::Reader::new(BufReader::with_capacity(1 << 20, f)))
        } else {
            None
        };
        Ok(Bucket { file, path: taken, in_file, buffered, at: 0 })
    }
}

/// The messages taken from one bucket ([`Inboxes::take`]): those that were in its file, then
/// those that were buffered. The file is removed when the bucket is closed or dropped.
pub(crate) struct Bucket {
    file: Option<codec::Reader<BufReader<File>>>,
    path: PathBuf,
    /// Messages left in the file.
    in_file: u64,
    buffered: Vec<u64>,
    /// Buffered messages already read.
    at: usize,
}

impl Bucket {
    /// Messages left.
    pub(crate) fn len(&self) -> u64 {
        self.in_file + (self.buffered.len() - self.at) as u64
    }

    /// Whether every message has been read.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Replaces `out` with the next `max` messages (fewer at the end).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read.
    pub(crate) fn next(&mut self, max: usize, out: &mut Vec<u64>) -> Result<()> {
        out.clear();
        let max = max.max(1);
        if self.in_file > 0 {
            let k = self.in_file.min(max as u64) as usize;
            if let Some(f) = self.file.as_mut() {
                out.reserve(k);
                for _ in 0..k {
                    out.push(f.next().map_err(|e| Error::io(&self.path, e))?);
                }
            }
            self.in_file -= k as u64;
            if self.in_file == 0 {
                self.close()?;
            }
        } else {
            let k = (self.buffered.len() - self.at).min(max);
            out.extend_from_slice(&self.buffered[self.at..self.at + k]);
            self.at += k;
        }
        Ok(())
    }

    /// Removes the file (whatever is left unread in it is dropped).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be removed.
    pub(crate) fn close(&mut self) -> Result<()> {
        if self.file.take().is_some() {
            self.in_file = 0;
            fs::remove_file(&self.path).map_err(|e| Error::io(&self.path, e))?;
        }
        Ok(())
    }
}

impl Drop for Bucket {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Appends each of `blocks` to the bucket file `path` as a block (they are left sorted,
/// holding keys).
fn append(path: &Path, blocks: &mut [&mut [u64]]) -> Result<()> {
    // Never a FIFO or device planted at the name (an open for writing would block for ever).
    let file = open_regular_append(path)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    for block in blocks.iter_mut() {
        codec::write_block(&mut w, block).map_err(|e| Error::io(path, e))?;
    }
    w.flush().map_err(|e| Error::io(path, e))
}

/// How far the solve of a layer had got when a checkpoint was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Progress {
    /// The exits pass is done for positions `0..exits_done`.
    pub(crate) exits_done: u64,
    /// Thresholds `n, n-1, ..., next_threshold + 1` are done (`n` when none is).
    pub(crate) next_threshold: u32,
}

const CKPT_MAGIC: [u8; 8] = *b"OWARECKP";
/// Version 3: the state (a byte of cell per position, then, unless they are kept elsewhere, a
/// byte of best exit per position) compressed in one zstd stream, with the hash of the best
/// exits kept elsewhere in the header. (Version 1: a two-byte state; version 2: cells and exits
/// uncompressed.)
const CKPT_VERSION: u32 = 3;
const CKPT_HEADER: usize = 80;
/// Offset of the payload (the compressed state) in a checkpoint file.
pub(crate) const CKPT_PAYLOAD: u64 = 4096;
const BLOCK: usize = 8 << 20;
/// zstd's level for checkpoints: the fastest, as a save stops the solve.
const CKPT_LEVEL: i32 = 1;

/// A layer's checkpoint file.
pub(crate) struct Checkpoint {
    path: PathBuf,
    ruleset: u32,
    layer: u32,
    positions: u64,
}

/// Why a checkpoint file was not used.
#[derive(Debug)]
pub(crate) enum Unusable {
    /// There is none.
    Absent,
    /// It is there but damaged, truncated or of another layer (the reason).
    Discarded(String),
}

/// What a checkpoint holds besides its progress: how many bytes of state (`payload`), and the
/// hash of the best exits when they are kept outside it (0 when they are in the payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Contents {
    /// Bytes of state (uncompressed).
    pub(crate) payload: u64,
    /// [`exits_hash`] of the best exits kept outside the checkpoint (0: none kept outside).
    pub(crate) exits_hash: u64,
}

/// The hash of best exits kept outside a checkpoint (in the output file the layer is written
/// to), recorded in the checkpoint so that a resumed solve never trusts exits that changed.
pub(crate) fn exits_hash(exits: &[u8]) -> u64 {
    // Never 0, which says "none kept outside".
    xxhash_rust::xxh3::xxh3_64(exits) | 1
}

impl Checkpoint {
    /// The checkpoint of layer `layer` (`positions` positions) of ruleset id `ruleset` at `path`.
    pub(crate) fn new(path: PathBuf, ruleset: u32, layer: u32, positions: u64) -> Checkpoint {
        Checkpoint { path, ruleset, layer, positions }
    }

    /// The file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn header(&self, at: Progress, contents: Contents, sum: u64) -> [u8; CKPT_HEADER] {
        let mut h = [0u8; CKPT_HEADER];
        h[0..8].copy_from_slice(&CKPT_MAGIC);
        h[8..12].copy_from_slice(&CKPT_VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&self.ruleset.to_le_bytes());
        h[16..20].copy_from_slice(&self.layer.to_le_bytes());
        h[20..24].copy_from_slice(&at.next_threshold.to_le_bytes());
        h[24..32].copy_from_slice(&self.positions.to_le_bytes());
        h[32..40].copy_from_slice(&at.exits_done.to_le_bytes());
        h[40..48].copy_from_slice(&sum.to_le_bytes());
        h[48..56].copy_from_slice(&contents.exits_hash.to_le_bytes());
        h[56..64].copy_from_slice(&contents.payload.to_le_bytes());
        let hc = checksum(&h[..72]);
        h[72..80].copy_from_slice(&hc.to_le_bytes());
        h
    }

    /// Saves the solver's state (`contents.payload` bytes, read through `read(offset, buf)` in
    /// blocks) as the checkpoint at progress `at`, compressed, atomically: a crash leaves the
    /// previous checkpoint intact. When the disk cannot hold both, the previous one is removed
    /// first and the save tried again (`note` says so): a crash during that save leaves none.
    ///
    /// Cost: one sequential pass over the state (read, hash, compress, write) and an `fsync`.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written (the old checkpoint is then untouched,
    /// unless the disk was full).
    pub(crate) fn save(&self, at: Progress, contents: Contents, read: &dyn Fn(u64, &mut [u8]), note: &dyn Fn(&str)) -> Result<()> {
        match self.save_once(at, contents, read) {
            Err(Error::Io { source, .. }) if source.raw_os_error() == Some(libc::ENOSPC) && self.path.exists() => {
                note(&format!("the disk cannot hold two checkpoints of layer {}: the previous one is replaced in place", self.layer));
                self.remove()?;
                self.save_once(at, contents, read)
            }
            other => other,
        }
    }

    fn save_once(&self, at: Progress, contents: Contents, read: &dyn Fn(u64, &mut [u8])) -> Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let tmp = tempfile::Builder::new().prefix(".checkpoint.").suffix(".tmp").tempfile_in(dir).map_err(|e| Error::io(dir, e))?;
        let len = contents.payload;
        let mut file = tmp.as_file();
        file.write_all(&[0u8; CKPT_PAYLOAD as usize]).map_err(|e| Error::io(tmp.path(), e))?;
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        {
            let sink = std::io::BufWriter::with_capacity(1 << 20, file);
            let mut z = zstd::stream::write::Encoder::new(sink, CKPT_LEVEL).map_err(|e| Error::io(tmp.path(), e))?;
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
            if threads > 1 {
                // (Without zstd's multithreading built in, the stream is compressed on one thread.)
                let _ = z.multithread(threads);
            }
            let mut buf = vec![0u8; BLOCK];
            let mut off = 0u64;
            while off < len {
                let k = (len - off).min(BLOCK as u64) as usize;
                read(off, &mut buf[..k]);
                hasher.update(&buf[..k]);
                z.write_all(&buf[..k]).map_err(|e| Error::io(tmp.path(), e))?;
                off += k as u64;
            }
            let mut sink = z.finish().map_err(|e| Error::io(tmp.path(), e))?;
            sink.flush().map_err(|e| Error::io(tmp.path(), e))?;
        }
        use std::io::{Seek, SeekFrom};
        file.seek(SeekFrom::Start(0)).map_err(|e| Error::io(tmp.path(), e))?;
        file.write_all(&self.header(at, contents, hasher.digest())).map_err(|e| Error::io(tmp.path(), e))?;
        file.sync_all().map_err(|e| Error::io(tmp.path(), e))?;
        tmp.persist(&self.path).map_err(|e| Error::io(&self.path, e.error))?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Loads the checkpoint: checks its header, asks `accept` whether its contents suit the
    /// solve (`Err(reason)` discards it), checks its payload checksum, then hands the state to
    /// `write(offset, bytes)` in blocks. Returns how far it had got.
    ///
    /// Cost: two sequential reads and decompressions of the file.
    ///
    /// # Errors
    /// [`Unusable::Absent`] when there is none; [`Unusable::Discarded`] (with the reason) when
    /// it is damaged, truncated, of another ruleset or layer, unreadable, not a regular file (a
    /// FIFO, a device, a directory, or a link to one: never opened) or not accepted.
    /// `write` is only called once the whole file has been checked.
    pub(crate) fn load(
        &self,
        accept: &dyn Fn(Progress, Contents) -> std::result::Result<(), String>,
        write: &mut dyn FnMut(u64, &[u8]),
    ) -> std::result::Result<Progress, Unusable> {
        // A FIFO (or a link to one) is never opened: it would block the open for ever.
        let mut file = match open_regular(&self.path, || Error::Internal(String::new())) {
            Ok(f) => f,
            Err(Error::Internal(_)) => return Err(Unusable::Absent),
            Err(Error::NotAFile { .. }) => return Err(Unusable::Discarded("not a regular file".into())),
            Err(Error::Io { source, .. }) => return Err(Unusable::Discarded(format!("cannot read it: {source}"))),
            Err(e) => return Err(Unusable::Discarded(format!("cannot read it: {e}"))),
        };
        let bad = |why: &str| Unusable::Discarded(why.to_string());
        let mut h = [0u8; CKPT_HEADER];
        file.read_exact(&mut h).map_err(|_| bad("truncated header"))?;
        if h[0..8] != CKPT_MAGIC {
            return Err(bad("not a checkpoint file"));
        }
        let u32_at = |a: usize| u32::from_le_bytes(h[a..a + 4].try_into().unwrap());
        let u64_at = |a: usize| u64::from_le_bytes(h[a..a + 8].try_into().unwrap());
        // The checksum first: a flipped byte in the version field is damage, not a version.
        if u64_at(72) != checksum(&h[..72]) {
            return Err(bad(if u32_at(8) == CKPT_VERSION {
                "header checksum mismatch"
            } else {
                "header checksum mismatch (damaged, or of another format version)"
            }));
        }
        if u32_at(8) != CKPT_VERSION {
            return Err(Unusable::Discarded(format!("checkpoint format version {} (this program writes {CKPT_VERSION})", u32_at(8))));
        }
        if u32_at(12) != self.ruleset || u32_at(16) != self.layer || u64_at(24) != self.positions {
            return Err(bad("it belongs to another ruleset or layer"));
        }
        let at = Progress { next_threshold: u32_at(20), exits_done: u64_at(32) };
        if at.next_threshold > self.layer || at.exits_done > self.positions {
            return Err(bad("impossible progress in its header"));
        }
        let contents = Contents { payload: u64_at(56), exits_hash: u64_at(48) };
        let expected = if contents.exits_hash == 0 { 2 * self.positions } else { self.positions };
        if contents.payload != expected {
            return Err(Unusable::Discarded(format!("{} bytes of state, expected {expected}", contents.payload)));
        }
        accept(at, contents).map_err(Unusable::Discarded)?;
        let len = contents.payload;
        let mut buf = vec![0u8; BLOCK];
        for pass in 0..2 {
            use std::io::{Seek, SeekFrom};
            file.seek(SeekFrom::Start(CKPT_PAYLOAD)).map_err(|e| Unusable::Discarded(e.to_string()))?;
            let mut z = zstd::stream::read::Decoder::new(&file).map_err(|e| Unusable::Discarded(e.to_string()))?;
            let mut hasher = xxhash_rust::xxh3::Xxh3::new();
            let mut off = 0u64;
            while off < len {
                let k = (len - off).min(BLOCK as u64) as usize;
                z.read_exact(&mut buf[..k]).map_err(|e| Unusable::Discarded(format!("damaged state: {e}")))?;
                if pass == 0 {
                    hasher.update(&buf[..k]);
                } else {
                    write(off, &buf[..k]);
                }
                off += k as u64;
            }
            if pass == 0 {
                // Nothing may follow the state.
                if z.read(&mut buf[..1]).map_or(true, |extra| extra != 0) {
                    return Err(bad("damaged state: data after its end"));
                }
                if hasher.digest() != u64_at(40) {
                    return Err(bad("payload checksum mismatch"));
                }
            }
        }
        Ok(at)
    }

    /// Removes the checkpoint, if any.
    ///
    /// # Errors
    /// [`Error::Io`] when it exists and cannot be removed.
    pub(crate) fn remove(&self) -> Result<()> {
        match fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(&self.path, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn scratch_state_starts_zeroed_and_keeps_what_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(STATE_FILE);
        // A file of more than one 2 MiB piece of zeros, ending in a partial one; an old file
        // of the same name is replaced, its contents gone.
        fs::write(&path, vec![0xAB_u8; 1 << 20]).unwrap();
        let positions = 3_000_001;
        let state = ScratchState::create(&path, positions).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().len(), positions);
        let cells = state.cells();
        assert_eq!(cells.len() as u64, positions);
        assert!(cells.iter().all(|c| c.load(Relaxed) == 0));
        let marked = [0, 2_097_151, 2_097_152, 3_000_000];
        for k in marked {
            cells[k].store(0x80 | (k % 127) as u8, Relaxed);
        }
        state.release(0..positions);
        for k in marked {
            assert_eq!(cells[k].load(Relaxed), 0x80 | (k % 127) as u8, "cell {k} after its pages were given back");
        }
        assert_eq!(cells.iter().filter(|c| c.load(Relaxed) != 0).count(), 4);
        drop(state);
        let bytes = fs::read(&path).unwrap();
        assert_eq!(bytes[2_097_152], 0x80 | (2_097_152 % 127) as u8);
    }

    #[test]
    fn remove_stale_takes_only_scratch_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for name in [
            "state.bin",
            "inbox-00000.bin",
            "inbox-00070.reading",
            "lists-00240.bin",
            ".checkpoint.AbC12.tmp",
            ".runs.txt.Xy12Zw.tmp",
            "checkpoint.bin",
            "notes.txt",
            "inbox-1.txt",
        ] {
            fs::write(d.join(name), b"x").unwrap();
        }
        fs::create_dir(d.join("inbox-00001.bin")).unwrap();
        let removed = remove_stale(d).unwrap();
        let names: Vec<_> = removed.iter().map(|p| p.file_name().unwrap().to_str().unwrap().to_string()).collect();
        assert_eq!(names, [".checkpoint.AbC12.tmp", ".runs.txt.Xy12Zw.tmp", "inbox-00000.bin", "inbox-00070.reading", "lists-00240.bin", "state.bin"]);
        for kept in ["checkpoint.bin", "notes.txt", "inbox-1.txt", "inbox-00001.bin"] {
            assert!(d.join(kept).exists(), "{kept} kept");
        }
        assert!(remove_stale(&d.join("absent")).unwrap().is_empty());
    }

    #[test]
    fn checkpoints_round_trip_and_damage_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let c = Checkpoint::new(dir.path().join("c"), 0, 9, 10_000);
        let any = |_: Progress, _: Contents| Ok(());
        assert!(matches!(c.load(&any, &mut |_, _| {}), Err(Unusable::Absent)));
        let at = Progress { exits_done: 10_000, next_threshold: 4 };
        let both = Contents { payload: 20_000, exits_hash: 0 };
        let read = |off: u64, buf: &mut [u8]| buf.copy_from_slice(&data[off as usize..off as usize + buf.len()]);
        c.save(at, both, &read, &|_| {}).unwrap();
        let mut back = vec![0u8; data.len()];
        let got = c.load(&any, &mut |off, b| back[off as usize..off as usize + b.len()].copy_from_slice(b)).unwrap();
        assert_eq!(got, at);
        assert_eq!(back, data);
        // Compressed: the state repeats every 251 bytes.
        assert!(fs::metadata(c.path()).unwrap().len() < CKPT_PAYLOAD + 2_000);
        // The cells alone, with the hash of exits kept elsewhere: handed to `accept`, which
        // may refuse them.
        let cells = Contents { payload: 10_000, exits_hash: exits_hash(&data[10_000..]) };
        c.save(at, cells, &read, &|_| {}).unwrap();
        let seen = std::cell::Cell::new(None);
        c.load(
            &|p, k| {
                seen.set(Some((p, k)));
                Ok(())
            },
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(seen.get(), Some((at, cells)));
        let mut called = false;
        match c.load(&|_, _| Err("exits changed".into()), &mut |_, _| called = true) {
            Err(Unusable::Discarded(why)) => assert_eq!(why, "exits changed"),
            other => panic!("{other:?}"),
        }
        assert!(!called);
        // A payload length that does not match where the exits are.
        c.save(at, Contents { payload: 10_000, exits_hash: 0 }, &read, &|_| {}).unwrap();
        assert!(matches!(c.load(&any, &mut |_, _| {}), Err(Unusable::Discarded(_))));
        c.save(at, both, &read, &|_| {}).unwrap();
        // Another layer's expectations.
        let other = Checkpoint::new(dir.path().join("c"), 0, 10, 10_000);
        assert!(matches!(other.load(&any, &mut |_, _| {}), Err(Unusable::Discarded(_))));
        // Flipped payload bytes: the stream or its checksum says so.
        let good = fs::read(c.path()).unwrap();
        for at in [CKPT_PAYLOAD as usize + 5, good.len() / 2, good.len() - 3] {
            let mut bytes = good.clone();
            bytes[at] ^= 1;
            fs::write(c.path(), &bytes).unwrap();
            // A flip in the stream's framing that changes nothing it holds may pass; anything
            // handed over is the state saved.
            let mut back = vec![0u8; data.len()];
            let mut called = false;
            match c.load(&any, &mut |off, b| {
                called = true;
                back[off as usize..off as usize + b.len()].copy_from_slice(b);
            }) {
                Err(Unusable::Discarded(why)) => {
                    assert!(why.contains("payload checksum") || why.contains("damaged"), "{why}");
                    assert!(!called, "a damaged checkpoint must not be handed over");
                }
                Ok(_) => assert_eq!(back, data, "byte {at}"),
                Err(Unusable::Absent) => panic!("byte {at}: absent"),
            }
        }
        // Issue 67, item 6: a flipped byte in the version field is damage (the checksum is read
        // first), not "format version 16711683"; another version with a good checksum says
        // which.
        for (byte, flip) in [(10usize, 0xffu8), (8, 1)] {
            let mut bytes = good.clone();
            bytes[byte] ^= flip;
            fs::write(c.path(), &bytes).unwrap();
            match c.load(&any, &mut |_, _| {}) {
                Err(Unusable::Discarded(why)) => assert!(why.starts_with("header checksum mismatch") && !why.contains("version 1"), "{why}"),
                other => panic!("{other:?}"),
            }
            let sum = checksum(&bytes[..72]).to_le_bytes();
            bytes[72..80].copy_from_slice(&sum);
            fs::write(c.path(), &bytes).unwrap();
            let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
            match c.load(&any, &mut |_, _| {}) {
                Err(Unusable::Discarded(why)) => assert_eq!(why, format!("checkpoint format version {version} (this program writes {CKPT_VERSION})")),
                other => panic!("{other:?}"),
            }
        }
        // Truncated.
        fs::write(c.path(), &good[..100]).unwrap();
        assert!(matches!(c.load(&any, &mut |_, _| {}), Err(Unusable::Discarded(_))));
        fs::write(c.path(), &good[..good.len() - 10]).unwrap();
        assert!(matches!(c.load(&any, &mut |_, _| {}), Err(Unusable::Discarded(_))));
    }

    /// A FIFO, or a link to one, at a checkpoint's name is discarded with its reason, as every
    /// other damaged checkpoint is, never opened (the open blocked for ever) nor passed over in
    /// silence; a dangling link there counts as something left too.
    #[test]
    fn a_fifo_at_a_checkpoint_is_discarded_as_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        crate::test_support::mkfifo(&fifo);
        let at_link = dir.path().join("link");
        std::os::unix::fs::symlink(&fifo, &at_link).unwrap();
        for path in [fifo.clone(), at_link] {
            assert!(something_at(&path));
            let why = crate::test_support::within("loading a FIFO as a checkpoint", move || {
                let c = Checkpoint::new(path, 0, 9, 10_000);
                match c.load(&|_, _| Ok(()), &mut |_, _| panic!("nothing to hand over")) {
                    Err(Unusable::Discarded(why)) => why,
                    other => panic!("{other:?}"),
                }
            });
            assert_eq!(why, "not a regular file");
        }
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nothing"), &dangling).unwrap();
        assert!(something_at(&dangling) && !something_at(&dir.path().join("nothing")) && !something_at(dir.path()));
        let c = Checkpoint::new(dangling, 0, 9, 10_000);
        assert!(matches!(c.load(&|_, _| Ok(()), &mut |_, _| {}), Err(Unusable::Discarded(why)) if why.contains("does not exist")));
    }

    /// A FIFO planted at a message bucket's name is refused, never opened for writing (which
    /// blocks until a reader comes).
    #[test]
    fn a_fifo_at_a_bucket_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("bucket");
        crate::test_support::mkfifo(&fifo);
        let got = crate::test_support::within("appending to a FIFO", move || append(&fifo, &mut [&mut [1u64, 2, 3][..]]).map_err(|e| e.to_string()));
        assert!(got.unwrap_err().contains("is a FIFO (named pipe), not a regular file"));
    }

    #[test]
    fn inboxes_keep_every_message_once() {
        let dir = tempfile::tempdir().unwrap();
        let inboxes = Inboxes::new(dir.path(), 3, 8 * 3 * 1024).unwrap();
        let msgs: Vec<u64> = (0..10_000).collect();
        for c in msgs.chunks(333) {
            inboxes.send(1, c).unwrap();
            // The buffer in front of the file never grows past its size.
            let guard = inboxes.parts[1].lock().unwrap();
            assert!(guard.0.len() <= inboxes.buffer && guard.0.capacity() <= inboxes.buffer, "{} / {}", guard.0.capacity(), inboxes.buffer);
        }
        assert!(inboxes.pending(1) && !inboxes.pending(0));
        let mut got = Vec::new();
        let n = inboxes.drain(1, 777, |b| {
            got.extend_from_slice(b);
            Ok(())
        });
        assert_eq!(n.unwrap(), 10_000);
        got.sort_unstable();
        assert_eq!(got, msgs);
        assert!(!inboxes.any_pending());
    }
}
