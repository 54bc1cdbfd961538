//! The simulator's stated limits: the largest (and smallest) values a scenario, a command or a
//! vector env may ask for. Beyond them a run would hang, allocate without bound or report
//! values that cannot be; every loader checks against these constants and names the limit in
//! its error.

/// Lowest pacing rate the simulator accepts (packets/s): one packet every 1000 s.
pub const MIN_SIM_RATE_PPS: f64 = 1e-3;
/// Highest pacing rate the simulator accepts (packets/s): 12 Gbit/s of 1500-byte packets, the
/// rate rule's own limit.
pub const MAX_SIM_RATE_PPS: f64 = mocc_policy::rate::MAX_RATE_PPS;
/// Smallest bottleneck bandwidth (packets/s): 12 kbit/s of 1500-byte packets. Slower links
/// deliver nothing within an MI, so every per-MI statistic would be empty.
pub const MIN_LINK_BANDWIDTH_PPS: f64 = 1.0;
/// Largest bottleneck bandwidth (packets/s): 12 Gbit/s of 1500-byte packets.
pub const MAX_LINK_BANDWIDTH_PPS: f64 = 1e6;
/// Largest one-way propagation delay, and largest extra RTT of a sender (s).
pub const MAX_DELAY_S: f64 = 10.0;
/// Largest bottleneck queue (packets).
pub const MAX_QUEUE_PKTS: f64 = 1e7;
/// Most envs in one vector env (each holds a network and its buffers).
pub const MAX_ENVS: usize = 1 << 16;
/// Most worker threads per core of this machine (more only adds scheduling overhead).
pub const THREADS_PER_CORE: usize = 8;

/// The most worker threads a run may ask for on this machine: [`THREADS_PER_CORE`] per core,
/// and at least [`THREADS_PER_CORE`].
pub fn max_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    THREADS_PER_CORE * cores.max(1)
}

/// Checks a fixed sending rate (packets/s) a user gives: `Err(message)` outside
/// ([`MIN_SIM_RATE_PPS`], [`MAX_SIM_RATE_PPS`]).
pub fn check_rate(rate_pps: f64) -> Result<(), String> {
    if rate_pps.is_finite() && (MIN_SIM_RATE_PPS..=MAX_SIM_RATE_PPS).contains(&rate_pps) {
        Ok(())
    } else {
        Err(format!(
            "must be a number of packets/s in [{}, {}] (got {})",
            fmt_number(MIN_SIM_RATE_PPS),
            fmt_number(MAX_SIM_RATE_PPS),
            fmt_number(rate_pps)
        ))
    }
}

/// Checks a worker-thread count: `Err(message)` outside 1..=[`max_threads`].
pub fn check_threads(threads: usize) -> Result<(), String> {
    let max = max_threads();
    match threads {
        0 => Err("must be >= 1 (got 0)".into()),
        t if t > max => Err(format!(
            "at most {max} on this machine ({THREADS_PER_CORE} per core; got {t})"
        )),
        _ => Ok(()),
    }
}

/// Checks an env count: `Err(message)` outside 1..=[`MAX_ENVS`].
pub fn check_envs(envs: usize) -> Result<(), String> {
    match envs {
        0 => Err("must be >= 1 (got 0)".into()),
        n if n > MAX_ENVS => Err(format!("at most {MAX_ENVS} (got {n})")),
        _ => Ok(()),
    }
}

/// A number for a message: integers up to 1e15 in full, others in scientific notation when
/// very large or very small, so a bound such as `f64::MAX` never prints 309 digits.
pub fn fmt_number(v: f64) -> String {
    let a = v.abs();
    if v.is_finite() && a != 0.0 && !(1e-4..1e15).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_and_env_bounds_name_the_limit() {
        assert!(check_threads(1).is_ok());
        assert!(check_threads(max_threads()).is_ok());
        assert!(check_threads(0).unwrap_err().contains(">= 1"));
        let e = check_threads(max_threads() + 1).unwrap_err();
        assert!(e.contains(&max_threads().to_string()), "{e}");
        assert!(check_envs(MAX_ENVS).is_ok());
        assert!(check_envs(100_000_000).unwrap_err().contains("65536"));
        assert!(check_rate(100.0).is_ok());
        assert!(check_rate(1e7).unwrap_err().contains("1000000"));
        assert!(check_rate(f64::NAN).is_err());
        assert!(check_rate(0.0).is_err());
    }

    #[test]
    fn numbers_print_short() {
        assert_eq!(fmt_number(f64::MAX), "1.7976931348623157e308");
        assert_eq!(fmt_number(1e-300), "1e-300");
        assert_eq!(fmt_number(1000.0), "1000");
        assert_eq!(fmt_number(0.05), "0.05");
        assert_eq!(fmt_number(0.0), "0");
        assert_eq!(fmt_number(f64::INFINITY), "inf");
    }
}
