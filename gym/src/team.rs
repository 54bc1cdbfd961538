//! What every flow on the link did during one learned sender's monitor interval, for rewards
//! that look at the team: Jain's index of the flows' delivery rates, the link's utilization,
//! the flows' losses and pacing, and how much each flow's window moved over the last MIs
//! (Astraea's stability). A learned sender records the flows' counters when its MI starts
//! ([`TeamWindow::open`]); when the MI closes the differences are the window's
//! ([`TeamWindow::close`]).

use crate::sim::Network;
use serde::{Deserialize, Serialize};

/// How many of a slot's MIs the window history keeps (Astraea's state history).
pub const WINDOW_HISTORY: usize = 10;

/// The flows' counters at the start of a learned sender's MI, and each flow's window over its
/// last MIs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TeamWindow {
    /// When the MI started (s).
    pub start_s: f64,
    /// Per sender: packets sent, acknowledged and lost so far.
    pub counts: Vec<[u64; 3]>,
    /// Per sender: its window estimate (delivery rate x RTT, packets) at the close of each of
    /// the slot's last MIs, oldest first, at most [`WINDOW_HISTORY`].
    pub windows: Vec<Vec<f64>>,
}

/// The team's outcome of one learned sender's MI.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TeamOutcome {
    /// Flows that sent during the window.
    pub flows: usize,
    /// Jain's index of their delivery rates (1 for one flow).
    pub jain_index: f64,
    /// Astraea's fairness: 1 - std / sum of the delivery rates (1 for one flow).
    pub spread_fairness: f64,
    /// Delivered packets of every flow over the capacity of the window.
    pub utilization: f64,
    /// Mean loss ratio over the flows.
    pub mean_loss: f64,
    /// Sum of the flows' pacing rates over the capacity.
    pub pacing_over_capacity: f64,
    /// Mean over the flows of the standard deviation of their window over the slot's last
    /// MIs (packets).
    pub window_std_pkts: f64,
}

impl TeamWindow {
    /// Whether nothing was recorded (a scenario whose rewards do not look at the team).
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty() && self.windows.is_empty()
    }

    /// Records every sender's counters at `now`, the start of an MI.
    pub fn open(&mut self, net: &Network, now: f64) {
        self.start_s = now;
        self.counts.clear();
        self.counts.extend(net.senders().iter().map(|s| {
            let t = s.totals();
            [t.sent, t.acked, t.lost]
        }));
    }

    /// The team's outcome of the window from the last [`TeamWindow::open`] to `now`, on a link
    /// that could carry `capacity_pkts` packets in it, with the flows' RTT `rtt_s` (the
    /// shared queue's, as the slot's MI saw it). Records each flow's window in the history.
    pub fn close(
        &mut self,
        net: &Network,
        now: f64,
        capacity_pkts: f64,
        rtt_s: f64,
    ) -> TeamOutcome {
        let span = (now - self.start_s).max(1e-9);
        let senders = net.senders();
        if self.windows.len() != senders.len() {
            self.windows = vec![Vec::new(); senders.len()];
        }
        let mut rates = Vec::with_capacity(senders.len());
        let mut losses = Vec::new();
        let mut pacing = 0.0;
        let mut delivered = 0.0;
        for (i, s) in senders.iter().enumerate() {
            let Some(before) = self.counts.get(i) else {
                continue;
            };
            let t = s.totals();
            let sent = t.sent.saturating_sub(before[0]) as f64;
            let acked = t.acked.saturating_sub(before[1]) as f64;
            let lost = t.lost.saturating_sub(before[2]) as f64;
            if sent <= 0.0 {
                continue;
            }
            let rate = acked / span;
            rates.push(rate);
            losses.push((lost / sent).min(1.0));
            pacing += s.rate_pps();
            delivered += acked;
            let history = &mut self.windows[i];
            if history.len() == WINDOW_HISTORY {
                history.remove(0);
            }
            history.push(rate * rtt_s.max(0.0));
        }
        let capacity = capacity_pkts.max(1e-9);
        let stds: Vec<f64> = self
            .windows
            .iter()
            .filter(|h| h.len() > 1)
            .map(|h| std_dev(h))
            .collect();
        TeamOutcome {
            flows: rates.len(),
            jain_index: jain_index(&rates),
            spread_fairness: spread_fairness(&rates),
            utilization: delivered / capacity,
            mean_loss: mean(&losses),
            pacing_over_capacity: pacing * span / capacity,
            window_std_pkts: mean(&stds),
        }
    }
}

fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// The population standard deviation.
fn std_dev(xs: &[f64]) -> f64 {
    let m = mean(xs);
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len().max(1) as f64).sqrt()
}

/// Jain's index `(sum x)^2 / (n sum x^2)`: 1 when every flow gets the same, 1/n when one gets
/// all; 1 for fewer than two flows or nothing delivered.
pub fn jain_index(rates: &[f64]) -> f64 {
    let sum: f64 = rates.iter().sum();
    let squares: f64 = rates.iter().map(|r| r * r).sum();
    if rates.len() < 2 || squares <= 0.0 {
        1.0
    } else {
        sum * sum / (rates.len() as f64 * squares)
    }
}

/// Astraea's fairness `1 - std / sum` of the rates (1 for fewer than two flows or nothing
/// delivered).
pub fn spread_fairness(rates: &[f64]) -> f64 {
    let sum: f64 = rates.iter().sum();
    if rates.len() < 2 || sum <= 0.0 {
        1.0
    } else {
        1.0 - std_dev(rates) / sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_and_spread_by_hand() {
        assert_eq!(jain_index(&[100.0, 100.0, 100.0]), 1.0);
        // (100 + 300)^2 / (2 (100^2 + 300^2)) = 160000 / 200000.
        assert!((jain_index(&[100.0, 300.0]) - 0.8).abs() < 1e-12);
        assert_eq!(jain_index(&[500.0, 0.0, 0.0, 0.0]), 0.25);
        assert_eq!(jain_index(&[42.0]), 1.0);
        // std of {100, 300} is 100: 1 - 100 / 400.
        assert!((spread_fairness(&[100.0, 300.0]) - 0.75).abs() < 1e-12);
        assert_eq!(spread_fairness(&[7.0]), 1.0);
        assert!((std_dev(&[1.0, 3.0]) - 1.0).abs() < 1e-12);
    }
}
