//! One search thread: iterative deepening at the root, the principal-variation search, the
//! quiescence search, repetitions and the root's ranking of equal moves.

use std::sync::atomic::Ordering::Relaxed;

use crate::rules::{sowings, stones, Move, Moves, Outcome, Ruleset};

use super::eval;
use super::keys::board_key;
use super::shared::{scored, scored_if, Node, Proof, Scored, Shared};
use super::time;
use super::tt::{Bound, Entry};
use super::{Limits, Report, RootMove, ScoreBound, INFINITE, MAX_PLY, QUIESCENCE_PLIES};

/// Move ordering ([`Worker::order`]): the table's move before every other.
const ORDER_TABLE_MOVE: i32 = i32::MAX;
/// Move ordering: a capture, or a move that ends the game, before every quiet move (history
/// counters stay below it).
const ORDER_CAPTURE: i32 = 1_000_000;
/// Move ordering: a capture's key grows by this for each stone it takes.
const ORDER_STONE: i32 = 1000;
/// Move ordering: a killer move of the ply before the other quiet moves.
const ORDER_KILLER: i32 = 500_000;

pub(super) struct Worker<'s, 'a> {
    pub(super) sh: &'s Shared<'a>,
    pub(super) id: usize,
    pub(super) nodes: u64,
    /// Unflushed nodes (added to the shared count every 1024).
    pub(super) pending: u64,
    pub(super) stopped: bool,
    /// Whether limits may stop this iteration.
    pub(super) can_stop: bool,
    /// (key, stones) of the game's positions then of the path's, root included.
    pub(super) path: Vec<(u64, u32)>,
    pub(super) history: [[i32; 6]; 2],
    pub(super) killers: [[Option<u8>; 2]; MAX_PLY],
    pub(super) pv: Box<[[u8; MAX_PLY]; MAX_PLY]>,
    pub(super) pv_len: [usize; MAX_PLY],
    pub(super) seldepth: usize,
}

impl<'s, 'a> Worker<'s, 'a> {
    pub(super) fn new(sh: &'s Shared<'a>, id: usize, path: Vec<(u64, u32)>) -> Self {
        Worker {
            sh,
            id,
            nodes: 0,
            pending: 0,
            stopped: false,
            can_stop: true,
            path,
            history: [[0; 6]; 2],
            killers: [[None; 2]; MAX_PLY],
            pv: Box::new([[0; MAX_PLY]; MAX_PLY]),
            pv_len: [0; MAX_PLY],
            seldepth: 0,
        }
    }

    #[inline]
    pub(super) fn tick(&mut self) -> bool {
        self.nodes += 1;
        self.pending += 1;
        if self.pending >= 1024 {
            let total = self.sh.nodes.fetch_add(self.pending, Relaxed) + self.pending;
            self.pending = 0;
            let c = self.sh.control;
            if self.can_stop && (c.stopped() || self.sh.done.load(Relaxed) || c.past_deadline() || self.sh.node_limit.is_some_and(|l| total >= l)) {
                self.stopped = true;
            }
        }
        self.stopped
    }

    pub(super) fn flush(&mut self) {
        self.sh.nodes.fetch_add(self.pending, Relaxed);
        self.pending = 0;
    }

    /// The ruleset's score of a repetition at `nd`: each side his row under abapa with captured
    /// counts (the game's rule), else an even split (the layers' convention).
    pub(super) fn repetition_score(&self, nd: &Node) -> i32 {
        match (self.sh.game, self.sh.engine.rules) {
            (true, rules @ Ruleset::Abapa(_)) => i32::from(rules.repetition_value(&nd.board)) * 100,
            _ => 0,
        }
    }

    #[inline]
    pub(super) fn repeats(&self, key: u64, n: u32) -> bool {
        // The path's last entry is the parent; compare with positions an even number of plies
        // back, while the stone count (which only falls) is the same.
        let len = self.path.len();
        let mut i = len.wrapping_sub(2);
        while i < len {
            let (k, m) = self.path[i];
            if m != n {
                return false;
            }
            if k == key {
                return true;
            }
            i = i.wrapping_sub(2);
        }
        false
    }

