//! `mocc net`: policies driving real UDP flows through an emulated Linux path.

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use mocc_eval::eval::RunMetrics;
use mocc_net::timing::monotonic_ns;
use mocc_net::transport::{run_controlled_flow, run_tcp_flow, FlowOutcome, RateDriver};
use mocc_net::{run_schedule, AppliedChange, PathChange, PathSpec, Topology};
use mocc_policy::{MetricsVersion, RttTally};
use mocc_real::compare::{compare, CompareRow, RealRuns};
use mocc_real::figures::{fixed_path_title, flows_figure, RunFlow};
use mocc_real::path::{flow_metrics, rate_driver, seconds_between};
use mocc_real::timeline::PathTimeline;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use std::time::Instant;

/// Arguments of `mocc net`.
#[derive(Debug, Args)]
pub struct NetArgs {
    #[command(subcommand)]
    what: NetCommand,
}

#[derive(Debug, Subcommand)]
enum NetCommand {
    /// Run flows through a real emulated path (root; network namespaces, tbf + pfifo, nftables
    /// loss, a user-space delay line) and report them as `mocc eval` does.
    Run(RunArgs),
    /// Every network and objective of an eval suite, the same run in the simulator and on the
    /// real path (alone on the link from half its rate, --duration seconds), side by side
    /// (compare.csv, compare.png; root).
    Compare(CompareArgs),
}

/// Arguments of `mocc net compare`.
#[derive(Debug, Args)]
struct CompareArgs {
    /// A policy: an export folder, const:RATE, or cubic / bbr (the simulator's model against
    /// the kernel's; repeatable).
    #[arg(long = "policy", required = true)]
    policies: Vec<String>,
    /// Eval suite: its networks, objectives and seeds (the simulator runs once per seed; other
    /// sections are left out).
    #[arg(long)]
    suite: PathBuf,
    /// Seconds of each run, real and simulated.
    #[arg(long, default_value_t = 20.0)]
    duration: f64,
    /// Real runs per network and objective (averaged).
    #[arg(long, default_value_t = 1)]
    repeats: u32,
    /// Output folder: compare.csv and compare.png.
    #[arg(long)]
    out: PathBuf,
}

/// Arguments of `mocc net run`.
#[derive(Debug, Args)]
struct RunArgs {
    /// The bottleneck: bw_pps=B,delay_s=D,queue_pkts=Q[,loss=L] (one-way delay, 1500-byte
    /// packets).
    #[arg(
        long,
        required_unless_present = "scenario",
        conflicts_with = "scenario"
    )]
    link: Option<String>,
    /// Instead of --link: a scenario file whose link (fixed numbers, with an optional schedule
    /// of bandwidth, delay and loss steps and outages) the real path follows during the run;
    /// its senders are ignored (give --flow).
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// A flow: SCHEME[:W_THR,W_LAT,W_LOSS][@START_S], SCHEME an export folder (`mocc export`),
    /// const:RATE (packets/s), or a kernel TCP flow: cubic, bbr, reno (tcp:NAME for another
    /// congestion control the kernel has). Repeat for several flows sharing the bottleneck.
    #[arg(long = "flow", required = true)]
    flows: Vec<String>,
    /// Seconds from the first flow's start to the end of the run.
    #[arg(long, default_value_t = 20.0)]
    duration: f64,
    /// Rate a learned flow starts at (packets/s; default: half the bottleneck's rate).
    #[arg(long)]
    start_rate: Option<f64>,
    /// Output folder: results.csv, one mis-<k>.csv per flow and timeseries.png.
    #[arg(long)]
    out: PathBuf,
}

/// One `--flow`.
#[derive(Debug, Clone)]
struct FlowRequest {
    scheme: String,
    objective: Option<[f64; 3]>,
    start_s: f64,
}

