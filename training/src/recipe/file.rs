//! The recipe file: its schema, parsed strictly, and the checks that need no training (stage
//! names, what each stage refers to, the order they run in).

use super::RecipeError;
use mocc_policy::{ModeSwitch, RULE_PARTS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A recipe: the stages that build a deployable export, the rule it runs under, and the suites
/// that judge it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecipeFile {
    /// The recipe's name. Its presence is what tells `mocc train` a recipe from a config.
    pub recipe: String,
    /// What the recipe builds, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about: Option<String>,
    /// The recipe's seed: each stage trains with a seed derived from it and the stage's name
    /// (`--set seed=N` replaces it).
    #[serde(default)]
    pub seed: u64,
    /// Overrides of every training stage's config, before each stage's own (`scenario.action.
    /// startup: {}` to train every stage under the startup the export deploys with).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, serde_json::Value>,
    /// The stages, each a training run, an export or a pair.
    pub stages: Vec<Stage>,
    /// The stage whose export is the recipe's (`DIR/export/`): an export or a pair.
    pub export: String,
    /// A partial rule merged into the final export's (`{action: {startup: {}}}`), e.g. to
    /// deploy a mechanism training did not use. Every part it changes must be declared in
    /// `untrained`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<serde_json::Value>,
    /// The parts of the final export's rule its weights were not trained with, each with why
    /// (`action.mode_switch: the switch joins two policies trained apart`). The recipe refuses
    /// to finish when its export runs under a part not named here, or names one it does not.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub untrained: BTreeMap<String, String>,
    /// The suites the export is judged on (`DIR/report.json`).
    #[serde(default)]
    pub validation: Validation,
}

/// The suites a recipe's export is judged on.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Validation {
    /// Suite files (relative to the recipe); their `targets:` make the report.
    #[serde(default)]
    pub suites: Vec<PathBuf>,
}

/// One stage of a recipe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// The stage's name: its folder under the recipe's output, and how other stages and
    /// `--set NAME.key=value` refer to it.
    pub name: String,
    /// Train a config (relative to the recipe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train: Option<PathBuf>,
    /// Overrides of the config's values (`ppo.learning_rate: 1e-4`), as `--set` gives them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, serde_json::Value>,
    /// Start the training run from this earlier training stage's weights (`mocc train
    /// --init`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<String>,
    /// Export this training stage's final checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<String>,
    /// Join two export stages into a paired export (`mocc pair`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<PairStage>,
}

/// A pair stage: the cooperative and competitive exports and the switch between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairStage {
    /// The export stage that decides by default.
    pub cooperative: String,
    /// The export stage that decides while a queue outlasts the probes.
    pub competitive: String,
    /// Copa's switch between them.
    #[serde(default)]
    pub mode_switch: ModeSwitch,
}

/// What a stage does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageKind {
    /// A training run.
    Train,
    /// An export of a training run.
    Export,
    /// A paired export of two exports.
    Pair,
}

impl StageKind {
    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            StageKind::Train => "a training stage",
            StageKind::Export => "an export stage",
            StageKind::Pair => "a pair stage",
        }
    }
}

impl Stage {
    /// What the stage does; errors when it says none or several (`field` names it).
    pub fn kind(&self, field: &str) -> Result<StageKind, String> {
        let kinds = [
            (self.train.is_some(), StageKind::Train),
            (self.export.is_some(), StageKind::Export),
            (self.pair.is_some(), StageKind::Pair),
        ];
        let given: Vec<StageKind> = kinds.iter().filter(|(g, _)| *g).map(|(_, k)| *k).collect();
        match given[..] {
            [k] => Ok(k),
            [] => Err(format!("{field}: give one of train, export or pair")),
            _ => Err(format!(
                "{field}: give one of train, export or pair, not several"
            )),
        }
    }

    /// The stages this one needs, with the kind each must be and the field naming it.
    fn needs(&self) -> Vec<(&str, StageKind, &'static str)> {
        let mut out = Vec::new();
        if let Some(i) = &self.init {
            out.push((i.as_str(), StageKind::Train, "init"));
        }
        if let Some(e) = &self.export {
            out.push((e.as_str(), StageKind::Train, "export"));
        }
        if let Some(p) = &self.pair {
            out.push((
                p.cooperative.as_str(),
                StageKind::Export,
                "pair.cooperative",
            ));
            out.push((
                p.competitive.as_str(),
                StageKind::Export,
                "pair.competitive",
            ));
        }
        out
    }
}

/// The most stages a recipe may hold.
pub const MAX_STAGES: usize = 64;

/// Names a stage's folder and `--set` prefix may not take: the recipe's own outputs.
const RESERVED: [&str; 5] = ["export", "validation", "seed", "report", "state"];

