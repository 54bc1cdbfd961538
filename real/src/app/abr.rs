//! Bitrate adaptation for chunked video, as Pensieve's baselines define it: robustMPC
//! (a 5-chunk horizon over the harmonic mean of the last 5 throughputs, discounted by the
//! largest recent prediction error) and the buffer-based rule (BBA: a 5 s reservoir and a 10 s
//! cushion). Both start at the second-lowest level. QoE_lin scores a session.

/// Pensieve's bitrate ladder (kbit/s).
pub const LADDER_KBPS: [f64; 6] = [300.0, 750.0, 1200.0, 1850.0, 2850.0, 4300.0];
/// Seconds of video per chunk.
pub const CHUNK_S: f64 = 4.0;
/// QoE_lin's price of a second of rebuffering (per Mbit/s of bitrate).
pub const REBUFFER_PENALTY: f64 = 4.3;
/// The level of the first chunk (750 kbit/s).
pub const FIRST_LEVEL: usize = 1;
/// Chunks robustMPC looks ahead.
const MPC_HORIZON: usize = 5;
/// Past throughputs (and prediction errors) robustMPC averages over.
const MPC_PAST: usize = 5;
/// BBA: below this buffer (s), the lowest level.
const BBA_RESERVOIR_S: f64 = 5.0;
/// BBA: the buffer range (s) over which the level climbs from lowest to highest.
const BBA_CUSHION_S: f64 = 10.0;

/// Bytes of a chunk at `level` (constant-bitrate chunks).
pub fn chunk_bytes(level: usize) -> usize {
    (LADDER_KBPS[level] * 1e3 * CHUNK_S / 8.0) as usize
}

/// A rule that picks each chunk's level.
#[derive(Debug, Clone, PartialEq)]
pub enum AbrRule {
    /// robustMPC, with the harmonic-mean estimates it made so far.
    RobustMpc {
        /// Its throughput estimate before each chunk (Mbit/s).
        estimates: Vec<f64>,
    },
    /// The buffer-based rule.
    BufferBased,
}

impl AbrRule {
    /// robustMPC, fresh.
    pub fn robust_mpc() -> Self {
        Self::RobustMpc {
            estimates: Vec::new(),
        }
    }

    /// Its name in files.
    pub fn name(&self) -> &'static str {
        match self {
            Self::RobustMpc { .. } => "mpc",
            Self::BufferBased => "bba",
        }
    }

    /// The level of the next chunk, given the buffer (s), the last chunk's level, the
    /// measured throughput of every chunk so far (Mbit/s) and the chunks left (this one
    /// included).
    pub fn choose(
        &mut self,
        buffer_s: f64,
        last: usize,
        throughputs: &[f64],
        left: usize,
    ) -> usize {
        if throughputs.is_empty() {
            return FIRST_LEVEL;
        }
        match self {
            Self::BufferBased => buffer_based(buffer_s),
            Self::RobustMpc { estimates } => {
                let error = max_recent_error(estimates, throughputs);
                let recent = &throughputs[throughputs.len().saturating_sub(MPC_PAST)..];
                let harmonic = recent.len() as f64 / recent.iter().map(|t| 1.0 / t).sum::<f64>();
                estimates.push(harmonic);
                best_first_level(
                    buffer_s,
                    last,
                    harmonic / (1.0 + error),
                    left.min(MPC_HORIZON),
                )
            }
        }
    }
}

/// BBA's level for `buffer_s`.
fn buffer_based(buffer_s: f64) -> usize {
    let top = LADDER_KBPS.len() - 1;
    if buffer_s < BBA_RESERVOIR_S {
        0
    } else if buffer_s >= BBA_RESERVOIR_S + BBA_CUSHION_S {
        top
    } else {
        ((buffer_s - BBA_RESERVOIR_S) / BBA_CUSHION_S * top as f64) as usize
    }
}

/// The largest relative error of the last estimates against the throughputs that followed
/// them (estimate k was made before chunk k+1, whose throughput is `throughputs[k + 1]`).
fn max_recent_error(estimates: &[f64], throughputs: &[f64]) -> f64 {
    let errors: Vec<f64> = estimates
        .iter()
        .enumerate()
        .filter_map(|(k, e)| throughputs.get(k + 1).map(|t| (e - t).abs() / t))
        .collect();
    errors[errors.len().saturating_sub(MPC_PAST)..]
        .iter()
        .copied()
        .fold(0.0, f64::max)
}

