//! Running a recipe into its output folder:
//!
//! ```text
//! DIR/recipe.json     what the run depends on (recipe hash, seed, overrides, stage configs)
//! DIR/recipe.yaml     the recipe file as it was run
//! DIR/state.json      the steps finished so far (a resume skips them)
//! DIR/<stage>/        each stage's output: a training run folder or an export folder
//! DIR/export/         the deployable export, provenance naming the recipe, seed and commit
//! DIR/validation/<suite>/   each validation suite's evaluation of the export
//! DIR/report.json     the targets the export meets
//! ```
//!
//! A killed run continues with `--resume`: finished steps are skipped (a finished training
//! stage is never trained again), an interrupted training stage resumes from its newest
//! checkpoint. The validation runs again at every resume: it takes seconds, and the report
//! then judges the export by the suites and targets as they are.

use super::file::StageKind;
use super::plan::{Identity, RecipePlan};
use super::RecipeError;
use crate::export::{export_checkpoint, ExportOptions};
use crate::run_lock::RunLock;
use crate::trainer::{TrainSummary, Trainer, World};
use mocc_eval::actor::{LoadedPolicy, RuleRecord};
use mocc_eval::results::EVAL_OUTPUTS;
use mocc_eval::suite_run::run_suite;
use mocc_eval::targets::{TargetCount, TargetOutcome};
use mocc_outputs::{save_policy, StagedDir, EXPORT_FOLDER};
use mocc_policy::provenance::overlay_rule;
use mocc_policy::{Policy, RecipeRef};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What the run depends on, in the output folder.
pub const RECIPE_JSON: &str = "recipe.json";
/// The recipe file as it was run, in the output folder.
pub const RECIPE_COPY: &str = "recipe.yaml";
/// The finished steps, in the output folder.
pub const STATE_JSON: &str = "state.json";
/// The report, in the output folder.
pub const REPORT_JSON: &str = "report.json";
/// The deployable export's folder, in the output folder.
pub const EXPORT_DIR: &str = "export";
/// The validation's folder, in the output folder.
pub const VALIDATION_DIR: &str = "validation";

/// How a recipe runs.
#[derive(Clone)]
pub struct RunOptions {
    /// The tool and revision exports record (`mocc 0.1.0 (rev abc)`).
    pub exported_by: String,
    /// The git revision training records.
    pub git_revision: String,
    /// Continue the run in the output folder.
    pub resume: bool,
    /// The ranks training runs on (one process for a recipe).
    pub world: World,
}

/// What the caller does for a recipe run: training with progress, and notes to show.
pub trait RecipeHooks {
    /// Trains `trainer` (of stage `stage`) to the end of its budget, or until a stop request.
    fn train(&mut self, stage: &str, trainer: &mut Trainer) -> Result<TrainSummary, String>;
    /// A line of progress.
    fn note(&mut self, line: &str);
}

/// A finished step of a recipe run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The stage's name, `export` for the final export, `validation/<suite>` for a suite.
    pub name: String,
    /// `train`, `export`, `pair`, `final` or `validation`.
    pub kind: String,
    /// The stage's seed (training stages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Wall seconds of the step (the last attempt's, for a resumed training stage).
    pub seconds: f64,
    /// Env steps trained (training stages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_steps: Option<u64>,
    /// The suite's target outcomes (validation steps).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetOutcome>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunState {
    done: Vec<Step>,
}

impl RunState {
    fn done(&self, name: &str) -> Option<&Step> {
        self.done.iter().find(|s| s.name == name)
    }
}

/// What a recipe run reports (`DIR/report.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecipeReport {
    /// The recipe, its hash, seed and overrides.
    pub recipe: RecipeRef,
    /// The export's name in the validation's results (`<recipe>-s<seed>`).
    pub policy: String,
    /// The deployable export.
    pub export: PathBuf,
    /// The rule it runs under, the trained rule and the declared parts between them.
    pub rule: RuleRecord,
    /// Every step, in the order run.
    pub steps: Vec<Step>,
    /// Targets met, overall and per group.
    pub count: TargetCount,
    /// `meets K of N targets (...)`.
    pub sentence: String,
    /// Every target of every validation suite.
    pub targets: Vec<TargetOutcome>,
}

