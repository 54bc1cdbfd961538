//! `mocc export`.

use anyhow::Context;
use clap::Args;
use mocc_training::export::{export_checkpoint, ExportOptions};
use std::path::PathBuf;

/// Arguments of `mocc export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A checkpoint folder, or a run folder (its newest checkpoint).
    checkpoint: PathBuf,
    /// Export folder (created): policy.json + policy.safetensors.
    #[arg(long)]
    out: PathBuf,
    /// Also write policy.pt, a TorchScript module (raw obs [B, obs_dim], objective [B, 3]) ->
    /// mean action [B, 1], for `torch.jit.load`.
    #[arg(long)]
    torchscript: bool,
}

/// The tool and revision written into exports.
pub fn exported_by() -> String {
    format!(
        "mocc {} (rev {})",
        env!("CARGO_PKG_VERSION"),
        env!("MOCC_GIT_REVISION")
    )
}

/// Runs `mocc export`; the last stdout line is the JSON of policy.json.
pub fn run(args: ExportArgs) -> anyhow::Result<()> {
    let options = ExportOptions {
        torchscript: args.torchscript,
        exported_by: exported_by(),
    };
    let spec = export_checkpoint(&args.checkpoint, &args.out, &options)
        .with_context(|| format!("cannot export {}", args.checkpoint.display()))?;
    eprintln!("export: {}", args.out.display());
    super::print_line(serde_json::to_string(&spec)?)?;
    Ok(())
}
