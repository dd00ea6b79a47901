//! The seam between the solver and a distributed engine: the few collective operations a
//! layer's distributed solve needs ([`Cluster`]), how a layer is divided among the ranks
//! ([`Ownership`]), a metering wrapper that counts the bytes and time spent communicating
//! ([`Metered`]), and an in-process implementation on threads ([`ThreadCluster`]) that tests the
//! distributed algorithm without any MPI installation. The MPI implementation lives with the
//! build pipeline (`oware::cluster`, feature `mpi`).
//!
//! Every operation is collective: each rank of the cluster calls the same operations in the same
//! order (the solver's loops end on values every rank has agreed on, such as [`Cluster::any`]).
//! Operations are called from one thread per rank, never from the rayon workers, so an MPI
//! library initialised for `MPI_THREAD_FUNNELED` is enough.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
#[cfg(test)]
use std::sync::{Arc, Barrier, Mutex};
use std::time::Instant;

#[cfg(test)]
use crate::error::Error;
use crate::error::Result;
use crate::solver::spill::Inboxes;

/// What each rank received in an exchange: the concatenation of what every source sent it, in
/// rank order, and how many elements came from each source.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Received<T> {
    /// Elements from rank 0, then from rank 1, ...
    pub(crate) data: Vec<T>,
    /// Elements from each rank (index: source rank).
    pub(crate) counts: Vec<usize>,
}

impl<T> Received<T> {
    /// The elements received from rank `source`.
    #[cfg(test)]
    pub(crate) fn from(&self, source: usize) -> &[T] {
        let start: usize = self.counts[..source].iter().sum();
        &self.data[start..start + self.counts[source]]
    }
}

/// The collective operations of a distributed solve. One value of this type per rank; every
/// rank calls the same operations in the same order.
///
/// # Errors
/// Every operation returns [`Error::Cluster`] when the transport fails (a rank gone, a message
/// refused); the solve then stops, and the caller should end the whole job.
pub(crate) trait Cluster {
    /// This rank's number, `0..size()`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Sends `send[d]` to rank `d` (for every `d`, this rank included) and returns what every
    /// rank sent to this one.
    fn exchange_u64(&self, send: &[Vec<u64>]) -> Result<Received<u64>>;
    /// [`Cluster::exchange_u64`] for bytes.
    fn exchange_u8(&self, send: &[Vec<u8>]) -> Result<Received<u8>>;
    /// Every rank's `value`, in rank order.
    fn all_gather(&self, value: u64) -> Result<Vec<u64>>;
    /// Element-wise sums of every rank's `values` (all ranks pass the same length).
    fn sum(&self, values: &[u64]) -> Result<Vec<u64>>;
    /// Rank 0's `bytes` (the other ranks' arguments are ignored).
    fn broadcast(&self, bytes: &[u8]) -> Result<Vec<u8>>;

    /// Whether `flag` is true on some rank (the termination test of a round).
    fn any(&self, flag: bool) -> Result<bool> {
        Ok(self.sum(&[u64::from(flag)])?[0] > 0)
    }
    /// Waits until every rank has called it.
    fn barrier(&self) -> Result<()> {
        self.sum(&[0]).map(|_| ())
    }
}

/// How the positions of a layer are divided among `ranks` ranks: consecutive index ranges of
/// equal length (a multiple of the solver's chunk), the last one shorter. Rank `r` owns
/// `r * per .. (r + 1) * per` of every layer, so the owner of a position is one division.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ownership {
    /// Positions of the layer.
    pub(crate) size: u64,
    /// Positions per rank (the last rank may own fewer, or none).
    pub(crate) per: u64,
    /// Number of ranks.
    pub(crate) ranks: usize,
}

impl Ownership {
    /// The division of a layer of `size` positions among `ranks` ranks.
    pub(crate) fn new(size: u64, ranks: usize) -> Ownership {
        let ranks = ranks.max(1);
        let chunk = super::CHUNK;
        let per = (size.div_ceil(ranks as u64)).div_ceil(chunk).max(1) * chunk;
        Ownership { size, per, ranks }
    }

    /// The positions rank `rank` owns (empty when the layer is too small to reach it).
    pub(crate) fn range(&self, rank: usize) -> Range<u64> {
        let a = (rank as u64 * self.per).min(self.size);
        let b = ((rank as u64 + 1) * self.per).min(self.size);
        a..b
    }

    /// The rank owning position `index` (`index < size`).
    #[inline]
    pub(crate) fn owner(&self, index: u64) -> usize {
        (index / self.per) as usize
    }
}

