//! A 1 MB download over s2n-quic on the loopback interface, the server's congestion
//! controller a shipped export: the transfer completes, and every MI the sender filled was
//! sent at the policy's rate.

use mocc_policy::BYTES_PER_PACKET;
use mocc_quic::{LearnedEndpoint, MiLog};
use s2n_quic::{client::Connect, Client, Server};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BYTES: usize = 1 << 20;

fn export(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../checkpoints")
        .join(name)
}

/// A self-signed certificate for `localhost`: (certificate PEM, key PEM).
fn certificate() -> (String, String) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
    (cert.cert.pem(), cert.signing_key.serialize_pem())
}

/// Serves `BYTES` on the first stream of the first connection; returns the client's time to
/// receive them all.
async fn download(endpoint: LearnedEndpoint) -> Duration {
    let (cert, key) = certificate();
    let mut server = Server::builder()
        .with_tls((cert.as_str(), key.as_str()))
        .expect("tls")
        .with_io("127.0.0.1:0")
        .expect("io")
        .with_congestion_controller(endpoint)
        .expect("controller")
        .start()
        .expect("server");
    let addr: SocketAddr = server.local_addr().expect("address");
    tokio::spawn(async move {
        if let Some(mut connection) = server.accept().await {
            let mut stream = connection
                .open_bidirectional_stream()
                .await
                .expect("stream");
            let chunk = bytes::Bytes::from(vec![7u8; 16 * 1024]);
            for _ in 0..BYTES / chunk.len() {
                stream.send(chunk.clone()).await.expect("send");
            }
            stream.finish().expect("finish");
            // Wait until the client has everything (it closes the connection).
            let _ = connection.accept_bidirectional_stream().await;
        }
    });
    let client = Client::builder()
        .with_tls(cert.as_str())
        .expect("tls")
        .with_io("127.0.0.1:0")
        .expect("io")
        .start()
        .expect("client");
    let start = Instant::now();
    let mut connection = client
        .connect(Connect::new(addr).with_server_name("localhost"))
        .await
        .expect("connect");
    let mut stream = connection
        .accept_bidirectional_stream()
        .await
        .expect("accept")
        .expect("a stream");
    let mut received = 0;
    while let Some(data) = stream.receive().await.expect("receive") {
        received += data.len();
    }
    let took = start.elapsed();
    assert_eq!(received, BYTES);
    connection.close(0u32.into());
    took
}

#[test]
fn a_learned_controller_paces_a_quic_download_at_its_rate() {
    let log: MiLog = Arc::new(Mutex::new(Vec::new()));
    let endpoint = LearnedEndpoint::load(export("mocc-pair"), [0.6, 0.3, 0.1], 300.0)
        .expect("export")
        .with_log(log.clone());
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let took = runtime.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), download(endpoint))
            .await
            .expect("the download finished within 60 s")
    });
    let mis = log.lock().expect("log").clone();
    assert!(mis.len() > 20, "{} MIs", mis.len());
    // MIs the sender kept busy (not its first, not the tail after the last byte).
    let mut ratios: Vec<f64> = mis
        .iter()
        .filter(|m| m.mi.send_end_s > m.mi.send_start_s && m.mi.bytes_sent > 0.0)
        .map(|m| {
            let sent_pps =
                m.mi.bytes_sent / BYTES_PER_PACKET / (m.mi.send_end_s - m.mi.send_start_s);
            sent_pps / m.rate_pps
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    eprintln!(
        "{} MIs in {took:?}; sent/policy rate: p10 {:.3} median {median:.3} p90 {:.3}; rates {:.0}..{:.0} pkt/s",
        mis.len(),
        ratios[ratios.len() / 10],
        ratios[ratios.len() * 9 / 10],
        mis.iter().map(|m| m.rate_pps).fold(f64::INFINITY, f64::min),
        mis.iter().map(|m| m.rate_pps).fold(0.0, f64::max),
    );
    // Measured on an idle 2-core machine: median 1.00-1.01, 10th percentile 0.90-0.94.
    assert!(
        (0.9..=1.1).contains(&median),
        "median sent/policy rate {median}"
    );
    assert!(
        ratios[ratios.len() / 10] >= 0.75,
        "10th percentile {}",
        ratios[ratios.len() / 10]
    );
}
