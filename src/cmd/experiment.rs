//! `mocc experiment`.

use anyhow::Context;
use clap::{Args, Subcommand};
use mocc_eval::suite::Suite;
use mocc_training::adaptation::{read_pool, seen_objectives};
use mocc_training::adaptation_metrics::sample_new_objectives;
use mocc_training::checkpoint::Checkpoint;
use mocc_training::experiment::{run_adaptation_experiment, AdaptationExperiment};
use std::path::PathBuf;

/// Arguments of `mocc experiment`.
#[derive(Debug, Args)]
pub struct ExperimentArgs {
    #[command(subcommand)]
    what: Experiment,
}

#[derive(Debug, Subcommand)]
enum Experiment {
    /// MOCC's adaptation experiments: initial reward and convergence speed on new objectives
    /// against from-scratch single-objective policies, and forgetting with and without replay.
    Adaptation(AdaptationArgs),
    /// The MOCC paper's Figure 10 on the emulated real path (root): bulk transfer, a
    /// real-time stream and adaptive video, each with one export over QUIC (every
    /// application setting its own objective), s2n-quic's Cubic and BBR, and kernel TCP Cubic
    /// and BBR, on three fixed links (4, 12 with 1% loss, 48 Mbit/s) and a LEO-like scenario.
    Fig10(Fig10Args),
    /// The LEO study ("An Experimental Study of Congestion Control in LEO Satellite
    /// Networks") in the simulator, for every scheme: one flow on LEO-like paths that
    /// reconfigure every 5, 15 or 30 s with base-RTT jumps and handovers (Figure 1 a-c), a
    /// second flow at 100 s (1d), bandwidth steps, base-RTT steps and random loss (Figures
    /// 2-3), intra- and inter-RTT fairness, and 5, 10 and 20 flows (Figure 7).
    Leo(LeoArgs),
    /// The MOCC paper's Figure 5 with every scheme: link utilization and RTT ratio as one
    /// network parameter varies around a base network (bandwidth, delay, random loss, buffer),
    /// for the learned policies and every classic scheme of the gym (`mocc eval` on
    /// configs/eval/fig5-sweeps.yaml: results.csv, fig5-sweeps.png).
    Fig5(Fig5Args),
}

/// The classic schemes of the line-ups: every one the gym has (Cubic once, paced).
const EVERY_CLASSIC_SCHEME: &str =
    "cubic,satcp,bbr,bbr3,leocc,copa,vegas,allegro,vivace,proteus,proteus_s";

/// Arguments of `mocc experiment fig5`.
#[derive(Debug, Args)]
struct Fig5Args {
    /// A learned policy: an export, a checkpoint or a run folder. Repeat to compare (default:
    /// the shipped checkpoints/mocc-omega36, checkpoints/aurora and checkpoints/orca).
    #[arg(long)]
    policy: Vec<PathBuf>,
    /// The classic schemes beside them (comma-separated baseline names).
    #[arg(long, default_value = EVERY_CLASSIC_SCHEME, value_delimiter = ',')]
    schemes: Vec<String>,
    /// The sweeps (default: the shipped configs/eval/fig5-sweeps.yaml).
    #[arg(long)]
    suite: Option<PathBuf>,
    /// Output folder (new, empty, or an earlier evaluation's, replaced whole).
    #[arg(long, default_value = "runs/fig5")]
    out: PathBuf,
}

/// Arguments of `mocc experiment leo`.
#[derive(Debug, Args)]
struct LeoArgs {
    /// A learned scheme: an export, a checkpoint or a run folder. Repeat to compare (default:
    /// the shipped checkpoints/mocc-pair).
    #[arg(long)]
    policy: Vec<PathBuf>,
    /// The classic schemes beside them (comma-separated baseline names).
    #[arg(
        long,
        default_value = EVERY_CLASSIC_SCHEME,
        value_delimiter = ','
    )]
    schemes: Vec<String>,
    /// Seeds of every run but the many-flows ones (default 3; 1 with --quick).
    #[arg(long)]
    seeds: Option<u64>,
    /// A fifth of the time and one seed, for a first look (about a minute a scheme).
    #[arg(long)]
    quick: bool,
    /// Keep every MI of every learned flow: mis/<part>-<x>/<policy>/seed-<s>/flow-<k>.csv, and
    /// many-flows/fairness-mis/ (as `mocc eval` writes them; 300 s runs: about 1 GB).
    #[arg(long)]
    record_mis: bool,
    /// Output folder (new, empty, or an earlier run's, replaced whole): leo.csv,
    /// leo-summary.csv, leo-paths.png, leo-micro.png, leo-fairness.png, many-flows/,
    /// summary.json.
    #[arg(long, default_value = "runs/leo")]
    out: PathBuf,
}

