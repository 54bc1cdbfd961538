//! A connection's startup: the rate doubles every round trip until the path shows it is full,
//! then the agent takes over from the rate the path delivered.
//!
//! Links from 1 Mbit/s to 1 Gbit/s are three orders of magnitude apart. An agent steps its rate
//! by at most `delta_scale` per MI (2.5%: Aurora's), and a binomial increase less at high
//! rates, so a flow that starts low needs hundreds or thousands of MIs to reach a fast link's
//! rate: minutes. TCP's slow start, BBR's Startup and PCC's starting state answer the same
//! problem the same way, and so does this phase: after the warm-up each MI multiplies the rate
//! by `growth_per_mi` (a doubling per RTT at the usual half-RTT MIs), with no decision between.
//! It ends at the first MI that
//! - sees a queue: the mean of its newer half of RTT samples above `exit_latency_ratio` times
//!   the lowest MI mean RTT of the connection so far (warm-up MIs included);
//! - loses more than `exit_loss_ratio` of what it resolved (random loss below it does not end
//!   it, as it does not end BBR's);
//! - or finds the delivery rate flat: for `plateau_mis` MIs in a row no more than
//!   `plateau_growth` times the highest before them (BBR: 1.25 over three rounds). Held at
//!   the rule's maximum rate the growth stops and the delivery rate goes flat, so this is also
//!   how a startup at the maximum ends (reported as `MaxRate`); reaching the maximum alone does
//!   not end it, as a maximum above the link would hand the agent more than the path carries.
//!
//! The agent's rate is then the highest delivery rate the startup measured (BBR's bottleneck
//! bandwidth estimate), never above the rate it paced at. First, when the last MI sent faster
//! than that rate and the newer half of its RTT samples is above `drained_latency_ratio` times
//! the lowest (a queue, and the startup's own), the startup drains (BBR's Drain): it paces at
//! `drain_rate_fraction` of that rate until an MI's RTT is back within
//! `drained_latency_ratio` of the lowest, or for at most `max_drain_mis` MIs. An
//! application-limited sender, whose pacing rate grew while it sent what it had, drains
//! nothing. Drain MIs are not base-RTT probes: the mode switch does not judge them. The agent
//! decides after the last.
//!
//! A connection that meets a busy path skips the startup (`skip_busy_path`, `BusyPath`): when a
//! warm-up MI, or the first startup MI (still paced at the start rate), already shows a queue
//! or heavy loss, the queue is others', growing into it only takes their share, and draining
//! would hand them the newcomer's. The agent then starts at the start rate, as without a
//! startup. A startup that ends at the rule's maximum is never a skip.

use crate::error::{invalid, RateError};
use crate::mi::{MonitorInterval, BYTES_PER_PACKET};
use serde::{Deserialize, Serialize};

/// How a learned sender starts a connection (absent from a rule: it starts at its start rate
/// under the agent, as Aurora does).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Startup {
    /// Rate multiplier per MI, in (1, 4] (default 2^(1/2): a doubling per RTT at half-RTT MIs).
    #[serde(default = "default_growth")]
    pub growth_per_mi: f64,
    /// An MI whose newer half of RTT samples averages above this multiple of the
    /// connection's lowest MI mean RTT ends it (> 1; default 1.15).
    #[serde(default = "default_exit_latency_ratio")]
    pub exit_latency_ratio: f64,
    /// An MI that loses more than this share of its resolved packets ends it, in (0, 1]
    /// (default 0.2).
    #[serde(default = "default_exit_loss_ratio")]
    pub exit_loss_ratio: f64,
    /// A delivery rate at most this multiple of the highest before it counts as flat (> 1;
    /// default 1.25).
    #[serde(default = "default_plateau_growth")]
    pub plateau_growth: f64,
    /// Flat MIs in a row that end it, in [1, 100] (default 3).
    #[serde(default = "default_plateau_mis")]
    pub plateau_mis: u32,
    /// Pacing rate while draining, as a fraction of the rate handed to the agent, in (0, 1)
    /// (default 0.75).
    #[serde(default = "default_drain_rate_fraction")]
    pub drain_rate_fraction: f64,
    /// A drain MI whose mean RTT is within this multiple of the startup's lowest ends the
    /// drain (> 1; default 1.1).
    #[serde(default = "default_drained_latency_ratio")]
    pub drained_latency_ratio: f64,
    /// Most drain MIs, in [0, 100] (default 8; 0: no drain).
    #[serde(default = "default_max_drain_mis")]
    pub max_drain_mis: u32,
    /// Skip the startup when an MI paced at the start rate (warm-up, or the startup's first)
    /// already shows a queue or heavy loss: a busy path (default true).
    #[serde(default = "default_skip_busy_path")]
    pub skip_busy_path: bool,
}

