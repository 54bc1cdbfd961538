//! Chunked adaptive video, as Pensieve streams it: the receiver asks for each 4 s chunk at a
//! level of the bitrate ladder that its rule (robustMPC or buffer-based) picks, plays from a
//! buffer of at most 60 s (it waits while the buffer is full), and scores the session with
//! QoE_lin. The sender answers each request with the chunk.

use super::abr::{self, AbrRule, CHUNK_S, LADDER_KBPS};
use super::session::{Application, Stream};
use crate::run::RunError;
use mocc_eval::results::median;
use std::io;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The most video the player buffers (s).
pub const BUFFER_CAP_S: f64 = 60.0;
/// Chunks of the default session (Pensieve's test video).
pub const DEFAULT_CHUNKS: u32 = 48;
/// How long a session may take beyond its video's length before it counts as failed.
const SLACK_S: f64 = 300.0;
/// Bytes per write of the sender.
const WRITE_BYTES: usize = 64 * 1024;

/// A session of `chunks` chunks under `rule`.
#[derive(Debug, Clone, PartialEq)]
pub struct Video {
    /// Chunks of 4 s.
    pub chunks: u32,
    /// The bitrate rule.
    pub rule: AbrRule,
}

/// One downloaded chunk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChunkRecord {
    /// Its level on the ladder.
    pub level: usize,
    /// From the request to its last byte (s).
    pub download_s: f64,
    /// Playback stalled this long waiting for it (s; 0 for the first chunk, whose wait is
    /// the startup delay).
    pub rebuffer_s: f64,
    /// Buffer after it arrived (s).
    pub buffer_s: f64,
}

/// A finished session.
#[derive(Debug, Clone, PartialEq)]
pub struct VideoRun {
    /// Every chunk, in order.
    pub chunks: Vec<ChunkRecord>,
    /// From the connection attempt to the first chunk's last byte (s).
    pub startup_s: f64,
}

impl VideoRun {
    /// QoE_lin: the sum over chunks of the bitrate (Mbit/s), less 4.3 x the seconds of
    /// rebuffering, less the bitrate changes (Mbit/s).
    pub fn qoe_lin(&self) -> f64 {
        let mut previous = self.chunks.first().map_or(0, |c| c.level);
        self.chunks
            .iter()
            .map(|c| {
                let q = abr::chunk_qoe(c.level, previous, c.rebuffer_s);
                previous = c.level;
                q
            })
            .sum()
    }

    /// Seconds of rebuffering after playback started.
    pub fn rebuffer_s(&self) -> f64 {
        self.chunks.iter().map(|c| c.rebuffer_s).sum()
    }

    /// Mean bitrate of the chunks (Mbit/s).
    pub fn mean_bitrate_mbit(&self) -> f64 {
        let sum: f64 = self.chunks.iter().map(|c| LADDER_KBPS[c.level] / 1e3).sum();
        sum / self.chunks.len().max(1) as f64
    }

    /// Bytes over download time (Mbit/s).
    pub fn throughput_mbit(&self) -> f64 {
        let bytes: usize = self.chunks.iter().map(|c| abr::chunk_bytes(c.level)).sum();
        let seconds: f64 = self.chunks.iter().map(|c| c.download_s).sum();
        bytes as f64 * 8.0 / 1e6 / seconds
    }

    /// Chunks at each level of the ladder.
    pub fn chunks_per_level(&self) -> [usize; LADDER_KBPS.len()] {
        let mut n = [0; LADDER_KBPS.len()];
        for c in &self.chunks {
            n[c.level] += 1;
        }
        n
    }
}

/// A request: chunk index, level.
fn request(chunk: u32, level: usize) -> [u8; 8] {
    let mut r = [0u8; 8];
    r[..4].copy_from_slice(&chunk.to_be_bytes());
    r[4..].copy_from_slice(&(level as u32).to_be_bytes());
    r
}

impl Application for Video {
    type Outcome = VideoRun;

