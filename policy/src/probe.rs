//! Base-RTT probes: BBR's ProbeRTT for rate-based learned senders.
//!
//! A flow that joins a link whose queue others already hold takes their queue for its base RTT,
//! and every flow that fills the queue in turn makes the next one's baseline worse. BBR's answer:
//! when the minimum RTT has not been renewed for ten seconds, the flow sends almost nothing for
//! a short while. Flows probe together once they have seen each other's probes (a probe lowers
//! the others' minimum, which restarts their timers), so the queue they hold empties and every
//! flow measures the path itself. A competitor that does not probe (Cubic) keeps its queue, and
//! the probing flow measures the path with that queue, as the drain-aware baseline does.
//!
//! The probe is part of the MI clock: it paces between decisions, as the warm-up does. When the
//! latency baseline has stood unchanged for `interval_s` (by MI end times), the next `mis` MIs
//! are sent at `rate_fraction` of the agent's rate, recorded in the history (they update the
//! baseline), and the agent decides again after the last of them, from the rate it had chosen.

use crate::error::{invalid, RateError};
use crate::mi::MonitorInterval;
use crate::queue::queue_free;
use serde::{Deserialize, Serialize};

/// When and how a learned sender probes its path's base RTT.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeRtt {
    /// Seconds the latency baseline may stand unchanged before the sender probes (BBR: 10), in
    /// (0, 3600].
    pub interval_s: f64,
    /// MIs a probe lasts, in [1, 100] (default 4: two RTTs at the usual half-RTT MIs, in which
    /// flows probing together at a quarter of their rates drain 1.5 BDP of queue; longer where
    /// `min_packets` stretches MIs at the probe's low rate); the agent does not decide during
    /// them.
    #[serde(default = "default_probe_mis")]
    pub mis: u32,
    /// Pacing rate during a probe as a fraction of the agent's rate, in (0, 1) (default 0.25);
    /// the rate rule's minimum still applies.
    #[serde(default = "default_rate_fraction")]
    pub rate_fraction: f64,
    /// Whether a drain-aware baseline may restart (and so rise) only at a probe's MIs (default
    /// false: at the first drained MI of any back-off). Between probes the baseline then only
    /// falls, so a queue that other flows hold cannot become it while they keep it.
    #[serde(default)]
    pub restart_in_probes_only: bool,
    /// An MI whose mean RTT is at most this multiple of the baseline also restarts the timer
    /// (> 1; absent: only a change of the baseline does, as BBR's). A flow that keeps seeing its
    /// path without a queue then never probes; one that sees a standing queue for
    /// `interval_s` does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet_latency_ratio: Option<f64>,
    /// With `restart_in_probes_only`: an MI that ends within this many seconds of one that lost
    /// packets may restart the baseline too (absent: never). Loss says a sender fills the
    /// buffer (Cubic); its queue does not drain in a probe, so the flow takes it as its base
    /// at any back-off, as without probes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_after_loss_s: Option<f64>,
    /// Whether a probe's first MI (the first with RTT samples) restarts the latency baseline
    /// whatever the drain checks say (default false), so that it becomes the lowest RTT since
    /// the probe began (within a windowed baseline's length, until its next restart), as BBR
    /// takes its min RTT from ProbeRTT. Where the queue drains in the probe (flows that
    /// probe together) that is the path's RTT; where a competitor keeps its queue through the
    /// probe (a loss-based sender) it is that queue, which the flow then competes for.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub baseline_from_probe: bool,
}

fn default_probe_mis() -> u32 {
    4
}

fn default_rate_fraction() -> f64 {
    0.25
}

/// Most MIs a probe may last.
pub const MAX_PROBE_MIS: u32 = 100;

/// Longest probe interval (s).
pub const MAX_PROBE_INTERVAL_S: f64 = 3600.0;

impl ProbeRtt {
    /// Probes after `interval_s` of an unchanged baseline with the defaults: 4 MIs at a
    /// quarter of the agent's rate, restarts anywhere, no quiet trigger.
    pub fn every(interval_s: f64) -> Self {
        Self {
            interval_s,
            mis: default_probe_mis(),
            rate_fraction: default_rate_fraction(),
            restart_in_probes_only: false,
            quiet_latency_ratio: None,
            restart_after_loss_s: None,
            baseline_from_probe: false,
        }
    }