/// Runs `mocc net ...`.
pub fn run(args: NetArgs) -> anyhow::Result<()> {
    // Ctrl-C or SIGTERM mid-run removes the namespaces and exits with the signal's status.
    mocc_net::remove_namespaces_on_interrupt(|| match args.what {
        NetCommand::Run(a) => run_flows(a),
        NetCommand::Compare(a) => compare_suite(a),
    })?
}

fn compare_suite(a: CompareArgs) -> anyhow::Result<()> {
    if !(a.duration.is_finite() && a.duration > 0.0) {
        bail!("--duration: must be > 0 (got {})", a.duration);
    }
    if a.repeats == 0 {
        bail!("--repeats: must be >= 1 (got 0)");
    }
    let suite = mocc_eval::suite::Suite::load(&a.suite)?;
    if suite.networks.is_empty() {
        bail!(
            "{}: networks: the comparison needs at least one",
            a.suite.display()
        );
    }
    for p in &a.policies {
        if mocc_real::compare::kernel_tcp(p).is_none() {
            rate_driver(p, None, 100.0).map_err(|m| anyhow::anyhow!("--policy {m}"))?;
        }
    }
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))?;
    let runs = RealRuns {
        duration_s: a.duration,
        repeats: a.repeats,
    };
    let mut rows = Vec::new();
    for p in &a.policies {
        rows.extend(compare(p, &suite, runs, |line| eprintln!("{line}"))?);
    }
    let csv = a.out.join("compare.csv");
    mocc_real::compare::write_csv(&csv, &rows)?;
    let png = a.out.join("compare.png");
    mocc_real::compare::figure(&png, &rows)?;
    eprintln!("results: {}\nfigure: {}", csv.display(), png.display());
    super::print_line(serde_json::to_string(&compare_summary(&a.policies, &rows))?)
}

/// Per policy: how far the real path is from the simulator over the suite.
#[derive(Debug, Serialize)]
struct CompareSummary {
    policy: String,
    cases: usize,
    max_abs_utilization_diff: f64,
    max_rel_rtt_ratio_diff: f64,
    max_abs_loss_diff: f64,
}

fn compare_summary(policies: &[String], rows: &[CompareRow]) -> Vec<CompareSummary> {
    policies
        .iter()
        .map(|p| {
            let mine: Vec<&CompareRow> = rows.iter().filter(|r| &r.policy == p).collect();
            let max =
                |f: &dyn Fn(&CompareRow) -> f64| mine.iter().map(|r| f(r)).fold(0.0, f64::max);
            CompareSummary {
                policy: p.clone(),
                cases: mine.len(),
                max_abs_utilization_diff: max(&|r| (r.real.utilization - r.sim.utilization).abs()),
                max_rel_rtt_ratio_diff: max(&|r| {
                    (r.real.rtt_ratio / r.sim.rtt_ratio.max(1e-9) - 1.0).abs()
                }),
                max_abs_loss_diff: max(&|r| (r.real.loss - r.sim.loss).abs()),
            }
        })
        .collect()
}

/// The run's path: `--link` or `--scenario`, with its name in results.csv and the figure's
/// title.
struct RunPath {
    timeline: PathTimeline,
    name: String,
    title: String,
}

fn run_path(a: &RunArgs) -> anyhow::Result<RunPath> {
    if let Some(file) = &a.scenario {
        let scenario = mocc_gym::Scenario::load(file)?;
        let timeline = PathTimeline::from_link_config(&scenario.config().link)
            .map_err(|m| anyhow::anyhow!("{}: {m}", file.display()))?;
        timeline
            .initial()
            .validate()
            .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        let name = file.file_stem().map_or_else(
            || file.display().to_string(),
            |s| s.to_string_lossy().into(),
        );
        return Ok(RunPath {
            title: format!("Real path: {name} (its link's schedule)"),
            timeline,
            name,
        });
    }
    let link = a.link.as_deref().unwrap_or_default();
    let path = parse_link(link)?;
    Ok(RunPath {
        timeline: PathTimeline::fixed(&path),
        name: link.to_string(),
        title: fixed_path_title(&path),
    })
}

