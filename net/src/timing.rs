//! Clocks and precise sleeps shared by the delay line and the probe.

use std::time::Instant;

/// CLOCK_MONOTONIC in nanoseconds: the same clock in every network namespace of the host, so
/// a timestamp taken in one namespace can be compared with one taken in another.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in nanoseconds (the clock of kernel packet timestamps).
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// CPU time of the calling thread (s).
pub fn thread_cpu_s() -> f64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) as f64 * 1e-9
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec; these clocks always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC, ns: converts a realtime stamp (as the kernel puts on
/// packets) to the monotonic clock. The realtime read is sandwiched between two monotonic
/// reads and retried while they are more than 1 us apart, so an interrupt between the reads
/// does not skew it.
pub fn realtime_minus_monotonic_ns() -> i128 {
    let mut best: Option<(u64, i128)> = None;
    for _ in 0..100 {
        let before = monotonic_ns();
        let real = realtime_ns();
        let after = monotonic_ns();
        let spread = after.saturating_sub(before);
        let offset = i128::from(real) - i128::from(before / 2 + after / 2);
        if best.is_none_or(|(s, _)| spread < s) {
            best = Some((spread, offset));
        }
        if spread <= 1_000 {
            break;
        }
    }
    best.map_or(0, |(_, offset)| offset)
}

/// Timer slack 1 ns for the calling thread: its sleeps end when asked, not up to 50 us later.
/// Failure leaves the default slack (callers absorb it).
pub fn set_timer_slack_to_minimum() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and only affects this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

/// Sleeps until `due` (returns at once when it has passed).
pub fn sleep_until(due: Instant) {
    let now = Instant::now();
    if due > now {
        std::thread::sleep(due - now);
    }
}

/// Moves the calling thread to SCHED_FIFO at `priority` (1-99) so that it preempts ordinary
/// threads the moment its timer or its file descriptor wakes it. Returns false when the
/// kernel refuses (no CAP_SYS_NICE, or RT bandwidth unavailable); the thread then keeps the
/// normal policy.
pub fn try_realtime_priority(priority: i32) -> bool {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pthread_self is always valid; `param` outlives the call.
    unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) == 0 }
}
