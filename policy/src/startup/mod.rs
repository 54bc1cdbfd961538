//! A connection's startup: the rate doubles every round trip until the path shows it is full,
//! then the agent takes over from the rate the path delivered.
//!
//! Links from 1 Mbit/s to 1 Gbit/s are three orders of magnitude apart. An agent steps its rate
//! by at most `delta_scale` per MI (2.5%: Aurora's), and a binomial increase less at high
//! rates, so a flow that starts low needs hundreds or thousands of MIs to reach a fast link's
//! rate: minutes. TCP's slow start, BBR's Startup and PCC's starting state answer the same
//! problem the same way, and so does this phase: after the warm-up each MI multiplies the rate
//! by `growth_per_mi` (a doubling per RTT at the usual half-RTT MIs), with no decision between.
//! An MI during which nothing came back (no acknowledgement, RTT sample or loss) holds the
//! rate: as a slow start's window grows only with acknowledgements, growth waits for the
//! path to answer, so that MIs shorter than the RTT before a sender knows it (a QUIC
//! connection's first round trips) cannot multiply the rate blind.
//! It ends at the first MI that
//! - sees a queue: the mean of its newer half of RTT samples above `exit_latency_ratio` times
//!   the lowest MI mean RTT of the connection so far (warm-up MIs included);
//! - loses more than `exit_loss_ratio` of what it resolved (random loss below it does not end
//!   it, as it does not end BBR's);
//! - or finds the delivery rate flat: for `plateau_mis` MIs in a row no more than
//!   `plateau_growth` times the highest before them (BBR: 1.25 over three rounds; MIs that
//!   began within the lowest RTT of an MI that heard nothing back carry the acknowledgements
//!   of what left at the held rate, and are not judged). Held at
//!   the rule's maximum rate the growth stops and the delivery rate goes flat, so this is also
//!   how a startup at the maximum ends (reported as `MaxRate`); reaching the maximum alone does
//!   not end it, as a maximum above the link would hand the agent more than the path carries.
//!
//! The agent's rate is then the highest delivery rate the startup measured (BBR's bottleneck
//! bandwidth estimate), never above the rate it paced at; the delivery rate is timed from an
//! MI's first acknowledgement to its last, not over its window, which at 10 packets per MI
//! reads 10% low. First, when the last MI sent faster than that rate and the startup ended on a
//! plateau or at the maximum (its queue is on the way, though the RTT samples trail it by a
//! round trip) or the newer half of the last MI's RTT samples is above `drained_latency_ratio`
//! times the lowest (a queue, and the startup's own), the startup drains (BBR's Drain): it
//! paces at `drain_rate_fraction` of that rate until an MI of acknowledgements of what the
//! drain sent (one that began the lowest RTT after the drain) has its RTT back within
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
    /// When the last MI that heard nothing back ended (s; 0: none did).
    #[serde(default, skip_serializing_if = "is_zero")]
    held_until_s: f64,
    /// When the drain began (s; 0 before it).
    #[serde(default, skip_serializing_if = "is_zero")]
    drain_from_s: f64,
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
        if !has_feedback(mi) {
            // Nothing came back yet (the first round trip, or MIs shorter than it before the
            // path has an RTT sample): growth is earned by acknowledgements, as a slow
            // start's window is, so the rate holds.
            self.held_until_s = mi.send_end_s;
            return StartupStep::Pace(rate_pps);
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
        let own_queue =
            self.overshot(mi) && (queue_on_its_way(why) || self.queue_shows(startup, mi));
        if startup.max_drain_mis == 0 || !own_queue {
            self.running = false;
            return StartupStep::Exit(self.settled_pps, why);
        }
        self.drain_from_s = mi.send_end_s;
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

    /// Whether `mi`'s acknowledgements are of packets the drain sent (it began at least the
    /// lowest RTT after the drain did). The ones before are of the growth's last packets,
    /// whose RTT samples may not show yet the queue that those packets are building: on 12
    /// Mbit/s the first drain MI's 44 ms ended a drain whose queue then rose to 64.
    fn acks_of_drain(&self, mi: &MonitorInterval) -> bool {
        mi.send_start_s >= self.drain_from_s + self.min_rtt_s
    }

    /// Whether `mi`'s RTT is within `drained_latency_ratio` of the startup's lowest: no queue
    /// to drain.
    fn is_drained(&self, startup: &Startup, mi: &MonitorInterval) -> bool {
        let rtt = mi.avg_latency_s();
        rtt > 0.0 && rtt <= startup.drained_latency_ratio * self.min_rtt_s
    }

    /// A drain MI: the drain ends once an MI of acknowledgements of what the drain sent sees
    /// the path, or after `max_drain_mis`.
    fn on_drain_mi(&mut self, startup: &Startup, mi: &MonitorInterval) -> StartupStep {
        self.drain_mis += 1;
        let why = self.exit.unwrap_or(StartupExit::Queue);
        let drained = self.acks_of_drain(mi) && self.is_drained(startup, mi);
        if drained || self.drain_mis >= startup.max_drain_mis {
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

    /// Whether `mi`'s acknowledgements may still be of packets sent while the rate held (it
    /// began less than the lowest RTT after the last MI that heard nothing back): their
    /// delivery rate is the held rate's, and flat, whatever the path could carry.
    fn acks_of_held_rate(&self, mi: &MonitorInterval) -> bool {
        self.held_until_s > 0.0 && mi.send_start_s < self.held_until_s + self.min_rtt_s
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
        // breaks one; nor do the acks of what was sent while the rate held.
        if acked_packets(mi) >= RATE_SAMPLE_ACKS
            && self.best_delivered_pps > 0.0
            && !self.acks_of_held_rate(mi)
        {
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

/// Whether a growth that ended so left a queue of its own whether or not the exit MI's RTT
/// samples show it: at a plateau (or the maximum) the startup went on sending faster than the
/// path delivered for the flat MIs, and the RTT samples trail that sending by a round trip
/// (at 10 packets per MI the queue of a plateau exit on 4 Mbit/s showed 5 ms of the 90 it
/// reached). A loss exit's shortfall may be random loss, and a queue exit's shows.
fn queue_on_its_way(why: StartupExit) -> bool {
    matches!(why, StartupExit::Plateau | StartupExit::MaxRate)
}

/// The rate an MI's packets left at, counted over its window less one packet (as an MI
/// without acknowledgement times counts its deliveries): it reads at or a packet below the
/// pacing rate, so that an exit MI overshot only if it sent faster than the path delivered by
/// more than a packet's worth. None with fewer than two.
fn sending_rate_pps(mi: &MonitorInterval) -> Option<f64> {
    gaps_per_second(mi.bytes_sent / BYTES_PER_PACKET, mi.send_dur_s())
}

/// `count` packets over `window_s`, less one: the gaps between them per second. None with
/// fewer than two or an empty window.
fn gaps_per_second(count: f64, window_s: f64) -> Option<f64> {
    (count >= 2.0 && window_s > 0.0).then(|| (count - 1.0) / window_s)
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

/// Whether anything about the path came back during `mi`: an acknowledgement, an RTT
/// sample or a loss.
fn has_feedback(mi: &MonitorInterval) -> bool {
    mi.bytes_acked > 0.0 || mi.bytes_lost > 0.0 || mi.rtt.count > 0
}

/// The fewest acknowledgements whose delivery rate the plateau test judges, and whose span
/// times it: an MI of 2 to 7 acks (the first MIs of a connection that starts at 1 Mbit/s on a
/// long path) measures its rate to within a whole gap of the span, too coarse for a 25% test;
/// and a handful can arrive closer together than the path delivers (a held ACK frame released
/// with the next, a handshake's small packets: 5 acknowledgements of a QUIC connection's
/// first round trip at 1,665 packets/s on a 1,000 packets/s path).
pub const RATE_SAMPLE_ACKS: f64 = 8.0;

/// Packets `mi` acknowledged.
fn acked_packets(mi: &MonitorInterval) -> f64 {
    mi.bytes_acked / BYTES_PER_PACKET
}

/// The rate an MI's acknowledgements arrived at (packets/s): the packets acknowledged after
/// the first acknowledgement, over the time from the first to the last ([`crate::AckSpan`]);
/// None unless they spanned time. An MI of fewer than [`RATE_SAMPLE_ACKS`] acknowledgements,
/// or without their times (built by a caller), counts over its window instead, one packet less
/// than it acknowledged (a window's count is off by up to one either way, so the highest of
/// several MIs stays at or below the path's rate); None with fewer than two.
///
/// The window's count is what the sender's MI sizing makes coarse: at 10 packets per MI (4
/// Mbit/s at 60 ms, or an MI's packet floor) it reads 10% low.
pub fn delivery_rate_pps(mi: &MonitorInterval) -> Option<f64> {
    match mi.ack_span {
        Some(span) if acked_packets(mi) >= RATE_SAMPLE_ACKS => span.delivery_rate_pps(),
        _ => window_delivery_rate_pps(mi),
    }
}

/// An MI's acknowledgements counted over its window, less one (see [`delivery_rate_pps`]).
fn window_delivery_rate_pps(mi: &MonitorInterval) -> Option<f64> {
    gaps_per_second(acked_packets(mi), mi.recv_dur_s())
}

#[cfg(test)]
mod tests;