    async fn serve<S: Stream>(&self, stream: &mut S, _epoch: Instant) -> io::Result<()> {
        let mut req = [0u8; 8];
        let payload = vec![0u8; WRITE_BYTES];
        loop {
            match stream.read_exact(&mut req).await {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(e),
            }
            let level = u32::from_be_bytes([req[4], req[5], req[6], req[7]]) as usize;
            if level >= LADDER_KBPS.len() {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "no such level"));
            }
            let mut left = abr::chunk_bytes(level);
            stream.write_all(&(left as u32).to_be_bytes()).await?;
            while left > 0 {
                let n = left.min(WRITE_BYTES);
                stream.write_all(&payload[..n]).await?;
                left -= n;
            }
        }
    }

    async fn receive<S: Stream>(
        &self,
        stream: &mut S,
        _epoch: Instant,
        connecting: Instant,
    ) -> io::Result<VideoRun> {
        let mut rule = self.rule.clone();
        let (mut records, mut throughputs) = (Vec::new(), Vec::new());
        let (mut buffer, mut last, mut startup_s) = (0.0, abr::FIRST_LEVEL, 0.0);
        let mut buf = vec![0u8; WRITE_BYTES];
        for chunk in 0..self.chunks {
            let left = (self.chunks - chunk) as usize;
            let level = rule.choose(buffer, last, &throughputs, left);
            let asked = Instant::now();
            stream.write_all(&request(chunk, level)).await?;
            stream.flush().await?;
            let mut len = [0u8; 4];
            stream.read_exact(&mut len).await?;
            let mut remaining = u32::from_be_bytes(len) as usize;
            while remaining > 0 {
                let n = remaining.min(buf.len());
                stream.read_exact(&mut buf[..n]).await?;
                remaining -= n;
            }
            let download_s = asked.elapsed().as_secs_f64();
            let rebuffer_s = if chunk == 0 {
                startup_s = connecting.elapsed().as_secs_f64();
                0.0
            } else {
                (download_s - buffer).max(0.0)
            };
            buffer = (buffer - download_s).max(0.0) + CHUNK_S;
            if buffer > BUFFER_CAP_S {
                tokio::time::sleep(Duration::from_secs_f64(buffer - BUFFER_CAP_S)).await;
                buffer = BUFFER_CAP_S;
            }
            throughputs.push(abr::chunk_bytes(level) as f64 * 8.0 / 1e6 / download_s);
            records.push(ChunkRecord {
                level,
                download_s,
                rebuffer_s,
                buffer_s: buffer,
            });
            last = level;
        }
        Ok(VideoRun {
            chunks: records,
            startup_s,
        })
    }

    fn time_limit(&self) -> Duration {
        Duration::from_secs_f64(f64::from(self.chunks) * CHUNK_S + SLACK_S)
    }
}

/// The session of `video[:mpc|bba][:CHUNKS]` (robustMPC and 48 chunks by default).
pub fn parse_video_app(app: &str) -> Result<Video, RunError> {
    let bad = |why: &str| RunError::Invalid(format!("--app {app}: {why}"));
    let mut parts = app.split(':');
    if parts.next() != Some("video") {
        return Err(bad("expected video[:mpc|bba][:CHUNKS]"));
    }
    let mut video = Video {
        chunks: DEFAULT_CHUNKS,
        rule: AbrRule::robust_mpc(),
    };
    for part in parts {
        match part {
            "mpc" => video.rule = AbrRule::robust_mpc(),
            "bba" => video.rule = AbrRule::BufferBased,
            n => {
                video.chunks = n
                    .parse()
                    .ok()
                    .filter(|c| (1..=10_000).contains(c))
                    .ok_or_else(|| bad("expected mpc, bba or a chunk count from 1 to 10000"))?
            }
        }
    }
    Ok(video)
}

/// `runs.csv`'s columns for a session.
pub const CSV_COLUMNS: &str =
    "rule,chunks,qoe_lin,mean_bitrate_mbit,rebuffer_s,startup_s,throughput_mbit,chunks_per_level";

impl VideoRun {
    /// Its `runs.csv` fields ([`CSV_COLUMNS`]) under `rule`; the chunks per level as
    /// `a|b|c|d|e|f`.
    pub fn csv_fields(&self, rule: &str) -> String {
        let levels: Vec<String> = self
            .chunks_per_level()
            .iter()
            .map(|n| n.to_string())
            .collect();
        format!(
            "{rule},{},{},{},{},{},{},{}",
            self.chunks.len(),
            self.qoe_lin(),
            self.mean_bitrate_mbit(),
            self.rebuffer_s(),
            self.startup_s,
            self.throughput_mbit(),
            levels.join("|")
        )
    }
}

