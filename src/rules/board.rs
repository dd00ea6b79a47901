//! The board: its pits and stones, the [`Board`] type in mover-first form, and the layers a
//! position of `n` stones needs.

/// Number of pits on the board.
pub const PITS: usize = 12;
/// Number of pits in one player's row.
pub(crate) const ROW: usize = 6;
/// Stones in the game (4 in each of the 12 pits at the start).
pub const TOTAL_STONES: u32 = 48;

/// The fewest stones a capturing move takes, under every ruleset: a capture takes whole pits
/// holding 2 or 3 stones (the spare options of a grand slam leave out a whole pit, so they capture
/// nothing or at least one whole pit). A move from a position of `n` stones therefore leads to
/// layer `n` (no capture) or to a layer of at most `n - 2` stones, never to layer `n - 1`.
pub const MIN_CAPTURE: u32 = 2;

/// The layers whose values a position of `n` stones needs, itself included, in increasing order:
/// `0..=n-2` and `n` (layer `n - 1` is never reached: [`MIN_CAPTURE`]). For `n` of 0 or 1, simply
/// `0..=n` (layer 0 is one position; keeping it leaves the smallest databases whole).
///
/// Cost: one allocation of `n` entries at most.
pub fn layers_needed(n: u32) -> Vec<u32> {
    (0..=n).filter(|&m| m + 1 != n || n < MIN_CAPTURE).collect()
}

/// The layer below `n` that no position of layer `n` needs (`n - 1`, for `n` of 2 or more), if
/// any: the layer `build --for` leaves out.
pub fn layer_not_needed(n: u32) -> Option<u32> {
    (n >= MIN_CAPTURE).then(|| n - 1)
}

/// A board in mover-first form: `b[0..6]` is the mover's row, `b[6..12]` the opponent's.
pub type Board = [u8; PITS];

/// Total number of stones on a board.
#[inline]
pub fn stones(board: &Board) -> u32 {
    board.iter().map(|&c| u32::from(c)).sum()
}

/// The board seen from the other side: the rows swap places (`b[0..6]` <-> `b[6..12]`).
///
/// This is how a child is put back into mover-first form after a move.
#[inline]
pub fn turned(board: &Board) -> Board {
    let mut t = [0u8; PITS];
    t[..ROW].copy_from_slice(&board[ROW..]);
    t[ROW..].copy_from_slice(&board[..ROW]);
    t
}
