//! A recipe resolved before anything trains: `--set` overrides applied, every stage's seed
//! derived, every training stage's config loaded and checked, every validation suite loaded,
//! and the identity that a resumed run must match.

use super::file::{RecipeFile, StageKind};
use super::RecipeError;
use crate::config::LoadedConfig;
use mocc_eval::suite::Suite;
use mocc_policy::export::sha256_hex;
use mocc_policy::provenance::overlay_rule;
use mocc_policy::SenderRule;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A recipe ready to run.
#[derive(Debug, Clone)]
pub struct RecipePlan {
    /// The recipe, `--set` overrides of pair stages applied.
    pub file: RecipeFile,
    /// The recipe file, as given.
    pub path: PathBuf,
    /// SHA-256 of the recipe file's bytes.
    pub file_sha256: String,
    /// The recipe's seed (`--set seed=N`, else the file's).
    pub seed: u64,
    /// The `--set` overrides, as given.
    pub sets: Vec<String>,
    /// Stage indices in the order they run.
    pub order: Vec<usize>,
    /// Each training stage's config (its `set:`, the command line's and its seed applied).
    pub configs: BTreeMap<String, LoadedConfig>,
    /// Each stage's seed.
    pub seeds: BTreeMap<String, u64>,
    /// The validation suites, with the name their outputs take.
    pub suites: Vec<PlannedSuite>,
    /// What decides the outputs: the recipe file, the overrides, the seed and every training
    /// stage's resolved config. A resumed run must have the same.
    pub identity: Identity,
}

/// A validation suite of a recipe.
#[derive(Debug, Clone)]
pub struct PlannedSuite {
    /// The file (relative paths joined to the recipe's folder).
    pub path: PathBuf,
    /// Its name: the file name without extension, the folder its outputs take.
    pub name: String,
    /// The suite.
    pub suite: Suite,
}

/// What a recipe run's outputs depend on, part by part, so that a refused resume says which
/// part differs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Identity {
    /// The recipe file, as given.
    pub recipe: String,
    /// SHA-256 of its bytes.
    pub recipe_sha256: String,
    /// The recipe's seed.
    pub seed: u64,
    /// The `--set` overrides.
    pub sets: Vec<String>,
    /// SHA-256 of each training stage's resolved config (its scenario inlined).
    pub stage_configs: BTreeMap<String, String>,
}

impl Identity {
    /// The first part in which `self` (a resumed run's) differs from `started` (what the run
    /// started with), in words.
    pub fn difference(&self, started: &Identity) -> Option<String> {
        if self.recipe_sha256 != started.recipe_sha256 {
            return Some(format!(
                "the recipe file differs from the one the run started with ({})",
                started.recipe
            ));
        }
        if self.seed != started.seed {
            return Some(format!(
                "seed {} differs from the run's seed {}",
                self.seed, started.seed
            ));
        }
        if self.sets != started.sets {
            return Some(format!(
                "the --set overrides {:?} differ from the run's {:?}",
                self.sets, started.sets
            ));
        }
        for (stage, sha) in &self.stage_configs {
            if started.stage_configs.get(stage) != Some(sha) {
                return Some(format!(
                    "stage {stage}'s config (or its scenario) changed since the run started"
                ));
            }
        }
        None
    }
}

/// The seed of stage `stage` in a recipe of seed `recipe_seed`: SplitMix64 of the seed mixed
/// with the stage name's FNV-1a hash, kept to 31 bits (so that it reads well and fits every
/// RNG that takes a seed).
pub fn stage_seed(recipe_seed: u64, stage: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in stage.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut z = (recipe_seed ^ h).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    z >> 33
}

