//! How a batch's envs are spread over the crew's workers for one step: each worker owns a
//! contiguous share and steals from the others' backs when its own is done.

use crate::crew::Crew;

/// Runs `f(i)` once for every env index `i < n`, on the crew's threads (see [`Shares`]).
pub(super) fn for_each_env(crew: &mut Crew, n: usize, f: &(dyn Fn(usize) + Sync)) {
    let shares = Shares::new(n, crew.size());
    crew.run(&|worker| {
        while let Some(i) = shares.claim(worker) {
            f(i);
        }
    });
}

/// Which worker steps which env: each worker owns a fixed contiguous share and takes its envs
/// from the front (so an env stays in the cache of the core that stepped it last); a worker
/// done with its share takes the others' remaining envs from their back.
struct Shares {
    /// Per share: the next env from the front (high 32 bits) and one past the last env not yet
    /// taken from the back (low 32 bits).
    bounds: Vec<ShareBounds>,
}

/// One share's bounds, alone in its cache line: each worker claims from its own share all the
/// time, and shares in one line would bounce it between the cores at every claim.
#[repr(align(128))]
struct ShareBounds(std::sync::atomic::AtomicU64);

impl Shares {
    fn new(envs: usize, workers: usize) -> Self {
        let per = envs.div_ceil(workers.max(1));
        let bounds = (0..workers)
            .map(|w| {
                let start = (w * per).min(envs) as u64;
                let end = ((w + 1) * per).min(envs) as u64;
                ShareBounds(std::sync::atomic::AtomicU64::new((start << 32) | end))
            })
            .collect();
        Self { bounds }
    }

    /// The next env for `worker`: from the front of its own share, else from the back of
    /// another's; `None` when every env is taken.
    fn claim(&self, worker: usize) -> Option<usize> {
        let n = self.bounds.len();
        if let Some(i) = self.take(worker % n, true) {
            return Some(i);
        }
        (1..n).find_map(|k| self.take((worker + k) % n, false))
    }

    fn take(&self, share: usize, front: bool) -> Option<usize> {
        use std::sync::atomic::Ordering;
        let b = &self.bounds[share].0;
        let mut cur = b.load(Ordering::Acquire);
        loop {
            let (start, end) = (cur >> 32, cur & 0xffff_ffff);
            if start >= end {
                return None;
            }
            let (next, taken) = if front {
                (((start + 1) << 32) | end, start)
            } else {
                ((start << 32) | (end - 1), end - 1)
            };
            match b.compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(taken as usize),
                Err(now) => cur = now,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Shares;

    #[test]
    fn concurrent_workers_take_every_env_once_owners_from_their_own_front() {
        for (envs, workers) in [(50, 2), (7, 3), (2, 4), (0, 2), (200, 5)] {
            let shares = Shares::new(envs, workers);
            let taken: Vec<Vec<usize>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..workers)
                    .map(|w| {
                        let shares = &shares;
                        s.spawn(move || std::iter::from_fn(|| shares.claim(w)).collect())
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("no panic"))
                    .collect()
            });
            let mut all: Vec<usize> = taken.concat();
            all.sort_unstable();
            assert_eq!(
                all,
                (0..envs).collect::<Vec<_>>(),
                "{envs} envs, {workers} workers"
            );
        }
        // Alone, a worker takes its own share front to back, then the others' from the back.
        let shares = Shares::new(6, 2);
        let order: Vec<usize> = std::iter::from_fn(|| shares.claim(1)).collect();
        assert_eq!(order, vec![3, 4, 5, 2, 1, 0]);
    }
}
