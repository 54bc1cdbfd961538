//! Copa's mode switch for learned senders: a cooperative policy while the flows on the path
//! empty their queue together, a competitive one while a sender that does not yield to delay
//! (Cubic) keeps a queue that outlasts the flow's own base-RTT probes.
//!
//! Copa (Arun and Balakrishnan, NSDI 2018) stays in its default, delay-yielding mode while the
//! queueing delay is nearly zero at least once every five RTTs, and turns competitive when it is
//! not. Learned senders that probe the base RTT ([`ProbeRtt`](crate::ProbeRtt)) have a sharper
//! test: flows that yield to delay probe together and drain the queue they share, so a probe
//! whose every MI still sees a queue meets a sender that does not yield. The switch turns
//! competitive at the end of such a probe, and cooperative again at the first MI that sees the
//! path without a queue (its mean latency within `queue_ratio` of the connection's lowest or,
//! with `lowest_window_s: W`, of the lowest of the last W to 2W seconds: then a base RTT that
//! rose for good, as on a LEO path, becomes the path, as in BBR's and Copa's 10 s minimum-RTT
//! filters).
//! A probe held up by the rate rule's floor cannot drain much; where several flows sit near the
//! floor of a slow link, their queue outlasts the probes and they turn competitive too
//! (docs/research/mode-switch.md). So can a probe that another flow
//! of the export does not join (a newcomer's probe timer is not the incumbent's); once two of
//! them are competitive, each one's probes meet the queue the other holds, and neither turns
//! back (docs/research/fine-tuned-beside-a-peer.md).
//!
//! The policy an export runs in each mode is the export's business ([`crate::Policy`]); the
//! switch only keeps the mode, in the MI clock, so the gym and a deployed
//! [`Controller`](crate::Controller) switch at the same MIs.

use crate::error::{invalid, RateError};
use crate::mi::MonitorInterval;
use crate::probe::MAX_PROBE_INTERVAL_S;
use crate::queue::queue_free;
use serde::{Deserialize, Serialize};

/// When a learned sender switches between its cooperative and competitive policies.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModeSwitch {
    /// An MI whose mean latency is at most this multiple of the lowest MI mean latency (the
    /// connection's, or the window's: `lowest_window_s`) sees no queue (> 1; default 1.1, the
    /// probes' `quiet_latency_ratio` in the shipped configs). A probe none of whose MIs does
    /// turns the sender competitive; any MI that does turns it cooperative.
    #[serde(default = "default_queue_ratio")]
    pub queue_ratio: f64,
    /// Seconds without an MI that sees the path after which the sender probes, whether or not
    /// its probe timer would (absent: only the timer's probes test the queue). A latency
    /// baseline that follows a competitor's standing queue finds every MI quiet and never
    /// probes; this probe is what then turns the sender competitive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_after_s: Option<f64>,
    /// How long an MI's latency stays the lowest the switch compares with (s; absent: the
    /// connection's lowest). The lowest is then the lowest of the last `lowest_window_s` to
    /// twice that, so a base RTT that rose for good becomes the path once the old one has left
    /// the window (BBR's and Copa's 10 s minimum-RTT filters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowest_window_s: Option<f64>,
    /// The largest fraction of an MI's packets a competitive sender may lose and still choose
    /// its next rate freely (in (0, 1); absent: no bound). After a (non-probe) MI that lost
    /// more, the competitive policy's next rate is at most what that MI delivered, as BBR
    /// bounds its in-flight data after a lossy round: a sender losing a large share of what it
    /// sends holds no more of the link for it (its excess is what overflows), and on a shallow
    /// buffer whose base RTT rose it would otherwise send at twice the path's rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub competitive_max_loss: Option<f64>,
}

fn default_queue_ratio() -> f64 {
    1.1
}

impl Default for ModeSwitch {
    fn default() -> Self {
        Self {
            queue_ratio: default_queue_ratio(),
            probe_after_s: None,
            lowest_window_s: None,
            competitive_max_loss: None,
        }
    }
}

