//! The MOCC paper's file transfer on the emulated real path: one download of a given size,
//! from the sender's namespace to the receiver's, over QUIC (the learned controller, or the
//! stack's Cubic or BBR) or kernel TCP (`TCP_CONGESTION`: cubic, bbr, reno), the same
//! application on both; its completion time from the connection attempt to the last byte.

use crate::run::{net_error, RunError};
use mocc_net::{Host, NetError, Topology};
use mocc_quic::transfer::{self, Certificate, QuicCc};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The port the sender serves on.
const PORT: u16 = 4433;
/// How long the receiver waits for the sender to listen.
const LISTEN_WAIT: Duration = Duration::from_secs(10);
/// Bytes per write of the TCP sender.
const CHUNK: usize = 64 * 1024;

/// The transport of a download and its congestion control.
#[derive(Debug, Clone)]
pub enum BulkTransport {
    /// s2n-quic with this controller.
    Quic(QuicCc),
    /// Kernel TCP with this congestion control (a name in
    /// /proc/sys/net/ipv4/tcp_available_congestion_control).
    Tcp(String),
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

fn invalid(e: impl std::fmt::Display) -> RunError {
    RunError::Invalid(e.to_string())
}

/// Downloads `bytes` across `topology` with `transport`.
pub fn run_bulk(
    topology: &Topology,
    transport: &BulkTransport,
    bytes: usize,
) -> Result<BulkRun, RunError> {
    let addr = SocketAddr::new(topology.sender_addr().into(), PORT);
    match transport {
        BulkTransport::Quic(cc) => quic_bulk(topology, addr, cc.clone(), bytes),
        BulkTransport::Tcp(cc) => tcp_bulk(topology, addr, cc, bytes),
    }
}

fn quic_bulk(
    topology: &Topology,
    addr: SocketAddr,
    cc: QuicCc,
    bytes: usize,
) -> Result<BulkRun, RunError> {
    let cert = Certificate::self_signed().map_err(invalid)?;
    let server_cert = cert.clone();
    let (ready, listening) = mpsc::channel();
    let server = topology
        .spawn_in(Host::Sender, "quic-sender", move || {
            current_thread(async move {
                let server = transfer::listen(addr, cc, &server_cert)?;
                let _ = ready.send(());
                transfer::serve_once(server, bytes::Bytes::from(vec![0u8; bytes])).await
            })
        })
        .map_err(net_error("starting the QUIC sender"))?;
    if listening.recv_timeout(LISTEN_WAIT).is_err() {
        return Err(join_error(server, "the QUIC sender did not listen"));
    }
    let fetched = topology
        .in_namespace(Host::Receiver, move || {
            current_thread(async move { transfer::fetch(addr, &cert).await })
        })
        .map_err(net_error("the QUIC receiver"))?
        .map_err(invalid)?;
    server
        .join()
        .map_err(|_| RunError::Panicked("the QUIC sender".into()))?
        .map_err(net_error("the QUIC sender"))?
        .map_err(invalid)?;
    Ok(BulkRun {
        bytes: fetched.bytes,
        completion_s: fetched.seconds,
    })
}

/// The sender's error, or `fallback` when it gave none.
fn join_error<T, E: std::fmt::Display>(
    handle: std::thread::JoinHandle<mocc_net::Result<Result<T, E>>>,
    fallback: &str,
) -> RunError {
    match handle.join() {
        Ok(Ok(Err(e))) => invalid(e),
        Ok(Err(e)) => RunError::Net {
            what: fallback.to_string(),
            source: e,
        },
        _ => RunError::Invalid(fallback.to_string()),
    }
}

/// Runs `f` on a runtime of the calling thread (so its sockets open in that thread's
/// namespace).
fn current_thread<T>(
    f: impl std::future::Future<Output = Result<T, transfer::TransferError>>,
) -> Result<T, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("async runtime: {e}"))?
        .block_on(f)
        .map_err(|e| e.to_string())
}

