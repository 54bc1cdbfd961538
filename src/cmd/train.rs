//! `mocc train`.

use super::progress::{exit_if_interrupted, run_with_progress, stop_cleanly_on_signals};
use super::ranks::Ranks;
use anyhow::Context;
use clap::Args;
use mocc_agents::Collective;
use mocc_training::config::LoadedConfig;
use mocc_training::trainer::Trainer;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Arguments of `mocc train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Training config or recipe (YAML; a recipe has a `recipe:` key). Not with --resume of a
    /// checkpoint (it holds its config); with --resume of a recipe run, it must be the recipe
    /// the run started with.
    config: Option<PathBuf>,
    /// Override a config value: --set ppo.learning_rate=1e-4 (repeatable). For a recipe:
    /// --set seed=N (every stage's seed derives from it), --set STAGE.key=value (one stage),
    /// --set '*.key=value' (every training stage).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
    /// Run folder (default: runs/<config name>-s<seed>-<unix time>). With --resume of a
    /// checkpoint: a new run folder to continue it in (it is copied there; its own run is
    /// untouched). For a recipe: the folder of its stages, export/ and report.json.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Continue from a checkpoint folder, or a run folder's newest checkpoint, in the run
    /// folder that holds it (or in --out); or continue a recipe run's folder from the stages
    /// it finished.
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Start this new run from a trained checkpoint's (or run folder's newest) weights and
    /// observation statistics, e.g. to fine-tune a model on another scenario; the optimizer,
    /// counters and schedule start afresh. The architectures must match.
    #[arg(long, value_name = "CHECKPOINT", conflicts_with = "resume")]
    init: Option<PathBuf>,
}

/// Runs `mocc train`; the last stdout line is a JSON summary. Under `mpirun` (a binary built
/// with the `mpi` feature) every rank trains its share and rank 0 prints and writes. Alone, a
/// SIGINT or SIGTERM ends training within a minibatch, keeping the last checkpoint (exit
/// status 128 + the signal); a second one ends it at once.
pub fn run(args: TrainArgs) -> anyhow::Result<()> {
    let ranks = Ranks::join()?;
    train_on(&ranks, args).map_err(|e| ranks.fail(e))
}

fn train_on(ranks: &Ranks, args: TrainArgs) -> anyhow::Result<()> {
    if let Some(recipe) = super::recipe::recipe_request(&args.config, &args.resume)? {
        if args.init.is_some() {
            anyhow::bail!("--init: a recipe's stages say what each starts from (init:)");
        }
        if ranks.world.ranks() > 1 {
            anyhow::bail!(
                "a recipe runs in one process (mpirun spreads `mocc sweep RECIPE` seeds over \
                 ranks instead)"
            );
        }
        return super::recipe::train_recipe(recipe, &args.set, args.out.as_deref());
    }
    if args.resume.is_some() && args.config.is_some() {
        anyhow::bail!(
            "--resume continues a checkpoint with the config it holds; give --resume alone"
        );
    }
    let world = ranks.world.clone();
    let mut trainer = match (&args.resume, &args.config) {
        (Some(ckpt), _) => {
            if !args.set.is_empty() {
                anyhow::bail!(
                    "--set cannot change a resumed run (its config is in the checkpoint)"
                );
            }
            match &args.out {
                Some(out) => Trainer::resume_into(ckpt, out, world),
                None => Trainer::resume_on(ckpt, world),
            }
            .with_context(|| format!("cannot resume {}", ckpt.display()))?
        }
        (None, Some(path)) => {
            let loaded = LoadedConfig::load(path, &args.set)?;
            let run_dir = args
                .out
                .clone()
                .unwrap_or_else(|| default_run_dir(path, loaded.config.seed, &*world));
            let mut trainer = Trainer::new_on(&loaded, &run_dir, world)?;
            if let Some(init) = &args.init {
                trainer
                    .load_pretrained(init)
                    .with_context(|| format!("cannot start from {}", init.display()))?;
            }
            trainer
        }
        (None, None) => anyhow::bail!("a CONFIG file (or --resume CHECKPOINT) is required"),
    };
    if ranks.world.ranks() == 1 {
        stop_cleanly_on_signals(&mut trainer);
    }
    let (summary, _) = run_with_progress(&mut trainer)?;
    if ranks.is_root() {
        super::print_line(serde_json::to_string(&summary)?)?;
    }
    exit_if_interrupted(&summary, &trainer);
    Ok(())
}

/// `runs/<config name>-s<seed>-<unix time>`, with rank 0's time on every rank.
fn default_run_dir(config: &Path, seed: u64, world: &dyn Collective) -> PathBuf {
    let stem = config
        .file_stem()
        .map_or_else(|| "run".into(), |s| s.to_string_lossy().into_owned());
    let own = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let now = world.all_gather_f64(&[own as f64])[0] as u64;
    PathBuf::from("runs").join(format!("{stem}-s{seed}-{now}"))
}
