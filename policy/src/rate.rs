//! Aurora's rate-update rule: multiplicative steps scaled by `delta_scale`, then clamped;
//! optionally with binomial increases that grow slower than the rate, so that every increase
//! flows which read the same queue share narrows the ratio of their rates.

use crate::error::{invalid, RateError};
use crate::mode_switch::ModeSwitch;
use crate::probe::ProbeRtt;
use crate::startup::Startup;
use crate::window_scale::WindowScale;
use serde::{Deserialize, Serialize};

/// The highest rate any rule may be configured to reach (packets/s): 12 Gbit/s of 1500-byte
/// packets, the simulator's limit too. Beyond it a sender's packets would be spaced below the
/// clock's resolution and simulated time would stand still.
pub const MAX_RATE_PPS: f64 = 1e6;

/// `d = delta_scale * a`; `rate *= 1 + d` when `d >= 0`, else `rate /= 1 - d`; then clamp.
/// With [`BinomialIncrease`] an increase is `rate * d * (reference / rate)^k` instead.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionRule {
    /// Scale applied to the action (Aurora: 0.025).
    #[serde(default = "default_delta_scale")]
    pub delta_scale: f64,
    /// Lowest rate the rule produces, packets/s (Aurora: 40).
    #[serde(default = "default_min_rate")]
    pub min_rate_pps: f64,
    /// Highest rate the rule produces, packets/s (Aurora: 1000).
    #[serde(default = "default_max_rate")]
    pub max_rate_pps: f64,
    /// Increases that grow as `rate^(1 - k)` (absent: multiplicative, Aurora's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binomial_increase: Option<BinomialIncrease>,
    /// Base-RTT probes between decisions (absent: none, Aurora's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_rtt: Option<ProbeRtt>,
    /// Copa's mode switch between an export's cooperative and competitive policies (absent:
    /// one policy). It needs `probe_rtt`: a probe that never sees the path turns the sender
    /// competitive. Training takes no switch; `mocc pair` writes one into an export.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode_switch: Option<ModeSwitch>,
    /// A startup phase before the agent's first decision: the rate doubles every round trip
    /// until the path is full (absent: the agent starts at the start rate, Aurora's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup: Option<Startup>,
    /// Orca's action: the sender runs Cubic and each action scales Cubic's window instead of
    /// stepping a rate (absent: the action steps the rate, Aurora's). An action grows the
    /// window to no more than `max_rate_pps` over the smoothed RTT (Cubic's own growth is not
    /// bounded); it takes none of the rate rule's parts (binomial increases, probes, the mode
    /// switch, startup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_scale: Option<WindowScale>,
}

/// The increase of a binomial rule (Bansal and Balakrishnan, "Binomial congestion control
/// algorithms", INFOCOM 2001): a positive step `d` raises the rate by
/// `rate * d * (reference_pps / rate)^k`; decreases stay multiplicative. With Aurora's rule
/// (`k = 0`) two flows that take the same actions keep their rates' ratio forever, so whichever
/// flow holds more of a link keeps it. With `k > 0` the slower flow's increases are the larger
/// fraction of its rate, and the ratio shrinks with every increase the two share (Chiu and Jain,
/// 1989). At `reference_pps` a step is Aurora's; below it larger, above it smaller.
///
/// Without a bound the increase shrinks without end as the rate grows: at 60,000 packets/s
/// (720 Mbit/s) with `k = 0.5` and a reference of 300 it is 0.07 of Aurora's, and a flow
/// that has to climb after a bandwidth step needs minutes. `multiplicative_above_pps` stops
/// the shrinking there: above it an increase is the fraction of the rate it is at that
/// rate, so the rule is scale-free on fast links (the observation is made of ratios too) and
/// binomial where flows share a link at lower rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BinomialIncrease {
    /// The increase exponent `k`, in (0, 1]: 1 is an additive increase of
    /// `d * reference_pps`.
    pub k: f64,
    /// Rate at which an increase equals Aurora's multiplicative one (packets/s, > 0).
    pub reference_pps: f64,
    /// Above this rate (packets/s, >= `reference_pps`) an increase is multiplicative again,
    /// by `d * (reference_pps / multiplicative_above_pps)^k` (absent: binomial at every rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiplicative_above_pps: Option<f64>,
}