fn default_growth() -> f64 {
    std::f64::consts::SQRT_2
}
fn default_exit_latency_ratio() -> f64 {
    1.15
}
fn default_exit_loss_ratio() -> f64 {
    0.2
}
fn default_plateau_growth() -> f64 {
    1.25
}
fn default_plateau_mis() -> u32 {
    3
}
fn default_drain_rate_fraction() -> f64 {
    0.75
}
fn default_drained_latency_ratio() -> f64 {
    1.1
}
fn default_max_drain_mis() -> u32 {
    8
}
fn default_skip_busy_path() -> bool {
    true
}

impl Default for Startup {
    fn default() -> Self {
        Self {
            growth_per_mi: default_growth(),
            exit_latency_ratio: default_exit_latency_ratio(),
            exit_loss_ratio: default_exit_loss_ratio(),
            plateau_growth: default_plateau_growth(),
            plateau_mis: default_plateau_mis(),
            drain_rate_fraction: default_drain_rate_fraction(),
            drained_latency_ratio: default_drained_latency_ratio(),
            max_drain_mis: default_max_drain_mis(),
            skip_busy_path: default_skip_busy_path(),
        }
    }
}

/// Most flat MIs a startup may wait for, and most MIs it may drain.
pub const MAX_PLATEAU_MIS: u32 = 100;

impl Startup {
    /// Checks the parameters; errors name the field under `startup`.
    pub fn validate(&self) -> Result<(), RateError> {
        if !(self.growth_per_mi > 1.0 && self.growth_per_mi <= 4.0) {
            return invalid(
                "startup.growth_per_mi",
                format!("must lie in (1, 4] (got {})", self.growth_per_mi),
            );
        }
        if !(self.exit_latency_ratio > 1.0 && self.exit_latency_ratio.is_finite()) {
            return invalid(
                "startup.exit_latency_ratio",
                format!("must be finite and > 1 (got {})", self.exit_latency_ratio),
            );
        }
        if !(self.exit_loss_ratio > 0.0 && self.exit_loss_ratio <= 1.0) {
            return invalid(
                "startup.exit_loss_ratio",
                format!("must lie in (0, 1] (got {})", self.exit_loss_ratio),
            );
        }
        if !(self.plateau_growth > 1.0 && self.plateau_growth.is_finite()) {
            return invalid(
                "startup.plateau_growth",
                format!("must be finite and > 1 (got {})", self.plateau_growth),
            );
        }
        if !(1..=MAX_PLATEAU_MIS).contains(&self.plateau_mis) {
            return invalid(
                "startup.plateau_mis",
                format!(
                    "must lie in [1, {MAX_PLATEAU_MIS}] (got {})",
                    self.plateau_mis
                ),
            );
        }
        if !(self.drain_rate_fraction > 0.0 && self.drain_rate_fraction < 1.0) {
            return invalid(
                "startup.drain_rate_fraction",
                format!("must lie in (0, 1) (got {})", self.drain_rate_fraction),
            );
        }
        if !(self.drained_latency_ratio > 1.0 && self.drained_latency_ratio.is_finite()) {
            return invalid(
                "startup.drained_latency_ratio",
                format!(
                    "must be finite and > 1 (got {})",
                    self.drained_latency_ratio
                ),
            );
        }
        if self.max_drain_mis > MAX_PLATEAU_MIS {
            return invalid(
                "startup.max_drain_mis",
                format!(
                    "must lie in [0, {MAX_PLATEAU_MIS}] (got {})",
                    self.max_drain_mis
                ),
            );
        }
        Ok(())
    }
}

/// Why a startup ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartupExit {
    /// An MI's RTT rose above `exit_latency_ratio` times the lowest.
    Queue,
    /// An MI lost more than `exit_loss_ratio`.
    Loss,
    /// The delivery rate stopped growing.
    Plateau,
    /// The delivery rate went flat with the rate held at the rule's maximum.
    MaxRate,
    /// A base-RTT probe began (the probe timer ran out during the startup).
    Probe,
    /// The warm-up MIs already saw a queue grow (or heavy loss) at the start rate: the path
    /// is busy, others hold it, and the agent starts at the start rate with no growth.
    BusyPath,
}

