//! The MOCC paper's three applications on the emulated real path (Figure 10), each written
//! once over a byte stream and run over QUIC (an export as s2n-quic's controller, or its
//! Cubic / BBR) or kernel TCP (Cubic, BBR, Reno):
//!
//! - [`bulk`]: a download of a given size; its completion time;
//! - [`rtc`]: a 30 fps stream at a target bitrate; frame delay and inter-packet delay;
//! - [`video`]: chunked adaptive streaming over Pensieve's ladder under robustMPC or the
//!   buffer-based rule ([`abr`]); QoE_lin and chunks per level.
//!
//! Each application asks a learned controller for its own objective (see
//! [`App::objective`]): one export serves all three, as in the paper.

pub mod abr;
pub mod bulk;
pub mod figure;
pub mod rtc;
mod session;
pub mod video;

pub use session::AppTransport;

use crate::run::RunError;
use crate::timeline::PathTimeline;
use mocc_policy::Objective;
use mocc_quic::transfer::QuicCc;
use mocc_quic::LearnedEndpoint;
use std::sync::Arc;

/// An application and its parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum App {
    /// A download.
    Bulk(bulk::Bulk),
    /// A real-time stream.
    Rtc(rtc::Rtc),
    /// A video session.
    Video(video::Video),
}

/// What `mocc net app` writes to `--out`: runs.csv (the marker), summary.json, one
/// mis-<k>.csv per run and app.png; an earlier `mocc net app`'s outputs there are replaced as
/// a whole once the new ones are complete.
pub const NET_APP_OUTPUTS: mocc_outputs::Replaceable = mocc_outputs::Replaceable {
    what: "an application run's outputs",
    owns: |name, is_dir| {
        !is_dir && (name.ends_with(".csv") || name.ends_with(".png") || name == "summary.json")
    },
    marker: "runs.csv",
    command: Some("mocc net app"),
};

/// Bulk transfer wants the link: throughput first.
pub const BULK_OBJECTIVE: Objective = [0.8, 0.1, 0.1];
/// A real-time stream needs little bandwidth and short queues: latency first.
pub const RTC_OBJECTIVE: Objective = [0.1, 0.8, 0.1];
/// Video needs bandwidth to climb the ladder, and a short queue so its throughput samples
/// (which robustMPC predicts from) stay steady: mostly throughput, some latency.
pub const VIDEO_OBJECTIVE: Objective = [0.6, 0.3, 0.1];

impl App {
    /// `bulk:SIZE`, `rtc:RATE[:SECONDS]` or `video[:mpc|bba][:CHUNKS]`.
    pub fn parse(text: &str) -> Result<Self, RunError> {
        match text.split(':').next() {
            Some("bulk") => bulk::parse_bulk_app(text).map(Self::Bulk),
            Some("rtc") => rtc::parse_rtc_app(text).map(Self::Rtc),
            Some("video") => video::parse_video_app(text).map(Self::Video),
            _ => Err(RunError::Invalid(format!(
                "--app {text}: expected bulk:SIZE, rtc:RATE[:SECONDS] or video[:mpc|bba][:CHUNKS]"
            ))),
        }
    }

    /// Its name: bulk, rtc or video.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Bulk(_) => "bulk",
            Self::Rtc(_) => "rtc",
            Self::Video(_) => "video",
        }
    }

    /// The objective it sets on a learned controller given none.
    pub fn objective(&self) -> Objective {
        match self {
            Self::Bulk(_) => BULK_OBJECTIVE,
            Self::Rtc(_) => RTC_OBJECTIVE,
            Self::Video(_) => VIDEO_OBJECTIVE,
        }
    }

    /// The rate a learned controller starts at (1500-byte packets/s) when the user gives
    /// none: a stream knows its bitrate and starts there, with a fifth more for the
    /// transport's headers and the frames' bursts; the others start at `default`.
    pub fn start_rate_pps(&self, default: f64) -> f64 {
        match self {
            Self::Rtc(r) => 1.2 * r.sent_bitrate_bps() / (8.0 * mocc_policy::BYTES_PER_PACKET),
            _ => default,
        }
    }

    /// The longest one run may take (s), for the path's schedule.
    pub fn time_limit_s(&self) -> f64 {
        use session::Application;
        match self {
            Self::Bulk(a) => a.time_limit(),
            Self::Rtc(a) => a.time_limit(),
            Self::Video(a) => a.time_limit(),
        }
        .as_secs_f64()
    }

    /// `runs.csv`'s header.
    pub fn csv_header(&self) -> String {
        let columns = match self {
            Self::Bulk(_) => bulk::CSV_COLUMNS,
            Self::Rtc(_) => rtc::CSV_COLUMNS,
            Self::Video(_) => video::CSV_COLUMNS,
        };
        format!("run,transport,cc,{columns},sender_cpu_s\n")
    }
}