impl BinomialIncrease {
    /// Checks the parameters; errors name the field under `binomial_increase`.
    fn validate(&self) -> Result<(), RateError> {
        if !(self.k > 0.0 && self.k <= 1.0) {
            return invalid(
                "binomial_increase.k",
                format!("must lie in (0, 1] (got {})", self.k),
            );
        }
        if !(self.reference_pps.is_finite() && self.reference_pps > 0.0) {
            return invalid(
                "binomial_increase.reference_pps",
                format!("must be finite and > 0 (got {})", self.reference_pps),
            );
        }
        if let Some(above) = self.multiplicative_above_pps {
            if !(above.is_finite() && above >= self.reference_pps) {
                return invalid(
                    "binomial_increase.multiplicative_above_pps",
                    format!(
                        "must be finite and >= reference_pps {} (got {above})",
                        self.reference_pps
                    ),
                );
            }
        }
        Ok(())
    }

    /// The rate after a positive step `delta` from `rate_pps` (> 0). The expression is the
    /// one the shipped policies were trained with (the same bits); an infinite rate stays
    /// infinite, and where `reference / rate` overflows with no step (`0 * inf`) the rate stays.
    fn raise(&self, rate_pps: f64, delta: f64) -> f64 {
        if rate_pps.is_infinite() {
            return rate_pps;
        }
        let scaled_from = match self.multiplicative_above_pps {
            Some(above) if rate_pps > above => above,
            _ => rate_pps,
        };
        let next = rate_pps + rate_pps * delta * (self.reference_pps / scaled_from).powf(self.k);
        if next.is_nan() {
            rate_pps
        } else {
            next
        }
    }
}

fn default_delta_scale() -> f64 {
    0.025
}
fn default_min_rate() -> f64 {
    40.0
}
fn default_max_rate() -> f64 {
    1000.0
}

impl Default for ActionRule {
    fn default() -> Self {
        Self {
            delta_scale: default_delta_scale(),
            min_rate_pps: default_min_rate(),
            max_rate_pps: default_max_rate(),
            binomial_increase: None,
            probe_rtt: None,
            mode_switch: None,
            startup: None,
            window_scale: None,
        }
    }
}

impl ActionRule {
    /// Checks the parameters; errors name the field.
    pub fn validate(&self) -> Result<(), RateError> {
        if !(self.delta_scale.is_finite() && self.delta_scale > 0.0) {
            return invalid(
                "delta_scale",
                format!("must be > 0 (got {})", self.delta_scale),
            );
        }
        if !(self.min_rate_pps > 0.0 && self.min_rate_pps <= MAX_RATE_PPS) {
            return invalid(
                "min_rate_pps",
                format!(
                    "must lie in (0, {MAX_RATE_PPS}] (got {})",
                    self.min_rate_pps
                ),
            );
        }
        if !(self.max_rate_pps >= self.min_rate_pps && self.max_rate_pps <= MAX_RATE_PPS) {
            return invalid(
                "max_rate_pps",
                format!(
                    "must lie in [min_rate_pps {}, {MAX_RATE_PPS}] (got {})",
                    self.min_rate_pps, self.max_rate_pps
                ),
            );
        }
        if let Some(b) = &self.binomial_increase {
            b.validate()?;
        }
        if let Some(p) = &self.probe_rtt {
            p.validate()?;
        }
        if let Some(s) = &self.startup {
            s.validate()?;
        }
        if let Some(w) = &self.window_scale {
            w.validate()?;
            self.check_window_scale_alone()?;
        }
        match (&self.mode_switch, &self.probe_rtt) {
            (Some(_), None) => invalid(
                "mode_switch",
                "needs probe_rtt (a probe that keeps a queue is what turns the sender \
                 competitive)"
                    .to_string(),
            ),
            (Some(m), Some(_)) => m.validate(),
            (None, _) => Ok(()),
        }
    }