/// Looks up values at their owners: every rank calls it at once with its `lookups` (a key, and
/// anything the caller keeps beside it), sorted by destination rank `dest(key)`. Each key goes to
/// its owner, which answers `answer(key)` from its own slice, reading the keys it received in
/// sorted order; the answers come back in the order of `lookups`. `served(least, greatest)` is
/// told the range of keys this rank answered, when it answered any (to give back the pages it
/// read).
///
/// Cost: two exchanges; the keys received sorted once; one `answer` per key received.
///
/// # Errors
/// [`crate::Error::Cluster`] when the transport fails.
pub(super) fn ask_owners<T: Sync>(
    cluster: &dyn Cluster,
    lookups: &[(u64, T)],
    dest: &(dyn Fn(u64) -> usize + Sync),
    answer: &(dyn Fn(u64) -> u8 + Sync),
    served: &mut dyn FnMut(u64, u64),
) -> Result<Vec<u8>> {
    use rayon::prelude::*;
    debug_assert!(lookups.windows(2).all(|w| dest(w[0].0) <= dest(w[1].0)), "lookups not sorted by destination");
    let ranks = cluster.size();
    let mut send: Vec<Vec<u64>> = vec![Vec::new(); ranks];
    for (key, _) in lookups {
        send[dest(*key)].push(*key);
    }
    let asked = cluster.exchange_u64(&send)?;
    drop(send);
    let mut order: Vec<(u64, u32)> = asked.data.iter().enumerate().map(|(i, &k)| (k, i as u32)).collect();
    order.par_sort_unstable();
    let values: Vec<u8> = order.par_iter().map(|&(key, _)| answer(key)).collect();
    let mut answers = vec![0u8; order.len()];
    for (&(_, i), &v) in order.iter().zip(&values) {
        answers[i as usize] = v;
    }
    if let (Some(lo), Some(hi)) = (order.first(), order.last()) {
        served(lo.0, hi.0);
    }
    drop((order, values));
    let mut reply: Vec<Vec<u8>> = Vec::with_capacity(ranks);
    let mut at = 0;
    for &c in &asked.counts {
        reply.push(answers[at..at + c].to_vec());
        at += c;
    }
    drop((asked, answers));
    Ok(cluster.exchange_u8(&reply)?.data)
}

/// What a rank spent communicating.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Traffic {
    /// Bytes this rank sent to other ranks (what it sent itself is not counted).
    pub(crate) bytes_sent: u64,
    /// Bytes it received from other ranks.
    pub(crate) bytes_received: u64,
    /// Collective operations it took part in.
    pub(crate) operations: u64,
    /// Seconds spent inside them (waiting for slower ranks included).
    pub(crate) seconds: f64,
}

/// A [`Cluster`] that counts the traffic of another one.
pub(crate) struct Metered<'a> {
    inner: &'a dyn Cluster,
    sent: AtomicU64,
    received: AtomicU64,
    operations: AtomicU64,
    nanos: AtomicU64,
}

impl<'a> Metered<'a> {
    /// Counts the traffic of `inner` from now on.
    pub(crate) fn new(inner: &'a dyn Cluster) -> Metered<'a> {
        Metered { inner, sent: AtomicU64::new(0), received: AtomicU64::new(0), operations: AtomicU64::new(0), nanos: AtomicU64::new(0) }
    }

    /// The traffic so far.
    pub(crate) fn traffic(&self) -> Traffic {
        Traffic {
            bytes_sent: self.sent.load(Relaxed),
            bytes_received: self.received.load(Relaxed),
            operations: self.operations.load(Relaxed),
            seconds: self.nanos.load(Relaxed) as f64 * 1e-9,
        }
    }

    fn timed<T>(&self, sent: u64, f: impl FnOnce() -> Result<T>, received: impl FnOnce(&T) -> u64) -> Result<T> {
        let start = Instant::now();
        let r = f()?;
        self.nanos.fetch_add(start.elapsed().as_nanos() as u64, Relaxed);
        self.operations.fetch_add(1, Relaxed);
        self.sent.fetch_add(sent, Relaxed);
        self.received.fetch_add(received(&r), Relaxed);
        Ok(r)
    }

    fn others<T>(&self, send: &[Vec<T>]) -> u64 {
        let me = self.inner.rank();
        send.iter().enumerate().filter(|(d, _)| *d != me).map(|(_, v)| std::mem::size_of_val(v.as_slice()) as u64).sum()
    }

    fn received_from_others<T>(&self, r: &Received<T>) -> u64 {
        let me = self.inner.rank();
        let own = r.counts.get(me).copied().unwrap_or(0);
        ((r.data.len() - own) * std::mem::size_of::<T>()) as u64
    }
}

impl Cluster for Metered<'_> {
    fn rank(&self) -> usize {
        self.inner.rank()
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn exchange_u64(&self, send: &[Vec<u64>]) -> Result<Received<u64>> {
        self.timed(self.others(send), || self.inner.exchange_u64(send), |r| self.received_from_others(r))
    }
    fn exchange_u8(&self, send: &[Vec<u8>]) -> Result<Received<u8>> {
        self.timed(self.others(send), || self.inner.exchange_u8(send), |r| self.received_from_others(r))
    }
    fn all_gather(&self, value: u64) -> Result<Vec<u64>> {
        let k = self.size() as u64 - 1;
        self.timed(8 * k, || self.inner.all_gather(value), |_| 8 * k)
    }
    fn sum(&self, values: &[u64]) -> Result<Vec<u64>> {
        let b = 8 * values.len() as u64 * (self.size() as u64 - 1);
        self.timed(b, || self.inner.sum(values), |_| b)
    }
    fn broadcast(&self, bytes: &[u8]) -> Result<Vec<u8>> {
        let root = self.rank() == 0;
        let out = if root { bytes.len() as u64 * (self.size() as u64 - 1) } else { 0 };
        self.timed(out, || self.inner.broadcast(bytes), |r| if root { 0 } else { r.len() as u64 })
    }
}

/// The one-rank cluster: every operation returns its own argument.
pub(crate) struct Solo;

impl Cluster for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn exchange_u64(&self, send: &[Vec<u64>]) -> Result<Received<u64>> {
        Ok(Received { data: send[0].clone(), counts: vec![send[0].len()] })
    }
    fn exchange_u8(&self, send: &[Vec<u8>]) -> Result<Received<u8>> {
        Ok(Received { data: send[0].clone(), counts: vec![send[0].len()] })
    }
    fn all_gather(&self, value: u64) -> Result<Vec<u64>> {
        Ok(vec![value])
    }
    fn sum(&self, values: &[u64]) -> Result<Vec<u64>> {
        Ok(values.to_vec())
    }
    fn broadcast(&self, bytes: &[u8]) -> Result<Vec<u8>> {
        Ok(bytes.to_vec())
    }
}

