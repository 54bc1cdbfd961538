//! Which packets of a flow are acknowledged and which are lost. The path keeps order (one FIFO
//! queue, a FIFO delay line), so an acknowledgement of packet `s` means every unacknowledged
//! packet sent before `s` was lost; packets at the tail, which no later acknowledgement can
//! reveal, are declared lost after a timeout of a few RTTs. Each packet is resolved once.

use std::collections::VecDeque;

/// Floor of the tail-loss timeout (s): RTT samples jitter by a few hundred microseconds.
pub const MIN_TIMEOUT_S: f64 = 0.05;
/// The tail-loss timeout in smoothed RTTs.
pub const TIMEOUT_RTTS: f64 = 3.0;

/// What an acknowledgement resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AckOutcome {
    /// RTT sample of the acknowledged packet (s); `None` for a duplicate or a packet already
    /// declared lost (its late acknowledgement changes nothing).
    pub rtt_s: Option<f64>,
    /// Packets sent before it that are now known lost.
    pub lost: u64,
}

/// Packets in flight, by sequence number.
#[derive(Debug, Clone, Default)]
pub struct LossDetector {
    /// Sequence number of `in_flight[0]`.
    base: u64,
    /// Send time (s) of each packet from `base` on; `None` once acknowledged.
    in_flight: VecDeque<Option<f64>>,
    /// Smoothed RTT (s), 0 before the first sample.
    srtt_s: f64,
}

impl LossDetector {
    /// An empty detector whose first packet will be `first_seq`.
    pub fn new(first_seq: u64) -> Self {
        Self {
            base: first_seq,
            ..Self::default()
        }
    }

    /// Packet `seq` (the next in order) was sent at `now_s`.
    pub fn on_sent(&mut self, seq: u64, now_s: f64) {
        debug_assert_eq!(
            seq,
            self.base + self.in_flight.len() as u64,
            "sent out of order"
        );
        self.in_flight.push_back(Some(now_s));
    }

    /// The acknowledgement of packet `seq` arrived at `now_s`.
    pub fn on_ack(&mut self, seq: u64, now_s: f64) -> AckOutcome {
        let none = AckOutcome {
            rtt_s: None,
            lost: 0,
        };
        let Some(index) = seq.checked_sub(self.base).map(|i| i as usize) else {
            return none;
        };
        let Some(sent_s) = self.in_flight.get_mut(index).and_then(Option::take) else {
            return none;
        };
        let rtt = (now_s - sent_s).max(0.0);
        self.srtt_s = if self.srtt_s > 0.0 {
            0.875 * self.srtt_s + 0.125 * rtt
        } else {
            rtt
        };
        let lost = self
            .in_flight
            .iter()
            .take(index)
            .filter(|p| p.is_some())
            .count() as u64;
        self.in_flight.drain(..=index);
        self.base = seq + 1;
        AckOutcome {
            rtt_s: Some(rtt),
            lost,
        }
    }

    /// Declares lost the packets unacknowledged for longer than the timeout at `now_s`; returns
    /// how many.
    pub fn expire(&mut self, now_s: f64) -> u64 {
        let timeout = self.timeout_s();
        let mut lost = 0;
        while let Some(&front) = self.in_flight.front() {
            match front {
                Some(sent) if now_s - sent <= timeout => break,
                Some(_) => lost += 1,
                None => {}
            }
            self.in_flight.pop_front();
            self.base += 1;
        }
        lost
    }

    /// The tail-loss timeout (s): [`TIMEOUT_RTTS`] smoothed RTTs, at least [`MIN_TIMEOUT_S`]
    /// (one second before the first sample).
    pub fn timeout_s(&self) -> f64 {
        if self.srtt_s > 0.0 {
            (TIMEOUT_RTTS * self.srtt_s).max(MIN_TIMEOUT_S)
        } else {
            1.0
        }
    }

    /// Smoothed RTT (s), `None` before the first sample.
    pub fn srtt_s(&self) -> Option<f64> {
        (self.srtt_s > 0.0).then_some(self.srtt_s)
    }

    /// Packets sent and not yet resolved.
    pub fn outstanding(&self) -> usize {
        self.in_flight.iter().filter(|p| p.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_before_an_ack_is_lost_once_and_late_acks_change_nothing() {
        let mut d = LossDetector::new(0);
        for seq in 0..5 {
            d.on_sent(seq, 0.01 * seq as f64);
        }
        let a = d.on_ack(0, 0.10);
        assert_eq!(a.lost, 0);
        assert!((a.rtt_s.unwrap() - 0.10).abs() < 1e-12);
        // 1 and 2 were dropped: the ack of 3 reveals both.
        let a = d.on_ack(3, 0.13);
        assert_eq!(a.lost, 2);
        assert!((a.rtt_s.unwrap() - 0.10).abs() < 1e-12);
        // A late ack of 2 and a duplicate of 3 are ignored.
        assert_eq!(
            d.on_ack(2, 0.14),
            AckOutcome {
                rtt_s: None,
                lost: 0
            }
        );
        assert_eq!(
            d.on_ack(3, 0.14),
            AckOutcome {
                rtt_s: None,
                lost: 0
            }
        );
        assert_eq!(d.outstanding(), 1);
    }

    #[test]
    fn the_tail_expires_after_a_few_rtts() {
        let mut d = LossDetector::new(10);
        d.on_sent(10, 0.0);
        d.on_sent(11, 0.001);
        d.on_sent(12, 0.002);
        d.on_ack(10, 0.1); // srtt 0.1: timeout 0.3
        assert_eq!(d.expire(0.2), 0);
        assert_eq!(d.expire(0.3015), 1, "11 was sent at 0.001");
        assert_eq!(d.expire(1.0), 1);
        assert_eq!(d.outstanding(), 0);
        assert_eq!(d.expire(2.0), 0);
    }

    #[test]
    fn every_packet_is_resolved_exactly_once() {
        // Drop every third packet; ack the rest in order; then expire the tail.
        let mut d = LossDetector::new(0);
        let (mut acked, mut lost) = (0, 0);
        for seq in 0..300u64 {
            d.on_sent(seq, seq as f64 * 1e-3);
            if seq >= 50 && (seq - 50) % 3 != 0 {
                let a = d.on_ack(seq - 50, seq as f64 * 1e-3);
                acked += u64::from(a.rtt_s.is_some());
                lost += a.lost;
            }
        }
        lost += d.expire(100.0);
        assert_eq!(acked + lost, 300);
        assert_eq!(d.outstanding(), 0);
    }
}
