//! The `senders:` section: who sets each sender's rate (the agent, a classic controller, a
//! constant rate, on-off traffic), its start rate and its start and stop times.

use super::range::{is_one, is_zero, one, zero_range, Range};
use crate::cc::ClassicKind;
use serde::{Deserialize, Serialize};

/// Who sets a sender's rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ControllerConfig {
    /// The learning agent: its rate changes by the action rule once per MI. Exactly one sender
    /// of a scenario is the agent.
    Agent,
    /// Paces at its start rate forever (cross traffic).
    Constant,
    /// Sends for `on_s`, stays silent for `off_s`, and repeats: at its start rate, or driven
    /// by the classic controller `cc` when given.
    OnOff {
        /// Length of each sending period (s, > 0).
        on_s: f64,
        /// Length of each silent period (s, > 0).
        off_s: f64,
        /// A classic controller driving the sending periods (none: the start rate).
        #[serde(default)]
        cc: Option<ClassicKind>,
    },
    /// Cubic (RFC 9438), paced.
    Cubic,
    /// Cubic unpaced (clocked out by the ACKs).
    CubicUnpaced,
    /// BBR v1.
    Bbr,
    /// BBRv3.
    Bbr3,
    /// Copa (default mode, delta 0.5).
    Copa,
    /// TCP Vegas.
    Vegas,
    /// PCC Allegro.
    Allegro,
    /// PCC Vivace.
    Vivace,
    /// PCC Proteus, the primary.
    Proteus,
    /// PCC Proteus, the scavenger.
    ProteusS,
    /// LeoCC.
    Leocc,
    /// SaTCP.
    Satcp,
}

impl ControllerConfig {
    /// The classic controller driving this sender, if any.
    pub fn classic(&self) -> Option<ClassicKind> {
        match *self {
            ControllerConfig::Cubic => Some(ClassicKind::Cubic),
            ControllerConfig::CubicUnpaced => Some(ClassicKind::CubicUnpaced),
            ControllerConfig::Bbr => Some(ClassicKind::Bbr),
            ControllerConfig::Bbr3 => Some(ClassicKind::Bbr3),
            ControllerConfig::Copa => Some(ClassicKind::Copa),
            ControllerConfig::Vegas => Some(ClassicKind::Vegas),
            ControllerConfig::Allegro => Some(ClassicKind::Allegro),
            ControllerConfig::Vivace => Some(ClassicKind::Vivace),
            ControllerConfig::Proteus => Some(ClassicKind::Proteus),
            ControllerConfig::ProteusS => Some(ClassicKind::ProteusS),
            ControllerConfig::Leocc => Some(ClassicKind::Leocc),
            ControllerConfig::Satcp => Some(ClassicKind::Satcp),
            ControllerConfig::OnOff { cc, .. } => cc,
            ControllerConfig::Agent | ControllerConfig::Constant => None,
        }
    }

    /// The always-on controller of a classic kind.
    pub fn from_classic(kind: ClassicKind) -> Self {
        match kind {
            ClassicKind::Cubic => ControllerConfig::Cubic,
            ClassicKind::CubicUnpaced => ControllerConfig::CubicUnpaced,
            ClassicKind::Bbr => ControllerConfig::Bbr,
            ClassicKind::Bbr3 => ControllerConfig::Bbr3,
            ClassicKind::Copa => ControllerConfig::Copa,
            ClassicKind::Vegas => ControllerConfig::Vegas,
            ClassicKind::Allegro => ControllerConfig::Allegro,
            ClassicKind::Vivace => ControllerConfig::Vivace,
            ClassicKind::Proteus => ControllerConfig::Proteus,
            ClassicKind::ProteusS => ControllerConfig::ProteusS,
            ClassicKind::Leocc => ControllerConfig::Leocc,
            ClassicKind::Satcp => ControllerConfig::Satcp,
        }
    }
}

/// A sender's rate at the start of an episode.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum StartRate {
    /// A multiple of the episode's bottleneck capacity (Aurora: U(0.3, 1.5)).
    BandwidthFactor(Range),
    /// Packets per second.
    Pps(Range),
}

/// One sender on the bottleneck.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SenderConfig {
    /// Who sets the rate.
    #[serde(default = "default_controller")]
    pub controller: ControllerConfig,
    /// Rate at the start of the episode.
    #[serde(default = "default_start_rate")]
    pub start_rate: StartRate,
    /// Time of the sender's start (s), drawn per episode; it first sends one packet interval
    /// later.
    #[serde(default = "zero_range")]
    pub start_time_s: Range,
    /// Time the sender leaves (s), drawn per episode; a learned sender's trajectory ends with
    /// its first MI that closes after it. `None`: it stays to the end of the episode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_time_s: Option<Range>,
    /// How long the sender stays after its start (s), drawn per episode: it leaves at its start
    /// plus this (instead of `stop_time_s`). `None`: see `stop_time_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<Range>,
    /// Probability that the sender takes part in an episode (drawn per episode). The first
    /// learned sender always does.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub probability: f64,
    /// Round-trip time this sender's own access path adds to the link's (s): flows with
    /// different base RTTs on one bottleneck.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub extra_rtt_s: f64,
    /// The env observes and rewards this sender although it is not learned (evaluating a
    /// classic scheme in a learned sender's place). Learned senders are always observed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub observe: bool,
}

fn default_controller() -> ControllerConfig {
    ControllerConfig::Agent
}
fn default_start_rate() -> StartRate {
    StartRate::BandwidthFactor(Range::uniform(0.3, 1.5))
}
pub(super) fn default_senders() -> Vec<SenderConfig> {
    vec![SenderConfig::default()]
}

impl Default for SenderConfig {
    /// The agent, starting at U(0.3, 1.5) x capacity at time 0 (Aurora).
    fn default() -> Self {
        Self {
            controller: default_controller(),
            start_rate: default_start_rate(),
            start_time_s: zero_range(),
            stop_time_s: None,
            duration_s: None,
            probability: 1.0,
            extra_rtt_s: 0.0,
            observe: false,
        }
    }
}
