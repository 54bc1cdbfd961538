//! The latency baseline that `latency ratio` divides by (Aurora's `conn min latency`).
//!
//! Aurora takes the minimum MI latency of the whole connection. A windowed minimum follows a
//! base-RTT increase after its window. The drain-aware minimum also follows it as soon as the
//! sender has shown that no queue of its own is left: an MI sent well below the delivery rate
//! the path recently gave, whose RTT stayed flat while its own queue would have drained,
//! measures the path as it is now.

use crate::mi::MetricsVersion;
use crate::mi::MonitorInterval;
use crate::monotone_window::{MaxWindow, MinWindow};
use serde::{Deserialize, Serialize};

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
        /// Window length in seconds (in (0, 3600]).
        seconds: f64,
    },
    /// The windowed minimum, restarted at the first drained MI of each back-off: one sent at no
    /// more than `drain_fraction` of the highest delivery rate of the window, with little loss,
    /// whose RTT stayed flat (see [`is_drained`]). The sender's own queue would drain there, so its
    /// latency is the path's base RTT now (plus any queue competitors hold) and older, lower
    /// samples describe a path that is gone.
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

fn positive_window(seconds: f64, field: &'static str) -> Result<(), (&'static str, String)> {
    if seconds > 0.0 && seconds <= MAX_WINDOW_S {
        Ok(())
    } else {
        Err((
            field,
            format!("must lie in (0, {MAX_WINDOW_S}] (got {seconds})"),
        ))
    }
}

/// RTT change, as a fraction of the latency baseline in force, below which the RTT counts as
/// flat: within an MI (second half against first half) and against the MI before.
pub const FLAT_RTT_FRACTION: f64 = 0.02;

/// Absolute RTT change (s) that always counts as flat: host jitter of up to a millisecond moves
/// the half means by a fraction of that.
pub const FLAT_RTT_FLOOR_S: f64 = 0.0005;

/// Highest loss ratio of a drained MI: a sender overflowing a full drop-tail queue sees a flat
/// RTT too, but loses packets.
pub const DRAINED_MAX_LOSS: f64 = 0.05;

/// What [`is_drained`] compares an MI against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DrainReference {
    /// The latency baseline in force before the MI (s).
    pub baseline_s: f64,
    /// Mean latency of the sender's previous MI with RTT samples (s).
    pub previous_latency_s: f64,
    /// The window's highest delivery rate (packets/s).
    pub peak_delivery_pps: f64,
}

/// Whether `mi` was drained: sent at no more than `drain_fraction` of the peak delivery rate,
/// with at most [`DRAINED_MAX_LOSS`] lost, and an RTT that stayed flat (within
/// [`FLAT_RTT_FRACTION`] of the baseline, or [`FLAT_RTT_FLOOR_S`]) within the MI and against the
/// MI before. A queue of the sender's own packets drains while it sends below the delivery
/// rate, so its RTT falls: by `(1 - rate / capacity)` of the MI's length per MI. A tolerance
/// taken from the baseline rather than from the (queue-inflated) RTT keeps a slow drain from
/// passing. A sender within about 2% of a capacity that dropped below half the peak still
/// cannot tell its standing queue from a base-RTT step; only a deeper back-off drains it.
pub fn is_drained(mi: &MonitorInterval, r: &DrainReference, drain_fraction: f64) -> bool {
    let latency = mi.avg_latency_s();
    if mi.rtt.count < 2 || latency <= 0.0 || r.peak_delivery_pps <= 0.0 || r.baseline_s <= 0.0 {
        return false;
    }
    let tolerance = (FLAT_RTT_FRACTION * r.baseline_s).max(FLAT_RTT_FLOOR_S);
    mi.send_rate_pps() <= drain_fraction * r.peak_delivery_pps
        && mi.loss_ratio() <= DRAINED_MAX_LOSS
        && mi.rtt.latency_increase_s().abs() <= tolerance
        && (latency - r.previous_latency_s).abs() <= tolerance
}

