//! A kernel TCP flow across a [`Topology`] with a chosen congestion control (`cubic`, `bbr`,
//! `reno`: whatever the kernel has), reported as MIs like a controlled flow: every
//! [`SAMPLE`] the receiver's byte count gives the delivered packets, `TCP_INFO` the smoothed
//! RTT and the retransmitted segments (counted as lost).

use std::io::{Read, Write};
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mocc_policy::{MonitorInterval, RttSummary, BYTES_PER_PACKET};

use super::controlled_flow::{is_timeout, FlowOutcome, MiRecord};
use crate::error::{NetError, Result};
use crate::timing::monotonic_ns;
use crate::topology::{Host, Topology};

/// How often the flow is sampled into an MI record.
pub const SAMPLE: Duration = Duration::from_millis(100);
/// Bytes per write.
const CHUNK_BYTES: usize = 64 << 10;
/// A write blocks at most this long, so samples keep their cadence.
const WRITE_TIMEOUT: Duration = Duration::from_millis(10);
/// How long the receiver waits, after the sender closed, for the data still in flight (a run
/// ends within its duration plus this).
pub const DRAIN_GRACE: Duration = Duration::from_secs(10);
/// How often the waiting receiver looks at whether to give up.
const POLL: Duration = Duration::from_millis(50);

/// Runs a TCP flow with congestion control `congestion` from the topology's sender to its
/// receiver for `duration`, the sender always having data (bulk transfer).
pub fn run_tcp_flow(
    topology: &Topology,
    congestion: &str,
    duration: Duration,
) -> Result<FlowOutcome> {
    let listener = topology.in_namespace(Host::Receiver, || {
        let addr = SocketAddrV4::new(topology.receiver_addr(), 0);
        TcpListener::bind(addr).map_err(|e| NetError::io(format!("listening on {addr}"), e))
    })??;
    let destination = listener
        .local_addr()
        .map_err(|e| NetError::io("reading the TCP receiver's address", e))?;
    let received = Arc::new(AtomicU64::new(0));
    let give_up = Arc::new(AtomicBool::new(false));
    let receiver = {
        let (received, give_up) = (received.clone(), give_up.clone());
        topology.spawn_in(Host::Receiver, "tcp-receiver", move || {
            receive_all(&listener, &received, &give_up)
        })?
    };
    let congestion = congestion.to_string();
    let sender = topology.spawn_in(Host::Sender, "tcp-sender", move || {
        let started = (Instant::now(), monotonic_ns());
        let stream = TcpStream::connect(destination)
            .map_err(|e| NetError::io(format!("connecting to {destination}"), e))?;
        set_congestion(&stream, &congestion)?;
        send_for(stream, started, duration, &received)
    })?;
    let outcome = sender
        .join()
        .map_err(|_| NetError::ThreadPanicked("tcp-sender".into()))?;
    // What is still in flight drains, within a bound: a path that stays down (or a sender that
    // never connected) must not hold the run.
    let deadline = Instant::now() + DRAIN_GRACE;
    while !receiver.is_finished() && Instant::now() < deadline {
        std::thread::sleep(POLL);
    }
    give_up.store(true, Ordering::Relaxed);
    let drained = receiver
        .join()
        .map_err(|_| NetError::ThreadPanicked("tcp-receiver".into()))?;
    drained??;
    outcome?
}

/// Accepts one connection and counts its bytes until the sender closes it, or until
/// `give_up` is set (the run is over and its grace spent).
fn receive_all(listener: &TcpListener, received: &AtomicU64, give_up: &AtomicBool) -> Result<()> {
    let Some(mut stream) = accept_until(listener, give_up)? else {
        return Ok(());
    };
    stream
        .set_read_timeout(Some(POLL))
        .map_err(|e| NetError::io("setting the TCP read timeout", e))?;
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                received.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => {
                if give_up.load(Ordering::Relaxed) {
                    return Ok(());
                }
            }
            Err(e) => return Err(NetError::io("receiving the TCP flow", e)),
        }
    }
}

/// The flow's connection, or `None` when `give_up` is set before the sender connects.
fn accept_until(listener: &TcpListener, give_up: &AtomicBool) -> Result<Option<TcpStream>> {
    listener
        .set_nonblocking(true)
        .map_err(|e| NetError::io("polling the TCP listener", e))?;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream
                    .set_nonblocking(false)
                    .map_err(|e| NetError::io("accepting the TCP flow", e))?;
                return Ok(Some(stream));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if give_up.load(Ordering::Relaxed) {
                    return Ok(None);
                }
                std::thread::sleep(POLL);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(NetError::io("accepting the TCP flow", e)),
        }
    }
}

