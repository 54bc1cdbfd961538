//! The worker threads of the vector step. A vector step takes a fraction of a millisecond, and
//! a thread pool whose workers sleep between steps pays a wake-up at each one. The crew's
//! workers spin for a short while after a step, so the next step starts on them at once, and
//! sleep only when no step comes (during a PPO update, say).

use std::any::Any;
use std::cell::UnsafeCell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a worker spins for the next job before it sleeps.
const SPIN: Duration = Duration::from_micros(200);

/// `workers` threads that run a job together with the calling thread.
pub(crate) struct Crew {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

/// The job handed over: a borrowed closure whose lifetime the crew erases. [`Crew::run`]
/// waits until every worker is done with it before it returns, so it never outlives the
/// borrow.
type Job = &'static (dyn Fn(usize) + Sync);

struct Shared {
    /// Incremented for each job (and once for the shutdown).
    epoch: AtomicU64,
    /// Written by the caller before `epoch` moves on, read by workers after they see it move.
    job: UnsafeCell<Option<Job>>,
    /// Workers that have not finished the current job.
    pending: AtomicUsize,
    /// A worker's panic, handed to the caller.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    shutdown: AtomicBool,
    sleepers: AtomicUsize,
    sleep_lock: Mutex<()>,
    wake: Condvar,
}

// SAFETY: `job` is written only by `Crew::run` while no worker reads it (every worker has
// finished the previous job: `pending` is 0), and published to the workers by the release
// increment of `epoch`, which they acquire before reading it.
unsafe impl Sync for Shared {}

impl Crew {
    /// A crew of `workers` threads (0: the caller runs every job alone).
    pub(crate) fn new(workers: usize) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            epoch: AtomicU64::new(0),
            job: UnsafeCell::new(None),
            pending: AtomicUsize::new(0),
            panic: Mutex::new(None),
            shutdown: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            sleep_lock: Mutex::new(()),
            wake: Condvar::new(),
        });
        let mut crew = Self {
            shared,
            threads: Vec::with_capacity(workers),
        };
        for index in 1..=workers {
            let shared = Arc::clone(&crew.shared);
            let handle = std::thread::Builder::new()
                .name(format!("mocc-step-{index}"))
                .spawn(move || work(&shared, index))?;
            crew.threads.push(handle);
        }
        Ok(crew)
    }

    /// Runs `job(0)` on the calling thread and `job(1)`..`job(workers)` on the workers, and
    /// returns when all are done; a panic in any of them is resumed here.
    ///
    /// `&mut self`: one run at a time, and a job cannot start another run on its own crew.
    pub(crate) fn run(&mut self, job: &(dyn Fn(usize) + Sync)) {
        if self.threads.is_empty() {
            job(0);
            return;
        }
        let s = &*self.shared;
        // A panic left from a run whose caller unwound first is not this run's.
        s.panic
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        // SAFETY: the lifetime is erased only for the workers' view of `job`; the guard below
        // waits for every worker to finish before this function returns or unwinds.
        let erased: Job = unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), Job>(job) };
        // SAFETY: no worker reads `job` now (the previous run waited for `pending` to reach 0).
        unsafe { *s.job.get() = Some(erased) };
        s.pending.store(self.threads.len(), Ordering::Relaxed);
        s.epoch.fetch_add(1, Ordering::SeqCst);
        let wait = WaitForWorkers(s);
        wake_sleepers(s);
        job(0);
        drop(wait);
        // SAFETY: every worker is done with the job.
        unsafe { *s.job.get() = None };
        let panic = s
            .panic
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(payload) = panic {
            resume_unwind(payload);
        }
    }
}

/// Waits (spinning, then yielding) until every worker has finished the current job, also when
/// the caller's own part unwinds.
struct WaitForWorkers<'a>(&'a Shared);