/// What a startup does after an MI.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StartupStep {
    /// Pace the next MI at this rate (the startup grows or drains).
    Pace(f64),
    /// The startup ended; the agent's rate is this one.
    Exit(f64, StartupExit),
}

/// One connection's startup: whether it runs, and what it measured.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartupState {
    /// Whether the startup still runs (a connection starts it in [`StartupState::begin`]).
    running: bool,
    /// The lowest MI mean RTT of the startup (s; 0 before a sample).
    min_rtt_s: f64,
    /// The highest delivery rate of the startup (packets/s; 0 before one).
    best_delivered_pps: f64,
    /// Flat MIs in a row.
    flat_mis: u32,
    /// The rate the agent gets once the drain ends (packets/s; 0 while growing).
    #[serde(default, skip_serializing_if = "is_zero")]
    settled_pps: f64,
    /// Drain MIs sent.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    drain_mis: u32,
    /// Why the growth ended (None while it grows or before any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exit: Option<StartupExit>,
    /// Growth steps taken (MIs paced above the start rate follow the first).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    grown_mis: u32,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}
fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

impl StartupState {
    /// A fresh connection's state: running when the rule has a startup.
    pub fn begin(startup: Option<&Startup>) -> Self {
        Self {
            running: startup.is_some(),
            ..Self::default()
        }
    }

    /// Whether the startup paces the next MI.
    pub fn running(&self) -> bool {
        self.running
    }

    /// Whether no startup ran (a connection without one keeps it so).
    pub fn is_fresh(&self) -> bool {
        *self == Self::default()
    }

    /// Ends a running startup early (a base-RTT probe takes over) that paced its last MI at
    /// `rate_pps`; returns the agent's rate: the drain's settled rate, or while growing the
    /// best delivery rate (no more than `rate_pps`; `rate_pps` before any delivery).
    pub fn end(&mut self, rate_pps: f64) -> f64 {
        self.running = false;
        if self.settled_pps > 0.0 {
            return self.settled_pps;
        }
        self.exit.get_or_insert(StartupExit::Probe);
        if self.best_delivered_pps > 0.0 {
            self.best_delivered_pps.min(rate_pps)
        } else {
            rate_pps
        }
    }

    /// Why the startup ended (None while it runs, or without one).
    pub fn exit(&self) -> Option<StartupExit> {
        self.exit
    }

    /// The highest delivery rate the startup measured (packets/s; 0 before one).
    pub fn best_delivered_pps(&self) -> f64 {
        self.best_delivered_pps
    }

    /// Whether the startup drains the queue it built (its growth has ended).
    pub fn draining(&self) -> bool {
        self.running && self.exit.is_some()
    }

    /// Folds in a recorded MI paced at `rate_pps` under the rule's maximum `max_rate_pps`;
    /// call only while [`StartupState::running`].
    pub fn on_mi(
        &mut self,
        startup: &Startup,
        mi: &MonitorInterval,
        rate_pps: f64,
        max_rate_pps: f64,
    ) -> StartupStep {
        if self.draining() {
            return self.on_drain_mi(startup, mi);
        }
        let Some(why) = self.exit_reason(startup, mi, rate_pps, max_rate_pps) else {
            self.grown_mis += 1;
            return StartupStep::Pace((rate_pps * startup.growth_per_mi).min(max_rate_pps));
        };
        if self.grown_mis == 0 && startup.skip_busy_path && why != StartupExit::MaxRate {
            // The first startup MI was paced at the start rate: what it saw, others built.
            return self.skip(rate_pps);
        }
        self.exit = Some(why);
        if self.best_delivered_pps <= 0.0 {
            self.running = false;
            return StartupStep::Exit(rate_pps, why);
        }
        self.settled_pps = self.best_delivered_pps.min(rate_pps);
        let own_queue = self.overshot(mi) && self.queue_shows(startup, mi);
        if startup.max_drain_mis == 0 || !own_queue {
            self.running = false;
            return StartupStep::Exit(self.settled_pps, why);
        }
        StartupStep::Pace(self.settled_pps * startup.drain_rate_fraction)
    }

    /// Ends the startup on a busy path: the agent keeps `rate_pps`, nothing drains.
    fn skip(&mut self, rate_pps: f64) -> StartupStep {
        self.running = false;
        self.exit = Some(StartupExit::BusyPath);
        StartupStep::Exit(rate_pps, StartupExit::BusyPath)
    }