impl RecipePlan {
    /// Reads the recipe at `path`, applies `sets` (`seed=N`, `STAGE.key=value`, `*.key=value`
    /// for every training stage) and checks everything that can be checked before training.
    pub fn load(path: &Path, sets: &[String]) -> Result<Self, RecipeError> {
        let bytes = mocc_policy::error::read_bytes(path, MAX_RECIPE_BYTES).map_err(|e| {
            RecipeError::Io {
                path: e.path,
                source: e.source,
            }
        })?;
        let text = String::from_utf8(bytes.clone()).map_err(|_| RecipeError::Invalid {
            path: path.to_path_buf(),
            field: ".".into(),
            message: "not UTF-8 text".into(),
        })?;
        let mut file = RecipeFile::parse(&text, path)?;
        let invalid = |(field, message): (String, String)| RecipeError::Invalid {
            path: path.to_path_buf(),
            field,
            message,
        };
        file.order().map_err(invalid)?;
        let (seed, stage_sets) = split_sets(&mut file, sets, path)?;
        let order = file.order().map_err(invalid)?;
        let base = path.parent().unwrap_or(Path::new("."));
        let mut configs = BTreeMap::new();
        let mut seeds = BTreeMap::new();
        let mut stage_configs = BTreeMap::new();
        for &i in &order {
            let stage = &file.stages[i];
            let s = stage_seed(seed, &stage.name);
            seeds.insert(stage.name.clone(), s);
            let Some(config) = &stage.train else {
                continue;
            };
            let mut overrides: Vec<String> = file
                .set
                .iter()
                .chain(&stage.set)
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            overrides.extend(stage_sets.get(&stage.name).cloned().unwrap_or_default());
            overrides.push(format!("seed={s}"));
            let config_path = joined(base, config);
            let in_stage = |e: crate::config::ConfigError| RecipeError::Stage {
                stage: stage.name.clone(),
                message: e.to_string(),
            };
            let loaded = LoadedConfig::load(&config_path, &overrides).map_err(in_stage)?;
            loaded.scenario().map_err(in_stage)?;
            let resolved = loaded.resolved().map_err(in_stage)?;
            let json = serde_json::to_vec(&resolved.config).map_err(|e| RecipeError::Stage {
                stage: stage.name.clone(),
                message: e.to_string(),
            })?;
            stage_configs.insert(stage.name.clone(), sha256_hex(&json));
            configs.insert(stage.name.clone(), loaded);
        }
        check_rule_plan(&file, &configs, path)?;
        let suites = load_suites(&file, base, path)?;
        let file_sha256 = sha256_hex(&bytes);
        let identity = Identity {
            recipe: path.display().to_string(),
            recipe_sha256: file_sha256.clone(),
            seed,
            sets: sets.to_vec(),
            stage_configs,
        };
        Ok(Self {
            file,
            path: path.to_path_buf(),
            file_sha256,
            seed,
            sets: sets.to_vec(),
            order,
            configs,
            seeds,
            suites,
            identity,
        })
    }

    /// The stage named `name`.
    pub fn stage(&self, name: &str) -> Option<&super::file::Stage> {
        self.file.stages.iter().find(|s| s.name == name)
    }

    /// What `recipe_dir` resolves a stage's folder to.
    pub fn stage_dir(out: &Path, stage: &str) -> PathBuf {
        out.join(stage)
    }
}

/// The rule a training stage's weights learn under: its scenario's `action` and capacity
/// trains.
fn trained_rule(config: &LoadedConfig) -> Option<SenderRule> {
    let scenario = config.scenario().ok()?;
    let c = scenario.config();
    Some(SenderRule::new(c.action, c.observation.capacity_trains))
}

