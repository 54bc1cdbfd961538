//! The processes that train one model together, and the few collective operations the learner
//! needs from them (data-parallel PPO, as PPO1's MpiAdam and PCC-RL train under `mpiexec`).
//!
//! [`SingleProcess`] is the default: every operation is the identity, and a learner on it runs
//! exactly the single-process code. An MPI implementation lives in `mocc-training` behind the
//! `mpi` feature, so this crate never links an MPI library.
//!
//! Every rank must make the same sequence of calls (a collective that one rank skips waits
//! forever), and every result is the same, bit for bit, on every rank: sums are taken in one
//! fixed order, never in an order that depends on the rank.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A group of processes ("ranks") that call the same collectives in the same order.
pub trait Collective {
    /// This process's rank, `0..ranks()`.
    fn rank(&self) -> usize;

    /// How many processes there are.
    fn ranks(&self) -> usize;

    /// Every rank's `local` (of the same length on every rank), concatenated in rank order.
    fn all_gather_f64(&self, local: &[f64]) -> Vec<f64>;

    /// Every rank's bytes, in rank order, on rank 0 (`None` on the others).
    fn gather_bytes(&self, local: &[u8]) -> Option<Vec<Vec<u8>>>;

    /// Element-wise sum over the ranks of `values`, in place; the same bits on every rank.
    fn sum_f32(&self, values: &mut [f32]);

    /// Element-wise sum over the ranks, added in rank order on every rank (for short vectors).
    fn sum_f64(&self, local: &[f64]) -> Vec<f64> {
        if self.ranks() == 1 {
            return local.to_vec();
        }
        add_in_rank_order(&self.all_gather_f64(local), local.len())
    }

    /// Every rank's `local`, which may differ in length between ranks, in rank order.
    fn all_gather_varying_f64(&self, local: &[f64]) -> Vec<Vec<f64>> {
        if self.ranks() == 1 {
            return vec![local.to_vec()];
        }
        let lengths = self.all_gather_f64(&[local.len() as f64]);
        let longest = lengths.iter().fold(0.0f64, |a, &b| a.max(b)) as usize;
        if longest == 0 {
            return vec![Vec::new(); self.ranks()];
        }
        let mut padded = local.to_vec();
        padded.resize(longest, 0.0);
        let all = self.all_gather_f64(&padded);
        lengths
            .iter()
            .zip(all.chunks_exact(longest))
            .map(|(&n, part)| part[..n as usize].to_vec())
            .collect()
    }
}

/// The element-wise sum of the parts of length `len` of `gathered` (an all-gather's result),
/// added in rank order.
pub fn add_in_rank_order(gathered: &[f64], len: usize) -> Vec<f64> {
    let mut out = vec![0.0; len];
    for part in gathered.chunks_exact(len.max(1)) {
        for (o, v) in out.iter_mut().zip(part) {
            *o += v;
        }
    }
    out
}

/// One process alone: every collective is the identity.
#[derive(Debug, Clone, Copy, Default)]
pub struct SingleProcess;

impl Collective for SingleProcess {
    fn rank(&self) -> usize {
        0
    }

    fn ranks(&self) -> usize {
        1
    }

    fn all_gather_f64(&self, local: &[f64]) -> Vec<f64> {
        local.to_vec()
    }

    fn gather_bytes(&self, local: &[u8]) -> Option<Vec<Vec<u8>>> {
        Some(vec![local.to_vec()])
    }

    fn sum_f32(&self, _values: &mut [f32]) {}
}

/// Another collective, with the wall time spent in its operations (waiting for the slowest
/// rank included): what data-parallel training pays for communication.
pub struct Timed {
    inner: Arc<dyn Collective + Send + Sync>,
    nanos: AtomicU64,
}

impl Timed {
    /// Times `inner`'s operations.
    pub fn new(inner: Arc<dyn Collective + Send + Sync>) -> Self {
        Self {
            inner,
            nanos: AtomicU64::new(0),
        }
    }

    /// Seconds spent in collective operations so far.
    pub fn seconds(&self) -> f64 {
        self.nanos.load(Ordering::Relaxed) as f64 * 1e-9
    }

    fn timed<T>(&self, op: impl FnOnce(&dyn Collective) -> T) -> T {
        let tic = Instant::now();
        let out = op(&*self.inner);
        let spent = u64::try_from(tic.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_add(spent, Ordering::Relaxed);
        out
    }
}

impl Collective for Timed {
    fn rank(&self) -> usize {
        self.inner.rank()
    }