impl RecipeFile {
    /// Reads a recipe file (strictly: an unknown key is an error naming it).
    pub fn load(path: &Path) -> Result<Self, RecipeError> {
        let text = mocc_policy::error::read_text(path).map_err(|e| RecipeError::Io {
            path: e.path,
            source: e.source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses recipe text (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Self, RecipeError> {
        let tree: serde_json::Value =
            serde_saphyr::from_str(text).map_err(|e| RecipeError::Invalid {
                path: path.to_path_buf(),
                field: ".".into(),
                message: e.to_string(),
            })?;
        serde_path_to_error::deserialize(tree).map_err(|e| RecipeError::Invalid {
            path: path.to_path_buf(),
            field: e.path().to_string(),
            message: crate::config::plain_message(&e.inner().to_string()),
        })
    }

    /// The stages in the order they run: each after the stages it needs, otherwise in file
    /// order. Checks names, references, kinds and cycles; errors name the field.
    pub fn order(&self) -> Result<Vec<usize>, (String, String)> {
        if self.stages.is_empty() {
            return Err(("stages".into(), "at least one stage is required".into()));
        }
        if self.stages.len() > MAX_STAGES {
            return Err((
                "stages".into(),
                format!("at most {MAX_STAGES} (got {})", self.stages.len()),
            ));
        }
        let mut kinds = Vec::new();
        for (i, s) in self.stages.iter().enumerate() {
            let field = format!("stages[{i}]");
            check_name(&s.name).map_err(|m| (format!("{field}.name"), m))?;
            if self.stages[..i].iter().any(|o| o.name == s.name) {
                return Err((
                    format!("{field}.name"),
                    format!("{:?} names an earlier stage too", s.name),
                ));
            }
            let kind = s.kind(&field).map_err(|m| (field.clone(), m))?;
            if kind != StageKind::Train && (!s.set.is_empty() || s.init.is_some()) {
                return Err((
                    field,
                    "set and init belong to training stages (train:)".into(),
                ));
            }
            if s.set.contains_key("seed") || (i == 0 && self.set.contains_key("seed")) {
                return Err((
                    format!("{field}.set.seed"),
                    "the recipe's seed gives every stage its own (set `seed:` at the top, or \
                     --set seed=N)"
                        .into(),
                ));
            }
            kinds.push(kind);
        }
        let index = |name: &str| self.stages.iter().position(|s| s.name == name);
        for (i, s) in self.stages.iter().enumerate() {
            for (name, want, field) in s.needs() {
                let field = format!("stages[{i}].{field}");
                let Some(j) = index(name) else {
                    return Err((field, format!("no stage is named {name:?}")));
                };
                if kinds[j] != want {
                    return Err((
                        field,
                        format!(
                            "{name:?} is {}; this needs {}",
                            kinds[j].name(),
                            want.name()
                        ),
                    ));
                }
            }
        }
        match index(&self.export) {
            None => {
                return Err((
                    "export".into(),
                    format!("no stage is named {:?}", self.export),
                ))
            }
            Some(j) if kinds[j] == StageKind::Train => {
                return Err((
                    "export".into(),
                    format!(
                        "{:?} is a training stage; the recipe's export is an export or a pair \
                         stage",
                        self.export
                    ),
                ))
            }
            Some(_) => {}
        }
        for part in self.untrained.keys() {
            if !RULE_PARTS.contains(&part.as_str()) {
                return Err((
                    format!("untrained.{part}"),
                    format!(
                        "no part of a sender's rule (one of {})",
                        RULE_PARTS.join(", ")
                    ),
                ));
            }
        }
        self.topological(&index)
    }

    /// Each stage after the stages it needs (file order otherwise); a cycle is named.
    fn topological(
        &self,
        index: &dyn Fn(&str) -> Option<usize>,
    ) -> Result<Vec<usize>, (String, String)> {
        let n = self.stages.len();
        let needs: Vec<Vec<usize>> = self
            .stages
            .iter()
            .map(|s| {
                s.needs()
                    .iter()
                    .filter_map(|(name, _, _)| index(name))
                    .collect()
            })
            .collect();
        let mut done = vec![false; n];
        let mut order = Vec::with_capacity(n);
        while order.len() < n {
            let next = (0..n).find(|&i| !done[i] && needs[i].iter().all(|&j| done[j]));
            match next {
                Some(i) => {
                    done[i] = true;
                    order.push(i);
                }
                None => {
                    let start = (0..n).find(|&i| !done[i]).unwrap_or(0);
                    return Err((
                        format!("stages[{start}]"),
                        format!("a cycle: {}", self.cycle_from(start, &needs, &done)),
                    ));
                }
            }
        }
        Ok(order)
    }

    /// `a -> b -> a`: the cycle reached by following needs from stage `start` through the
    /// stages not yet placed.
    fn cycle_from(&self, start: usize, needs: &[Vec<usize>], done: &[bool]) -> String {
        let mut path = vec![start];
        let mut at = start;
        while let Some(&next) = needs[at].iter().find(|&&j| !done[j]) {
            if let Some(k) = path.iter().position(|&p| p == next) {
                let mut names: Vec<&str> = path[k..]
                    .iter()
                    .map(|&i| self.stages[i].name.as_str())
                    .collect();
                names.push(&self.stages[next].name);
                return names.join(" -> ");
            }
            path.push(next);
            at = next;
        }
        self.stages[start].name.clone()
    }
}

/// A stage name: a folder name and a `--set` prefix.
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !name.starts_with(['-', '_']);
    if !ok {
        return Err(format!(
            "{name:?}: use 1-64 letters, digits, '-' and '_', starting with a letter or digit"
        ));
    }
    if RESERVED.contains(&name) || name == "*" {
        return Err(format!(
            "{name:?} is reserved for the recipe's own outputs ({})",
            RESERVED.join(", ")
        ));
    }
    Ok(())
}

/// Whether YAML text is a recipe rather than a training config: a mapping with a `recipe:` key.
pub fn is_recipe_text(text: &str) -> bool {
    serde_saphyr::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.as_object().map(|m| m.contains_key("recipe")))
        .unwrap_or(false)
}