/// Runs `plan` into `out` (new, or with `options.resume` an earlier run of the same plan).
pub fn run_recipe(
    plan: &RecipePlan,
    out: &Path,
    options: &RunOptions,
    hooks: &mut dyn RecipeHooks,
) -> Result<RecipeReport, RecipeError> {
    prepare(plan, out, options.resume)?;
    let _lock = RunLock::acquire(out).map_err(|e| RecipeError::Out(e.to_string()))?;
    let mut state = read_state(out)?;
    let total = plan.order.len();
    for (k, &i) in plan.order.iter().enumerate() {
        let stage = &plan.file.stages[i];
        let kind = stage
            .kind("stage")
            .map_err(|m| stage_error(&stage.name, m))?;
        if state.done(&stage.name).is_some() {
            hooks.note(&format!("{}/{total} {}: done earlier", k + 1, stage.name));
            continue;
        }
        let started = Instant::now();
        let mut step = Step {
            name: stage.name.clone(),
            kind: kind_name(kind).into(),
            seed: None,
            seconds: 0.0,
            env_steps: None,
            targets: Vec::new(),
        };
        match kind {
            StageKind::Train => {
                let seed = plan.seeds.get(&stage.name).copied();
                hooks.note(&format!(
                    "{}/{total} {}: train {} (seed {})",
                    k + 1,
                    stage.name,
                    stage.train.as_deref().unwrap_or(Path::new("")).display(),
                    seed.unwrap_or_default()
                ));
                let summary = train_stage(plan, out, &stage.name, options, hooks)?;
                step.seed = seed;
                step.env_steps = Some(summary.env_steps);
            }
            StageKind::Export => {
                hooks.note(&format!("{}/{total} {}: export", k + 1, stage.name));
                export_stage(out, &stage.name, stage.export.as_deref(), options)?;
            }
            StageKind::Pair => {
                hooks.note(&format!("{}/{total} {}: pair", k + 1, stage.name));
                pair_stage(plan, out, &stage.name)?;
            }
        }
        step.seconds = started.elapsed().as_secs_f64();
        state.done.push(step);
        write_state(out, &state)?;
    }
    if state.done(EXPORT_DIR).is_none() {
        let started = Instant::now();
        hooks.note(&format!("export: {}", out.join(EXPORT_DIR).display()));
        final_export(plan, out)?;
        state.done.push(Step {
            name: EXPORT_DIR.into(),
            kind: "final".into(),
            seed: None,
            seconds: started.elapsed().as_secs_f64(),
            env_steps: None,
            targets: Vec::new(),
        });
        write_state(out, &state)?;
    }
    let policy_name = format!("{}-s{}", plan.file.recipe, plan.seed);
    let export = Policy::load(out.join(EXPORT_DIR)).map_err(|e| stage_error(EXPORT_DIR, e))?;
    let rule = RuleRecord::of_export(&export);
    let loaded = LoadedPolicy::export(policy_name.clone(), export);
    // The validation runs every time (it takes seconds and is deterministic), so a report
    // always judges the export by the suites as they are now.
    state.done.retain(|s| s.kind != "validation");
    for suite in &plan.suites {
        let name = format!("{VALIDATION_DIR}/{}", suite.name);
        hooks.note(&format!("validation: {}", suite.path.display()));
        let started = Instant::now();
        let targets = validate(out, suite, &loaded)?;
        state.done.push(Step {
            name,
            kind: "validation".into(),
            seed: None,
            seconds: started.elapsed().as_secs_f64(),
            env_steps: None,
            targets,
        });
        write_state(out, &state)?;
    }
    let targets: Vec<TargetOutcome> = state
        .done
        .iter()
        .flat_map(|s| s.targets.iter().cloned())
        .collect();
    let count = TargetCount::of(&targets);
    let report = RecipeReport {
        recipe: recipe_ref(plan),
        policy: policy_name,
        export: out.join(EXPORT_DIR),
        rule,
        steps: state.done.clone(),
        sentence: count.sentence(),
        count,
        targets,
    };
    write_json(&out.join(REPORT_JSON), &report)?;
    Ok(report)
}

fn kind_name(kind: StageKind) -> &'static str {
    match kind {
        StageKind::Train => "train",
        StageKind::Export => "export",
        StageKind::Pair => "pair",
    }
}

fn stage_error(stage: &str, e: impl std::fmt::Display) -> RecipeError {
    RecipeError::Stage {
        stage: stage.to_string(),
        message: e.to_string(),
    }
}

fn io_error(e: mocc_policy::FileError) -> RecipeError {
    RecipeError::Io {
        path: e.path,
        source: e.source,
    }
}

/// The recipe's reference in provenance and reports.
fn recipe_ref(plan: &RecipePlan) -> RecipeRef {
    RecipeRef {
        file: plan.path.display().to_string(),
        sha256: plan.file_sha256.clone(),
        seed: plan.seed,
        sets: plan.sets.clone(),
    }
}

