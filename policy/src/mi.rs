//! Monitor-interval statistics: the raw counts and times a sender has at the end of an MI.

use crate::ack_span::{AckSpan, AckTimes};
use crate::dispersion::TrainDispersion;
use serde::{Deserialize, Serialize};

/// Packet size used by the simulator and Aurora (bytes).
pub const BYTES_PER_PACKET: f64 = 1500.0;

/// Summary of the RTT samples (seconds) collected during one MI, in arrival order.
///
/// Aurora's `latency increase` compares the mean of the second half of the samples with the mean
/// of the first half (`half = floor(n / 2)`), so the summary keeps both halves' means as well as
/// the overall mean.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct RttSummary {
    /// Number of samples.
    pub count: u64,
    /// Mean of all samples (0 when there are none).
    pub mean_s: f64,
    /// Mean of the first `floor(count / 2)` samples (0 when that is empty).
    pub first_half_mean_s: f64,
    /// Mean of the remaining samples (0 when `count < 2`).
    pub second_half_mean_s: f64,
}

impl RttSummary {
    /// Summarizes samples given in arrival order.
    pub fn from_samples(samples: &[f64]) -> Self {
        let count = samples.len();
        let half = count / 2;
        let mean = |s: &[f64]| {
            if s.is_empty() {
                0.0
            } else {
                s.iter().sum::<f64>() / s.len() as f64
            }
        };
        let (first, second) = samples.split_at(half);
        Self {
            count: count as u64,
            mean_s: mean(samples),
            first_half_mean_s: if half >= 1 { mean(first) } else { 0.0 },
            second_half_mean_s: if half >= 1 { mean(second) } else { 0.0 },
        }
    }

    /// Aurora's `latency increase`: second-half mean minus first-half mean, 0 with < 2 samples.
    pub fn latency_increase_s(&self) -> f64 {
        if self.count >= 2 {
            self.second_half_mean_s - self.first_half_mean_s
        } else {
            0.0
        }
    }
}

/// RTT samples summed over MIs, each over a base RTT: a mean RTT (base 1) or RTT ratio
/// weighted by samples, not by MIs.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RttTally {
    /// Sum over the samples of RTT / base RTT.
    pub ratio_sum: f64,
    /// Number of samples.
    pub samples: u64,
}

impl RttTally {
    /// Adds an MI's samples, each over `base_s` (1.0 sums the RTTs themselves, in seconds).
    pub fn add(&mut self, rtt: &RttSummary, base_s: f64) {
        if rtt.count > 0 && base_s > 0.0 {
            self.ratio_sum += rtt.mean_s / base_s * rtt.count as f64;
            self.samples += rtt.count;
        }
    }

    /// The mean over all the tallies' samples (None without samples).
    pub fn mean_of<'a>(tallies: impl IntoIterator<Item = &'a RttTally>) -> Option<f64> {
        let (sum, n) = tallies
            .into_iter()
            .fold((0.0, 0u64), |(s, n), t| (s + t.ratio_sum, n + t.samples));
        (n > 0).then(|| sum / n as f64)
    }

    /// The mean of this tally's samples (None without samples).
    pub fn mean(&self) -> Option<f64> {
        Self::mean_of([self])
    }
}

/// What a sender knows about one monitor interval.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct MonitorInterval {
    /// Bytes sent during the MI.
    pub bytes_sent: f64,
    /// Bytes acknowledged during the MI.
    pub bytes_acked: f64,
    /// Bytes detected lost during the MI.
    pub bytes_lost: f64,
    /// Time the MI's sending started (s).
    pub send_start_s: f64,
    /// Time the MI's sending ended (s).
    pub send_end_s: f64,
    /// Time the MI's acknowledgements started (s).
    pub recv_start_s: f64,
    /// Time the MI's acknowledgements ended (s).
    pub recv_end_s: f64,
    /// RTT samples of the acknowledged packets.
    pub rtt: RttSummary,
    /// The MI's acknowledgements as a delivery-rate sample (None where the MI's source did not
    /// time its acknowledgements: an MI built by hand or read from an older recording).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_span: Option<AckSpan>,
    /// The bottleneck's rate (packets/s) as the MI's fastest train of packets sent back to back
    /// spread out ([`TrainDispersion`]); None without such a train.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_pps: Option<f64>,
}

