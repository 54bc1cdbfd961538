//! The monitor intervals of an env's learned senders: starting one (warm-up, base-RTT probe
//! or the agent's), running the network until a slot's MI ends, and closing it into
//! statistics and a reward.

use crate::agent_slot::{AgentSlot, SlotPhase};
use crate::config::ControllerConfig;
use crate::reward::{AstraeaInputs, MiOutcome, RewardCapacity, SharingOutcome};
use crate::team::TeamOutcome;
use mocc_policy::MonitorInterval;

use super::mi_timing::{jittered, one_way_estimate};
use super::step::{Action, ProbeMi, Step, StepInfo};
use super::Env;
use crate::limits::{MAX_SIM_RATE_PPS, MIN_SIM_RATE_PPS};

impl Env {
    /// After an MI closed (or the sender started): another warm-up MI, the first MI of the
    /// loop's startup (or of a probe), or the agent decides.
    pub(super) fn start_mi_or_decide(&mut self, k: usize) {
        let sender = self.slots[k].sender;
        let rate = self.net.senders()[sender].rate_pps();
        let slot = &mut self.slots[k];
        slot.sender_loop.set_rate(rate);
        if slot.sender_loop.in_warmup() {
            slot.phase = SlotPhase::Running;
            let d = slot.sender_loop.next_duration_s(rate);
            slot.mi_end_s = self.net.now_s() + jittered(d, self.mi_jitter, &mut self.rng);
        } else if slot.sender_loop.paces_next_mi() {
            self.begin_loop_mi(k);
        } else {
            slot.phase = SlotPhase::Ready;
        }
    }

    /// Runs the network until some learned sender decides or completes an MI (or no learned
    /// sender has anything left to do).
    pub(super) fn advance(&mut self) {
        loop {
            let end = self
                .slots
                .iter()
                .filter(|s| s.is_timed())
                .map(|s| s.mi_end_s)
                .fold(f64::INFINITY, f64::min);
            if !end.is_finite() {
                return;
            }
            self.run_background_until(end);
            let now = self.net.now_s();
            let mut decided = false;
            for k in 0..self.slots.len() {
                if self.slots[k].is_timed() && self.slots[k].mi_end_s <= now {
                    decided |= self.on_slot_time(k, now);
                }
            }
            if decided {
                return;
            }
        }
    }

    /// Runs events until `end` (the crossing event included), closing background senders'
    /// MIs as they end.
    pub(super) fn run_background_until(&mut self, end: f64) {
        let sizing = self.scenario.config().monitor_interval;
        let durations = &mut self.background_mi_dur_s;
        let last_mis = &mut self.last_mis;
        self.net.run_until(end, &mut self.rng, |net, i| {
            let now = net.now_s();
            let mi = net.senders_mut()[i].close_mi(now);
            if mi.rtt.mean_s > 0.0 {
                durations[i] = sizing.rtt_factor * mi.rtt.mean_s;
            }
            last_mis[i] = mi;
            let next = sizing.duration_s(durations[i], net.senders()[i].rate_pps());
            net.set_mi_end(i, now + next);
        });
    }

    /// Slot `k`'s wait or MI ended at `now`; returns whether it now decides or closed an MI
    /// after its warm-up.
    pub(super) fn on_slot_time(&mut self, k: usize, now: f64) -> bool {
        let sender = self.slots[k].sender;
        if self.slots[k].phase == SlotPhase::Waiting {
            // Its sender started: the MI clock starts with it (the empty MI is dropped).
            self.net.senders_mut()[sender].close_mi(now);
            let delay = self.net.link().params_at(now).delay_s;
            let extra = self.net.senders()[sender].extra_rtt_s();
            self.slots[k]
                .sender_loop
                .restart(one_way_estimate(delay, extra));
            self.start_mi_or_decide(k);
            self.phase_first_mi(k);
            return self.slots[k].phase == SlotPhase::Ready;
        }
        let mi = self.net.senders_mut()[sender].close_mi(now);
        self.last_mis[sender] = mi;
        let warming_up = self.slots[k].sender_loop.in_warmup();
        let loop_mi = self.slots[k].sender_loop.paces_next_mi();
        let paced_at = self.slots[k].sender_loop.pacing_rate_pps();
        let decides = self.slots[k].sender_loop.on_mi(&mi);
        if warming_up {
            self.start_mi_or_decide(k);
            return self.slots[k].phase == SlotPhase::Ready;
        }
        // A running sender that is no longer active has reached its stop time: it left.
        let left = !self.net.senders()[sender].is_active(now);
        if loop_mi {
            // A startup or probe MI is the loop's, not the agent's: no step; the agent decides
            // after the last one, from the rate the loop left it. Evaluations still count it.
            let (info, _) = self.mi_outcome(k, &mi, paced_at);
            let mode = self.slots[k].sender_loop.mode();
            self.probe_mis[k].push(ProbeMi { info, mi, mode });
            if left {
                self.retire(k, now);
            } else if decides {
                self.end_loop_mis(k);
            } else {
                self.begin_loop_mi(k);
            }
            // The caller sees every MI a learned sender closes (`Env::last_mi`).
            return true;
        }
        let step = self.finish_mi(k, &mi);
        self.completions[k] = Some(step);
        if step.truncated || left {
            self.retire(k, now);
        } else if self.slots[k].sender_loop.probing() {
            self.begin_loop_mi(k);
        } else {
            self.slots[k].phase = SlotPhase::Ready;
        }
        true
    }