/// A new run: `out` must be new or empty, and gets the run's identity and the recipe's copy.
/// A resume: `out` must hold a run of the same identity.
fn prepare(plan: &RecipePlan, out: &Path, resume: bool) -> Result<(), RecipeError> {
    let identity_path = out.join(RECIPE_JSON);
    if resume {
        let text = mocc_policy::error::read_text(&identity_path).map_err(|_| {
            RecipeError::Out(format!(
                "--resume {}: no recipe run there (no {RECIPE_JSON})",
                out.display()
            ))
        })?;
        let started: Identity = serde_json::from_str(&text)
            .map_err(|e| RecipeError::Out(format!("{}: {e}", identity_path.display())))?;
        if let Some(diff) = plan.identity.difference(&started) {
            return Err(RecipeError::Out(format!(
                "--resume {}: {diff}; a run resumes with the recipe, seed and overrides it \
                 started with",
                out.display()
            )));
        }
        return Ok(());
    }
    let occupied = std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_some());
    if occupied || (out.exists() && !out.is_dir()) {
        return Err(RecipeError::Out(format!(
            "--out {}: already exists; continue a recipe run there with --resume, or choose \
             another --out",
            out.display()
        )));
    }
    std::fs::create_dir_all(out).map_err(|source| RecipeError::Io {
        path: out.to_path_buf(),
        source,
    })?;
    let text = mocc_policy::error::read_bytes(&plan.path, 1 << 20).map_err(io_error)?;
    mocc_outputs::write_file_atomic(&out.join(RECIPE_COPY), &text).map_err(io_error)?;
    write_json(&identity_path, &plan.identity)
}

fn read_state(out: &Path) -> Result<RunState, RecipeError> {
    let path = out.join(STATE_JSON);
    if !path.is_file() {
        return Ok(RunState::default());
    }
    let text = mocc_policy::error::read_text(&path).map_err(io_error)?;
    serde_json::from_str(&text).map_err(|e| RecipeError::Out(format!("{}: {e}", path.display())))
}

fn write_state(out: &Path, state: &RunState) -> Result<(), RecipeError> {
    write_json(&out.join(STATE_JSON), state)
}

fn write_json(path: &Path, value: &impl Serialize) -> Result<(), RecipeError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| RecipeError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    bytes.push(b'\n');
    mocc_outputs::write_file_atomic(path, &bytes).map_err(io_error)
}

/// Trains stage `name` into `DIR/<name>/`: a fresh run (from its init's weights), or the
/// interrupted one continued from its newest checkpoint.
fn train_stage(
    plan: &RecipePlan,
    out: &Path,
    name: &str,
    options: &RunOptions,
    hooks: &mut dyn RecipeHooks,
) -> Result<TrainSummary, RecipeError> {
    let fail = |e: &dyn std::fmt::Display| stage_error(name, e);
    let stage = plan.stage(name).ok_or_else(|| fail(&"no such stage"))?;
    let config = plan.configs.get(name).ok_or_else(|| fail(&"no config"))?;
    let run_dir = out.join(name);
    let mut trainer = if has_checkpoints(&run_dir) {
        Trainer::resume_on(&run_dir, options.world.clone()).map_err(|e| fail(&e))?
    } else {
        let mut t =
            Trainer::new_on(config, &run_dir, options.world.clone()).map_err(|e| fail(&e))?;
        if let Some(init) = &stage.init {
            t.load_pretrained(&out.join(init))
                .map_err(|e| fail(&format!("init from {init}: {e}")))?;
        }
        t
    };
    trainer.record_git_revision(options.git_revision.clone());
    let summary = hooks.train(name, &mut trainer).map_err(|e| fail(&e))?;
    if summary.interrupted {
        return Err(RecipeError::Interrupted {
            stage: name.to_string(),
            out: out.to_path_buf(),
        });
    }
    Ok(summary)
}

fn has_checkpoints(run_dir: &Path) -> bool {
    let dir = run_dir.join(crate::checkpoint::CHECKPOINTS_DIR);
    crate::checkpoint::list(&dir).is_ok_and(|l| !l.is_empty())
}

/// Exports training stage `source`'s final checkpoint into `DIR/<name>/`.
fn export_stage(
    out: &Path,
    name: &str,
    source: Option<&str>,
    options: &RunOptions,
) -> Result<(), RecipeError> {
    let source = source.ok_or_else(|| stage_error(name, "no stage to export"))?;
    let export = ExportOptions {
        torchscript: false,
        exported_by: options.exported_by.clone(),
    };
    export_checkpoint(&out.join(source), &out.join(name), &export)
        .map_err(|e| stage_error(name, e))?;
    Ok(())
}

