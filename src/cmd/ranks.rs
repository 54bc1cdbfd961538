//! The processes a command runs on: one, or the ranks of an `mpirun` job when the binary is
//! built with the `mpi` feature and an MPI launcher started it.

use mocc_training::trainer::World;
use std::sync::Arc;

/// The ranks of this job.
pub struct Ranks {
    /// What the library's collectives run on.
    pub world: World,
}

impl Ranks {
    /// The job this process belongs to. Under an MPI launcher a panic on any rank ends every
    /// rank (the others would wait in their next collective for ever).
    pub fn join() -> anyhow::Result<Self> {
        #[cfg(feature = "mpi")]
        if mocc_training::mpi_world::launched_by_mpirun() {
            let mpi = mocc_training::mpi_world::MpiWorld::start()
                .map_err(|e| anyhow::anyhow!("MPI: {e}"))?;
            let rank = mocc_agents::Collective::rank(&*mpi);
            let default_hook = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                default_hook(info);
                eprintln!("rank {rank} panicked: aborting every rank");
                mocc_training::mpi_world::abort_job(70)
            }));
            return Ok(Self { world: mpi });
        }
        #[cfg(not(feature = "mpi"))]
        if launched_ranks() > 1 {
            anyhow::bail!(
                "started by an MPI launcher with {} ranks, but this mocc was built without MPI: \
                 build it with `make MPI=1 build` (cargo build --release --features mpi); only \
                 train and sweep run on ranks",
                launched_ranks()
            );
        }
        Ok(Self {
            world: Arc::new(mocc_agents::SingleProcess),
        })
    }

    /// Whether this is rank 0 (the rank that prints and writes).
    pub fn is_root(&self) -> bool {
        self.world.rank() == 0
    }

    /// Refuses to run `command` on more than one rank (it has no data-parallel form; N copies
    /// would write the same outputs).
    pub fn alone(&self, command: &str) -> anyhow::Result<()> {
        if self.world.ranks() == 1 {
            return Ok(());
        }
        Err(self.fail(anyhow::anyhow!(
            "{command} runs in one process; start it without mpirun (train and sweep run on \
             ranks)"
        )))
    }

    /// Ends the job after `err` on a rank of several: every rank exits (`MPI_Abort`), the
    /// checkpoints written so far stay as they are. Alone, returns `err` to be reported as
    /// usual.
    pub fn fail(&self, err: anyhow::Error) -> anyhow::Error {
        // Several ranks exist only in an MPI job (a build without MPI refuses them).
        #[cfg(feature = "mpi")]
        if self.world.ranks() > 1 {
            eprintln!(
                "error on rank {}: {}; aborting every rank",
                self.world.rank(),
                crate::error_chain(&err)
            );
            mocc_training::mpi_world::abort_job(1)
        }
        err
    }
}

/// The ranks a launcher says it started (1 when none did): OpenMPI's and MPICH's sizes, and
/// the tasks of a Slurm step (`srun`, which PMIx launches do not otherwise announce).
#[cfg(not(feature = "mpi"))]
fn launched_ranks() -> usize {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"]
        .iter()
        .filter_map(|v| std::env::var(v).ok()?.parse().ok())
        .max()
        .unwrap_or(1)
}
