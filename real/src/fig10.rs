//! `mocc experiment fig10`: the MOCC paper's Figure 10 on the emulated real path. Every
//! application (bulk transfer, real-time stream, adaptive video) with every scheme (one
//! export as s2n-quic's controller, each application setting its own objective; s2n-quic's
//! Cubic and BBR; kernel TCP Cubic and BBR) on four paths: three fixed links from 4 to 48
//! Mbit/s, one of them with 1% random loss, and a LEO-like scenario (bandwidth and base-RTT
//! steps, periodic outages). Each cell is repeated, each run on a fresh path.

use crate::app::{self, App, AppRun, AppSummary, AppTransport, Measured};
use crate::run::{net_error, RunError, RunPath};
use mocc_plot::axes::Axis;
use mocc_plot::chart::{draw_figure, legend_of, Figure, Line, Panel, PlotError};
use mocc_plot::style::policy_styles;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A path of the experiment.
#[derive(Debug, Clone)]
pub struct Fig10Path {
    /// Short name (files, legend).
    pub name: String,
    /// The path.
    pub path: RunPath,
}

/// The fixed links: (name, link spec).
pub const FIXED_LINKS: [(&str, &str); 3] = [
    ("4mbit", "bw_pps=333,delay_s=0.03,queue_pkts=50"),
    (
        "12mbit-1%loss",
        "bw_pps=1000,delay_s=0.02,queue_pkts=100,loss=0.01",
    ),
    ("48mbit", "bw_pps=4000,delay_s=0.01,queue_pkts=200"),
];

/// A scheme of the experiment: its name and how to build its transport for an application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fig10Scheme {
    /// Name in files and the legend.
    pub name: String,
    /// quic or tcp.
    pub transport: &'static str,
    /// The controller (`--cc`'s syntax).
    pub cc: String,
}

impl Fig10Scheme {
    /// The learned export, QUIC Cubic and BBR, kernel Cubic and BBR.
    pub fn all(export: &Path) -> Vec<Self> {
        let s = |name: &str, transport, cc: &str| Self {
            name: name.to_string(),
            transport,
            cc: cc.to_string(),
        };
        let export_name = export
            .file_name()
            .map_or_else(|| "export".into(), |n| n.to_string_lossy().into_owned());
        vec![
            s(
                &format!("{export_name} (quic)"),
                "quic",
                &export.to_string_lossy(),
            ),
            s("cubic (quic)", "quic", "cubic"),
            s("bbr (quic)", "quic", "bbr"),
            s("cubic (kernel tcp)", "tcp", "cubic"),
            s("bbr (kernel tcp)", "tcp", "bbr"),
        ]
    }