/// Joins the pair stage's two exports into `DIR/<name>/`, the mode switch declared by the
/// recipe.
fn pair_stage(plan: &RecipePlan, out: &Path, name: &str) -> Result<(), RecipeError> {
    let fail = |e: &dyn std::fmt::Display| stage_error(name, e);
    let pair = plan
        .stage(name)
        .and_then(|s| s.pair.as_ref())
        .ok_or_else(|| fail(&"not a pair stage"))?;
    let load = |stage: &str| Policy::load(out.join(stage)).map_err(|e| fail(&e));
    let (coop, comp) = (load(&pair.cooperative)?, load(&pair.competitive)?);
    let dir = out.join(name);
    let staged = StagedDir::replacing(&dir, EXPORT_FOLDER).map_err(|e| fail(&e))?;
    let by = plan.path.display().to_string();
    mocc_outputs::write_pair(staged.path(), &coop, &comp, pair.mode_switch, &by)
        .map_err(|e| fail(&e))?;
    staged.commit().map_err(|e| fail(&e))?;
    Ok(())
}

/// The recipe's export in `DIR/export/`: the final stage's, under the recipe's `rule:`, every
/// part its weights were not trained with declared by the recipe (its `untrained:` and why),
/// and its provenance naming the recipe, its hash and seed.
fn final_export(plan: &RecipePlan, out: &Path) -> Result<(), RecipeError> {
    let by = plan.path.display().to_string();
    let fail = |e: &dyn std::fmt::Display| stage_error(EXPORT_DIR, e);
    let mut policy = Policy::load(out.join(&plan.file.export)).map_err(|e| fail(&e))?;
    if let Some(patch) = &plan.file.rule {
        let rule = overlay_rule(&policy.spec().sender_rule(), patch).map_err(|m| {
            RecipeError::Invalid {
                path: plan.path.clone(),
                field: "rule".into(),
                message: m,
            }
        })?;
        policy = policy
            .with_rule(rule, &by, "the recipe's rule")
            .map_err(|e| fail(&e))?;
    }
    check_declared(plan, &policy)?;
    let recipe = recipe_ref(plan);
    let declared = &plan.file.untrained;
    let policy = policy.with_provenance(|p| {
        for u in &mut p.untrained {
            if let Some(why) = declared.get(&u.part) {
                u.why = why.clone();
                u.declared_by = by.clone();
            }
        }
        p.recipe = Some(recipe.clone());
    });
    let dir = out.join(EXPORT_DIR);
    let staged = StagedDir::replacing(&dir, EXPORT_FOLDER).map_err(|e| fail(&e))?;
    save_policy(&policy, staged.path()).map_err(|e| fail(&e))?;
    staged.commit().map_err(|e| fail(&e))?;
    Ok(())
}

/// The parts the export (either half) runs under untrained must be exactly the recipe's
/// `untrained:` keys.
fn check_declared(plan: &RecipePlan, policy: &Policy) -> Result<(), RecipeError> {
    let halves = std::iter::once(policy).chain(policy.competitive());
    let parts: BTreeSet<String> = halves
        .flat_map(|h| h.spec().provenance.untrained.iter().map(|u| u.part.clone()))
        .collect();
    let declared: BTreeSet<String> = plan.file.untrained.keys().cloned().collect();
    let rule_error = |message: String| RecipeError::Rule {
        path: plan.path.clone(),
        message,
    };
    if let Some(part) = parts.difference(&declared).next() {
        return Err(rule_error(format!(
            "the export runs under {part}, which its weights were not trained with; declare it \
             here with why (`{part}: ...`), or train under it"
        )));
    }
    if let Some(part) = declared.difference(&parts).next() {
        return Err(rule_error(format!(
            "declares {part}, but the export runs under the {part} its weights were trained \
             with: nothing to declare"
        )));
    }
    Ok(())
}

/// Evaluates the export on one validation suite into `DIR/validation/<suite>/`.
fn validate(
    out: &Path,
    suite: &super::plan::PlannedSuite,
    policy: &LoadedPolicy,
) -> Result<Vec<TargetOutcome>, RecipeError> {
    let fail = |e: &dyn std::fmt::Display| {
        RecipeError::Validation(format!("{}: {e}", suite.path.display()))
    };
    let parent = out.join(VALIDATION_DIR);
    std::fs::create_dir_all(&parent).map_err(|source| RecipeError::Io {
        path: parent.clone(),
        source,
    })?;
    let dir = parent.join(&suite.name);
    let staged = StagedDir::replacing(&dir, EVAL_OUTPUTS).map_err(|e| fail(&e))?;
    let run = run_suite(
        staged.path(),
        &suite.suite,
        &suite.path,
        std::slice::from_ref(policy),
        None,
    )
    .map_err(|e| fail(&e))?;
    staged.commit().map_err(|e| fail(&e))?;
    Ok(run.targets)
}
