//! Classic congestion controllers as simulator senders: Cubic, BBR v1 and v3, Copa, Vegas, the
//! PCC family (Allegro, Vivace, Proteus and its scavenger) and the LEO schemes LeoCC and SaTCP
//! react to every ack and loss with a congestion window and a pacing rate, in the same event
//! loop as the learned senders, so they share bottlenecks with them. docs/baselines.md says
//! where each comes from and what its defaults are.
//!
//! Loss detection: the simulator reports a dropped packet when its ack would have arrived (one
//! RTT after sending, as Aurora does), the earliest a sender could infer it from the gaps in
//! later acknowledgements. Controllers treat losses of packets sent before their last window
//! reduction as part of the same loss event (one reduction per round trip, like fast recovery).

pub mod bbr;
pub mod bbr3;
pub mod copa;
pub mod cubic;
pub mod leocc;
pub mod pcc;
pub mod satcp;
pub mod vegas;

pub use bbr::Bbr;
pub use bbr3::Bbr3;
pub use copa::Copa;
pub use cubic::Cubic;
pub use leocc::LeoCc;
pub use pcc::{Pcc, PccFlavour};
pub use satcp::SaTcp;
pub use vegas::Vegas;

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

impl Ack {
    /// Packets delivered between this packet's send and its ack.
    pub fn delivered_since_send(&self) -> u64 {
        self.delivered.saturating_sub(self.delivered_at_send)
    }

    /// The delivery-rate sample of this ack (packets/s): packets delivered since the packet
    /// was sent over the time since the delivery before it; `None` without either.
    pub fn delivery_rate_pps(&self) -> Option<f64> {
        let interval = self.now_s - self.delivered_time_at_send_s;
        let delivered = self.delivered_since_send();
        (interval > 0.0 && delivered > 0).then(|| delivered as f64 / interval)
    }
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

/// What a LEO path's companion tells a sender about the path, taken from the path description
/// as LeoCC's companion (Starlink's reconfiguration schedule) and SaTCP's link-layer hints
/// would give it. Only controllers that use them ([`ClassicCc::uses_path_hints`]) get them,
/// before each ack or loss.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PathHints {
    /// The latest reconfiguration at or before now: a scheduled step of the link's bandwidth or
    /// delay, or the start of a handover outage (s).
    pub last_reconfiguration_s: Option<f64>,
    /// Whether the packet of this feedback was sent while the link was declared down (a
    /// handover), or within [`HANDOVER_HINT_GUARD_S`] of it.
    pub sent_in_handover: bool,
}

/// How far from a declared handover a packet's send still counts as in it (s): the precision
/// of a link layer's prediction.
pub const HANDOVER_HINT_GUARD_S: f64 = 0.01;

/// The random source of a controller's own choices (the PCC family's probing order, BBRv3's
/// probe waits): xorshift64, seeded through SplitMix64's finalizer so that nearby seeds give
/// unrelated streams. Serialized as its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CcRng(u64);

impl CcRng {
    /// The stream of `seed`.
    pub fn seeded(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Self(z | 1)
    }

    /// The stream from a raw nonzero state.
    pub const fn from_state(state: u64) -> Self {
        Self(state)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A fair coin.
    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
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
    /// BBRv3 (draft-ietf-ccwg-bbr).
    Bbr3,
    /// Copa, default mode, delta 0.5.
    Copa,
    /// TCP Vegas, alpha 2, beta 4.
    Vegas,
    /// PCC Allegro (sigmoid loss utility, randomized rate trials).
    Allegro,
    /// PCC Vivace (latency-aware utility, gradient ascent on the rate).
    Vivace,
    /// PCC Proteus, the primary.
    Proteus,
    /// PCC Proteus, the scavenger (yields to primaries).
    ProteusS,
    /// LeoCC: BBR v1 that restarts its model at LEO reconfigurations.
    Leocc,
    /// SaTCP: Cubic that keeps its window through predicted handovers.
    Satcp,
}

impl ClassicKind {
    /// Every kind.
    pub const ALL: [ClassicKind; 12] = [
        ClassicKind::Cubic,
        ClassicKind::CubicUnpaced,
        ClassicKind::Bbr,
        ClassicKind::Bbr3,
        ClassicKind::Copa,
        ClassicKind::Vegas,
        ClassicKind::Allegro,
        ClassicKind::Vivace,
        ClassicKind::Proteus,
        ClassicKind::ProteusS,
        ClassicKind::Leocc,
        ClassicKind::Satcp,
    ];