    /// Whether the 25-stone rule has ended the game at `nd` (with captured counts).
    #[inline]
    pub(super) fn decided(&self, nd: &Node) -> bool {
        self.sh.game && (nd.cm > 24 || nd.cn > 24 || (nd.cm == 24 && nd.cn == 24))
    }

    /// What ends a node, once its moves are known, without a search: a position without moves
    /// (the rules share the stones out), the 25-stone rule (the game is over; the stones left
    /// on the board count as split evenly, by definition). The layers were asked before the
    /// moves ([`enter`](Self::enter)).
    #[inline]
    pub(super) fn settled(&self, nd: &Node, moves: &Moves) -> Option<Scored> {
        if let Some(e) = moves.ending() {
            return Some(scored(i32::from(e) * 100, Proof::Proven));
        }
        self.decided(nd).then_some(scored(0, Proof::Proven))
    }

    /// Whether `pit`, scoring `s` at the root, is to be preferred to the best move so far,
    /// `best` scoring `b`: a higher score, or at an equal score a higher floor, then a better
    /// depth to capture (the winner the least, the loser the greatest; [`Shared::prefer`]).
    pub(super) fn preferred(&self, pit: u8, s: i32, best: Option<(u8, i32)>) -> bool {
        let Some((bp, b)) = best else { return true };
        if s != b {
            return s > b;
        }
        let of = |p: u8| self.sh.prefer.iter().find(|q| q.pit == p);
        let (Some(x), Some(y)) = (of(pit), of(bp)) else { return false };
        if let (Some(f), Some(g)) = (x.floor, y.floor) {
            if f != g {
                return f > g;
            }
        }
        match (x.dtc, y.dtc) {
            (Some(d), Some(e)) if s > 0 => d < e,
            (Some(d), Some(e)) if s < 0 => d > e,
            _ => false,
        }
    }

