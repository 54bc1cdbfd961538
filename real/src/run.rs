//! `mocc net run`: flows on a real path, together: each flow (an export's controller over UDP,
//! a constant rate, or kernel TCP) starts at its time and runs to the run's end while the path
//! follows its timeline; the run is written as results.csv (one row per flow, in
//! `mocc eval`'s metrics), one mis-<k>.csv per flow and timeseries.png.

use crate::figures::{fixed_path_title, flows_figure, RunFlow};
use crate::path::{flow_metrics, rate_driver, seconds_between};
use crate::timeline::PathTimeline;
use mocc_eval::results::RunMetrics;
use mocc_gym::ScenarioError;
use mocc_net::timing::monotonic_ns;
use mocc_net::transport::{run_controlled_flow, run_tcp_flow, FlowOutcome, RateDriver};
use mocc_net::{run_schedule, AppliedChange, NetError, PathChange, PathSpec, Topology};
use mocc_outputs::{Replaceable, StagedDir};
use mocc_plot::chart::PlotError;
use mocc_policy::{MetricsVersion, RttTally};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Why a run could not be made; the message names the argument or file at fault.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// An argument is invalid (the message names it, as `--flow X: ...`).
    #[error("{0}")]
    Invalid(String),
    /// The link spec or scenario is not a valid simulator network.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The emulated path failed: `what` says at which step.
    #[error("{what}")]
    Net {
        /// The step that failed.
        what: String,
        /// What the path said.
        #[source]
        source: NetError,
    },
    /// A flow's thread or the path schedule panicked.
    #[error("{0} panicked")]
    Panicked(String),
    /// An output file could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The figure could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
}

pub(crate) fn net_error(what: impl Into<String>) -> impl FnOnce(NetError) -> RunError {
    let what = what.into();
    move |source| RunError::Net { what, source }
}

/// One flow of a run: `SCHEME[:W_THR,W_LAT,W_LOSS][@START_S]`.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowRequest {
    /// An export folder, `const:RATE`, or kernel TCP (`cubic`, `bbr`, `reno`, `tcp:NAME`).
    pub scheme: String,
    /// The objective a learned flow decides for (none: its default).
    pub objective: Option<[f64; 3]>,
    /// Seconds after the run's start the flow starts.
    pub start_s: f64,
}

impl FlowRequest {
    /// Parses `SCHEME[:W_THR,W_LAT,W_LOSS][@START_S]`; the start must lie in the run's
    /// `[0, duration)`.
    pub fn parse(text: &str, duration: f64) -> Result<Self, RunError> {
        let bad = |m: String| RunError::Invalid(format!("--flow {text}: {m}"));
        let (rest, start_s) = match text.rsplit_once('@') {
            Some((r, s)) => (
                r,
                s.parse::<f64>()
                    .map_err(|_| bad(format!("start {s:?} is not a number")))?,
            ),
            None => (text, 0.0),
        };
        if !(start_s.is_finite() && start_s >= 0.0 && start_s < duration) {
            return Err(bad(format!(
                "start {start_s} s must lie in [0, --duration {duration})"
            )));
        }
        let (scheme, objective) = match rest.rsplit_once(':') {
            Some((s, w)) if w.contains(',') => {
                let w = mocc_policy::objective::parse(w).map_err(|e| bad(e.to_string()))?;
                (s.to_string(), Some(w))
            }
            _ => (rest.to_string(), None),
        };
        Ok(Self {
            scheme,
            objective,
            start_s,
        })
    }

    /// The kernel congestion control of a TCP flow (`cubic`, `bbr`, `reno`, `tcp:NAME`).
    pub(crate) fn kernel_tcp(&self) -> Option<&str> {
        match self.scheme.as_str() {
            "cubic" | "bbr" | "reno" => Some(self.scheme.as_str()),
            s => s.strip_prefix("tcp:"),
        }
    }
}

/// The run's path: a fixed link or a scenario's link over time, with its name in results.csv
/// and the figure's title.
#[derive(Debug, Clone)]
pub struct RunPath {
    /// The path over time.
    pub timeline: PathTimeline,
    /// Its name in results.csv.
    pub name: String,
    /// The figure's title.
    pub title: String,
}

impl RunPath {
    /// A fixed link, `bw_pps=B,delay_s=D,queue_pkts=Q[,loss=L]`, parsed with the simulator's
    /// parser and bounds.
    pub fn link(spec: &str) -> Result<Self, RunError> {
        let path = parse_link(spec)?;
        Ok(Self {
            timeline: PathTimeline::fixed(&path),
            name: spec.to_string(),
            title: fixed_path_title(&path),
        })
    }