    /// Whether it is the learned controller.
    pub fn learned(&self) -> bool {
        self.transport == "quic" && self.cc != "cubic" && self.cc != "bbr"
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Fig10Plan {
    /// Applications.
    pub apps: Vec<App>,
    /// Paths.
    pub paths: Vec<Fig10Path>,
    /// Schemes.
    pub schemes: Vec<Fig10Scheme>,
    /// Runs per cell.
    pub repeats: u32,
    /// Output folder.
    pub out: PathBuf,
}

/// The paths: [`FIXED_LINKS`] and the scenario `leo`.
pub fn standard_paths(leo: &Path) -> Result<Vec<Fig10Path>, RunError> {
    let mut paths = FIXED_LINKS
        .iter()
        .map(|(name, link)| {
            Ok(Fig10Path {
                name: name.to_string(),
                path: RunPath::link(link)?,
            })
        })
        .collect::<Result<Vec<_>, RunError>>()?;
    paths.push(Fig10Path {
        name: "leo".into(),
        path: RunPath::scenario(leo)?,
    });
    Ok(paths)
}

/// One cell's result.
#[derive(Debug, Clone, Serialize)]
pub struct Fig10Cell {
    /// bulk, rtc or video.
    pub app: &'static str,
    /// The path's name.
    pub path: String,
    /// The scheme's name.
    pub scheme: String,
    /// Over the repeats.
    pub summary: AppSummary,
}

/// How the learned scheme did against kernel Cubic and BBR on one application.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Fig10Verdict {
    /// bulk, rtc or video.
    pub app: &'static str,
    /// The metric compared.
    pub metric: &'static str,
    /// Paths where the export beat both kernel schemes.
    pub paths_won: Vec<String>,
    /// Paths where it beat both of its own stack's schemes (s2n-quic's Cubic and BBR): the
    /// controllers compared on one transport, without the stack's cost against kernel TCP.
    pub paths_won_in_stack: Vec<String>,
    /// Paths measured.
    pub paths: usize,
}

/// The experiment's result: every cell and the verdicts.
#[derive(Debug, Clone, Serialize)]
pub struct Fig10Report {
    /// Every application x path x scheme.
    pub cells: Vec<Fig10Cell>,
    /// Per application.
    pub verdicts: Vec<Fig10Verdict>,
}

/// Runs `plan`, writing `<app>-runs.csv` rows as they finish, then fig10.csv (one row per
/// cell) and fig10.png; `log` gets a line per run.
pub fn run_fig10(plan: &Fig10Plan, mut log: impl FnMut(&str)) -> Result<Fig10Report, RunError> {
    std::fs::create_dir_all(&plan.out).map_err(write_error(&plan.out))?;
    let mut cells = Vec::new();
    for app in &plan.apps {
        let csv = plan.out.join(format!("{}-runs.csv", app.kind()));
        let mut file = std::fs::File::create(&csv).map_err(write_error(&csv))?;
        let mut append = |text: String| {
            file.write_all(text.as_bytes())
                .and_then(|()| file.flush())
                .map_err(write_error(&csv))
        };
        append(format!("path,{}", app.csv_header()))?;
        for path in &plan.paths {
            for scheme in &plan.schemes {
                let runs = run_cell(plan, app, path, scheme, &mut log, |k, run| {
                    append(format!(
                        "{},{k},{},{},{}\n",
                        path.name,
                        scheme.transport,
                        mocc_outputs::csv::cell(&scheme.cc),
                        run.csv_fields(app)
                    ))
                })?;
                cells.push(Fig10Cell {
                    app: app.kind(),
                    path: path.name.clone(),
                    scheme: scheme.name.clone(),
                    summary: AppSummary::of(app, &runs),
                });
            }
        }
    }
    let report = Fig10Report {
        verdicts: verdicts(&cells, &plan.schemes),
        cells,
    };
    write_cells(&plan.out.join("fig10.csv"), &report.cells)?;
    draw_fig10(&plan.out.join("fig10.png"), plan, &report.cells)?;
    Ok(report)
}

fn run_cell(
    plan: &Fig10Plan,
    app: &App,
    path: &Fig10Path,
    scheme: &Fig10Scheme,
    log: &mut impl FnMut(&str),
    mut record: impl FnMut(u32, &Measured) -> Result<(), RunError>,
) -> Result<Vec<AppRun>, RunError> {
    let link = path.path.timeline.initial();
    let transport: AppTransport = app::parse_transport(
        scheme.transport,
        &scheme.cc,
        app.start_rate_pps(link.bandwidth_pps / 2.0),
        app.objective(),
    )?;
    let mut runs = Vec::new();
    for k in 1..=plan.repeats {
        let topology = mocc_net::Topology::create(&link)
            .map_err(net_error("cannot build the emulated path"))?;
        let run = app::run_app(&topology, &transport, app, &path.path.timeline);
        topology
            .close()
            .map_err(net_error("cannot remove the emulated path"))?;
        let run = run?;
        log(&format!(
            "{} on {} with {}, run {k}/{}: {}",
            app.kind(),
            path.name,
            scheme.name,
            plan.repeats,
            run.run.describe()
        ));
        record(k, &run)?;
        runs.push(run.run);
    }
    Ok(runs)
}

/// For each application, the paths where the learned scheme beat kernel Cubic and kernel BBR
/// on the application's metric (rtc: at a delivered frame rate at least 99% of theirs), and
/// those where it beat its own stack's Cubic and BBR.
fn verdicts(cells: &[Fig10Cell], schemes: &[Fig10Scheme]) -> Vec<Fig10Verdict> {
    let names = |keep: &dyn Fn(&Fig10Scheme) -> bool| -> Vec<&str> {
        schemes
            .iter()
            .filter(|s| keep(s))
            .map(|s| s.name.as_str())
            .collect()
    };
    let learned = names(&|s| s.learned());
    let kernel = names(&|s| s.transport == "tcp");
    let same_stack = names(&|s| s.transport == "quic" && !s.learned());
    let mut out: Vec<Fig10Verdict> = Vec::new();
    for cell in cells
        .iter()
        .filter(|c| learned.contains(&c.scheme.as_str()))
    {
        let beats_all = |rivals: &[&str]| {
            let mut cells_of = cells
                .iter()
                .filter(|c| c.app == cell.app && c.path == cell.path)
                .filter(|c| rivals.contains(&c.scheme.as_str()))
                .peekable();
            cells_of.peek().is_some() && cells_of.all(|r| beats(&cell.summary, &r.summary))
        };
        let metric = match cell.summary {
            AppSummary::Bulk(_) => "median completion time",
            AppSummary::Rtc(_) => "median p95 frame delay",
            AppSummary::Video(_) => "median QoE_lin",
        };
        let i = match out.iter().position(|v| v.app == cell.app) {
            Some(i) => i,
            None => {
                out.push(Fig10Verdict {
                    app: cell.app,
                    metric,
                    paths_won: Vec::new(),
                    paths_won_in_stack: Vec::new(),
                    paths: 0,
                });
                out.len() - 1
            }
        };
        out[i].paths += 1;
        if beats_all(&kernel) {
            out[i].paths_won.push(cell.path.clone());
        }
        if beats_all(&same_stack) {
            out[i].paths_won_in_stack.push(cell.path.clone());
        }
    }
    out
}

/// Whether `a` is better than `b` on the application's metric.
fn beats(a: &AppSummary, b: &AppSummary) -> bool {
    let ((x, lower), (y, _)) = (a.headline(), b.headline());
    let better = if lower { x < y } else { x > y };
    match (a, b) {
        (AppSummary::Rtc(p), AppSummary::Rtc(q)) => {
            better && p.delivered_fps >= 0.99 * q.delivered_fps
        }
        _ => better,
    }
}

fn write_cells(csv: &Path, cells: &[Fig10Cell]) -> Result<(), RunError> {
    let mut text = String::from("app,path,scheme,metric,value,lower_is_better,summary\n");
    for c in cells {
        let (value, lower) = c.summary.headline();
        let json = serde_json::to_string(&c.summary).unwrap_or_default();
        text.push_str(&format!(
            "{},{},{},{},{value},{lower},{}\n",
            c.app,
            c.path,
            mocc_outputs::csv::cell(&c.scheme),
            headline_name(&c.summary),
            mocc_outputs::csv::cell(&json)
        ));
    }
    mocc_outputs::write_file_atomic(csv, text.as_bytes()).map_err(|e| RunError::Write {
        path: e.path,
        source: e.source,
    })
}

fn headline_name(s: &AppSummary) -> &'static str {
    match s {
        AppSummary::Bulk(_) => "completion_s",
        AppSummary::Rtc(_) => "delay_p95_ms",
        AppSummary::Video(_) => "qoe_lin",
    }
}

