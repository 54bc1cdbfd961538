//! Ctrl-C and SIGTERM during a run: the namespaces this process created are removed before it
//! exits, so an interrupted run leaves nothing behind (a `kill -9` still relies on the next
//! run's [`crate::cleanup_stale`]).

use std::sync::atomic::{AtomicBool, Ordering};

use crate::cleanup::remove_own;
use crate::error::{NetError, Result};

/// Set by the interrupt thread before it removes the namespaces: from then on the run's own
/// commands may fail for want of them, and the process is about to exit with 128 + the signal.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Runs `run` so that Ctrl-C or SIGTERM removes this process's namespaces and exits with
/// status 128 + the signal. Call it once, on the thread that starts the run, before the run
/// spawns threads: SIGINT and SIGTERM are blocked in the calling thread (and so in every thread
/// it spawns afterwards) and a thread waits for them. When a signal came, the run's result is
/// never returned: the cleanup removes the namespaces under the run, which may then fail, and
/// the process ends with the signal's status, not with that error.
pub fn remove_namespaces_on_interrupt<T>(run: impl FnOnce() -> T) -> Result<T> {
    start_interrupt_thread()?;
    let result = run();
    hold_if_interrupted();
    Ok(result)
}

/// Blocks SIGINT and SIGTERM in the calling thread and starts the thread that waits for them.
fn start_interrupt_thread() -> Result<()> {
    let set = interrupt_signals();
    // SAFETY: `set` is a valid, initialized signal set; the old mask is not wanted.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(NetError::io(
            "blocking SIGINT and SIGTERM",
            std::io::Error::from_raw_os_error(rc),
        ));
    }
    std::thread::Builder::new()
        .name("interrupt".into())
        .spawn(move || {
            let signal = wait_for(&set);
            INTERRUPTED.store(true, Ordering::SeqCst);
            // Best effort: the process is ending either way.
            let _ = remove_own();
            std::process::exit(128 + signal);
        })
        .map_err(|e| NetError::io("starting the interrupt thread", e))?;
    Ok(())
}

/// How long [`hold_if_interrupted`] waits for the interrupt thread to end the process.
const CLEANUP_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Blocks the calling thread once a signal has begun the interrupt thread's cleanup, so that
/// the process ends with the signal's status and not with an error the removed namespaces
/// caused (or a success that raced the cleanup). Returns at once when no signal came, and
/// after 30 s if the cleanup hangs (the caller then reports what it has, rather than hang too).
fn hold_if_interrupted() {
    let start = std::time::Instant::now();
    while INTERRUPTED.load(Ordering::SeqCst) {
        let Some(left) = CLEANUP_WAIT.checked_sub(start.elapsed()) else {
            return;
        };
        // The interrupt thread exits the process; parking may wake early, so loop.
        std::thread::park_timeout(left);
    }
}

fn interrupt_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset initializes the zeroed set before sigaddset uses it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        set
    }
}

/// Waits until one of `set`'s signals is pending; returns it.
fn wait_for(set: &libc::sigset_t) -> i32 {
    loop {
        let mut signal = 0;
        // SAFETY: `set` is initialized and `signal` is a valid out-pointer.
        if unsafe { libc::sigwait(set, &mut signal) } == 0 {
            return signal;
        }
    }
}
