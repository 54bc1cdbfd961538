//! `mocc pair`.

use anyhow::Context;
use clap::Args;
use mocc_outputs::StagedDir;
use mocc_policy::{CapacityTrains, ModeSwitch, Policy, RateError};
use std::path::PathBuf;

/// Arguments of `mocc pair`.
#[derive(Debug, Args)]
pub struct PairArgs {
    /// Export folder of the cooperative policy (decides by default; `mocc export` writes one).
    cooperative: PathBuf,
    /// Export folder of the competitive policy (decides while a queue outlasts the probes).
    competitive: PathBuf,
    /// Paired export folder (new or empty; it appears complete or not at all): the cooperative
    /// export with `action.mode_switch`, and the competitive one in `competitive/`.
    #[arg(long)]
    out: PathBuf,
    /// An MI within this multiple of the lowest latency sees no queue (> 1).
    #[arg(long, default_value_t = ModeSwitch::default().queue_ratio)]
    queue_ratio: f64,
    /// Probe after this many seconds without an MI that sees the path, whether or not the
    /// probe timer would (default: only the timer's probes).
    #[arg(long)]
    probe_after_s: Option<f64>,
    /// The latency the switch compares with is the lowest of the last this many to twice as
    /// many seconds (default: the connection's lowest).
    #[arg(long)]
    lowest_window_s: Option<f64>,
    /// After a competitive MI that lost more than this fraction of its packets, the next rate
    /// is at most what that MI delivered (in (0, 1); default: no bound).
    #[arg(long)]
    competitive_max_loss: Option<f64>,
    /// PACKETS,FRACTION,WINDOW_S: send PACKETS back to back at each MI's start and read the
    /// peak delivery rate as at least FRACTION of the median rate those trains measured over
    /// the last WINDOW_S seconds, a reference every flow on the path shares (default: each
    /// flow's own peak); RATIO_EXPONENT (default 1): `peak delivery ratio` below 1 is read as
    /// ratio^RATIO_EXPONENT.
    #[arg(long, value_parser = parse_capacity_trains)]
    capacity_trains: Option<CapacityTrains>,
}

/// `--capacity-trains PACKETS,FRACTION,WINDOW_S[,RATIO_EXPONENT]`, each checked.
fn parse_capacity_trains(text: &str) -> Result<CapacityTrains, String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let (packets, fraction, window_s, exponent) = match parts[..] {
        [p, f, w] => (p, f, w, None),
        [p, f, w, e] => (p, f, w, Some(e)),
        _ => {
            return Err(format!(
                "expected PACKETS,FRACTION,WINDOW_S[,RATIO_EXPONENT] (e.g. 3,0.95,2), got {text:?}"
            ))
        }
    };
    let number = |name: &str, cell: &str| {
        cell.parse::<f64>()
            .map_err(|_| format!("{name}: not a number: {cell:?}"))
    };
    let trains = CapacityTrains {
        packets: packets
            .parse()
            .map_err(|_| format!("PACKETS: not a whole number: {packets:?}"))?,
        fraction: number("FRACTION", fraction)?,
        window_s: number("WINDOW_S", window_s)?,
        ratio_exponent: exponent.map_or(Ok(1.0), |e| number("RATIO_EXPONENT", e))?,
    };
    trains
        .validate()
        .map_err(|(field, message)| format!("{field} {message}"))?;
    Ok(trains)
}

/// Who declares what `mocc pair` adds to the halves' rules untrained.
const DECLARED_BY: &str = "mocc pair";

/// Runs `mocc pair`; the last stdout line is the JSON of the paired policy.json.
pub fn run(args: PairArgs) -> anyhow::Result<()> {
    let switch = ModeSwitch {
        queue_ratio: args.queue_ratio,
        probe_after_s: args.probe_after_s,
        lowest_window_s: args.lowest_window_s,
        competitive_max_loss: args.competitive_max_loss,
    };
    switch
        .validate()
        .map_err(|RateError::Invalid { field, message }| {
            let flag = field.trim_start_matches("mode_switch.").replace('_', "-");
            anyhow::anyhow!("--{flag}: {message}")
        })?;
    let load = |path: &PathBuf, role: &str| {
        Policy::load(path).with_context(|| format!("cannot load the {role} export"))
    };
    let cooperative = load(&args.cooperative, "cooperative")?
        .with_capacity_trains(args.capacity_trains, DECLARED_BY)?;
    let competitive = load(&args.competitive, "competitive")?
        .with_capacity_trains(args.capacity_trains, DECLARED_BY)?;
    let write = || -> anyhow::Result<Policy> {
        let staged = StagedDir::new(&args.out)?;
        mocc_outputs::write_pair(
            staged.path(),
            &cooperative,
            &competitive,
            switch,
            DECLARED_BY,
        )?;
        staged.commit()?;
        Ok(Policy::load(&args.out)?)
    };
    let paired =
        write().with_context(|| format!("cannot write the pair to {}", args.out.display()))?;
    eprintln!("pair: {}", args.out.display());
    super::print_line(serde_json::to_string(paired.spec())?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_capacity_trains;

    #[test]
    fn capacity_trains_take_an_optional_ratio_exponent() {
        let three = parse_capacity_trains("3, 0.95, 2").unwrap();
        assert_eq!(
            (three.packets, three.fraction, three.window_s),
            (3, 0.95, 2.0)
        );
        assert_eq!(three.ratio_exponent, 1.0);
        let four = parse_capacity_trains("3,0.95,2,0.5").unwrap();
        assert_eq!(four.ratio_exponent, 0.5);
        for (text, message) in [
            (
                "3,0.95,2,0",
                "capacity_trains.ratio_exponent must lie in (0, 1]",
            ),
            ("3,0.95,2,y", "RATIO_EXPONENT: not a number"),
            (
                "3,0.95,2,0.5,1",
                "expected PACKETS,FRACTION,WINDOW_S[,RATIO_EXPONENT]",
            ),
        ] {
            let error = parse_capacity_trains(text).unwrap_err();
            assert!(error.contains(message), "{text}: {error}");
        }
    }
}