    pub(super) fn iterate(&mut self, root: &Node, max_depth: u32, limits: &Limits, on_info: &mut dyn FnMut(&Report)) -> Report {
        let rules = self.sh.engine.rules;
        let moves = rules.moves(&root.board);
        let n = stones(&root.board);
        let bkey = board_key(&root.board);
        let mut report =
            Report { best_pit: None, score: 0, exact: false, depth: 0, seldepth: 0, nodes: 0, seconds: 0.0, pv: Vec::new(), moves: Vec::new(), hashfull: 0 };
        // A root with moves is searched even inside the layers, so that every move is ranked
        // (each is settled one ply down).
        if let Some(e) = moves.ending() {
            report.score = i32::from(e) * 100;
            report.exact = true;
            return report;
        }
        if self.decided(root) {
            report.exact = true;
            return report;
        }
        // A root that repeats a position of the game: the game ended there.
        if self.repeats(bkey, n) {
            report.score = self.repetition_score(root);
            report.exact = true;
            return report;
        }
        self.path.push((bkey, n));
        let mut order: Vec<RootMove> =
            moves.as_slice().iter().map(|m| RootMove { pit: m.pit, score: -INFINITE, bound: ScoreBound::Upper, exact: false }).collect();
        // With depths to capture, moves that tie with the best are scored exactly too, so that
        // the depth decides between them.
        let ties = !self.sh.prefer.is_empty();
        let first = 1 + (self.id as u32 % 2);
        for depth in first..=max_depth {
            // The main thread's first iteration always finishes (it is cheap).
            self.can_stop = depth > 1 || self.id > 0;
            if depth > first && (self.sh.control.stopped() || self.sh.done.load(Relaxed)) {
                break;
            }
            let mut alpha = -INFINITE;
            let mut best: Option<(u8, i32)> = None;
            let mut proof = Proof::Proven;
            for (i, rm) in order.iter_mut().enumerate() {
                let m = *moves.from_pit(rm.pit).expect("root move");
                let (s, full) = match m.outcome {
                    Outcome::End { value } => (scored(i32::from(value) * 100, Proof::Proven), true),
                    Outcome::Child { captured, child } => {
                        let cap = i32::from(captured) * 100;
                        let cnode = Node { board: child, cm: root.cn, cn: root.cm.saturating_add(captured) };
                        let d = depth as i32 - 1;
                        if limits.all_moves || i == 0 {
                            let r = self.search(&cnode, -INFINITE, INFINITE, d, 1);
                            (scored(cap - r.v, r.proof), true)
                        } else {
                            // A null window at alpha: a move above it (or, with ties, at it)
                            // is searched again with a full window.
                            let edge = cap - alpha;
                            let mut r = if ties { self.search(&cnode, edge, edge + 1, d, 1) } else { self.search(&cnode, edge - 1, edge, d, 1) };
                            let above = if ties { r.v <= edge } else { r.v < edge };
                            if !self.stopped && above {
                                let r = self.search(&cnode, -INFINITE, INFINITE, d, 1);
                                (scored(cap - r.v, r.proof), true)
                            } else {
                                if ties && !self.stopped && r.proof < Proof::Here {
                                    // Below alpha by an estimate: try for a proven bound at it.
                                    r = self.search(&cnode, edge - 1, edge, d, 1);
                                }
                                (scored(cap - r.v, r.proof), false)
                            }
                        }
                    }
                };
                if self.stopped {
                    break;
                }
                rm.score = s.v;
                rm.bound = if full { ScoreBound::Equal } else { ScoreBound::Upper };
                rm.exact = s.proof >= Proof::Here;
                proof = proof.min(s.proof);
                if full && self.preferred(rm.pit, s.v, best) {
                    best = Some((rm.pit, s.v));
                    self.update_pv(0, rm.pit, matches!(m.outcome, Outcome::Child { .. }));
                }
                alpha = alpha.max(s.v);
            }
            if self.stopped && depth > first {
                // An iteration cut short: the moves it finished were searched deeper than in the
                // last whole iteration. Its first move (the best so far) is always searched
                // first and with a full window, so when it finished, the best of the finished
                // moves is at least as good a choice, and is kept (never as exact).
                if let Some((pit, score)) = best {
                    report.best_pit = Some(pit);
                    report.score = score;
                    report.exact = false;
                    report.pv = self.pv[0][..self.pv_len[0]].to_vec();
                }
                break;
            }
            let Some((pit, score)) = best else { break };
            // Best first for the next iteration; the others by their scores (stable).
            order.sort_by_key(|rm| std::cmp::Reverse(if rm.pit == pit { INFINITE } else { rm.score }));
            report.best_pit = Some(pit);
            report.score = score;
            report.exact = proof >= Proof::Here && !self.stopped;
            report.depth = depth;
            report.seldepth = self.seldepth as u32;
            report.pv = self.pv[0][..self.pv_len[0]].to_vec();
            report.moves = order.clone();
            if self.id == 0 {
                self.flush();
                report.nodes = self.sh.nodes.load(Relaxed);
                report.seconds = self.sh.start.elapsed().as_secs_f64();
                report.hashfull = self.sh.engine.tt.hashfull();
                on_info(&report);
            }
            if self.stopped || report.exact {
                break;
            }
            // The node limit is checked every 1024 nodes inside an iteration, and here between
            // iterations (those answered from the table take a few nodes each).
            if self.sh.node_limit.is_some_and(|l| self.sh.nodes.load(Relaxed) + self.pending >= l) {
                break;
            }
            // A timed search does not begin an iteration it is unlikely to finish.
            if let (Some(t), Some(left)) = (limits.movetime, self.sh.control.left()) {
                if !time::starts_iteration(t, left) {
                    break;
                }
            }
        }
        self.flush();
        report
    }

