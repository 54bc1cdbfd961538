//! Real-time communication: a 30 fps stream at a target bitrate; each frame is captured on the
//! frame clock, split into 1200-byte packets and written at once (a frame waits for the
//! transport, never dropped). The receiver measures each frame's delay from its capture to
//! its last packet, the share of frames later than 200 ms, the delivered frame rate and the
//! inter-packet delay at the receiver (the MOCC paper's RTC metric).

use super::session::{Application, Stream};
use crate::run::RunError;
use mocc_eval::results::median;
use std::io;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Bytes of an application packet, header included.
pub const PACKET_BYTES: usize = 1200;
/// Header: frame (u32), packet index (u16), packets in the frame (u16), capture time (u64,
/// microseconds since the run's epoch).
const HEADER_BYTES: usize = 16;
/// A frame later than this is late (ms).
pub const LATE_MS: f64 = 200.0;
/// Frames per second.
pub const FPS: f64 = 30.0;
/// How long a receiver waits for the stream's end beyond its duration.
const DRAIN_LIMIT_S: f64 = 60.0;

/// A stream at `bitrate_bps` for `duration_s`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rtc {
    /// Target bitrate (bit/s).
    pub bitrate_bps: f64,
    /// Seconds of frames.
    pub duration_s: f64,
}

impl Rtc {
    /// Frames in the stream.
    pub fn frames(&self) -> u32 {
        (self.duration_s * FPS).round() as u32
    }

    /// Packets per frame: the frame's bytes at the target bitrate, in whole packets.
    pub fn packets_per_frame(&self) -> u16 {
        let frame_bytes = self.bitrate_bps / 8.0 / FPS;
        (frame_bytes / PACKET_BYTES as f64)
            .ceil()
            .clamp(1.0, f64::from(u16::MAX)) as u16
    }

    /// The bitrate sent (bit/s): the target rounded up to whole packets per frame.
    pub fn sent_bitrate_bps(&self) -> f64 {
        f64::from(self.packets_per_frame()) * PACKET_BYTES as f64 * 8.0 * FPS
    }
}

/// What a receiver measured over one stream.
#[derive(Debug, Clone, PartialEq)]
pub struct RtcRun {
    /// Frames the sender captured.
    pub frames_sent: u32,
    /// Each delivered frame's delay, capture to last packet (ms), in frame order.
    pub frame_delays_ms: Vec<f64>,
    /// Gaps between consecutive packet arrivals (ms).
    pub inter_packet_ms: Vec<f64>,
    /// From the first frame's capture to the last frame's arrival (s).
    pub span_s: f64,
}

impl RtcRun {
    /// Median frame delay (ms).
    pub fn delay_p50_ms(&self) -> f64 {
        percentile(&self.frame_delays_ms, 0.5)
    }

    /// 95th percentile frame delay (ms).
    pub fn delay_p95_ms(&self) -> f64 {
        percentile(&self.frame_delays_ms, 0.95)
    }

    /// Share of the captured frames that arrived later than [`LATE_MS`] or not at all.
    pub fn late_share(&self) -> f64 {
        let on_time = self
            .frame_delays_ms
            .iter()
            .filter(|&&d| d <= LATE_MS)
            .count();
        1.0 - on_time as f64 / f64::from(self.frames_sent.max(1))
    }

    /// Frames delivered per second of the stream's span.
    pub fn delivered_fps(&self) -> f64 {
        self.frame_delays_ms.len() as f64 / self.span_s.max(1.0 / FPS)
    }

    /// Mean gap between packet arrivals (ms).
    pub fn inter_packet_mean_ms(&self) -> f64 {
        mean(&self.inter_packet_ms)
    }

    /// 95th percentile gap between packet arrivals (ms).
    pub fn inter_packet_p95_ms(&self) -> f64 {
        percentile(&self.inter_packet_ms, 0.95)
    }
}

