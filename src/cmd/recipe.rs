//! Recipes from the command line: `mocc train RECIPE.yaml` (told apart from a config by its
//! content), `mocc train --resume DIR` of a recipe run, and the progress a recipe shows.

use super::progress::{exit_for_signal, run_with_progress, stop_cleanly_on_signals};
use anyhow::Context;
use mocc_training::recipe::plan::Identity;
use mocc_training::recipe::run::{RECIPE_JSON, REPORT_JSON};
use mocc_training::recipe::sweep::{sweep_seeds, SeedSweep};
use mocc_training::recipe::{
    is_recipe_text, run_recipe, RecipeError, RecipeHooks, RecipePlan, RunOptions,
};
use mocc_training::trainer::{TrainSummary, Trainer};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A recipe run the command line asks for.
pub struct RecipeRequest {
    /// The recipe file.
    pub recipe: PathBuf,
    /// The run folder to continue (`--resume DIR`).
    pub resume: Option<PathBuf>,
    /// The overrides the run started with (a resume given no recipe file).
    pub started_sets: Option<Vec<String>>,
}

/// Whether `config` is a recipe, or `resume` a recipe run's folder; None for plain training.
pub fn recipe_request(
    config: &Option<PathBuf>,
    resume: &Option<PathBuf>,
) -> anyhow::Result<Option<RecipeRequest>> {
    let recipe_run = resume.as_ref().filter(|d| d.join(RECIPE_JSON).is_file());
    if let (Some(path), Some(dir), None) = (config, resume, recipe_run) {
        let a_recipe = mocc_policy::error::read_text(path).is_ok_and(|t| is_recipe_text(&t));
        if a_recipe {
            anyhow::bail!(
                "--resume {}: no recipe run there (no {RECIPE_JSON})",
                dir.display()
            );
        }
        anyhow::bail!(
            "{}: a config cannot be used with --resume {} (a checkpoint holds its config; give \
             --resume alone)",
            path.display(),
            dir.display()
        );
    }
    let given = match config {
        Some(path) => {
            let text = mocc_policy::error::read_text(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            is_recipe_text(&text).then(|| path.clone())
        }
        None => None,
    };
    Ok(match (given, resume) {
        // A recipe with --resume of a folder that is no recipe run was refused above.
        (Some(recipe), Some(dir)) => Some(RecipeRequest {
            recipe,
            resume: Some(dir.clone()),
            started_sets: None,
        }),
        (Some(recipe), None) => Some(RecipeRequest {
            recipe,
            resume: None,
            started_sets: None,
        }),
        (None, Some(dir)) if recipe_run.is_some() => {
            if config.is_some() {
                anyhow::bail!(
                    "--resume {}: a recipe run; give its recipe file (or none), not a config",
                    dir.display()
                );
            }
            let identity = read_identity(dir)?;
            Some(RecipeRequest {
                recipe: PathBuf::from(&identity.recipe),
                resume: Some(dir.clone()),
                started_sets: Some(identity.sets),
            })
        }
        _ => None,
    })
}

fn read_identity(dir: &Path) -> anyhow::Result<Identity> {
    let path = dir.join(RECIPE_JSON);
    let text = mocc_policy::error::read_text(&path)?;
    serde_json::from_str(&text).with_context(|| format!("{}: not a recipe run's", path.display()))
}

/// Runs (or resumes) a recipe; prints what it meets and, last on stdout, its report as JSON.
pub fn train_recipe(
    request: RecipeRequest,
    sets: &[String],
    out: Option<&Path>,
) -> anyhow::Result<()> {
    let sets: Vec<String> = match (&request.started_sets, sets.is_empty()) {
        (Some(started), true) => started.clone(),
        _ => sets.to_vec(),
    };
    let plan = RecipePlan::load(&request.recipe, &sets)?;
    let out = match (&request.resume, out) {
        (Some(dir), Some(o)) if o != dir => {
            anyhow::bail!(
                "--out {}: a recipe resumes in its own folder ({})",
                o.display(),
                dir.display()
            )
        }
        (Some(dir), _) => dir.clone(),
        (None, Some(o)) => o.to_path_buf(),
        (None, None) => default_out(&plan),
    };
    let options = RunOptions {
        exported_by: super::export::exported_by(),
        git_revision: env!("MOCC_GIT_REVISION").to_string(),
        resume: request.resume.is_some(),
        world: Arc::new(mocc_agents::SingleProcess),
    };
    eprintln!(
        "recipe {} ({}), seed {}: {}",
        plan.file.recipe,
        plan.path.display(),
        plan.seed,
        out.display()
    );
    let mut hooks = CliHooks;
    let report = match run_recipe(&plan, &out, &options, &mut hooks) {
        Ok(r) => r,
        Err(RecipeError::Interrupted { stage, out }) => {
            eprintln!(
                "interrupted in stage {stage}; continue with `mocc train --resume {}`",
                out.display()
            );
            exit_for_signal();
        }
        Err(e) => return Err(e.into()),
    };
    for note in report.rule.untrained.iter() {
        eprintln!(
            "note: the export runs under {} untrained ({}): {}",
            note.part, note.declared_by, note.why
        );
    }
    eprintln!(
        "recipe {}: {} on its validation suites; export: {}",
        plan.file.recipe,
        report.sentence,
        report.export.display()
    );
    super::print_line(serde_json::to_string(&serde_json::json!({
        "recipe": report.recipe,
        "export": report.export,
        "count": report.count,
        "sentence": report.sentence,
        "report": out.join(REPORT_JSON),
    }))?)?;
    Ok(())
}

/// `runs/<recipe>-s<seed>-<unix time>`.
fn default_out(plan: &RecipePlan) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    PathBuf::from("runs").join(format!("{}-s{}-{now}", plan.file.recipe, plan.seed))
}