    /// Whether the exit MI sent faster than the path delivered, so that the queue at the exit
    /// is (also) the startup's own. A startup that sent no faster than the path delivered
    /// built none; nor did an application-limited sender whose pacing rate grew while it sent
    /// what it had.
    fn overshot(&self, mi: &MonitorInterval) -> bool {
        sending_rate_pps(mi).is_some_and(|sent| sent > self.best_delivered_pps)
    }

    /// Whether the newer half of `mi`'s RTT samples (its mean with fewer than two) is above
    /// `drained_latency_ratio` times the lowest: a queue to drain.
    fn queue_shows(&self, startup: &Startup, mi: &MonitorInterval) -> bool {
        newest_latency_s(mi) > startup.drained_latency_ratio * self.min_rtt_s
    }

    /// Whether `mi`'s RTT is within `drained_latency_ratio` of the startup's lowest: no queue
    /// to drain.
    fn is_drained(&self, startup: &Startup, mi: &MonitorInterval) -> bool {
        let rtt = mi.avg_latency_s();
        rtt > 0.0 && rtt <= startup.drained_latency_ratio * self.min_rtt_s
    }

    /// A drain MI: the drain ends once an MI sees the path or after `max_drain_mis`.
    fn on_drain_mi(&mut self, startup: &Startup, mi: &MonitorInterval) -> StartupStep {
        self.drain_mis += 1;
        let why = self.exit.unwrap_or(StartupExit::Queue);
        if self.is_drained(startup, mi) || self.drain_mis >= startup.max_drain_mis {
            self.running = false;
            StartupStep::Exit(self.settled_pps, why)
        } else {
            StartupStep::Pace(self.settled_pps * startup.drain_rate_fraction)
        }
    }

    /// Folds in a warm-up MI before the startup's first. A connection that meets a busy path
    /// (the RTT of a warm-up MI already above `exit_latency_ratio` times the lowest before it,
    /// or its loss above `exit_loss_ratio`) at its start rate skips the startup: it would
    /// only push into the queue that others keep. Returns whether the startup ended so.
    pub fn on_warmup_mi(&mut self, startup: &Startup, mi: &MonitorInterval) -> bool {
        let queued = self.queued(startup, mi);
        self.note_rtt(mi.avg_latency_s());
        if startup.skip_busy_path && (queued || mi.loss_ratio() > startup.exit_loss_ratio) {
            self.running = false;
            self.exit = Some(StartupExit::BusyPath);
        }
        !self.running
    }

    /// Whether `mi` shows a queue: the mean of its newest half of RTT samples (its mean with
    /// fewer than two) above `exit_latency_ratio` times the lowest MI mean before it. The
    /// newest samples tell a queue half an MI sooner than the mean, and during the growth
    /// every half MI doubles what the queue gains.
    fn queued(&self, startup: &Startup, mi: &MonitorInterval) -> bool {
        self.min_rtt_s > 0.0 && newest_latency_s(mi) > startup.exit_latency_ratio * self.min_rtt_s
    }

    fn note_rtt(&mut self, rtt: f64) {
        if rtt > 0.0 {
            self.min_rtt_s = if self.min_rtt_s > 0.0 {
                self.min_rtt_s.min(rtt)
            } else {
                rtt
            };
        }
    }

    /// Updates the startup's measurements with `mi` and says whether (and why) it ends.
    fn exit_reason(
        &mut self,
        startup: &Startup,
        mi: &MonitorInterval,
        rate_pps: f64,
        max_rate_pps: f64,
    ) -> Option<StartupExit> {
        self.note_rtt(mi.avg_latency_s());
        let queued = self.queued(startup, mi);
        let lossy = mi.loss_ratio() > startup.exit_loss_ratio;
        let delivered = delivery_rate_pps(mi);
        // A rate from a handful of acks is noise: it neither counts towards a plateau nor
        // breaks one.
        if acked_packets(mi) >= PLATEAU_SAMPLE_ACKS && self.best_delivered_pps > 0.0 {
            let flat =
                delivered.is_some_and(|d| d <= startup.plateau_growth * self.best_delivered_pps);
            self.flat_mis = if flat { self.flat_mis + 1 } else { 0 };
        }
        if let Some(d) = delivered {
            self.best_delivered_pps = self.best_delivered_pps.max(d);
        }
        if queued {
            Some(StartupExit::Queue)
        } else if lossy {
            Some(StartupExit::Loss)
        } else if self.flat_mis >= startup.plateau_mis && rate_pps >= max_rate_pps {
            Some(StartupExit::MaxRate)
        } else if self.flat_mis >= startup.plateau_mis {
            Some(StartupExit::Plateau)
        } else {
            None
        }
    }
}