/// What one run of an application measured.
#[derive(Debug, Clone, PartialEq)]
pub enum AppRun {
    /// A download.
    Bulk(bulk::BulkRun),
    /// A stream.
    Rtc(rtc::RtcRun),
    /// A session.
    Video(video::VideoRun),
}

impl Measured {
    /// Its `runs.csv` fields after the run, transport and controller.
    pub fn csv_fields(&self, app: &App) -> String {
        format!("{},{}", self.run.csv_fields(app), self.sender_cpu_s)
    }
}

impl AppRun {
    /// Its `runs.csv` fields after the run, transport and controller (the sender's CPU
    /// time aside).
    pub fn csv_fields(&self, app: &App) -> String {
        match (self, app) {
            (Self::Bulk(r), _) => r.csv_fields(),
            (Self::Rtc(r), _) => r.csv_fields(),
            (Self::Video(r), App::Video(v)) => r.csv_fields(v.rule.name()),
            (Self::Video(r), _) => r.csv_fields("?"),
        }
    }

    /// One line for a person.
    pub fn describe(&self) -> String {
        match self {
            Self::Bulk(r) => format!(
                "{} bytes in {:.3} s ({:.2} Mbit/s)",
                r.bytes,
                r.completion_s,
                r.goodput_mbit()
            ),
            Self::Rtc(r) => format!(
                "{} of {} frames, delay p50 {:.1} ms p95 {:.1} ms, {:.1} % late",
                r.frame_delays_ms.len(),
                r.frames_sent,
                r.delay_p50_ms(),
                r.delay_p95_ms(),
                100.0 * r.late_share()
            ),
            Self::Video(r) => format!(
                "{} chunks, QoE_lin {:.2}, mean bitrate {:.2} Mbit/s, rebuffering {:.2} s",
                r.chunks.len(),
                r.qoe_lin(),
                r.mean_bitrate_mbit(),
                r.rebuffer_s()
            ),
        }
    }
}

/// One run and what it cost the sender.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// What the receiver measured.
    pub run: AppRun,
    /// CPU time of the sender's thread (s): the stack, its congestion controller and the
    /// application's sending side.
    pub sender_cpu_s: f64,
}

/// Runs `app` once across `topology` over `transport`, the path following `timeline`.
pub fn run_app(
    topology: &mocc_net::Topology,
    transport: &AppTransport,
    app: &App,
    timeline: &PathTimeline,
) -> Result<Measured, RunError> {
    let changes = timeline.changes(app.time_limit_s());
    let measured = |(run, sender_cpu_s)| Measured { run, sender_cpu_s };
    match app {
        App::Bulk(a) => session::run_session(topology, transport, a, &changes)
            .map(|(r, cpu)| measured((AppRun::Bulk(r), cpu))),
        App::Rtc(a) => session::run_session(topology, transport, a, &changes)
            .map(|(r, cpu)| measured((AppRun::Rtc(r), cpu))),
        App::Video(a) => session::run_session(topology, transport, a, &changes)
            .map(|(r, cpu)| measured((AppRun::Video(r), cpu))),
    }
}

/// `transport` with every closed MI of a learned controller's connections logged (the log
/// comes back), or `transport` itself for the stacks' own controllers and kernel TCP.
pub fn with_mi_log(transport: &AppTransport) -> (AppTransport, Option<mocc_quic::MiLog>) {
    match transport {
        AppTransport::Quic(QuicCc::Learned(e)) => {
            let log = mocc_quic::MiLog::default();
            let logged = e.clone().with_log(log.clone());
            (AppTransport::Quic(QuicCc::Learned(logged)), Some(log))
        }
        other => (other.clone(), None),
    }
}

/// A learned controller's MIs as CSV: the rate each was sent at, the rate it set next,
/// whether the application ran out of data in it (`not`, `partly`, `wholly`: see
/// `mocc_policy::AppLimit`), and the MI's statistics
/// (times in seconds from the connection's first packet).
pub fn mis_csv(mis: &[mocc_policy::ClosedMi]) -> String {
    let mut text = format!(
        "rate_pps,next_rate_pps,app_limit,{}\n",
        mocc_policy::MonitorInterval::CSV_HEADER
    );
    for m in mis {
        text.push_str(&format!(
            "{},{},{},{}\n",
            m.rate_pps,
            m.next_rate_pps,
            m.app_limit.as_str(),
            m.mi.to_csv_row()
        ));
    }
    text
}

/// Runs over repeats, as `summary.json` and the last stdout line give them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "app", rename_all = "lowercase")]
pub enum AppSummary {
    /// Downloads.
    Bulk(bulk::BulkSummary),
    /// Streams.
    Rtc(rtc::RtcSummary),
    /// Sessions.
    Video(video::VideoSummary),
}