    /// Slot `k`'s trajectory ends at `now` (its MI limit, or its sender left): while other
    /// learned senders go on, its flow leaves the link.
    pub(super) fn retire(&mut self, k: usize, now: f64) {
        self.slots[k].phase = SlotPhase::Done;
        if self.slots.iter().any(AgentSlot::is_live) {
            let sender = self.slots[k].sender;
            self.net.senders_mut()[sender].set_stop(now);
        }
    }

    /// Starts one of slot `k`'s startup or base-RTT probe MIs: the sender paces at the loop's
    /// rate (the startup's, or the probe's share of the agent's).
    pub(super) fn begin_loop_mi(&mut self, k: usize) {
        let now = self.net.now_s();
        let slot = &mut self.slots[k];
        let rate = slot.sender_loop.pacing_rate_pps();
        let sender = &mut self.net.senders_mut()[slot.sender];
        sender.set_rate_pps(rate);
        let d = slot.sender_loop.next_duration_s(sender.rate_pps());
        slot.phase = SlotPhase::Running;
        slot.mi_end_s = now + jittered(d, self.mi_jitter, &mut self.rng);
        self.open_team_window(k);
    }

    /// Ends slot `k`'s startup or probe: the sender paces at the agent's rate again and the
    /// agent decides.
    pub(super) fn end_loop_mis(&mut self, k: usize) {
        let slot = &mut self.slots[k];
        self.net.senders_mut()[slot.sender].set_rate_pps(slot.sender_loop.agent_rate_pps());
        slot.phase = SlotPhase::Ready;
    }

    /// The reward and statistics of slot `k`'s closed MI.
    pub(super) fn finish_mi(&mut self, k: usize, mi: &MonitorInterval) -> Step {
        let rate = self.slots[k].sender_loop.agent_rate_pps();
        let (info, reward) = self.mi_outcome(k, mi, rate);
        let steps = self.slots[k].steps + 1;
        self.slots[k].steps = steps;
        Step {
            reward,
            terminated: false,
            truncated: steps >= self.scenario.config().episode_mis,
            info,
        }
    }

    /// The statistics and reward of slot `k`'s closed MI, paced at `rate_pps`.
    pub(super) fn mi_outcome(
        &mut self,
        k: usize,
        mi: &MonitorInterval,
        rate_pps: f64,
    ) -> (StepInfo, f64) {
        let scenario = self.scenario.clone();
        let cfg = scenario.config();
        let link = self.net.link();
        let capacity_pps = link.capacity_pps(mi.send_start_s, mi.send_end_s);
        let one_way_s = link.params_at(mi.send_end_s).delay_s;
        let sender = self.slots[k].sender;
        let base_rtt_s = 2.0 * one_way_s + self.net.senders()[sender].extra_rtt_s();
        let outcome = MiOutcome::of_mi(mi, cfg.metrics, capacity_pps, base_rtt_s);
        let flows = if cfg.reward_terms.is_off() && cfg.reward_capacity.is_link() {
            1
        } else {
            self.flows_on_link(mi.send_end_s)
        };
        let team = self.close_team_window(k, mi, capacity_pps, outcome.mean_rtt_s);
        let slot = &self.slots[k];
        let rewarded = MiOutcome {
            capacity_pps: cfg.reward_capacity.of(outcome.capacity_pps, flows),
            ..outcome
        };
        let queue_delay_s = if outcome.mean_rtt_s > 0.0 {
            (outcome.mean_rtt_s - base_rtt_s).max(0.0)
        } else {
            0.0
        };
        let astraea = team.map(|team| AstraeaInputs {
            team,
            queue_delay_s,
            one_way_delay_s: one_way_s,
            trigger: slot.sender_loop.agent_rate_pps() != slot.previous_rate_pps,
        });
        let mut reward = cfg
            .reward
            .reward(&rewarded, &slot.objective, astraea.as_ref());
        if !cfg.reward_terms.is_off() {
            reward += cfg.reward_terms.value(&SharingOutcome {
                delivered_pps: outcome.delivered_pps,
                fair_share_pps: RewardCapacity::FairShare.of(outcome.capacity_pps, flows),
                flows,
                rate_pps: slot.sender_loop.agent_rate_pps(),
                previous_rate_pps: slot.previous_rate_pps,
                team_jain: team.map_or(1.0, |t| t.jain_index),
                queue_delay_ratio: if base_rtt_s > 0.0 {
                    queue_delay_s / base_rtt_s
                } else {
                    0.0
                },
            });
        }
        (StepInfo::new(mi, &outcome, rate_pps, reward), reward)
    }

