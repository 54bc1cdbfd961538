//! [`BaselineKind`]: how the latency baseline is formed from MI latencies, and the limits
//! its parameters are checked against.

use serde::{Deserialize, Serialize};

/// How the latency-ratio baseline is formed from MI mean latencies.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum BaselineKind {
    /// Aurora: the minimum MI mean latency over the whole connection.
    #[default]
    ConnectionMin,
    /// The minimum MI mean latency among MIs that ended in the last `seconds` (the most recent
    /// MI with samples is always kept), so the baseline follows base-RTT increases.
    WindowedMin {
        /// Window length in seconds (in (0, 3600]).
        seconds: f64,
    },
    /// The windowed minimum, restarted at the first drained MI of each back-off: one sent at no
    /// more than `drain_fraction` of the highest delivery rate of the window, with little loss,
    /// whose RTT stayed flat (see [`is_drained`](super::is_drained)). The sender's own queue
    /// would drain there, so its latency is the path's base RTT now (plus any queue competitors
    /// hold) and older, lower samples describe a path that is gone.
    DrainAware {
        /// Window length in seconds (in (0, 3600]), for both the latencies and the delivery
        /// rates.
        seconds: f64,
        /// Sending rate, as a fraction of the window's highest delivery rate, at or below which
        /// an MI may count as drained (in (0, 0.9]; default 0.5).
        #[serde(default = "default_drain_fraction")]
        drain_fraction: f64,
    },
}

fn default_drain_fraction() -> f64 {
    0.5
}

/// Highest drain fraction: near 1 a sender at its peak with a standing queue would restart the
/// window at every MI, and latency ratio would never see the queue.
pub const MAX_DRAIN_FRACTION: f64 = 0.9;

impl BaselineKind {
    /// Checks the mode's parameters; the error is (field under `latency_baseline`, message).
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        match *self {
            BaselineKind::ConnectionMin => Ok(()),
            BaselineKind::WindowedMin { seconds } => {
                positive_window(seconds, "latency_baseline.windowed_min.seconds")
            }
            BaselineKind::DrainAware {
                seconds,
                drain_fraction,
            } => {
                positive_window(seconds, "latency_baseline.drain_aware.seconds")?;
                if drain_fraction > 0.0 && drain_fraction <= MAX_DRAIN_FRACTION {
                    Ok(())
                } else {
                    Err((
                        "latency_baseline.drain_aware.drain_fraction",
                        format!("must lie in (0, {MAX_DRAIN_FRACTION}] (got {drain_fraction})"),
                    ))
                }
            }
        }
    }
}

/// Longest baseline window (s): an hour, far beyond any path's memory.
pub const MAX_WINDOW_S: f64 = 3600.0;

pub(super) fn positive_window(
    seconds: f64,
    field: &'static str,
) -> Result<(), (&'static str, String)> {
    if seconds > 0.0 && seconds <= MAX_WINDOW_S {
        Ok(())
    } else {
        Err((
            field,
            format!("must lie in (0, {MAX_WINDOW_S}] (got {seconds})"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drain_aware_reads_with_its_default_fraction_and_checks_it() {
        let m: BaselineKind = serde_json::from_str(r#"{"drain_aware": {"seconds": 5}}"#).unwrap();
        assert_eq!(
            m,
            BaselineKind::DrainAware {
                seconds: 5.0,
                drain_fraction: 0.5
            }
        );
        let bad = BaselineKind::DrainAware {
            seconds: 5.0,
            drain_fraction: 1.5,
        };
        let (field, _) = bad.validate().unwrap_err();
        assert_eq!(field, "latency_baseline.drain_aware.drain_fraction");
        let (field, _) = BaselineKind::WindowedMin { seconds: 0.0 }
            .validate()
            .unwrap_err();
        assert_eq!(field, "latency_baseline.windowed_min.seconds");
    }
}
