//! The latency baseline that `latency ratio` divides by (Aurora's `conn min latency`).
//!
//! Aurora takes the minimum MI latency of the whole connection. A windowed minimum follows a
//! base-RTT increase after its window. The drain-aware minimum also follows it as soon as the
//! sender has shown that no queue of its own is left: an MI sent well below the delivery rate
//! the path recently gave, whose RTT stayed flat, measures the path as it is now.

use crate::features::MetricsVersion;
use crate::mi::MonitorInterval;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// How the latency-ratio baseline is formed from MI mean latencies.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum BaselineMode {
    /// Aurora: the minimum MI mean latency over the whole connection.
    #[default]
    ConnectionMin,
    /// The minimum MI mean latency among MIs that ended in the last `seconds` (the most recent
    /// MI with samples is always kept), so the baseline follows base-RTT increases.
    WindowedMin {
        /// Window length in seconds (> 0).
        seconds: f64,
    },
    /// The windowed minimum, restarted at every drained MI: one sent at no more than
    /// `drain_fraction` of the highest delivery rate of the window, whose RTT stayed flat
    /// (see [`is_drained`]). Such an MI cannot be sitting on a queue of its own sender, so its
    /// latency is the path's base RTT now (plus any queue competitors hold) and older, lower
    /// samples describe a path that is gone.
    DrainAware {
        /// Window length in seconds (> 0), for both the latencies and the delivery rates.
        seconds: f64,
        /// Sending rate, as a fraction of the window's highest delivery rate, at or below which
        /// an MI may count as drained (in (0, 1]; default 0.5).
        #[serde(default = "default_drain_fraction")]
        drain_fraction: f64,
    },
}

fn default_drain_fraction() -> f64 {
    0.5
}

impl BaselineMode {
    /// Checks the mode's parameters; the error is (field under `latency_baseline`, message).
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        match *self {
            BaselineMode::ConnectionMin => Ok(()),
            BaselineMode::WindowedMin { seconds } => {
                positive_window(seconds, "latency_baseline.windowed_min.seconds")
            }
            BaselineMode::DrainAware {
                seconds,
                drain_fraction,
            } => {
                positive_window(seconds, "latency_baseline.drain_aware.seconds")?;
                if drain_fraction > 0.0 && drain_fraction <= 1.0 {
                    Ok(())
                } else {
                    Err((
                        "latency_baseline.drain_aware.drain_fraction",
                        format!("must lie in (0, 1] (got {drain_fraction})"),
                    ))
                }
            }
        }
    }
}

fn positive_window(seconds: f64, field: &'static str) -> Result<(), (&'static str, String)> {
    if seconds.is_finite() && seconds > 0.0 {
        Ok(())
    } else {
        Err((field, format!("must be > 0 (got {seconds})")))
    }
}

/// Relative change of RTT within an MI (second half against first half, over the MI's mean)
/// below which the RTT counts as flat.
pub const FLAT_RTT_FRACTION: f64 = 0.02;

/// Absolute RTT change (s) that always counts as flat: host jitter of up to a millisecond moves
/// the half means by a fraction of that.
pub const FLAT_RTT_FLOOR_S: f64 = 0.0005;

/// Whether `mi` was drained: it was sent at no more than `drain_fraction` times
/// `max_delivery_pps`, and its RTT was flat: its two halves' means, and its mean against
/// `previous_latency_s` (the mean of the sender's previous MI with samples), differ by no more
/// than [`FLAT_RTT_FRACTION`] of its mean latency (or [`FLAT_RTT_FLOOR_S`]). A queue of the
/// sender's own packets drains while it sends below the delivery rate, so its RTT would fall.
/// After a capacity drop the window's highest delivery rate overstates the path; a sender just
/// under the new capacity drains its queue slowly, which the comparison across MIs sees.
pub fn is_drained(
    mi: &MonitorInterval,
    previous_latency_s: Option<f64>,
    max_delivery_pps: f64,
    drain_fraction: f64,
) -> bool {
    let latency = mi.avg_latency_s();
    let Some(previous) = previous_latency_s else {
        return false;
    };
    if mi.rtt.count < 2 || latency <= 0.0 || max_delivery_pps <= 0.0 {
        return false;
    }
    let tolerance = (FLAT_RTT_FRACTION * latency).max(FLAT_RTT_FLOOR_S);
    mi.rtt.latency_increase_s().abs() <= tolerance
        && (latency - previous).abs() <= tolerance
        && mi.send_rate_pps() <= drain_fraction * max_delivery_pps
}