/// Sets the connection's congestion control (before any data is sent, so it starts afresh).
pub fn set_congestion(stream: &impl AsRawFd, name: &str) -> Result<()> {
    // SAFETY: the option value points at `name`'s bytes for the duration of the call.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(NetError::last_os(format!(
            "TCP congestion control {name:?} (see /proc/sys/net/ipv4/tcp_available_congestion_control)"
        )));
    }
    Ok(())
}

/// The sender's TCP_INFO.
fn tcp_info(stream: &TcpStream) -> Result<libc::tcp_info> {
    // SAFETY: tcp_info is plain old data; zeroes are a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` and `len` are valid for writes of the sizes given.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(NetError::last_os("reading TCP_INFO"));
    }
    Ok(info)
}

/// Writes for `duration`, sampling every [`SAMPLE`]; then closes and waits for delivery.
/// `started` is when the flow began (before connecting), as an instant and in monotonic ns.
fn send_for(
    mut stream: TcpStream,
    started: (Instant, u64),
    duration: Duration,
    received: &AtomicU64,
) -> Result<FlowOutcome> {
    stream
        .set_write_timeout(Some(WRITE_TIMEOUT))
        .map_err(|e| NetError::io("setting the TCP write timeout", e))?;
    let chunk = vec![0u8; CHUNK_BYTES];
    let start = Instant::now();
    let mut sampler = Sampler::new(tcp_info(&stream)?.tcpi_rtt);
    sampler.outcome.started_ns = started.1;
    sampler.outcome.origin_ns = monotonic_ns();
    let mut next_sample = SAMPLE;
    while start.elapsed() < duration {
        match stream.write(&chunk) {
            Ok(_) => {}
            Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(NetError::io("sending the TCP flow", e)),
        }
        let now = start.elapsed();
        if now >= next_sample {
            sampler.sample(
                now.as_secs_f64(),
                &tcp_info(&stream)?,
                received.load(Ordering::Relaxed),
            );
            next_sample += SAMPLE;
        }
    }
    let end = start.elapsed().as_secs_f64();
    sampler.sample(end, &tcp_info(&stream)?, received.load(Ordering::Relaxed));
    stream
        .shutdown(std::net::Shutdown::Write)
        .map_err(|e| NetError::io("closing the TCP flow", e))?;
    Ok(sampler.outcome(started.0.elapsed().as_secs_f64()))
}

/// Turns successive TCP_INFO readings and receiver byte counts into MI records.
struct Sampler {
    last_s: f64,
    last_bytes: u64,
    last_retrans: u32,
    outcome: FlowOutcome,
}

impl Sampler {
    fn new(handshake_rtt_us: u32) -> Self {
        Self {
            last_s: 0.0,
            last_bytes: 0,
            last_retrans: 0,
            outcome: FlowOutcome {
                handshake_rtt_s: f64::from(handshake_rtt_us) * 1e-6,
                ..FlowOutcome::default()
            },
        }
    }

    /// Records the MI from the last sample to `now_s`: packets delivered (payload bytes over
    /// the MSS), segments retransmitted, the smoothed RTT.
    fn sample(&mut self, now_s: f64, info: &libc::tcp_info, received_bytes: u64) {
        let mss = f64::from(info.tcpi_snd_mss.max(1));
        let delivered = (received_bytes - self.last_bytes) as f64 / mss;
        let lost = f64::from(info.tcpi_total_retrans.saturating_sub(self.last_retrans));
        let rtt_s = f64::from(info.tcpi_rtt) * 1e-6;
        let count = delivered.round() as u64;
        let mi = MonitorInterval {
            bytes_sent: (delivered + lost) * BYTES_PER_PACKET,
            bytes_acked: delivered * BYTES_PER_PACKET,
            bytes_lost: lost * BYTES_PER_PACKET,
            send_start_s: self.last_s,
            send_end_s: now_s,
            recv_start_s: self.last_s,
            recv_end_s: now_s,
            rtt: RttSummary {
                count,
                mean_s: if count > 0 { rtt_s } else { 0.0 },
                first_half_mean_s: if count > 1 { rtt_s } else { 0.0 },
                second_half_mean_s: if count > 1 { rtt_s } else { 0.0 },
            },
            // A kernel flow's samples are totals, not acknowledgement times.
            ack_span: None,
            train_pps: None,
        };
        let rate_pps = if now_s > self.last_s {
            (delivered + lost) / (now_s - self.last_s)
        } else {
            0.0
        };
        self.outcome.mis.push(MiRecord { rate_pps, mi });
        self.outcome.acked += count;
        self.outcome.lost += lost as u64;
        self.last_s = now_s;
        self.last_bytes = received_bytes;
        self.last_retrans = info.tcpi_total_retrans;
    }

    fn outcome(mut self, end_s: f64) -> FlowOutcome {
        self.outcome.duration_s = end_s;
        self.outcome.sent = self.outcome.acked + self.outcome.lost;
        self.outcome
    }
}