/// What a connection's history says about its path, as features read it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathEstimate {
    /// The latency baseline (s).
    pub baseline_s: f64,
    /// The highest delivery rate (packets/s) of the last `seconds` of the windowed modes (the
    /// newest delivery when none is that recent) or of the whole connection for
    /// `connection_min`; 0 before any packet was delivered.
    pub peak_delivery_pps: f64,
    /// The lowest MI mean latency (s) of the last [`RECENT_LATENCY_WINDOW_S`] (the newest
    /// MI with RTT samples when none is that recent), whatever the baseline's mode and
    /// restarts; 0 before any RTT sample, and when not kept ([`LatencyBaseline::tracking_recent`]).
    pub recent_min_latency_s: f64,
    /// The lowest MI mean latency (s) of the whole connection, whatever the baseline's mode.
    /// Kept only with `recent_min_latency_s` ([`LatencyBaseline::tracking_recent`]); 0 before
    /// any RTT sample or when not kept; a restart leaves it, a reset clears it.
    pub lowest_latency_s: f64,
}

/// Length (s) of the window [`PathEstimate::recent_min_latency_s`] spans: longer than a
/// base-RTT probe's interval and the probe (3 s and 4 MIs in pbq3's probes, the gated probes
/// of docs/research/base-rtt-probes.md), in which flows that yield to delay empty a queue they
/// share; a queue still there after it is held by a sender that does not, or is a higher base
/// RTT.
pub const RECENT_LATENCY_WINDOW_S: f64 = 5.0;

/// The latency baseline of one connection (Aurora's `conn min latency`), updated once per MI,
/// the peak delivery rate over the window's length, and, for `recent min ratio` and `standing
/// latency ratio`, the minimum latency of the last [`RECENT_LATENCY_WINDOW_S`] and of the
/// connection (a restart clears only the baseline's latencies).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyBaseline {
    mode: BaselineMode,
    version: MetricsVersion,
    conn_min: Option<f64>,
    /// (MI end, MI mean latency) of the windowed modes.
    window: MinWindow,
    /// (MI end, delivery rate in packets/s) of the windowed modes.
    #[serde(default)]
    deliveries: MaxWindow,
    /// Highest delivery rate (packets/s) of the connection (`connection_min` mode).
    #[serde(default)]
    conn_peak_pps: f64,
    /// Mean latency of the last MI with RTT samples (drain-aware mode).
    #[serde(default)]
    last_latency_s: Option<f64>,
    /// Whether the window was restarted since the sender last sent above the drain fraction
    /// of the peak (drain-aware mode): one restart per back-off, so an RTT that creeps up MI by
    /// MI is not followed.
    #[serde(default)]
    restarted_in_back_off: bool,
    /// A restart asked for ([`LatencyBaseline::restart`]) that waits for the next MI with RTT
    /// samples, so that the baseline is never left without one mid-connection.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    restart_pending: bool,
    /// (MI end, MI mean latency) of the last [`RECENT_LATENCY_WINDOW_S`], in every mode, when
    /// a feature reads it ([`LatencyBaseline::tracking_recent`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    recent: Option<MinWindow>,
    /// The connection's lowest MI mean latency (s), kept with `recent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lowest_latency_s: Option<f64>,
}

impl LatencyBaseline {
    /// A fresh connection.
    pub fn new(mode: BaselineMode, version: MetricsVersion) -> Self {
        Self {
            mode,
            version,
            conn_min: None,
            window: MinWindow::default(),
            deliveries: MaxWindow::default(),
            conn_peak_pps: 0.0,
            last_latency_s: None,
            restarted_in_back_off: false,
            restart_pending: false,
            recent: None,
            lowest_latency_s: None,
        }
    }

    /// The same baseline keeping the recent and the connection's lowest latency too
    /// ([`PathEstimate::recent_min_latency_s`] and [`PathEstimate::lowest_latency_s`],
    /// otherwise 0); a window it keeps already stays.
    pub fn tracking_recent(mut self) -> Self {
        self.recent.get_or_insert_with(MinWindow::default);
        self
    }

    /// Forgets everything (a new connection).
    pub fn reset(&mut self) {
        self.conn_min = None;
        self.window.clear();
        self.deliveries.clear();
        self.conn_peak_pps = 0.0;
        self.last_latency_s = None;
        self.restarted_in_back_off = false;
        self.restart_pending = false;
        if let Some(recent) = &mut self.recent {
            recent.clear();
        }
        self.lowest_latency_s = None;
    }

