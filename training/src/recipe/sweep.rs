//! A recipe over training seeds (`mocc sweep RECIPE --seeds 1-6 --against copa`): one recipe
//! run per seed in `DIR/seed-N/`, the compared policies evaluated once on the recipe's
//! validation suites in `DIR/against/<suite>/`, and the report over seeds
//! (`mocc_eval::seed_report`) in `DIR/report.json`, `report.md` and `report.png`. Under `mpirun`
//! seed `i` runs on rank `i mod N`, each trained by its rank alone, and rank 0 writes the
//! report. Resumable: `--resume` continues every seed's run from the steps it finished.

use super::plan::RecipePlan;
use super::run::{run_recipe, RecipeHooks, RecipeReport, RunOptions, RECIPE_JSON};
use super::RecipeError;
use crate::checkpoint_policy::load_policy;
use crate::trainer::World;
use mocc_eval::actor::LoadedPolicy;
use mocc_eval::results::EVAL_OUTPUTS;
use mocc_eval::seed_report::{seed_report, AgainstTargets, SeedReport, SeedTargets};
use mocc_eval::stats::Bootstrap;
use mocc_eval::suite_run::run_suite;
use mocc_outputs::StagedDir;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a sweep over seeds runs.
#[derive(Debug, Clone)]
pub struct SeedSweep {
    /// The recipe file.
    pub recipe: PathBuf,
    /// Its `--set` overrides (not `seed=`: the sweep gives each run its seed).
    pub sets: Vec<String>,
    /// The seeds.
    pub seeds: Vec<u64>,
    /// Policies evaluated beside the seeds on the validation suites.
    pub against: Vec<PathBuf>,
    /// The sweep's folder.
    pub out: PathBuf,
    /// Continue an interrupted sweep in `out`.
    pub resume: bool,
}

/// The sweep's file of what it runs, which a resume must match.
pub const SWEEP_JSON: &str = "sweep.json";
/// The report over seeds (JSON, Markdown and the figure).
pub const SEED_REPORT: [&str; 3] = ["report.json", "report.md", "report.png"];
/// The most seeds a sweep runs.
pub const MAX_SEEDS: usize = 1000;

/// What a sweep's folder records of its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepIdentity {
    recipe: String,
    recipe_sha256: String,
    sets: Vec<String>,
    seeds: Vec<u64>,
    against: Vec<String>,
}

/// What a finished sweep gives (rank 0).
pub struct SeedSweepOutcome {
    /// Each seed's recipe report.
    pub reports: Vec<RecipeReport>,
    /// The report over seeds.
    pub report: SeedReport,
}

/// Runs `sweep`: every seed's recipe (this rank's share of them), the compared policies, and
/// on rank 0 the report, which it returns (the other ranks return `None`).
pub fn sweep_seeds(
    sweep: &SeedSweep,
    options: &RunOptions,
    hooks: &mut dyn RecipeHooks,
) -> Result<Option<SeedSweepOutcome>, RecipeError> {
    let world: World = options.world.clone();
    check_arguments(sweep)?;
    let plans: Vec<RecipePlan> = sweep
        .seeds
        .iter()
        .map(|s| {
            let mut sets = sweep.sets.clone();
            sets.push(format!("seed={s}"));
            RecipePlan::load(&sweep.recipe, &sets)
        })
        .collect::<Result<_, _>>()?;
    let against: Vec<LoadedPolicy> = sweep
        .against
        .iter()
        .map(|p| {
            load_policy(p).map_err(|e| RecipeError::Out(format!("--against {}: {e}", p.display())))
        })
        .collect::<Result<_, _>>()?;
    let identity = SweepIdentity {
        recipe: sweep.recipe.display().to_string(),
        recipe_sha256: plans[0].file_sha256.clone(),
        sets: sweep.sets.clone(),
        seeds: sweep.seeds.clone(),
        against: sweep
            .against
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
    };
    if world.rank() == 0 {
        prepare(sweep, &identity)?;
    }
    // Every rank waits for rank 0's check of the folder.
    world.all_gather_f64(&[0.0]);
    let mut mine = Vec::new();
    for (i, plan) in plans.iter().enumerate() {
        if i % world.ranks() != world.rank() {
            continue;
        }
        let dir = seed_dir(&sweep.out, plan.seed);
        let run = RunOptions {
            resume: dir.join(RECIPE_JSON).is_file(),
            world: Arc::new(mocc_agents::SingleProcess),
            ..options.clone()
        };
        hooks.note(&format!("seed {} -> {}", plan.seed, dir.display()));
        mine.push(run_recipe(plan, &dir, &run, hooks)?);
    }
    let bytes = serde_json::to_vec(&mine).map_err(|e| RecipeError::Out(e.to_string()))?;
    let gathered = world.gather_bytes(&bytes);
    let Some(gathered) = gathered else {
        return Ok(None);
    };
    let mut reports: Vec<RecipeReport> = Vec::new();
    for b in gathered {
        let part: Vec<RecipeReport> = serde_json::from_slice(&b)
            .map_err(|e| RecipeError::Out(format!("a rank's reports: {e}")))?;
        reports.extend(part);
    }
    reports.sort_by_key(|r| {
        sweep
            .seeds
            .iter()
            .position(|s| *s == r.recipe.seed)
            .unwrap_or(usize::MAX)
    });
    let against_targets = evaluate_against(&plans[0], &sweep.out, &against, hooks)?;
    let seeds: Vec<SeedTargets> = reports
        .iter()
        .map(|r| SeedTargets {
            seed: r.recipe.seed,
            targets: r.targets.clone(),
        })
        .collect();
    let report = seed_report(
        &plans[0].file.recipe,
        &seeds,
        &against_targets,
        Bootstrap::default(),
    )
    .map_err(|e| RecipeError::Validation(e.to_string()))?;
    write_report(&sweep.out, &report)?;
    Ok(Some(SeedSweepOutcome { reports, report }))
}