    /// The team's outcome of slot `k`'s MI, when the rewards look at the team and its window
    /// was opened.
    fn close_team_window(
        &mut self,
        k: usize,
        mi: &MonitorInterval,
        capacity_pps: f64,
        rtt_s: f64,
    ) -> Option<TeamOutcome> {
        let cfg = self.scenario.config();
        let wanted = cfg.reward.needs_team() || cfg.reward_terms.needs_team();
        if !wanted || self.slots[k].team.counts.is_empty() {
            return None;
        }
        let now = self.net.now_s();
        let span = (now - self.slots[k].team.start_s).max(0.0);
        let capacity_pkts = capacity_pps * span.max(mi.send_dur_s());
        let (net, slot) = (&self.net, &mut self.slots[k]);
        Some(slot.team.close(net, now, capacity_pkts, rtt_s))
    }

    /// Applies slot `k`'s action and starts its MI. The rule steps the rate the sender paces
    /// at; a rate action sets it (within the simulator's limits); with Orca's window scaling
    /// the action scales the window of the Cubic underneath; a sender that sets its own rate
    /// ignores actions.
    pub(super) fn begin_mi(&mut self, k: usize, action: Action) {
        let sender_index = self.slots[k].sender;
        let acts =
            self.scenario.config().senders[sender_index].controller == ControllerConfig::Agent;
        let sender = &mut self.net.senders_mut()[sender_index];
        let previous = sender.rate_pps();
        let slot = &mut self.slots[k];
        slot.previous_rate_pps = slot.sender_loop.agent_rate_pps();
        let rule = self.scenario.config().action;
        let scales_window = rule.scales_window();
        match action {
            // Without an agent the observed sender sets its own rate; actions are ignored.
            _ if !acts => slot.sender_loop.set_rate(previous),
            // Orca: the action scales Cubic's window (a rate action keeps it); the loop's rate
            // is the one Cubic then paces at.
            Action::Delta(a) if scales_window => {
                let now = self.net.now_s();
                let sender = &mut self.net.senders_mut()[sender_index];
                sender.scale_window(&rule, a, now);
                slot.sender_loop.set_rate(sender.rate_pps());
            }
            Action::Rate(_) if scales_window => slot.sender_loop.set_rate(previous),
            Action::Delta(a) => slot.sender_loop.apply_from(previous, a),
            Action::Rate(r) if r.is_nan() => slot.sender_loop.set_rate(previous),
            Action::Rate(r) => slot
                .sender_loop
                .set_rate(r.clamp(MIN_SIM_RATE_PPS, MAX_SIM_RATE_PPS)),
        }
        let sender = &mut self.net.senders_mut()[sender_index];
        if acts && !scales_window {
            sender.set_rate_pps(slot.sender_loop.agent_rate_pps());
        }
        let mi_rate = sender.rate_pps();
        slot.phase = SlotPhase::Running;
        let d = slot.sender_loop.next_duration_s(mi_rate);
        slot.mi_end_s = self.net.now_s() + jittered(d, self.mi_jitter, &mut self.rng);
        self.open_team_window(k);
    }

    /// Records every flow's counters at the start of slot `k`'s MI, when the rewards look at
    /// the team.
    fn open_team_window(&mut self, k: usize) {
        let cfg = self.scenario.config();
        if cfg.reward.needs_team() || cfg.reward_terms.needs_team() {
            let now = self.net.now_s();
            self.slots[k].team.open(&self.net, now);
        }
    }
}