    /// The link of a scenario file (its schedule of steps and outages; its senders are
    /// ignored).
    pub fn scenario(file: &Path) -> Result<Self, RunError> {
        let scenario = mocc_gym::Scenario::load(file)?;
        let in_file = |m: String| RunError::Invalid(format!("{}: {m}", file.display()));
        let timeline = PathTimeline::from_link_config(&scenario.config().link).map_err(in_file)?;
        timeline
            .initial()
            .validate()
            .map_err(|e| in_file(e.to_string()))?;
        let name = file.file_stem().map_or_else(
            || file.display().to_string(),
            |s| s.to_string_lossy().into(),
        );
        Ok(Self {
            title: format!("Real path: {name} (its link's schedule)"),
            timeline,
            name,
        })
    }
}

/// Parses `bw_pps=B,delay_s=D,queue_pkts=Q[,loss=L]` with the simulator's parser and bounds.
fn parse_link(spec: &str) -> Result<PathSpec, RunError> {
    let config = mocc_eval::simulate::parse_network_spec(spec)?;
    mocc_gym::Scenario::new(config.clone(), None)?;
    let one = |r: mocc_gym::Range, name: &str| match r {
        mocc_gym::Range::Fixed(v) => Ok(v),
        _ => Err(RunError::Invalid(format!(
            "--link {name}: must be one number"
        ))),
    };
    let queue = match config.link.queue_pkts {
        mocc_gym::config::QueueRange::Fixed(q) => q,
        _ => {
            return Err(RunError::Invalid(
                "--link queue_pkts: must be one number".into(),
            ))
        }
    };
    let path = PathSpec {
        bandwidth_pps: one(config.link.bandwidth_pps, "bw_pps")?,
        delay_s: one(config.link.delay_s, "delay_s")?,
        queue_pkts: queue as u32,
        loss: one(config.link.loss, "loss")?,
    };
    path.validate()
        .map_err(|e| RunError::Invalid(format!("--link: {e}")))?;
    Ok(path)
}

/// What sends a flow's data.
pub(crate) enum FlowSender {
    /// UDP at the rate a driver sets.
    Controlled(Box<dyn RateDriver>),
    /// Kernel TCP with this congestion control.
    Tcp(String),
}

/// The sender of a flow: kernel TCP, a constant rate, or an export's controller.
pub(crate) fn sender_for(r: &FlowRequest, start_rate: f64) -> Result<FlowSender, RunError> {
    match r.kernel_tcp() {
        Some(cc) if r.objective.is_some() => Err(RunError::Invalid(format!(
            "--flow {}: kernel TCP ({cc}) takes no objective",
            r.scheme
        ))),
        Some(cc) => Ok(FlowSender::Tcp(cc.to_string())),
        None => rate_driver(&r.scheme, r.objective, start_rate)
            .map(FlowSender::Controlled)
            .map_err(|m| RunError::Invalid(format!("--flow {m}"))),
    }
}

/// What a run did: every flow, when it started and the path changes applied.
pub struct RunOutcome {
    /// Every flow's outcome, in the order of the requests.
    pub outcomes: Vec<FlowOutcome>,
    /// Time 0 of the run (`monotonic_ns`).
    pub start_ns: u64,
    /// The path changes applied, with when each took effect.
    pub applied: Vec<AppliedChange>,
}

/// What [`run_flows`] wrote and its summary.
pub struct RunReport {
    /// results.csv.
    pub results: PathBuf,
    /// timeseries.png.
    pub figure: PathBuf,
    /// The run's totals and per-flow numbers (the CLI's last stdout line).
    pub summary: Summary,
}

/// The longest real-path run (a day): a run holds the host's namespaces and a core while it
/// lasts.
pub const MAX_DURATION_S: f64 = 86_400.0;

/// Refuses a run length outside (0, [`MAX_DURATION_S`]] seconds, naming `--duration`.
pub fn check_duration(duration: f64) -> Result<(), String> {
    if duration > 0.0 && duration <= MAX_DURATION_S {
        Ok(())
    } else {
        Err(format!(
            "--duration: must lie in (0, {MAX_DURATION_S}] seconds (got {duration})"
        ))
    }
}

/// What `mocc net run` writes to `--out`: results.csv (the marker), one mis-<k>.csv per flow
/// and the figure; an earlier run's outputs there are replaced as a whole.
pub const NET_RUN_OUTPUTS: Replaceable = Replaceable {
    what: "a real-path run's outputs",
    owns: |name, is_dir| !is_dir && (name.ends_with(".csv") || name.ends_with(".png")),
    marker: "results.csv",
    command: Some("mocc net run"),
};

