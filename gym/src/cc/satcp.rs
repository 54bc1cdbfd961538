//! SaTCP (Cao et al., INFOCOM 2023): Cubic told by the satellite link layer when a handover or
//! an interruption is coming. Packets lost to a predicted handover are not congestion: SaTCP
//! keeps its window across them (no multiplicative decrease, no loss event), where Cubic backs
//! off at every handover and spends the next seconds growing back. The LEO study measures it
//! keeping the bandwidth Cubic loses, at up to 2.3x delay inflation (it fills the buffer as
//! Cubic does).
//!
//! In the gym the link layer's prediction comes from the path description: a loss of a packet
//! sent while the link was declared down, or within [`super::HANDOVER_HINT_GUARD_S`] of it,
//! belongs to the handover (`PathHints::sent_in_handover`).

use super::cubic::Cubic;
use super::{Ack, Loss, PathHints};
use serde::{Deserialize, Serialize};

/// SaTCP's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SaTcp {
    cubic: Cubic,
    /// Whether the packet of the feedback being handled was sent in a declared handover.
    in_handover: bool,
    /// Losses it did not treat as congestion.
    handover_losses: u64,
}

impl SaTcp {
    /// Congestion window (packets).
    pub fn cwnd(&self) -> f64 {
        self.cubic.cwnd()
    }

    /// Pacing rate (packets/s).
    pub fn pacing_pps(&self) -> f64 {
        self.cubic.pacing_pps()
    }

    /// Losses it kept its window through.
    pub fn handover_losses(&self) -> u64 {
        self.handover_losses
    }

    /// The link layer's news about the packet whose feedback comes next.
    pub fn on_path_hints(&mut self, hints: &PathHints) {
        self.in_handover = hints.sent_in_handover;
    }

    /// One acknowledged packet.
    pub fn on_ack(&mut self, ack: &Ack) {
        self.cubic.on_ack(ack);
    }

    /// One lost packet: a congestion signal unless the handover took it.
    pub fn on_loss(&mut self, loss: &Loss) {
        if self.in_handover {
            self.handover_losses += 1;
        } else {
            self.cubic.on_loss(loss);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handover_loss_keeps_the_window_and_a_congestion_loss_cuts_it() {
        let mut s = SaTcp::default();
        for i in 0..40 {
            s.on_ack(&Ack {
                now_s: 0.1 + i as f64 * 0.001,
                rtt_s: 0.1,
                sent_s: i as f64 * 0.001,
                delivered: i + 1,
                delivered_at_send: 0,
                delivered_time_at_send_s: 0.0,
                inflight: 10,
            });
        }
        let before = s.cwnd();
        let loss = Loss {
            now_s: 1.0,
            sent_s: 0.9,
            inflight: 40,
        };
        s.on_path_hints(&PathHints {
            last_reconfiguration_s: Some(0.9),
            sent_in_handover: true,
        });
        s.on_loss(&loss);
        assert_eq!(s.cwnd(), before);
        assert_eq!(s.handover_losses(), 1);
        s.on_path_hints(&PathHints::default());
        s.on_loss(&loss);
        assert!((s.cwnd() - 0.7 * before).abs() < 1e-9, "{}", s.cwnd());
    }
}