#[cfg(test)]
/// Mailboxes shared by the ranks of a [`ThreadCluster`].
struct Shared {
    barrier: Barrier,
    /// `slots[d][s]`: what rank `s` sent to rank `d` in the current operation.
    u64s: Mutex<Vec<Vec<Vec<u64>>>>,
    u8s: Mutex<Vec<Vec<Vec<u8>>>>,
    /// Set when a rank has left (dropped or failed): the others' operations fail instead of
    /// waiting for it forever.
    broken: std::sync::atomic::AtomicBool,
}

#[cfg(test)]
/// One rank of a cluster of threads in this process ([`ThreadCluster::new`]): the distributed
/// algorithm with the transport replaced by shared memory, for tests. Each rank must run on its
/// own thread (outside any rayon pool, since the operations block).
pub(crate) struct ThreadCluster {
    rank: usize,
    size: usize,
    shared: Arc<Shared>,
}

#[cfg(test)]
impl ThreadCluster {
    /// The `ranks` ranks of a new cluster, in rank order.
    pub(crate) fn new(ranks: usize) -> Vec<ThreadCluster> {
        let ranks = ranks.max(1);
        fn slots<T>(ranks: usize) -> Mutex<Vec<Vec<Vec<T>>>> {
            Mutex::new((0..ranks).map(|_| (0..ranks).map(|_| Vec::new()).collect()).collect())
        }
        let shared =
            Arc::new(Shared { barrier: Barrier::new(ranks), u64s: slots(ranks), u8s: slots(ranks), broken: std::sync::atomic::AtomicBool::new(false) });
        (0..ranks).map(|rank| ThreadCluster { rank, size: ranks, shared: Arc::clone(&shared) }).collect()
    }

    /// Marks the cluster broken: this rank will take part in no more operations.
    pub(crate) fn leave(&self) {
        self.shared.broken.store(true, Relaxed);
    }

    fn check(&self) -> Result<()> {
        if self.shared.broken.load(Relaxed) {
            return Err(Error::Cluster(crate::error::ClusterError::RankLeft));
        }
        Ok(())
    }

    fn exchange<T: Clone>(&self, slots: &Mutex<Vec<Vec<Vec<T>>>>, send: &[Vec<T>]) -> Result<Received<T>> {
        assert_eq!(send.len(), self.size, "one buffer per rank");
        self.check()?;
        {
            let mut s = slots.lock().unwrap_or_else(|p| p.into_inner());
            for (d, v) in send.iter().enumerate() {
                s[d][self.rank] = v.clone();
            }
        }
        self.shared.barrier.wait();
        self.check()?;
        let mut got = Received { data: Vec::new(), counts: Vec::new() };
        {
            let mut s = slots.lock().unwrap_or_else(|p| p.into_inner());
            for v in s[self.rank].iter_mut() {
                got.counts.push(v.len());
                got.data.append(v);
            }
        }
        // Nobody writes the next operation's messages before everyone has read this one's.
        self.shared.barrier.wait();
        Ok(got)
    }
}