/// The run's figure in its output folder.
const FIGURE: &str = "timeseries.png";

/// Runs `requests` together on `path` for `duration` seconds (learned flows start at
/// `start_rate` packets/s, default half the bottleneck's rate) and writes results.csv, one
/// mis-<k>.csv per flow and timeseries.png into `out` (new, empty or an earlier run's outputs),
/// which appears with all of them or not at all.
pub fn run_flows(
    path: &RunPath,
    requests: &[FlowRequest],
    duration: f64,
    start_rate: Option<f64>,
    out: &Path,
) -> Result<RunReport, RunError> {
    let link = path.timeline.initial();
    check_duration(duration).map_err(RunError::Invalid)?;
    let start_rate = start_rate.unwrap_or(link.bandwidth_pps / 2.0);
    mocc_gym::limits::check_rate(start_rate)
        .map_err(|m| RunError::Invalid(format!("--start-rate: {m}")))?;
    let senders = requests
        .iter()
        .map(|r| sender_for(r, start_rate))
        .collect::<Result<Vec<_>, _>>()?;
    let staged = StagedDir::replacing(out, NET_RUN_OUTPUTS).map_err(|e| RunError::Write {
        path: e.path,
        source: e.source,
    })?;
    let topology = Topology::create(&link).map_err(net_error("cannot build the emulated path"))?;
    let changes = path.timeline.changes(duration);
    let together = run_together(&topology, requests, senders, &changes, duration)?;
    topology
        .close()
        .map_err(net_error("cannot remove the emulated path"))?;
    let rows = result_rows(path, together.start_ns, requests, &together.outcomes);
    write_results(staged.path(), &rows, &together.outcomes)?;
    draw_run(&staged.path().join(FIGURE), path, requests, &together)?;
    staged.commit().map_err(|e| RunError::Write {
        path: e.path,
        source: e.source,
    })?;
    let figure = out.join(FIGURE);
    let span = together
        .outcomes
        .iter()
        .map(|o| seconds_between(together.start_ns, o.started_ns) + o.duration_s)
        .fold(0.0, f64::max);
    Ok(RunReport {
        results: out.join("results.csv"),
        figure,
        summary: summary(&path.timeline, span, &rows, &together),
    })
}

fn draw_run(
    png: &Path,
    path: &RunPath,
    requests: &[FlowRequest],
    run: &RunOutcome,
) -> Result<(), PlotError> {
    let flows: Vec<RunFlow<'_>> = requests
        .iter()
        .zip(&run.outcomes)
        .map(|(r, o)| RunFlow {
            name: &r.scheme,
            start_s: seconds_between(run.start_ns, o.origin_ns),
            outcome: o,
        })
        .collect();
    flows_figure(png, path.title.clone(), &path.timeline, &flows)
}

/// Runs every flow at its start time until the run's end, changing the path as `changes`
/// say meanwhile.
fn run_together(
    topology: &Topology,
    requests: &[FlowRequest],
    senders: Vec<FlowSender>,
    changes: &[PathChange],
    duration: f64,
) -> Result<RunOutcome, RunError> {
    let stop = AtomicBool::new(false);
    let (start, start_ns) = (Instant::now(), monotonic_ns());
    let (outcomes, applied) = std::thread::scope(|scope| {
        let schedule = scope.spawn(|| run_schedule(topology, changes, start, &stop));
        let outcomes = run_flows_in(scope, topology, requests, senders, duration);
        stop.store(true, Ordering::Relaxed);
        let applied = schedule
            .join()
            .map_err(|_| RunError::Panicked("the path schedule".into()))?
            .map_err(net_error("cannot change the path during the run"))?;
        Ok::<_, RunError>((outcomes?, applied))
    })?;
    Ok(RunOutcome {
        outcomes,
        start_ns,
        applied,
    })
}

/// Starts every flow in `scope` at its time and waits for all of them.
fn run_flows_in<'s>(
    scope: &'s std::thread::Scope<'s, '_>,
    topology: &'s Topology,
    requests: &'s [FlowRequest],
    senders: Vec<FlowSender>,
    duration: f64,
) -> Result<Vec<FlowOutcome>, RunError> {
    let timed = requests
        .iter()
        .zip(senders)
        .map(|(r, sender)| TimedFlow {
            name: &r.scheme,
            sender,
            start_s: r.start_s,
            length_s: duration - r.start_s,
        })
        .collect();
    run_timed_flows(scope, topology, timed)
}