    /// The moves' ordering keys, `(key, index in moves)`, the first `moves.len()` used: the
    /// table's move first ([`ORDER_TABLE_MOVE`]), then captures and ends by the stones they
    /// take ([`ORDER_CAPTURE`] plus [`ORDER_STONE`] a stone), then the killers of the ply
    /// ([`ORDER_KILLER`]), each within its class by the history counters of the side's pits.
    #[inline]
    fn order(&self, moves: &[Move], ply: usize, tt_move: Option<u8>) -> [(i32, usize); 6] {
        let side = ply & 1;
        let mut keys = [(0, 0); 6];
        for (i, m) in moves.iter().enumerate() {
            let mut k = self.history[side][m.pit as usize];
            match m.outcome {
                Outcome::Child { captured, .. } if captured > 0 => k += ORDER_CAPTURE + i32::from(captured) * ORDER_STONE,
                Outcome::End { value } => k += ORDER_CAPTURE + i32::from(value) * ORDER_STONE,
                _ => {
                    if self.killers[ply].contains(&Some(m.pit)) {
                        k += ORDER_KILLER;
                    }
                }
            }
            if tt_move == Some(m.pit) {
                k = ORDER_TABLE_MOVE;
            }
            keys[i] = (k, i);
        }
        keys
    }

    /// The line at `ply` becomes `pit` followed, when the move leads to a child searched at
    /// `ply + 1`, by the child's line.
    #[inline]
    pub(super) fn update_pv(&mut self, ply: usize, pit: u8, child: bool) {
        self.pv[ply][ply] = pit;
        let end = if child { self.pv_len[ply + 1].max(ply + 1) } else { ply + 1 };
        for k in ply + 1..end {
            self.pv[ply][k] = self.pv[ply + 1][k];
        }
        self.pv_len[ply] = end;
    }

    /// Enters a node: counts it, starts its line, and ends it at once when it needs no search
    /// (its layer, except where the game's positions can repeat: [`Shared::region`]; then
    /// [`settled`](Self::settled); or the search was stopped: `Err` with the score). Otherwise
    /// its stone count and its moves, unless it surely has some
    /// ([`Ruleset::surely_has_moves`]: then `None`, and only the 25-stone rule can settle it):
    /// most nodes at the search's horizon are left by the stand-pat without their moves.
    #[inline]
    pub(super) fn enter(&mut self, nd: &Node, ply: usize) -> std::result::Result<(u32, Option<Moves>), Scored> {
        if self.tick() {
            return Err(scored(0, Proof::Estimate));
        }
        self.pv_len[ply] = ply;
        self.seldepth = self.seldepth.max(ply);
        let n = stones(&nd.board);
        // Inside the layers the value needs no moves (a position without any holds its ending
        // value there): ask the layer first. The 25-stone rule comes before it.
        if !self.decided(nd) && !self.sh.region(n) {
            if let Some(t) = self.sh.table(nd, n) {
                return Err(t.settled());
            }
        }
        let rules = self.sh.engine.rules;
        if rules.surely_has_moves(&nd.board) {
            return match self.decided(nd) {
                true => Err(scored(0, Proof::Proven)),
                false => Ok((n, None)),
            };
        }
        let moves = rules.moves(&nd.board);
        match self.settled(nd, &moves) {
            Some(s) => Err(s),
            None => Ok((n, Some(moves))),
        }
    }

