//! A UDP flow whose rate a [`RateDriver`] sets at the end of each monitor interval, across a
//! [`Topology`]: the sender paces 1500-byte datagrams, the receiver acknowledges each one, and
//! the sender forms each MI's statistics with `mocc_policy::MiCounters`, as the gym's senders
//! do. A sender thread does everything on one socket: pacing (sleep, then spin the last
//! stretch), acknowledgements (stamped by the kernel on arrival), loss detection and the MI
//! clock.

use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mocc_policy::{ClosedMi, MiLedger, MonitorInterval, RttTally};

use super::driver::RateDriver;
use super::loss_detector::LossDetector;
use super::wire::{self, Kind, Stamp, DATA_PAYLOAD_BYTES, HEADER_BYTES};
use crate::error::{NetError, Result};
use crate::rx_timestamp;
use crate::timing::{monotonic_ns, set_timer_slack_to_minimum, thread_cpu_s};
use crate::topology::{Host, Topology};

/// Below this much time to the next send the sender spins instead of sleeping (s).
const SPIN_S: f64 = 100e-6;
/// Handshake attempts and the wait for each.
const HANDSHAKE_TRIES: u32 = 5;
const HANDSHAKE_WAIT: Duration = Duration::from_millis(500);
/// The handshake's sequence number (never a data packet's).
const HANDSHAKE_SEQ: u64 = u64::MAX;
/// After the last send, acknowledgements are awaited for this many tail-loss timeouts.
const DRAIN_TIMEOUTS: f64 = 1.5;
/// How often the receiver looks at its stop flag.
const RECEIVE_POLL: Duration = Duration::from_millis(20);

/// One monitor interval of a flow, as the sender saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MiRecord {
    /// The pacing rate during the MI (packets/s).
    pub rate_pps: f64,
    /// The MI's statistics; times in seconds from the flow's start.
    pub mi: MonitorInterval,
}

impl MiRecord {
    /// A flow's records as a CSV file's text: the header (`rate_pps` and
    /// [`MonitorInterval::CSV_HEADER`]'s columns), then a row per MI.
    pub fn csv_text(records: &[MiRecord]) -> String {
        let mut text = format!("rate_pps,{}\n", MonitorInterval::CSV_HEADER);
        for r in records {
            text.push_str(&format!("{},{}\n", r.rate_pps, r.mi.to_csv_row()));
        }
        text
    }
}

/// Pacing accuracy: how late sends left against their schedule.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PacingStats {
    /// Median lateness (s).
    pub p50_late_s: f64,
    /// 99th percentile lateness (s).
    pub p99_late_s: f64,
    /// Sender thread CPU time per packet sent (s).
    pub cpu_per_packet_s: f64,
}

/// What a controlled flow did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FlowOutcome {
    /// Datagrams sent (the kernel accepted).
    pub sent: u64,
    /// Sends the kernel refused (a full socket buffer): counted as lost at the sender.
    pub send_errors: u64,
    /// Datagrams acknowledged.
    pub acked: u64,
    /// Datagrams detected lost.
    pub lost: u64,
    /// The handshake's RTT (s), the flow's one-way delay estimate times two.
    pub handshake_rtt_s: f64,
    /// Time from the flow's start, its handshake included, to its last send (s).
    pub duration_s: f64,
    /// When the flow started, before its handshake (`timing::monotonic_ns`).
    pub started_ns: u64,
    /// Time 0 of its MIs, after the handshake (`timing::monotonic_ns`).
    pub origin_ns: u64,
    /// Every MI, in order.
    pub mis: Vec<MiRecord>,
    /// Pacing accuracy and cost.
    pub pacing: PacingStats,
}

impl FlowOutcome {
    /// Packets acknowledged per second of the flow's time.
    pub fn delivered_pps(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.acked as f64 / self.duration_s
        } else {
            0.0
        }
    }

    /// Mean RTT over every acknowledged packet (s), from the MIs' sums.
    pub fn mean_rtt_s(&self) -> f64 {
        let mut rtts = RttTally::default();
        for r in &self.mis {
            rtts.add(&r.mi.rtt, 1.0);
        }
        rtts.mean().unwrap_or(0.0)
    }

    /// Lost / (lost + acked).
    pub fn loss(&self) -> f64 {
        let resolved = self.lost + self.acked;
        if resolved > 0 {
            self.lost as f64 / resolved as f64
        } else {
            0.0
        }
    }
}