/// A stage's training with the progress bar and a clean stop on SIGINT/SIGTERM.
fn train_stage(trainer: &mut Trainer) -> Result<TrainSummary, String> {
    stop_cleanly_on_signals(trainer);
    run_with_progress(trainer)
        .map(|(summary, _)| summary)
        .map_err(|e| format!("{e:#}"))
}

/// Progress on stderr; training with the progress bar and a clean stop on SIGINT/SIGTERM.
struct CliHooks;

impl RecipeHooks for CliHooks {
    fn train(&mut self, _stage: &str, trainer: &mut Trainer) -> Result<TrainSummary, String> {
        train_stage(trainer)
    }

    fn note(&mut self, line: &str) {
        eprintln!("recipe: {line}");
    }
}

/// Runs `mocc sweep RECIPE --seeds ...`: prints each seed's count and the report's path, and
/// last on stdout the report over seeds as JSON (rank 0).
#[allow(clippy::too_many_arguments)]
pub fn sweep_recipe(
    ranks: &super::ranks::Ranks,
    recipe: &Path,
    sets: &[String],
    out: &Path,
    resume: bool,
    seeds: Vec<u64>,
    against: &[PathBuf],
    omega_flags: bool,
) -> anyhow::Result<()> {
    if omega_flags {
        anyhow::bail!(
            "--omega and --suite belong to a config's sweep; a recipe is judged on its own \
             validation suites"
        );
    }
    if seeds.is_empty() {
        anyhow::bail!("--seeds: required for a recipe's sweep (e.g. --seeds 1-6)");
    }
    let sweep = SeedSweep {
        recipe: recipe.to_path_buf(),
        sets: sets.to_vec(),
        seeds,
        against: against.to_vec(),
        out: out.to_path_buf(),
        resume,
    };
    let options = RunOptions {
        exported_by: super::export::exported_by(),
        git_revision: env!("MOCC_GIT_REVISION").to_string(),
        resume,
        world: ranks.world.clone(),
    };
    let mut hooks = SweepHooks {
        rank: ranks.world.rank(),
    };
    let outcome = match sweep_seeds(&sweep, &options, &mut hooks) {
        Ok(o) => o,
        Err(RecipeError::Interrupted { stage, .. }) => {
            eprintln!(
                "interrupted in stage {stage}; continue with `mocc sweep {} --seeds ... --out {} --resume`",
                recipe.display(),
                out.display()
            );
            exit_for_signal();
        }
        Err(e) => return Err(e.into()),
    };
    let Some(outcome) = outcome else {
        return Ok(());
    };
    for r in &outcome.reports {
        eprintln!("seed {}: {}", r.recipe.seed, r.sentence);
    }
    eprintln!("report: {}", out.join("report.md").display());
    super::print_line(serde_json::to_string(&outcome.report)?)?;
    Ok(())
}

/// A sweep's progress: lines tagged with the rank under mpirun; training without a bar.
struct SweepHooks {
    rank: usize,
}

impl RecipeHooks for SweepHooks {
    fn train(&mut self, _stage: &str, trainer: &mut Trainer) -> Result<TrainSummary, String> {
        train_stage(trainer)
    }

    fn note(&mut self, line: &str) {
        use std::io::Write;
        // One write per line: mpirun interleaves ranks' partial lines.
        let text = format!("sweep (rank {}): {line}\n", self.rank);
        let _ = std::io::stderr().write_all(text.as_bytes());
    }
}
