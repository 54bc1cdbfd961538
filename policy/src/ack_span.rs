//! An MI's acknowledgements as a delivery-rate sample: when they arrived, and when their
//! packets left.

use serde::{Deserialize, Serialize};

/// An MI's acknowledgements as a delivery-rate sample (BBR's): what was acknowledged after the
/// first acknowledgement, over the time from the first to the last, or over the time between
/// sending those two packets where that is longer (acknowledgements that arrive bunched tell
/// how fast they were bunched, not how fast the path delivers; a path delivers no faster than
/// it was sent to). An MI's window (`recv_start_s` to `recv_end_s`) is its boundaries, not its
/// acknowledgements' times, so a count over it is off by up to an acknowledgement either way;
/// the span between the first and the last is not, whatever the packets per acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct AckSpan {
    /// Packets acknowledged after the first acknowledgement (those acknowledged at its instant
    /// are its own).
    pub packets_after_first: f64,
    /// The longer of the time from the first acknowledgement to the last and the time between
    /// sending their packets (s; 0 with one instant).
    pub span_s: f64,
}

impl AckSpan {
    /// The rate the acknowledgements arrived at (packets/s); None unless they spanned time
    /// and carried at least one packet after the first.
    pub fn delivery_rate_pps(&self) -> Option<f64> {
        (self.span_s > 0.0 && self.packets_after_first >= 1.0)
            .then(|| self.packets_after_first / self.span_s)
    }
}

/// The first acknowledgement of an MI in progress.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct FirstAck {
    /// When it arrived (s).
    at_s: f64,
    /// When its packet left: its arrival less its RTT sample (s).
    sent_s: f64,
    /// Packets acknowledged at its instant.
    packets: u64,
}

/// When the acknowledgements of the MI in progress arrived: the first and the latest, each with
/// the time its packet left.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct AckTimes {
    /// The first acknowledgement; None before.
    first: Option<FirstAck>,
    /// The latest acknowledgement's arrival (s).
    last_s: f64,
    /// When the latest acknowledgement's packet left (s).
    last_sent_s: f64,
}

impl AckTimes {
    /// `packets` were acknowledged at `t_s`, the latest of them sent `rtt_s` before.
    pub(crate) fn note(&mut self, t_s: f64, rtt_s: f64, packets: u64) {
        let sent_s = t_s - rtt_s;
        match &mut self.first {
            None => {
                self.first = Some(FirstAck {
                    at_s: t_s,
                    sent_s,
                    packets,
                })
            }
            Some(first) if t_s <= first.at_s => first.packets += packets,
            Some(_) => {}
        }
        if t_s >= self.last_s {
            self.last_s = t_s;
            self.last_sent_s = sent_s;
        }
    }

    /// The span of `acked` packets acknowledged since the first (None before any).
    pub(crate) fn span(&self, acked: u64) -> Option<AckSpan> {
        let first = self.first?;
        let acked_over = self.last_s - first.at_s;
        let sent_over = self.last_sent_s - first.sent_s;
        Some(AckSpan {
            packets_after_first: acked.saturating_sub(first.packets) as f64,
            span_s: acked_over.max(sent_over).max(0.0),
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ack_span_counts_from_the_first_acknowledgement_to_the_last() {
        let mut c = crate::MiCounters::starting_at(1.0);
        c.on_sent_train(12);
        assert_eq!(c.close(1.1).ack_span, None, "no acknowledgement, no span");
        // Acknowledgements of 2 packets every 4 ms from 2.002 s (an ACK frame per 2 packets
        // at 500 packets/s), 5 frames; the first frame's 2 packets are its own.
        let mut c = crate::MiCounters::starting_at(2.0);
        for i in 0..5 {
            let t = 2.002 + 0.004 * f64::from(i);
            c.on_acked(t, 0.05);
            c.on_acked(t, 0.05);
        }
        let mi = c.close(2.025);
        let span = mi.ack_span.unwrap();
        assert_eq!(span.packets_after_first, 8.0);
        assert!((span.span_s - 0.016).abs() < 1e-12);
        assert!((span.delivery_rate_pps().unwrap() - 500.0).abs() < 1e-9);
        // The window's count (10 packets over 25 ms: 400/s) is off by the frames' spacing.
        assert!((mi.throughput_pps() - 400.0).abs() < 1e-9);
        // Bunched: 5 acknowledgements within 2 ms of packets sent 10 ms apart (100/s): the
        // sending's 40 ms, not the acknowledgements' 2 ms, is the sample's span.
        let mut c = crate::MiCounters::starting_at(2.5);
        for i in 0..5 {
            let sent = 2.5 + 0.01 * f64::from(i);
            let acked = 2.6 + 0.0005 * f64::from(i);
            c.on_acked(acked, acked - sent);
        }
        let bunched = c.close(2.7).ack_span.unwrap();
        assert!((bunched.span_s - 0.04).abs() < 1e-9, "{bunched:?}");
        assert!((bunched.delivery_rate_pps().unwrap() - 100.0).abs() < 1e-6);
        // A train at one instant spans no time: no rate.
        let mut c = crate::MiCounters::starting_at(3.0);
        c.on_acked_train(3.01, 0.05, 4);
        let one = c.close(3.02).ack_span.unwrap();
        assert_eq!((one.packets_after_first, one.span_s), (0.0, 0.0));
        assert_eq!(one.delivery_rate_pps(), None);
        // The next MI starts without the last one's times.
        c.on_acked(3.05, 0.05);
        let next = c.close(3.06).ack_span.unwrap();
        assert_eq!((next.packets_after_first, next.span_s), (0.0, 0.0));
    }
}
