//! Classic congestion controllers as simulator senders: Cubic, BBR v1, Copa and Vegas react to
//! every ack and loss with a congestion window and a pacing rate, in the same event loop as the
//! learned senders, so they share bottlenecks with them.
//!
//! Loss detection: the simulator reports a dropped packet when its ack would have arrived (one
//! RTT after sending, as Aurora does), the earliest a sender could infer it from the gaps in
//! later acknowledgements. Controllers treat losses of packets sent before their last window
//! reduction as part of the same loss event (one reduction per round trip, like fast recovery).

pub mod bbr;
pub mod copa;
pub mod cubic;
pub mod vegas;
pub mod vivace;

pub use bbr::Bbr;
pub use copa::Copa;
pub use cubic::Cubic;
pub use vegas::Vegas;
pub use vivace::Vivace;

use serde::{Deserialize, Serialize};

/// Bits in a packet.
pub const PACKET_BITS: f64 = 8.0 * mocc_policy::BYTES_PER_PACKET;

/// Initial congestion window (packets), RFC 6928.
pub const INITIAL_CWND: f64 = 10.0;
/// Smallest congestion window any controller uses (packets).
pub const MIN_CWND: f64 = 2.0;
/// Pacing rate before the first RTT sample (packets/s): the initial window is sent nearly at
/// once, as an unpaced TCP would.
pub const INITIAL_PACING_PPS: f64 = 1e4;

/// What a controller learns from one acknowledged packet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ack {
    /// Time of the ack (s).
    pub now_s: f64,
    /// The packet's RTT (s).
    pub rtt_s: f64,
    /// When the packet was sent (s).
    pub sent_s: f64,
    /// Packets delivered so far, this one included.
    pub delivered: u64,
    /// Packets delivered when this one was sent.
    pub delivered_at_send: u64,
    /// Time of the last delivery before this one was sent (s).
    pub delivered_time_at_send_s: f64,
    /// Packets still in flight after this ack.
    pub inflight: usize,
}

/// What a controller learns from one lost packet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Loss {
    /// When the loss became known (s).
    pub now_s: f64,
    /// When the packet was sent (s).
    pub sent_s: f64,
    /// Packets still in flight after it.
    pub inflight: usize,
}

/// Smoothed RTT as TCP keeps it (RFC 6298 gain 1/8).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Srtt(Option<f64>);

impl Srtt {
    /// Folds in one sample.
    pub fn update(&mut self, rtt_s: f64) {
        self.0 = Some(match self.0 {
            None => rtt_s,
            Some(s) => 0.875 * s + 0.125 * rtt_s,
        });
    }

    /// The smoothed RTT, if any sample came.
    pub fn get(&self) -> Option<f64> {
        self.0
    }
}

/// Pacing at `gain x cwnd / srtt` (Linux paces window-based controllers at 2x in slow start
/// and 1.2x in congestion avoidance).
pub fn window_pacing(cwnd: f64, srtt: Srtt, gain: f64) -> f64 {
    match srtt.get() {
        Some(rtt) if rtt > 0.0 => gain * cwnd / rtt,
        _ => INITIAL_PACING_PPS,
    }
}

/// Which classic controller, in configs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClassicKind {
    /// Cubic (RFC 9438), paced as Linux paces it under the fq qdisc.
    Cubic,
    /// Cubic unpaced, its packets clocked out by the ACKs: Linux's Cubic under its default
    /// qdiscs, as on `mocc net`'s real path.
    CubicUnpaced,
    /// BBR v1.
    Bbr,
    /// Copa, default mode, delta 0.5.
    Copa,
    /// TCP Vegas, alpha 2, beta 4.
    Vegas,
    /// PCC Vivace (latency-aware utility, gradient ascent on the rate).
    Vivace,
}

impl ClassicKind {
    /// Every kind.
    pub const ALL: [ClassicKind; 6] = [
        ClassicKind::Cubic,
        ClassicKind::CubicUnpaced,
        ClassicKind::Bbr,
        ClassicKind::Copa,
        ClassicKind::Vegas,
        ClassicKind::Vivace,
    ];

    /// The name used in configs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ClassicKind::Cubic => "cubic",
            ClassicKind::CubicUnpaced => "cubic_unpaced",
            ClassicKind::Bbr => "bbr",
            ClassicKind::Copa => "copa",
            ClassicKind::Vegas => "vegas",
            ClassicKind::Vivace => "vivace",
        }
    }

    /// The kind called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// A classic controller's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ClassicCc {
    /// Cubic.
    Cubic(Cubic),
    /// BBR v1.
    Bbr(Bbr),
    /// Copa.
    Copa(Copa),
    /// Vegas.
    Vegas(Vegas),
    /// PCC Vivace.
    Vivace(Vivace),
}

impl ClassicCc {
    /// A fresh controller of `kind` whose random choices (Vivace's probing order) come from
    /// `seed`.
    pub fn seeded(kind: ClassicKind, seed: u64) -> Self {
        match kind {
            ClassicKind::Vivace => ClassicCc::Vivace(Vivace::with_seed(seed)),
            other => Self::new(other),
        }
    }

    /// A fresh controller of `kind` (a new connection).
    pub fn new(kind: ClassicKind) -> Self {
        match kind {
            ClassicKind::Cubic => ClassicCc::Cubic(Cubic::default()),
            ClassicKind::CubicUnpaced => ClassicCc::Cubic(Cubic::ack_clocked()),
            ClassicKind::Bbr => ClassicCc::Bbr(Bbr::default()),
            ClassicKind::Copa => ClassicCc::Copa(Copa::default()),
            ClassicKind::Vegas => ClassicCc::Vegas(Vegas::default()),
            ClassicKind::Vivace => ClassicCc::Vivace(Vivace::default()),
        }
    }

    /// Reacts to an acknowledged packet.
    pub fn on_ack(&mut self, ack: &Ack) {
        match self {
            ClassicCc::Cubic(c) => c.on_ack(ack),
            ClassicCc::Bbr(c) => c.on_ack(ack),
            ClassicCc::Copa(c) => c.on_ack(ack),
            ClassicCc::Vegas(c) => c.on_ack(ack),
            ClassicCc::Vivace(c) => c.on_ack(ack),
        }
    }

    /// Reacts to a lost packet.
    pub fn on_loss(&mut self, loss: &Loss) {
        match self {
            ClassicCc::Cubic(c) => c.on_loss(loss),
            ClassicCc::Bbr(c) => c.on_loss(loss),
            ClassicCc::Copa(c) => c.on_loss(loss),
            ClassicCc::Vegas(c) => c.on_loss(loss),
            ClassicCc::Vivace(c) => c.on_loss(loss),
        }
    }

    /// Congestion window (packets in flight allowed).
    pub fn cwnd(&self) -> f64 {
        match self {
            ClassicCc::Cubic(c) => c.cwnd(),
            ClassicCc::Bbr(c) => c.cwnd(),
            ClassicCc::Copa(c) => c.cwnd(),
            ClassicCc::Vegas(c) => c.cwnd(),
            ClassicCc::Vivace(c) => c.cwnd(),
        }
    }

    /// Pacing rate (packets/s).
    pub fn pacing_pps(&self) -> f64 {
        match self {
            ClassicCc::Cubic(c) => c.pacing_pps(),
            ClassicCc::Bbr(c) => c.pacing_pps(),
            ClassicCc::Copa(c) => c.pacing_pps(),
            ClassicCc::Vegas(c) => c.pacing_pps(),
            ClassicCc::Vivace(c) => c.pacing_pps(),
        }
    }
}