/// A flow of a real run: what sends, when it starts and for how long.
pub(crate) struct TimedFlow<'a> {
    /// The flow's name in errors.
    pub name: &'a str,
    /// What sends its data.
    pub sender: FlowSender,
    /// Seconds after the run's start it starts.
    pub start_s: f64,
    /// Seconds it sends for.
    pub length_s: f64,
}

/// Starts every flow in `scope` at its start time, lets it send for its length, and waits for
/// all of them; outcomes in the order of `flows`.
pub(crate) fn run_timed_flows<'s>(
    scope: &'s std::thread::Scope<'s, '_>,
    topology: &'s Topology,
    flows: Vec<TimedFlow<'s>>,
) -> Result<Vec<FlowOutcome>, RunError> {
    let names: Vec<&str> = flows.iter().map(|f| f.name).collect();
    let handles: Vec<_> = flows
        .into_iter()
        .enumerate()
        .map(|(k, f)| {
            scope.spawn(move || {
                std::thread::sleep(Duration::from_secs_f64(f.start_s));
                let length = Duration::from_secs_f64(f.length_s);
                match f.sender {
                    FlowSender::Controlled(d) => run_controlled_flow(topology, k as u16, d, length),
                    FlowSender::Tcp(cc) => run_tcp_flow(topology, &cc, length),
                }
            })
        })
        .collect();
    handles
        .into_iter()
        .enumerate()
        .map(|(k, h)| {
            h.join()
                .map_err(|_| RunError::Panicked(format!("flow {k}")))?
                .map_err(net_error(format!("flow {k} ({})", names[k])))
        })
        .collect()
}

/// One row of results.csv.
#[derive(Debug, Clone, Serialize)]
struct ResultRow {
    source: &'static str,
    flow: usize,
    policy: String,
    network: String,
    w_thr: f64,
    w_lat: f64,
    w_loss: f64,
    start_s: f64,
    #[serde(flatten)]
    metrics: RunMetrics,
}

fn result_rows(
    run: &RunPath,
    start_ns: u64,
    requests: &[FlowRequest],
    outcomes: &[FlowOutcome],
) -> Vec<ResultRow> {
    requests
        .iter()
        .zip(outcomes)
        .enumerate()
        .map(|(k, (r, o))| {
            let w = r.objective.unwrap_or([1.0 / 3.0; 3]);
            ResultRow {
                source: "real",
                flow: k,
                policy: r.scheme.clone(),
                network: run.name.clone(),
                w_thr: w[0],
                w_lat: w[1],
                w_loss: w[2],
                start_s: r.start_s,
                metrics: flow_metrics(o, &run.timeline, start_ns, MetricsVersion::default(), w),
            }
        })
        .collect()
}

fn write_results(out: &Path, rows: &[ResultRow], outcomes: &[FlowOutcome]) -> Result<(), RunError> {
    let mut csv = format!(
        "source,flow,policy,network,w_thr,w_lat,w_loss,start_s,{}\n",
        RunMetrics::COLUMNS
    );
    for r in rows {
        csv.push_str(&format!(
            "{},{},{},{},{},{},{},{}",
            mocc_outputs::csv::cell(r.source),
            r.flow,
            mocc_outputs::csv::cell(&r.policy),
            mocc_outputs::csv::cell(&r.network),
            r.w_thr,
            r.w_lat,
            r.w_loss,
            r.start_s,
        ));
        for v in r.metrics.values() {
            csv.push_str(&format!(",{}", mocc_outputs::csv::number(Some(v))));
        }
        csv.push('\n');
    }
    write_file(&out.join("results.csv"), csv.as_bytes())?;
    for (k, o) in outcomes.iter().enumerate() {
        let text = mocc_net::transport::MiRecord::csv_text(&o.mis);
        write_file(&out.join(format!("mis-{k}.csv")), text.as_bytes())?;
    }
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    mocc_outputs::write_file_atomic(path, bytes).map_err(|e| RunError::Write {
        path: e.path,
        source: e.source,
    })
}

/// A run's totals over its flows and each flow's numbers.
#[derive(Debug, Serialize)]
pub struct Summary {
    utilization: f64,
    thr_pps: f64,
    mean_rtt_s: f64,
    rtt_ratio: f64,
    loss: f64,
    /// Path changes of a scenario's schedule: when each was due and when it took effect (s).
    path_changes: Vec<ChangeSummary>,
    flows: Vec<FlowSummary>,
}

