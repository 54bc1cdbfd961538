//! A deployed sender's rate controller: fed one monitor interval's raw statistics at a time, it
//! returns the next pacing rate, running the MI clock, feature, history and rate-rule code the
//! gym trained with.

use crate::actor::OBJECTIVE_DIM;
use crate::app_limited::{app_limited_rate, AppLimit};
use crate::export::{Policy, PolicyWorkspace};
use crate::mi::MonitorInterval;
use crate::mode_switch::Mode;
use crate::objective::{self, ObjectiveError};
use crate::sender_loop::SenderLoop;
use std::path::PathBuf;
use std::sync::Arc;

/// Why a [`Controller`] could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ControllerError {
    /// The objective is not three positive weights summing to 1.
    #[error(transparent)]
    Objective(#[from] ObjectiveError),
    /// The export's actions scale an underlying Cubic's window (Orca's
    /// [`crate::ActionRule::window_scale`]), which a rate controller has no window to apply to.
    #[error(
        "{0}: action.window_scale: the export scales Cubic's window (Orca), and a rate \
         controller has no window to scale; run it in the simulator (mocc eval --policy EXPORT)"
    )]
    ScalesWindow(PathBuf),
}

/// One connection's controller. Cheap to create; many controllers can share one [`Policy`].
///
/// The sequence matches the gym's episodes: after [`Controller::reset`] the sender paces at the
/// start rate for the policy's `warmup_mis` MIs (they are not recorded in the history); at the
/// end of the last warm-up MI the policy takes its first decision on the empty history, and
/// from then on every finished MI is recorded and followed by one decision, except that with
/// base-RTT probes (`ActionRule::probe_rtt`) a probe's MIs are paced at a share of the agent's
/// rate (`ActionRule::pacing_rate`) and only the last of them is followed by one. A paired export
/// decides with its competitive policy while the clock's mode switch says so.
#[derive(Debug, Clone)]
pub struct Controller {
    policy: Arc<Policy>,
    /// The MI clock, the rate rule and the rate the agent chose.
    sender: SenderLoop,
    workspace: PolicyWorkspace,
    objective: [f64; OBJECTIVE_DIM],
    objective_input: [f32; OBJECTIVE_DIM],
    last_action: Option<f32>,
    /// What the application sent in the last MI it was out of data at both ends of
    /// (packets/s); 0 from the agent's first decision on an MI with data waiting throughout.
    app_rate_pps: f64,
}

impl Controller {
    /// A controller for one connection, pacing at the policy's minimum rate until
    /// [`Controller::reset`] sets a start rate. `objective` holds the weights of throughput,
    /// latency and loss (positive, summing to 1); single-objective policies ignore it. An
    /// export whose actions scale Cubic's window (Orca) is refused: it needs a window.
    pub fn new(
        policy: impl Into<Arc<Policy>>,
        objective: [f64; OBJECTIVE_DIM],
    ) -> Result<Self, ControllerError> {
        objective::validate(&objective).map_err(ObjectiveError)?;
        let policy = policy.into();
        Self::check_runs(&policy)?;
        let start = policy.action_rule().min_rate_pps;
        let mut c = Self {
            sender: SenderLoop::new(&policy.loop_spec(), start),
            workspace: policy.workspace(),
            objective,
            objective_input: objective.map(|w| w as f32),
            last_action: None,
            app_rate_pps: 0.0,
            policy,
        };
        c.reset(start);
        Ok(c)
    }

    /// Whether a controller can run `policy`: not an export whose actions scale Cubic's window
    /// (Orca), which needs a window to scale ([`ControllerError::ScalesWindow`]).
    pub fn check_runs(policy: &Policy) -> Result<(), ControllerError> {
        if policy.action_rule().scales_window() {
            return Err(ControllerError::ScalesWindow(policy.source().to_path_buf()));
        }
        Ok(())
    }

    /// Starts a new connection at `start_rate_pps` and returns the rate for its first MI (the
    /// start rate, or with `warmup_mis = 0` the rate after the first decision). A start rate
    /// that is not a positive number becomes the policy's minimum rate.
    pub fn reset(&mut self, start_rate_pps: f64) -> f64 {
        self.start(start_rate_pps, 0.0)
    }

    /// [`Controller::reset`] on a path whose one-way delay is estimated at `one_way_delay_s`
    /// (half a handshake's RTT): until an MI carries RTT samples, MIs last
    /// `initial_delay_factor` of it, as the gym's first MIs do. With [`Controller::mi_duration_s`]
    /// a transport needs no MI clock of its own.
    pub fn start(&mut self, start_rate_pps: f64, one_way_delay_s: f64) -> f64 {
        self.last_action = None;
        self.app_rate_pps = 0.0;
        if self.sender.start(start_rate_pps, one_way_delay_s) {
            self.decide();
        }
        self.rate_pps()
    }

