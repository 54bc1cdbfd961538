//! MOCC's two-phase objective schedule, as a pure state machine the trainer consults once per
//! update: which objective each env trains on, and when to move on.
//!
//! Phase 1 (bootstrap) trains on the bootstrap objectives (split across the envs) until the mean
//! reward stops improving (relative change of the mean over the last `window` updates against
//! the `window` before it below `threshold`) or `max_updates` pass. Phase 2 walks the landmarks
//! neighbour to neighbour, `updates_per_landmark` updates each, cyclically, and ends when every
//! landmark's reward changed by less than `threshold` (relative) over one full cycle.

use crate::landmarks::{default_bootstrap, LandmarkSpec, Landmarks, Objective};
use serde::{Deserialize, Serialize};

/// Phase 1 settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootstrapConfig {
    /// Longest phase 1 (updates).
    #[serde(default = "d_max_updates")]
    pub max_updates: u64,
    /// Updates per comparison window.
    #[serde(default = "d_window")]
    pub window: usize,
    /// Relative improvement below which phase 1 has converged.
    #[serde(default = "d_threshold")]
    pub threshold: f64,
}

/// Phase 2 settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraversalConfig {
    /// Updates spent on each landmark per visit.
    #[serde(default = "d_per_landmark")]
    pub updates_per_landmark: u64,
    /// Relative per-landmark reward change over a cycle below which a landmark has converged.
    #[serde(default = "d_threshold")]
    pub threshold: f64,
    /// Fraction of the envs that train on neighbours of the current landmark instead of it
    /// (0 = the paper's schedule).
    #[serde(default)]
    pub neighbour_mix: f64,
    /// Fraction of the envs that replay landmarks from the whole grid while the walk goes on:
    /// they take the landmarks in turn (a stripe that moves on by their number each update),
    /// so every landmark trains every `omega / replay envs` updates and the policy does not
    /// drift away from the landmarks the walk left long ago (0 = the paper's schedule).
    #[serde(default)]
    pub landmark_replay: f64,
}

fn d_max_updates() -> u64 {
    60
}
fn d_window() -> usize {
    5
}
fn d_threshold() -> f64 {
    0.01
}
fn d_per_landmark() -> u64 {
    2
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        Self {
            max_updates: d_max_updates(),
            window: d_window(),
            threshold: d_threshold(),
        }
    }
}

impl Default for TraversalConfig {
    fn default() -> Self {
        Self {
            updates_per_landmark: d_per_landmark(),
            threshold: d_threshold(),
            neighbour_mix: 0.0,
            landmark_replay: 0.0,
        }
    }
}

/// The `mocc:` section of a training config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoccConfig {
    /// The landmark objectives: `{omega: 36}`, `{step_denominator: 10}` or `{list: [...]}`.
    pub landmarks: LandmarkSpec,
    /// Phase 1 objectives (default: (0.6, 0.3, 0.1) and its cyclic shifts, snapped to the
    /// nearest landmarks).
    #[serde(default)]
    pub bootstrap: Option<Vec<Objective>>,
    /// Phase 1 settings.
    #[serde(default)]
    pub phase1: BootstrapConfig,
    /// Phase 2 settings.
    #[serde(default)]
    pub phase2: TraversalConfig,
}

impl MoccConfig {
    /// Checks every value; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        Landmarks::from_spec(&self.landmarks).map_err(|e| format!("mocc.{e}"))?;
        if let Some(b) = &self.bootstrap {
            if b.is_empty() {
                return Err("mocc.bootstrap: at least one objective is required".into());
            }
            for (i, w) in b.iter().enumerate() {
                mocc_gym::config::validate_objective(&format!("mocc.bootstrap[{i}]"), w)
                    .map_err(|e| e.to_string())?;
            }
        }
        if self.phase1.window == 0 || self.phase1.max_updates == 0 {
            return Err("mocc.phase1: window and max_updates must be >= 1".into());
        }
        if self.phase2.updates_per_landmark == 0 {
            return Err("mocc.phase2.updates_per_landmark: must be >= 1 (got 0)".into());
        }
        if !(0.0..1.0).contains(&self.phase2.neighbour_mix) {
            return Err(format!(
                "mocc.phase2.neighbour_mix: must lie in [0, 1) (got {})",
                self.phase2.neighbour_mix
            ));
        }
        let off_walk = self.phase2.neighbour_mix + self.phase2.landmark_replay;
        if !(0.0..1.0).contains(&self.phase2.landmark_replay) || off_walk >= 1.0 {
            return Err(format!(
                "mocc.phase2.landmark_replay: must lie in [0, 1) and leave envs on the current \
                 landmark together with neighbour_mix (got {} + neighbour_mix {})",
                self.phase2.landmark_replay, self.phase2.neighbour_mix
            ));
        }
        for (name, t) in [
            ("phase1.threshold", self.phase1.threshold),
            ("phase2.threshold", self.phase2.threshold),
        ] {
            if !(t.is_finite() && t >= 0.0) {
                return Err(format!("mocc.{name}: must be >= 0 (got {t})"));
            }
        }
        Ok(())
    }
}

