//! [`CapacityTrains`]: a sender's packet trains and the reference they give the peak delivery
//! rate; [`CapacityWindow`]: the recent train rates a connection keeps.
//!
//! A flow's own peak delivery rate is what the path gave it: the whole link for a flow that
//! came first, only what its startup reached into a busy queue for a later one, so flows that
//! settle at one fraction of their own peaks settle unevenly
//! (docs/research/peak-anchor.md). The bottleneck's rate, as trains of packets sent back to
//! back measure it ([`crate::dispersion`]), is the same for every flow on the path; a peak of
//! at least `fraction` of it gives them one reference.

use crate::mi::MonitorInterval;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Most packets a train may hold.
pub const MAX_TRAIN_PACKETS: u32 = 8;

/// Most train rates a window keeps (the newest): a median over more MIs than a few seconds
/// hold at any rate's MI floor would only cost time.
pub const MAX_TRAIN_SAMPLES: usize = 256;

/// A sender's packet trains: at the start of every MI it sends `packets` back to back (then
/// paces on, the train counting toward its rate), and the peak delivery rate its features
/// read is at least `fraction` of the highest train rate of the last `window_s`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityTrains {
    /// Packets per train, 2 to [`MAX_TRAIN_PACKETS`]. Three pass a token bucket that lets two
    /// frames through at once (a train's rate is its slowest gap); each takes queue space, so
    /// a buffer of fewer packets drops the train's tail.
    pub packets: u32,
    /// Share of the bottleneck's rate (the median train rate of the window) that the peak
    /// delivery rate is at least, in (0, 1].
    pub fraction: f64,
    /// Window (s) over the train rates, in (0, 3600]: short enough to follow a link that
    /// changes its rate.
    pub window_s: f64,
    /// `peak delivery ratio` below 1 is read as `ratio^ratio_exponent` once the trains
    /// measured a rate, in (0, 1] (1: as measured). Against the bottleneck's rate each of N
    /// flows reads about 1/N; an exponent under 1 keeps the flows' order and brings the
    /// readings of many flows near those of a few (docs/research/many-flows.md).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub ratio_exponent: f64,
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

impl CapacityTrains {
    /// Checks every value; the error is (field under `capacity_trains`, message).
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(2..=MAX_TRAIN_PACKETS).contains(&self.packets) {
            return Err((
                "capacity_trains.packets",
                format!(
                    "must lie in [2, {MAX_TRAIN_PACKETS}] (got {})",
                    self.packets
                ),
            ));
        }
        if !(self.fraction > 0.0 && self.fraction <= 1.0) {
            return Err((
                "capacity_trains.fraction",
                format!("must lie in (0, 1] (got {})", self.fraction),
            ));
        }
        if !(self.ratio_exponent > 0.0 && self.ratio_exponent <= 1.0) {
            return Err((
                "capacity_trains.ratio_exponent",
                format!("must lie in (0, 1] (got {})", self.ratio_exponent),
            ));
        }
        super::kind::positive_window(self.window_s, "capacity_trains.window_s")
    }
}

/// `peak delivery ratio` as the policy reads it: `ratio^exponent` below 1, else `ratio`
/// ([`CapacityTrains::ratio_exponent`]).
pub fn read_peak_ratio(ratio: f64, exponent: f64) -> f64 {
    if ratio < 1.0 && exponent != 1.0 {
        ratio.powf(exponent)
    } else {
        ratio
    }
}

/// The train rates ([`MonitorInterval::train_pps`]) of a connection's last `window_s`, and the
/// least peak delivery rate they set: `fraction` of their median. A median, since a real
/// path's trains err both ways (acknowledgements bunched by a busy receiver read fast, a
/// packet of another flow slipped into a train reads slow) where a simulated one's are exact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityWindow {
    trains: CapacityTrains,
    /// (MI end, train rate), oldest first.
    samples: VecDeque<(f64, f64)>,
    /// The median of `samples` (0 without any), formed when they change.
    #[serde(default)]
    median_pps: f64,
}

impl CapacityWindow {
    /// An empty window for `trains`.
    pub fn new(trains: CapacityTrains) -> Self {
        Self {
            trains,
            samples: VecDeque::new(),
            median_pps: 0.0,
        }
    }

    /// Adds the MI's train rate, if it has one, at its end, and drops the rates older than the
    /// window (the newest always stays).
    pub fn push(&mut self, mi: &MonitorInterval) {
        let before = self.samples.len();
        let mut added = false;
        if let Some(pps) = mi.train_pps.filter(|p| p.is_finite() && *p > 0.0) {
            if self.samples.len() == MAX_TRAIN_SAMPLES {
                self.samples.pop_front();
            }
            self.samples.push_back((mi.send_end_s, pps));
            added = true;
        }
        let oldest = mi.send_end_s - self.trains.window_s;
        while self.samples.len() > 1 && self.samples.front().is_some_and(|&(t, _)| t < oldest) {
            self.samples.pop_front();
        }
        if added || self.samples.len() != before {
            self.median_pps = median(self.samples.iter().map(|&(_, pps)| pps));
        }
    }

    /// The least peak delivery rate (packets/s): `fraction` of the median train rate kept (the
    /// mean of the middle two of an even count), 0 before any.
    pub fn floor_pps(&self) -> f64 {
        self.trains.fraction * self.median_pps
    }

    /// The trains this window keeps the rates of.
    pub fn trains(&self) -> &CapacityTrains {
        &self.trains
    }