/// The counts of the MI in progress, as a sender forms them (simulated or real): packets sent,
/// acknowledged and detected lost since `start_s`, and the RTT samples of the acknowledged ones
/// in arrival order. The one owner of how an MI's statistics are formed: the gym's senders and
/// a real transport count through it alike.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MiCounters {
    /// Start of the MI (s); infinite for a sender that has not started.
    #[serde(with = "crate::serde_float")]
    pub start_s: f64,
    /// Packets sent.
    pub sent: u64,
    /// Packets acknowledged.
    pub acked: u64,
    /// Packets detected lost.
    pub lost: u64,
    /// RTT samples (s) of the acknowledged packets.
    pub rtt_samples: Vec<f64>,
    /// When the acknowledgements arrived.
    #[serde(default)]
    pub ack_times: AckTimes,
    /// Trains among the acknowledgements (they may span MIs), for a sender that sends them
    /// ([`MiCounters::measure_trains`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispersion: Option<TrainDispersion>,
}

impl MiCounters {
    /// Empty counters of an MI starting at `start_s`.
    pub fn starting_at(start_s: f64) -> Self {
        Self {
            start_s,
            ..Self::default()
        }
    }

    /// Empties the counters for an MI starting at `start_s` (keeps the sample buffer).
    pub fn restart(&mut self, start_s: f64) {
        self.start_s = start_s;
        self.sent = 0;
        self.acked = 0;
        self.lost = 0;
        self.rtt_samples.clear();
        self.ack_times = AckTimes::default();
        if let Some(d) = &mut self.dispersion {
            *d = TrainDispersion::default();
        }
    }

    /// Whether the sender sends packet trains: their acknowledgements then give the MI's
    /// [`MonitorInterval::train_pps`], and a packet that followed another back to back gives
    /// no RTT sample (its delay holds the queueing the train itself caused).
    pub fn measure_trains(&mut self, on: bool) {
        self.dispersion = on.then(TrainDispersion::default);
    }

    /// A packet was sent.
    #[inline]
    pub fn on_sent(&mut self) {
        self.on_sent_train(1);
    }

    /// A packet was acknowledged at `t_s` after `rtt_s`.
    #[inline]
    pub fn on_acked(&mut self, t_s: f64, rtt_s: f64) {
        self.on_acked_train(t_s, rtt_s, 1);
    }

    /// A packet was detected lost.
    #[inline]
    pub fn on_lost(&mut self) {
        self.on_lost_train(1);
    }

    /// A train of `packets` back-to-back packets was sent (the simulator's packet trains).
    #[inline]
    pub fn on_sent_train(&mut self, packets: u32) {
        self.sent += u64::from(packets);
    }

    /// A train of `packets` was acknowledged at `t_s` after `rtt_s`: one RTT sample for the
    /// train.
    #[inline]
    pub fn on_acked_train(&mut self, t_s: f64, rtt_s: f64, packets: u32) {
        self.acked += u64::from(packets);
        self.ack_times.note(t_s, rtt_s, u64::from(packets));
        let follows = self
            .dispersion
            .as_mut()
            .is_some_and(|d| d.note(t_s, t_s - rtt_s, u64::from(packets)));
        if !follows {
            self.rtt_samples.push(rtt_s);
        }
    }

    /// A train of `packets` was detected lost.
    #[inline]
    pub fn on_lost_train(&mut self, packets: u32) {
        self.lost += u64::from(packets);
    }

    /// Closes the MI at `now` and starts the next one there. Every time field of the result is
    /// an MI boundary: sending and acknowledgements both span `[start_s, now]`, as in PCC-RL
    /// (not the first and last packet's times).
    pub fn close(&mut self, now: f64) -> MonitorInterval {
        let mi = MonitorInterval {
            bytes_sent: self.sent as f64 * BYTES_PER_PACKET,
            bytes_acked: self.acked as f64 * BYTES_PER_PACKET,
            bytes_lost: self.lost as f64 * BYTES_PER_PACKET,
            send_start_s: self.start_s,
            send_end_s: now,
            recv_start_s: self.start_s,
            recv_end_s: now,
            rtt: RttSummary::from_samples(&self.rtt_samples),
            ack_span: self.ack_times.span(self.acked),
            train_pps: self.dispersion.as_mut().and_then(TrainDispersion::close),
        };
        // A train's acknowledgements may straddle the boundary.
        let dispersion = self.dispersion.take();
        self.restart(now);
        self.dispersion = dispersion;
        mi
    }
}