    /// Folds in a finished MI and returns the rate for the next one. The MI should be formed
    /// as training formed it ([`crate::MiCounters`]: send and receive spans equal to the MI's
    /// boundaries); delivery rates from first-to-last-ack spans would be higher and spikier,
    /// and so would the peak the drain-aware baseline and `peak delivery ratio` read.
    pub fn on_monitor_interval(&mut self, mi: &MonitorInterval) -> f64 {
        if self.sender.on_mi(mi) {
            self.app_rate_pps = 0.0;
            self.decide();
        }
        self.rate_pps()
    }

    /// [`Controller::on_monitor_interval`] for an MI in which the application limited the
    /// sender as `limit` says (see [`crate::app_limited`]): where the agent would decide, the
    /// rate is held instead (raised to twice what the application sent if it was out of data
    /// at both of the MI's ends); the MI is recorded as any other. Warm-up, startup and
    /// base-RTT probe MIs go on as they would, except that a probe paces an
    /// application-limited sender no slower than its application sent (see
    /// [`Controller::rate_pps`]); [`AppLimit::Not`] is [`Controller::on_monitor_interval`].
    pub fn on_app_limited_monitor_interval(
        &mut self,
        mi: &MonitorInterval,
        limit: AppLimit,
    ) -> f64 {
        if !limit.any() {
            return self.on_monitor_interval(mi);
        }
        if limit == AppLimit::Wholly {
            self.app_rate_pps = mi.send_rate_pps();
        }
        if self.sender.on_mi(mi) {
            // The rate the agent would step from (a startup that just ended set it).
            let before = self.sender.agent_rate_pps();
            let held = app_limited_rate(limit, before, mi.send_rate_pps());
            self.sender.set_rate(self.policy.action_rule().clamp(held));
        }
        self.rate_pps()
    }

    fn decide(&mut self) {
        let action = self.policy.mean_action_in(
            self.sender.mode(),
            self.sender.observation(),
            &self.objective_input,
            &mut self.workspace,
        );
        self.last_action = Some(action);
        self.sender.apply(f64::from(action));
    }

    /// Switches the application's objective (takes effect at the next decision).
    pub fn set_objective(&mut self, objective: [f64; OBJECTIVE_DIM]) -> Result<(), ObjectiveError> {
        objective::validate(&objective).map_err(ObjectiveError)?;
        self.objective = objective;
        self.objective_input = objective.map(|w| w as f32);
        Ok(())
    }

    /// The objective in force.
    pub fn objective(&self) -> [f64; OBJECTIVE_DIM] {
        self.objective
    }

    /// The current pacing rate (packets/s): the agent's rate, or a probe's share of it. A
    /// probe of a sender whose application limited it (an MI out of data at both ends since the
    /// agent last decided on one with data waiting) paces no slower than that application sent,
    /// up to the agent's rate: such a sender queues little of its own at the bottleneck, and a
    /// probe below the application's rate would queue its data at the sender instead (a
    /// stream's frames, for 4 MIs).
    pub fn rate_pps(&self) -> f64 {
        let pacing = self.sender.pacing_rate_pps();
        if self.sender.probing() {
            pacing.max(self.app_rate_pps.min(self.sender.agent_rate_pps()))
        } else {
            pacing
        }
    }

    /// The rate the agent last chose (packets/s); it paces again at this rate after a probe.
    pub fn agent_rate_pps(&self) -> f64 {
        self.sender.agent_rate_pps()
    }

    /// Whether the next MI is a base-RTT probe MI.
    pub fn probing(&self) -> bool {
        self.sender.probing()
    }

    /// Which of a paired export's policies takes the next decision (always cooperative for a
    /// single policy).
    pub fn mode(&self) -> Mode {
        self.sender.mode()
    }

    /// The last action the network took (before the rate rule), if any.
    pub fn last_action(&self) -> Option<f32> {
        self.last_action
    }

    /// The observation the next decision will see (raw, before normalization).
    pub fn observation(&self) -> &[f32] {
        self.sender.observation()
    }

    /// Length of the next MI as trained: `rtt_factor x` the mean RTT of the last recorded MI
    /// that had RTT samples, floored at `min_packets` packets at the current rate; `None` before
    /// one (the sender then keeps `initial_delay_factor x` its one-way delay estimate, floored
    /// the same way by `MonitorIntervalConfig::duration_s`, as the gym does through the warm-up).
    pub fn next_mi_duration_s(&self) -> Option<f64> {
        self.sender.sampled_mi_duration_s()
    }

    /// Packets to send back to back at each MI's start ([`SenderLoop::train_packets`]).
    pub fn train_packets(&self) -> u32 {
        self.sender.train_packets()
    }

    /// Length of the next MI at the current rate (s): `initial_delay_factor` one-way delays
    /// (as given to [`Controller::start`]) until an MI had RTT samples, then `rtt_factor` times
    /// the last sampled mean RTT; floored at `min_packets` and capped as every MI is.
    pub fn mi_duration_s(&self) -> f64 {
        self.sender.mi_duration_s()
    }

    /// The sender loop (MI clock, rate rule, the agent's rate).
    pub fn sender_loop(&self) -> &SenderLoop {
        &self.sender
    }

    /// The policy.
    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }
}