impl AppSummary {
    /// The summary of `runs` of `app` (at least one; all of the app's kind).
    pub fn of(app: &App, runs: &[AppRun]) -> Self {
        match app {
            App::Bulk(_) => Self::Bulk(bulk::BulkSummary::of(&only(runs, |r| match r {
                AppRun::Bulk(b) => Some(*b),
                _ => None,
            }))),
            App::Rtc(_) => Self::Rtc(rtc::RtcSummary::of(&only(runs, |r| match r {
                AppRun::Rtc(b) => Some(b.clone()),
                _ => None,
            }))),
            App::Video(v) => Self::Video(video::VideoSummary::of(
                &only(runs, |r| match r {
                    AppRun::Video(b) => Some(b.clone()),
                    _ => None,
                }),
                v.rule.name(),
            )),
        }
    }

    /// The application's own metric (the one Figure 10 compares) and whether lower is
    /// better: bulk's median completion time, rtc's median p95 frame delay, video's median
    /// QoE_lin.
    pub fn headline(&self) -> (f64, bool) {
        match self {
            Self::Bulk(s) => (s.median_s, true),
            Self::Rtc(s) => (s.delay_p95_ms, true),
            Self::Video(s) => (s.qoe_lin, false),
        }
    }
}

fn only<T>(runs: &[AppRun], pick: impl Fn(&AppRun) -> Option<T>) -> Vec<T> {
    runs.iter().filter_map(pick).collect()
}

/// The transport and congestion control of `--transport T --cc CC`: over `quic` an export
/// (`DIR[:W_THR,W_LAT,W_LOSS]`; without weights, `objective`), starting at `start_rate_pps`),
/// `cubic` or `bbr` (the stack's); over `tcp` a kernel congestion control (`cubic`, `bbr`,
/// `reno`, or `tcp:NAME`).
pub fn parse_transport(
    transport: &str,
    cc: &str,
    start_rate_pps: f64,
    objective: Objective,
) -> Result<AppTransport, RunError> {
    let bad = |why: String| RunError::Invalid(format!("--cc {cc}: {why}"));
    match transport {
        "tcp" => match cc {
            "cubic" | "bbr" | "reno" => Ok(AppTransport::Tcp(cc.to_string())),
            _ => match cc.strip_prefix("tcp:") {
                Some(name) if !name.is_empty() => Ok(AppTransport::Tcp(name.to_string())),
                _ => Err(bad(
                    "over tcp: cubic, bbr, reno or tcp:NAME (exports run over quic)".into(),
                )),
            },
        },
        "quic" => match cc {
            "cubic" => Ok(AppTransport::Quic(QuicCc::Cubic)),
            "bbr" => Ok(AppTransport::Quic(QuicCc::Bbr)),
            "reno" => Err(bad("s2n-quic has no Reno (cubic, bbr or an export)".into())),
            _ => {
                let (dir, w) = match cc.split_once(':') {
                    Some((dir, w)) => (dir, mocc_policy::objective::parse(w).map_err(bad)?),
                    None => (cc, objective),
                };
                let policy = mocc_policy::Policy::load(dir).map_err(|e| bad(e.to_string()))?;
                let endpoint = LearnedEndpoint::new(Arc::new(policy), w, start_rate_pps)
                    .map_err(|e| bad(e.to_string()))?;
                Ok(AppTransport::Quic(QuicCc::Learned(endpoint)))
            }
        },
        other => Err(RunError::Invalid(format!(
            "--transport {other}: expected quic or tcp"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apps_parse_by_kind_and_carry_their_objective() {
        assert_eq!(App::parse("bulk:1MB").unwrap().kind(), "bulk");
        assert_eq!(
            App::parse("rtc:2.5mbit").unwrap().objective(),
            RTC_OBJECTIVE
        );
        assert_eq!(
            App::parse("video:bba").unwrap().objective(),
            VIDEO_OBJECTIVE
        );
        assert!(App::parse("ftp:1MB").is_err());
        let h = App::parse("rtc:1mbit").unwrap().csv_header();
        assert!(h.starts_with("run,transport,cc,frames_sent,"), "{h}");
    }

    #[test]
    fn transports_name_their_controller() {
        assert!(matches!(
            parse_transport("tcp", "tcp:vegas", 100.0, BULK_OBJECTIVE),
            Ok(AppTransport::Tcp(n)) if n == "vegas"
        ));
        assert!(parse_transport("tcp", "checkpoints/x", 100.0, BULK_OBJECTIVE).is_err());
        assert!(parse_transport("quic", "reno", 100.0, BULK_OBJECTIVE).is_err());
        assert!(parse_transport("udp", "cubic", 100.0, BULK_OBJECTIVE).is_err());
    }
}