impl MonitorInterval {
    /// Sending duration (s).
    pub fn send_dur_s(&self) -> f64 {
        self.send_end_s - self.send_start_s
    }

    /// Receiving duration (s).
    pub fn recv_dur_s(&self) -> f64 {
        self.recv_end_s - self.recv_start_s
    }

    /// Aurora's `send rate` in bits per second (0 for an empty interval).
    pub fn send_rate_bps(&self) -> f64 {
        let dur = self.send_dur_s();
        if dur > 0.0 {
            8.0 * self.bytes_sent / dur
        } else {
            0.0
        }
    }

    /// Aurora's `recv rate` (throughput) in bits per second (0 for an empty interval).
    pub fn recv_rate_bps(&self) -> f64 {
        let dur = self.recv_dur_s();
        if dur > 0.0 {
            8.0 * self.bytes_acked / dur
        } else {
            0.0
        }
    }

    /// Sending rate in packets per second.
    pub fn send_rate_pps(&self) -> f64 {
        self.send_rate_bps() / (8.0 * BYTES_PER_PACKET)
    }

    /// Throughput in packets per second.
    pub fn throughput_pps(&self) -> f64 {
        self.recv_rate_bps() / (8.0 * BYTES_PER_PACKET)
    }

    /// Aurora's `loss ratio`: lost / (lost + acked), 0 when nothing was resolved.
    pub fn loss_ratio(&self) -> f64 {
        let resolved = self.bytes_lost + self.bytes_acked;
        if resolved > 0.0 {
            self.bytes_lost / resolved
        } else {
            0.0
        }
    }

    /// Aurora's `avg latency`: mean RTT of the MI's samples (0 without samples).
    pub fn avg_latency_s(&self) -> f64 {
        self.rtt.mean_s
    }

    /// Column names of [`MonitorInterval::to_csv_row`], comma-separated.
    pub const CSV_HEADER: &'static str = "bytes_sent,bytes_acked,bytes_lost,send_start_s,\
        send_end_s,recv_start_s,recv_end_s,rtt_count,rtt_mean_s,rtt_first_half_mean_s,\
        rtt_second_half_mean_s,ack_span_packets,ack_span_s,train_pps";

    /// The MI as one CSV row (no newline), in [`MonitorInterval::CSV_HEADER`] order (the ack
    /// span's and the train rate's cells empty without them); floats print in shortest
    /// round-trip form, so [`MonitorInterval::from_csv_row`] restores them exactly.
    pub fn to_csv_row(&self) -> String {
        let (span_bytes, span_s) = match self.ack_span {
            Some(a) => (a.packets_after_first.to_string(), a.span_s.to_string()),
            None => (String::new(), String::new()),
        };
        let train = self.train_pps.map(|p| p.to_string()).unwrap_or_default();
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            self.bytes_sent,
            self.bytes_acked,
            self.bytes_lost,
            self.send_start_s,
            self.send_end_s,
            self.recv_start_s,
            self.recv_end_s,
            self.rtt.count,
            self.rtt.mean_s,
            self.rtt.first_half_mean_s,
            self.rtt.second_half_mean_s,
            span_bytes,
            span_s,
            train
        )
    }

    /// Parses a row written by [`MonitorInterval::to_csv_row`], or by a version before the ack
    /// span (its first 11 columns, no span) or before the train rate (13); the error names the
    /// column.
    pub fn from_csv_row(row: &str) -> Result<Self, String> {
        let names: Vec<&str> = Self::CSV_HEADER.split(',').collect();
        let cells: Vec<&str> = row.trim().split(',').map(str::trim).collect();
        if ![
            names.len(),
            CSV_COLUMNS_WITHOUT_SPAN,
            CSV_COLUMNS_WITHOUT_TRAIN,
        ]
        .contains(&cells.len())
        {
            return Err(format!(
                "expected {} columns ({}), got {}",
                names.len(),
                Self::CSV_HEADER,
                cells.len()
            ));
        }
        let num = |i: usize| {
            cells[i]
                .parse::<f64>()
                .map_err(|_| format!("{}: not a number: {:?}", names[i], cells[i]))
        };
        let count = cells[7]
            .parse::<u64>()
            .map_err(|_| format!("{}: not a count: {:?}", names[7], cells[7]))?;
        Ok(Self {
            bytes_sent: num(0)?,
            bytes_acked: num(1)?,
            bytes_lost: num(2)?,
            send_start_s: num(3)?,
            send_end_s: num(4)?,
            recv_start_s: num(5)?,
            recv_end_s: num(6)?,
            rtt: RttSummary {
                count,
                mean_s: num(8)?,
                first_half_mean_s: num(9)?,
                second_half_mean_s: num(10)?,
            },
            ack_span: match cells.get(11..13) {
                Some(["", ""]) | None => None,
                Some(_) => Some(AckSpan {
                    packets_after_first: num(11)?,
                    span_s: num(12)?,
                }),
            },
            train_pps: match cells.get(13) {
                Some(&"") | None => None,
                Some(_) => Some(num(13)?),
            },
        })
    }
}