/// `DIR/seed-N`.
pub fn seed_dir(out: &Path, seed: u64) -> PathBuf {
    out.join(format!("seed-{seed}"))
}

fn check_arguments(sweep: &SeedSweep) -> Result<(), RecipeError> {
    if sweep.seeds.is_empty() || sweep.seeds.len() > MAX_SEEDS {
        return Err(RecipeError::Out(format!(
            "--seeds: give 1 to {MAX_SEEDS} seeds (got {})",
            sweep.seeds.len()
        )));
    }
    if let Some((i, s)) = sweep
        .seeds
        .iter()
        .enumerate()
        .find(|(i, s)| sweep.seeds[..*i].contains(s))
    {
        let _ = i;
        return Err(RecipeError::Out(format!("--seeds: {s} is given twice")));
    }
    if let Some(s) = sweep
        .sets
        .iter()
        .find(|s| s.split_once('=').is_some_and(|(k, _)| k.trim() == "seed"))
    {
        return Err(RecipeError::Set(format!(
            "{s}: a sweep gives each run its seed from --seeds"
        )));
    }
    Ok(())
}

/// A new sweep: `out` new or empty, then `sweep.json`. A resume: `sweep.json` must say the
/// same arguments.
fn prepare(sweep: &SeedSweep, identity: &SweepIdentity) -> Result<(), RecipeError> {
    let path = sweep.out.join(SWEEP_JSON);
    if sweep.resume {
        let text = mocc_policy::error::read_text(&path).map_err(|_| {
            RecipeError::Out(format!(
                "--resume: {} holds no sweep ({SWEEP_JSON} is missing)",
                sweep.out.display()
            ))
        })?;
        let started: SweepIdentity = serde_json::from_str(&text)
            .map_err(|e| RecipeError::Out(format!("{}: {e}", path.display())))?;
        if started != *identity {
            let what = if started.recipe_sha256 != identity.recipe_sha256 {
                "the recipe file changed"
            } else if started.sets != identity.sets {
                "--set differs"
            } else if started.seeds != identity.seeds {
                "--seeds differ"
            } else if started.against != identity.against {
                "--against differs"
            } else {
                "the recipe's path differs"
            };
            return Err(RecipeError::Out(format!(
                "--resume {}: {what} from the sweep's start; a sweep resumes with its own \
                 arguments",
                sweep.out.display()
            )));
        }
        return Ok(());
    }
    let occupied = std::fs::read_dir(&sweep.out).is_ok_and(|mut d| d.next().is_some());
    if occupied {
        return Err(RecipeError::Out(format!(
            "--out {}: already exists; continue the sweep there with --resume, or choose \
             another --out",
            sweep.out.display()
        )));
    }
    std::fs::create_dir_all(&sweep.out).map_err(|source| RecipeError::Io {
        path: sweep.out.clone(),
        source,
    })?;
    let bytes = serde_json::to_vec_pretty(identity).map_err(|e| RecipeError::Io {
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    mocc_outputs::write_file_atomic(&path, &bytes).map_err(|e| RecipeError::Io {
        path: e.path,
        source: e.source,
    })
}

/// Evaluates the compared policies on every validation suite into `DIR/against/<suite>/`.
fn evaluate_against(
    plan: &RecipePlan,
    out: &Path,
    against: &[LoadedPolicy],
    hooks: &mut dyn RecipeHooks,
) -> Result<Vec<AgainstTargets>, RecipeError> {
    let mut by_policy: Vec<AgainstTargets> = against
        .iter()
        .map(|p| AgainstTargets {
            policy: p.name().to_string(),
            targets: Vec::new(),
        })
        .collect();
    if against.is_empty() {
        return Ok(by_policy);
    }
    let root = out.join("against");
    std::fs::create_dir_all(&root).map_err(|source| RecipeError::Io {
        path: root.clone(),
        source,
    })?;
    for suite in &plan.suites {
        hooks.note(&format!("against: {}", suite.path.display()));
        let fail = |e: &dyn std::fmt::Display| {
            RecipeError::Validation(format!("{}: {e}", suite.path.display()))
        };
        let dir = root.join(&suite.name);
        let staged = StagedDir::replacing(&dir, EVAL_OUTPUTS).map_err(|e| fail(&e))?;
        let run = run_suite(staged.path(), &suite.suite, &suite.path, against, None)
            .map_err(|e| fail(&e))?;
        staged.commit().map_err(|e| fail(&e))?;
        for a in &mut by_policy {
            a.targets.extend(run.targets_of(&a.policy));
        }
    }
    Ok(by_policy)
}

fn write_report(out: &Path, report: &SeedReport) -> Result<(), RecipeError> {
    let io = |e: mocc_policy::FileError| RecipeError::Io {
        path: e.path,
        source: e.source,
    };
    let mut json = serde_json::to_vec_pretty(report).map_err(|e| RecipeError::Io {
        path: out.join(SEED_REPORT[0]),
        source: std::io::Error::other(e),
    })?;
    json.push(b'\n');
    mocc_outputs::write_file_atomic(&out.join(SEED_REPORT[0]), &json).map_err(io)?;
    mocc_outputs::write_file_atomic(&out.join(SEED_REPORT[1]), report.markdown().as_bytes())
        .map_err(io)?;
    report
        .figure(&out.join(SEED_REPORT[2]))
        .map_err(|e| RecipeError::Validation(e.to_string()))
}