/// Where the schedule is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Phase 1.
    Bootstrap,
    /// Phase 2.
    Traversal,
    /// Every landmark converged.
    Converged,
}

/// The schedule's state (serializable: checkpoints hold it so a resume continues the walk).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MoccSchedule {
    config: MoccConfig,
    #[serde(skip)]
    landmarks: Option<Landmarks>,
    bootstrap: Vec<Objective>,
    walk: Vec<usize>,
    phase: Phase,
    phase1_rewards: Vec<f64>,
    position: usize,
    updates_here: u64,
    cycles: u64,
    landmark_reward: Vec<Option<f64>>,
    previous_cycle_reward: Vec<Option<f64>>,
    /// Phase 2 updates so far (moves the replay stripe); absent in checkpoints written before
    /// landmark replay existed, which never replayed.
    #[serde(default)]
    traversal_updates: u64,
}

impl MoccSchedule {
    /// A schedule at the start of phase 1.
    pub fn new(config: MoccConfig) -> Result<Self, String> {
        config.validate()?;
        let landmarks = Landmarks::from_spec(&config.landmarks)?;
        let bootstrap = config
            .bootstrap
            .clone()
            .unwrap_or_else(default_bootstrap)
            .iter()
            .map(|w| landmarks.points()[landmarks.nearest(w)])
            .collect();
        let walk = landmarks.walk();
        let n = landmarks.len();
        Ok(Self {
            config,
            bootstrap,
            walk,
            phase: Phase::Bootstrap,
            phase1_rewards: Vec::new(),
            position: 0,
            updates_here: 0,
            cycles: 0,
            landmark_reward: vec![None; n],
            previous_cycle_reward: vec![None; n],
            traversal_updates: 0,
            landmarks: Some(landmarks),
        })
    }

    /// Rebuilds the derived parts after deserialization.
    pub fn reattach(&mut self) -> Result<(), String> {
        self.landmarks = Some(Landmarks::from_spec(&self.config.landmarks)?);
        Ok(())
    }

    fn landmarks(&self) -> &Landmarks {
        // Set by `new` and `reattach`; an unattached schedule falls back to rebuilding.
        self.landmarks
            .as_ref()
            .expect("MoccSchedule used before reattach()")
    }

    /// The phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The landmarks.
    pub fn points(&self) -> &[Objective] {
        self.landmarks().points()
    }

    /// Index of the current landmark (phase 2).
    pub fn current_landmark(&self) -> usize {
        self.walk[self.position]
    }

    /// Position in the walk cycle.
    pub fn walk_position(&self) -> usize {
        self.position
    }

    /// Completed walk cycles.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// The latest reward measured at each landmark.
    pub fn landmark_rewards(&self) -> &[Option<f64>] {
        &self.landmark_reward
    }

    /// Whether training can stop.
    pub fn converged(&self) -> bool {
        self.phase == Phase::Converged
    }

    /// The objective of each of `n` envs for the next rollout.
    pub fn assignments(&self, n: usize) -> Vec<Objective> {
        match self.phase {
            Phase::Bootstrap => (0..n)
                .map(|i| self.bootstrap[i % self.bootstrap.len()])
                .collect(),
            Phase::Traversal | Phase::Converged => {
                let current = self.current_landmark();
                let points = self.landmarks().points();
                let neighbours = self.landmarks().neighbours(current);
                let mixed = if neighbours.is_empty() {
                    0
                } else {
                    ((n as f64) * self.config.phase2.neighbour_mix).floor() as usize
                };
                let replayed = ((n as f64) * self.config.phase2.landmark_replay).floor() as usize;
                let walkers = n - mixed - replayed;
                (0..n)
                    .map(|i| {
                        if i < walkers {
                            points[current]
                        } else if i < walkers + mixed {
                            points[neighbours[(i - walkers) % neighbours.len()]]
                        } else {
                            points[self.replayed_landmark(i - walkers - mixed, replayed)]
                        }
                    })
                    .collect()
            }
        }
    }

