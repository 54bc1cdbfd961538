//! Cubic (RFC 9438): window growth `W(t) = C (t - K)^3 + W_max`, multiplicative decrease by
//! beta = 0.7, fast convergence, and the Reno-friendly region `W_est`.
//!
//! Paced (the default) it sends as Linux's Cubic does under the fq qdisc: at 2 (slow start) or
//! 1.2 times the window per smoothed RTT. [`Cubic::ack_clocked`] sends as Linux's Cubic does
//! under its default qdiscs (and on a veth, which has none), which do not pace it: a packet
//! leaves as soon as the window allows, at the host's line rate ([`LINE_RATE_PPS`]).

use super::{window_pacing, Ack, Loss, Srtt, INITIAL_CWND, MIN_CWND};
use serde::{Deserialize, Serialize};

/// Cubic's scaling constant C (packets / s^3).
pub const C: f64 = 0.4;
/// Multiplicative decrease factor.
pub const BETA: f64 = 0.7;
/// The rate an unpaced sender's packets leave its host at (packets/s): 12 Gbit/s, above any
/// simulated bottleneck, so that the window alone spaces them.
pub const LINE_RATE_PPS: f64 = 1e6;

/// Cubic's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cubic {
    cwnd: f64,
    #[serde(with = "crate::serde_float")]
    ssthresh: f64,
    w_max: f64,
    k: f64,
    epoch_start_s: Option<f64>,
    w_est: f64,
    srtt: Srtt,
    /// Losses of packets sent before this time belong to the last reduction's loss event.
    #[serde(with = "crate::serde_float")]
    recovery_start_s: f64,
    /// Whether it paces (false: its packets leave as the window opens).
    #[serde(default = "paced_by_default")]
    paced: bool,
}

fn paced_by_default() -> bool {
    true
}

impl Default for Cubic {
    fn default() -> Self {
        Self {
            cwnd: INITIAL_CWND,
            ssthresh: f64::INFINITY,
            w_max: 0.0,
            k: 0.0,
            epoch_start_s: None,
            w_est: 0.0,
            srtt: Srtt::default(),
            recovery_start_s: f64::NEG_INFINITY,
            paced: true,
        }
    }
}

/// `W_cubic(t)` for a window that was `w_max` at the last reduction.
pub fn w_cubic(t: f64, k: f64, w_max: f64) -> f64 {
    C * (t - k).powi(3) + w_max
}

/// `K = cbrt(W_max (1 - beta) / C)`: the time to grow back to `W_max` from `beta W_max`.
pub fn k_for(w_max: f64, cwnd: f64) -> f64 {
    ((w_max - cwnd).max(0.0) / C).cbrt()
}

impl Cubic {
    /// A Cubic that does not pace: the ACKs clock its packets out (see the module docs).
    pub fn ack_clocked() -> Self {
        Self {
            paced: false,
            ..Self::default()
        }
    }

    /// Congestion window (packets).
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// Pacing rate (packets/s): [`LINE_RATE_PPS`] when it does not pace.
    pub fn pacing_pps(&self) -> f64 {
        if !self.paced {
            return LINE_RATE_PPS;
        }
        let gain = if self.cwnd < self.ssthresh { 2.0 } else { 1.2 };
        window_pacing(self.cwnd, self.srtt, gain)
    }

    /// One acknowledged packet.
    pub fn on_ack(&mut self, ack: &Ack) {
        self.srtt.update(ack.rtt_s);
        if self.cwnd < self.ssthresh {
            self.cwnd += 1.0;
            return;
        }
        let rtt = self.srtt.get().unwrap_or(ack.rtt_s);
        let epoch = *self.epoch_start_s.get_or_insert_with(|| {
            if self.cwnd < self.w_max {
                self.k = k_for(self.w_max, self.cwnd);
            } else {
                self.k = 0.0;
                self.w_max = self.cwnd;
            }
            self.w_est = self.cwnd;
            ack.now_s
        });
        let t = ack.now_s - epoch;
        // Reno-friendly estimate: alpha = 3 (1 - beta) / (1 + beta) packets per RTT.
        let alpha = 3.0 * (1.0 - BETA) / (1.0 + BETA);
        self.w_est += alpha / self.cwnd;
        if w_cubic(t, self.k, self.w_max) < self.w_est {
            self.cwnd = self.w_est;
        } else {
            let target = w_cubic(t + rtt, self.k, self.w_max).clamp(self.cwnd, 1.5 * self.cwnd);
            self.cwnd += (target - self.cwnd) / self.cwnd;
        }
    }

    /// Multiplies the window by `factor` (Orca's agent, [`mocc_policy::WindowScale`]), to no
    /// less than [`MIN_CWND`] and, when it grows, no more than `max_rate_pps` of packets over
    /// a smoothed RTT (the window that paces at that rate; [`INITIAL_CWND`] before the first
    /// sample); Cubic goes on from the new window. The Reno-friendly estimate scales with it,
    /// or the next ack would snap a reduced window back to the estimate (Linux approaches the
    /// estimate over a round trip; this model jumps).
    pub fn scale_window(&mut self, factor: f64, max_rate_pps: f64) {
        let before = self.cwnd;
        let ceiling = self
            .srtt
            .get()
            .map_or(INITIAL_CWND, |rtt| max_rate_pps * rtt)
            .max(MIN_CWND);
        let scaled = self.cwnd * factor;
        self.cwnd = if factor > 1.0 {
            scaled.min(ceiling.max(before))
        } else {
            scaled
        }
        .max(MIN_CWND);
        self.w_est *= self.cwnd / before;
    }