/// Before training: the final export's rule as the stages will leave it (each half's trained
/// rule, the pair's switch, the recipe's `rule:` overlay) is valid, and the parts where it
/// differs from what the halves trained under are exactly the recipe's `untrained:`.
fn check_rule_plan(
    file: &RecipeFile,
    configs: &BTreeMap<String, LoadedConfig>,
    path: &Path,
) -> Result<(), RecipeError> {
    let stage = |name: &str| file.stages.iter().find(|s| s.name == name);
    // The training stage an export stage exports.
    let trained_by = |export: &str| -> Option<SenderRule> {
        let source = stage(export)?.export.as_deref()?;
        trained_rule(configs.get(source)?)
    };
    let Some(last) = stage(&file.export) else {
        return Ok(());
    };
    // (trained, deployed) rule of each half of the final export.
    let mut halves: Vec<(SenderRule, SenderRule)> = Vec::new();
    match &last.pair {
        Some(pair) => {
            let (Some(coop), Some(comp)) =
                (trained_by(&pair.cooperative), trained_by(&pair.competitive))
            else {
                return Ok(());
            };
            let mut deployed = coop;
            deployed.action.mode_switch = Some(pair.mode_switch);
            halves.push((coop, deployed));
            halves.push((comp, comp));
        }
        None => {
            let Some(rule) = trained_by(&last.name) else {
                return Ok(());
            };
            halves.push((rule, rule));
        }
    }
    let invalid = |field: &str, message: String| RecipeError::Invalid {
        path: path.to_path_buf(),
        field: field.into(),
        message,
    };
    if let Some(patch) = &file.rule {
        for (i, (_, deployed)) in halves.iter_mut().enumerate() {
            let merged = overlay_rule(deployed, patch).map_err(|m| invalid("rule", m))?;
            // The competitive half runs the overlay without the switch.
            *deployed = if i == 0 {
                merged
            } else {
                SenderRule {
                    action: mocc_policy::ActionRule {
                        mode_switch: None,
                        ..merged.action
                    },
                    ..merged
                }
            };
        }
    }
    let mut parts: BTreeSet<&str> = BTreeSet::new();
    for (trained, deployed) in &halves {
        parts.extend(trained.differing_parts(deployed));
    }
    let declared: BTreeSet<&str> = file.untrained.keys().map(String::as_str).collect();
    if let Some(part) = parts.difference(&declared).next() {
        return Err(invalid(
            "untrained",
            format!(
                "the export would run under {part}, which its weights are not trained with; \
                 declare it here with why (`{part}: ...`), or train under it"
            ),
        ));
    }
    if let Some(part) = declared.difference(&parts).next() {
        return Err(invalid(
            &format!("untrained.{part}"),
            format!(
                "the export would run under the {part} its weights are trained with: nothing \
                 to declare"
            ),
        ));
    }
    Ok(())
}

/// The largest recipe file read.
const MAX_RECIPE_BYTES: u64 = 1 << 20;

fn joined(base: &Path, p: &Path) -> PathBuf {
    if p.is_relative() {
        base.join(p)
    } else {
        p.to_path_buf()
    }
}

/// Splits `--set` overrides: `seed=N` sets the recipe's seed, `STAGE.key=value` is a training
/// stage's override (or changes a pair stage's field), `*.key=value` every training stage's.
/// Returns the seed and each training stage's overrides.
fn split_sets(
    file: &mut RecipeFile,
    sets: &[String],
    path: &Path,
) -> Result<(u64, BTreeMap<String, Vec<String>>), RecipeError> {
    let mut seed = file.seed;
    let mut per_stage: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let bad = |set: &str, message: String| RecipeError::Set(format!("{set}: {message}"));
    for set in sets {
        let Some((key, value)) = set.split_once('=') else {
            return Err(bad(set, "expected PATH=VALUE".into()));
        };
        let key = key.trim();
        if key == "seed" {
            seed = value
                .trim()
                .parse()
                .map_err(|_| bad(set, "seed: expected a whole number >= 0".into()))?;
            continue;
        }
        let Some((stage, rest)) = key.split_once('.') else {
            return Err(bad(
                set,
                format!(
                    "expected seed=N or STAGE.key=value (stages: {})",
                    stage_names(file)
                ),
            ));
        };
        if rest.split('.').next() == Some("seed") {
            return Err(bad(
                set,
                "the recipe's seed gives every stage its own: --set seed=N".into(),
            ));
        }
        let targets: Vec<usize> = if stage == "*" {
            (0..file.stages.len())
                .filter(|&i| file.stages[i].train.is_some())
                .collect()
        } else {
            match file.stages.iter().position(|s| s.name == stage) {
                Some(i) => vec![i],
                None => {
                    return Err(bad(
                        set,
                        format!(
                            "no stage is named {stage:?} (stages: {})",
                            stage_names(file)
                        ),
                    ))
                }
            }
        };
        for i in targets {
            let s = &mut file.stages[i];
            match s.kind("stage").map_err(|m| bad(set, m))? {
                StageKind::Train => per_stage
                    .entry(s.name.clone())
                    .or_default()
                    .push(format!("{rest}={value}")),
                StageKind::Pair => set_pair_field(s, rest, value, path).map_err(|m| bad(set, m))?,
                StageKind::Export => {
                    return Err(bad(
                        set,
                        format!("{} is an export stage, which has nothing to set", s.name),
                    ))
                }
            }
        }
    }
    Ok((seed, per_stage))
}