    /// Forgets the rates (a new connection).
    pub fn clear(&mut self) {
        self.samples.clear();
        self.median_pps = 0.0;
    }
}

/// The median of `values` (the mean of the middle two of an even count; 0 for none).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut sorted: Vec<f64> = values.collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trains() -> CapacityTrains {
        CapacityTrains {
            packets: 3,
            fraction: 0.9,
            window_s: 2.0,
            ratio_exponent: 1.0,
        }
    }

    fn mi(end_s: f64, train_pps: Option<f64>) -> MonitorInterval {
        MonitorInterval {
            send_end_s: end_s,
            train_pps,
            ..MonitorInterval::default()
        }
    }

    #[test]
    fn the_floor_is_the_fraction_of_the_median_train_rate_of_the_window() {
        let mut w = CapacityWindow::new(trains());
        assert_eq!(w.floor_pps(), 0.0);
        w.push(&mi(1.0, Some(1000.0)));
        w.push(&mi(1.5, None));
        w.push(&mi(2.0, Some(800.0)));
        // Two rates: their mean, 900; 0.9 of it.
        assert!((w.floor_pps() - 810.0).abs() < 1e-9);
        // A bunched train (5,000) and a widened one (400) do not move the median of five.
        for (t, pps) in [(2.1, 5000.0), (2.2, 400.0), (2.3, 820.0)] {
            w.push(&mi(t, Some(pps)));
        }
        assert!((w.floor_pps() - 0.9 * 820.0).abs() < 1e-9);
        // After 4.05 s only the 2.1 s rates on are younger than 2 s: 5,000, 400 and 820.
        w.push(&mi(4.05, None));
        assert!((w.floor_pps() - 0.9 * 820.0).abs() < 1e-9);
        // Long after, the newest stays.
        w.push(&mi(9.0, Some(f64::INFINITY)));
        assert!(
            (w.floor_pps() - 0.9 * 820.0).abs() < 1e-9,
            "no rate from a zero gap"
        );
        w.clear();
        assert_eq!(w.floor_pps(), 0.0);
    }

    #[test]
    fn the_window_keeps_at_most_its_newest_rates() {
        let mut w = CapacityWindow::new(CapacityTrains {
            window_s: 3600.0,
            ..trains()
        });
        for i in 0..MAX_TRAIN_SAMPLES + 10 {
            w.push(&mi(
                i as f64 * 0.01,
                Some(if i < 133 { 100.0 } else { 1000.0 }),
            ));
        }
        assert_eq!(w.samples.len(), MAX_TRAIN_SAMPLES);
        // 123 of the 133 at 100 kept and the 133 at 1,000: the median is 1,000 (of all 266
        // it would be 550).
        assert!((w.floor_pps() - 900.0).abs() < 1e-9);
    }

    #[test]
    fn each_field_is_checked() {
        assert!(trains().validate().is_ok());
        for (bad, field) in [
            (
                CapacityTrains {
                    packets: 1,
                    ..trains()
                },
                "capacity_trains.packets",
            ),
            (
                CapacityTrains {
                    packets: 9,
                    ..trains()
                },
                "capacity_trains.packets",
            ),
            (
                CapacityTrains {
                    fraction: 0.0,
                    ..trains()
                },
                "capacity_trains.fraction",
            ),
            (
                CapacityTrains {
                    fraction: 1.1,
                    ..trains()
                },
                "capacity_trains.fraction",
            ),
            (
                CapacityTrains {
                    window_s: 0.0,
                    ..trains()
                },
                "capacity_trains.window_s",
            ),
            (
                CapacityTrains {
                    window_s: f64::NAN,
                    ..trains()
                },
                "capacity_trains.window_s",
            ),
            (
                CapacityTrains {
                    ratio_exponent: 0.0,
                    ..trains()
                },
                "capacity_trains.ratio_exponent",
            ),
            (
                CapacityTrains {
                    ratio_exponent: 1.5,
                    ..trains()
                },
                "capacity_trains.ratio_exponent",
            ),
        ] {
            assert_eq!(bad.validate().unwrap_err().0, field, "{bad:?}");
        }
    }

    #[test]
    fn the_ratio_is_read_on_the_exponent_below_one() {
        assert_eq!(read_peak_ratio(0.25, 1.0), 0.25);
        // One of four flows reads 1/4 of the bottleneck's rate: 0.5 on the square root.
        assert!((read_peak_ratio(0.25, 0.5) - 0.5).abs() < 1e-12);
        // At or above 1 (sending more than the reference) the ratio is read as it is.
        assert_eq!(read_peak_ratio(1.0, 0.5), 1.0);
        assert_eq!(read_peak_ratio(1.3, 0.5), 1.3);
        // The order of flows stays: less sent, less read.
        assert!(read_peak_ratio(0.05, 0.5) < read_peak_ratio(0.1, 0.5));
    }

    #[test]
    fn the_exponent_defaults_to_one_and_is_written_only_when_set() {
        let parsed: CapacityTrains =
            serde_json::from_str(r#"{"packets": 3, "fraction": 0.9, "window_s": 2.0}"#).unwrap();
        assert_eq!(parsed, trains());
        assert!(!serde_json::to_string(&trains())
            .unwrap()
            .contains("ratio_exponent"));
        let set = CapacityTrains {
            ratio_exponent: 0.4,
            ..trains()
        };
        let text = serde_json::to_string(&set).unwrap();
        assert_eq!(serde_json::from_str::<CapacityTrains>(&text).unwrap(), set);
    }
}