    /// Principal-variation search of `nd` with window `(alpha, beta)`, fail-soft.
    pub(super) fn search(&mut self, nd: &Node, mut alpha: i32, beta: i32, depth: i32, ply: usize) -> Scored {
        // The table's slot is a random access: start loading it before the moves are generated.
        let bkey = board_key(&nd.board);
        let key = self.sh.key_with(bkey, stones(&nd.board), nd.cm, nd.cn);
        if depth > 0 {
            self.sh.engine.tt.prefetch(key);
        }
        let (n, moves) = match self.enter(nd, ply) {
            Ok(x) => x,
            Err(s) => return s,
        };
        let region = self.sh.region(n);
        if self.repeats(bkey, n) {
            // Among the game's positions a repetition ends the game: its score is the true one
            // for this line. Below them (after a capture in the line) it stays an estimate, so
            // that what is proven there holds without the line.
            return scored(self.repetition_score(nd), if region { Proof::Here } else { Proof::Estimate });
        }
        if region {
            // Inside the layers, where the game's positions can repeat: the layer value is
            // bounded only; the bounds hold whatever came before (where proven: not where the
            // 25-stone rule can change a value it does not solve).
            if let Some(t) = self.sh.table(nd, n) {
                if t.low == t.high {
                    return scored(t.low, t.proof());
                }
                if t.high <= alpha {
                    return scored(t.high, t.proof());
                }
                if t.low >= beta {
                    return scored(t.low, t.proof());
                }
                if depth <= 0 {
                    return scored(t.est, Proof::Estimate);
                }
            }
        }
        if depth <= 0 || ply >= MAX_PLY - QUIESCENCE_PLIES as usize - 2 {
            return self.quiescence(nd, moves.as_ref(), alpha, beta, ply, 0);
        }
        let moves = moves.unwrap_or_else(|| self.sh.engine.rules.moves(&nd.board));
        if depth > 1 {
            // The children probe the table too: start loading their slots while this node's
            // own probe waits.
            for m in moves.as_slice() {
                if let Outcome::Child { captured, child } = &m.outcome {
                    let k = self.sh.key_with(board_key(child), n - u32::from(*captured), nd.cn, nd.cm.saturating_add(*captured));
                    self.sh.engine.tt.prefetch(k);
                }
            }
        }
        let tt = self.sh.engine.tt.get(key);
        let mut tt_move = None;
        // A node of the line (a window wider than a null window) takes only a proven entry's
        // score: one from an earlier iteration or search would end the line here, and the line
        // the search returns with it (the root's moves are all searched with a full window).
        let pv_node = beta > alpha + 1;
        if let Some(e) = tt {
            tt_move = e.best;
            if e.proven || (e.depth >= depth && !pv_node) {
                let usable = match e.bound {
                    Bound::Exact => true,
                    Bound::Lower => e.score >= beta,
                    Bound::Upper => e.score <= alpha,
                };
                if usable {
                    return scored_if(e.score, e.proven);
                }
            }
        }
        let slice = moves.as_slice();
        let mut keys = self.order(slice, ply, tt_move);
        let list = &mut keys[..slice.len()];
        list.sort_unstable_by_key(|&(k, _)| std::cmp::Reverse(k));
        let side = ply & 1;

        self.path.push((bkey, n));
        let alpha0 = alpha;
        let mut best = scored(-INFINITE, Proof::Proven);
        let mut best_pit = None;
        let mut proof = Proof::Proven;
        for (count, &(_, i)) in list.iter().enumerate() {
            let m = slice[i];
            let s = match m.outcome {
                Outcome::End { value } => scored(i32::from(value) * 100, Proof::Proven),
                Outcome::Child { captured, child } => {
                    let cap = i32::from(captured) * 100;
                    let c = Node { board: child, cm: nd.cn, cn: nd.cm.saturating_add(captured) };
                    let r = if count == 0 {
                        self.search(&c, cap - beta, cap - alpha, depth - 1, ply + 1)
                    } else {
                        // Late quiet moves first get a reduced null-window look.
                        let reduce = i32::from(depth >= 3 && count >= 3 && captured == 0);
                        let mut r = self.search(&c, cap - alpha - 1, cap - alpha, depth - 1 - reduce, ply + 1);
                        if !self.stopped && reduce > 0 && cap - r.v > alpha {
                            r = self.search(&c, cap - alpha - 1, cap - alpha, depth - 1, ply + 1);
                        }
                        if !self.stopped && cap - r.v > alpha && cap - r.v < beta {
                            r = self.search(&c, cap - beta, cap - alpha, depth - 1, ply + 1);
                        }
                        r
                    };
                    scored(cap - r.v, r.proof)
                }
            };
            if self.stopped {
                self.path.pop();
                return scored(0, Proof::Estimate);
            }
            if s.v > best.v {
                best = s;
                best_pit = Some(m.pit);
                if s.v > alpha {
                    alpha = s.v;
                    self.update_pv(ply, m.pit, matches!(m.outcome, Outcome::Child { .. }));
                    if s.v >= beta {
                        if matches!(m.outcome, Outcome::Child { captured: 0, .. }) {
                            let k = &mut self.killers[ply];
                            if k[0] != Some(m.pit) {
                                k[1] = k[0];
                                k[0] = Some(m.pit);
                            }
                            let h = &mut self.history[side][m.pit as usize];
                            *h = (*h + depth * depth).min(400_000);
                        }
                        self.path.pop();
                        // A bound proven only with the line's positions is stored as an
                        // estimate (it would not hold when the node is reached otherwise).
                        self.sh.engine.tt.put(key, Entry { score: s.v, depth, bound: Bound::Lower, proven: s.proof == Proof::Proven, best: Some(m.pit) });
                        return s;
                    }
                }
            }
            proof = proof.min(s.proof);
        }
        self.path.pop();
        let bound = if best.v > alpha0 { Bound::Exact } else { Bound::Upper };
        self.sh.engine.tt.put(key, Entry { score: best.v, depth, bound, proven: proof == Proof::Proven, best: best_pit });
        scored(best.v, proof)
    }

