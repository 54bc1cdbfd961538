//! The MOCC paper's file transfer: one download of a given size from the sender to the
//! receiver; its completion time from the connection attempt to the last byte.

use super::session::{Application, Stream};
use crate::run::RunError;
use std::io;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Bytes per write of the sender and per read of the receiver.
const CHUNK: usize = 64 * 1024;
/// The slowest a download may be before it counts as failed (bytes/s), beyond a minute.
const SLOWEST_BYTES_PER_S: f64 = 12_500.0;

/// A download of `bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bulk {
    /// Its size.
    pub bytes: usize,
}

/// One finished download.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BulkRun {
    /// Bytes received.
    pub bytes: usize,
    /// From the connection attempt to the last byte (s).
    pub completion_s: f64,
}

impl BulkRun {
    /// Mean goodput (Mbit/s).
    pub fn goodput_mbit(&self) -> f64 {
        self.bytes as f64 * 8.0 / 1e6 / self.completion_s
    }
}

impl Application for Bulk {
    type Outcome = BulkRun;

    async fn serve<S: Stream>(&self, stream: &mut S, _epoch: Instant) -> io::Result<()> {
        let chunk = vec![0u8; CHUNK];
        let mut left = self.bytes;
        while left > 0 {
            let n = left.min(CHUNK);
            stream.write_all(&chunk[..n]).await?;
            left -= n;
        }
        Ok(())
    }

    async fn receive<S: Stream>(
        &self,
        stream: &mut S,
        _epoch: Instant,
        connecting: Instant,
    ) -> io::Result<BulkRun> {
        let mut buf = vec![0u8; CHUNK];
        let mut bytes = 0;
        loop {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            bytes += n;
        }
        if bytes != self.bytes {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("received {bytes} of {} bytes", self.bytes),
            ));
        }
        Ok(BulkRun {
            bytes,
            completion_s: connecting.elapsed().as_secs_f64(),
        })
    }

    fn time_limit(&self) -> Duration {
        Duration::from_secs_f64(60.0 + self.bytes as f64 / SLOWEST_BYTES_PER_S)
    }
}

/// The size of `bulk:SIZE` (`1MB`, `500KB`, `2GB`: decimal units; plain digits are bytes).
pub fn parse_bulk_app(app: &str) -> Result<Bulk, RunError> {
    let bad = |why: &str| RunError::Invalid(format!("--app {app}: {why}"));
    let Some(size) = app.strip_prefix("bulk:") else {
        return Err(bad("expected bulk:SIZE"));
    };
    let upper = size.trim().to_ascii_uppercase();
    let (digits, unit) = match upper.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => upper.split_at(i),
        None => (upper.as_str(), "B"),
    };
    let scale = match unit {
        "B" => 1.0,
        "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        _ => return Err(bad("the size's unit is B, KB, MB or GB")),
    };
    let n: f64 = digits
        .parse()
        .map_err(|_| bad("the size is not a number"))?;
    let bytes = n * scale;
    if !(1.0..=MAX_BULK_BYTES).contains(&bytes) {
        return Err(bad("the size must be between 1 byte and 10 GB"));
    }
    Ok(Bulk {
        bytes: bytes as usize,
    })
}

/// The largest download (bytes).
pub const MAX_BULK_BYTES: f64 = 1e10;

/// Completion times over repeats, as `summary.json` and the last stdout line give them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BulkSummary {
    /// Downloads made.
    pub runs: usize,
    /// Bytes of each.
    pub bytes: usize,
    /// Median completion time (s).
    pub median_s: f64,
    /// 95th percentile (nearest rank, s).
    pub p95_s: f64,
    /// Standard deviation (s; 0 for one run).
    pub std_s: f64,
    /// Mean goodput over the runs (Mbit/s).
    pub mean_goodput_mbit: f64,
}

impl BulkSummary {
    /// The summary of `runs` (at least one).
    pub fn of(runs: &[BulkRun]) -> Self {
        let mut t: Vec<f64> = runs.iter().map(|r| r.completion_s).collect();
        t.sort_by(f64::total_cmp);
        let n = t.len();
        let mean = t.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            t.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let rank = ((0.95 * n as f64).ceil() as usize).clamp(1, n);
        Self {
            runs: n,
            bytes: runs.first().map_or(0, |r| r.bytes),
            median_s: mocc_eval::results::median(t.clone()),
            p95_s: t[rank - 1],
            std_s: var.sqrt(),
            mean_goodput_mbit: runs.iter().map(BulkRun::goodput_mbit).sum::<f64>() / n as f64,
        }
    }
}

/// `runs.csv`'s columns after the run's transport and controller.
pub const CSV_COLUMNS: &str = "bytes,completion_s,goodput_mbit";

impl BulkRun {
    /// Its `runs.csv` fields ([`CSV_COLUMNS`]).
    pub fn csv_fields(&self) -> String {
        format!(
            "{},{},{}",
            self.bytes,
            self.completion_s,
            self.goodput_mbit()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_decimal_units() {
        assert_eq!(parse_bulk_app("bulk:10MB").unwrap().bytes, 10_000_000);
        assert_eq!(parse_bulk_app("bulk:500kb").unwrap().bytes, 500_000);
        assert_eq!(parse_bulk_app("bulk:1.5GB").unwrap().bytes, 1_500_000_000);
        assert_eq!(parse_bulk_app("bulk:1234").unwrap().bytes, 1234);
        for bad in [
            "video",
            "bulk:",
            "bulk:10TB",
            "bulk:x",
            "bulk:0",
            "bulk:20GB",
        ] {
            assert!(parse_bulk_app(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn summaries_by_hand() {
        let runs: Vec<BulkRun> = [3.0, 1.0, 2.0, 4.0]
            .iter()
            .map(|&s| BulkRun {
                bytes: 1_000_000,
                completion_s: s,
            })
            .collect();
        let s = BulkSummary::of(&runs);
        assert_eq!(s.median_s, 2.5);
        assert_eq!(s.p95_s, 4.0);
        assert!((s.std_s - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        // 8 Mbit over 1, 2, 3 and 4 s.
        assert!((s.mean_goodput_mbit - (8.0 + 4.0 + 8.0 / 3.0 + 2.0) / 4.0).abs() < 1e-12);
        assert_eq!(BulkSummary::of(&runs[..1]).std_s, 0.0);
    }
}
