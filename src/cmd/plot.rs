//! `mocc plot`.

use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Arguments of `mocc plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    #[command(subcommand)]
    what: PlotTarget,
}

#[derive(Debug, Subcommand)]
enum PlotTarget {
    /// Learning curve of a run folder (from its metrics.csv).
    Curve {
        /// The run folder.
        run: PathBuf,
        /// Output PNG (default: RUN/learning_curve.png).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// Runs `mocc plot ...`.
pub fn run(args: PlotArgs) -> anyhow::Result<()> {
    match args.what {
        PlotTarget::Curve { run, out } => {
            let out = out.unwrap_or_else(|| run.join("learning_curve.png"));
            mocc_training::plot::learning_curve(&run, &out)?;
            super::print_line(out.display())?;
        }
    }
    Ok(())
}