    /// Forgets the baseline's latency samples (not the delivery peak, the recent minimum nor the
    /// connection's lowest) at the next MI with RTT samples, which then sets the baseline, as a
    /// drained MI of the drain-aware mode does (and counts as this back-off's restart). Until
    /// that MI the baseline stands.
    pub fn restart(&mut self) {
        self.restart_pending = true;
    }

    /// Applies a pending [`LatencyBaseline::restart`] at an MI with RTT samples.
    fn apply_pending_restart(&mut self, mi: &MonitorInterval) {
        if self.restart_pending && mi.avg_latency_s() > 0.0 {
            self.conn_min = None;
            self.window.clear();
            self.restarted_in_back_off = true;
            self.restart_pending = false;
        }
    }

    /// The baseline without updating it (the version's empty baseline before any sample).
    pub fn current(&self) -> f64 {
        let empty = self.version.empty_baseline_s();
        match self.mode {
            BaselineMode::ConnectionMin => self.conn_min.unwrap_or(empty),
            BaselineMode::WindowedMin { .. } | BaselineMode::DrainAware { .. } => {
                self.window.extreme().unwrap_or(empty)
            }
        }
    }

    /// The baseline and the peak delivery rate, without updating them.
    pub fn estimate(&self) -> PathEstimate {
        PathEstimate {
            baseline_s: self.current(),
            peak_delivery_pps: self.peak_delivery_pps(),
            recent_min_latency_s: self
                .recent
                .as_ref()
                .and_then(MinWindow::extreme)
                .unwrap_or(0.0),
            lowest_latency_s: self.lowest_latency_s.unwrap_or(0.0),
        }
    }

    /// Folds one MI in (MIs without RTT samples leave the latency side unchanged) and returns
    /// the new estimate.
    pub fn observe(&mut self, mi: &MonitorInterval) -> PathEstimate {
        self.observe_with(mi, true)
    }

    /// [`LatencyBaseline::observe`], where a drained MI may restart the drain-aware window only
    /// when `may_restart` (base-RTT probes that keep restarts to their own MIs).
    pub fn observe_with(&mut self, mi: &MonitorInterval, may_restart: bool) -> PathEstimate {
        self.apply_pending_restart(mi);
        self.push_recent(mi);
        match self.mode {
            BaselineMode::ConnectionMin => {
                self.conn_peak_pps = self.conn_peak_pps.max(mi.throughput_pps());
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
                self.restart_if_drained(mi, drain_fraction, may_restart);
                self.push_latency(mi, seconds);
            }
        }
        self.estimate()
    }

    /// The drain-aware step between the MI's delivery and its latency joining the windows:
    /// clears the latency window at the first drained MI of a back-off (a run of MIs at or
    /// below the drain fraction of the peak).
    fn restart_if_drained(&mut self, mi: &MonitorInterval, drain_fraction: f64, may_restart: bool) {
        let baseline_s = self.current();
        let peak = self.peak_delivery_pps();
        if mi.send_rate_pps() > drain_fraction * peak {
            self.restarted_in_back_off = false;
        }
        let latency = mi.avg_latency_s();
        if let (Some(previous_latency_s), false) = (self.last_latency_s, self.restarted_in_back_off)
        {
            let reference = DrainReference {
                baseline_s,
                previous_latency_s,
                peak_delivery_pps: peak,
            };
            if may_restart && is_drained(mi, &reference, drain_fraction) {
                self.window.clear();
                self.restarted_in_back_off = true;
            }
        }
        if latency > 0.0 {
            self.last_latency_s = Some(latency);
        }
    }

    /// The highest delivery rate (packets/s) of the last `seconds` of the windowed modes (the
    /// newest delivery when none is that recent), or of the connection for `connection_min`;
    /// 0 before any delivery.
    pub fn peak_delivery_pps(&self) -> f64 {
        match self.mode {
            BaselineMode::ConnectionMin => self.conn_peak_pps,
            _ => self.deliveries.extreme().unwrap_or(0.0),
        }
    }

    /// Adds the MI's mean latency to the recent window and the connection's lowest, when they
    /// are kept.
    fn push_recent(&mut self, mi: &MonitorInterval) {
        if let Some(recent) = &mut self.recent {
            push_mi_latency(recent, mi, RECENT_LATENCY_WINDOW_S);
            let latency = mi.avg_latency_s();
            if latency > 0.0 && self.lowest_latency_s.is_none_or(|l| latency < l) {
                self.lowest_latency_s = Some(latency);
            }
        }
    }