fn run_flows(a: RunArgs) -> anyhow::Result<()> {
    let run = run_path(&a)?;
    let path = run.timeline.initial();
    if !(a.duration.is_finite() && a.duration > 0.0) {
        bail!("--duration: must be > 0 (got {})", a.duration);
    }
    let requests = a
        .flows
        .iter()
        .map(|f| parse_flow(f, a.duration))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let start_rate = a.start_rate.unwrap_or(path.bandwidth_pps / 2.0);
    mocc_gym::limits::check_rate(start_rate).map_err(|m| anyhow::anyhow!("--start-rate: {m}"))?;
    let senders = requests
        .iter()
        .map(|r| sender_for(r, start_rate))
        .collect::<anyhow::Result<Vec<_>>>()?;
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))?;
    let topology = Topology::create(&path).context("cannot build the emulated path")?;
    let changes = run.timeline.changes(a.duration);
    let together = run_together(&topology, &requests, senders, &changes, a.duration)?;
    topology
        .close()
        .context("cannot remove the emulated path")?;
    let (outcomes, start_ns) = (&together.outcomes, together.start_ns);
    let rows = result_rows(&run, start_ns, &requests, outcomes);
    write_results(&a.out, &rows, outcomes)?;
    eprintln!("results: {}", a.out.join("results.csv").display());
    let flows: Vec<RunFlow<'_>> = requests
        .iter()
        .zip(outcomes)
        .map(|(r, o)| RunFlow {
            name: &r.scheme,
            start_s: seconds_between(start_ns, o.origin_ns),
            outcome: o,
        })
        .collect();
    let png = a.out.join("timeseries.png");
    flows_figure(&png, run.title.clone(), &run.timeline, &flows)?;
    eprintln!("figure: {}", png.display());
    let span = outcomes
        .iter()
        .map(|o| seconds_between(start_ns, o.started_ns) + o.duration_s)
        .fold(0.0, f64::max);
    super::print_line(serde_json::to_string(&summary(
        &run.timeline,
        span,
        &rows,
        &together,
    ))?)
}

/// Parses `bw_pps=B,delay_s=D,queue_pkts=Q[,loss=L]` with the simulator's parser and bounds.
fn parse_link(spec: &str) -> anyhow::Result<PathSpec> {
    let config = mocc_eval::simulate::parse_network_spec(spec)?;
    mocc_gym::Scenario::new(config.clone(), None)?;
    let fixed = |r: mocc_gym::Range, name: &str| match r {
        mocc_gym::Range::Fixed(v) => Ok(v),
        _ => bail!("--link {name}: must be one number"),
    };
    let queue = match config.link.queue_pkts {
        mocc_gym::config::QueueRange::Fixed(q) => q,
        _ => bail!("--link queue_pkts: must be one number"),
    };
    let path = PathSpec {
        bandwidth_pps: fixed(config.link.bandwidth_pps, "bw_pps")?,
        delay_s: fixed(config.link.delay_s, "delay_s")?,
        queue_pkts: queue as u32,
        loss: fixed(config.link.loss, "loss")?,
    };
    path.validate()
        .map_err(|e| anyhow::anyhow!("--link: {e}"))?;
    Ok(path)
}

/// Parses `SCHEME[:W_THR,W_LAT,W_LOSS][@START_S]`.
fn parse_flow(text: &str, duration: f64) -> anyhow::Result<FlowRequest> {
    let bad = |m: String| anyhow::anyhow!("--flow {text}: {m}");
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
    Ok(FlowRequest {
        scheme,
        objective,
        start_s,
    })
}

/// What sends a flow's data.
enum FlowSender {
    /// UDP at the rate a driver sets.
    Controlled(Box<dyn RateDriver>),
    /// Kernel TCP with this congestion control.
    Tcp(String),
}

