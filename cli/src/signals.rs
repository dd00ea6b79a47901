//! Signals: Ctrl-C and SIGTERM, closed pipes, and bus errors.
//!
//! - `SIGINT`/`SIGTERM`: a command that can stop cleanly (build, verify, export) declares itself
//!   [`cooperative`]; the first signal then only sets a flag that its [`Progress`] reports as
//!   cancellation, and the command clears its progress bars, removes its temporary files, says
//!   "interrupted" and exits with 130. Any other command (or a second signal) ends at once with
//!   the message and 130: it has nothing to clean up.
//! - `SIGPIPE` is ignored, so a closed stdout is a write error the command handles (a build goes
//!   on; other commands stop quietly with 141).
//! - `SIGBUS` (reading a memory-mapped layer that another program truncated in place) ends the
//!   process with a message naming the cause and exit code 5 instead of a crash.
//!
//! [`Progress`]: oware::progress::Progress

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static COOPERATIVE: AtomicBool = AtomicBool::new(false);

/// Whether Ctrl-C (or SIGTERM) was received by a cooperative command.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Declares that the running command checks [`interrupted`] and stops cleanly.
pub fn cooperative() {
    COOPERATIVE.store(true, Ordering::SeqCst);
}

const INTERRUPT_MSG: &[u8] = b"\noware: interrupted\n";
const BUS_MSG: &[u8] = b"\noware: error: bus error reading a memory-mapped layer file: a layer file was \
truncated or overwritten in place while this program was reading it (layer files must not be modified \
while in use); check them with `oware verify`\n";

extern "C" fn on_interrupt(_sig: libc::c_int) {
    if COOPERATIVE.load(Ordering::SeqCst) && !INTERRUPTED.swap(true, Ordering::SeqCst) {
        return;
    }
    // SAFETY: write(2) and _exit(2) are async-signal-safe; the buffer is static.
    unsafe {
        libc::write(2, INTERRUPT_MSG.as_ptr().cast(), INTERRUPT_MSG.len());
        libc::_exit(130);
    }
}

extern "C" fn on_bus_error(_sig: libc::c_int) {
    // SAFETY: as above.
    unsafe {
        libc::write(2, BUS_MSG.as_ptr().cast(), BUS_MSG.len());
        libc::_exit(5);
    }
}

/// Installs the handlers. Call once, before any thread starts.
pub fn install() {
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