fn tcp_bulk(
    topology: &Topology,
    addr: SocketAddr,
    cc: &str,
    bytes: usize,
) -> Result<BulkRun, RunError> {
    let listener = topology
        .in_namespace(Host::Sender, move || TcpListener::bind(addr))
        .map_err(net_error("the TCP sender's namespace"))?
        .map_err(|e| net_error("listening for the TCP download")(NetError::io("bind", e)))?;
    let cc_name = cc.to_string();
    let server = std::thread::Builder::new()
        .name("tcp-sender".into())
        .spawn(move || -> Result<(), NetError> {
            let (mut stream, _) = listener.accept().map_err(|e| NetError::io("accept", e))?;
            mocc_net::transport::set_congestion(&stream, &cc_name)?;
            let chunk = vec![0u8; CHUNK];
            let mut left = bytes;
            while left > 0 {
                let n = left.min(CHUNK);
                stream
                    .write_all(&chunk[..n])
                    .map_err(|e| NetError::io("send", e))?;
                left -= n;
            }
            stream
                .shutdown(Shutdown::Write)
                .map_err(|e| NetError::io("shutdown", e))?;
            // Until the receiver has read everything and closes.
            let _ = stream.read(&mut [0u8; 1]);
            Ok(())
        })
        .map_err(|e| net_error("starting the TCP sender")(NetError::io("thread", e)))?;
    let fetched = topology
        .in_namespace(Host::Receiver, move || -> std::io::Result<BulkRun> {
            let start = Instant::now();
            let mut stream = TcpStream::connect_timeout(&addr, LISTEN_WAIT)?;
            let mut buf = vec![0u8; CHUNK];
            let mut got = 0;
            loop {
                let n = stream.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                got += n;
            }
            Ok(BulkRun {
                bytes: got,
                completion_s: start.elapsed().as_secs_f64(),
            })
        })
        .map_err(net_error("the TCP receiver's namespace"))?
        .map_err(|e| net_error("the TCP download")(NetError::io("receive", e)))?;
    server
        .join()
        .map_err(|_| RunError::Panicked("the TCP sender".into()))?
        .map_err(net_error("the TCP sender"))?;
    Ok(fetched)
}

/// The size of `bulk:SIZE` (`1MB`, `500KB`, `2GB`: decimal units; plain digits are bytes).
pub fn parse_bulk_app(app: &str) -> Result<usize, RunError> {
    let bad = |why: &str| RunError::Invalid(format!("--app {app}: {why}"));
    let Some(size) = app.strip_prefix("bulk:") else {
        return Err(bad("expected bulk:SIZE (rtc and video are not built yet)"));
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
    Ok(bytes as usize)
}

/// The largest download (bytes).
pub const MAX_BULK_BYTES: f64 = 1e10;

/// The transport and congestion control of `--transport T --cc CC`: over `quic` an export
/// (`DIR[:W_THR,W_LAT,W_LOSS]`, starting at `start_rate_pps`), `cubic` or `bbr` (the stack's);
/// over `tcp` a kernel congestion control (`cubic`, `bbr`, `reno`, or `tcp:NAME`).
pub fn parse_transport(
    transport: &str,
    cc: &str,
    start_rate_pps: f64,
) -> Result<BulkTransport, RunError> {
    let bad = |why: String| RunError::Invalid(format!("--cc {cc}: {why}"));
    match transport {
        "tcp" => match cc {
            "cubic" | "bbr" | "reno" => Ok(BulkTransport::Tcp(cc.to_string())),
            _ => match cc.strip_prefix("tcp:") {
                Some(name) if !name.is_empty() => Ok(BulkTransport::Tcp(name.to_string())),
                _ => Err(bad(
                    "over tcp: cubic, bbr, reno or tcp:NAME (exports run over quic)".into(),
                )),
            },
        },
        "quic" => match cc {
            "cubic" => Ok(BulkTransport::Quic(QuicCc::Cubic)),
            "bbr" => Ok(BulkTransport::Quic(QuicCc::Bbr)),
            "reno" => Err(bad("s2n-quic has no Reno (cubic, bbr or an export)".into())),
            _ => {
                let (dir, w) = match cc.split_once(':') {
                    Some((dir, w)) => (dir, Some(mocc_policy::objective::parse(w).map_err(bad)?)),
                    None => (cc, None),
                };
                let policy = mocc_policy::Policy::load(dir).map_err(|e| bad(e.to_string()))?;
                let w = w.unwrap_or(policy.spec().default_objective);
                let endpoint =
                    mocc_quic::LearnedEndpoint::new(std::sync::Arc::new(policy), w, start_rate_pps)
                        .map_err(|e| bad(e.to_string()))?;
                Ok(BulkTransport::Quic(QuicCc::Learned(endpoint)))
            }
        },
        other => Err(RunError::Invalid(format!(
            "--transport {other}: expected quic or tcp"
        ))),
    }
}

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

/// `runs.csv`'s header.
pub const RUNS_CSV_HEADER: &str = "run,transport,cc,bytes,completion_s,goodput_mbit\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_decimal_units() {
        assert_eq!(parse_bulk_app("bulk:10MB").unwrap(), 10_000_000);
        assert_eq!(parse_bulk_app("bulk:500kb").unwrap(), 500_000);
        assert_eq!(parse_bulk_app("bulk:1.5GB").unwrap(), 1_500_000_000);
        assert_eq!(parse_bulk_app("bulk:1234").unwrap(), 1234);
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