/// What a connection's history says about its path, as features read it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathEstimate {
    /// The latency baseline (s).
    pub baseline_s: f64,
    /// The highest delivery rate (packets/s) of the baseline's window (the whole connection for
    /// `connection_min`); 0 before any packet was delivered.
    pub peak_delivery_pps: f64,
}

/// The latency baseline of one connection (Aurora's `conn min latency`), updated once per MI,
/// and the peak delivery rate over the same window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyBaseline {
    mode: BaselineMode,
    version: MetricsVersion,
    conn_min: Option<f64>,
    /// (MI end, MI mean latency) of the windowed modes, oldest first.
    window: VecDeque<(f64, f64)>,
    /// (MI end, delivery rate in packets/s), oldest first, kept decreasing so the front is the
    /// window's highest.
    #[serde(default)]
    deliveries: VecDeque<(f64, f64)>,
    /// Highest delivery rate (packets/s) of the connection (`connection_min` mode).
    #[serde(default)]
    conn_peak_pps: f64,
    /// Mean latency of the last MI with RTT samples (drain-aware mode).
    #[serde(default)]
    last_latency_s: Option<f64>,
}

impl LatencyBaseline {
    /// A fresh connection.
    pub fn new(mode: BaselineMode, version: MetricsVersion) -> Self {
        Self {
            mode,
            version,
            conn_min: None,
            window: VecDeque::new(),
            deliveries: VecDeque::new(),
            conn_peak_pps: 0.0,
            last_latency_s: None,
        }
    }

    /// Forgets everything (a new connection).
    pub fn reset(&mut self) {
        self.conn_min = None;
        self.window.clear();
        self.deliveries.clear();
        self.conn_peak_pps = 0.0;
        self.last_latency_s = None;
    }

    /// The baseline without updating it (the version's empty baseline before any sample).
    pub fn current(&self) -> f64 {
        let empty = self.version.empty_baseline_s();
        match self.mode {
            BaselineMode::ConnectionMin => self.conn_min.unwrap_or(empty),
            BaselineMode::WindowedMin { .. } | BaselineMode::DrainAware { .. } => self
                .window
                .iter()
                .map(|&(_, lat)| lat)
                .reduce(f64::min)
                .unwrap_or(empty),
        }
    }

    /// The baseline and the peak delivery rate, without updating them.
    pub fn estimate(&self) -> PathEstimate {
        PathEstimate {
            baseline_s: self.current(),
            peak_delivery_pps: self.max_delivery_pps(),
        }
    }

    /// Folds one MI in (MIs without RTT samples leave the latency side unchanged) and returns
    /// the new baseline.
    pub fn observe(&mut self, mi: &MonitorInterval) -> f64 {
        match self.mode {
            BaselineMode::ConnectionMin => {
                self.conn_peak_pps = self.conn_peak_pps.max(delivery_pps(mi));
                let latency = mi.avg_latency_s();
                if latency > 0.0 && self.conn_min.is_none_or(|m| latency < m) {
                    self.conn_min = Some(latency);
                }
            }
            BaselineMode::WindowedMin { seconds } => {
                self.push_delivery(mi, seconds);
                self.push_latency(mi, seconds);
            }
            BaselineMode::DrainAware {
                seconds,
                drain_fraction,
            } => {
                self.push_delivery(mi, seconds);
                let previous = self.last_latency_s;
                if is_drained(mi, previous, self.max_delivery_pps(), drain_fraction) {
                    self.window.clear();
                }
                self.push_latency(mi, seconds);
                if mi.avg_latency_s() > 0.0 {
                    self.last_latency_s = Some(mi.avg_latency_s());
                }
            }
        }
        self.current()
    }

    /// The highest delivery rate (packets/s) of the window, or of the connection for
    /// `connection_min` (0 before any delivery).
    pub fn max_delivery_pps(&self) -> f64 {
        match self.mode {
            BaselineMode::ConnectionMin => self.conn_peak_pps,
            _ => self.deliveries.front().map_or(0.0, |&(_, pps)| pps),
        }
    }

    /// Adds the MI's latency to the window and drops samples older than `seconds`, keeping
    /// the newest.
    fn push_latency(&mut self, mi: &MonitorInterval, seconds: f64) {
        let now = mi.send_end_s;
        let latency = mi.avg_latency_s();
        if latency > 0.0 {
            self.window.push_back((now, latency));
        }
        while self.window.len() > 1 && self.window.front().is_some_and(|&(t, _)| t < now - seconds)
        {
            self.window.pop_front();
        }
    }