/// Runs one controlled flow from the topology's sender to its receiver for `duration` and
/// returns what it did. `flow` tells flows sharing a receiver apart.
pub fn run_controlled_flow(
    topology: &Topology,
    flow: u16,
    driver: Box<dyn RateDriver>,
    duration: Duration,
) -> Result<FlowOutcome> {
    let stop = Arc::new(AtomicBool::new(false));
    let receiver_socket = topology.in_namespace(Host::Receiver, || {
        bind(SocketAddrV4::new(topology.receiver_addr(), 0))
    })??;
    let destination = receiver_socket
        .local_addr()
        .map_err(|e| NetError::io("reading the receiver's address", e))?;
    let receiver = {
        let stop = stop.clone();
        topology.spawn_in(Host::Receiver, "flow-receiver", move || {
            acknowledge_until_stopped(&receiver_socket, &stop)
        })?
    };
    let sender_addr = SocketAddrV4::new(topology.sender_addr(), 0);
    let sending = topology.spawn_in(Host::Sender, "flow-sender", move || {
        let socket = bind(sender_addr)?;
        socket
            .connect(destination)
            .map_err(|e| NetError::io(format!("connecting to {destination}"), e))?;
        Sender::new(socket, flow, driver).run(duration)
    })?;
    let outcome = sending
        .join()
        .map_err(|_| NetError::ThreadPanicked("flow-sender".into()))?;
    stop.store(true, Ordering::Relaxed);
    let acknowledged = receiver
        .join()
        .map_err(|_| NetError::ThreadPanicked("flow-receiver".into()))?;
    acknowledged??;
    outcome?
}

/// A UDP socket on `addr` with kernel receive timestamps.
fn bind(addr: SocketAddrV4) -> Result<UdpSocket> {
    let socket =
        UdpSocket::bind(addr).map_err(|e| NetError::io(format!("binding UDP on {addr}"), e))?;
    rx_timestamp::enable(&socket)
        .map_err(|e| NetError::io(format!("enabling receive timestamps on {addr}"), e))?;
    Ok(socket)
}

/// The receiver: answers every data datagram with an acknowledgement echoing its stamp.
fn acknowledge_until_stopped(socket: &UdpSocket, stop: &AtomicBool) -> Result<u64> {
    socket
        .set_read_timeout(Some(RECEIVE_POLL))
        .map_err(|e| NetError::io("setting the receiver's timeout", e))?;
    let mut buf = [0u8; 2048];
    let mut ack = [0u8; HEADER_BYTES];
    let mut received = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let (n, from) = match socket.recv_from(&mut buf) {
            Ok(x) => x,
            Err(e) if is_timeout(&e) => continue,
            Err(e) => return Err(NetError::io("receiving data", e)),
        };
        if let Some((Kind::Data, stamp)) = wire::decode(&buf[..n]) {
            received += 1;
            wire::encode(Kind::Ack, &stamp, &mut ack);
            // An acknowledgement the kernel refuses is a lost acknowledgement, as on a path.
            let _ = socket.send_to(&ack, from);
        }
    }
    Ok(received)
}

/// Whether a socket call only ran out of time (a read timeout, or nothing ready on a
/// non-blocking socket).
pub(super) fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// The sending side of one flow.
struct Sender {
    socket: UdpSocket,
    flow: u16,
    losses: LossDetector,
    ledger: MiLedger<Box<dyn RateDriver>>,
    outcome: FlowOutcome,
    lateness: Vec<f64>,
}

impl Sender {
    fn new(socket: UdpSocket, flow: u16, driver: Box<dyn RateDriver>) -> Self {
        Self {
            socket,
            flow,
            losses: LossDetector::new(0),
            ledger: MiLedger::new(driver).sending_trains(),
            outcome: FlowOutcome::default(),
            lateness: Vec::new(),
        }
    }

    /// Seconds since `at_ns` (monotonic) from the flow's start (time 0 of its MIs).
    fn seconds_at(&self, at_ns: u64) -> f64 {
        at_ns.saturating_sub(self.outcome.origin_ns) as f64 * 1e-9
    }