#[derive(Debug, Serialize)]
struct ChangeSummary {
    at_s: f64,
    applied_s: f64,
}

#[derive(Debug, Serialize)]
struct FlowSummary {
    policy: String,
    utilization: f64,
    thr_pps: f64,
    mean_rtt_s: f64,
    rtt_ratio: f64,
    loss: f64,
    handshake_rtt_s: f64,
    pacing_p99_late_s: f64,
    cpu_per_packet_s: f64,
}

/// Totals over flows: delivered packets over what the path could carry during the run's
/// `seconds` (from its start to the last flow's end), RTT weighted by samples (its ratio
/// against the base RTT in force when each MI ended), loss over resolved packets.
fn summary(path: &PathTimeline, seconds: f64, rows: &[ResultRow], run: &RunOutcome) -> Summary {
    let (outcomes, start_ns) = (&run.outcomes, run.start_ns);
    let delivered: f64 = outcomes.iter().map(|o| o.acked as f64).sum();
    let (lost, acked) = outcomes
        .iter()
        .fold((0u64, 0u64), |(l, a), o| (l + o.lost, a + o.acked));
    let (mut rtts, mut ratios) = (RttTally::default(), RttTally::default());
    for o in outcomes {
        let origin_s = seconds_between(start_ns, o.origin_ns);
        for r in &o.mis {
            rtts.add(&r.mi.rtt, 1.0);
            ratios.add(&r.mi.rtt, path.base_rtt_s(origin_s + r.mi.send_end_s));
        }
    }
    Summary {
        utilization: delivered / path.capacity_pkts(0.0, seconds).max(1e-9),
        thr_pps: delivered / seconds.max(1e-9),
        mean_rtt_s: rtts.mean().unwrap_or(0.0),
        rtt_ratio: ratios.mean().unwrap_or(0.0),
        loss: if lost + acked > 0 {
            lost as f64 / (lost + acked) as f64
        } else {
            0.0
        },
        path_changes: run
            .applied
            .iter()
            .map(|c| ChangeSummary {
                at_s: c.change.at_s,
                applied_s: c.applied_s,
            })
            .collect(),
        flows: rows
            .iter()
            .zip(outcomes)
            .map(|(r, o)| FlowSummary {
                policy: r.policy.clone(),
                utilization: r.metrics.utilization,
                thr_pps: r.metrics.thr_pps,
                mean_rtt_s: r.metrics.mean_rtt_s,
                rtt_ratio: r.metrics.rtt_ratio,
                loss: r.metrics.loss,
                handshake_rtt_s: o.handshake_rtt_s,
                pacing_p99_late_s: o.pacing.p99_late_s,
                cpu_per_packet_s: o.pacing.cpu_per_packet_s,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_parses_its_scheme_objective_and_start() {
        let f = FlowRequest::parse("runs/x:0.5,0.3,0.2@2.5", 10.0).unwrap();
        assert_eq!(f.scheme, "runs/x");
        assert_eq!(f.objective, Some([0.5, 0.3, 0.2]));
        assert_eq!(f.start_s, 2.5);
        let tcp = FlowRequest::parse("tcp:vegas", 10.0).unwrap();
        assert_eq!(tcp.kernel_tcp(), Some("vegas"));
        assert_eq!(tcp.objective, None);
        assert_eq!(
            FlowRequest::parse("cubic", 1.0).unwrap().kernel_tcp(),
            Some("cubic")
        );
    }

    #[test]
    fn a_flow_must_start_within_the_run() {
        let e = FlowRequest::parse("cubic@10", 10.0)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--flow cubic@10: start 10 s must lie in [0, --duration 10)"
        );
        let e = FlowRequest::parse("cubic@x", 10.0).unwrap_err().to_string();
        assert!(e.contains("start \"x\" is not a number"), "{e}");
    }

    #[test]
    fn kernel_tcp_takes_no_objective() {
        let f = FlowRequest::parse("bbr:0.5,0.3,0.2", 10.0).unwrap();
        let e = sender_for(&f, 100.0).err().expect("refused").to_string();
        assert_eq!(e, "--flow bbr: kernel TCP (bbr) takes no objective");
    }

    #[test]
    fn a_link_must_be_fixed_numbers() {
        let p = parse_link("bw_pps=500,delay_s=0.02,queue_pkts=40,loss=0.01").unwrap();
        assert_eq!(
            (p.bandwidth_pps, p.delay_s, p.queue_pkts, p.loss),
            (500.0, 0.02, 40, 0.01)
        );
    }
}