#[cfg(test)]
impl Drop for ThreadCluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.leave();
        }
    }
}

#[cfg(test)]
impl Cluster for ThreadCluster {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn exchange_u64(&self, send: &[Vec<u64>]) -> Result<Received<u64>> {
        self.exchange(&self.shared.u64s, send)
    }
    fn exchange_u8(&self, send: &[Vec<u8>]) -> Result<Received<u8>> {
        self.exchange(&self.shared.u8s, send)
    }
    fn all_gather(&self, value: u64) -> Result<Vec<u64>> {
        let send = vec![vec![value]; self.size];
        Ok(self.exchange(&self.shared.u64s, &send)?.data)
    }
    fn sum(&self, values: &[u64]) -> Result<Vec<u64>> {
        let send = vec![values.to_vec(); self.size];
        let got = self.exchange(&self.shared.u64s, &send)?;
        let mut total = vec![0u64; values.len()];
        for s in 0..self.size {
            for (t, x) in total.iter_mut().zip(got.from(s)) {
                *t += x;
            }
        }
        Ok(total)
    }
    fn broadcast(&self, bytes: &[u8]) -> Result<Vec<u8>> {
        let send: Vec<Vec<u8>> = if self.rank == 0 { vec![bytes.to_vec(); self.size] } else { vec![Vec::new(); self.size] };
        let got = self.exchange(&self.shared.u8s, &send)?;
        Ok(got.from(0).to_vec())
    }
}

/// Messages per destination in one exchange step (also keeps MPI's 32-bit counts far away).
pub(crate) const EXCHANGE_STEP: usize = 1 << 22;

/// Exchanges the outboxes of every rank (bucket `d` of `outbox` for rank `d`), in bounded
/// steps, until every rank's are empty; `deliver` receives each step's messages for this rank
/// (all of them for its positions). Every rank calls it at once.
///
/// # Errors
/// [`Error::Cluster`] when the transport fails; [`Error::Io`] when a bucket cannot be read;
/// `deliver`'s errors.
pub(super) fn exchange_outboxes(cluster: &dyn Cluster, outbox: &Inboxes, deliver: &mut dyn FnMut(Vec<u64>) -> Result<()>) -> Result<()> {
    let ranks = cluster.size();
    let mut buckets = (0..ranks).map(|d| outbox.take(d)).collect::<Result<Vec<_>>>()?;
    let mut send: Vec<Vec<u64>> = vec![Vec::new(); ranks];
    loop {
        for (b, s) in buckets.iter_mut().zip(send.iter_mut()) {
            b.next(EXCHANGE_STEP, s)?;
        }
        deliver(cluster.exchange_u64(&send)?.data)?;
        if !cluster.any(buckets.iter().any(|b| !b.is_empty()))? {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ownership_covers_the_layer_in_chunks() {
        for (size, k) in [(0u64, 3usize), (1, 4), (100_000, 3), (1 << 20, 4), (5 * super::super::CHUNK + 7, 2)] {
            let o = Ownership::new(size, k);
            assert_eq!(o.per % super::super::CHUNK, 0);
            let mut next = 0;
            for r in 0..k {
                let range = o.range(r);
                assert_eq!(range.start, next.min(size));
                if !range.is_empty() {
                    for i in [range.start, range.end - 1] {
                        assert_eq!(o.owner(i), r);
                    }
                }
                next = range.end;
            }
            assert_eq!(next, size);
        }
    }

    #[test]
    fn thread_cluster_operations() {
        let ranks = ThreadCluster::new(3);
        std::thread::scope(|s| {
            for c in &ranks {
                s.spawn(move || {
                    let me = c.rank() as u64;
                    let send: Vec<Vec<u64>> = (0..3).map(|d| vec![me * 10 + d; d as usize + 1]).collect();
                    let got = c.exchange_u64(&send).unwrap();
                    assert_eq!(got.counts, vec![me as usize + 1; 3]);
                    for src in 0..3u64 {
                        assert!(got.from(src as usize).iter().all(|&x| x == src * 10 + me));
                    }
                    assert_eq!(c.all_gather(me * me).unwrap(), vec![0, 1, 4]);
                    assert_eq!(c.sum(&[me, 1]).unwrap(), vec![3, 3]);
                    assert!(c.any(me == 2).unwrap());
                    assert!(!c.any(false).unwrap());
                    assert_eq!(c.broadcast(&[me as u8; 2]).unwrap(), vec![0, 0]);
                    let m = Metered::new(c);
                    m.exchange_u8(&[vec![1], vec![2, 2], vec![3, 3, 3]]).unwrap();
                    let t = m.traffic();
                    assert_eq!(t.operations, 1);
                    assert_eq!(t.bytes_sent, 6 - (me + 1));
                    assert_eq!(t.bytes_received, 2 * (me + 1));
                });
            }
        });
    }
}
