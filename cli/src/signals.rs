//! Signals: Ctrl-C and SIGTERM, closed pipes, and bus errors.
//!
//! - `SIGINT`/`SIGTERM`: a command that can stop cleanly (build, verify, export, pack, serve)
//!   declares itself [`cooperative`]; the first signal then only sets a flag that its
//!   [`Progress`] reports as cancellation, and the command clears its progress bars, removes its
//!   temporary files, says "interrupted" and exits with 130. Any other command (or a second
//!   signal) ends at once with the message and 130: it has nothing to clean up. A cooperative
//!   command that is still running [`STOP_GRACE`] after the first signal (`serve`: its
//!   `--shutdown-timeout` and that) is ended by a watchdog thread as a second signal would end
//!   it: whatever it was doing where the flag is not looked at (a layer being packed, a system
//!   call that blocks), the signal ends it. No file the program opens can block it: it opens
//!   regular files only, without blocking (the library's `open_regular`), never a FIFO.
//! - `SIGPIPE` is ignored, so a closed stdout is a write error the command handles (a build goes
//!   on; other commands stop quietly with 141).
//! - `SIGBUS` (reading a memory-mapped layer that another program truncated in place) ends the
//!   process with a message naming the cause and exit code 5 instead of a crash. While `oware
//!   engine` searches, it first answers the `go` on stdout (an `info string` naming the cause and
//!   `bestmove` with the best move so far, [`answer_on_bus_error`]): a GUI waits for one.
//!
//! [`Progress`]: oware::progress::Progress

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};
use std::time::Duration;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static COOPERATIVE: AtomicBool = AtomicBool::new(false);
/// The write end of the pipe that wakes the watchdog of a cooperative command (-1: none).
static WAKE: AtomicI32 = AtomicI32::new(-1);

/// How long a cooperative command may take to stop after the first Ctrl-C or SIGTERM before the
/// watchdog ends it (a clean stop takes some milliseconds: the solver and every scan look at the
/// flag many times a second).
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(2);

/// Whether Ctrl-C (or SIGTERM) was received by a cooperative command.
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Declares that the running command checks [`interrupted`] and stops cleanly, within
/// [`STOP_GRACE`] of the first signal.
pub(crate) fn cooperative() {
    cooperative_within(STOP_GRACE);
}

/// As [`cooperative`], for a command that may take `grace` to stop (`serve` finishing the
/// requests in progress): the watchdog ends it once `grace` has passed after the first signal.
pub(crate) fn cooperative_within(grace: Duration) {
    start_watchdog(grace);
    COOPERATIVE.store(true, Ordering::SeqCst);
}

/// Starts the thread that ends the process `grace` after the first signal of a cooperative
/// command, woken through a pipe (writing to one is async-signal-safe). Once per process;
/// without a pipe or a thread, the command goes on with the flag alone.
fn start_watchdog(grace: Duration) {
    if WAKE.load(Ordering::SeqCst) >= 0 {
        return;
    }
    let mut fds = [-1 as libc::c_int; 2];
    // SAFETY: pipe(2) fills the two descriptors of the array it is given.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return;
    }
    let [read_end, write_end] = fds;
    for fd in fds {
        // SAFETY: fcntl(2) on a descriptor just made: not passed on to another program.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    let message = format!(
        "\noware: interrupted: still running {} s after the signal, ended at once (nothing complete is damaged; a build resumes from its checkpoint)\n",
        grace.as_secs_f64()
    );
    let watchdog = std::thread::Builder::new().name("signal watchdog".into()).spawn(move || {
        let mut byte = 0u8;
        loop {
            // SAFETY: a read of one byte into a local from the pipe's read end, which this
            // thread owns.
            let k = unsafe { libc::read(read_end, std::ptr::addr_of_mut!(byte).cast(), 1) };
            if k == 1 {
                break;
            }
            if k < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        std::thread::sleep(grace);
        // SAFETY: write(2) of a buffer this thread owns, then _exit(2), as a second signal does.
        unsafe {
            libc::write(2, message.as_ptr().cast(), message.len());
            libc::_exit(130);
        }
    });
    if watchdog.is_ok() {
        WAKE.store(write_end, Ordering::SeqCst);
    } else {
        // SAFETY: closing the descriptors just made, which nothing else holds.
        unsafe {
            libc::close(read_end);
            libc::close(write_end);
        }
    }
}