    /// Adds the MI's [`delivery_pps`] to the monotone window of the last `seconds`.
    fn push_delivery(&mut self, mi: &MonitorInterval, seconds: f64) {
        let now = mi.send_end_s;
        let pps = delivery_pps(mi);
        if pps > 0.0 {
            while self.deliveries.back().is_some_and(|&(_, p)| p <= pps) {
                self.deliveries.pop_back();
            }
            self.deliveries.push_back((now, pps));
        }
        while self
            .deliveries
            .front()
            .is_some_and(|&(t, _)| t < now - seconds)
        {
            self.deliveries.pop_front();
        }
    }
}

/// An MI's delivery rate: acknowledged packets over its duration, every packet counted
/// whatever the metric version.
fn delivery_pps(mi: &MonitorInterval) -> f64 {
    MetricsVersion::Delivered.throughput_pps(mi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::NO_BASELINE_LATENCY_S;
    use crate::mi::test_interval as mi;

    const A: MetricsVersion = MetricsVersion::Aurora;
    const D: MetricsVersion = MetricsVersion::Delivered;

    #[test]
    fn connection_min_ignores_empty_intervals() {
        let mut b = LatencyBaseline::new(BaselineMode::ConnectionMin, D);
        assert_eq!(b.current(), NO_BASELINE_LATENCY_S);
        assert_eq!(
            LatencyBaseline::new(BaselineMode::ConnectionMin, A).current(),
            0.0
        );
        assert_eq!(b.observe(&mi(0.0, 1.0, 1.0, 1.0, &[0.3])), 0.3);
        assert_eq!(b.observe(&mi(1.0, 2.0, 1.0, 0.0, &[])), 0.3);
        assert_eq!(b.observe(&mi(2.0, 3.0, 1.0, 1.0, &[0.2])), 0.2);
        assert_eq!(b.observe(&mi(3.0, 4.0, 1.0, 1.0, &[0.5])), 0.2);
    }

    #[test]
    fn windowed_min_forgets_old_minimum() {
        let mut b = LatencyBaseline::new(BaselineMode::WindowedMin { seconds: 2.0 }, A);
        assert_eq!(b.observe(&mi(0.0, 1.0, 1.0, 1.0, &[0.1])), 0.1);
        assert_eq!(b.observe(&mi(1.0, 2.0, 1.0, 1.0, &[0.4])), 0.1);
        // At t = 3.5 the sample from t = 1 is older than 2 s.
        assert_eq!(b.observe(&mi(2.0, 3.5, 1.0, 1.0, &[0.5])), 0.4);
        // A gap with no samples keeps the newest one.
        assert_eq!(b.observe(&mi(3.5, 10.0, 1.0, 0.0, &[])), 0.5);
    }

    fn drain_aware(seconds: f64) -> LatencyBaseline {
        LatencyBaseline::new(
            BaselineMode::DrainAware {
                seconds,
                drain_fraction: 0.5,
            },
            D,
        )
    }

    #[test]
    fn drained_mi_restarts_the_window_at_a_higher_base_rtt() {
        let mut b = drain_aware(10.0);
        // 1 s MIs at 100 pkt/s over a 40 ms path: delivery 100 pkt/s, baseline 40 ms.
        assert_eq!(b.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.04; 8])), 0.04);
        assert_eq!(b.max_delivery_pps(), 100.0);
        // The base RTT steps to 60 ms. At full rate a plain windowed min keeps 40 ms.
        assert_eq!(b.observe(&mi(1.0, 2.0, 100.0, 100.0, &[0.06; 8])), 0.04);
        // 60 pkt/s is above half of 100: not drained, still 40 ms.
        assert_eq!(b.observe(&mi(2.0, 3.0, 60.0, 60.0, &[0.06; 8])), 0.04);
        // 50 pkt/s at a flat 60 ms: drained, the 40 ms path is gone.
        assert_eq!(b.observe(&mi(3.0, 4.0, 50.0, 50.0, &[0.06; 8])), 0.06);
        // Lower samples afterwards lower it as a windowed min does.
        assert_eq!(b.observe(&mi(4.0, 5.0, 50.0, 50.0, &[0.055; 8])), 0.055);
        assert_eq!(b.observe(&mi(5.0, 6.0, 100.0, 100.0, &[0.07; 8])), 0.055);
    }

    #[test]
    fn a_draining_queue_is_not_a_new_base() {
        let mut b = drain_aware(10.0);
        b.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.04; 8]));
        // Sending at a fifth of the delivery rate while the RTT falls from 200 to 100 ms:
        // the sender's own queue drains (increase -0.1 s, far beyond 2 % of 0.15 s).
        let falling = [0.2, 0.2, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1];
        assert_eq!(b.observe(&mi(1.0, 2.0, 20.0, 100.0, &falling)), 0.04);
        // A rising RTT (a queue building) is not flat either.
        let rising = [0.1, 0.1, 0.1, 0.1, 0.12, 0.12, 0.12, 0.12];
        assert_eq!(b.observe(&mi(2.0, 3.0, 20.0, 20.0, &rising)), 0.04);
        // Within the jitter floor (0.4 ms < 0.5 ms on 10 ms) it is flat.
        let jitter = [0.0100, 0.0100, 0.0104, 0.0104];
        let flat = mi(0.0, 1.0, 10.0, 10.0, &jitter);
        assert!(is_drained(&flat, Some(0.0102), 100.0, 0.5));
        assert!(!is_drained(&flat, None, 100.0, 0.5));
        assert!(!is_drained(&flat, Some(0.0102), 0.0, 0.5));
        assert!(!is_drained(
            &mi(0.0, 1.0, 10.0, 10.0, &[0.01]),
            Some(0.01),
            100.0,
            0.5
        ));
    }

    #[test]
    fn a_slow_drain_across_mis_is_not_a_new_base() {
        // Flat within each MI, but 5 ms lower than the MI before (5 % of 0.1 s): a queue
        // draining slowly, as after a capacity drop with the sender just under the new rate.
        let mut b = drain_aware(10.0);
        b.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.04; 8]));
        assert_eq!(b.observe(&mi(1.0, 1.1, 4.0, 5.0, &[0.105; 4])), 0.04);
        assert_eq!(b.observe(&mi(1.1, 1.2, 4.0, 5.0, &[0.100; 4])), 0.04);
        assert_eq!(b.observe(&mi(1.2, 1.3, 4.0, 5.0, &[0.095; 4])), 0.04);
        // Once it stops falling, the next MI is drained.
        assert_eq!(b.observe(&mi(1.3, 1.4, 4.0, 4.0, &[0.094; 4])), 0.094);
    }

    #[test]
    fn delivery_maximum_leaves_the_window() {
        let mut b = drain_aware(2.0);
        b.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.04; 4]));
        b.observe(&mi(1.0, 2.0, 30.0, 30.0, &[0.05, 0.05, 0.06, 0.06]));
        b.observe(&mi(2.0, 3.0, 40.0, 40.0, &[0.05, 0.05, 0.06, 0.06]));
        assert_eq!(b.max_delivery_pps(), 100.0);
        // At t = 3.5 the 100 pkt/s MI (t = 1) is older than 2 s; 40 beats 30.
        b.observe(&mi(3.0, 3.5, 10.0, 10.0, &[0.05, 0.05, 0.06, 0.06]));
        assert_eq!(b.max_delivery_pps(), 40.0);
        b.reset();
        assert_eq!(b.max_delivery_pps(), 0.0);
        assert_eq!(b.current(), NO_BASELINE_LATENCY_S);
    }

    #[test]
    fn drain_aware_reads_with_its_default_fraction_and_checks_it() {
        let m: BaselineMode = serde_json::from_str(r#"{"drain_aware": {"seconds": 5}}"#).unwrap();
        assert_eq!(
            m,
            BaselineMode::DrainAware {
                seconds: 5.0,
                drain_fraction: 0.5
            }
        );
        let bad = BaselineMode::DrainAware {
            seconds: 5.0,
            drain_fraction: 1.5,
        };
        let (field, _) = bad.validate().unwrap_err();
        assert_eq!(field, "latency_baseline.drain_aware.drain_fraction");
        let (field, _) = BaselineMode::WindowedMin { seconds: 0.0 }
            .validate()
            .unwrap_err();
        assert_eq!(field, "latency_baseline.windowed_min.seconds");
    }

    #[test]
    fn every_mode_keeps_the_peak_delivery_of_its_window() {
        let mis = [
            mi(0.0, 1.0, 100.0, 100.0, &[0.04; 4]),
            mi(1.0, 2.0, 30.0, 30.0, &[0.04; 4]),
            mi(2.0, 3.0, 20.0, 20.0, &[0.04; 4]),
        ];
        let modes = [
            (BaselineMode::ConnectionMin, 100.0),
            (BaselineMode::WindowedMin { seconds: 1.5 }, 30.0),
            (
                BaselineMode::DrainAware {
                    seconds: 10.0,
                    drain_fraction: 0.5,
                },
                100.0,
            ),
        ];
        for (mode, peak) in modes {
            let mut b = LatencyBaseline::new(mode, A);
            for m in &mis {
                b.observe(m);
            }
            let e = b.estimate();
            assert_eq!(e.peak_delivery_pps, peak, "{mode:?}");
            assert_eq!(e.baseline_s, 0.04, "{mode:?}");
        }
    }
}