    /// One lost packet: at most one reduction per window of data.
    pub fn on_loss(&mut self, loss: &Loss) {
        if loss.sent_s <= self.recovery_start_s {
            return;
        }
        self.recovery_start_s = loss.now_s;
        self.epoch_start_s = None;
        // Fast convergence: release bandwidth when the window did not regain its last maximum.
        self.w_max = if self.cwnd < self.w_max {
            self.cwnd * (1.0 + BETA) / 2.0
        } else {
            self.cwnd
        };
        self.ssthresh = (self.cwnd * BETA).max(MIN_CWND);
        self.cwnd = self.ssthresh;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(now_s: f64) -> Ack {
        Ack {
            now_s,
            rtt_s: 0.1,
            sent_s: now_s - 0.1,
            delivered: 0,
            delivered_at_send: 0,
            delivered_time_at_send_s: 0.0,
            inflight: 0,
        }
    }

    #[test]
    fn hand_computed_growth_and_reduction() {
        // K for W_max = 100 after a reduction to 70: cbrt(30 / 0.4) = cbrt(75).
        assert!((k_for(100.0, 70.0) - 75f64.cbrt()).abs() < 1e-12);
        assert!((w_cubic(75f64.cbrt(), 75f64.cbrt(), 100.0) - 100.0).abs() < 1e-9);
        let mut c = Cubic::default();
        for i in 0..90 {
            c.on_ack(&ack(0.1 + i as f64 * 0.001));
        }
        assert_eq!(c.cwnd(), 100.0, "slow start adds one packet per ack");
        c.on_loss(&Loss {
            now_s: 1.0,
            sent_s: 0.9,
            inflight: 90,
        });
        assert!((c.cwnd() - 70.0).abs() < 1e-12);
        // A second loss from the same window does not reduce again.
        c.on_loss(&Loss {
            now_s: 1.01,
            sent_s: 0.95,
            inflight: 80,
        });
        assert!((c.cwnd() - 70.0).abs() < 1e-12);
        // A later loss with cwnd below W_max triggers fast convergence.
        c.on_loss(&Loss {
            now_s: 1.2,
            sent_s: 1.1,
            inflight: 60,
        });
        assert!((c.cwnd() - 49.0).abs() < 1e-12);
        assert!((c.w_max - 70.0 * 1.7 / 2.0).abs() < 1e-12);
        // Growth is concave towards W_max, then convex beyond it.
        let mut t = 1.3;
        let mut prev = c.cwnd();
        while t < 30.0 {
            c.on_ack(&ack(t));
            assert!(c.cwnd() >= prev - 1e-12);
            prev = c.cwnd();
            t += 0.002;
        }
        assert!(c.cwnd() > c.w_max, "{} vs {}", c.cwnd(), c.w_max);
    }

    #[test]
    fn a_scaled_window_is_where_cubic_goes_on_from() {
        let mut c = Cubic::default();
        for i in 0..90 {
            c.on_ack(&ack(0.1 + i as f64 * 0.001));
        }
        c.on_loss(&Loss {
            now_s: 1.0,
            sent_s: 0.9,
            inflight: 90,
        });
        c.on_ack(&ack(1.1));
        let (w, est) = (c.cwnd(), c.w_est);
        c.scale_window(0.25, 1e4);
        assert!((c.cwnd() - w / 4.0).abs() < 1e-12);
        assert!((c.w_est - est / 4.0).abs() < 1e-12);
        // The quarter window is below ssthresh (0.7 of the old one): the next ack grows it by
        // one packet, slow start's, not back to W_est.
        c.on_ack(&ack(1.101));
        assert!((c.cwnd() - (w / 4.0 + 1.0)).abs() < 1e-12, "{}", c.cwnd());
        c.scale_window(1e-9, 1e4);
        assert_eq!(c.cwnd(), MIN_CWND);
        // Growth stops at the window that paces at the highest rate: 1000 packets/s x 0.1 s.
        c.scale_window(4.0, 1000.0);
        assert_eq!(c.cwnd(), 8.0);
        c.scale_window(1e12, 1000.0);
        assert!((c.cwnd() - 100.0).abs() < 1e-9, "{}", c.cwnd());
        // A window already above the ceiling is not cut by a growing factor.
        c.scale_window(2.0, 500.0);
        assert!((c.cwnd() - 100.0).abs() < 1e-9, "{}", c.cwnd());
        // Before an RTT sample a window grows no further than the initial one.
        let mut fresh = Cubic::default();
        fresh.scale_window(4.0, 1e6);
        assert_eq!(fresh.cwnd(), INITIAL_CWND);
    }

    #[test]
    fn ack_clocked_keeps_the_window_and_sends_at_line_rate() {
        let (mut paced, mut clocked) = (Cubic::default(), Cubic::ack_clocked());
        for i in 0..200 {
            let a = ack(0.1 + i as f64 * 0.001);
            paced.on_ack(&a);
            clocked.on_ack(&a);
            if i == 120 {
                let l = Loss {
                    now_s: a.now_s,
                    sent_s: a.sent_s,
                    inflight: 100,
                };
                paced.on_loss(&l);
                clocked.on_loss(&l);
            }
            assert_eq!(paced.cwnd(), clocked.cwnd(), "ack {i}");
        }
        // Paced at 1.2 windows per RTT (0.1 s) after the loss; unpaced at line rate.
        assert!((paced.pacing_pps() - 1.2 * paced.cwnd() / 0.1).abs() < 1e-9);
        assert_eq!(clocked.pacing_pps(), LINE_RATE_PPS);
        // A snapshot from before the option reads as paced.
        let mut json = serde_json::to_value(&paced).expect("json");
        json.as_object_mut().expect("object").remove("paced");
        let old: Cubic = serde_json::from_value(json).expect("old snapshot");
        assert_eq!(old, paced);
    }
}