/// Arguments of `mocc experiment fig10`.
#[derive(Debug, Args)]
struct Fig10Args {
    /// The export every application uses (default: checkpoints/mocc-pair of mocc's source
    /// tree, wherever the command runs).
    #[arg(long)]
    export: Option<PathBuf>,
    /// The LEO-like scenario (its link's schedule and outages; default:
    /// configs/scenarios/leo.yaml of mocc's source tree, wherever the command runs).
    #[arg(long)]
    leo: Option<PathBuf>,
    /// Runs per application, path and scheme (default 10; 3 with --quick).
    #[arg(long)]
    repeats: Option<u32>,
    /// The bulk download (default bulk:10MB; bulk:2MB with --quick).
    #[arg(long)]
    bulk: Option<String>,
    /// The real-time stream (default rtc:2.5mbit:30s; rtc:2.5mbit:10s with --quick).
    #[arg(long)]
    rtc: Option<String>,
    /// The video session (default video:mpc:48; video:mpc:8 with --quick).
    #[arg(long)]
    video: Option<String>,
    /// Shorter runs and fewer of them, for a first look (about 40 minutes).
    #[arg(long)]
    quick: bool,
    /// Output folder: bulk-runs.csv, rtc-runs.csv, video-runs.csv (rows as they finish),
    /// fig10.csv, fig10.png, summary.json.
    #[arg(long, default_value = "runs/fig10")]
    out: PathBuf,
}

/// Arguments of `mocc experiment adaptation`.
#[derive(Debug, Args)]
struct AdaptationArgs {
    /// The MOCC-pretrained checkpoint, or a run folder (its newest checkpoint).
    #[arg(long)]
    from: PathBuf,
    /// New objectives (YAML/JSON list of [thr, lat, loss]); default: --k drawn from the
    /// simplex, seeded, away from the checkpoint's landmarks.
    #[arg(long)]
    objectives: Option<PathBuf>,
    /// Number of new objectives to draw.
    #[arg(long, default_value_t = 5)]
    k: usize,
    /// Seed of the drawn objectives.
    #[arg(long, default_value_t = 2022)]
    seed: u64,
    /// Adaptation iterations of the MOCC model per objective.
    #[arg(long, default_value_t = 60)]
    iterations: u64,
    /// Iterations of each from-scratch policy.
    #[arg(long, default_value_t = 600)]
    scratch_iterations: u64,
    /// Iterations of each forgetting run.
    #[arg(long, default_value_t = 64)]
    forgetting_iterations: u64,
    /// Evaluate the old objective every this many iterations.
    #[arg(long, default_value_t = 8)]
    snapshot_every: u64,
    /// Suite of the old-objective evaluation (default: configs/eval/adaptation.yaml of mocc's
    /// source tree, wherever the command runs).
    #[arg(long)]
    suite: Option<PathBuf>,
    /// Moving-average window of the reward curves.
    #[arg(long, default_value_t = 5)]
    smoothing: usize,
    /// Old objective of the forgetting runs, e.g. 0.8,0.1,0.1 (default: the landmark whose
    /// throughput/latency trade-off is farthest from the first new objective's).
    #[arg(long, value_parser = mocc_policy::objective::parse)]
    old_objective: Option<[f64; 3]>,
    /// Output folder.
    #[arg(long, default_value = "runs/adaptation")]
    out: PathBuf,
    /// Continue an interrupted experiment in --out (give the same arguments): finished runs
    /// are kept, an unfinished one is trained again from its start.
    #[arg(long)]
    resume: bool,
}

/// The most PPO iterations of one of the experiment's runs.
const MAX_ITERATIONS: u64 = 1_000_000;
/// The most new objectives the experiment draws.
const MAX_OBJECTIVES: u64 = 1_000;

/// Runs `mocc experiment ...`; the last stdout line is a JSON summary.
pub fn run(args: ExperimentArgs) -> anyhow::Result<()> {
    super::ranks::Ranks::join()?.alone("mocc experiment")?;
    match args.what {
        Experiment::Adaptation(a) => adaptation(a),
        Experiment::Fig10(a) => mocc_net::remove_namespaces_on_interrupt(|| fig10(a))?,
        Experiment::Leo(a) => leo(a),
        Experiment::Fig5(a) => fig5(a),
    }
}