/// Applies `rest=value` to a pair stage's fields (`mode_switch.probe_after_s=8`), read back
/// strictly: a field the pair does not have is an error naming it.
fn set_pair_field(
    stage: &mut super::file::Stage,
    rest: &str,
    value: &str,
    path: &Path,
) -> Result<(), String> {
    let pair = stage.pair.as_ref().ok_or("not a pair stage")?;
    let mut tree = serde_json::to_value(pair).map_err(|e| e.to_string())?;
    crate::config::apply_override(&mut tree, &format!("{rest}={value}"))
        .map_err(|e| e.to_string())?;
    let pair = serde_path_to_error::deserialize(tree).map_err(|e| {
        format!(
            "{}: {} (a pair stage of {})",
            e.path(),
            e.inner(),
            path.display()
        )
    })?;
    stage.pair = Some(pair);
    Ok(())
}

fn stage_names(file: &RecipeFile) -> String {
    file.stages
        .iter()
        .map(|s| s.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Loads the validation suites; each must load and their names be distinct.
fn load_suites(
    file: &RecipeFile,
    base: &Path,
    path: &Path,
) -> Result<Vec<PlannedSuite>, RecipeError> {
    let mut out: Vec<PlannedSuite> = Vec::new();
    for (i, s) in file.validation.suites.iter().enumerate() {
        let full = joined(base, s);
        let suite = Suite::load(&full).map_err(|e| RecipeError::Invalid {
            path: path.to_path_buf(),
            field: format!("validation.suites[{i}]"),
            message: e.to_string(),
        })?;
        let name = mocc_eval::suite_run::suite_name(&full);
        if out.iter().any(|o| o.name == name) {
            return Err(RecipeError::Invalid {
                path: path.to_path_buf(),
                field: format!("validation.suites[{i}]"),
                message: format!(
                    "another suite is named {name} too (their outputs would share \
                     validation/{name}/)"
                ),
            });
        }
        out.push(PlannedSuite {
            path: full,
            name,
            suite,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_seeds_are_stable_distinct_and_31_bits() {
        let a = stage_seed(1, "start");
        assert_eq!(a, stage_seed(1, "start"));
        assert_ne!(a, stage_seed(1, "coop"));
        assert_ne!(a, stage_seed(2, "start"));
        for s in 0..100 {
            assert!(stage_seed(s, "x") < 1 << 31);
        }
        // Pinned (computed apart, in Python, from the definition): the seeds a recipe's stages
        // train with must not move between releases.
        assert_eq!(stage_seed(0, ""), 1_640_021_504);
        assert_eq!(stage_seed(1, "start"), 1_172_714_570);
        assert_eq!(stage_seed(1, "coop"), 1_466_769_857);
    }
}