/// Sessions over repeats.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct VideoSummary {
    /// Sessions made.
    pub runs: usize,
    /// Chunks per session.
    pub chunks: usize,
    /// The bitrate rule.
    pub rule: &'static str,
    /// Median QoE_lin of a session.
    pub qoe_lin: f64,
    /// Smallest and largest QoE_lin of a session.
    pub qoe_lin_range: (f64, f64),
    /// Median mean bitrate (Mbit/s).
    pub mean_bitrate_mbit: f64,
    /// Median rebuffering (s).
    pub rebuffer_s: f64,
    /// Median startup delay (s).
    pub startup_s: f64,
    /// Median throughput (Mbit/s).
    pub throughput_mbit: f64,
    /// Chunks at each level, summed over the sessions.
    pub chunks_per_level: Vec<usize>,
}

impl VideoSummary {
    /// The summary of `runs` (at least one) under `rule`.
    pub fn of(runs: &[VideoRun], rule: &'static str) -> Self {
        let med = |f: fn(&VideoRun) -> f64| median(runs.iter().map(f).collect());
        let qoe: Vec<f64> = runs.iter().map(VideoRun::qoe_lin).collect();
        let mut levels = vec![0; LADDER_KBPS.len()];
        for r in runs {
            for (total, n) in levels.iter_mut().zip(r.chunks_per_level()) {
                *total += n;
            }
        }
        Self {
            runs: runs.len(),
            chunks: runs.first().map_or(0, |r| r.chunks.len()),
            rule,
            qoe_lin: med(VideoRun::qoe_lin),
            qoe_lin_range: super::rtc::min_max(&qoe),
            mean_bitrate_mbit: med(VideoRun::mean_bitrate_mbit),
            rebuffer_s: med(VideoRun::rebuffer_s),
            startup_s: med(|r| r.startup_s),
            throughput_mbit: med(VideoRun::throughput_mbit),
            chunks_per_level: levels,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(level: usize, download_s: f64, rebuffer_s: f64) -> ChunkRecord {
        ChunkRecord {
            level,
            download_s,
            rebuffer_s,
            buffer_s: 4.0,
        }
    }

    #[test]
    fn sessions_parse() {
        let v = parse_video_app("video").unwrap();
        assert_eq!((v.chunks, v.rule.name()), (48, "mpc"));
        let v = parse_video_app("video:bba:12").unwrap();
        assert_eq!((v.chunks, v.rule.name()), (12, "bba"));
        for bad in ["vid", "video:", "video:x", "video:0", "video:mpc:x"] {
            assert!(parse_video_app(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn qoe_by_hand() {
        let run = VideoRun {
            chunks: vec![
                record(1, 1.0, 0.0),
                record(3, 2.0, 0.5),
                record(3, 2.0, 0.0),
            ],
            startup_s: 1.2,
        };
        // 0.75 + (1.85 - 4.3 x 0.5 - 1.1) + 1.85.
        assert!((run.qoe_lin() - (0.75 + 1.85 - 2.15 - 1.1 + 1.85)).abs() < 1e-12);
        assert_eq!(run.rebuffer_s(), 0.5);
        assert_eq!(run.chunks_per_level(), [0, 1, 0, 2, 0, 0]);
        // 375,000 + 2 x 925,000 bytes in 5 s.
        assert!((run.throughput_mbit() - 2_225_000.0 * 8.0 / 1e6 / 5.0).abs() < 1e-9);
        let s = VideoSummary::of(&[run.clone(), run], "mpc");
        assert_eq!((s.runs, s.chunks), (2, 3));
        assert_eq!(s.chunks_per_level, vec![0, 2, 0, 4, 0, 0]);
    }

    #[tokio::test]
    async fn a_session_over_a_fast_pipe_climbs_to_the_top_level() {
        let video = Video {
            chunks: 6,
            rule: AbrRule::robust_mpc(),
        };
        let (mut a, mut b) = tokio::io::duplex(1 << 20);
        let epoch = Instant::now();
        let (served, run) = tokio::join!(
            async {
                let r = video.serve(&mut a, epoch).await;
                drop(a);
                r
            },
            async {
                let r = video.receive(&mut b, epoch, epoch).await;
                drop(b);
                r
            }
        );
        served.unwrap();
        let run = run.unwrap();
        assert_eq!(run.chunks.len(), 6);
        assert_eq!(run.chunks[0].level, abr::FIRST_LEVEL);
        assert_eq!(
            run.chunks.last().map(|c| c.level),
            Some(LADDER_KBPS.len() - 1)
        );
        assert_eq!(run.rebuffer_s(), 0.0);
    }
}