/// The first level of the plan over `horizon` chunks with the best QoE_lin at `throughput`.
fn best_first_level(buffer_s: f64, last: usize, throughput_mbit: f64, horizon: usize) -> usize {
    let levels = LADDER_KBPS.len();
    let plans = levels.pow(horizon as u32);
    let mut best = (f64::NEG_INFINITY, FIRST_LEVEL);
    for plan in 0..plans {
        let (mut code, mut buffer, mut prev) = (plan, buffer_s, last);
        let (mut first, mut qoe) = (0, 0.0);
        for step in 0..horizon {
            let level = code % levels;
            code /= levels;
            if step == 0 {
                first = level;
            }
            let download_s = chunk_bytes(level) as f64 * 8.0 / 1e6 / throughput_mbit;
            let rebuffer = (download_s - buffer).max(0.0);
            buffer = (buffer - download_s).max(0.0) + CHUNK_S;
            qoe += chunk_qoe(level, prev, rebuffer);
            prev = level;
        }
        if qoe > best.0 {
            best = (qoe, first);
        }
    }
    best.1
}

/// QoE_lin of one chunk: its bitrate (Mbit/s), less 4.3 per second of rebuffering before it,
/// less the change of bitrate from the chunk before (Mbit/s).
pub fn chunk_qoe(level: usize, previous: usize, rebuffer_s: f64) -> f64 {
    let mbit = |l: usize| LADDER_KBPS[l] / 1e3;
    mbit(level) - REBUFFER_PENALTY * rebuffer_s - (mbit(level) - mbit(previous)).abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_four_seconds_at_their_bitrate() {
        assert_eq!(chunk_bytes(0), 150_000);
        assert_eq!(chunk_bytes(5), 2_150_000);
    }

    #[test]
    fn qoe_by_hand() {
        // 1.85 Mbit/s after 0.75, half a second of rebuffering: 1.85 - 2.15 - 1.1.
        assert!((chunk_qoe(3, 1, 0.5) - (1.85 - 2.15 - 1.1)).abs() < 1e-12);
        assert_eq!(chunk_qoe(2, 2, 0.0), 1.2);
    }

    #[test]
    fn buffer_based_climbs_through_the_cushion() {
        assert_eq!(buffer_based(0.0), 0);
        assert_eq!(buffer_based(4.9), 0);
        assert_eq!(buffer_based(5.0), 0);
        assert_eq!(buffer_based(7.0), 1);
        assert_eq!(buffer_based(12.5), 3);
        assert_eq!(buffer_based(15.0), 5);
        assert_eq!(AbrRule::BufferBased.choose(30.0, 0, &[], 10), FIRST_LEVEL);
    }

    #[test]
    fn mpc_follows_a_steady_throughput() {
        // At a steady 10 Mbit/s with a full buffer, the top level; at 1 Mbit/s with an empty
        // buffer, a level below 1 Mbit/s.
        let mut mpc = AbrRule::robust_mpc();
        assert_eq!(mpc.choose(20.0, 5, &[10.0; 6], 10), 5);
        let mut mpc = AbrRule::robust_mpc();
        let level = mpc.choose(0.5, 1, &[1.0; 6], 10);
        assert!(LADDER_KBPS[level] < 1000.0, "{level}");
    }

    #[test]
    fn mpc_discounts_by_its_recent_error() {
        // Estimates of 4 before throughputs of 2: an error of 1, so the estimate is halved.
        assert_eq!(max_recent_error(&[4.0, 4.0], &[1.0, 2.0, 2.0]), 1.0);
        assert_eq!(max_recent_error(&[], &[1.0]), 0.0);
        let mut mpc = AbrRule::robust_mpc();
        mpc.choose(10.0, 1, &[2.0], 10);
        assert_eq!(
            mpc,
            AbrRule::RobustMpc {
                estimates: vec![2.0]
            }
        );
    }
}