fn fig5(a: Fig5Args) -> anyhow::Result<()> {
    let mut policies = if a.policy.is_empty() {
        vec![
            super::shipped("checkpoints/mocc-omega36"),
            super::shipped("checkpoints/aurora"),
            super::shipped("checkpoints/orca"),
        ]
    } else {
        a.policy
    };
    for name in a.schemes.iter().filter(|n| !n.is_empty()) {
        if mocc_gym::ClassicKind::from_name(name).is_none() {
            anyhow::bail!(
                "--schemes {name}: not a classic scheme ({})",
                mocc_gym::ClassicKind::names()
            );
        }
        policies.push(PathBuf::from(name));
    }
    let suite = a
        .suite
        .unwrap_or_else(|| super::shipped("configs/eval/fig5-sweeps.yaml"));
    super::eval::evaluate(&policies, &[suite], &a.out, None)
}

/// The most seeds of `mocc experiment leo`.
const MAX_LEO_SEEDS: u64 = 100;

fn leo(a: LeoArgs) -> anyhow::Result<()> {
    use mocc_eval::leo_outputs::{run_leo_study, LEO_OUTPUTS};
    use mocc_eval::leo_study::LeoStudy;
    let mut study = if a.quick {
        LeoStudy::quick()
    } else {
        LeoStudy::standard()
    };
    if let Some(n) = a.seeds {
        super::check_count("seeds", n, MAX_LEO_SEEDS)?;
        study.seeds = (0..n).collect();
    }
    study.many_flows.record_mis = a.record_mis;
    let learned = if a.policy.is_empty() {
        vec![super::shipped("checkpoints/mocc-pair")]
    } else {
        a.policy.clone()
    };
    let mut policies = Vec::new();
    for p in &learned {
        let policy = mocc_training::checkpoint_policy::load_policy(p)
            .with_context(|| format!("--policy {}", p.display()))?;
        policies.push(policy);
    }
    for name in a.schemes.iter().filter(|n| !n.is_empty()) {
        let scheme = mocc_eval::actor::LoadedPolicy::load(std::path::Path::new(name))
            .with_context(|| format!("--schemes {name}"))?;
        if scheme.baseline().is_none() {
            anyhow::bail!(
                "--schemes {name}: not a classic scheme ({})",
                mocc_gym::ClassicKind::names()
            );
        }
        policies.push(scheme);
    }
    let staged = mocc_outputs::StagedDir::replacing(&a.out, LEO_OUTPUTS)
        .with_context(|| format!("cannot write the study to {}", a.out.display()))?;
    let report = run_leo_study(&study, &policies, staged.path(), a.record_mis, |line| {
        eprintln!("{line}")
    })?;
    write_summary(staged.path(), &report)?;
    staged
        .commit()
        .with_context(|| format!("cannot put the study in {}", a.out.display()))?;
    eprintln!(
        "outputs: {}/leo.csv, leo-summary.csv, leo-paths.png, leo-micro.png, \
         leo-fairness.png, many-flows/, summary.json",
        a.out.display()
    );
    super::print_line(serde_json::to_string(&report.verdicts)?)
}