const INTERRUPT_MSG: &[u8] = b"\noware: interrupted\n";
const BUS_MSG: &[u8] = b"\noware: error: bus error reading a memory-mapped layer file: a layer file was \
truncated or overwritten in place while this program was reading it (layer files must not be modified \
while in use); check them with `oware verify`\n";

extern "C" fn on_interrupt(_sig: libc::c_int) {
    if COOPERATIVE.load(Ordering::SeqCst) && !INTERRUPTED.swap(true, Ordering::SeqCst) {
        let wake = WAKE.load(Ordering::SeqCst);
        if wake >= 0 {
            // SAFETY: write(2) is async-signal-safe; the byte is static.
            unsafe { libc::write(wake, b"!".as_ptr().cast(), 1) };
        }
        return;
    }
    // SAFETY: write(2) and _exit(2) are async-signal-safe; the buffer is static.
    unsafe {
        libc::write(2, INTERRUPT_MSG.as_ptr().cast(), INTERRUPT_MSG.len());
        libc::_exit(130);
    }
}

/// The house (an ASCII letter) of the `bestmove` that `oware engine` owes while it searches, or
/// [`NO_MOVE`] for `bestmove 0000`; 0 when no `go` waits for its answer.
static BUS_ANSWER: AtomicU8 = AtomicU8::new(0);
const NO_MOVE: u8 = b'0';
const BUS_INFO: &[u8] = b"info string error: bus error reading a memory-mapped layer file: a layer file was truncated or \
overwritten in place while the engine searched (layer files must not be modified while in use); the engine ends (exit 5)\nbestmove ";

/// `oware engine`: a search is under way and owes `bestmove house` (`None`: it has no move yet,
/// `bestmove 0000`); a bus error then answers it before the process ends. `clear_bus_answer`
/// when the answer has been sent.
pub(crate) fn answer_on_bus_error(house: Option<u8>) {
    BUS_ANSWER.store(house.unwrap_or(NO_MOVE), Ordering::SeqCst);
}

/// `oware engine`: no `go` waits for an answer.
pub(crate) fn clear_bus_answer() {
    BUS_ANSWER.store(0, Ordering::SeqCst);
}

extern "C" fn on_bus_error(_sig: libc::c_int) {
    let answer = BUS_ANSWER.swap(0, Ordering::SeqCst);
    // SAFETY: as above (write(2) with static buffers or one on the stack).
    unsafe {
        if answer != 0 {
            libc::write(1, BUS_INFO.as_ptr().cast(), BUS_INFO.len());
            let tail: [u8; 5] = if answer == NO_MOVE { *b"0000\n" } else { [answer, b'\n', 0, 0, 0] };
            let len = if answer == NO_MOVE { 5 } else { 2 };
            libc::write(1, tail.as_ptr().cast(), len);
        }
        libc::write(2, BUS_MSG.as_ptr().cast(), BUS_MSG.len());
        libc::_exit(5);
    }
}

/// Installs the handlers. Call once, before any thread starts.
pub(crate) fn install() {
    // SAFETY: installing handlers that only touch atomics and call async-signal-safe functions,
    // before other threads exist.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        let handler: extern "C" fn(libc::c_int) = on_interrupt;
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
        let bus: extern "C" fn(libc::c_int) = on_bus_error;
        libc::signal(libc::SIGBUS, bus as libc::sighandler_t);
    }
}
