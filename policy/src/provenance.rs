//! Where an export came from, and the rule its weights learned under.
//!
//! A sender's rule ([`SenderRule`]) is everything besides the network that decides how an
//! action becomes packets on the wire: the rate rule's step, limits and binomial increase, its
//! base-RTT probes, the mode switch, the startup (the `action` section), and capacity trains
//! (`observation.capacity_trains`, which change what `peak delivery ratio` reads). An export
//! records the rule its weights were trained under (`provenance.trained_rule`) beside the rule
//! it runs under (`action`, `observation.capacity_trains`); every part where the two differ
//! must be declared in `provenance.untrained`, with who declared it and why. Loading refuses an
//! export that runs under an undeclared part: PCC-RL deployed with another action scale than
//! it trained with, and nothing said so.

use crate::baseline::CapacityTrains;
use crate::rate::ActionRule;
use serde::{Deserialize, Serialize};

/// Where the policy came from.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// Name of the training config (file stem).
    pub config_name: String,
    /// Path of the training config, as recorded by the run.
    pub config_path: String,
    /// Git revision of the code that trained it, if known.
    pub git_revision: Option<String>,
    /// The checkpoint exported.
    pub checkpoint: String,
    /// Env steps of training.
    pub env_steps: u64,
    /// The tool that wrote the export, e.g. `mocc 0.1.0 (rev ...)`.
    pub exported_by: String,
    /// The rule the weights were trained under (absent in exports written before it was
    /// recorded: nothing is then known of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trained_rule: Option<SenderRule>,
    /// The parts of the rule this export runs under that training did not use, each declared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untrained: Vec<UntrainedPart>,
    /// The recipe that built the export, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe: Option<RecipeRef>,
}

/// The rule a sender runs under, besides its network: the `action` section of `policy.json`
/// and `observation.capacity_trains`, under the same keys as there.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SenderRule {
    /// The rate rule with its probes, mode switch and startup.
    pub action: ActionRule,
    /// What of the observation belongs to the rule.
    #[serde(default, skip_serializing_if = "RuleObservation::is_empty")]
    pub observation: RuleObservation,
}

/// The part of `observation` that is the sender's rule: capacity trains.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleObservation {
    /// Capacity trains (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_trains: Option<CapacityTrains>,
}

impl RuleObservation {
    fn is_empty(&self) -> bool {
        self.capacity_trains.is_none()
    }
}

/// The parts of a [`SenderRule`], each named by the `policy.json` field that holds it.
pub const RULE_PARTS: [&str; 9] = [
    "action.delta_scale",
    "action.min_rate_pps",
    "action.max_rate_pps",
    "action.binomial_increase",
    "action.probe_rtt",
    "action.mode_switch",
    "action.startup",
    "action.window_scale",
    "observation.capacity_trains",
];

impl SenderRule {
    /// The rule of `action` with `capacity_trains`.
    pub fn new(action: ActionRule, capacity_trains: Option<CapacityTrains>) -> Self {
        Self {
            action,
            observation: RuleObservation { capacity_trains },
        }
    }

    /// Its capacity trains.
    pub fn capacity_trains(&self) -> Option<CapacityTrains> {
        self.observation.capacity_trains
    }

    /// The parts where `self` and `other` differ, in [`RULE_PARTS`] order.
    pub fn differing_parts(&self, other: &SenderRule) -> Vec<&'static str> {
        let (a, b) = (&self.action, &other.action);
        let differs = [
            a.delta_scale != b.delta_scale,
            a.min_rate_pps != b.min_rate_pps,
            a.max_rate_pps != b.max_rate_pps,
            a.binomial_increase != b.binomial_increase,
            a.probe_rtt != b.probe_rtt,
            a.mode_switch != b.mode_switch,
            a.startup != b.startup,
            a.window_scale != b.window_scale,
            self.capacity_trains() != other.capacity_trains(),
        ];
        RULE_PARTS
            .iter()
            .zip(differs)
            .filter(|(_, d)| *d)
            .map(|(p, _)| *p)
            .collect()
    }
}

/// A part of the rule an export runs under that its weights were not trained with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UntrainedPart {
    /// The part ([`RULE_PARTS`]).
    pub part: String,
    /// Who declared it: a recipe file, `mocc pair`, `mocc eval --rule FILE`.
    pub declared_by: String,
    /// Why the export runs under it.
    pub why: String,
}

/// The recipe run that built an export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecipeRef {
    /// The recipe file, as given.
    pub file: String,
    /// SHA-256 of the recipe as run: its file and the `--set` overrides.
    pub sha256: String,
    /// The recipe's seed (each stage's is derived from it).
    pub seed: u64,
    /// The `--set` overrides it ran with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sets: Vec<String>,
}

impl Provenance {
    /// Declares `part` untrained (replacing an earlier declaration of it).
    pub fn declare_untrained(&mut self, part: &str, declared_by: &str, why: &str) {
        self.untrained.retain(|u| u.part != part);
        self.untrained.push(UntrainedPart {
            part: part.to_string(),
            declared_by: declared_by.to_string(),
            why: why.to_string(),
        });
    }
}

