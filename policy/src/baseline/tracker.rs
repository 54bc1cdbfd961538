//! [`LatencyBaseline`]: one connection's latency baseline, peak delivery rate, recent and
//! lowest latency, updated once per MI, and the [`PathEstimate`] they make.

use super::capacity::{CapacityTrains, CapacityWindow};
use super::drain::{is_drained, DrainReference};
use super::kind::BaselineKind;
use crate::mi::MetricsVersion;
use crate::mi::MonitorInterval;
use crate::monotone_window::{MaxWindow, MinWindow};
use serde::{Deserialize, Serialize};

/// What a connection's history says about its path, as features read it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathEstimate {
    /// The latency baseline (s).
    pub baseline_s: f64,
    /// The highest delivery rate (packets/s) of the last `seconds` of the windowed modes (the
    /// newest delivery when none is that recent) or of the whole connection for
    /// `connection_min`, or the share of the bottleneck's rate that packet trains set where
    /// that is higher ([`LatencyBaseline::with_capacity`]); 0 before any packet was delivered.
    pub peak_delivery_pps: f64,
    /// The lowest MI mean latency (s) of the last [`RECENT_LATENCY_WINDOW_S`] (the newest
    /// MI with RTT samples when none is that recent), whatever the baseline's mode and
    /// restarts; 0 before any RTT sample, and when not kept ([`LatencyBaseline::tracking_recent`]).
    pub recent_min_latency_s: f64,
    /// The lowest MI mean latency (s) of the whole connection, whatever the baseline's mode.
    /// Kept only with `recent_min_latency_s` ([`LatencyBaseline::tracking_recent`]); 0 before
    /// any RTT sample or when not kept; a restart leaves it, a reset clears it.
    pub lowest_latency_s: f64,
    /// What `peak delivery ratio` below 1 is raised to: [`CapacityTrains::ratio_exponent`]
    /// once the trains measured a rate, else 1 (a transport that sends none reads the ratio
    /// as without the field).
    pub peak_ratio_exponent: f64,
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
    mode: BaselineKind,
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
    /// The bottleneck's rate from packet trains, which lifts the peak delivery rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    capacity: Option<CapacityWindow>,
}

impl LatencyBaseline {
    /// A fresh connection.
    pub fn new(mode: BaselineKind, version: MetricsVersion) -> Self {
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
            capacity: None,
        }
    }

    /// The same baseline keeping the recent and the connection's lowest latency too
    /// ([`PathEstimate::recent_min_latency_s`] and [`PathEstimate::lowest_latency_s`],
    /// otherwise 0); a window it keeps already stays.
    pub fn tracking_recent(mut self) -> Self {
        self.recent.get_or_insert_with(MinWindow::default);
        self
    }

    /// The same baseline whose peak delivery rate is at least the share of the bottleneck's
    /// rate that `trains` set ([`CapacityTrains`]); None leaves the peak the flow's own.
    pub fn with_capacity(mut self, trains: Option<CapacityTrains>) -> Self {
        self.capacity = trains.map(CapacityWindow::new);
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
        if let Some(c) = &mut self.capacity {
            c.clear();
        }
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
            BaselineKind::ConnectionMin => self.conn_min.unwrap_or(empty),
            BaselineKind::WindowedMin { .. } | BaselineKind::DrainAware { .. } => {
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
            peak_ratio_exponent: self
                .capacity
                .as_ref()
                .filter(|c| c.floor_pps() > 0.0)
                .map_or(1.0, |c| c.trains().ratio_exponent),
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
        if let Some(c) = &mut self.capacity {
            c.push(mi);
        }
        match self.mode {
            BaselineKind::ConnectionMin => {
                self.conn_peak_pps = self.conn_peak_pps.max(mi.throughput_pps());
                let latency = mi.avg_latency_s();
                if latency > 0.0 && self.conn_min.is_none_or(|m| latency < m) {
                    self.conn_min = Some(latency);
                }
            }
            BaselineKind::WindowedMin { seconds } => {
                self.push_delivery(mi, seconds);
                self.push_latency(mi, seconds);
            }
            BaselineKind::DrainAware {
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
    /// newest delivery when none is that recent), or of the connection for `connection_min`,
    /// at least the trains' share of the bottleneck's rate when kept; 0 before any delivery.
    pub fn peak_delivery_pps(&self) -> f64 {
        let own = match self.mode {
            BaselineKind::ConnectionMin => self.conn_peak_pps,
            _ => self.deliveries.extreme().unwrap_or(0.0),
        };
        own.max(
            self.capacity
                .as_ref()
                .map_or(0.0, CapacityWindow::floor_pps),
        )
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
