//! `mocc net`: policies driving real UDP flows through an emulated Linux path.

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use mocc_real::compare::{compare, CompareError, RealRuns};
use mocc_real::path::rate_driver;
use mocc_real::run::check_duration;
use mocc_real::run::{self, FlowRequest, RunPath};
use std::io::Write;
use std::path::PathBuf;

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
    /// An eval suite in the simulator and on the real path, side by side (root): every network
    /// and objective alone on the link from half its rate for --duration seconds (compare.csv,
    /// compare.png), and its fairness and friendliness sections as `mocc eval` runs them
    /// (fairness-compare.csv, friendliness-compare.csv, sharing-compare.png).
    Compare(CompareArgs),
    /// An application on a real emulated path (root): a download, a real-time stream or an
    /// adaptive video session over QUIC (an export as s2n-quic's controller, or its cubic /
    /// bbr) or kernel TCP (cubic, bbr, reno), over --repeats runs (runs.csv, summary.json,
    /// app.png).
    App(AppArgs),
}

/// Arguments of `mocc net app`.
#[derive(Debug, Args)]
struct AppArgs {
    /// The application: bulk:SIZE (a download: bulk:10MB; B, KB, MB, GB), rtc:RATE[:SECONDS]
    /// (a 30 fps stream: rtc:2.5mbit, 30 s by default) or video[:mpc|bba][:CHUNKS] (4 s
    /// chunks over Pensieve's ladder under robustMPC or the buffer-based rule; 48 chunks).
    #[arg(long)]
    app: String,
    /// quic or tcp.
    #[arg(long)]
    transport: String,
    /// Over quic: EXPORT[:W_THR,W_LAT,W_LOSS] (without weights, the application's own:
    /// bulk 0.8,0.1,0.1, rtc 0.1,0.8,0.1, video 0.6,0.3,0.1), cubic or bbr (s2n-quic's); over
    /// tcp: cubic, bbr, reno or tcp:NAME (the kernel's).
    #[arg(long)]
    cc: String,
    /// The bottleneck: bw_pps=B,delay_s=D,queue_pkts=Q[,loss=L] (one-way delay, 1500-byte
    /// packets).
    #[arg(
        long,
        required_unless_present = "scenario",
        conflicts_with = "scenario"
    )]
    link: Option<String>,
    /// Instead of --link: a scenario file whose link (with its schedule of steps and outages)
    /// the real path follows during each run; its senders are ignored.
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// Runs, each on a fresh path.
    #[arg(long, default_value_t = 10)]
    repeats: u32,
    /// Rate a learned controller starts at (packets/s; default: a stream's own bitrate plus a
    /// fifth, otherwise half the bottleneck's).
    #[arg(long)]
    start_rate: Option<f64>,
    /// Output folder: runs.csv (a row per run, written as it finishes), summary.json,
    /// app.png, and for a learned controller mis-<k>.csv (run k's MIs).
    #[arg(long)]
    out: PathBuf,
}

