//! The cluster of an MPI job (feature `mpi`): the ranks `mpirun` started, talking through
//! `MPI_COMM_WORLD` with the collectives `MPI_Alltoall(v)`, `MPI_Allgather`, `MPI_Allreduce`
//! and `MPI_Bcast`. MPI is initialised for `MPI_THREAD_FUNNELED`: only the thread that
//! initialised it calls MPI (the solver calls the cluster from its driving thread, never from
//! rayon's workers).

use mpi::collective::SystemOperation;
use mpi::datatype::{Partition, PartitionMut};
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Count;

use crate::error::{ClusterError, Error, ExchangePart, Result};
use crate::solver::cluster::{Cluster, Received};

/// The ranks of the MPI job this process belongs to.
pub struct MpiCluster {
    world: SimpleCommunicator,
    rank: usize,
    size: usize,
    // Finalises MPI when dropped: declared last, so dropped after the communicator.
    _universe: Universe,
}

impl MpiCluster {
    /// Initialises MPI and joins the job's ranks.
    ///
    /// # Errors
    /// [`Error::Cluster`] when MPI was already initialised or does not offer
    /// `MPI_THREAD_FUNNELED`.
    pub fn init() -> Result<MpiCluster> {
        let (universe, threading) = mpi::initialize_with_threading(mpi::Threading::Funneled).ok_or(Error::Cluster(ClusterError::AlreadyInitialised))?;
        if threading < mpi::Threading::Funneled {
            return Err(Error::Cluster(ClusterError::NoFunneledThreading { offered: format!("{threading:?}") }));
        }
        let world = universe.world();
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        Ok(MpiCluster { world, rank, size, _universe: universe })
    }

    /// This process's rank, `0..size()`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks in the job.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Builds with the ranks of this job: every rank calls it with the same `config`, builds its
    /// share of every layer, and the files come out byte-identical to [`crate::builder::build`]'s.
    /// Rank 0 takes the directory's lock, plans, checks and publishes; its observer sees the
    /// build, the others' see their shares' progress. Every rank needs `config.dir` at the same
    /// place in one shared file system; `config.max_memory` is per rank.
    ///
    /// Cost: as [`crate::builder::build`] divided among the ranks, plus the exchange of the updates
    /// that cross ranks (counted in each layer's statistics).
    ///
    /// # Errors
    /// Those of [`crate::builder::build`], on the rank where they happen ([`Error::Cluster`] or
    /// [`Error::Interrupted`] on the others when they learn of it at an agreement point). A rank
    /// that fails elsewhere leaves the others waiting in a collective operation, so the caller
    /// must end the whole job ([`MpiCluster::abort`]) on any error.
    pub fn build(&self, config: &crate::builder::BuildConfig, observer: &dyn crate::builder::BuildObserver) -> Result<crate::builder::BuildReport> {
        crate::builder::build_with(config, observer, self).map(crate::builder::BuildReport::ended)
    }

    /// Ends the whole job with `code` (`MPI_Abort`): what a rank does on an error, since the
    /// other ranks would otherwise wait for it in their next collective operation.
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }

    fn exchange<T: Equivalence + Copy + Default>(&self, send: &[Vec<T>]) -> Result<Received<T>> {
        let too_many = |part: ExchangePart| Error::Cluster(ClusterError::ExchangeTooLarge { part });
        let counts: Vec<Count> = send.iter().map(|v| Count::try_from(v.len()).map_err(|_| too_many(ExchangePart::ToOneRank))).collect::<Result<_>>()?;
        let mut received = vec![0 as Count; self.size];
        self.world.all_to_all_into(&counts[..], &mut received[..]);
        let displs = |c: &[Count]| -> Result<Vec<Count>> {
            let mut at: i64 = 0;
            c.iter()
                .map(|&x| {
                    let d = Count::try_from(at).map_err(|_| too_many(ExchangePart::InAll))?;
                    at += i64::from(x);
                    Ok(d)
                })
                .collect()
        };
        let (sd, rd) = (displs(&counts)?, displs(&received)?);
        // Buffers always have a heap allocation: an empty Vec's dangling pointer can equal
        // `MPI_IN_PLACE` (address 1 in OpenMPI), which the library would take literally.
        let mut flat: Vec<T> = Vec::with_capacity(send.iter().map(Vec::len).sum::<usize>().max(1));
        for v in send {
            flat.extend_from_slice(v);
        }
        let total: usize = received.iter().map(|&c| c as usize).sum();
        Count::try_from(total).map_err(|_| too_many(ExchangePart::Received))?;
        let mut data: Vec<T> = Vec::with_capacity(total.max(1));
        data.resize(total, T::default());
        {
            let s = Partition::new(&flat[..], &counts[..], &sd[..]);
            let mut r = PartitionMut::new(&mut data[..], &received[..], &rd[..]);
            self.world.all_to_all_varcount_into(&s, &mut r);
        }
        Ok(Received { data, counts: received.iter().map(|&c| c as usize).collect() })
    }
}

impl Cluster for MpiCluster {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn exchange_u64(&self, send: &[Vec<u64>]) -> Result<Received<u64>> {
        self.exchange(send)
    }
    fn exchange_u8(&self, send: &[Vec<u8>]) -> Result<Received<u8>> {
        self.exchange(send)
    }
    fn all_gather(&self, value: u64) -> Result<Vec<u64>> {
        let mut all = vec![0u64; self.size];
        self.world.all_gather_into(&value, &mut all[..]);
        Ok(all)
    }
    fn sum(&self, values: &[u64]) -> Result<Vec<u64>> {
        let mut total = vec![0u64; values.len()];
        self.world.all_reduce_into(values, &mut total[..], SystemOperation::sum());
        Ok(total)
    }
    fn broadcast(&self, bytes: &[u8]) -> Result<Vec<u8>> {
        let root = self.world.process_at_rank(0);
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        let mut buf = if self.rank == 0 { bytes.to_vec() } else { vec![0u8; len as usize] };
        if len > 0 {
            root.broadcast_into(&mut buf[..]);
        }
        Ok(buf)
    }
}