fn fig10(a: Fig10Args) -> anyhow::Result<()> {
    use mocc_real::app::App;
    use mocc_real::fig10::{run_fig10, standard_paths, Fig10Plan, Fig10Scheme};
    let pick = |given: &Option<String>, full: &str, quick: &str| {
        given
            .clone()
            .unwrap_or_else(|| if a.quick { quick } else { full }.to_string())
    };
    let repeats = a.repeats.unwrap_or(if a.quick { 3 } else { 10 });
    super::check_count("repeats", u64::from(repeats), 1_000)?;
    let apps = [
        pick(&a.bulk, "bulk:10MB", "bulk:2MB"),
        pick(&a.rtc, "rtc:2.5mbit:30s", "rtc:2.5mbit:10s"),
        pick(&a.video, "video:mpc:48", "video:mpc:8"),
    ]
    .iter()
    .zip(["bulk", "rtc", "video"])
    .map(|(text, kind)| match App::parse(text) {
        Ok(app) if app.kind() == kind => Ok(app),
        Ok(_) => Err(anyhow::anyhow!(
            "--{kind} {text}: expected a {kind} application"
        )),
        Err(e) => Err(anyhow::anyhow!("--{kind}: {e}")),
    })
    .collect::<anyhow::Result<Vec<_>>>()?;
    let export = a
        .export
        .clone()
        .unwrap_or_else(|| super::shipped("checkpoints/mocc-pair"));
    let leo = a
        .leo
        .clone()
        .unwrap_or_else(|| super::shipped("configs/scenarios/leo.yaml"));
    mocc_policy::Policy::load(&export).with_context(|| format!("--export {}", export.display()))?;
    let plan = Fig10Plan {
        apps,
        paths: standard_paths(&leo).context("--leo")?,
        schemes: Fig10Scheme::all(&export),
        repeats,
        out: a.out.clone(),
    };
    let report = run_fig10(&plan, |line| eprintln!("{line}"))?;
    write_summary(&a.out, &report)?;
    eprintln!(
        "outputs: {}/fig10.csv, fig10.png, summary.json, <app>-runs.csv",
        a.out.display()
    );
    super::print_line(serde_json::to_string(&report.verdicts)?)
}

fn adaptation(a: AdaptationArgs) -> anyhow::Result<()> {
    super::check_count("iterations", a.iterations, MAX_ITERATIONS)?;
    super::check_count("scratch-iterations", a.scratch_iterations, MAX_ITERATIONS)?;
    super::check_count(
        "forgetting-iterations",
        a.forgetting_iterations,
        MAX_ITERATIONS,
    )?;
    super::check_count("snapshot-every", a.snapshot_every, MAX_ITERATIONS)?;
    super::check_count("k", a.k as u64, MAX_OBJECTIVES)?;
    let ckpt =
        Checkpoint::open(&a.from).with_context(|| format!("cannot use {}", a.from.display()))?;
    let state = &ckpt.state;
    let objectives = match &a.objectives {
        Some(p) => read_pool(p)
            .map_err(anyhow::Error::msg)
            .context("--objectives")?,
        None => {
            let pool = seen_objectives(&state.config).map_err(anyhow::Error::msg)?;
            sample_new_objectives(a.k, a.seed, &pool)
        }
    };
    let suite_path = a
        .suite
        .clone()
        .unwrap_or_else(|| super::shipped("configs/eval/adaptation.yaml"));
    let suite = Suite::load(&suite_path).context("--suite")?;
    let suite_text = mocc_policy::error::read_text(&suite_path).context("--suite")?;
    // What identifies the experiment: `--resume` continues only the one it was given.
    mocc_outputs::OutputMark::with_arguments(
        "mocc experiment adaptation",
        serde_json::json!({
            "from": std::fs::canonicalize(&ckpt.path).unwrap_or_else(|_| ckpt.path.clone()),
            "objectives": objectives,
            "iterations": a.iterations,
            "scratch_iterations": a.scratch_iterations,
            "forgetting_iterations": a.forgetting_iterations,
            "snapshot_every": a.snapshot_every,
            "smoothing": a.smoothing,
            "old_objective": a.old_objective,
            "suite": mocc_policy::export::sha256_hex(suite_text.as_bytes()),
        }),
    )
    .claim(&a.out, a.resume)?;
    let exp = AdaptationExperiment {
        from: ckpt.path.clone(),
        objectives,
        iterations: a.iterations,
        scratch_iterations: a.scratch_iterations,
        forgetting_iterations: a.forgetting_iterations,
        snapshot_every: a.snapshot_every,
        suite,
        smoothing: a.smoothing,
        old_objective: a.old_objective,
        out: a.out.clone(),
        resume: a.resume,
    };
    let report = run_adaptation_experiment(&exp, |line| eprintln!("{line}"))?;
    write_summary(&a.out, &report)?;
    eprintln!(
        "outputs: {}/adaptation.csv, adaptation.png, forgetting.csv, forgetting.png, summary.json",
        a.out.display()
    );
    super::print_line(serde_json::to_string(&report)?)?;
    Ok(())
}

/// Writes an experiment's report as `summary.json` in `out`.
fn write_summary(out: &std::path::Path, report: &impl serde::Serialize) -> anyhow::Result<()> {
    let summary = out.join("summary.json");
    mocc_outputs::write_file_atomic(
        &summary,
        (serde_json::to_string_pretty(report)? + "\n").as_bytes(),
    )
    .with_context(|| format!("cannot write {}", summary.display()))
}