    /// The name used in configs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ClassicKind::Cubic => "cubic",
            ClassicKind::CubicUnpaced => "cubic_unpaced",
            ClassicKind::Bbr => "bbr",
            ClassicKind::Bbr3 => "bbr3",
            ClassicKind::Copa => "copa",
            ClassicKind::Vegas => "vegas",
            ClassicKind::Allegro => "allegro",
            ClassicKind::Vivace => "vivace",
            ClassicKind::Proteus => "proteus",
            ClassicKind::ProteusS => "proteus_s",
            ClassicKind::Leocc => "leocc",
            ClassicKind::Satcp => "satcp",
        }
    }

    /// The kind called `name` (`-` and `_` alike: `proteus-s` is `proteus_s`).
    pub fn from_name(name: &str) -> Option<Self> {
        let name = name.replace('-', "_");
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Every name, for messages that list them.
    pub fn names() -> String {
        Self::ALL.map(ClassicKind::name).join(", ")
    }
}

/// A classic controller's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ClassicCc {
    /// Cubic.
    Cubic(Cubic),
    /// BBR v1.
    Bbr(Bbr),
    /// BBRv3.
    Bbr3(Bbr3),
    /// Copa.
    Copa(Copa),
    /// Vegas.
    Vegas(Vegas),
    /// The PCC family (Allegro, Vivace, Proteus, Proteus-S); snapshots from before the
    /// family called it `Vivace`.
    #[serde(alias = "Vivace")]
    Pcc(Pcc),
    /// LeoCC.
    LeoCc(LeoCc),
    /// SaTCP.
    SaTcp(SaTcp),
}

/// Calls `$body` with the controller inside whichever variant `$cc` is.
macro_rules! each_controller {
    ($cc:expr, $c:ident => $body:expr) => {
        match $cc {
            ClassicCc::Cubic($c) => $body,
            ClassicCc::Bbr($c) => $body,
            ClassicCc::Bbr3($c) => $body,
            ClassicCc::Copa($c) => $body,
            ClassicCc::Vegas($c) => $body,
            ClassicCc::Pcc($c) => $body,
            ClassicCc::LeoCc($c) => $body,
            ClassicCc::SaTcp($c) => $body,
        }
    };
}

impl ClassicCc {
    /// A fresh controller of `kind` whose random choices (the PCC family's probing order,
    /// BBRv3's probe waits) come from `seed`.
    pub fn seeded(kind: ClassicKind, seed: u64) -> Self {
        match Self::new(kind) {
            ClassicCc::Bbr3(_) => ClassicCc::Bbr3(Bbr3::with_seed(seed)),
            ClassicCc::Pcc(p) => ClassicCc::Pcc(Pcc::new(p.flavour(), seed)),
            other => other,
        }
    }

    /// A fresh controller of `kind` (a new connection).
    pub fn new(kind: ClassicKind) -> Self {
        let pcc = |f: PccFlavour| ClassicCc::Pcc(Pcc::unseeded(f));
        match kind {
            ClassicKind::Cubic => ClassicCc::Cubic(Cubic::default()),
            ClassicKind::CubicUnpaced => ClassicCc::Cubic(Cubic::ack_clocked()),
            ClassicKind::Bbr => ClassicCc::Bbr(Bbr::default()),
            ClassicKind::Bbr3 => ClassicCc::Bbr3(Bbr3::default()),
            ClassicKind::Copa => ClassicCc::Copa(Copa::default()),
            ClassicKind::Vegas => ClassicCc::Vegas(Vegas::default()),
            ClassicKind::Allegro => pcc(PccFlavour::Allegro),
            ClassicKind::Vivace => pcc(PccFlavour::Vivace),
            ClassicKind::Proteus => pcc(PccFlavour::Proteus),
            ClassicKind::ProteusS => pcc(PccFlavour::ProteusScavenger),
            ClassicKind::Leocc => ClassicCc::LeoCc(LeoCc::default()),
            ClassicKind::Satcp => ClassicCc::SaTcp(SaTcp::default()),
        }
    }

    /// Whether it reads [`PathHints`] (LeoCC, SaTCP): the simulator computes them only then.
    pub fn uses_path_hints(&self) -> bool {
        matches!(self, ClassicCc::LeoCc(_) | ClassicCc::SaTcp(_))
    }

    /// The path's news before the next ack or loss (ignored by controllers that do not use it).
    pub fn on_path_hints(&mut self, hints: &PathHints) {
        match self {
            ClassicCc::LeoCc(c) => c.on_path_hints(hints),
            ClassicCc::SaTcp(c) => c.on_path_hints(hints),
            _ => {}
        }
    }

    /// Reacts to an acknowledged packet.
    pub fn on_ack(&mut self, ack: &Ack) {
        each_controller!(self, c => c.on_ack(ack))
    }

    /// Reacts to a lost packet.
    pub fn on_loss(&mut self, loss: &Loss) {
        each_controller!(self, c => c.on_loss(loss))
    }

    /// Congestion window (packets in flight allowed).
    pub fn cwnd(&self) -> f64 {
        each_controller!(self, c => c.cwnd())
    }

    /// Pacing rate (packets/s).
    pub fn pacing_pps(&self) -> f64 {
        each_controller!(self, c => c.pacing_pps())
    }
}