/// Checks the rule an export runs under against its provenance `p`: every part that differs
/// from the trained rule is declared, and every declaration names a part that differs. Errors
/// are (field, message).
pub(crate) fn check_rule(p: &Provenance, rule: SenderRule) -> Result<(), (String, String)> {
    for (i, u) in p.untrained.iter().enumerate() {
        if !RULE_PARTS.contains(&u.part.as_str()) {
            return Err((
                format!("provenance.untrained[{i}].part"),
                format!(
                    "{:?} is no part of a sender's rule (one of {})",
                    u.part,
                    RULE_PARTS.join(", ")
                ),
            ));
        }
        if p.untrained[..i].iter().any(|o| o.part == u.part) {
            return Err((
                format!("provenance.untrained[{i}].part"),
                format!("{} is declared twice", u.part),
            ));
        }
    }
    let Some(trained) = &p.trained_rule else {
        return Ok(());
    };
    let differing = trained.differing_parts(&rule);
    if let Some(part) = differing
        .iter()
        .find(|d| !p.untrained.iter().any(|u| u.part == **d))
    {
        return Err((
            (*part).to_string(),
            "differs from provenance.trained_rule, the rule the weights were trained under, and \
             provenance.untrained does not declare it: the export would run under a rule its \
             weights never saw"
                .to_string(),
        ));
    }
    if let Some((i, u)) = p
        .untrained
        .iter()
        .enumerate()
        .find(|(_, u)| !differing.contains(&u.part.as_str()))
    {
        return Err((
            format!("provenance.untrained[{i}]"),
            format!(
                "declares {} untrained, but it is the trained rule's: nothing to declare",
                u.part
            ),
        ));
    }
    Ok(())
}

/// Applies a JSON merge patch (RFC 7386) to `target`: objects merge key by key, `null`
/// removes a key, anything else replaces.
pub fn merge_patch(target: &mut serde_json::Value, patch: &serde_json::Value) {
    let serde_json::Value::Object(fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = serde_json::Value::Object(Default::default());
    }
    let Some(map) = target.as_object_mut() else {
        return;
    };
    for (key, value) in fields {
        if value.is_null() {
            map.remove(key);
        } else {
            merge_patch(
                map.entry(key.clone()).or_insert(serde_json::Value::Null),
                value,
            );
        }
    }
}

/// `rule` with `overlay` (a partial [`SenderRule`], keyed as `policy.json` is: `{action:
/// {startup: {}}, observation: {capacity_trains: null}}`) merged in, checked. Errors name the
/// field.
pub fn overlay_rule(rule: &SenderRule, overlay: &serde_json::Value) -> Result<SenderRule, String> {
    let mut tree = serde_json::to_value(rule).map_err(|e| e.to_string())?;
    merge_patch(&mut tree, overlay);
    let merged: SenderRule = serde_json::from_value(tree).map_err(|e| e.to_string())?;
    merged
        .action
        .validate()
        .map_err(|e| format!("action.{e}"))?;
    if let Some(t) = &merged.capacity_trains() {
        t.validate()
            .map_err(|(field, message)| format!("{field}: {message}"))?;
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::startup::Startup;

    fn rule() -> SenderRule {
        SenderRule::new(ActionRule::default(), None)
    }

    #[test]
    fn parts_that_differ_are_named_in_order() {
        let a = rule();
        let mut b = rule();
        assert!(a.differing_parts(&b).is_empty());
        b.action.max_rate_pps = 5000.0;
        b.action.startup = Some(Startup::default());
        b.observation.capacity_trains = Some(CapacityTrains {
            packets: 3,
            fraction: 0.95,
            window_s: 2.0,
            ratio_exponent: 1.0,
        });
        assert_eq!(
            a.differing_parts(&b),
            [
                "action.max_rate_pps",
                "action.startup",
                "observation.capacity_trains"
            ]
        );
    }

    #[test]
    fn an_overlay_merges_and_removes() {
        let mut base = rule();
        base.action.startup = Some(Startup::default());
        let overlay = serde_json::json!({
            "action": {"max_rate_pps": 100000, "startup": null},
            "observation": {"capacity_trains": {"packets": 3, "fraction": 0.95, "window_s": 2}}
        });
        let merged = overlay_rule(&base, &overlay).unwrap();
        assert_eq!(merged.action.max_rate_pps, 100000.0);
        assert_eq!(merged.action.startup, None);
        assert_eq!(merged.capacity_trains().map(|t| t.packets), Some(3));
        assert_eq!(merged.action.delta_scale, base.action.delta_scale);
        let typo = overlay_rule(&base, &serde_json::json!({"action": {"max_rate": 1}}));
        assert!(typo.unwrap_err().contains("max_rate"));
        let bad = overlay_rule(&base, &serde_json::json!({"action": {"max_rate_pps": 1}}));
        assert!(bad.unwrap_err().contains("action.max_rate_pps"));
    }

    #[test]
    fn merge_patch_by_hand() {
        let mut t = serde_json::json!({"a": {"b": 1, "c": 2}, "d": 3});
        merge_patch(
            &mut t,
            &serde_json::json!({"a": {"b": null, "e": 4}, "d": [1]}),
        );
        assert_eq!(t, serde_json::json!({"a": {"c": 2, "e": 4}, "d": [1]}));
    }
}