/// Columns of an MI row written before the ack span.
const CSV_COLUMNS_WITHOUT_SPAN: usize = 11;

/// Columns of an MI row written before the train rate.
const CSV_COLUMNS_WITHOUT_TRAIN: usize = 13;

/// Monitor-interval sizing: the first MIs last `initial_delay_factor` one-way delays, later ones
/// `rtt_factor` times the previous MI's mean RTT (kept when it had no sample). With
/// `min_packets > 0` no MI is shorter than the time to send that many packets at the MI's rate.
///
/// The one type for it: a gym scenario's `monitor_interval:` and an export's
/// `policy.json` (beside `warmup_mis`) both hold it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonitorIntervalConfig {
    /// First MI length in one-way propagation delays (Aurora: 3).
    #[serde(default = "default_initial_delay_factor")]
    pub initial_delay_factor: f64,
    /// Later MI length in mean RTTs of the previous MI (Aurora: 0.5).
    #[serde(default = "default_rtt_factor")]
    pub rtt_factor: f64,
    /// Fewest packets an MI spans at its sending rate (0: off, Aurora's rule). At a few packets
    /// per MI the acknowledgements that fall into an MI swing its send ratio between 1, 2 and 3
    /// without any loss; PCC Vivace sizes its MIs with such a floor for the same reason.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_packets: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

fn default_initial_delay_factor() -> f64 {
    3.0
}

fn default_rtt_factor() -> f64 {
    0.5
}

impl Default for MonitorIntervalConfig {
    fn default() -> Self {
        Self {
            initial_delay_factor: default_initial_delay_factor(),
            rtt_factor: default_rtt_factor(),
            min_packets: 0.0,
        }
    }
}

impl MonitorIntervalConfig {
    /// The length of an MI whose RTT rule (or, before the first RTT sample,
    /// `initial_delay_factor x` the one-way delay) gives `rtt_based_s`, sent at `rate_pps`:
    /// floored at `min_packets` packets' sending time ([`floored_mi_duration_s`]).
    pub fn duration_s(&self, rtt_based_s: f64, rate_pps: f64) -> f64 {
        floored_mi_duration_s(rtt_based_s, self.min_packets, rate_pps)
    }

    /// Checks every value; the error is (field, message), the field relative to this section.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        for (field, v) in [
            ("initial_delay_factor", self.initial_delay_factor),
            ("rtt_factor", self.rtt_factor),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err((field, format!("must be > 0 (got {v})")));
            }
        }
        if !(self.min_packets.is_finite() && self.min_packets >= 0.0) {
            return Err((
                "min_packets",
                format!("must be >= 0 (got {})", self.min_packets),
            ));
        }
        Ok(())
    }
}