/// Arguments of `mocc net compare`.
#[derive(Debug, Args)]
struct CompareArgs {
    /// A policy: an export folder, const:RATE, or cubic / bbr (the simulator's model against
    /// the kernel's; repeatable).
    #[arg(long = "policy", required = true)]
    policies: Vec<String>,
    /// Eval suite: its networks, objectives and seeds (the simulator runs once per seed), and
    /// its fairness and friendliness sections (their own durations; the simulator runs once);
    /// sweeps, time series and scenarios are left out.
    #[arg(long)]
    suite: PathBuf,
    /// Seconds of each run alone on a network, real and simulated.
    #[arg(long, default_value_t = 20.0)]
    duration: f64,
    /// Real runs per network and objective (averaged), and per fairness and friendliness case
    /// (each its own row).
    #[arg(long, default_value_t = 1)]
    repeats: u32,
    /// Output folder: compare.csv and compare.png for the networks; fairness-compare.csv,
    /// friendliness-compare.csv and sharing-compare.png for the sharing sections; with the
    /// fairness section's record_mis, each run's MIs in fairness-mis/ (simulator) and
    /// fairness-mis-real/ (real path).
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

/// Runs `mocc net ...`.
pub fn run(args: NetArgs) -> anyhow::Result<()> {
    // Ctrl-C or SIGTERM mid-run removes the namespaces and exits with the signal's status.
    mocc_net::remove_namespaces_on_interrupt(|| match args.what {
        NetCommand::Run(a) => run_flows(a),
        NetCommand::Compare(a) => compare_suite(a),
        NetCommand::App(a) => run_app(a),
    })?
}

fn run_app(a: AppArgs) -> anyhow::Result<()> {
    use mocc_real::app::{self, App, AppSummary};
    super::check_count("repeats", u64::from(a.repeats), MAX_REPEATS)?;
    let application = App::parse(&a.app)?;
    let path = match &a.scenario {
        Some(file) => RunPath::scenario(file)?,
        None => RunPath::link(a.link.as_deref().unwrap_or_default())?,
    };
    let link = path.timeline.initial();
    let start_rate = a
        .start_rate
        .unwrap_or_else(|| application.start_rate_pps(link.bandwidth_pps / 2.0));
    let transport = app::parse_transport(&a.transport, &a.cc, start_rate, application.objective())?;
    // Written beside --out and put in place whole: a failed or killed run leaves the earlier
    // results as they were.
    let staged = mocc_outputs::StagedDir::replacing(&a.out, app::NET_APP_OUTPUTS)?;
    let dir = staged.path().to_path_buf();
    let csv = dir.join("runs.csv");
    let mut file =
        std::fs::File::create(&csv).with_context(|| format!("cannot create {}", csv.display()))?;
    let mut append = |text: String| -> anyhow::Result<()> {
        file.write_all(text.as_bytes())
            .and_then(|()| file.flush())
            .with_context(|| format!("cannot write {}", csv.display()))
    };
    append(application.csv_header())?;
    let mut runs = Vec::new();
    for k in 1..=a.repeats {
        let (logged, log) = app::with_mi_log(&transport);
        let topology = mocc_net::Topology::create(&link).context("building the path")?;
        let run = app::run_app(&topology, &logged, &application, &path.timeline);
        topology.close().context("removing the path")?;
        let run = run?;
        if let Some(log) = log {
            let mis = log.lock().map(|m| m.clone()).unwrap_or_default();
            let file = dir.join(format!("mis-{k}.csv"));
            mocc_outputs::write_file_atomic(&file, app::mis_csv(&mis).as_bytes())?;
        }
        eprintln!("run {k}/{}: {}", a.repeats, run.run.describe());
        append(format!(
            "{k},{},{},{}\n",
            a.transport,
            mocc_outputs::csv::cell(&a.cc),
            run.csv_fields(&application)
        ))?;
        runs.push(run.run);
    }
    let summary = AppSummary::of(&application, &runs);
    let json = serde_json::to_string(&summary)?;
    mocc_outputs::write_file_atomic(&dir.join("summary.json"), format!("{json}\n").as_bytes())?;
    let png = dir.join("app.png");
    let path_name = path
        .title
        .strip_prefix("Real path: ")
        .unwrap_or(&path.title);
    let title = format!(
        "{} over {} with {} on {path_name}",
        a.app, a.transport, a.cc
    );
    app::figure::draw_app_runs(&png, &title, &application, &runs)?;
    drop(file);
    staged.commit()?;
    eprintln!(
        "results: {}\nfigure: {}",
        a.out.join("runs.csv").display(),
        a.out.join("app.png").display()
    );
    super::print_line(json)
}

/// What `mocc net compare` writes to `--out`: compare.csv, fairness-compare.csv,
/// friendliness-compare.csv, their figures and the real runs' per-MI folders; an earlier
/// comparison's outputs there are replaced as a whole once the new ones are complete.
const NET_COMPARE_OUTPUTS: mocc_outputs::Replaceable = mocc_outputs::Replaceable {
    what: "a real-path comparison's outputs",
    owns: |name, is_dir| {
        if is_dir {
            name == mocc_real::sharing::REAL_MIS_DIR || name == mocc_eval::fairness_outputs::MIS_DIR
        } else {
            name.ends_with(".csv") || name.ends_with(".png")
        }
    },
    marker: "compare.csv",
    command: Some("mocc net compare"),
};

/// The most real runs per network and objective of a comparison.
const MAX_REPEATS: u64 = 1_000;

fn compare_suite(a: CompareArgs) -> anyhow::Result<()> {
    check_duration(a.duration).map_err(anyhow::Error::msg)?;
    super::check_count("repeats", u64::from(a.repeats), MAX_REPEATS)?;
    let suite = mocc_eval::suite::Suite::load(&a.suite)?;
    if suite.networks.is_empty() && suite.fairness.is_none() && suite.friendliness.is_none() {
        bail!(
            "{}: networks, fairness or friendliness: the comparison needs at least one",
            a.suite.display()
        );
    }
    for p in &a.policies {
        if mocc_real::compare::kernel_tcp(p).is_none() {
            rate_driver(p, None, 100.0).map_err(|m| anyhow::anyhow!("--policy {m}"))?;
        }
    }
    // Written beside --out and put in place whole: a failed or killed comparison leaves the
    // earlier results as they were (and its partial rows in the hidden folder it names).
    let staged = mocc_outputs::StagedDir::replacing(&a.out, NET_COMPARE_OUTPUTS)?;
    eprintln!("writing into {}", staged.path().display());
    let alone = if suite.networks.is_empty() {
        Vec::new()
    } else {
        compare_alone(&a, &suite, staged.path())?
    };
    let sharing = compare_sharing(&a, &suite, staged.path())?;
    staged.commit()?;
    eprintln!("results: {}", a.out.display());
    super::print_line(serde_json::to_string(&serde_json::json!({
        "alone": alone,
        "sharing": sharing,
    }))?)
}

/// A CSV file whose rows are appended (and flushed) as they are measured: a stopped
/// comparison keeps what it measured.
struct RowFile {
    path: PathBuf,
    file: std::fs::File,
}

impl RowFile {
    fn create(path: PathBuf, header: &str) -> anyhow::Result<Self> {
        let file = std::fs::File::create(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let mut rows = Self { path, file };
        rows.append(header)?;
        Ok(rows)
    }

    fn append(&mut self, text: &str) -> Result<(), CompareError> {
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|source| CompareError::Write {
                path: self.path.clone(),
                source,
            })
    }
}

/// The suite's networks, each policy alone: compare.csv, compare.png; per policy, the largest
/// differences.
fn compare_alone(
    a: &CompareArgs,
    suite: &mocc_eval::suite::Suite,
    dir: &std::path::Path,
) -> anyhow::Result<Vec<mocc_real::compare::CompareSummary>> {
    let runs = RealRuns {
        duration_s: a.duration,
        repeats: a.repeats,
    };
    let mut csv = RowFile::create(dir.join("compare.csv"), mocc_real::compare::CSV_HEADER)?;
    let mut rows = Vec::new();
    for p in &a.policies {
        rows.extend(compare(
            p,
            suite,
            runs,
            |line| eprintln!("{line}"),
            |row| csv.append(&mocc_real::compare::csv_line(row)),
        )?);
    }
    let png = dir.join("compare.png");
    mocc_real::compare::figure(&png, &rows)?;
    Ok(mocc_real::compare::summarize(&a.policies, &rows))
}

/// The suite's fairness and friendliness sections: fairness-compare.csv,
/// friendliness-compare.csv, sharing-compare.png; per policy, how the real runs shared.
fn compare_sharing(
    a: &CompareArgs,
    suite: &mocc_eval::suite::Suite,
    dir: &std::path::Path,
) -> anyhow::Result<Vec<mocc_real::sharing_report::SharingSummary>> {
    use mocc_real::{sharing, sharing_report};
    let mut fairness = Vec::new();
    if let Some(spec) = &suite.fairness {
        fairness = section_rows(
            a,
            &dir.join("fairness-compare.csv"),
            sharing::FAIRNESS_CSV_HEADER,
            sharing::FairnessRow::csv_line,
            |p, on_row| {
                let progress = |l: &str| eprintln!("{l}");
                sharing::compare_fairness(p, spec, a.repeats, dir, progress, on_row)
            },
        )?;
    }
    let mut friendliness = Vec::new();
    if let Some(spec) = &suite.friendliness {
        friendliness = section_rows(
            a,
            &dir.join("friendliness-compare.csv"),
            sharing::FRIENDLINESS_CSV_HEADER,
            sharing::FriendlinessRow::csv_line,
            |p, on_row| {
                sharing::compare_friendliness(p, spec, a.repeats, |l| eprintln!("{l}"), on_row)
            },
        )?;
    }
    if fairness.is_empty() && friendliness.is_empty() {
        return Ok(Vec::new());
    }
    let png = dir.join("sharing-compare.png");
    sharing_report::figure(&png, &fairness, &friendliness)?;
    Ok(sharing_report::summarize(
        &a.policies,
        &fairness,
        &friendliness,
    ))
}

/// One sharing section for every policy: `compare_one(policy, on_row)` measures a policy's
/// rows, each appended to `file` (under `header`) as it comes.
fn section_rows<R>(
    a: &CompareArgs,
    file: &std::path::Path,
    header: &str,
    line: impl Fn(&R) -> String,
    mut compare_one: impl FnMut(
        &str,
        &mut dyn FnMut(&R) -> Result<(), CompareError>,
    ) -> Result<Vec<R>, CompareError>,
) -> anyhow::Result<Vec<R>> {
    let mut csv = RowFile::create(file.to_path_buf(), header)?;
    let mut rows = Vec::new();
    for p in &a.policies {
        rows.extend(compare_one(p, &mut |row| csv.append(&line(row)))?);
    }
    Ok(rows)
}

fn run_flows(a: RunArgs) -> anyhow::Result<()> {
    let path = match &a.scenario {
        Some(file) => RunPath::scenario(file)?,
        None => RunPath::link(a.link.as_deref().unwrap_or_default())?,
    };
    check_duration(a.duration).map_err(anyhow::Error::msg)?;
    let requests = a
        .flows
        .iter()
        .map(|f| FlowRequest::parse(f, a.duration))
        .collect::<Result<Vec<_>, _>>()?;
    let report = run::run_flows(&path, &requests, a.duration, a.start_rate, &a.out)?;
    eprintln!("results: {}", report.results.display());
    eprintln!("figure: {}", report.figure.display());
    super::print_line(serde_json::to_string(&report.summary)?)
}