/// The nearest-rank `q` quantile of `values` (NaN when empty).
pub(crate) fn percentile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// The smallest and largest of `values` (infinities when empty).
pub(crate) fn min_max(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn packet_header(frame: u32, index: u16, count: u16, captured_us: u64) -> [u8; HEADER_BYTES] {
    let mut h = [0u8; HEADER_BYTES];
    h[0..4].copy_from_slice(&frame.to_be_bytes());
    h[4..6].copy_from_slice(&index.to_be_bytes());
    h[6..8].copy_from_slice(&count.to_be_bytes());
    h[8..16].copy_from_slice(&captured_us.to_be_bytes());
    h
}

/// (frame, index, count, captured_us) of a packet.
fn parse_header(p: &[u8]) -> (u32, u16, u16, u64) {
    let u16_at = |i: usize| u16::from_be_bytes([p[i], p[i + 1]]);
    let mut frame = [0u8; 4];
    frame.copy_from_slice(&p[0..4]);
    let mut captured = [0u8; 8];
    captured.copy_from_slice(&p[8..16]);
    (
        u32::from_be_bytes(frame),
        u16_at(4),
        u16_at(6),
        u64::from_be_bytes(captured),
    )
}

/// The packets of frame `frame`, captured at `captured_us`.
fn frame_packets(frame: u32, count: u16, captured_us: u64) -> Vec<u8> {
    let mut out = vec![0u8; usize::from(count) * PACKET_BYTES];
    for (i, p) in out.chunks_mut(PACKET_BYTES).enumerate() {
        p[..HEADER_BYTES].copy_from_slice(&packet_header(frame, i as u16, count, captured_us));
    }
    out
}

impl Application for Rtc {
    type Outcome = RtcRun;

    async fn serve<S: Stream>(&self, stream: &mut S, epoch: Instant) -> io::Result<()> {
        let start = tokio::time::Instant::now();
        let count = self.packets_per_frame();
        for frame in 0..self.frames() {
            let capture = start + Duration::from_secs_f64(f64::from(frame) / FPS);
            tokio::time::sleep_until(capture).await;
            let captured_us = capture.into_std().duration_since(epoch).as_micros() as u64;
            stream
                .write_all(&frame_packets(frame, count, captured_us))
                .await?;
        }
        Ok(())
    }

    async fn receive<S: Stream>(
        &self,
        stream: &mut S,
        epoch: Instant,
        _connecting: Instant,
    ) -> io::Result<RtcRun> {
        let mut packet = [0u8; PACKET_BYTES];
        let mut delays = Vec::with_capacity(self.frames() as usize);
        let mut gaps = Vec::new();
        let (mut first_capture_us, mut last_arrival_us) = (None, 0u64);
        let mut previous: Option<Instant> = None;
        loop {
            match stream.read_exact(&mut packet).await {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                Err(e) => return Err(e),
            }
            let now = Instant::now();
            if let Some(p) = previous {
                gaps.push(now.duration_since(p).as_secs_f64() * 1e3);
            }
            previous = Some(now);
            let (_, index, count, captured_us) = parse_header(&packet);
            first_capture_us.get_or_insert(captured_us);
            if index + 1 == count {
                let arrival_us = now.duration_since(epoch).as_micros() as u64;
                delays.push(arrival_us.saturating_sub(captured_us) as f64 / 1e3);
                last_arrival_us = arrival_us;
            }
        }
        let span_us = last_arrival_us.saturating_sub(first_capture_us.unwrap_or(last_arrival_us));
        Ok(RtcRun {
            frames_sent: self.frames(),
            frame_delays_ms: delays,
            inter_packet_ms: gaps,
            span_s: span_us as f64 / 1e6,
        })
    }

    fn time_limit(&self) -> Duration {
        Duration::from_secs_f64(self.duration_s + DRAIN_LIMIT_S)
    }
}

/// The stream of `rtc:RATE[:SECONDS]` (`rtc:2.5mbit`, `rtc:800kbit:10s`; 30 s by default).
pub fn parse_rtc_app(app: &str) -> Result<Rtc, RunError> {
    let bad = |why: &str| RunError::Invalid(format!("--app {app}: {why}"));
    let Some(spec) = app.strip_prefix("rtc:") else {
        return Err(bad("expected rtc:RATE[:SECONDS]"));
    };
    let (rate, seconds) = match spec.split_once(':') {
        Some((r, s)) => (r, Some(s)),
        None => (spec, None),
    };
    let lower = rate.trim().to_ascii_lowercase();
    let (digits, scale) = if let Some(d) = lower.strip_suffix("mbit") {
        (d, 1e6)
    } else if let Some(d) = lower.strip_suffix("kbit") {
        (d, 1e3)
    } else {
        return Err(bad("the rate's unit is kbit or mbit (e.g. 2.5mbit)"));
    };
    let bitrate_bps = digits
        .parse::<f64>()
        .map_err(|_| bad("the rate is not a number"))?
        * scale;
    if !(10e3..=1e9).contains(&bitrate_bps) {
        return Err(bad("the rate must be between 10 kbit and 1000 mbit"));
    }
    let duration_s = match seconds {
        None => 30.0,
        Some(s) => s
            .trim()
            .trim_end_matches('s')
            .parse::<f64>()
            .ok()
            .filter(|d| (1.0..=3600.0).contains(d))
            .ok_or_else(|| bad("the duration is seconds from 1 to 3600 (e.g. 30s)"))?,
    };
    Ok(Rtc {
        bitrate_bps,
        duration_s,
    })
}

/// `runs.csv`'s columns for a stream.
pub const CSV_COLUMNS: &str = "frames_sent,frames_delivered,delay_p50_ms,delay_p95_ms,late_share,delivered_fps,inter_packet_mean_ms,inter_packet_p95_ms";

impl RtcRun {
    /// Its `runs.csv` fields ([`CSV_COLUMNS`]).
    pub fn csv_fields(&self) -> String {
        format!(
            "{},{},{},{},{},{},{},{}",
            self.frames_sent,
            self.frame_delays_ms.len(),
            self.delay_p50_ms(),
            self.delay_p95_ms(),
            self.late_share(),
            self.delivered_fps(),
            self.inter_packet_mean_ms(),
            self.inter_packet_p95_ms()
        )
    }
}

/// Streams over repeats: medians of each run's numbers, and the spread of the p95 delay.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RtcSummary {
    /// Streams made.
    pub runs: usize,
    /// Frames per stream.
    pub frames: u32,
    /// Median over runs of the median frame delay (ms).
    pub delay_p50_ms: f64,
    /// Median over runs of the 95th percentile frame delay (ms).
    pub delay_p95_ms: f64,
    /// Smallest and largest p95 frame delay of a run (ms).
    pub delay_p95_range_ms: (f64, f64),
    /// Median share of frames later than 200 ms.
    pub late_share: f64,
    /// Median delivered frame rate (frames/s).
    pub delivered_fps: f64,
    /// Median of the runs' mean inter-packet delay (ms).
    pub inter_packet_ms: f64,
    /// Median of the runs' 95th percentile inter-packet delay (ms).
    pub inter_packet_p95_ms: f64,
}