    /// Seconds since the flow's start.
    fn now_s(&self) -> f64 {
        self.seconds_at(monotonic_ns())
    }

    fn run(mut self, duration: Duration) -> Result<FlowOutcome> {
        set_timer_slack_to_minimum();
        self.outcome.started_ns = monotonic_ns();
        let rtt = self.handshake()?;
        self.outcome.handshake_rtt_s = rtt;
        self.socket
            .set_nonblocking(true)
            .map_err(|e| NetError::io("making the sender's socket non-blocking", e))?;
        let cpu_before = thread_cpu_s();
        self.outcome.origin_ns = monotonic_ns();
        // As in the gym, the first packet leaves one packet interval after the start.
        let mut next_send = 1.0 / self.ledger.start(0.0, rtt / 2.0);
        let end = duration.as_secs_f64();
        let mut seq = 0u64;
        let mut packet = [0u8; DATA_PAYLOAD_BYTES];
        loop {
            let now = self.now_s();
            self.read_acks()?;
            if now >= end {
                break;
            }
            if now >= next_send {
                let due = next_send;
                self.lateness.push(now - due);
                // One packet, or the policy's capacity train at an MI's first departure.
                let back_to_back = self.ledger.packets_due();
                for _ in 0..back_to_back {
                    self.send(seq, &mut packet)?;
                    seq += 1;
                }
                // Keep to the schedule at the rate the packets left at; after a stall restart
                // it rather than burst.
                let gap = 1.0 / self.ledger.rate_pps();
                next_send = (due + f64::from(back_to_back) * gap).max(now - gap);
                for _ in 0..back_to_back {
                    let closed = self.ledger.on_sent(due);
                    self.record(closed);
                }
            }
            self.wait_until(next_send.min(end))?;
        }
        self.outcome.duration_s =
            monotonic_ns().saturating_sub(self.outcome.started_ns) as f64 * 1e-9;
        self.drain()?;
        let last = MiRecord {
            rate_pps: self.ledger.rate_pps(),
            mi: self.ledger.finish(self.now_s()),
        };
        self.outcome.mis.push(last);
        let sent = self.outcome.sent.max(1) as f64;
        self.outcome.pacing =
            pacing_stats(&mut self.lateness, (thread_cpu_s() - cpu_before) / sent);
        Ok(self.outcome)
    }