    /// Adds the MI's mean latency to the baseline's window of the last `seconds`.
    fn push_latency(&mut self, mi: &MonitorInterval, seconds: f64) {
        push_mi_latency(&mut self.window, mi, seconds);
    }

    /// Adds the MI's delivery rate (every acknowledged packet over its duration, whatever the
    /// metric version) to the window of the last `seconds`.
    fn push_delivery(&mut self, mi: &MonitorInterval, seconds: f64) {
        let pps = mi.throughput_pps();
        if pps > 0.0 {
            self.deliveries.push(mi.send_end_s, pps);
        }
        self.deliveries.expire(mi.send_end_s, seconds);
    }
}

/// Adds `mi`'s mean latency (when it has samples) at its end to `window`, which then spans the
/// last `seconds`.
fn push_mi_latency(window: &mut MinWindow, mi: &MonitorInterval, seconds: f64) {
    let latency = mi.avg_latency_s();
    if latency > 0.0 {
        window.push(mi.send_end_s, latency);
    }
    window.expire(mi.send_end_s, seconds);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mi::NO_BASELINE_LATENCY_S;
    use crate::mi::{test_interval as mi, MonitorInterval, BYTES_PER_PACKET};

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
        assert_eq!(b.observe(&mi(0.0, 1.0, 1.0, 1.0, &[0.3])).baseline_s, 0.3);
        assert_eq!(b.observe(&mi(1.0, 2.0, 1.0, 0.0, &[])).baseline_s, 0.3);
        assert_eq!(b.observe(&mi(2.0, 3.0, 1.0, 1.0, &[0.2])).baseline_s, 0.2);
        assert_eq!(b.observe(&mi(3.0, 4.0, 1.0, 1.0, &[0.5])).baseline_s, 0.2);
    }

    #[test]
    fn windowed_min_forgets_old_minimum() {
        let mut b = LatencyBaseline::new(BaselineMode::WindowedMin { seconds: 2.0 }, A);
        assert_eq!(b.observe(&mi(0.0, 1.0, 1.0, 1.0, &[0.1])).baseline_s, 0.1);
        assert_eq!(b.observe(&mi(1.0, 2.0, 1.0, 1.0, &[0.4])).baseline_s, 0.1);
        // At t = 3.5 the sample from t = 1 is older than 2 s.
        assert_eq!(b.observe(&mi(2.0, 3.5, 1.0, 1.0, &[0.5])).baseline_s, 0.4);
        // A gap with no samples keeps the newest one.
        assert_eq!(b.observe(&mi(3.5, 10.0, 1.0, 0.0, &[])).baseline_s, 0.5);
    }

    /// A restart (a probe's baseline) waits out MIs without RTT samples, in every mode: the
    /// baseline stands until an MI with samples sets it, higher or lower.
    #[test]
    fn a_restart_waits_for_an_mi_with_rtt_samples() {
        let modes = [
            BaselineMode::ConnectionMin,
            BaselineMode::WindowedMin { seconds: 10.0 },
            BaselineMode::DrainAware {
                seconds: 10.0,
                drain_fraction: 0.5,
            },
        ];
        for mode in modes {
            let mut b = LatencyBaseline::new(mode, D);
            b.observe(&mi(0.0, 1.0, 10.0, 10.0, &[0.04]));
            b.restart();
            assert_eq!(b.current(), 0.04, "{mode:?}: until an MI");
            b.observe(&mi(1.0, 2.0, 10.0, 0.0, &[]));
            assert_eq!(b.current(), 0.04, "{mode:?}: after an MI without samples");
            b.observe(&mi(2.0, 3.0, 10.0, 10.0, &[0.09]));
            assert_eq!(
                b.current(),
                0.09,
                "{mode:?}: set by the next MI with samples"
            );
            b.observe(&mi(3.0, 4.0, 10.0, 10.0, &[0.1]));
            assert_eq!(b.current(), 0.09, "{mode:?}: once");
        }
    }

    /// The recent minimum spans the last 5 s in every mode, whatever the baseline does.
    #[test]
    fn the_recent_minimum_spans_the_last_five_seconds_whatever_the_baseline_does() {
        let mut untracked = drain_aware(3600.0);
        let mut b = drain_aware(3600.0).tracking_recent();
        assert_eq!(b.estimate().recent_min_latency_s, 0.0, "before any sample");
        untracked.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.04]));
        assert_eq!(
            untracked.estimate().recent_min_latency_s,
            0.0,
            "not tracked"
        );
        // 40 ms at 1 s, then a queue of 60 ms more from 2 s on: the baseline keeps 40 ms, and
        // so does the recent minimum until the 40 ms sample is over 5 s old.
        b.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.04]));
        for k in 1..=5 {
            let at = f64::from(k);
            let e = b.observe(&mi(at, at + 1.0, 100.0, 100.0, &[0.1]));
            assert_eq!((e.baseline_s, e.recent_min_latency_s), (0.04, 0.04), "{k}");
        }
        // At 6.5 s the 40 ms sample (1 s) is 5.5 s old: 100 ms is the recent minimum.
        let e = b.observe(&mi(6.0, 6.5, 100.0, 100.0, &[0.1]));
        assert_eq!((e.baseline_s, e.recent_min_latency_s), (0.04, 0.1));
        // A restart moves the baseline, not the recent minimum; an MI without samples keeps
        // the newest sample; a reset forgets it.
        b.restart();
        let e = b.observe(&mi(6.5, 7.0, 100.0, 100.0, &[0.12]));
        assert_eq!((e.baseline_s, e.recent_min_latency_s), (0.12, 0.1));
        let e = b.observe(&mi(7.0, 20.0, 100.0, 0.0, &[]));
        assert_eq!(e.recent_min_latency_s, 0.12);
        // The connection's lowest stays 40 ms through the restart and the gap; a reset forgets
        // it too, and an untracked baseline never had it.
        assert_eq!(e.lowest_latency_s, 0.04);
        assert_eq!(untracked.estimate().lowest_latency_s, 0.0);
        b.reset();
        assert_eq!(b.estimate().recent_min_latency_s, 0.0);
        assert_eq!(b.estimate().lowest_latency_s, 0.0);
        let e = b.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.07]));
        assert_eq!((e.recent_min_latency_s, e.lowest_latency_s), (0.07, 0.07));
        let e = b.observe(&mi(1.0, 2.0, 100.0, 100.0, &[0.05]));
        assert_eq!(e.lowest_latency_s, 0.05);
        // In connection_min mode too.
        let mut c = LatencyBaseline::new(BaselineMode::ConnectionMin, D).tracking_recent();
        c.observe(&mi(0.0, 1.0, 10.0, 10.0, &[0.04]));
        let e = c.observe(&mi(1.0, 6.5, 10.0, 10.0, &[0.08]));
        assert_eq!((e.baseline_s, e.recent_min_latency_s), (0.04, 0.08));
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

    /// The baseline after feeding `mis` in order.
    fn fed(b: &mut LatencyBaseline, mis: &[MonitorInterval]) -> f64 {
        mis.iter().map(|m| b.observe(m).baseline_s).last().unwrap()
    }

    #[test]
    fn drained_mi_restarts_the_window_at_a_higher_base_rtt() {
        let mut b = drain_aware(10.0);
        // 1 s MIs at 100 pkt/s over a 40 ms path: delivery 100 pkt/s, baseline 40 ms.
        assert_eq!(fed(&mut b, &[mi(0.0, 1.0, 100.0, 100.0, &[0.04; 8])]), 0.04);
        assert_eq!(b.peak_delivery_pps(), 100.0);
        // The base RTT steps to 60 ms. At full rate a plain windowed min keeps 40 ms.
        assert_eq!(fed(&mut b, &[mi(1.0, 2.0, 100.0, 100.0, &[0.06; 8])]), 0.04);
        // 60 pkt/s is above half of 100: not drained, still 40 ms.
        assert_eq!(fed(&mut b, &[mi(2.0, 3.0, 60.0, 60.0, &[0.06; 8])]), 0.04);
        // 50 pkt/s at a flat 60 ms: drained, the 40 ms path is gone.
        assert_eq!(fed(&mut b, &[mi(3.0, 4.0, 50.0, 50.0, &[0.06; 8])]), 0.06);
        // Lower samples afterwards lower it as a windowed min does.
        assert_eq!(fed(&mut b, &[mi(4.0, 5.0, 50.0, 50.0, &[0.055; 8])]), 0.055);
        assert_eq!(
            fed(&mut b, &[mi(5.0, 6.0, 100.0, 100.0, &[0.07; 8])]),
            0.055
        );
    }

    /// A drain-aware baseline at 40 ms that saw 100 pkt/s delivered, then one MI at 20 pkt/s
    /// with mean latency `previous`.
    fn after_back_off(previous: f64) -> LatencyBaseline {
        let mut b = drain_aware(10.0);
        b.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.04; 8]));
        b.observe(&mi(1.0, 1.1, 2.0, 2.0, &[previous; 4]));
        b
    }

    #[test]
    fn each_drain_check_alone_keeps_a_queue_from_passing() {
        // Falling within the MI (200 -> 100 ms) though its mean equals the MI before: draining.
        let mut b = after_back_off(0.15);
        let falling = [0.2, 0.2, 0.1, 0.1];
        assert_eq!(fed(&mut b, &[mi(1.1, 1.2, 2.0, 2.0, &falling)]), 0.04);
        // Flat within the MI, 1 ms below the MI before (over 2 % of the 40 ms baseline, though
        // under 2 % of the queue-inflated 100 ms): a slow drain.
        let mut b = after_back_off(0.101);
        assert_eq!(fed(&mut b, &[mi(1.1, 1.2, 2.0, 2.0, &[0.1; 4])]), 0.04);
        // Flat, but 10 % lost: a sender overflowing a full queue.
        let mut b = after_back_off(0.1);
        let lossy = MonitorInterval {
            bytes_lost: 0.2 * BYTES_PER_PACKET,
            ..mi(1.1, 1.2, 2.0, 1.8, &[0.1; 4])
        };
        assert_eq!(fed(&mut b, &[lossy]), 0.04);
        // All flat and loss-free: drained.
        let mut b = after_back_off(0.1);
        assert_eq!(fed(&mut b, &[mi(1.1, 1.2, 2.0, 2.0, &[0.1; 4])]), 0.1);
    }

    #[test]
    fn a_drained_mi_restarts_the_window_only_when_it_may() {
        // The drained MI of the test above, held back: the baseline stays at 40 ms, and the
        // same back-off restarts at its next drained MI once restarts are allowed.
        let mut b = after_back_off(0.1);
        let drained = mi(1.1, 1.2, 2.0, 2.0, &[0.1; 4]);
        assert_eq!(b.observe_with(&drained, false).baseline_s, 0.04);
        let next = mi(1.2, 1.3, 2.0, 2.0, &[0.1; 4]);
        assert_eq!(b.observe_with(&next, true).baseline_s, 0.1);
        // Lower samples still lower it when restarts are held back.
        let lower = mi(1.3, 1.4, 2.0, 2.0, &[0.09; 4]);
        assert_eq!(b.observe_with(&lower, false).baseline_s, 0.09);
    }

    #[test]
    fn an_rtt_creeping_up_is_not_followed_mi_by_mi() {
        // Drained at 60 ms, then the RTT rises 0.6 ms per MI (under the 1.2 ms tolerance of the
        // 60 ms baseline each time) while the sender stays low: one restart per back-off, so
        // the baseline stays at 60 ms and latency ratio sees the rise.
        let mut b = drain_aware(10.0);
        b.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.04; 8]));
        b.observe(&mi(1.0, 1.1, 2.0, 2.0, &[0.06; 4]));
        assert_eq!(fed(&mut b, &[mi(1.1, 1.2, 2.0, 2.0, &[0.06; 4])]), 0.06);
        let creeping: Vec<_> = (1..=20)
            .map(|k| {
                let t = 1.2 + 0.1 * f64::from(k);
                mi(t - 0.1, t, 2.0, 2.0, &[0.06 + 0.0006 * f64::from(k); 4])
            })
            .collect();
        assert_eq!(fed(&mut b, &creeping), 0.06);
        // Back above half the peak; a later back-off drains afresh.
        b.observe(&mi(3.2, 3.3, 8.0, 8.0, &[0.08; 4]));
        b.observe(&mi(3.3, 3.4, 2.0, 2.0, &[0.08; 4]));
        assert_eq!(fed(&mut b, &[mi(3.4, 3.5, 2.0, 2.0, &[0.08; 4])]), 0.08);
    }

    #[test]
    fn a_capacity_drop_with_the_sender_near_the_new_capacity_keeps_the_queue_visible() {
        // 800 pkt/s on a 40 ms path, then capacity 400 pkt/s: the sender at 380 pkt/s (under
        // half the 800 pkt/s peak) drains a 100 ms queue at 20 pkt/s, 2.5 ms per 50 ms MI.
        let mut b = drain_aware(5.0);
        b.observe(&mi(0.0, 1.0, 800.0, 800.0, &[0.04; 8]));
        for k in 0..40 {
            let t = 1.0 + 0.05 * f64::from(k);
            let queue_s = 0.1 - 0.0025 * f64::from(k);
            let rtts = [0.04 + queue_s + 0.00125, 0.04 + queue_s - 0.00125];
            let baseline = fed(&mut b, &[mi(t, t + 0.05, 19.0, 20.0, &rtts)]);
            assert_eq!(baseline, 0.04, "queue {queue_s}");
        }
    }

    #[test]
    fn drained_needs_a_peak_a_baseline_and_two_samples() {
        let flat = mi(0.0, 1.0, 10.0, 10.0, &[0.0100, 0.0100, 0.0104, 0.0104]);
        let reference = DrainReference {
            baseline_s: 0.01,
            previous_latency_s: 0.0102,
            peak_delivery_pps: 100.0,
        };
        // Within the 0.5 ms floor: flat.
        assert!(is_drained(&flat, &reference, 0.5));
        let no_peak = DrainReference {
            peak_delivery_pps: 0.0,
            ..reference
        };
        assert!(!is_drained(&flat, &no_peak, 0.5));
        let no_baseline = DrainReference {
            baseline_s: 0.0,
            ..reference
        };
        assert!(!is_drained(&flat, &no_baseline, 0.5));
        let one_sample = mi(0.0, 1.0, 10.0, 10.0, &[0.01]);
        assert!(!is_drained(&one_sample, &reference, 0.5));
        // 10 pkt/s is above a twentieth of the 100 pkt/s peak.
        assert!(!is_drained(&flat, &reference, 0.05));
    }

    #[test]
    fn delivery_maximum_leaves_the_window() {
        let mut b = drain_aware(2.0);
        b.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.04; 4]));
        b.observe(&mi(1.0, 2.0, 30.0, 30.0, &[0.05, 0.05, 0.06, 0.06]));
        b.observe(&mi(2.0, 3.0, 40.0, 40.0, &[0.05, 0.05, 0.06, 0.06]));
        assert_eq!(b.peak_delivery_pps(), 100.0);
        // At t = 3.5 the 100 pkt/s MI (t = 1) is older than 2 s; 40 beats 30.
        b.observe(&mi(3.0, 3.5, 10.0, 10.0, &[0.05, 0.05, 0.06, 0.06]));
        assert_eq!(b.peak_delivery_pps(), 40.0);
        b.reset();
        assert_eq!(b.peak_delivery_pps(), 0.0);
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

    #[test]
    fn a_baseline_saved_before_the_drain_aware_fields_still_loads() {
        let mut b = LatencyBaseline::new(BaselineMode::WindowedMin { seconds: 2.0 }, A);
        b.observe(&mi(0.0, 1.0, 10.0, 10.0, &[0.1]));
        let mut json = serde_json::to_value(&b).unwrap();
        let fields = json.as_object_mut().unwrap();
        for added in [
            "deliveries",
            "conn_peak_pps",
            "last_latency_s",
            "restarted_in_back_off",
        ] {
            assert!(fields.remove(added).is_some(), "{added}");
        }
        // The code before kept every sample of the window, oldest first.
        fields.insert(
            "window".into(),
            serde_json::json!([[0.5, 0.05], [1.0, 0.04]]),
        );
        let old: LatencyBaseline = serde_json::from_value(json).unwrap();
        assert_eq!(old.current(), 0.04);
        assert_eq!(old.peak_delivery_pps(), 0.0);
    }
}
