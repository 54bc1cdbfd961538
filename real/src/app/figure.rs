//! The figure of `mocc net app`: every run of one application and controller, drawn so a
//! person sees the runs' spread at a glance. Bulk: each download's completion time. RTC: each
//! frame's delay over the stream, and the distribution of delays. Video: each chunk's bitrate
//! and the buffer after it.

use super::abr::{CHUNK_S, LADDER_KBPS};
use super::{App, AppRun};
use mocc_plot::axes::Axis;
use mocc_plot::chart::{draw_figure, legend_of, Figure, Line, Panel, PlotError};
use mocc_plot::style::{policy_styles, Dash, LineStyle, REFERENCE};
use std::path::Path;

/// Draws `runs` of `app` into `png` under `title`.
pub fn draw_app_runs(png: &Path, title: &str, app: &App, runs: &[AppRun]) -> Result<(), PlotError> {
    let names: Vec<String> = (1..=runs.len()).map(|k| format!("run {k}")).collect();
    let styles = policy_styles(&names.iter().map(String::as_str).collect::<Vec<_>>());
    let line = |k: usize, points: Vec<(f64, f64)>| Line {
        label: names[k].clone(),
        points,
        style: styles[k],
    };
    let panels = match app {
        App::Bulk(_) => bulk_panels(runs),
        App::Rtc(_) => rtc_panels(runs, line),
        App::Video(_) => video_panels(runs, line),
    };
    let legend = match app {
        App::Bulk(_) => Vec::new(),
        _ => legend_of(
            panels
                .first()
                .map(|p| p.lines.as_slice())
                .unwrap_or_default(),
        ),
    };
    let columns = panels.len();
    let width = if columns == 1 { 1000 } else { 700 };
    draw_figure(
        png,
        &Figure {
            title: Some(title.to_string()),
            panels,
            columns,
            panel_size: (width, 420),
            legend,
        },
    )
}

fn bulk_panels(runs: &[AppRun]) -> Vec<Panel> {
    let points: Vec<(f64, f64)> = runs
        .iter()
        .enumerate()
        .filter_map(|(k, r)| match r {
            AppRun::Bulk(b) => Some(((k + 1) as f64, b.completion_s)),
            _ => None,
        })
        .collect();
    let top = points.iter().map(|p| p.1).fold(0.0, f64::max) * 1.15;
    let mut panel = Panel::new(
        "Completion time of each download",
        Axis::linear("run").range(0.5, points.len() as f64 + 0.5),
        Axis::linear("completion time (s)").range(0.0, top.max(1e-3)),
        vec![Line {
            label: "download".into(),
            points,
            style: LineStyle::solid(REFERENCE).with_width(3),
        }],
    );
    panel.markers = true;
    vec![panel]
}

fn rtc_panels(runs: &[AppRun], line: impl Fn(usize, Vec<(f64, f64)>) -> Line) -> Vec<Panel> {
    let streams: Vec<&super::rtc::RtcRun> = runs
        .iter()
        .filter_map(|r| match r {
            AppRun::Rtc(s) => Some(s),
            _ => None,
        })
        .collect();
    let over_time = streams
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let points = s
                .frame_delays_ms
                .iter()
                .enumerate()
                .map(|(f, &d)| (f as f64 / super::rtc::FPS, d))
                .collect();
            line(k, points)
        })
        .collect();
    let cdf = streams
        .iter()
        .enumerate()
        .map(|(k, s)| line(k, cdf_points(&s.frame_delays_ms)))
        .collect::<Vec<_>>();
    let late = Line {
        label: "200 ms".into(),
        points: vec![(super::rtc::LATE_MS, 0.0), (super::rtc::LATE_MS, 1.0)],
        style: LineStyle::solid(REFERENCE).with_dash(Dash::Dashed),
    };
    vec![
        Panel::new(
            "Delay of each frame, capture to last packet",
            Axis::linear("frame captured at (s)"),
            Axis::log("frame delay (ms)"),
            over_time,
        ),
        Panel::new(
            "Frame delays (the dashed line: 200 ms, late)",
            Axis::log("frame delay (ms)"),
            Axis::linear("share of frames at most").range(0.0, 1.0),
            cdf.into_iter().chain([late]).collect(),
        ),
    ]
}

/// (value, share of values at most it), sorted.
fn cdf_points(values: &[f64]) -> Vec<(f64, f64)> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    v.iter()
        .enumerate()
        .map(|(i, &x)| (x.max(1e-3), (i + 1) as f64 / n))
        .collect()
}

fn video_panels(runs: &[AppRun], line: impl Fn(usize, Vec<(f64, f64)>) -> Line) -> Vec<Panel> {
    let sessions: Vec<&super::video::VideoRun> = runs
        .iter()
        .filter_map(|r| match r {
            AppRun::Video(s) => Some(s),
            _ => None,
        })
        .collect();
    let chunks = sessions.iter().map(|s| s.chunks.len()).max().unwrap_or(1) as f64;
    // One line per session of `value` at each chunk.
    let per_chunk = |value: fn(&super::video::ChunkRecord) -> f64| -> Vec<Line> {
        sessions
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let points = s
                    .chunks
                    .iter()
                    .enumerate()
                    .map(|(i, c)| ((i + 1) as f64, value(c)))
                    .collect();
                line(k, points)
            })
            .collect()
    };
    let bitrate = per_chunk(|c| LADDER_KBPS[c.level] / 1e3);
    let buffer = per_chunk(|c| c.buffer_s);
    let top = LADDER_KBPS[LADDER_KBPS.len() - 1] / 1e3;
    vec![
        Panel::new(
            format!("Bitrate of each {CHUNK_S:.0} s chunk"),
            Axis::linear("chunk").range(1.0, chunks.max(2.0)),
            Axis::linear("bitrate (Mbit/s)").range(0.0, top * 1.1),
            bitrate,
        ),
        Panel::new(
            "Buffer after each chunk",
            Axis::linear("chunk").range(1.0, chunks.max(2.0)),
            Axis::linear("buffer (s)").range(0.0, super::video::BUFFER_CAP_S * 1.05),
            buffer,
        ),
    ]
}