    /// The landmark replay env `k` of `replayed` trains on in this update: consecutive updates
    /// take consecutive blocks of the landmark list, so each landmark recurs every
    /// `ceil(omega / replayed)` updates.
    fn replayed_landmark(&self, k: usize, replayed: usize) -> usize {
        let l = self.landmarks().len();
        ((self.traversal_updates as usize % l) * replayed + k) % l
    }

    /// Folds in one update's mean per-step reward of the envs that trained on each objective.
    pub fn observe(&mut self, rewards: &[(Objective, f64)]) {
        match self.phase {
            Phase::Bootstrap => {
                let mean = rewards.iter().map(|r| r.1).sum::<f64>() / rewards.len().max(1) as f64;
                self.phase1_rewards.push(mean);
                if self.bootstrap_converged() {
                    self.phase = Phase::Traversal;
                }
            }
            Phase::Traversal => {
                self.traversal_updates += 1;
                let current = self.current_landmark();
                let w = self.points()[current];
                let here: Vec<f64> = rewards
                    .iter()
                    .filter(|(o, _)| *o == w)
                    .map(|r| r.1)
                    .collect();
                if !here.is_empty() {
                    self.landmark_reward[current] =
                        Some(here.iter().sum::<f64>() / here.len() as f64);
                }
                self.updates_here += 1;
                if self.updates_here >= self.updates_at(self.position) {
                    self.advance();
                }
            }
            Phase::Converged => {}
        }
    }

    /// Updates spent at walk position `p`: landmarks the cycle passes once (the ends of the
    /// back-and-forth walk) get the share of those it passes twice, so every landmark trains
    /// equally per cycle.
    fn updates_at(&self, p: usize) -> u64 {
        let visits = |l: usize| self.walk.iter().filter(|&&x| x == l).count().max(1);
        let most = self.walk.iter().map(|&l| visits(l)).max().unwrap_or(1);
        self.config.phase2.updates_per_landmark * (most / visits(self.walk[p])) as u64
    }

    fn bootstrap_converged(&self) -> bool {
        let r = &self.phase1_rewards;
        let w = self.config.phase1.window;
        if r.len() as u64 >= self.config.phase1.max_updates {
            return true;
        }
        if r.len() < 2 * w {
            return false;
        }
        let last = r[r.len() - w..].iter().sum::<f64>() / w as f64;
        let before = r[r.len() - 2 * w..r.len() - w].iter().sum::<f64>() / w as f64;
        relative_change(before, last) < self.config.phase1.threshold
    }

    fn advance(&mut self) {
        self.updates_here = 0;
        self.position += 1;
        if self.position == self.walk.len() {
            self.position = 0;
            self.cycles += 1;
            let all_converged = self.cycles >= 2
                && self
                    .landmark_reward
                    .iter()
                    .zip(&self.previous_cycle_reward)
                    .all(|(now, before)| match (now, before) {
                        (Some(a), Some(b)) => {
                            relative_change(*b, *a) < self.config.phase2.threshold
                        }
                        _ => false,
                    });
            self.previous_cycle_reward = self.landmark_reward.clone();
            if all_converged {
                self.phase = Phase::Converged;
            }
        }
    }
}