    fn ranks(&self) -> usize {
        self.inner.ranks()
    }

    fn all_gather_f64(&self, local: &[f64]) -> Vec<f64> {
        self.timed(|c| c.all_gather_f64(local))
    }

    fn gather_bytes(&self, local: &[u8]) -> Option<Vec<Vec<u8>>> {
        self.timed(|c| c.gather_bytes(local))
    }

    fn sum_f32(&self, values: &mut [f32]) {
        self.timed(|c| c.sum_f32(values));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::{Barrier, Mutex};

    /// Ranks as threads of one process, for tests of code that runs on several ranks: each
    /// collective is a barrier around a shared board.
    pub(crate) struct ThreadRanks {
        rank: usize,
        shared: Arc<Board>,
    }

    pub(crate) struct Board {
        ranks: usize,
        barrier: Barrier,
        slots: Mutex<Vec<Vec<f64>>>,
    }

    impl ThreadRanks {
        /// `n` handles, one per rank (move each into its own thread).
        pub(crate) fn group(n: usize) -> Vec<ThreadRanks> {
            let shared = Arc::new(Board {
                ranks: n,
                barrier: Barrier::new(n),
                slots: Mutex::new(vec![Vec::new(); n]),
            });
            (0..n)
                .map(|rank| ThreadRanks {
                    rank,
                    shared: shared.clone(),
                })
                .collect()
        }

        fn exchange(&self, local: Vec<f64>) -> Vec<Vec<f64>> {
            self.shared.barrier.wait();
            self.shared.slots.lock().expect("no panic")[self.rank] = local;
            self.shared.barrier.wait();
            let all = self.shared.slots.lock().expect("no panic").clone();
            self.shared.barrier.wait();
            all
        }
    }

    impl Collective for ThreadRanks {
        fn rank(&self) -> usize {
            self.rank
        }

        fn ranks(&self) -> usize {
            self.shared.ranks
        }

        fn all_gather_f64(&self, local: &[f64]) -> Vec<f64> {
            self.exchange(local.to_vec()).concat()
        }

        fn gather_bytes(&self, local: &[u8]) -> Option<Vec<Vec<u8>>> {
            let all = self.exchange(local.iter().map(|&b| f64::from(b)).collect());
            (self.rank == 0).then(|| {
                all.iter()
                    .map(|v| v.iter().map(|&x| x as u8).collect())
                    .collect()
            })
        }

        fn sum_f32(&self, values: &mut [f32]) {
            let all = self.exchange(values.iter().map(|&v| f64::from(v)).collect());
            for (i, v) in values.iter_mut().enumerate() {
                // In rank order, in f32 as an MPI sum of floats would be.
                *v = all.iter().fold(0.0f32, |acc, part| acc + part[i] as f32);
            }
        }
    }

    fn on_ranks<T: Send>(n: usize, f: impl Fn(&ThreadRanks) -> T + Sync) -> Vec<T> {
        std::thread::scope(|s| {
            let handles: Vec<_> = ThreadRanks::group(n)
                .into_iter()
                .map(|r| {
                    let f = &f;
                    s.spawn(move || f(&r))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("no panic"))
                .collect()
        })
    }

    #[test]
    fn sums_and_gathers_are_in_rank_order_on_every_rank() {
        let out = on_ranks(3, |c| {
            let r = c.rank() as f64;
            let sums = c.sum_f64(&[r, 10.0 * r]);
            let varying = c.all_gather_varying_f64(&vec![r; c.rank()]);
            (sums, varying)
        });
        for (sums, varying) in out {
            assert_eq!(sums, vec![3.0, 30.0]);
            assert_eq!(varying, vec![vec![], vec![1.0], vec![2.0, 2.0]]);
        }
    }

    #[test]
    fn the_single_process_is_the_identity() {
        let c = SingleProcess;
        assert_eq!(c.sum_f64(&[1.5, 2.0]), vec![1.5, 2.0]);
        assert_eq!(c.all_gather_varying_f64(&[]), vec![Vec::<f64>::new()]);
        let mut v = [1.0f32, 2.0];
        c.sum_f32(&mut v);
        assert_eq!(v, [1.0, 2.0]);
    }
}