impl ModeSwitch {
    /// Checks the parameters; errors name the field under `mode_switch`.
    pub fn validate(&self) -> Result<(), RateError> {
        if !(self.queue_ratio > 1.0 && self.queue_ratio.is_finite()) {
            return invalid(
                "mode_switch.queue_ratio",
                format!("must be finite and > 1 (got {})", self.queue_ratio),
            );
        }
        optional_seconds("mode_switch.probe_after_s", self.probe_after_s)?;
        optional_seconds("mode_switch.lowest_window_s", self.lowest_window_s)?;
        match self.competitive_max_loss {
            Some(l) if !(l > 0.0 && l < 1.0) => invalid(
                "mode_switch.competitive_max_loss",
                format!("must lie in (0, 1) (got {l})"),
            ),
            _ => Ok(()),
        }
    }

    /// The highest rate (packets/s) the policy of `mode` may choose after `mi`: what `mi`
    /// delivered, for a competitive sender whose (non-probe) MI lost more than
    /// `competitive_max_loss` of its packets and delivered some; otherwise none.
    fn delivery_cap_pps(&self, mode: Mode, mi: &MonitorInterval, in_probe: bool) -> Option<f64> {
        let max_loss = self.competitive_max_loss?;
        let delivered = mi.throughput_pps();
        (mode == Mode::Competitive && !in_probe && mi.loss_ratio() > max_loss && delivered > 0.0)
            .then_some(delivered)
    }
}

/// Checks an optional length of time: absent, or in (0, [`MAX_PROBE_INTERVAL_S`]].
fn optional_seconds(field: &'static str, value: Option<f64>) -> Result<(), RateError> {
    match value {
        Some(s) if !(s > 0.0 && s <= MAX_PROBE_INTERVAL_S) => invalid(
            field,
            format!("must lie in (0, {MAX_PROBE_INTERVAL_S}] (got {s})"),
        ),
        _ => Ok(()),
    }
}

/// Which of an export's policies decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The policy trained to share a link with flows that yield to delay (the default, and the
    /// only mode of an export without a switch).
    #[default]
    Cooperative,
    /// The policy trained to hold its own beside a sender that keeps a standing queue.
    Competitive,
}

/// One connection's mode, what the switch remembers to change it, and the bound it sets on the
/// next decision's rate.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModeState {
    mode: Mode,
    /// The connection's lowest MI mean latency (s), or with `lowest_window_s` the lowest since
    /// `window_from_s`; `None` before an RTT sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lowest_s: Option<f64>,
    /// With `lowest_window_s`: the lowest of the window before the current one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    earlier_lowest_s: Option<f64>,
    /// With `lowest_window_s`: when the current window began (s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    window_from_s: Option<f64>,
    /// Whether an MI of the probe under way saw no queue.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    probe_saw_path: bool,
    /// End (s) of the last MI that saw the path, or of the last probe (`probe_after_s`);
    /// `None` before the first recorded MI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path_seen_s: Option<f64>,
    /// The bound on the next decision's rate after a lossy competitive MI
    /// ([`ModeSwitch::competitive_max_loss`]); `None` when unbounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delivery_cap_pps: Option<f64>,
}

impl ModeState {
    /// The mode in force.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Whether nothing was recorded yet (a connection without a switch keeps it so).
    pub fn is_fresh(&self) -> bool {
        *self == Self::default()
    }

    /// Folds in a recorded MI. `in_probe`: it was a base-RTT probe MI; `probe_ended`: it was the
    /// probe's last. [`ModeState::mode`] then says the mode for the next decision.
    pub fn on_mi(
        &mut self,
        switch: &ModeSwitch,
        mi: &MonitorInterval,
        in_probe: bool,
        probe_ended: bool,
    ) {
        let sees_path = self
            .note_latency(switch, mi)
            .is_some_and(|(latency, lowest)| queue_free(latency, lowest, switch.queue_ratio));
        if sees_path || self.path_seen_s.is_none() {
            self.path_seen_s = Some(mi.send_end_s);
        }
        if sees_path {
            self.mode = Mode::Cooperative;
        }
        if in_probe {
            self.probe_saw_path |= sees_path;
            if probe_ended {
                if !self.probe_saw_path {
                    self.mode = Mode::Competitive;
                }
                self.probe_saw_path = false;
                self.path_seen_s = Some(mi.send_end_s);
            }
        }
        self.delivery_cap_pps = switch.delivery_cap_pps(self.mode, mi, in_probe);
    }