/// The sender of a flow: kernel TCP, a constant rate, or an export's controller.
fn sender_for(r: &FlowRequest, start_rate: f64) -> anyhow::Result<FlowSender> {
    let tcp = match r.scheme.as_str() {
        "cubic" | "bbr" | "reno" => Some(r.scheme.as_str()),
        s => s.strip_prefix("tcp:"),
    };
    match tcp {
        Some(cc) if r.objective.is_some() => {
            bail!("--flow {}: kernel TCP ({cc}) takes no objective", r.scheme)
        }
        Some(cc) => Ok(FlowSender::Tcp(cc.to_string())),
        None => rate_driver(&r.scheme, r.objective, start_rate)
            .map(FlowSender::Controlled)
            .map_err(|m| anyhow::anyhow!("--flow {m}")),
    }
}

/// What a run did: every flow, when it started and the path changes applied.
struct RunOutcome {
    outcomes: Vec<FlowOutcome>,
    /// Time 0 of the run (`monotonic_ns`).
    start_ns: u64,
    applied: Vec<AppliedChange>,
}

/// Runs every flow at its start time until the run's end, changing the path as `changes`
/// say meanwhile.
fn run_together(
    topology: &Topology,
    requests: &[FlowRequest],
    senders: Vec<FlowSender>,
    changes: &[PathChange],
    duration: f64,
) -> anyhow::Result<RunOutcome> {
    let stop = AtomicBool::new(false);
    let (start, start_ns) = (Instant::now(), monotonic_ns());
    let (outcomes, applied) = std::thread::scope(|scope| {
        let schedule = scope.spawn(|| run_schedule(topology, changes, start, &stop));
        let outcomes = run_flows_in(scope, topology, requests, senders, duration);
        stop.store(true, Ordering::Relaxed);
        let applied = schedule
            .join()
            .map_err(|_| anyhow::anyhow!("the path schedule panicked"))?
            .context("cannot change the path during the run")?;
        anyhow::Ok((outcomes?, applied))
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
) -> anyhow::Result<Vec<FlowOutcome>> {
    let handles: Vec<_> = requests
        .iter()
        .zip(senders)
        .enumerate()
        .map(|(k, (r, sender))| {
            scope.spawn(move || {
                std::thread::sleep(Duration::from_secs_f64(r.start_s));
                let length = Duration::from_secs_f64(duration - r.start_s);
                match sender {
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
                .map_err(|_| anyhow::anyhow!("flow {k} panicked"))?
                .with_context(|| format!("flow {k} ({})", requests[k].scheme))
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

fn write_results(out: &Path, rows: &[ResultRow], outcomes: &[FlowOutcome]) -> anyhow::Result<()> {
    let mut csv = format!(
        "source,flow,policy,network,w_thr,w_lat,w_loss,start_s,{}\n",
        RunMetrics::COLUMNS
    );
    for r in rows {
        let m = &r.metrics;
        csv.push_str(&format!(
            "{},{},{},\"{}\",{},{},{},{},{},{},{},{},{},{},{}\n",
            r.source,
            r.flow,
            r.policy,
            r.network,
            r.w_thr,
            r.w_lat,
            r.w_loss,
            r.start_s,
            m.utilization,
            m.thr_pps,
            m.mean_rtt_s,
            m.rtt_ratio,
            m.loss,
            m.aurora_reward,
            m.mocc_reward
        ));
    }
    write_file(&out.join("results.csv"), csv.as_bytes())?;
    for (k, o) in outcomes.iter().enumerate() {
        let mut text = format!("rate_pps,{}\n", mocc_policy::MonitorInterval::CSV_HEADER);
        for r in &o.mis {
            text.push_str(&format!("{},{}\n", r.rate_pps, r.mi.to_csv_row()));
        }
        write_file(&out.join(format!("mis-{k}.csv")), text.as_bytes())?;
    }
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::File::create(path)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.flush()))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The run's last stdout line.
#[derive(Debug, Serialize)]
struct Summary {
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