    /// A window-scaling rule has no rate rule to extend: each rate part beside it is named.
    fn check_window_scale_alone(&self) -> Result<(), RateError> {
        let parts = [
            ("binomial_increase", self.binomial_increase.is_some()),
            ("probe_rtt", self.probe_rtt.is_some()),
            ("mode_switch", self.mode_switch.is_some()),
            ("startup", self.startup.is_some()),
        ];
        match parts.iter().find(|(_, set)| *set) {
            Some((field, _)) => invalid(
                field,
                "is a part of the rate rule; window_scale (Orca: Cubic underneath) takes none"
                    .to_string(),
            ),
            None => Ok(()),
        }
    }

    /// Whether an action scales Cubic's window ([`WindowScale`]) rather than the rate.
    pub fn scales_window(&self) -> bool {
        self.window_scale.is_some()
    }

    /// The factor `action` multiplies Cubic's window by ([`WindowScale::factor`] with this
    /// rule's `delta_scale`); `None` for a rule that steps the rate.
    pub fn window_factor(&self, action: f64) -> Option<f64> {
        self.window_scale
            .map(|w| w.factor(self.delta_scale, action))
    }

    /// The rate a learned sender paces its next MI at when the agent's rate is
    /// `agent_rate_pps`: that rate, or in a base-RTT probe MI (`probing`) `probe_rtt.rate_fraction`
    /// of it, within the limits and never above the agent's rate.
    pub fn pacing_rate(&self, agent_rate_pps: f64, probing: bool) -> f64 {
        match &self.probe_rtt {
            Some(p) if probing => self
                .clamp(agent_rate_pps * p.rate_fraction)
                .min(agent_rate_pps),
            _ => agent_rate_pps,
        }
    }

    /// Clamps a rate to the limits (NaN becomes the minimum).
    pub fn clamp(&self, rate_pps: f64) -> f64 {
        if rate_pps.is_nan() {
            self.min_rate_pps
        } else if rate_pps > self.max_rate_pps {
            self.max_rate_pps
        } else if rate_pps < self.min_rate_pps {
            self.min_rate_pps
        } else {
            rate_pps
        }
    }