impl RtcSummary {
    /// The summary of `runs` (at least one).
    pub fn of(runs: &[RtcRun]) -> Self {
        let med = |f: fn(&RtcRun) -> f64| median(runs.iter().map(f).collect());
        let p95: Vec<f64> = runs.iter().map(RtcRun::delay_p95_ms).collect();
        Self {
            runs: runs.len(),
            frames: runs.first().map_or(0, |r| r.frames_sent),
            delay_p50_ms: med(RtcRun::delay_p50_ms),
            delay_p95_ms: med(RtcRun::delay_p95_ms),
            delay_p95_range_ms: min_max(&p95),
            late_share: med(RtcRun::late_share),
            delivered_fps: med(RtcRun::delivered_fps),
            inter_packet_ms: med(RtcRun::inter_packet_mean_ms),
            inter_packet_p95_ms: med(RtcRun::inter_packet_p95_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_parse_with_units_and_a_duration() {
        let r = parse_rtc_app("rtc:2.5mbit").unwrap();
        assert_eq!((r.bitrate_bps, r.duration_s), (2.5e6, 30.0));
        let r = parse_rtc_app("rtc:800kbit:10s").unwrap();
        assert_eq!((r.bitrate_bps, r.duration_s), (8e5, 10.0));
        for bad in [
            "rtc",
            "rtc:",
            "rtc:2.5",
            "rtc:xmbit",
            "rtc:1kbit",
            "rtc:1mbit:0s",
            "rtc:1mbit:x",
        ] {
            assert!(parse_rtc_app(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn frames_are_whole_packets_at_the_target_rate() {
        let r = Rtc {
            bitrate_bps: 2.5e6,
            duration_s: 10.0,
        };
        // 2.5 Mbit/s at 30 fps: 10,417 bytes a frame, 9 packets of 1200 bytes.
        assert_eq!(r.packets_per_frame(), 9);
        assert_eq!(r.frames(), 300);
        assert!((r.sent_bitrate_bps() - 9.0 * 1200.0 * 8.0 * 30.0).abs() < 1e-9);
        let packets = frame_packets(7, 9, 123_456);
        assert_eq!(packets.len(), 9 * PACKET_BYTES);
        assert_eq!(
            parse_header(&packets[8 * PACKET_BYTES..]),
            (7, 8, 9, 123_456)
        );
    }

    #[test]
    fn metrics_by_hand() {
        let run = RtcRun {
            frames_sent: 5,
            frame_delays_ms: vec![40.0, 50.0, 250.0, 60.0],
            inter_packet_ms: vec![1.0, 3.0, 2.0, 10.0],
            span_s: 0.2,
        };
        assert_eq!(run.delay_p50_ms(), 50.0);
        assert_eq!(run.delay_p95_ms(), 250.0);
        // One late, one never arrived: 2 of 5.
        assert!((run.late_share() - 0.4).abs() < 1e-12);
        assert!((run.delivered_fps() - 20.0).abs() < 1e-12);
        assert_eq!(run.inter_packet_mean_ms(), 4.0);
        assert_eq!(run.inter_packet_p95_ms(), 10.0);
        let s = RtcSummary::of(&[run.clone(), run]);
        assert_eq!((s.runs, s.frames, s.delay_p95_ms), (2, 5, 250.0));
    }

    #[tokio::test]
    async fn a_stream_over_a_pipe_delivers_every_frame_on_time() {
        let rtc = Rtc {
            bitrate_bps: 1e6,
            duration_s: 1.0,
        };
        let (mut a, mut b) = tokio::io::duplex(1 << 20);
        let epoch = Instant::now();
        let send = async {
            rtc.serve(&mut a, epoch).await.unwrap();
            drop(a);
        };
        let (_, run) = tokio::join!(send, rtc.receive(&mut b, epoch, epoch));
        let run = run.unwrap();
        assert_eq!(run.frame_delays_ms.len(), 30);
        assert_eq!(run.late_share(), 0.0);
        assert!(run.delay_p95_ms() < 50.0, "{}", run.delay_p95_ms());
        assert_eq!(run.inter_packet_ms.len(), 30 * 4 - 1);
    }
}