/// The rate an MI's packets left at, counted as [`delivery_rate_pps`] counts acknowledgements
/// (n packets over the MI span n - 1 gaps), so that a sender whose every packet is delivered
/// sends and delivers at the same rate. None with fewer than two.
fn sending_rate_pps(mi: &MonitorInterval) -> Option<f64> {
    let sent = mi.bytes_sent / BYTES_PER_PACKET;
    let span = mi.send_dur_s();
    (sent >= 2.0 && span > 0.0).then(|| (sent - 1.0) / span)
}

/// The mean of the newer half of `mi`'s RTT samples (its mean with fewer than two): what the
/// path's queue is at the MI's end, as near as its samples tell.
fn newest_latency_s(mi: &MonitorInterval) -> f64 {
    if mi.rtt.count >= 2 {
        mi.rtt.second_half_mean_s
    } else {
        mi.avg_latency_s()
    }
}

/// The fewest acknowledgements whose delivery rate the plateau test judges: an MI of 2 to 7
/// acks (the first MIs of a connection that starts at 1 Mbit/s on a long path) measures its
/// rate to within a whole gap of the span, too coarse for a 25% test.
pub const PLATEAU_SAMPLE_ACKS: f64 = 8.0;

/// Packets `mi` acknowledged.
fn acked_packets(mi: &MonitorInterval) -> f64 {
    mi.bytes_acked / BYTES_PER_PACKET
}