    /// The next rate after action `action`. A NaN action leaves the rate unchanged (then clamped);
    /// infinite actions saturate at the limits.
    pub fn apply(&self, rate_pps: f64, action: f64) -> f64 {
        let action = if action.is_nan() { 0.0 } else { action };
        let delta = action * self.delta_scale;
        let next = if delta >= 0.0 {
            match &self.binomial_increase {
                Some(b) if rate_pps > 0.0 => b.raise(rate_pps, delta),
                _ => rate_pps * (1.0 + delta),
            }
        } else {
            rate_pps / (1.0 - delta)
        };
        self.clamp(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hand_computed_steps() {
        let r = ActionRule::default();
        assert_eq!(r.apply(100.0, 0.0), 100.0);
        assert!((r.apply(100.0, 4.0) - 110.0).abs() < 1e-12);
        assert!((r.apply(110.0, -4.0) - 100.0).abs() < 1e-12);
        assert_eq!(r.apply(990.0, 10.0), 1000.0);
        assert_eq!(r.apply(41.0, -10.0), 40.0);
        assert_eq!(r.apply(100.0, f64::NAN), 100.0);
        assert_eq!(r.clamp(f64::NAN), 40.0);
        assert_eq!(r.apply(100.0, f64::INFINITY), 1000.0);
        assert_eq!(r.apply(100.0, f64::NEG_INFINITY), 40.0);
    }

    #[test]
    fn only_a_window_scaling_rule_gives_a_window_factor() {
        assert_eq!(ActionRule::default().window_factor(1.0), None);
        let orca = ActionRule {
            delta_scale: 2.0,
            window_scale: Some(WindowScale::default()),
            ..ActionRule::default()
        };
        assert_eq!(orca.window_factor(1.0), Some(4.0));
        assert_eq!(orca.window_factor(-0.5), Some(0.5));
    }

    fn binomial(k: f64, reference_pps: f64) -> ActionRule {
        ActionRule {
            max_rate_pps: 5000.0,
            binomial_increase: Some(BinomialIncrease {
                k,
                reference_pps,
                multiplicative_above_pps: None,
            }),
            ..ActionRule::default()
        }
    }

    #[test]
    fn a_probe_paces_at_the_fraction_of_the_agent_rate_within_the_limits() {
        let r = ActionRule {
            probe_rtt: Some(ProbeRtt::every(10.0)),
            ..ActionRule::default()
        };
        assert_eq!(r.pacing_rate(800.0, true), 200.0);
        assert_eq!(r.pacing_rate(800.0, false), 800.0);
        // A quarter of 100 pkt/s is below the 40 pkt/s floor; an agent below the floor (a
        // fixed-rate action) is not raised by its probe.
        assert_eq!(r.pacing_rate(100.0, true), 40.0);
        assert_eq!(r.pacing_rate(30.0, true), 30.0);
        assert_eq!(ActionRule::default().pacing_rate(800.0, true), 800.0);
        let bad = ActionRule {
            probe_rtt: Some(ProbeRtt {
                rate_fraction: 1.5,
                ..r.probe_rtt.expect("set above")
            }),
            ..r
        };
        assert_eq!(
            bad.validate()
                .map_err(|RateError::Invalid { field, .. }| field),
            Err("probe_rtt.rate_fraction")
        );
        let json = serde_json::to_string(&r).expect("serialize");
        assert_eq!(serde_json::from_str::<ActionRule>(&json).expect("parse"), r);
        assert!(!serde_json::to_string(&ActionRule::default())
            .expect("serialize")
            .contains("probe_rtt"));
    }

    #[test]
    fn a_mode_switch_needs_probes_and_reads_back() {
        let field = |r: ActionRule| {
            r.validate()
                .map_err(|RateError::Invalid { field, .. }| field)
        };
        let switch = ActionRule {
            mode_switch: Some(crate::ModeSwitch::default()),
            ..ActionRule::default()
        };
        assert_eq!(field(switch), Err("mode_switch"));
        let probed = ActionRule {
            probe_rtt: Some(ProbeRtt::every(3.0)),
            ..switch
        };
        assert_eq!(field(probed), Ok(()));
        let json = serde_json::to_string(&probed).expect("serialize");
        assert_eq!(
            serde_json::from_str::<ActionRule>(&json).expect("parse"),
            probed
        );
        let read: ActionRule =
            serde_json::from_str(r#"{"probe_rtt": {"interval_s": 3}, "mode_switch": {}}"#)
                .expect("parse");
        assert_eq!(read, probed);
        assert!(!serde_json::to_string(&ActionRule::default())
            .expect("serialize")
            .contains("mode_switch"));
    }

    #[test]
    fn binomial_increase_by_hand() {
        // k = 0.5, reference 400: from 100 pkt/s, action 4 (d = 0.1) adds
        // 100 * 0.1 * sqrt(400 / 100) = 20; from 1600 it adds 1600 * 0.1 * sqrt(1 / 4) = 80.
        let r = binomial(0.5, 400.0);
        assert!((r.apply(100.0, 4.0) - 120.0).abs() < 1e-9);
        assert!((r.apply(1600.0, 4.0) - 1680.0).abs() < 1e-9);
        // At the reference the step is Aurora's.
        assert!((r.apply(400.0, 4.0) - 440.0).abs() < 1e-9);
        // k = 1 is additive: d * reference at any rate.
        let additive = binomial(1.0, 400.0);
        assert!((additive.apply(100.0, 4.0) - 140.0).abs() < 1e-9);
        assert!((additive.apply(1600.0, 4.0) - 1640.0).abs() < 1e-9);
        // Decreases stay multiplicative; limits and NaN as before.
        assert!((r.apply(110.0, -4.0) - 100.0).abs() < 1e-12);
        assert_eq!(r.apply(4900.0, 10.0), 5000.0);
        assert_eq!(r.apply(100.0, f64::NAN), 100.0);
        assert_eq!(r.apply(100.0, f64::INFINITY), 5000.0);
        // At the extremes: an infinite rate stays at the limit, a tiny one with no step stays.
        assert_eq!(r.apply(f64::INFINITY, 1.0), 5000.0);
        assert_eq!(additive.apply(f64::INFINITY, 1.0), 5000.0);
        assert_eq!(r.apply(1e-310, 0.0), 40.0);
        let b = r.binomial_increase.unwrap();
        assert_eq!(b.raise(1e-310, 0.0), 1e-310);
        assert_eq!(b.raise(f64::INFINITY, 0.1), f64::INFINITY);
    }

    #[test]
    fn above_the_bound_increases_are_multiplicative_by_hand() {
        // k = 0.5, reference 300, multiplicative above 1200: the factor there is
        // sqrt(300 / 1200) = 0.5, so action 4 (d = 0.1) adds 5% of any rate above 1200.
        let r = ActionRule {
            max_rate_pps: 100_000.0,
            binomial_increase: Some(BinomialIncrease {
                k: 0.5,
                reference_pps: 300.0,
                multiplicative_above_pps: Some(1200.0),
            }),
            ..ActionRule::default()
        };
        assert!((r.apply(4800.0, 4.0) - 5040.0).abs() < 1e-9);
        assert!((r.apply(60_000.0, 4.0) - 63_000.0).abs() < 1e-6);
        // At and below the bound the binomial step: from 1200, 1200 * 0.1 * 0.5 = 60; from
        // 300, Aurora's 10%.
        assert!((r.apply(1200.0, 4.0) - 1260.0).abs() < 1e-9);
        assert!((r.apply(300.0, 4.0) - 330.0).abs() < 1e-9);
        // Decreases stay multiplicative.
        assert!((r.apply(60_000.0, -4.0) - 60_000.0 / 1.1).abs() < 1e-6);
        // Without the bound the same rule would add 60,000 * 0.1 * sqrt(300 / 60,000).
        let unbounded = binomial(0.5, 300.0);
        let expected = 60_000.0 + 6000.0 * (300.0f64 / 60_000.0).sqrt();
        assert!((unbounded.apply(60_000.0, 4.0).min(5000.0) - expected.min(5000.0)).abs() < 1e-9);
        let json = serde_json::to_string(&r).expect("serialize");
        assert!(json.contains("\"multiplicative_above_pps\":1200"), "{json}");
        assert_eq!(serde_json::from_str::<ActionRule>(&json).expect("parse"), r);
    }

    #[test]
    fn binomial_increase_reads_and_old_rules_write_as_before() {
        let r: ActionRule = serde_json::from_str(
            r#"{"max_rate_pps": 5000, "binomial_increase": {"k": 0.5, "reference_pps": 400}}"#,
        )
        .unwrap();
        assert_eq!(r, binomial(0.5, 400.0));
        let back: ActionRule = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        let plain = serde_json::to_string(&ActionRule::default()).unwrap();
        assert!(!plain.contains("binomial"), "{plain}");
        let unbounded = serde_json::to_string(&r).unwrap();
        assert!(!unbounded.contains("multiplicative_above"), "{unbounded}");
        assert!(
            serde_json::from_str::<ActionRule>(r#"{"binomial_increase": {"k": 0.5}}"#).is_err()
        );
    }

    #[test]
    fn binomial_validation_names_fields() {
        for (rule, field) in [
            (binomial(0.0, 400.0), "binomial_increase.k"),
            (binomial(1.5, 400.0), "binomial_increase.k"),
            (binomial(f64::NAN, 400.0), "binomial_increase.k"),
            (binomial(0.5, 0.0), "binomial_increase.reference_pps"),
            (
                binomial(0.5, f64::INFINITY),
                "binomial_increase.reference_pps",
            ),
        ] {
            let err = rule.validate().unwrap_err().to_string();
            assert!(err.starts_with(field), "{err}");
        }
        assert!(binomial(1.0, 400.0).validate().is_ok());
        for above in [100.0, f64::NAN, f64::INFINITY] {
            let mut rule = binomial(0.5, 400.0);
            if let Some(b) = rule.binomial_increase.as_mut() {
                b.multiplicative_above_pps = Some(above);
            }
            let err = rule.validate().unwrap_err().to_string();
            assert!(
                err.starts_with("binomial_increase.multiplicative_above_pps"),
                "{err}"
            );
        }
    }

    #[test]
    fn validation_names_fields() {
        let bad = ActionRule {
            min_rate_pps: 0.0,
            ..ActionRule::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("min_rate_pps"));
        let bad = ActionRule {
            max_rate_pps: 10.0,
            ..ActionRule::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("max_rate_pps"));
    }

    proptest! {
        #[test]
        fn rate_stays_in_limits(rate in 1.0f64..5000.0, a in -1e6f64..1e6) {
            let r = ActionRule::default();
            let next = r.apply(rate, a);
            prop_assert!((40.0..=1000.0).contains(&next));
        }

        /// Two flows that take the same actions: Aurora's rule keeps their rates' ratio, a
        /// binomial increase shrinks it (and never reverses it) while a decrease keeps it.
        #[test]
        fn binomial_increases_pull_rates_together(
            slow in 50.0f64..1000.0,
            factor in 1.01f64..4.0,
            up in proptest::bool::ANY,
            size in 0.01f64..1.0,
            k in 0.05f64..=1.0,
        ) {
            let a = if up { size } else { -size };
            let fast = slow * factor;
            let before = fast / slow;
            let aurora = ActionRule { max_rate_pps: 1e6, ..ActionRule::default() };
            let after = aurora.apply(fast, a) / aurora.apply(slow, a);
            prop_assert!((after - before).abs() < 1e-9 * before);
            let rule = ActionRule { max_rate_pps: 1e6, ..binomial(k, 300.0) };
            let after = rule.apply(fast, a) / rule.apply(slow, a);
            if up {
                prop_assert!(after < before && after >= 1.0, "{before} -> {after}");
            } else {
                prop_assert!((after - before).abs() < 1e-9 * before);
            }
        }

        /// With the multiplicative bound an increase never widens two flows' ratio, never
        /// reverses it, and the rule stays continuous at the bound.
        #[test]
        fn bounded_increases_never_widen_ratios(
            slow in 50.0f64..50_000.0,
            factor in 1.0f64..4.0,
            size in 0.0f64..1.0,
            above in 300.0f64..10_000.0,
        ) {
            let mut rule = ActionRule { max_rate_pps: 1e6, ..binomial(0.5, 300.0) };
            if let Some(b) = rule.binomial_increase.as_mut() {
                b.multiplicative_above_pps = Some(above);
            }
            let fast = slow * factor;
            let after = rule.apply(fast, size) / rule.apply(slow, size);
            prop_assert!(after <= factor * (1.0 + 1e-12) && after >= 1.0 - 1e-12, "{factor} -> {after}");
            let below = rule.apply(above * (1.0 - 1e-12), size);
            let at = rule.apply(above * (1.0 + 1e-12), size);
            prop_assert!((at - below).abs() < 1e-6 * above);
        }

        #[test]
        fn opposite_actions_cancel(rate in 50.0f64..900.0, a in 0.0f64..1.0) {
            let r = ActionRule::default();
            let up = rate * (1.0 + a * r.delta_scale);
            prop_assume!(up <= 1000.0);
            let back = r.apply(r.apply(rate, a), -a);
            prop_assert!((back - rate).abs() < 1e-9 * rate);
        }
    }
}
