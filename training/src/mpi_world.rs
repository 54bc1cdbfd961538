//! The ranks of an `mpirun` job as a [`Collective`] (feature `mpi`, rsmpi over the system MPI).
//!
//! Sums go to rank 0 (`MPI_Reduce`) and back (`MPI_Bcast`), so every rank holds the same bits
//! whatever order the MPI library adds in; short vectors are gathered to every rank and added
//! in rank order ([`Collective::sum_f64`]). A rank that fails or panics ends the whole job with
//! `MPI_Abort` ([`abort_job`]; the `mocc` binary calls it on an error and from its panic
//! hook): the others would otherwise wait in their next collective for ever.

use mocc_agents::Collective;
use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Root};
use std::sync::{Arc, Mutex};

/// Environment variables that an MPI launcher sets in every process it starts (OpenMPI,
/// PMIx-based launchers such as Slurm's `srun --mpi=pmix`, and MPICH's Hydra).
const LAUNCHER_VARIABLES: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"];

/// Whether an MPI launcher started this process.
pub fn launched_by_mpirun() -> bool {
    LAUNCHER_VARIABLES
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// Ends every rank of the job with `code` (`MPI_Abort` on the world). It takes no lock and
/// needs no handle, so a panic hook may call it whatever the panicking thread held; call it
/// only after [`MpiWorld::start`].
pub fn abort_job(code: i32) -> ! {
    // SAFETY: called after MPI_Init (see above); MPI_Abort may be called at any point after
    // initialization.
    unsafe {
        mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, code);
    }
    // MPI_Abort does not return; should an implementation return, end this process.
    std::process::exit(code)
}

/// The world communicator of an initialized MPI.
pub struct MpiWorld {
    /// Finalizes MPI when the last handle goes.
    _universe: Universe,
    world: Mutex<SimpleCommunicator>,
    rank: usize,
    ranks: usize,
}

// SAFETY: MPI is initialized with at least `Threading::Serialized`, which allows calls from
// any thread as long as no two are concurrent; every call goes through the `world` mutex.
unsafe impl Send for MpiWorld {}
// SAFETY: as above; `&self` methods take the mutex before calling MPI.
unsafe impl Sync for MpiWorld {}

impl MpiWorld {
    /// Initializes MPI (once per process).
    pub fn start() -> Result<Arc<Self>, String> {
        let (universe, threading) = mpi::initialize_with_threading(mpi::Threading::Serialized)
            .ok_or("MPI was already initialized in this process")?;
        if matches!(threading, mpi::Threading::Single | mpi::Threading::Funneled) {
            return Err(format!(
                "the MPI library offers thread support {threading:?}; MPI_THREAD_SERIALIZED \
                 is needed"
            ));
        }
        let world = universe.world();
        let (rank, ranks) = (world.rank() as usize, world.size() as usize);
        Ok(Arc::new(Self {
            _universe: universe,
            world: Mutex::new(world),
            rank,
            ranks,
        }))
    }

    fn comm(&self) -> std::sync::MutexGuard<'_, SimpleCommunicator> {
        // The communicator holds no data a panic could leave half-written.
        self.world.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Collective for MpiWorld {
    fn rank(&self) -> usize {
        self.rank
    }

    fn ranks(&self) -> usize {
        self.ranks
    }

    fn all_gather_f64(&self, local: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0f64; local.len() * self.ranks];
        self.comm().all_gather_into(local, &mut out[..]);
        out
    }

    fn gather_bytes(&self, local: &[u8]) -> Option<Vec<Vec<u8>>> {
        let lengths = self.all_gather_f64(&[local.len() as f64]);
        let longest = lengths.iter().fold(0.0f64, |a, &b| a.max(b)) as usize;
        let mut padded = local.to_vec();
        padded.resize(longest, 0);
        let comm = self.comm();
        let root = comm.process_at_rank(0);
        if self.rank != 0 {
            root.gather_into(&padded[..]);
            return None;
        }
        let mut all = vec![0u8; longest * self.ranks];
        root.gather_into_root(&padded[..], &mut all[..]);
        Some(
            lengths
                .iter()
                .enumerate()
                .map(|(r, &n)| all[r * longest..r * longest + n as usize].to_vec())
                .collect(),
        )
    }

    fn sum_f32(&self, values: &mut [f32]) {
        let comm = self.comm();
        let root = comm.process_at_rank(0);
        if self.rank == 0 {
            let mut total = vec![0.0f32; values.len()];
            root.reduce_into_root(&*values, &mut total[..], SystemOperation::sum());
            values.copy_from_slice(&total);
        } else {
            root.reduce_into(&*values, SystemOperation::sum());
        }
        root.broadcast_into(values);
    }
}