impl Drop for WaitForWorkers<'_> {
    fn drop(&mut self) {
        let mut spins = 0u32;
        while self.0.pending.load(Ordering::Acquire) != 0 {
            if spins < 1 << 14 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

fn wake_sleepers(s: &Shared) {
    if s.sleepers.load(Ordering::SeqCst) > 0 {
        let _lock = s.sleep_lock.lock().unwrap_or_else(PoisonError::into_inner);
        s.wake.notify_all();
    }
}

/// A worker's loop: wait for the epoch to move, run the job, report.
fn work(s: &Shared, index: usize) {
    let mut seen = 0u64;
    loop {
        seen = next_epoch(s, seen);
        if s.shutdown.load(Ordering::Acquire) {
            return;
        }
        // SAFETY: published by the epoch increment acquired in `next_epoch`; the caller does
        // not touch it until `pending` reaches 0 below.
        let job = unsafe { *s.job.get() };
        if let Some(job) = job {
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| job(index))) {
                let mut slot = s.panic.lock().unwrap_or_else(PoisonError::into_inner);
                slot.get_or_insert(payload);
            }
        }
        s.pending.fetch_sub(1, Ordering::Release);
    }
}

/// Waits until the epoch differs from `seen`: spins for [`SPIN`], then sleeps.
fn next_epoch(s: &Shared, seen: u64) -> u64 {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        let now = s.epoch.load(Ordering::Acquire);
        if now != seen {
            return now;
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(64) && start.elapsed() > SPIN {
            break;
        }
        std::hint::spin_loop();
    }
    s.sleepers.fetch_add(1, Ordering::SeqCst);
    let mut lock = s.sleep_lock.lock().unwrap_or_else(PoisonError::into_inner);
    let mut now = s.epoch.load(Ordering::SeqCst);
    while now == seen {
        lock = s.wake.wait(lock).unwrap_or_else(PoisonError::into_inner);
        now = s.epoch.load(Ordering::SeqCst);
    }
    drop(lock);
    s.sleepers.fetch_sub(1, Ordering::SeqCst);
    now
}

impl Crew {
    /// Threads that run a job: the workers and the caller.
    pub(crate) fn size(&self) -> usize {
        self.threads.len() + 1
    }
}

impl Drop for Crew {
    fn drop(&mut self) {
        let s = &*self.shared;
        s.shutdown.store(true, Ordering::Release);
        s.epoch.fetch_add(1, Ordering::SeqCst);
        wake_sleepers(s);
        for handle in self.threads.drain(..) {
            // A worker catches its job's panics, so joining only fails if the loop itself did.
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn every_index_runs_once_per_job_and_jobs_see_each_others_writes() {
        let mut crew = Crew::new(3).unwrap();
        let counts: Vec<AtomicU32> = (0..4).map(|_| AtomicU32::new(0)).collect();
        for round in 0..2000u32 {
            crew.run(&|i| {
                // Each index sees its own count of the previous round: the runs do not overlap.
                assert_eq!(counts[i].load(Ordering::Relaxed), round);
                counts[i].fetch_add(1, Ordering::Relaxed);
            });
            if round % 500 == 0 {
                // Long enough for the workers to fall asleep: the next job wakes them.
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        for c in &counts {
            assert_eq!(c.load(Ordering::Relaxed), 2000);
        }
    }

    #[test]
    fn a_workers_panic_reaches_the_caller_and_the_crew_goes_on() {
        let mut crew = Crew::new(2).unwrap();
        let hit = std::panic::catch_unwind(AssertUnwindSafe(|| {
            crew.run(&|i| {
                if i == 2 {
                    panic!("worker two");
                }
            })
        }));
        let payload = hit.expect_err("the panic is resumed");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"worker two"));
        let ran = AtomicU32::new(0);
        crew.run(&|_| {
            ran.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(ran.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn without_workers_the_caller_runs_the_job() {
        let mut crew = Crew::new(0).unwrap();
        let ran = AtomicU32::new(0);
        crew.run(&|i| {
            assert_eq!(i, 0);
            ran.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(ran.load(Ordering::Relaxed), 1);
    }
}