fn write_error(path: &Path) -> impl Fn(std::io::Error) -> RunError + '_ {
    move |source| RunError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// One panel per application's metric (x: the path, numbered), plus video's chunks per
/// level; a line per scheme.
fn draw_fig10(png: &Path, plan: &Fig10Plan, cells: &[Fig10Cell]) -> Result<(), PlotError> {
    let names: Vec<&str> = plan.schemes.iter().map(|s| s.name.as_str()).collect();
    let styles = policy_styles(&names);
    let paths = plan.paths.len() as f64;
    // Each scheme's markers a little beside the others', so that equal values stay visible.
    let n = plan.schemes.len() as f64;
    let dodge = |j: usize| (j as f64 - (n - 1.0) / 2.0) * 0.09;
    let mut panels = Vec::new();
    for app in &plan.apps {
        let lines = plan
            .schemes
            .iter()
            .zip(&styles)
            .enumerate()
            .map(|(j, (s, style))| Line {
                label: s.name.clone(),
                points: plan
                    .paths
                    .iter()
                    .enumerate()
                    .filter_map(|(i, p)| {
                        cells
                            .iter()
                            .find(|c| c.app == app.kind() && c.path == p.name && c.scheme == s.name)
                            .map(|c| ((i + 1) as f64 + dodge(j), c.summary.headline().0))
                    })
                    .collect(),
                style: style.with_width(3),
            })
            .collect();
        let (title, y) = match app {
            App::Bulk(b) => (
                format!(
                    "Bulk {} MB: completion time (lower is better)",
                    b.bytes as f64 / 1e6
                ),
                Axis::log("median completion time (s)"),
            ),
            App::Rtc(r) => (
                format!(
                    "RTC {:.1} Mbit/s: frame delay (lower is better)",
                    r.bitrate_bps / 1e6
                ),
                Axis::log("median p95 frame delay (ms)"),
            ),
            App::Video(_) => (
                "Video: QoE_lin (higher is better)".to_string(),
                Axis::linear("median QoE_lin"),
            ),
        };
        let mut panel = Panel::new(
            title,
            Axis::linear("path").range(0.5, paths + 0.5),
            y,
            lines,
        );
        panel.markers = true;
        panels.push(panel);
    }
    if let Some(video) = plan.apps.iter().find(|a| matches!(a, App::Video(_))) {
        panels.push(levels_panel(plan, cells, video, &styles));
    }
    let legend = legend_of(
        panels
            .first()
            .map(|p| p.lines.as_slice())
            .unwrap_or_default(),
    );
    let key: Vec<String> = plan
        .paths
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{} = {}", i + 1, p.name))
        .collect();
    draw_figure(
        png,
        &Figure {
            title: Some(format!(
                "Applications on the emulated path, {} run{} each (paths: {})",
                plan.repeats,
                if plan.repeats == 1 { "" } else { "s" },
                key.join(", ")
            )),
            columns: 2,
            panels,
            panel_size: (640, 430),
            legend,
        },
    )
}

