//! Progress reporting and cancellation: the small interface through which long computations
//! (solving, verifying, exporting) tell their caller how far they are, and learn that they
//! should stop. A leaf module: it depends on nothing else in the crate, so every layer of the
//! crate can take a `&dyn Progress` without depending on another.

/// Receives progress of a long computation, in work units the computation defines, and tells
/// it whether to stop.
///
/// Implementations must be cheap: `advance` and `cancelled` are called from worker threads
/// once per chunk of work (tens of thousands of positions), never per position.
pub trait Progress: Sync {
    /// A new phase starts (for display only).
    fn phase(&self, _name: &str) {}
    /// `units` more work units are done.
    fn advance(&self, _units: u64) {}
    /// Whether the computation should stop as soon as it can (the user pressed Ctrl-C, say).
    /// A computation that sees `true` returns [`Error::Interrupted`](crate::Error::Interrupted)
    /// without writing any result. Default: never.
    fn cancelled(&self) -> bool {
        false
    }
    /// Whether the computation should report its phases' figures for benchmarks ([`trace`](Self::trace):
    /// a layer's passes and seconds, the propagation's levels). Default: no. The program turns
    /// it on from its environment (`OWARE_TRACE=1`); the library reads none.
    fn tracing(&self) -> bool {
        false
    }
    /// One line of those figures, without its newline (called only while
    /// [`tracing`](Self::tracing)). Default: dropped.
    fn trace(&self, _line: &str) {}
}

/// A [`Progress`] that ignores everything and never cancels.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;
impl Progress for NoProgress {}
