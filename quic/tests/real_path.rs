//! A 1 MB QUIC download through the emulated real path (mocc-net's namespaces, tbf
//! bottleneck and delay line; root, skipped elsewhere unless MOCC_REQUIRE_NET=1), the
//! server's congestion controller a shipped export: it completes, every MI is sent at the
//! policy's rate, and the path delivers what the policy sends, up to the link's capacity.

use mocc_net::{Host, PathSpec, Topology};
use mocc_policy::BYTES_PER_PACKET;
use mocc_quic::transfer::{self, Certificate, QuicCc};
use mocc_quic::{LearnedEndpoint, MiLog};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

const BYTES: usize = 1 << 20;
/// 6 Mbit/s, 20 ms one way, a 60-packet queue.
const PATH: PathSpec = PathSpec {
    bandwidth_pps: 500.0,
    delay_s: 0.02,
    queue_pkts: 60,
    loss: 0.0,
};
const PORT: u16 = 4433;

fn network_ready() -> bool {
    match mocc_net::preflight() {
        Ok(()) => true,
        Err(e) if std::env::var("MOCC_REQUIRE_NET").as_deref() == Ok("1") => {
            panic!("MOCC_REQUIRE_NET=1 but the network tests cannot run: {e}")
        }
        Err(e) => {
            eprintln!("skipping a namespace test: {e}");
            false
        }
    }
}

/// Runs `f` on a runtime of the calling thread (its sockets open in that thread's namespace).
fn on_this_thread<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

#[test]
fn a_learned_quic_download_crosses_the_real_path_at_the_policys_rate() {
    if !network_ready() {
        return;
    }
    let export = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../checkpoints/mocc-pair");
    let log: MiLog = Arc::new(Mutex::new(Vec::new()));
    let endpoint = LearnedEndpoint::load(export, [0.6, 0.3, 0.1], 200.0)
        .expect("export")
        .with_log(log.clone());
    let topology = Topology::create(&PATH).expect("topology");
    let addr = SocketAddr::new(topology.sender_addr().into(), PORT);
    let cert = Certificate::self_signed().expect("certificate");
    let (ready_tx, ready_rx) = mpsc::channel();
    let server_cert = cert.clone();
    let server = topology
        .spawn_in(Host::Sender, "quic-server", move || {
            on_this_thread(async move {
                let server = transfer::listen(addr, QuicCc::Learned(endpoint), &server_cert)?;
                ready_tx.send(()).expect("ready");
                transfer::serve_once(server, bytes::Bytes::from(vec![7u8; BYTES])).await
            })
        })
        .expect("server thread");
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the server listens");
    let fetched = topology
        .in_namespace(Host::Receiver, move || {
            on_this_thread(transfer::fetch(addr, &cert))
        })
        .expect("client thread")
        .expect("download");
    server
        .join()
        .expect("server joined")
        .expect("server thread")
        .expect("served");
    let (received, took) = (fetched.bytes, Duration::from_secs_f64(fetched.seconds));
    topology.close().expect("the path is removed");
    assert_eq!(received, BYTES);
    let mis = log.lock().expect("log").clone();
    let busy: Vec<_> = mis
        .iter()
        .filter(|m| m.mi.bytes_sent > 0.0 && m.mi.send_end_s > m.mi.send_start_s)
        .collect();
    let mut ratios = mocc_quic::sent_over_policy(&mis);
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    let delivered_pps = BYTES as f64 / BYTES_PER_PACKET / took.as_secs_f64();
    let mean_rtt: f64 = busy.iter().map(|m| m.mi.rtt.mean_s).sum::<f64>() / busy.len() as f64;
    eprintln!(
        "{} MIs in {took:?}: {delivered_pps:.0} pkt/s delivered of {:.0}; sent/policy rate p10 {:.3} median {median:.3}; mean RTT {:.1} ms",
        mis.len(),
        PATH.bandwidth_pps,
        ratios[ratios.len() / 10],
        1000.0 * mean_rtt
    );
    assert!(mis.len() > 20, "{} MIs", mis.len());
    assert!(
        (0.85..=1.15).contains(&median),
        "median sent/policy rate {median}"
    );
    // The download as a whole: at most the link, and a real share of it (the export starts
    // at 200 of the path's 500 packets/s, handshake included).
    assert!(
        delivered_pps <= 1.05 * PATH.bandwidth_pps,
        "{delivered_pps}"
    );
    assert!(delivered_pps >= 0.3 * PATH.bandwidth_pps, "{delivered_pps}");
    assert!(
        mean_rtt >= 2.0 * PATH.delay_s,
        "RTTs cross the delay line: {mean_rtt}"
    );
}