fn relative_change(before: f64, now: f64) -> f64 {
    (now - before).abs() / before.abs().max(1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(omega: usize) -> MoccConfig {
        MoccConfig {
            landmarks: LandmarkSpec::Omega(omega),
            bootstrap: None,
            phase1: BootstrapConfig {
                max_updates: 100,
                window: 2,
                threshold: 0.01,
            },
            phase2: TraversalConfig::default(),
        }
    }

    #[test]
    fn bootstrap_splits_envs_then_stops_on_a_plateau() {
        let mut s = MoccSchedule::new(config(36)).unwrap();
        let a = s.assignments(6);
        assert_eq!(a[0], [0.6, 0.3, 0.1]);
        assert_eq!(a[1], [0.1, 0.6, 0.3]);
        assert_eq!(a[3], a[0]);
        // Improving rewards keep phase 1 going; a plateau ends it.
        for r in [0.1, 0.2, 0.3, 0.4] {
            s.observe(&[(a[0], r)]);
            assert_eq!(s.phase(), Phase::Bootstrap);
        }
        s.observe(&[(a[0], 0.5)]);
        s.observe(&[(a[0], 0.5)]);
        s.observe(&[(a[0], 0.5)]);
        assert_eq!(
            s.phase(),
            Phase::Bootstrap,
            "window [0.5,0.5] vs [0.4,0.5]: 11% change"
        );
        s.observe(&[(a[0], 0.5)]);
        assert_eq!(s.phase(), Phase::Traversal);
    }

    #[test]
    fn traversal_walks_neighbours_and_converges_after_a_stable_cycle() {
        let mut cfg = config(6);
        cfg.phase1.max_updates = 1;
        let mut s = MoccSchedule::new(cfg).unwrap();
        s.observe(&[([0.5, 0.25, 0.25], 1.0)]);
        assert_eq!(s.phase(), Phase::Traversal);
        let mut visited = Vec::new();
        let mut steps = 0;
        while !s.converged() && steps < 1000 {
            let w = s.assignments(4)[0];
            let here = s.current_landmark();
            if visited.last() != Some(&here) {
                visited.push(here);
            }
            // A reward that stops changing after the first cycle.
            let r = if s.cycles() == 0 {
                0.5 + steps as f64 * 0.01
            } else {
                0.9
            };
            s.observe(&[(w, r)]);
            steps += 1;
        }
        assert!(s.converged());
        let l = Landmarks::grid(5);
        for pair in visited.windows(2) {
            assert!(l.are_neighbours(pair[0], pair[1]), "{pair:?}");
        }
        // Cycle 1 measures ~0.5; cycle 2 measures 0.9 (a change: not converged); cycle 3
        // measures 0.9 again (converged).
        assert_eq!(s.cycles(), 3);
        assert!(s.landmark_rewards().iter().all(|r| *r == Some(0.9)));
    }

    /// A schedule for `cfg` past its one bootstrap update, at the start of the walk.
    fn walking(mut cfg: MoccConfig) -> MoccSchedule {
        cfg.phase1.max_updates = 1;
        let mut s = MoccSchedule::new(cfg).unwrap();
        s.observe(&[([0.6, 0.3, 0.1], 0.0)]);
        s
    }

    #[test]
    fn neighbour_mix_assigns_neighbours_to_some_envs() {
        let mut cfg = config(36);
        cfg.phase2.neighbour_mix = 0.25;
        let s = walking(cfg);
        let a = s.assignments(8);
        let current = s.points()[s.current_landmark()];
        assert_eq!(a.iter().filter(|w| **w == current).count(), 6);
        let l = Landmarks::grid(10);
        for w in &a[6..] {
            let i = l.nearest(w);
            assert!(l.are_neighbours(i, s.current_landmark()));
        }
    }

    #[test]
    fn landmark_replay_covers_every_landmark_while_the_walk_goes_on() {
        let mut cfg = config(36);
        cfg.phase2.landmark_replay = 0.5;
        let mut s = walking(cfg);
        let l = Landmarks::grid(10);
        let mut seen = vec![0usize; l.len()];
        // 8 replay envs over 36 landmarks: 9 updates replay each landmark exactly twice.
        for _ in 0..9 {
            let a = s.assignments(16);
            let current = s.points()[s.current_landmark()];
            assert!(
                a[..8].iter().all(|w| *w == current),
                "walkers stay on the walk"
            );
            for w in &a[8..] {
                seen[l.nearest(w)] += 1;
            }
            s.observe(&[(current, 0.5)]);
        }
        assert!(seen.iter().all(|&c| c == 2), "{seen:?}");
    }

    #[test]
    fn serde_round_trip_keeps_the_position() {
        let mut cfg = config(10);
        cfg.phase1.max_updates = 1;
        let mut s = MoccSchedule::new(cfg).unwrap();
        s.observe(&[([0.6, 0.2, 0.2], 0.3)]);
        for _ in 0..5 {
            let w = s.assignments(1)[0];
            s.observe(&[(w, 0.4)]);
        }
        let json = serde_json::to_string(&s).unwrap();
        let mut back: MoccSchedule = serde_json::from_str(&json).unwrap();
        back.reattach().unwrap();
        assert_eq!(back, s);
        assert_eq!(back.assignments(3), s.assignments(3));
    }

    #[test]
    fn bad_configs_name_the_field() {
        let mut c = config(7);
        assert!(MoccSchedule::new(c.clone())
            .unwrap_err()
            .contains("mocc.landmarks.omega"));
        c.landmarks = LandmarkSpec::Omega(6);
        c.phase2.neighbour_mix = 1.5;
        assert!(MoccSchedule::new(c.clone())
            .unwrap_err()
            .contains("neighbour_mix"));
        c.phase2.neighbour_mix = 0.5;
        c.phase2.landmark_replay = 0.5;
        assert!(MoccSchedule::new(c)
            .unwrap_err()
            .contains("mocc.phase2.landmark_replay"));
    }
}
