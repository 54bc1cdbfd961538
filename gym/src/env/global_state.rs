//! The global state a centralized critic reads during training (MAPPO's agent-specific global
//! state): the bottleneck's queue and load, and every learned flow's state with a mask for
//! flows that are absent, the deciding flow's first. The actor never reads it, so an export and
//! its runtime stay local.
//!
//! Layout, [`global_state_len`] values in all:
//!
//! ```text
//! link   [queue delay / largest queue delay, learned flows on the link / slots,
//!         sum of every sender's pacing rate / bandwidth]
//! flow j [present, pacing rate / bandwidth, last MI's mean RTT / base RTT (0 without
//!         samples), last MI's loss ratio, last MI's delivery rate / bandwidth]   x slots
//! ```
//!
//! Flow 0 is the deciding slot's; flows 1.. are the env's other slots in order. An absent or
//! departed flow's values are all 0 (its mask, `present`, included).

use super::Env;
use crate::agent_slot::SlotPhase;

/// Values describing the link.
pub const GLOBAL_LINK_FEATURES: usize = 3;
/// Values describing each flow.
pub const GLOBAL_FLOW_FEATURES: usize = 5;

/// The global state's length for an env of `slots` learned-sender slots.
pub fn global_state_len(slots: usize) -> usize {
    GLOBAL_LINK_FEATURES + slots * GLOBAL_FLOW_FEATURES
}

impl Env {
    /// The global state's length for this env.
    pub fn global_state_len(&self) -> usize {
        global_state_len(self.slots.len())
    }

    /// Slot `k`'s global state, now, into `out` ([`Env::global_state_len`] values).
    pub fn slot_global_state(&self, k: usize, out: &mut [f32]) {
        let now = self.net.now_s();
        let link = self.net.link();
        let bandwidth = link.params_at(now).bandwidth_pps.max(1e-9);
        let max_queue = link.max_queue_delay_s();
        let queue = if max_queue > 0.0 {
            (link.queue_delay_s(now) / max_queue).min(1.0)
        } else {
            0.0
        };
        let live = |j: usize| {
            let s = &self.slots[j];
            !matches!(
                s.phase,
                SlotPhase::Absent | SlotPhase::Done | SlotPhase::Waiting
            ) && self.net.senders()[s.sender].is_active(now)
        };
        let n = self.slots.len();
        let learned = (0..n).filter(|&j| live(j)).count();
        let pacing: f64 = self
            .net
            .senders()
            .iter()
            .filter(|s| s.is_active(now))
            .map(|s| s.rate_pps())
            .sum();
        out[0] = queue as f32;
        out[1] = (learned as f64 / n.max(1) as f64) as f32;
        out[2] = (pacing / bandwidth) as f32;
        let order = std::iter::once(k).chain((0..n).filter(|&j| j != k));
        for (slot_pos, j) in order.enumerate() {
            let cell = &mut out[GLOBAL_LINK_FEATURES + slot_pos * GLOBAL_FLOW_FEATURES..]
                [..GLOBAL_FLOW_FEATURES];
            if !live(j) {
                cell.fill(0.0);
                continue;
            }
            let sender = self.slots[j].sender;
            let s = &self.net.senders()[sender];
            let mi = &self.last_mis[sender];
            let base_rtt = 2.0 * link.params_at(now).delay_s + s.extra_rtt_s();
            let rtt = mi.avg_latency_s();
            cell[0] = 1.0;
            cell[1] = (s.rate_pps() / bandwidth) as f32;
            cell[2] = if rtt > 0.0 && base_rtt > 0.0 {
                (rtt / base_rtt) as f32
            } else {
                0.0
            };
            cell[3] = mi.loss_ratio() as f32;
            cell[4] = (mi.throughput_pps() / bandwidth) as f32;
        }
    }
}
