//! `mocc`: train, simulate, benchmark and evaluate learned congestion controllers.

mod cmd;

use clap::{Parser, Subcommand};

/// Multi-objective learned congestion control: a fast gym and trainer.
#[derive(Debug, Parser)]
#[command(name = "mocc", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Train a policy with PPO from a YAML config.
    Train(cmd::train::TrainArgs),
    /// Adapt a pretrained model to a new objective, with requirement replay.
    Adapt(cmd::adapt::AdaptArgs),
    /// Run one sender (a fixed rate, a constant action or a policy); per-MI statistics go to
    /// --out, a JSON summary of the run to stdout.
    Simulate(cmd::simulate::SimulateArgs),
    /// Train one MOCC model per omega and compare quality against training time.
    Sweep(cmd::sweep::SweepArgs),
    /// Evaluate policies on a suite of networks, objectives and seeds.
    Eval(cmd::eval::EvalArgs),
    /// Export a checkpoint as a libtorch-free policy folder (policy.json + policy.safetensors).
    Export(cmd::export::ExportArgs),
    /// Pair a cooperative and a competitive export into one that switches between them as Copa
    /// switches modes (the competitive one while a queue outlasts the flow's base-RTT probes).
    Pair(cmd::pair::PairArgs),
    /// Run one of the paper's experiments end to end (CSV, PNG and a JSON summary).
    Experiment(cmd::experiment::ExperimentArgs),
    /// Draw figures from run outputs.
    Plot(cmd::plot::PlotArgs),
    /// Measure performance.
    Bench(cmd::bench::BenchArgs),
    /// Drive real UDP flows through an emulated Linux path (root).
    Net(cmd::net::NetArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Train(args) => cmd::train::run(args),
        Command::Simulate(args) => cmd::simulate::run(args),
        Command::Adapt(args) => cmd::adapt::run(args),
        Command::Sweep(args) => cmd::sweep::run(args),
        Command::Eval(args) => cmd::eval::run(args),
        Command::Export(args) => cmd::export::run(args),
        Command::Pair(args) => cmd::pair::run(args),
        Command::Experiment(args) => cmd::experiment::run(args),
        Command::Plot(args) => cmd::plot::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Net(args) => cmd::net::run(args),
    };
    if let Err(e) = result {
        eprintln!("error: {}", error_chain(&e));
        std::process::exit(1);
    }
}

/// An error and its causes joined by ": ", skipping a cause whose text the message already
/// holds (errors that print their source, as `path: reason`, would otherwise say it twice).
fn error_chain(e: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if message.contains(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}