    /// The highest rate (packets/s) the next decision may choose, if bounded
    /// ([`ModeSwitch::competitive_max_loss`]).
    pub fn delivery_cap_pps(&self) -> Option<f64> {
        self.delivery_cap_pps
    }

    /// Whether the switch asks for a probe after an MI that ended at `end_s`: `probe_after_s`
    /// have passed since an MI last saw the path (or a probe ended).
    pub fn wants_probe(&self, switch: &ModeSwitch, end_s: f64) -> bool {
        match (switch.probe_after_s, self.path_seen_s) {
            (Some(after), Some(seen)) => end_s - seen >= after,
            _ => false,
        }
    }

    /// Folds in a warm-up MI (not recorded): its latency counts towards the lowest, which a
    /// competitor's queue may otherwise hide from the first recorded MI on.
    pub fn note_warmup(&mut self, switch: &ModeSwitch, mi: &MonitorInterval) {
        self.note_latency(switch, mi);
    }

    /// Lowers the lowest latency to `mi`'s mean latency where that is lower (after moving the
    /// window on, with `lowest_window_s`); returns (its latency, the lowest) for an MI with RTT
    /// samples.
    fn note_latency(&mut self, switch: &ModeSwitch, mi: &MonitorInterval) -> Option<(f64, f64)> {
        let latency = mi.avg_latency_s();
        if latency <= 0.0 {
            return None;
        }
        if let Some(window) = switch.lowest_window_s {
            let from = *self.window_from_s.get_or_insert(mi.send_end_s);
            if mi.send_end_s - from >= window {
                self.earlier_lowest_s = self.lowest_s.take();
                self.window_from_s = Some(mi.send_end_s);
            }
        }
        let current = self.lowest_s.map_or(latency, |l| l.min(latency));
        self.lowest_s = Some(current);
        let lowest = self.earlier_lowest_s.map_or(current, |e| e.min(current));
        Some((latency, lowest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mi::RttSummary;

    /// An MI whose mean latency is `latency_s` (no RTT samples when 0).
    fn mi(latency_s: f64) -> MonitorInterval {
        let samples: Vec<f64> = if latency_s > 0.0 {
            vec![latency_s]
        } else {
            Vec::new()
        };
        MonitorInterval {
            rtt: RttSummary::from_samples(&samples),
            ..MonitorInterval::default()
        }
    }

    /// Feeds (latency, in_probe, probe_ended) MIs and returns the mode after each.
    fn modes(mis: &[(f64, bool, bool)]) -> Vec<Mode> {
        let switch = ModeSwitch::default();
        let mut state = ModeState::default();
        mis.iter()
            .map(|&(l, p, e)| {
                state.on_mi(&switch, &mi(l), p, e);
                state.mode()
            })
            .collect()
    }

    use Mode::{Competitive as K, Cooperative as C};

    #[test]
    fn a_probe_that_never_sees_the_path_turns_the_sender_competitive() {
        // Lowest 40 ms; 1.1 x 40 = 44 ms. A probe of two MIs at 60 and 50 ms keeps a queue.
        let m = modes(&[
            (0.04, false, false),
            (0.06, false, false),
            (0.06, true, false),
            (0.05, true, true),
            (0.07, false, false),
        ]);
        assert_eq!(m, [C, C, C, K, K]);
    }

    #[test]
    fn a_probe_that_drains_the_queue_keeps_the_sender_cooperative() {
        // The probe's second MI, 44 ms, is within 1.1 of 40 ms.
        let m = modes(&[
            (0.04, false, false),
            (0.08, false, false),
            (0.06, true, false),
            (0.044, true, true),
            (0.08, false, false),
        ]);
        assert_eq!(m, [C; 5]);
    }

    #[test]
    fn an_mi_without_a_queue_turns_a_competitive_sender_cooperative() {
        let m = modes(&[
            (0.04, false, false),
            (0.06, true, true),
            (0.07, false, false),
            // No RTT samples say nothing.
            (0.0, false, false),
            (0.0441, false, false),
            (0.044, false, false),
        ]);
        assert_eq!(m, [C, K, K, K, K, C]);
    }

    #[test]
    fn a_probe_without_rtt_samples_turns_competitive_and_a_lower_latency_is_the_new_lowest() {
        // A probe whose MIs carry no RTT samples saw no path. The first sample sets the lowest,
        // and a later lower one lowers it: 30 ms after 40 ms makes 40 ms a queue.
        let m = modes(&[(0.0, true, true), (0.04, false, false)]);
        assert_eq!(m, [K, C]);
        let m = modes(&[
            (0.04, false, false),
            (0.03, false, false),
            (0.04, true, true),
        ]);
        assert_eq!(m, [C, C, K]);
    }

    #[test]
    fn a_forced_probe_is_due_probe_after_s_past_the_path_or_the_last_probe() {
        let switch = ModeSwitch {
            probe_after_s: Some(2.0),
            ..ModeSwitch::default()
        };
        let at = |end: f64, latency: f64| MonitorInterval {
            send_end_s: end,
            ..mi(latency)
        };
        let mut state = ModeState::default();
        assert!(!state.wants_probe(&switch, 10.0), "nothing recorded yet");
        // The first MI (a queue or not) starts the count; the path at 1 s restarts it.
        state.on_mi(&switch, &at(0.5, 0.06), false, false);
        state.on_mi(&switch, &at(1.0, 0.04), false, false);
        state.on_mi(&switch, &at(2.9, 0.06), false, false);
        assert!(!state.wants_probe(&switch, 2.9));
        assert!(state.wants_probe(&switch, 3.0));
        // A probe's end restarts it too.
        state.on_mi(&switch, &at(3.5, 0.06), true, true);
        assert!(!state.wants_probe(&switch, 5.4));
        assert!(state.wants_probe(&switch, 5.5));
        // Without probe_after_s: never.
        assert!(!state.wants_probe(&ModeSwitch::default(), 100.0));
    }

    #[test]
    fn the_queue_ratio_must_exceed_one_and_the_optional_fields_lie_in_range() {
        assert!(ModeSwitch::default().validate().is_ok());
        for r in [1.0, 0.5, f64::INFINITY, f64::NAN] {
            let bad = ModeSwitch {
                queue_ratio: r,
                ..ModeSwitch::default()
            };
            assert!(matches!(
                bad.validate(),
                Err(RateError::Invalid {
                    field: "mode_switch.queue_ratio",
                    ..
                })
            ));
        }
        for s in [0.0, -1.0, 3601.0, f64::NAN] {
            let probe = ModeSwitch {
                probe_after_s: Some(s),
                ..ModeSwitch::default()
            };
            let window = ModeSwitch {
                lowest_window_s: Some(s),
                ..ModeSwitch::default()
            };
            for (bad, name) in [
                (probe, "mode_switch.probe_after_s"),
                (window, "mode_switch.lowest_window_s"),
            ] {
                assert!(
                    matches!(bad.validate(), Err(RateError::Invalid { field, .. }) if field == name),
                    "{name} = {s}"
                );
            }
        }
    }

    /// With `lowest_window_s` a base RTT that rose for good becomes the path once the old one
    /// has left the window (after one to two windows); without it, never.
    #[test]
    fn a_windowed_lowest_takes_a_higher_base_rtt_after_one_to_two_windows() {
        let windowed = ModeSwitch {
            lowest_window_s: Some(10.0),
            ..ModeSwitch::default()
        };
        let at = |end: f64, latency: f64| MonitorInterval {
            send_end_s: end,
            ..mi(latency)
        };
        for (switch, turns_back_at) in [(windowed, Some(20.5)), (ModeSwitch::default(), None)] {
            let mut state = ModeState::default();
            // 40 ms until 5 s, then 60 ms for good (a base-RTT step); a probe at 6 s meets it.
            let mut t = 0.0;
            let mut back = None;
            while t < 40.0 {
                t += 0.5;
                let latency = if t <= 5.0 { 0.04 } else { 0.06 };
                let probe_ends = t == 6.0;
                state.on_mi(&switch, &at(t, latency), probe_ends, probe_ends);
                if t == 6.0 {
                    assert_eq!(state.mode(), K);
                }
                if t > 6.0 && back.is_none() && state.mode() == C {
                    back = Some(t);
                }
            }
            // Windows from the first MI: [0.5, 10.5), [10.5, 20.5): 40 ms leaves at 20.5 s.
            assert_eq!(back, turns_back_at, "{switch:?}");
        }
    }

    #[test]
    fn the_competitive_loss_bound_lies_strictly_between_zero_and_one() {
        for (l, ok) in [
            (0.15, true),
            (0.999, true),
            (0.0, false),
            (1.0, false),
            (f64::NAN, false),
        ] {
            let switch = ModeSwitch {
                competitive_max_loss: Some(l),
                ..ModeSwitch::default()
            };
            let result = switch.validate();
            assert_eq!(result.is_ok(), ok, "{l}");
            if !ok {
                assert!(matches!(
                    result,
                    Err(RateError::Invalid {
                        field: "mode_switch.competitive_max_loss",
                        ..
                    })
                ));
            }
        }
    }

    /// After a competitive MI that lost more than the bound, the next rate is bounded by what
    /// the MI delivered: 0.1 s MIs, 100 packets sent; 60 acknowledged and 40 lost (40%) is
    /// 600 packets/s. Not in the cooperative mode, not in a probe MI, not at or below the
    /// bound, not without a delivery, and not without the field.
    #[test]
    fn a_lossy_competitive_mi_bounds_the_next_rate_by_its_delivery() {
        let bounded = ModeSwitch {
            competitive_max_loss: Some(0.15),
            ..ModeSwitch::default()
        };
        let lossy = |acked: f64, lost: f64| MonitorInterval {
            bytes_lost: lost * crate::mi::BYTES_PER_PACKET,
            ..crate::mi::test_interval(1.0, 1.1, acked + lost, acked, &[0.09, 0.09])
        };
        let competitive = || {
            let mut state = ModeState::default();
            // Lowest 40 ms, then a one-MI probe that keeps a queue.
            state.on_mi(&bounded, &mi(0.04), false, false);
            state.on_mi(&bounded, &mi(0.09), true, true);
            assert_eq!(state.mode(), K);
            state
        };
        let mut state = competitive();
        state.on_mi(&bounded, &lossy(60.0, 40.0), false, false);
        let cap = state
            .delivery_cap_pps()
            .expect("a lossy competitive MI bounds the rate");
        assert!((cap - 600.0).abs() < 1e-9, "{cap}");
        // The bound lasts one decision: the next MI, lossless, lifts it.
        state.on_mi(&bounded, &lossy(100.0, 0.0), false, false);
        assert_eq!(state.delivery_cap_pps(), None);
        let mut state = competitive();
        state.on_mi(&bounded, &lossy(85.0, 15.0), false, false);
        assert_eq!(state.delivery_cap_pps(), None, "15% is within the bound");
        let mut state = competitive();
        state.on_mi(&bounded, &lossy(60.0, 40.0), true, false);
        assert_eq!(state.delivery_cap_pps(), None, "a probe MI");
        let mut state = competitive();
        state.on_mi(&bounded, &lossy(0.0, 100.0), false, false);
        assert_eq!(
            state.delivery_cap_pps(),
            None,
            "nothing delivered (an outage)"
        );
        let mut state = ModeState::default();
        state.on_mi(&bounded, &lossy(60.0, 40.0), false, false);
        assert_eq!(state.mode(), C);
        assert_eq!(state.delivery_cap_pps(), None, "cooperative");
        let mut state = ModeState::default();
        let unbounded = ModeSwitch::default();
        state.on_mi(&unbounded, &mi(0.04), false, false);
        state.on_mi(&unbounded, &mi(0.09), true, true);
        state.on_mi(&unbounded, &lossy(60.0, 40.0), false, false);
        assert_eq!((state.mode(), state.delivery_cap_pps()), (K, None));
    }
}