/// Chunks per ladder level, per session over all paths (the paper's Figure 10, bottom).
fn levels_panel(
    plan: &Fig10Plan,
    cells: &[Fig10Cell],
    video: &App,
    styles: &[mocc_plot::style::LineStyle],
) -> Panel {
    let n = plan.schemes.len() as f64;
    let lines = plan
        .schemes
        .iter()
        .zip(styles)
        .enumerate()
        .map(|(j, (s, style))| {
            let shift = 1.0 + (j as f64 - (n - 1.0) / 2.0) * 0.03;
            let mut per_level = vec![0.0; app::abr::LADDER_KBPS.len()];
            let mut sessions = 0.0;
            for c in cells
                .iter()
                .filter(|c| c.app == video.kind() && c.scheme == s.name)
            {
                if let AppSummary::Video(v) = &c.summary {
                    sessions += v.runs as f64;
                    for (t, n) in per_level.iter_mut().zip(&v.chunks_per_level) {
                        *t += *n as f64;
                    }
                }
            }
            Line {
                label: s.name.clone(),
                points: app::abr::LADDER_KBPS
                    .iter()
                    .zip(&per_level)
                    .map(|(kbps, k)| (kbps / 1e3 * shift, k / sessions.max(1.0)))
                    .collect(),
                style: style.with_width(3),
            }
        })
        .collect();
    let mut panel = Panel::new(
        "Video: chunks per bitrate, per session (all paths)",
        Axis::log("chunk bitrate (Mbit/s)"),
        Axis::linear("chunks per session"),
        lines,
    );
    panel.markers = true;
    panel
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::bulk::BulkSummary;

    fn bulk(median_s: f64) -> AppSummary {
        AppSummary::Bulk(BulkSummary {
            runs: 3,
            bytes: 1,
            median_s,
            p95_s: median_s,
            std_s: 0.0,
            mean_goodput_mbit: 1.0,
        })
    }

    fn cell(path: &str, scheme: &str, median_s: f64) -> Fig10Cell {
        Fig10Cell {
            app: "bulk",
            path: path.into(),
            scheme: scheme.into(),
            summary: bulk(median_s),
        }
    }

    #[test]
    fn the_export_wins_a_path_only_against_both_schemes_of_a_side() {
        let schemes = Fig10Scheme::all(Path::new("checkpoints/mocc-pair"));
        assert_eq!(schemes[0].name, "mocc-pair (quic)");
        assert!(schemes[0].learned() && !schemes[1].learned() && !schemes[3].learned());
        let cells = vec![
            cell("a", "mocc-pair (quic)", 1.0),
            cell("a", "cubic (kernel tcp)", 1.5),
            cell("a", "bbr (kernel tcp)", 1.2),
            cell("a", "cubic (quic)", 0.5),
            cell("a", "bbr (quic)", 1.1),
            cell("b", "mocc-pair (quic)", 1.0),
            cell("b", "cubic (kernel tcp)", 1.5),
            cell("b", "bbr (kernel tcp)", 0.9),
            cell("b", "cubic (quic)", 1.6),
            cell("b", "bbr (quic)", 1.01),
        ];
        let v = verdicts(&cells, &schemes);
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].paths_won.clone(), v[0].paths),
            (vec!["a".to_string()], 2)
        );
        // Against s2n-quic's own schemes: a loses to its Cubic, b beats both.
        assert_eq!(v[0].paths_won_in_stack, vec!["b".to_string()]);
    }

    #[test]
    fn the_fixed_links_parse() {
        for (_, link) in FIXED_LINKS {
            RunPath::link(link).unwrap();
        }
    }

    #[test]
    fn the_figure_draws_every_application_from_its_cells() {
        use crate::app::rtc::{RtcRun, RtcSummary};
        use crate::app::video::{ChunkRecord, VideoRun, VideoSummary};
        let (dir, keep) = mocc_plot::testing::test_figure_dir("fig10").unwrap();
        let plan = Fig10Plan {
            apps: ["bulk:1MB", "rtc:1mbit", "video:4"]
                .iter()
                .map(|a| App::parse(a).unwrap())
                .collect(),
            paths: FIXED_LINKS
                .iter()
                .map(|(name, link)| Fig10Path {
                    name: name.to_string(),
                    path: RunPath::link(link).unwrap(),
                })
                .collect(),
            schemes: Fig10Scheme::all(Path::new("checkpoints/mocc-pair")),
            repeats: 1,
            out: dir.clone(),
        };
        let mut cells = Vec::new();
        for (i, path) in plan.paths.iter().enumerate() {
            for (j, scheme) in plan.schemes.iter().enumerate() {
                let x = 1.0 + (i + j) as f64 / 4.0;
                let stream = RtcRun {
                    frames_sent: 3,
                    frame_delays_ms: vec![20.0 * x, 30.0 * x, 40.0 * x],
                    inter_packet_ms: vec![3.0, 4.0],
                    span_s: 0.1,
                };
                let chunk = |level| ChunkRecord {
                    level,
                    download_s: 1.0,
                    rebuffer_s: 0.0,
                    buffer_s: 4.0,
                };
                let session = VideoRun {
                    chunks: vec![chunk(1), chunk(j % 6), chunk(i % 6)],
                    startup_s: 1.0,
                };
                for summary in [
                    bulk(x),
                    AppSummary::Rtc(RtcSummary::of(&[stream])),
                    AppSummary::Video(VideoSummary::of(&[session], "mpc")),
                ] {
                    cells.push(Fig10Cell {
                        app: match summary {
                            AppSummary::Bulk(_) => "bulk",
                            AppSummary::Rtc(_) => "rtc",
                            AppSummary::Video(_) => "video",
                        },
                        path: path.name.clone(),
                        scheme: scheme.name.clone(),
                        summary,
                    });
                }
            }
        }
        let png = dir.join("fig10.png");
        draw_fig10(&png, &plan, &cells).unwrap();
        assert!(std::fs::metadata(&png).unwrap().len() > 10_000);
        if !keep {
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}