/// The rate an MI's acknowledgements arrived at (packets/s): the packets acknowledged after
/// the first, over the time from the first to the last (n acks span n - 1 gaps). None with
/// fewer than two.
pub fn delivery_rate_pps(mi: &MonitorInterval) -> Option<f64> {
    let acked = acked_packets(mi);
    let span = mi.recv_dur_s();
    (acked >= 2.0 && span > 0.0).then(|| (acked - 1.0) / span)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mi::RttSummary;

    /// An MI of `sent` packets over 0.1 s with `acked` of them acknowledged evenly over
    /// `recv_s`, `lost` lost, every RTT sample `rtt_s`.
    fn mi(sent: f64, acked: f64, lost: f64, recv_s: f64, rtt_s: f64) -> MonitorInterval {
        MonitorInterval {
            bytes_sent: sent * BYTES_PER_PACKET,
            bytes_acked: acked * BYTES_PER_PACKET,
            bytes_lost: lost * BYTES_PER_PACKET,
            send_start_s: 0.0,
            send_end_s: 0.1,
            recv_start_s: 0.0,
            recv_end_s: recv_s,
            rtt: RttSummary::from_samples(&[rtt_s]),
        }
    }

    #[test]
    fn delivery_rate_counts_the_gaps_between_acks() {
        // 11 acks over 0.1 s: 10 gaps of 10 ms, 100 packets/s.
        let d = delivery_rate_pps(&mi(11.0, 11.0, 0.0, 0.1, 0.05)).unwrap();
        assert!((d - 100.0).abs() < 1e-9);
        assert_eq!(delivery_rate_pps(&mi(1.0, 1.0, 0.0, 0.1, 0.05)), None);
        assert_eq!(delivery_rate_pps(&mi(5.0, 5.0, 0.0, 0.0, 0.05)), None);
    }

    #[test]
    fn grows_by_the_factor_until_the_rtt_rises() {
        let s = Startup {
            growth_per_mi: 2.0,
            exit_latency_ratio: 1.25,
            max_drain_mis: 0,
            ..Startup::default()
        };
        let mut st = StartupState::begin(Some(&s));
        assert!(st.running());
        // Delivery doubles with the rate: never flat. RTT 50 ms, then 62.4 (within 1.25), then
        // 63 ms (above): it ends there, at the best delivery rate, 400 pkt/s (no drain).
        assert_eq!(
            st.on_mi(&s, &mi(11.0, 11.0, 0.0, 0.1, 0.05), 100.0, 1e5),
            StartupStep::Pace(200.0)
        );
        assert_eq!(
            st.on_mi(&s, &mi(21.0, 21.0, 0.0, 0.1, 0.0624), 200.0, 1e5),
            StartupStep::Pace(400.0)
        );
        assert_eq!(
            st.on_mi(&s, &mi(41.0, 41.0, 0.0, 0.1, 0.063), 400.0, 1e5),
            StartupStep::Exit(400.0, StartupExit::Queue)
        );
        assert!(!st.running());
        assert_eq!(st.exit(), Some(StartupExit::Queue));
    }

    #[test]
    fn the_drain_paces_at_its_fraction_until_the_rtt_is_back() {
        let s = Startup {
            growth_per_mi: 2.0,
            exit_latency_ratio: 1.25,
            drain_rate_fraction: 0.5,
            max_drain_mis: 3,
            ..Startup::default()
        };
        // The second MI paced 200 pkt/s where the path delivered 140 (14 gaps over 0.1 s):
        // the queue is the startup's own, and it drains.
        let run = |rtts: &[f64]| {
            let mut st = StartupState::begin(Some(&s));
            let mut steps = vec![
                st.on_mi(&s, &mi(11.0, 11.0, 0.0, 0.1, 0.05), 100.0, 1e5),
                st.on_mi(&s, &mi(21.0, 15.0, 0.0, 0.1, 0.07), 200.0, 1e5),
            ];
            assert!(st.draining());
            for &rtt in rtts {
                steps.push(st.on_mi(&s, &mi(10.0, 10.0, 0.0, 0.1, rtt), 70.0, 1e5));
            }
            (steps, st)
        };
        // Best delivery 140 pkt/s: drain at 70 while the RTT stays above 1.1 x 50 ms.
        let (steps, st) = run(&[0.06, 0.054]);
        assert_eq!(
            steps,
            [
                StartupStep::Pace(200.0),
                StartupStep::Pace(70.0),
                StartupStep::Pace(70.0),
                StartupStep::Exit(140.0, StartupExit::Queue),
            ]
        );
        assert!(!st.running() && !st.draining());
        // A queue that stays: the drain ends after max_drain_mis all the same.
        let (steps, _) = run(&[0.07, 0.07, 0.07]);
        assert_eq!(steps[4], StartupStep::Exit(140.0, StartupExit::Queue));
        // Cut short by a probe while draining: the agent gets the settled rate.
        let mut st = StartupState::begin(Some(&s));
        st.on_mi(&s, &mi(11.0, 11.0, 0.0, 0.1, 0.05), 100.0, 1e5);
        st.on_mi(&s, &mi(21.0, 15.0, 0.0, 0.1, 0.07), 200.0, 1e5);
        assert_eq!(st.end(70.0), 140.0);
        // Cut short while growing: the best delivery rate, not above the paced rate.
        let mut st = StartupState::begin(Some(&s));
        st.on_mi(&s, &mi(21.0, 21.0, 0.0, 0.1, 0.05), 100.0, 1e5);
        assert_eq!(st.end(150.0), 150.0);
        assert_eq!(st.exit(), Some(StartupExit::Probe));
        // Delivered as fast as it paced: the queue is not the startup's, nothing drains.
        let mut st = StartupState::begin(Some(&s));
        st.on_mi(&s, &mi(11.0, 11.0, 0.0, 0.1, 0.05), 100.0, 1e5);
        assert_eq!(
            st.on_mi(&s, &mi(21.0, 21.0, 0.0, 0.1, 0.07), 200.0, 1e5),
            StartupStep::Exit(200.0, StartupExit::Queue)
        );
        assert!(!st.running());
    }

    #[test]
    fn a_busy_path_skips_the_startup_at_the_start_rate() {
        let s = Startup::default();
        // A warm-up MI at 60 ms after one at 50 ms (above 1.15 x 50): others keep a queue.
        let mut st = StartupState::begin(Some(&s));
        assert!(!st.on_warmup_mi(&s, &mi(10.0, 10.0, 0.0, 0.1, 0.05)));
        assert!(st.running());
        assert!(st.on_warmup_mi(&s, &mi(10.0, 10.0, 0.0, 0.1, 0.06)));
        assert!(!st.running());
        assert_eq!(st.exit(), Some(StartupExit::BusyPath));
        // Heavy loss in the warm-up does the same.
        let mut st = StartupState::begin(Some(&s));
        assert!(st.on_warmup_mi(&s, &mi(10.0, 7.0, 3.0, 0.1, 0.05)));
        // The first startup MI, still at the start rate, sees the queue the warm-up did not:
        // the agent keeps the start rate, and nothing drains.
        let mut st = StartupState::begin(Some(&s));
        st.on_warmup_mi(&s, &mi(10.0, 10.0, 0.0, 0.1, 0.05));
        assert_eq!(
            st.on_mi(&s, &mi(10.0, 8.0, 0.0, 0.1, 0.07), 100.0, 1e5),
            StartupStep::Exit(100.0, StartupExit::BusyPath)
        );
        // Without the skip the same MI ends the growth as a queue, at what was delivered.
        let keep = Startup {
            skip_busy_path: false,
            ..s
        };
        let mut st = StartupState::begin(Some(&keep));
        assert!(!st.on_warmup_mi(&keep, &mi(10.0, 10.0, 0.0, 0.1, 0.05)));
        assert!(!st.on_warmup_mi(&keep, &mi(10.0, 10.0, 0.0, 0.1, 0.06)));
        assert!(st.running());
        assert_eq!(
            st.on_mi(&keep, &mi(11.0, 11.0, 0.0, 0.1, 0.07), 100.0, 1e5),
            StartupStep::Exit(100.0, StartupExit::Queue)
        );
    }

    #[test]
    fn the_newer_half_of_the_samples_tells_the_queue() {
        let s = Startup::default();
        let mut st = StartupState::begin(Some(&s));
        st.on_warmup_mi(&s, &mi(10.0, 10.0, 0.0, 0.1, 0.05));
        assert_eq!(
            st.on_mi(&s, &mi(11.0, 11.0, 0.0, 0.1, 0.05), 100.0, 1e5),
            StartupStep::Pace(100.0 * s.growth_per_mi)
        );
        // Mean 56.5 ms (within 1.15 x 50), its newer half 60 ms (above): the growth ends.
        let mut rising = mi(15.0, 15.0, 0.0, 0.1, 0.05);
        rising.rtt = RttSummary::from_samples(&[0.053, 0.053, 0.06, 0.06]);
        assert!(rising.avg_latency_s() < s.exit_latency_ratio * 0.05);
        st.on_mi(&s, &rising, 141.0, 1e5);
        assert_eq!(st.exit(), Some(StartupExit::Queue));
    }

    #[test]
    fn a_flat_delivery_rate_ends_it_after_the_plateau_mis() {
        let s = Startup::default();
        let mut st = StartupState::begin(Some(&s));
        // Delivery 100, then 120, 124, 125 pkt/s: each within 1.25 of the best before it.
        let flat = |st: &mut StartupState, rtt_s: f64| {
            let mut steps = Vec::new();
            for acked in [11.0, 13.0, 13.4, 13.5] {
                steps.push(st.on_mi(&s, &mi(acked, acked, 0.0, 0.1, rtt_s), 1000.0, 1e5));
            }
            steps
        };
        let steps = flat(&mut st, 0.05);
        assert!(steps[..3].iter().all(|s| matches!(s, StartupStep::Pace(_))));
        // The path was never queued: no drain, and the agent gets 125.
        match steps[3] {
            StartupStep::Exit(r, StartupExit::Plateau) => assert!((r - 125.0).abs() < 1e-9),
            other => panic!("{other:?}"),
        }
        assert!(!st.running());
        // A plateau whose last MI sent 1,000 pkt/s where 125 came through drains at 0.75 x
        // 125 first: the queue is the startup's own.
        let mut st = StartupState::begin(Some(&s));
        st.on_mi(&s, &mi(11.0, 11.0, 0.0, 0.1, 0.05), 100.0, 1e5);
        let mut last = StartupStep::Pace(0.0);
        for acked in [13.0, 13.4, 13.5] {
            last = st.on_mi(&s, &mi(100.0, acked, 0.0, 0.1, 0.056), 1000.0, 1e5);
        }
        match last {
            StartupStep::Pace(r) => assert!((r - 93.75).abs() < 1e-9, "{r}"),
            other => panic!("{other:?}"),
        }
        assert!(st.draining());
        assert_eq!(st.exit(), Some(StartupExit::Plateau));
    }

    #[test]
    fn heavy_loss_and_the_maximum_end_it_light_loss_does_not() {
        let s = Startup::default();
        let mut st = StartupState::begin(Some(&s));
        // 5% loss goes on; 30% ends the growth.
        st.on_mi(&s, &mi(20.0, 19.0, 1.0, 0.1, 0.05), 200.0, 1e5);
        assert_eq!(st.exit(), None);
        // Loss without a queue in the RTT: the agent gets the best delivery rate (27 / 0.1 s),
        // no drain.
        assert_eq!(
            st.on_mi(&s, &mi(40.0, 28.0, 12.0, 0.1, 0.05), 283.0, 1e5),
            StartupStep::Exit(270.0, StartupExit::Loss)
        );
        assert_eq!(st.exit(), Some(StartupExit::Loss));
        // With a queue showing, heavy loss after sending 390 pkt/s where 270 came through
        // drains at 0.75 x 270 first.
        let mut st = StartupState::begin(Some(&s));
        st.on_mi(&s, &mi(20.0, 19.0, 1.0, 0.1, 0.05), 200.0, 1e5);
        assert_eq!(
            st.on_mi(&s, &mi(40.0, 28.0, 12.0, 0.1, 0.056), 283.0, 1e5),
            StartupStep::Pace(202.5)
        );
        assert_eq!(st.exit(), Some(StartupExit::Loss));
        // At the maximum the rate stays until the delivery rate is flat for the plateau MIs;
        // the RTT never rose, so the agent gets the delivery rate with no drain.
        let mut st = StartupState::begin(Some(&s));
        assert_eq!(
            st.on_mi(&s, &mi(91.0, 91.0, 0.0, 0.1, 0.05), 900.0, 1000.0),
            StartupStep::Pace(1000.0)
        );
        for _ in 1..s.plateau_mis {
            assert_eq!(
                st.on_mi(&s, &mi(99.0, 99.0, 0.0, 0.1, 0.05), 1000.0, 1000.0),
                StartupStep::Pace(1000.0)
            );
        }
        match st.on_mi(&s, &mi(99.0, 99.0, 0.0, 0.1, 0.05), 1000.0, 1000.0) {
            StartupStep::Exit(r, StartupExit::MaxRate) => assert!((r - 980.0).abs() < 1e-9),
            other => panic!("{other:?}"),
        }
        assert!(!st.running());
        // A maximum above the link: the queue ends it; pacing 1,000 against 900 delivered,
        // it drains at 0.75 x 900 first.
        let mut st = StartupState::begin(Some(&s));
        st.on_mi(&s, &mi(91.0, 91.0, 0.0, 0.1, 0.05), 900.0, 1000.0);
        assert_eq!(
            st.on_mi(&s, &mi(95.0, 81.0, 0.0, 0.1, 0.07), 1000.0, 1000.0),
            StartupStep::Pace(675.0)
        );
        assert_eq!(st.exit(), Some(StartupExit::Queue));
        assert!(!StartupState::begin(None).running());
    }

    #[test]
    fn validation_names_fields_and_defaults_read() {
        let field = |s: Startup| {
            s.validate()
                .map_err(|RateError::Invalid { field, .. }| field)
        };
        assert_eq!(field(Startup::default()), Ok(()));
        for (s, want) in [
            (
                Startup {
                    growth_per_mi: 1.0,
                    ..Startup::default()
                },
                "startup.growth_per_mi",
            ),
            (
                Startup {
                    exit_latency_ratio: 1.0,
                    ..Startup::default()
                },
                "startup.exit_latency_ratio",
            ),
            (
                Startup {
                    exit_loss_ratio: 0.0,
                    ..Startup::default()
                },
                "startup.exit_loss_ratio",
            ),
            (
                Startup {
                    plateau_growth: f64::NAN,
                    ..Startup::default()
                },
                "startup.plateau_growth",
            ),
            (
                Startup {
                    plateau_mis: 0,
                    ..Startup::default()
                },
                "startup.plateau_mis",
            ),
            (
                Startup {
                    drain_rate_fraction: 1.0,
                    ..Startup::default()
                },
                "startup.drain_rate_fraction",
            ),
            (
                Startup {
                    drained_latency_ratio: 0.9,
                    ..Startup::default()
                },
                "startup.drained_latency_ratio",
            ),
            (
                Startup {
                    max_drain_mis: 101,
                    ..Startup::default()
                },
                "startup.max_drain_mis",
            ),
        ] {
            assert_eq!(field(s), Err(want));
        }
        let read: Startup = serde_json::from_str("{}").unwrap();
        assert_eq!(read, Startup::default());
        assert!(serde_json::from_str::<Startup>(r#"{"growth": 2}"#).is_err());
    }
}