    /// Whether a recorded MI restarts the probe timer: it changed the baseline, or its mean
    /// latency `latency_s` (0 without samples) was within `quiet_latency_ratio` of the new
    /// baseline `baseline_s`.
    pub fn restarts_timer(&self, baseline_changed: bool, latency_s: f64, baseline_s: f64) -> bool {
        baseline_changed
            || self
                .quiet_latency_ratio
                .is_some_and(|r| queue_free(latency_s, baseline_s, r))
    }

    /// Checks the parameters; errors name the field under `probe_rtt`.
    pub fn validate(&self) -> Result<(), RateError> {
        if !(self.interval_s > 0.0 && self.interval_s <= MAX_PROBE_INTERVAL_S) {
            return invalid(
                "probe_rtt.interval_s",
                format!(
                    "must lie in (0, {MAX_PROBE_INTERVAL_S}] (got {})",
                    self.interval_s
                ),
            );
        }
        if !(1..=MAX_PROBE_MIS).contains(&self.mis) {
            return invalid(
                "probe_rtt.mis",
                format!("must lie in [1, {MAX_PROBE_MIS}] (got {})", self.mis),
            );
        }
        if !(self.rate_fraction > 0.0 && self.rate_fraction < 1.0) {
            return invalid(
                "probe_rtt.rate_fraction",
                format!("must lie in (0, 1) (got {})", self.rate_fraction),
            );
        }
        if let Some(r) = self.quiet_latency_ratio {
            if !(r > 1.0 && r.is_finite()) {
                return invalid(
                    "probe_rtt.quiet_latency_ratio",
                    format!("must be finite and > 1 (got {r})"),
                );
            }
        }
        match self.restart_after_loss_s {
            Some(w) if !(w > 0.0 && w <= MAX_PROBE_INTERVAL_S) => invalid(
                "probe_rtt.restart_after_loss_s",
                format!("must lie in (0, {MAX_PROBE_INTERVAL_S}] (got {w})"),
            ),
            Some(_) if !self.restart_in_probes_only => invalid(
                "probe_rtt.restart_after_loss_s",
                "needs restart_in_probes_only: true (restarts are otherwise never held back)"
                    .to_string(),
            ),
            _ => Ok(()),
        }
    }
}

/// One connection's probe timer.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeState {
    /// MI end (s) at which the timer last restarted (the baseline changed, an MI was quiet, or
    /// a probe ended); `None` before the first recorded MI.
    since_s: Option<f64>,
    /// Probe MIs still to send.
    left: u32,
    /// End (s) of the last MI that lost packets (`restart_after_loss_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_loss_s: Option<f64>,
}

impl ProbeState {
    /// Whether the timer has seen no MI yet (a connection without probes keeps it so).
    pub fn is_fresh(&self) -> bool {
        *self == Self::default()
    }

    /// Notes when `mi`, about to be recorded, lost packets (kept only for
    /// `restart_after_loss_s`).
    pub fn note_loss(&mut self, probe: &ProbeRtt, mi: &MonitorInterval) {
        if probe.restart_after_loss_s.is_some() && mi.bytes_lost > 0.0 {
            self.last_loss_s = Some(mi.send_end_s);
        }
    }

    /// Whether an MI ending at `end_s`, about to be recorded, may restart a drain-aware
    /// baseline: always unless `restart_in_probes_only`; then in a probe's MIs, and within
    /// `restart_after_loss_s` of an MI that lost packets (this one included, once noted).
    pub fn may_restart(&self, probe: &ProbeRtt, end_s: f64) -> bool {
        if !probe.restart_in_probes_only || self.probing() {
            return true;
        }
        match (probe.restart_after_loss_s, self.last_loss_s) {
            (Some(window), Some(lost_at)) => end_s - lost_at <= window,
            _ => false,
        }
    }

    /// Whether the next MI belongs to a probe.
    pub fn probing(&self) -> bool {
        self.left > 0
    }

    /// Starts a probe of `probe`'s now (its MIs are the next ones), as the timer would have.
    pub fn begin(&mut self, probe: &ProbeRtt) {
        self.left = probe.mis;
    }

    /// Whether the next MI is the first of a probe of `probe`'s.
    pub fn starts_probe(&self, probe: &ProbeRtt) -> bool {
        self.left > 0 && self.left == probe.mis
    }

