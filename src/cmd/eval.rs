//! `mocc eval`.

use anyhow::Context;
use clap::Args;
use mocc_training::eval::{evaluate, summarize, write_csv, LoadedPolicy, Suite};
use std::path::PathBuf;

/// Arguments of `mocc eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// A checkpoint folder, a run folder (its newest checkpoint), an export folder, or a
    /// baseline: cubic, bbr, copa, vegas, const:RATE (packets/s). Repeat to compare.
    #[arg(long, required = true)]
    policy: Vec<PathBuf>,
    /// Suite file (networks, objectives, seeds, steps).
    #[arg(long)]
    suite: PathBuf,
    /// Output folder for results.csv (default: runs/eval).
    #[arg(long, default_value = "runs/eval")]
    out: PathBuf,
}

/// Runs `mocc eval`; the last stdout line is the JSON of the metric means.
pub fn run(args: EvalArgs) -> anyhow::Result<()> {
    let suite = Suite::load(&args.suite)?;
    let mut rows = Vec::new();
    for p in &args.policy {
        let policy =
            LoadedPolicy::load(p).with_context(|| format!("cannot load policy {}", p.display()))?;
        rows.extend(evaluate(&policy, &suite)?);
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let csv = args.out.join("results.csv");
    let file =
        std::fs::File::create(&csv).with_context(|| format!("cannot create {}", csv.display()))?;
    write_csv(std::io::BufWriter::new(file), &rows)
        .with_context(|| format!("cannot write {}", csv.display()))?;
    eprintln!("results: {}", csv.display());
    println!("{}", serde_json::to_string(&summarize(&rows))?);
    Ok(())
}
