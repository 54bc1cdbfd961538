//! One learned sender inside an env: the sender loop a deployed `Controller` runs (MI clock,
//! rate rule, the agent's rate), its objective, and where it stands in the episode.

use crate::team::TeamWindow;
use mocc_policy::{ModeState, ObservationBuilder, ProbeState, SenderLoop, StartupState};
use serde::{Deserialize, Serialize};

/// Where a learned sender stands in its episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SlotPhase {
    /// Not in this episode (its sender's draw said no).
    Absent,
    /// Its sender starts later; the slot wakes at its start time.
    Waiting,
    /// An MI is running (a warm-up MI, a base-RTT probe MI or one the agent chose the rate of).
    Running,
    /// The last MI closed: the slot waits for the agent's next action.
    Ready,
    /// Its trajectory ended (MI limit reached or the sender left).
    Done,
}

/// A learned sender's state besides its network sender.
#[derive(Debug, Clone)]
pub(crate) struct AgentSlot {
    /// Index of its sender in the network.
    pub sender: usize,
    /// Its sender loop: the MI clock and history a deployed `Controller` runs, the rate rule,
    /// and the rate the agent chose for the running MI (paced at a share of it in probe MIs).
    pub sender_loop: SenderLoop,
    /// The objective its reward weighs.
    pub objective: [f64; 3],
    /// Decisions taken in this episode.
    pub steps: u32,
    /// When the running MI (or the wait) ends.
    pub mi_end_s: f64,
    /// The phase.
    pub phase: SlotPhase,
    /// Pacing rate of the previous MI (for the stability term).
    pub previous_rate_pps: f64,
    /// Every flow's counters at the start of the running MI and their recent windows (for
    /// rewards that look at the team; empty otherwise).
    pub team: TeamWindow,
}

impl AgentSlot {
    /// Whether the slot waits for a time (its start or its MI end).
    pub fn is_timed(&self) -> bool {
        matches!(self.phase, SlotPhase::Waiting | SlotPhase::Running)
    }

    /// Whether the slot still has something to do in this episode.
    pub fn is_live(&self) -> bool {
        !matches!(self.phase, SlotPhase::Absent | SlotPhase::Done)
    }

    /// The saved form.
    pub fn snapshot(&self) -> SlotSnapshot {
        let clock = self.sender_loop.clock();
        SlotSnapshot {
            sender: self.sender,
            obs: clock.history().clone(),
            mi_dur_s: clock.rtt_based_duration_s(),
            objective: self.objective,
            steps: self.steps,
            mi_end_s: self.mi_end_s,
            phase: self.phase,
            previous_rate_pps: self.previous_rate_pps,
            rate_pps: self.sender_loop.agent_rate_pps(),
            warmup_left: clock.warmup_left(),
            probe: clock.probe_state(),
            mode: clock.mode_state(),
            startup: *self.sender_loop.startup(),
            team: self.team.clone(),
        }
    }
}

/// A learned sender's saved state (snapshots of envs with several learned senders).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlotSnapshot {
    pub(crate) sender: usize,
    pub(crate) obs: ObservationBuilder,
    pub(crate) mi_dur_s: f64,
    pub(crate) objective: [f64; 3],
    pub(crate) steps: u32,
    #[serde(with = "crate::serde_float")]
    pub(crate) mi_end_s: f64,
    pub(crate) phase: SlotPhase,
    pub(crate) previous_rate_pps: f64,
    pub(crate) rate_pps: f64,
    pub(crate) warmup_left: u32,
    #[serde(default, skip_serializing_if = "ProbeState::is_fresh")]
    pub(crate) probe: ProbeState,
    #[serde(default, skip_serializing_if = "ModeState::is_fresh")]
    pub(crate) mode: ModeState,
    #[serde(default, skip_serializing_if = "StartupState::is_fresh")]
    pub(crate) startup: StartupState,
    #[serde(default, skip_serializing_if = "TeamWindow::is_empty")]
    pub(crate) team: TeamWindow,
}