    /// Folds in a recorded MI that ended at `end_s` and whether it restarts the timer (it
    /// changed the latency baseline, or was quiet: see [`ProbeRtt::restarts_timer`]). Returns
    /// whether the agent decides now; `false` when the next MI belongs to a probe (one starts,
    /// or one goes on).
    pub fn on_mi(&mut self, probe: &ProbeRtt, end_s: f64, restart_timer: bool) -> bool {
        if self.left > 0 {
            self.left -= 1;
            if self.left > 0 {
                return false;
            }
            self.since_s = Some(end_s);
            return true;
        }
        let since = match self.since_s {
            Some(since) if !restart_timer => since,
            _ => {
                self.since_s = Some(end_s);
                end_s
            }
        };
        if end_s - since >= probe.interval_s {
            self.left = probe.mis;
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe() -> ProbeRtt {
        ProbeRtt {
            mis: 2,
            ..ProbeRtt::every(10.0)
        }
    }

    /// Feeds MIs ending every `step_s`; `changes` lists the MI indices that changed the
    /// baseline. Returns the indices of the MIs after which the next MI is a probe MI.
    fn probing_after(n: usize, step_s: f64, changes: &[usize]) -> Vec<usize> {
        let mut state = ProbeState::default();
        let p = probe();
        (0..n)
            .filter(|&i| {
                let end = (i + 1) as f64 * step_s;
                !state.on_mi(&p, end, changes.contains(&i))
            })
            .collect()
    }

    fn field_of(r: Result<(), RateError>) -> Result<(), &'static str> {
        r.map_err(|RateError::Invalid { field, .. }| field)
    }

    #[test]
    fn a_baseline_that_stands_for_the_interval_starts_a_probe_of_its_mis() {
        // MIs end at 1, 2, ... s. The baseline is set by MI 0 (end 1 s) and never changes: at the
        // end of MI 10 (11 s) it has stood 10 s, so MIs 11 and 12 are probe MIs; the probe ends
        // at 13 s and the next starts 10 s later, after MI 22 (23 s).
        assert_eq!(probing_after(25, 1.0, &[0]), vec![10, 11, 22, 23]);
    }

    #[test]
    fn a_changed_baseline_restarts_the_timer() {
        // A change at MI 7 (8 s) moves the first probe to 18 s (after MI 17).
        assert_eq!(probing_after(20, 1.0, &[0, 7]), vec![17, 18]);
        // A baseline that keeps changing never probes.
        let all: Vec<usize> = (0..40).collect();
        assert!(probing_after(40, 1.0, &all).is_empty());
    }

    #[test]
    fn the_first_recorded_mi_starts_the_timer_whatever_it_says() {
        // Even without a reported change the first MI sets the time the timer counts from.
        assert_eq!(probing_after(12, 1.0, &[]), vec![10, 11]);
    }

    #[test]
    fn a_quiet_mi_restarts_the_timer_a_queue_does_not() {
        let quiet = ProbeRtt {
            quiet_latency_ratio: Some(1.1),
            ..probe()
        };
        // Baseline 40 ms: 44 ms is within 1.1 of it, 44.1 ms is not; an MI without samples
        // (latency 0) says nothing.
        assert!(quiet.restarts_timer(false, 0.044, 0.04));
        assert!(!quiet.restarts_timer(false, 0.0441, 0.04));
        assert!(!quiet.restarts_timer(false, 0.0, 0.04));
        assert!(quiet.restarts_timer(true, 0.08, 0.04));
        // Without the ratio only a changed baseline restarts it.
        assert!(!probe().restarts_timer(false, 0.04, 0.04));
        assert!(probe().restarts_timer(true, 0.04, 0.04));
        let bad = ProbeRtt {
            quiet_latency_ratio: Some(1.0),
            ..probe()
        };
        assert_eq!(
            field_of(bad.validate()),
            Err("probe_rtt.quiet_latency_ratio")
        );
    }

    #[test]
    fn restarts_wait_for_probes_or_follow_loss_within_its_window() {
        let mi = |end: f64, lost: f64| MonitorInterval {
            bytes_sent: 10.0 * crate::mi::BYTES_PER_PACKET,
            bytes_lost: lost * crate::mi::BYTES_PER_PACKET,
            send_start_s: end - 0.1,
            send_end_s: end,
            ..MonitorInterval::default()
        };
        // Notes the MI's loss, then asks.
        let check = |state: &mut ProbeState, p: &ProbeRtt, mi: MonitorInterval| {
            state.note_loss(p, &mi);
            state.may_restart(p, mi.send_end_s)
        };
        let mut state = ProbeState::default();
        // Not gated: every MI may restart.
        assert!(check(&mut state, &probe(), mi(0.1, 0.0)));
        let gated = ProbeRtt {
            restart_in_probes_only: true,
            ..probe()
        };
        assert!(!check(&mut state, &gated, mi(0.2, 0.0)));
        // Loss opens the gate only with a window (and is not kept without one).
        assert!(!check(&mut state, &gated, mi(0.3, 1.0)));
        assert!(state.is_fresh());
        let after_loss = ProbeRtt {
            restart_after_loss_s: Some(2.0),
            ..gated
        };
        let mut state = ProbeState::default();
        assert!(!check(&mut state, &after_loss, mi(0.5, 0.0)));
        assert!(
            check(&mut state, &after_loss, mi(1.0, 1.0)),
            "the lossy MI itself"
        );
        assert!(check(&mut state, &after_loss, mi(3.0, 0.0)), "2 s after it");
        assert!(
            !check(&mut state, &after_loss, mi(3.1, 0.0)),
            "2.1 s after it"
        );
        // In a probe the gate is open (the timer from 0.5 s, the interval 10 s).
        assert!(state.on_mi(&after_loss, 0.5, true));
        assert!(!state.on_mi(&after_loss, 11.0, false));
        assert!(check(&mut state, &after_loss, mi(11.1, 0.0)));
        for bad in [
            ProbeRtt {
                restart_after_loss_s: Some(0.0),
                ..after_loss
            },
            ProbeRtt {
                restart_in_probes_only: false,
                ..after_loss
            },
        ] {
            assert_eq!(
                field_of(bad.validate()),
                Err("probe_rtt.restart_after_loss_s")
            );
        }
        assert_eq!(after_loss.validate(), Ok(()));
    }

    #[test]
    fn probing_reports_the_mis_left() {
        let p = probe();
        let mut state = ProbeState::default();
        assert!(state.on_mi(&p, 0.0, true));
        assert!(!state.probing());
        assert!(!state.on_mi(&p, 10.0, false));
        assert!(state.probing());
        assert!(!state.on_mi(&p, 10.5, true));
        assert!(state.probing());
        assert!(state.on_mi(&p, 11.0, false));
        assert!(!state.probing());
    }

    #[test]
    fn validation_names_each_field() {
        let bad = [
            (
                ProbeRtt {
                    interval_s: 0.0,
                    ..probe()
                },
                "probe_rtt.interval_s",
            ),
            (
                ProbeRtt {
                    interval_s: f64::NAN,
                    ..probe()
                },
                "probe_rtt.interval_s",
            ),
            (ProbeRtt { mis: 0, ..probe() }, "probe_rtt.mis"),
            (
                ProbeRtt {
                    mis: 101,
                    ..probe()
                },
                "probe_rtt.mis",
            ),
            (
                ProbeRtt {
                    rate_fraction: 1.0,
                    ..probe()
                },
                "probe_rtt.rate_fraction",
            ),
            (
                ProbeRtt {
                    rate_fraction: 0.0,
                    ..probe()
                },
                "probe_rtt.rate_fraction",
            ),
        ];
        for (p, field) in bad {
            assert_eq!(field_of(p.validate()), Err(field), "{p:?}");
        }
        assert_eq!(probe().validate(), Ok(()));
    }

    #[test]
    fn yaml_defaults_fill_mis_and_fraction() {
        let p: ProbeRtt = serde_json::from_str("{\"interval_s\": 5}").expect("probe config");
        assert_eq!(
            p,
            ProbeRtt {
                interval_s: 5.0,
                mis: 4,
                rate_fraction: 0.25,
                restart_in_probes_only: false,
                quiet_latency_ratio: None,
                restart_after_loss_s: None,
                baseline_from_probe: false,
            }
        );
        assert_eq!(p, ProbeRtt::every(5.0), "every() has the file's defaults");
    }
}