    /// Measures the RTT with a handshake datagram (retried), the flow's delay estimate.
    fn handshake(&mut self) -> Result<f64> {
        self.socket
            .set_read_timeout(Some(HANDSHAKE_WAIT))
            .map_err(|e| NetError::io("setting the handshake timeout", e))?;
        let mut buf = [0u8; 2048];
        for _ in 0..HANDSHAKE_TRIES {
            let stamp = Stamp {
                flow: self.flow,
                seq: HANDSHAKE_SEQ,
                sent_ns: monotonic_ns(),
            };
            wire::encode(Kind::Data, &stamp, &mut buf[..HEADER_BYTES]);
            self.socket
                .send(&buf[..HEADER_BYTES])
                .map_err(|e| NetError::io("sending the handshake", e))?;
            loop {
                match rx_timestamp::recv_stamped(&self.socket, &mut buf) {
                    Ok((n, at_ns)) => {
                        if let Some((Kind::Ack, s)) = wire::decode(&buf[..n]) {
                            if s.seq == HANDSHAKE_SEQ && s.flow == self.flow {
                                return Ok(at_ns.saturating_sub(s.sent_ns) as f64 * 1e-9);
                            }
                        }
                    }
                    Err(e) if is_timeout(&e) => break,
                    Err(e) => return Err(NetError::io("receiving the handshake", e)),
                }
            }
        }
        Err(NetError::io(
            "handshake",
            std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no answer to {HANDSHAKE_TRIES} handshakes"),
            ),
        ))
    }

    fn send(&mut self, seq: u64, packet: &mut [u8; DATA_PAYLOAD_BYTES]) -> Result<()> {
        let sent_ns = monotonic_ns();
        let stamp = Stamp {
            flow: self.flow,
            seq,
            sent_ns,
        };
        wire::encode(Kind::Data, &stamp, packet);
        let now = self.seconds_at(sent_ns);
        self.losses.on_sent(seq, now);
        match self.socket.send(packet) {
            Ok(_) => self.outcome.sent += 1,
            Err(e) if is_timeout(&e) || e.raw_os_error() == Some(libc::ENOBUFS) => {
                self.outcome.send_errors += 1;
            }
            Err(e) => return Err(NetError::io("sending data", e)),
        }
        Ok(())
    }

    /// Takes every acknowledgement waiting on the socket, and expires the tail.
    fn read_acks(&mut self) -> Result<()> {
        let mut buf = [0u8; 256];
        loop {
            match rx_timestamp::recv_stamped(&self.socket, &mut buf) {
                Ok((n, at_ns)) => {
                    let Some((Kind::Ack, s)) = wire::decode(&buf[..n]) else {
                        continue;
                    };
                    if s.flow != self.flow || s.seq == HANDSHAKE_SEQ {
                        continue;
                    }
                    let at = self.seconds_at(at_ns);
                    let outcome = self.losses.on_ack(s.seq, at);
                    self.count_losses(at, outcome.lost);
                    if let Some(rtt) = outcome.rtt_s {
                        self.outcome.acked += 1;
                        let closed = self.ledger.on_acked(at, rtt);
                        self.record(closed);
                    }
                }
                Err(e) if is_timeout(&e) => break,
                Err(e) => return Err(NetError::io("receiving acknowledgements", e)),
            }
        }
        let now = self.now_s();
        let expired = self.losses.expire(now);
        self.count_losses(now, expired);
        Ok(())
    }

    /// `n` packets were found lost at `t`.
    fn count_losses(&mut self, t: f64, n: u64) {
        self.outcome.lost += n;
        let closed = self.ledger.on_lost(t, n);
        self.record(closed);
    }

    /// Keeps an MI that a packet event closed.
    fn record(&mut self, closed: Option<ClosedMi>) {
        if let Some(c) = closed {
            self.outcome.mis.push(MiRecord {
                rate_pps: c.rate_pps,
                mi: c.mi,
            });
        }
    }

    /// Sleeps until shortly before `until_s` (s since the start), waking early for an
    /// acknowledgement, then spins the rest.
    fn wait_until(&self, until_s: f64) -> Result<()> {
        let left = until_s - self.now_s();
        if left > SPIN_S {
            wait_readable(&self.socket, left - SPIN_S)
        } else {
            Ok(())
        }
    }

    /// After the last send: acknowledgements for the packets in flight, then the rest lost.
    fn drain(&mut self) -> Result<()> {
        // The last MI takes everything that is still resolved.
        self.ledger.hold();
        let deadline = self.now_s() + DRAIN_TIMEOUTS * self.losses.timeout_s();
        while self.losses.outstanding() > 0 && self.now_s() < deadline {
            self.read_acks()?;
            wait_readable(&self.socket, 1e-3)?;
        }
        self.read_acks()?;
        let left = self.losses.expire(f64::INFINITY);
        let now = self.now_s();
        self.count_losses(now, left);
        Ok(())
    }
}

/// Waits up to `seconds` for `socket` to become readable.
fn wait_readable(socket: &UdpSocket, seconds: f64) -> Result<()> {
    let mut fd = libc::pollfd {
        fd: socket.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ns = (seconds.max(0.0) * 1e9) as i64;
    let timeout = libc::timespec {
        tv_sec: ns / 1_000_000_000,
        tv_nsec: ns % 1_000_000_000,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    let rc = unsafe { libc::ppoll(&mut fd, 1, &timeout, std::ptr::null()) };
    if rc < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(NetError::io("waiting on the sender's socket", e));
        }
    }
    Ok(())
}

fn pacing_stats(lateness: &mut [f64], cpu_per_packet_s: f64) -> PacingStats {
    if lateness.is_empty() {
        return PacingStats::default();
    }
    lateness.sort_by(f64::total_cmp);
    let at = |q: f64| lateness[((lateness.len() - 1) as f64 * q).round() as usize];
    PacingStats {
        p50_late_s: at(0.5),
        p99_late_s: at(0.99),
        cpu_per_packet_s,
    }
}