    /// Captures only, with the evaluation as the score of stopping (never proven). `nd` has a
    /// legal move, which [`enter`](Self::enter) found (`moves`, when it generated them): a node
    /// whose stand-pat refutes the window is left without generating its moves.
    pub(super) fn quiescence(&mut self, nd: &Node, moves: Option<&Moves>, mut alpha: i32, beta: i32, ply: usize, qply: u32) -> Scored {
        let sown = sowings(&nd.board);
        let stand = eval::evaluate_moving(&nd.board, &sown);
        if stand >= beta || qply >= QUIESCENCE_PLIES {
            return scored(stand, Proof::Estimate);
        }
        // The moves that capture or end the game, in pit order: from the moves when they were
        // generated, else each played alone from the pits whose sowing captures (few).
        let rules = self.sh.engine.rules;
        let mut captures = [None::<Move>; 6];
        match moves {
            Some(ms) => {
                for (slot, m) in captures.iter_mut().zip(ms.as_slice()) {
                    *slot = Some(*m);
                }
            }
            None => {
                let mut mask = sown.capturing;
                while mask != 0 {
                    let pit = mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    captures[pit] = rules.play(&nd.board, pit);
                }
            }
        }
        let mut best = scored(stand, Proof::Estimate);
        alpha = alpha.max(stand);
        for m in captures.iter().flatten() {
            let s = match m.outcome {
                Outcome::End { value } => scored(i32::from(value) * 100, Proof::Proven),
                Outcome::Child { captured, child } if captured > 0 => {
                    let cap = i32::from(captured) * 100;
                    let c = Node { board: child, cm: nd.cn, cn: nd.cm.saturating_add(captured) };
                    let r = match self.enter(&c, ply + 1) {
                        Ok((_, cm)) => self.quiescence(&c, cm.as_ref(), cap - beta, cap - alpha, ply + 1, qply + 1),
                        Err(r) => r,
                    };
                    scored(cap - r.v, r.proof)
                }
                Outcome::Child { .. } => continue,
            };
            if self.stopped {
                return scored(0, Proof::Estimate);
            }
            if s.v > best.v {
                // Only a refutation by a proven move is a proven bound; a stand-pat never is.
                best = scored(s.v, if s.v >= beta { s.proof } else { Proof::Estimate });
                if s.v > alpha {
                    alpha = s.v;
                    self.update_pv(ply, m.pit, matches!(m.outcome, Outcome::Child { .. }));
                    if s.v >= beta {
                        return best;
                    }
                }
            }
        }
        best
    }
}
