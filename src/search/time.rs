//! Time management, all of it: how long a move gets from a game's clock ([`TimeControl`]), and
//! whether a timed search begins another iteration (`starts_iteration`, with `NEXT_ITERATION_SHARE`).
//!
//! The rules are simple ones that hold up in play against other engines (`docs/engine.md`):
//! a fixed time when one is given; else a share of the clock, a twentieth of what is left (or
//! of `moves_to_go` when fewer moves remain to the next time control) plus three quarters of
//! the increment, never more than a third of the clock and never less than
//! [`MIN_MOVE_TIME`]; else, with no limit of any kind, [`DEFAULT_MOVE_TIME`].

use std::time::Duration;

/// The time a move gets when nothing limits the search (Aalina's default).
pub const DEFAULT_MOVE_TIME: Duration = Duration::from_millis(2000);
/// The shortest time a timed search is given, however little is left on the clock.
pub const MIN_MOVE_TIME: Duration = Duration::from_millis(5);
/// The moves the clock is shared between when `moves_to_go` is not given (or larger).
pub(crate) const MOVES_TO_GO: u64 = 20;
/// A timed search begins another iteration only while at least this share of its time is
/// left: an iteration takes about as long as all those before it, so one begun later would
/// most likely be cut short and wasted.
pub(crate) const NEXT_ITERATION_SHARE: f64 = 0.45;

/// The side to move's clock, as a UCI `go` gives it: milliseconds left and added each move.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    /// Milliseconds left.
    pub time_ms: u64,
    /// Milliseconds added after each move (0 for none).
    pub increment_ms: u64,
}

/// What limits a move's time: a fixed time, a clock, or neither.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeControl {
    /// A fixed time for the move (UCI `movetime`), milliseconds; it wins over the clock.
    pub move_time_ms: Option<u64>,
    /// The side to move's clock, when the game has one.
    pub clock: Option<Clock>,
    /// Moves left to the next time control (UCI `movestogo`), when the clock says.
    pub moves_to_go: Option<u64>,
}

impl TimeControl {
    /// The time the move gets; `None` for an untimed search, when neither a time nor a clock is
    /// given and `limited` (a depth or node limit ends the search instead).
    ///
    /// Cost: a few arithmetic operations.
    pub fn allocation(&self, limited: bool) -> Option<Duration> {
        if let Some(ms) = self.move_time_ms {
            return Some(Duration::from_millis(ms.max(1)));
        }
        if let Some(Clock { time_ms, increment_ms }) = self.clock {
            let moves = self.moves_to_go.unwrap_or(MOVES_TO_GO).clamp(1, MOVES_TO_GO);
            let share = (time_ms / moves).saturating_add(increment_ms / 4 * 3);
            return Some(Duration::from_millis(share.min(time_ms / 3)).max(MIN_MOVE_TIME));
        }
        if limited {
            return None;
        }
        Some(DEFAULT_MOVE_TIME)
    }
}

/// Whether a search given `move_time`, with `left` of it left, begins another iteration
/// (`NEXT_ITERATION_SHARE`).
pub(super) fn starts_iteration(move_time: Duration, left: Duration) -> bool {
    left >= move_time.mul_f64(NEXT_ITERATION_SHARE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(time_ms: u64, increment_ms: u64) -> TimeControl {
        TimeControl { clock: Some(Clock { time_ms, increment_ms }), ..TimeControl::default() }
    }

    #[test]
    fn allocations() {
        let ms = Duration::from_millis;
        // A twentieth of the clock plus three quarters of the increment.
        assert_eq!(clock(60_000, 1000).allocation(false), Some(ms(3000 + 750)));
        // At most a third of the clock, at least the minimum.
        assert_eq!(clock(1000, 1000).allocation(false), Some(ms(333)));
        assert_eq!(clock(150, 0).allocation(false), Some(ms(7)));
        assert_eq!(clock(60, 0).allocation(false), Some(MIN_MOVE_TIME));
        assert_eq!(clock(9, 0).allocation(false), Some(MIN_MOVE_TIME));
        // No overflow at the largest clock.
        assert_eq!(clock(u64::MAX, u64::MAX).allocation(false), Some(ms(u64::MAX / 3)));
        // Fewer moves to go give a larger share; more than the default do not lower it.
        let last = TimeControl { moves_to_go: Some(1), ..clock(3000, 3000) };
        assert_eq!(last.allocation(false), Some(ms(1000)));
        let many = TimeControl { moves_to_go: Some(80), ..clock(60_000, 0) };
        assert_eq!(many.allocation(false), Some(ms(3000)));
        // A fixed time wins over the clock; 0 is read as 1 ms.
        let fixed = TimeControl { move_time_ms: Some(0), ..clock(60_000, 0) };
        assert_eq!(fixed.allocation(true), Some(ms(1)));
        // Nothing given: untimed under a depth or node limit, else the default.
        assert_eq!(TimeControl::default().allocation(true), None);
        assert_eq!(TimeControl::default().allocation(false), Some(DEFAULT_MOVE_TIME));
    }

    #[test]
    fn iterations_begin_while_enough_time_is_left() {
        let t = Duration::from_millis(1000);
        assert!(starts_iteration(t, Duration::from_millis(450)));
        assert!(!starts_iteration(t, Duration::from_millis(449)));
    }
}
