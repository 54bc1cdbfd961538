//! An env's complete state (RNG, network, histories, MI clocks), and its exact resume.

use crate::agent_slot::{AgentSlot, SlotPhase, SlotSnapshot};
use crate::link::LinkParams;
use crate::scenario::Scenario;
use crate::sim::Network;
use mocc_policy::{
    ModeState, MonitorInterval, ObservationBuilder, ProbeState, SavedClock, SenderLoop,
    StartupState,
};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use super::Env;

/// The complete state of an env (RNG, network, histories, MI clocks), for exact resume.
/// The scenario itself is not part of it. The first learned sender's state sits in the
/// top-level fields (the format of single-sender snapshots); `agents` holds every learned
/// sender's when there are several or one is not simply waiting for its action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvSnapshot {
    index: u64,
    rng: ChaCha8Rng,
    net: Network,
    obs: ObservationBuilder,
    /// The agent's next MI length by the RTT rule (before the `min_packets` floor).
    mi_dur_s: f64,
    background_mi_dur_s: Vec<f64>,
    last_mis: Vec<MonitorInterval>,
    steps: u32,
    objective: [f64; 3],
    episode: LinkParams,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    agents: Vec<SlotSnapshot>,
    #[serde(default, skip_serializing_if = "is_zero")]
    mi_jitter: f64,
    /// The first learned sender's base-RTT probe timer (single-sender snapshots only).
    #[serde(default, skip_serializing_if = "ProbeState::is_fresh")]
    probe: ProbeState,
    /// The first learned sender's mode switch (single-sender snapshots only).
    #[serde(default, skip_serializing_if = "ModeState::is_fresh")]
    mode: ModeState,
    /// The first learned sender's startup (single-sender snapshots only).
    #[serde(default, skip_serializing_if = "StartupState::is_fresh")]
    startup: StartupState,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl Env {
    /// Captures the whole state.
    pub fn snapshot(&self) -> EnvSnapshot {
        let first = &self.slots[0];
        let clock = first.sender_loop.clock();
        let simple = self.slots.len() == 1
            && first.phase == SlotPhase::Ready
            && self.scenario.config().reward_terms.stability == 0.0
            && first.team.is_empty();
        // The agents' snapshots hold every timer when there are any.
        let (probe, mode, startup) = if simple {
            (
                clock.probe_state(),
                clock.mode_state(),
                *first.sender_loop.startup(),
            )
        } else {
            Default::default()
        };
        EnvSnapshot {
            index: self.index,
            rng: self.rng.clone(),
            net: self.net.clone(),
            obs: clock.history().clone(),
            mi_dur_s: clock.rtt_based_duration_s(),
            background_mi_dur_s: self.background_mi_dur_s.clone(),
            last_mis: self.last_mis.clone(),
            steps: first.steps,
            objective: first.objective,
            episode: self.episode,
            agents: if simple {
                Vec::new()
            } else {
                self.slots.iter().map(AgentSlot::snapshot).collect()
            },
            mi_jitter: self.mi_jitter,
            probe,
            mode,
            startup,
        }
    }

    /// Rebuilds an env of `scenario` from a snapshot taken with the same scenario.
    pub fn restore(scenario: Arc<Scenario>, snap: EnvSnapshot) -> Result<Self, String> {
        let cfg = scenario.config();
        let senders = cfg.senders.len();
        let observed = cfg.observed_senders();
        snapshot_fits(&scenario, &snap, &observed)?;
        let mut net = snap.net;
        let (outages, trace) = scenario.shared_link_parts();
        net.link_mut().reattach(outages, trace);
        let resume = |sender: usize, saved: SavedClock, rate_pps: f64| {
            SenderLoop::resume(&cfg.loop_spec_of(sender), saved, rate_pps)
        };
        let slots: Vec<AgentSlot> = if snap.agents.is_empty() {
            let rate = net.senders()[observed[0]].rate_pps();
            vec![AgentSlot {
                sender: observed[0],
                sender_loop: resume(
                    observed[0],
                    SavedClock {
                        history: snap.obs,
                        rtt_based_s: snap.mi_dur_s,
                        warmup_left: 0,
                        probe: snap.probe,
                        mode: snap.mode,
                        startup: snap.startup,
                    },
                    rate,
                ),
                objective: snap.objective,
                steps: snap.steps,
                mi_end_s: f64::INFINITY,
                phase: SlotPhase::Ready,
                previous_rate_pps: rate,
                team: Default::default(),
            }]
        } else {
            let mut slots = Vec::with_capacity(snap.agents.len());
            for (a, &sender) in snap.agents.into_iter().zip(&observed) {
                if a.sender != sender || a.obs.obs_len() != scenario.obs_len() {
                    return Err(format!(
                        "env {}: a learned sender's snapshot does not fit the scenario",
                        snap.index
                    ));
                }
                slots.push(AgentSlot {
                    sender,
                    sender_loop: resume(
                        sender,
                        SavedClock {
                            history: a.obs,
                            rtt_based_s: a.mi_dur_s,
                            warmup_left: a.warmup_left,
                            probe: a.probe,
                            mode: a.mode,
                            startup: a.startup,
                        },
                        a.rate_pps,
                    ),
                    objective: a.objective,
                    steps: a.steps,
                    mi_end_s: a.mi_end_s,
                    phase: a.phase,
                    previous_rate_pps: a.previous_rate_pps,
                    team: a.team,
                });
            }
            slots
        };
        Ok(Self {
            completions: vec![None; slots.len()],
            probe_mis: vec![Vec::new(); slots.len()],
            slots,
            scenario,
            index: snap.index,
            rng: snap.rng,
            net,
            background_mi_dur_s: snap.background_mi_dur_s,
            last_mis: snap.last_mis,
            episode: snap.episode,
            mi_jitter: snap.mi_jitter,
            starts: vec![None; senders],
            action_scratch: Vec::new(),
        })
    }
}

/// Whether `snap` was taken with a scenario of `scenario`'s senders, learned senders
/// (`observed`) and observation length; the error says what differs.
fn snapshot_fits(
    scenario: &Scenario,
    snap: &EnvSnapshot,
    observed: &[usize],
) -> Result<(), String> {
    let senders = scenario.config().senders.len();
    let slot_count = snap.agents.len().max(1);
    if snap.net.senders().len() != senders
        || snap.obs.obs_len() != scenario.obs_len()
        || slot_count != observed.len()
    {
        return Err(format!(
            "env {}: snapshot has {} senders ({} learned) and observations of {}, the \
             scenario {} ({}) and {}",
            snap.index,
            snap.net.senders().len(),
            slot_count,
            snap.obs.obs_len(),
            senders,
            observed.len(),
            scenario.obs_len()
        ));
    }
    Ok(())
}
