//! `mocc sweep`.

use super::ranks::Ranks;
use anyhow::Context;
use clap::Args;
use mocc_eval::suite::Suite;
use mocc_training::config::LoadedConfig;
use mocc_training::recipe::is_recipe_text;
use mocc_training::sweep::{pooled_by_omega, sweep_on, write_csv, SweepPlan};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `mocc sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// A MOCC training config (an omega sweep: its budget per landmark is kept for every
    /// omega), or a recipe (a sweep over seeds: each seed's recipe run, its targets on the
    /// recipe's validation suites, and the report over seeds).
    config: PathBuf,
    /// Landmark counts, comma-separated (each C(n-1, 2): 3, 6, 10, 15, 21, 28, 36, ...); a
    /// config's sweep only.
    #[arg(long, value_delimiter = ',')]
    omega: Vec<usize>,
    /// Evaluation suite of an omega sweep (default: configs/eval/mocc-grid.yaml of mocc's
    /// source tree, wherever the command runs); a recipe is judged on its own validation
    /// suites.
    #[arg(long)]
    suite: Option<PathBuf>,
    /// Output folder (default runs/sweep): an omega sweep's runs, sweep.csv and sweep.png; a
    /// recipe's seed-N/ runs, against/ evaluations and report.json, report.md, report.png.
    #[arg(long, default_value = "runs/sweep")]
    out: PathBuf,
    /// Training seeds: `1-6`, `1,4,9` or both (`1-3,7`). An omega sweep runs one model per
    /// omega and seed (default: the config's seed); a recipe sweep needs them.
    #[arg(long, value_parser = parse_seed_list)]
    seeds: Option<SeedList>,
    /// A policy to compare a recipe's seeds against (a baseline such as copa, an export, a
    /// checkpoint; repeatable): evaluated once on the recipe's validation suites.
    #[arg(long)]
    against: Vec<PathBuf>,
    /// Override a config value (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
    /// Continue an interrupted sweep in --out (give the same arguments): finished runs are
    /// evaluated again, an interrupted one resumes from its newest checkpoint.
    #[arg(long)]
    resume: bool,
}

/// Runs `mocc sweep`; the last stdout line is a JSON array of the sweep rows. Under `mpirun`
/// (a binary built with the `mpi` feature) the runs are spread over the ranks and rank 0
/// writes the outputs.
pub fn run(args: SweepArgs) -> anyhow::Result<()> {
    let ranks = Ranks::join()?;
    sweep_ranks(&ranks, args).map_err(|e| ranks.fail(e))
}

fn sweep_ranks(ranks: &Ranks, args: SweepArgs) -> anyhow::Result<()> {
    let text = mocc_policy::error::read_text(&args.config)?;
    if is_recipe_text(&text) {
        return super::recipe::sweep_recipe(
            ranks,
            &args.config,
            &args.set,
            &args.out,
            args.resume,
            args.seeds.clone().map(|s| s.0).unwrap_or_default(),
            &args.against,
            !args.omega.is_empty() || args.suite.is_some(),
        );
    }
    if !args.against.is_empty() {
        anyhow::bail!("--against compares a recipe's seeds; an omega sweep takes none");
    }
    if args.omega.is_empty() {
        anyhow::bail!("--omega: required for a config's sweep (e.g. --omega 3,10,36)");
    }
    // Arguments before files: a bad --omega is named before any file is read.
    mocc_training::sweep::check_plan(
        &args.omega,
        args.seeds.as_ref().map_or(&[][..], |s| &s.0[..]),
    )?;
    let base = LoadedConfig::load(&args.config, &args.set)?;
    let suite_path = args
        .suite
        .clone()
        .unwrap_or_else(|| super::shipped("configs/eval/mocc-grid.yaml"));
    let suite = Suite::load(&suite_path).context("--suite")?;
    if ranks.is_root() {
        sweep_mark(&args, &base, &suite_path)?.claim(&args.out, args.resume)?;
    }
    let rank = ranks.world.rank();
    let plan = SweepPlan {
        omegas: args.omega.clone(),
        seeds: args.seeds.clone().map(|s| s.0).unwrap_or_default(),
        resume: args.resume,
    };
    let rows = sweep_on(&base, &plan, &suite, &args.out, &ranks.world, |r| {
        // One write per line: mpirun forwards every rank's stderr, and lines written in
        // pieces would interleave.
        let line = format!(
            "omega {} seed {} (rank {rank}): {:.1} s, {} env steps, median reward {:.4}\n",
            r.omega, r.seed, r.wall_seconds, r.env_steps, r.p50
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
    })?;
    let Some(rows) = rows else {
        return Ok(());
    };
    write_csv(&args.out.join("sweep.csv"), &rows)?;
    mocc_training::plot::sweep_figure(&args.out.join("sweep.png"), &pooled_by_omega(&rows))?;
    super::print_line(serde_json::to_string(&rows)?)?;
    Ok(())
}

/// What identifies an omega sweep, recorded in its folder so that `--resume` continues only
/// the sweep it was given: the resolved config (every `--set` applied), the omegas, the seeds
/// and the suite's text.
fn sweep_mark(
    args: &SweepArgs,
    base: &LoadedConfig,
    suite_path: &std::path::Path,
) -> anyhow::Result<mocc_outputs::OutputMark> {
    let config = serde_json::to_value(&base.resolved()?.config)?;
    let suite_text = mocc_policy::error::read_text(suite_path).context("--suite")?;
    Ok(mocc_outputs::OutputMark::with_arguments(
        "mocc sweep",
        serde_json::json!({
            "config": config,
            "omega": args.omega,
            "seeds": args.seeds.as_ref().map(|s| s.0.clone()),
            "suite": mocc_policy::export::sha256_hex(suite_text.as_bytes()),
        }),
    ))
}

/// The seeds of `--seeds`, in the order given.
#[derive(Debug, Clone)]
pub struct SeedList(pub Vec<u64>);

fn parse_seed_list(text: &str) -> Result<SeedList, String> {
    parse_seeds(text).map(SeedList)
}

/// `1-6`, `1,4,9`, `1-3,7`: the seeds in the order given.
pub fn parse_seeds(text: &str) -> Result<Vec<u64>, String> {
    let mut seeds = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let number = |s: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| format!("{s:?}: not a whole number >= 0"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if b < a || b - a >= 1000 {
                    return Err(format!("{part}: a range runs up, over at most 1000 seeds"));
                }
                seeds.extend(a..=b);
            }
            None => seeds.push(number(part)?),
        }
    }
    if seeds.is_empty() {
        return Err("no seeds given".into());
    }
    Ok(seeds)
}

#[cfg(test)]
mod tests {
    use super::parse_seeds;

    #[test]
    fn seeds_take_ranges_and_lists() {
        assert_eq!(parse_seeds("1-6").unwrap(), vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(parse_seeds("1-3,7").unwrap(), vec![1, 2, 3, 7]);
        assert_eq!(parse_seeds("5").unwrap(), vec![5]);
        assert!(parse_seeds("6-1").unwrap_err().contains("runs up"));
        assert!(parse_seeds("a").unwrap_err().contains("not a whole number"));
        assert!(parse_seeds("").is_err());
    }
}