/// The length of an MI that the RTT rule (or the first MI's delay rule) sizes at `rtt_based_s`,
/// paced at `rate_pps`, floored at the time to send `min_packets` packets (no floor at 0). The one
/// owner of the rule: [`MonitorIntervalConfig::duration_s`] (the MI clock's sizing) calls it, so
/// training, evaluation and deployment size MIs alike. No MI lasts longer than [`MAX_MI_S`] or
/// than it takes to send [`MAX_MI_PACKETS`] packets.
pub fn floored_mi_duration_s(rtt_based_s: f64, min_packets: f64, rate_pps: f64) -> f64 {
    let (d, cap) = if rate_pps > 0.0 {
        let floored = if min_packets > 0.0 {
            rtt_based_s.max(min_packets / rate_pps)
        } else {
            rtt_based_s
        };
        (floored, MAX_MI_S.min(MAX_MI_PACKETS / rate_pps))
    } else {
        (rtt_based_s, MAX_MI_S)
    };
    d.min(cap)
}

/// Longest MI (s): a minute, far beyond any RTT a path has (a queue of millions of packets
/// behind a slow link can make the RTT rule ask for hours); a controller decides at least once
/// a minute.
pub const MAX_MI_S: f64 = 60.0;

/// Most packets one MI may take to send (at 10^6 pkt/s an MI lasts at most 1 s). Real paths
/// stay far below (1 Gbit/s over a 200 ms RTT sends 1.7e4 packets per MI); the bound keeps one
/// simulated MI to about a second of work whatever the rate, queue and delay.
pub const MAX_MI_PACKETS: f64 = 1e6;

/// An MI of `sent` and `acked` packets sent and received over `start..end`, nothing lost, with
/// the given RTT samples (unit tests' shorthand).
/// Baseline latency the `delivered` metrics report before any RTT sample was seen (s).
pub const NO_BASELINE_LATENCY_S: f64 = 1e4;

/// Which revision of PCC-RL's metric definitions to follow (they differ in two guards).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricsVersion {
    /// PCC-RL as published with Aurora: `recv rate = 8 * (bytes_acked - packet) / dur` (one
    /// packet fewer than acknowledged, negative when nothing was), and a baseline of 0 before
    /// any RTT sample, so `latency ratio` is 1 then.
    #[default]
    Aurora,
    /// The later PCC-RL revision (the code MOCC builds on): `recv rate = 8 * bytes_acked / dur`,
    /// and a baseline of 1e4 s before any RTT sample, so `latency ratio` is 0 then.
    Delivered,
}

impl MetricsVersion {
    /// The `recv rate` metric in bits per second (0 for an empty interval).
    pub fn recv_rate_bps(self, mi: &MonitorInterval) -> f64 {
        let dur = mi.recv_dur_s();
        if dur <= 0.0 {
            return 0.0;
        }
        match self {
            MetricsVersion::Aurora => 8.0 * (mi.bytes_acked - BYTES_PER_PACKET) / dur,
            MetricsVersion::Delivered => 8.0 * mi.bytes_acked / dur,
        }
    }

    /// The `recv rate` metric in packets per second.
    pub fn throughput_pps(self, mi: &MonitorInterval) -> f64 {
        self.recv_rate_bps(mi) / (8.0 * BYTES_PER_PACKET)
    }

    /// The baseline reported before any RTT sample (s).
    pub fn empty_baseline_s(self) -> f64 {
        match self {
            MetricsVersion::Aurora => 0.0,
            MetricsVersion::Delivered => NO_BASELINE_LATENCY_S,
        }
    }
}

#[cfg(test)]
pub(crate) fn test_interval(
    start: f64,
    end: f64,
    sent: f64,
    acked: f64,
    rtts: &[f64],
) -> MonitorInterval {
    MonitorInterval {
        bytes_sent: sent * BYTES_PER_PACKET,
        bytes_acked: acked * BYTES_PER_PACKET,
        bytes_lost: 0.0,
        send_start_s: start,
        send_end_s: end,
        recv_start_s: start,
        recv_end_s: end,
        rtt: RttSummary::from_samples(rtts),
        ack_span: None,
        train_pps: None,
    }
}

#[cfg(test)]
mod tests;
