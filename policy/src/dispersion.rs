//! Packet-train dispersion: the bottleneck's rate as the spacing of the acknowledgements of
//! packets sent back to back (packet pairs, Keshav 1991).
//!
//! Packets that enter a FIFO bottleneck together leave it one transmission time apart,
//! whatever else is queued there: nothing can arrive between them. Their acknowledgements keep
//! that spacing, so `packets / gap` is the bottleneck's rate, the same for every flow on the
//! path, where a flow's own delivery rate is only its share. [`TrainDispersion`] finds such
//! trains among a sender's acknowledgements without being told which packets form one: two
//! consecutive acknowledgements whose packets left much closer together than they came back
//! (at most [`BACK_TO_BACK_FRACTION`] of the acknowledgements' gap).
//!
//! A train's rate is its slowest gap: a token bucket lets its first packets through at the
//! speed of the link in front of it (the real path's tbf lets two frames pass), so only the
//! gaps after them show the bottleneck's rate; with three packets one such gap is left.

use serde::{Deserialize, Serialize};

/// A send gap at most this fraction of the acknowledgements' gap counts as back to back: the
/// bottleneck spread the packets at least tenfold, so the gap is its doing, not the sender's.
pub const BACK_TO_BACK_FRACTION: f64 = 0.1;

/// The last acknowledgement seen: when it arrived and when its packet left (s).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct LastAck {
    at_s: f64,
    sent_s: f64,
}

/// The trains among one sender's acknowledgements, and the highest train rate of the MI in
/// progress.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TrainDispersion {
    last: Option<LastAck>,
    /// The slowest gap of the train in progress (packets/s).
    train_pps: Option<f64>,
    /// The highest rate of the trains completed in the MI in progress (packets/s).
    best_pps: Option<f64>,
}

impl TrainDispersion {
    /// `packets` were acknowledged at `at_s`, the latest of them sent at `sent_s`; returns
    /// whether they followed the previous acknowledgement's packets back to back (their delay
    /// includes the queueing those packets caused).
    pub fn note(&mut self, at_s: f64, sent_s: f64, packets: u64) -> bool {
        let mut follows = false;
        if let Some(last) = self.last {
            let ack_gap = at_s - last.at_s;
            let send_gap = (sent_s - last.sent_s).abs();
            if ack_gap > 0.0 && send_gap <= BACK_TO_BACK_FRACTION * ack_gap {
                let pps = packets as f64 / ack_gap;
                self.train_pps = Some(self.train_pps.map_or(pps, |p| p.min(pps)));
                follows = true;
            } else {
                self.end_train();
            }
        }
        self.last = Some(LastAck { at_s, sent_s });
        follows
    }

    /// Ends the MI: the highest rate of its trains (packets/s; None without one). A train still
    /// going counts for this MI, and the next gap starts a new one.
    pub fn close(&mut self) -> Option<f64> {
        self.end_train();
        self.best_pps.take()
    }

    fn end_train(&mut self) {
        if let Some(pps) = self.train_pps.take() {
            self.best_pps = Some(self.best_pps.map_or(pps, |b| b.max(pps)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Acknowledgements of `(sent, acked)` pairs, one packet each.
    fn feed(d: &mut TrainDispersion, packets: &[(f64, f64)]) {
        for &(sent, acked) in packets {
            d.note(acked, sent, 1);
        }
    }

    #[test]
    fn a_pair_sent_together_measures_the_gap_the_bottleneck_put_between_them() {
        let mut d = TrainDispersion::default();
        // Paced every 10 ms, then two at 1.03 s leaving a 1,000 packets/s link 1 ms apart.
        feed(
            &mut d,
            &[(1.01, 1.06), (1.02, 1.07), (1.03, 1.08), (1.03, 1.081)],
        );
        let pps = d.close().unwrap();
        assert!((pps - 1000.0).abs() < 1e-6, "{pps}");
        assert_eq!(d.close(), None, "each MI starts without a train");
    }

    #[test]
    fn paced_packets_are_no_train_whatever_their_spacing() {
        let mut d = TrainDispersion::default();
        // Sent 10 ms apart, acknowledged 10 ms and then 50 ms apart (queued behind others).
        feed(&mut d, &[(1.0, 1.05), (1.01, 1.06), (1.02, 1.11)]);
        assert_eq!(d.close(), None);
    }

    #[test]
    fn a_train_is_as_fast_as_its_slowest_gap_and_the_mi_keeps_its_fastest_train() {
        let mut d = TrainDispersion::default();
        // Three packets at 2.0 s: a token bucket passes the first two 10 us apart, the third
        // waits 2 ms (500 packets/s).
        feed(&mut d, &[(2.0, 2.05), (2.0, 2.05001), (2.0, 2.05201)]);
        // A later pair spread 4 ms (250 packets/s, a gap another flow's packet widened).
        feed(&mut d, &[(2.1, 2.15), (2.2, 2.25), (2.2, 2.254)]);
        let pps = d.close().unwrap();
        assert!((pps - 500.0).abs() < 1e-6, "{pps}");
    }

    #[test]
    fn acknowledgements_at_one_instant_end_a_train_and_count_packets() {
        let mut d = TrainDispersion::default();
        // A simulated train of 4 packets acknowledged as one, then the next 4 sent with it
        // 8 ms later: 4 packets over 8 ms.
        d.note(3.05, 3.0, 4);
        d.note(3.058, 3.0, 4);
        // Two acknowledgements at one instant (bunched): no gap, no sample.
        d.note(3.058, 3.0, 1);
        assert!((d.close().unwrap() - 500.0).abs() < 1e-6);
    }
}
