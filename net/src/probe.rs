//! A constant-rate UDP probe across a topology: a paced sender in one namespace, a counting
//! receiver in another. Each datagram carries its sequence number and its send time on the
//! monotonic clock, which every namespace shares, so the receiver measures one-way delays.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{NetError, Result};
use crate::rx_timestamp;
use crate::timing::{monotonic_ns, set_timer_slack_to_minimum, sleep_until};
use crate::topology::{Host, Topology};
pub use crate::transport::wire::IP_UDP_HEADER_BYTES;

/// Sequence number and send time (two u64) at the start of each payload.
pub const STAMP_BYTES: usize = 16;

/// Smallest probe packet: headers and the stamp.
pub const MIN_PACKET_BYTES: usize = IP_UDP_HEADER_BYTES + STAMP_BYTES;

/// Largest probe packet: the links' MTU (no fragmentation).
pub const MAX_PACKET_BYTES: usize = 1500;

/// Receive buffer asked for (SO_RCVBUFFORCE), so bursts do not overflow the socket.
const RECEIVE_BUFFER_BYTES: libc::c_int = 8 << 20;

/// How often the receiver looks at its stop flag.
const RECEIVE_POLL: Duration = Duration::from_millis(20);

/// Time allowed after the last send for packets still queued or held to arrive, beyond the
/// path's round trip and the time to drain a full queue.
const DRAIN_MARGIN: Duration = Duration::from_millis(200);

/// What to send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowSpec {
    /// Send rate, packets/s.
    pub rate_pps: f64,
    /// IP packet size, bytes, headers included: 44 (the stamp) to 1500 (the MTU).
    pub packet_bytes: usize,
    /// How long to send.
    pub duration: Duration,
}

impl FlowSpec {
    /// Checks every field; the error names the first one out of its domain.
    pub fn validate(&self) -> Result<()> {
        let invalid = |field, message: String| Err(NetError::InvalidFlow { field, message });
        if !(self.rate_pps.is_finite() && self.rate_pps > 0.0) {
            return invalid(
                "rate_pps",
                format!("{} is not a positive rate", self.rate_pps),
            );
        }
        if !(MIN_PACKET_BYTES..=MAX_PACKET_BYTES).contains(&self.packet_bytes) {
            return invalid(
                "packet_bytes",
                format!(
                    "{} is not in [{MIN_PACKET_BYTES}, {MAX_PACKET_BYTES}]",
                    self.packet_bytes
                ),
            );
        }
        if self.duration.is_zero() {
            return invalid("duration", "must be positive".into());
        }
        Ok(())
    }
}

/// What one flow measured.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowReport {
    /// Datagrams the sender tried to send (refused ones included).
    pub sent: u64,
    /// Sends the kernel refused (ENOBUFS / EAGAIN): lost at the sender.
    pub send_errors: u64,
    /// Datagrams the receiver got.
    pub received: u64,
    /// Time from the first to the last arrival (kernel arrival stamps at the receiving socket).
    pub arrival_span: Duration,
    /// One-way delay of each received datagram, sorted ascending: from just before `send` to
    /// the kernel's arrival stamp, so the receiving thread's wake-up is not counted.
    pub one_way_delays: Vec<Duration>,
}

impl FlowReport {
    /// Fraction of sent datagrams that did not arrive.
    pub fn loss(&self) -> f64 {
        if self.sent == 0 {
            return 0.0;
        }
        1.0 - self.received as f64 / self.sent as f64
    }

    /// Arrival rate, packets/s, over the arrival span.
    pub fn delivered_pps(&self) -> f64 {
        let span = self.arrival_span.as_secs_f64();
        if self.received < 2 || span <= 0.0 {
            return 0.0;
        }
        (self.received - 1) as f64 / span
    }

    /// The `q`-quantile (0..=1, nearest rank) of the one-way delays, `None` without arrivals.
    pub fn delay_quantile(&self, q: f64) -> Option<Duration> {
        let last = self.one_way_delays.len().checked_sub(1)?;
        let rank = (q.clamp(0.0, 1.0) * last as f64).round() as usize;
        self.one_way_delays.get(rank).copied()
    }
}

/// Sends `flow` from `from` to `to` across `topology` and waits until every datagram that
/// can still arrive has.
pub fn run_udp_flow(
    topology: &Topology,
    from: Host,
    to: Host,
    flow: &FlowSpec,
) -> Result<FlowReport> {
    flow.validate()?;
    let receiver = topology.in_namespace(to, || bind_udp(topology.addr(to)))??;
    let destination = receiver
        .local_addr()
        .map_err(|e| NetError::io("reading the probe receiver's address", e))?;
    let sender = topology.in_namespace(from, || bind_udp(topology.addr(from)))??;
    sender
        .connect(destination)
        .map_err(|e| NetError::io(format!("connecting the probe sender to {destination}"), e))?;
    let drain = drain_time(topology);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let receiving = scope.spawn(|| receive_until_stopped(&receiver, &stop));
        let sent = scope.spawn(|| send_paced(&sender, flow)).join();
        std::thread::sleep(drain);
        stop.store(true, Ordering::Relaxed);
        let received = receiving.join();
        let (sent, send_errors) = joined(sent, "probe sender")??;
        let mut report = joined(received, "probe receiver")??;
        report.sent = sent;
        report.send_errors = send_errors;
        Ok(report)
    })
}

/// Round trip plus a full queue's drain time plus a margin.
fn drain_time(topology: &Topology) -> Duration {
    let spec = topology.spec();
    let queue_drain = f64::from(spec.queue_pkts) / spec.bandwidth_pps;
    spec.round_trip_delay() + Duration::from_secs_f64(queue_drain) + DRAIN_MARGIN
}

fn joined<T>(result: std::thread::Result<T>, name: &str) -> Result<T> {
    result.map_err(|_| NetError::ThreadPanicked(name.to_string()))
}

/// A UDP socket on `addr`, port chosen by the kernel, with a large receive buffer.
fn bind_udp(addr: Ipv4Addr) -> Result<UdpSocket> {
    let socket = UdpSocket::bind(SocketAddrV4::new(addr, 0))
        .map_err(|e| NetError::io(format!("binding a UDP socket on {addr}"), e))?;
    set_receive_buffer(&socket)?;
    Ok(socket)
}

fn set_receive_buffer(socket: &UdpSocket) -> Result<()> {
    let size = RECEIVE_BUFFER_BYTES;
    // SAFETY: the option value is a c_int that outlives the call, its size passed along.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(NetError::last_os(
            "setsockopt SO_RCVBUFFORCE on the probe socket",
        ));
    }
    Ok(())
}

/// Sends datagrams of `flow.packet_bytes` at `flow.rate_pps` on an absolute schedule (a late
/// wake-up is caught up, not carried over). Returns (sent, refused).
fn send_paced(socket: &UdpSocket, flow: &FlowSpec) -> Result<(u64, u64)> {
    set_timer_slack_to_minimum();
    let mut payload = vec![0u8; flow.packet_bytes - IP_UDP_HEADER_BYTES];
    let interval = Duration::from_secs_f64(1.0 / flow.rate_pps);
    let start = Instant::now();
    let (mut sent, mut refused) = (0u64, 0u64);
    for seq in 0u64.. {
        let due = start + interval.mul_f64(seq as f64);
        if due - start >= flow.duration {
            break;
        }
        sleep_until(due);
        stamp(&mut payload, seq, monotonic_ns());
        match socket.send(&payload) {
            Ok(_) => sent += 1,
            Err(e) if is_congestion(&e) => {
                sent += 1;
                refused += 1;
            }
            Err(e) => return Err(NetError::io(format!("sending probe datagram {seq}"), e)),
        }
    }
    Ok((sent, refused))
}

fn is_congestion(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::ENOBUFS)
}

/// Counts datagrams and their one-way delays (send stamp to the kernel's arrival stamp at
/// the socket) until `stop` is raised.
fn receive_until_stopped(socket: &UdpSocket, stop: &AtomicBool) -> Result<FlowReport> {
    socket
        .set_read_timeout(Some(RECEIVE_POLL))
        .map_err(|e| NetError::io("setting the probe receiver's timeout", e))?;
    rx_timestamp::enable(socket)
        .map_err(|e| NetError::io("enabling SO_TIMESTAMPNS on the probe receiver", e))?;
    let mut buffer = vec![0u8; 65_536];
    let mut delays = Vec::new();
    let mut first_last: Option<(u64, u64)> = None;
    while !stop.load(Ordering::Relaxed) {
        let (len, arrival_ns) = match rx_timestamp::recv_stamped(socket, &mut buffer) {
            Ok(received) => received,
            Err(e) if is_timeout(&e) => continue,
            Err(e) => return Err(NetError::io("receiving probe datagrams", e)),
        };
        if let Some((_, sent_ns)) = read_stamp(&buffer[..len]) {
            delays.push(Duration::from_nanos(arrival_ns.saturating_sub(sent_ns)));
            first_last = Some((
                first_last.map_or(arrival_ns, |(first, _)| first),
                arrival_ns,
            ));
        }
    }
    delays.sort();
    Ok(FlowReport {
        sent: 0,
        send_errors: 0,
        received: delays.len() as u64,
        arrival_span: first_last.map_or(Duration::ZERO, |(first, last)| {
            Duration::from_nanos(last.saturating_sub(first))
        }),
        one_way_delays: delays,
    })
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// Writes the sequence number and send time at the start of `payload`.
pub fn stamp(payload: &mut [u8], seq: u64, sent_ns: u64) {
    payload[..8].copy_from_slice(&seq.to_le_bytes());
    payload[8..STAMP_BYTES].copy_from_slice(&sent_ns.to_le_bytes());
}

/// The sequence number and send time of a datagram, `None` when it is too short.
pub fn read_stamp(payload: &[u8]) -> Option<(u64, u64)> {
    let seq = u64::from_le_bytes(payload.get(..8)?.try_into().ok()?);
    let sent_ns = u64::from_le_bytes(payload.get(8..STAMP_BYTES)?.try_into().ok()?);
    Some((seq, sent_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_round_trip() {
        let mut payload = [0u8; 32];
        stamp(&mut payload, 42, 123_456_789);
        assert_eq!(read_stamp(&payload), Some((42, 123_456_789)));
        assert_eq!(read_stamp(&payload[..10]), None);
    }

    #[test]
    fn flow_fields_are_checked() {
        let good = FlowSpec {
            rate_pps: 100.0,
            packet_bytes: 1500,
            duration: Duration::from_secs(1),
        };
        good.validate().unwrap();
        let cases = [
            (
                FlowSpec {
                    rate_pps: f64::NAN,
                    ..good
                },
                "rate_pps",
            ),
            (
                FlowSpec {
                    rate_pps: 0.0,
                    ..good
                },
                "rate_pps",
            ),
            (
                FlowSpec {
                    packet_bytes: 43,
                    ..good
                },
                "packet_bytes",
            ),
            (
                FlowSpec {
                    packet_bytes: 1501,
                    ..good
                },
                "packet_bytes",
            ),
            (
                FlowSpec {
                    duration: Duration::ZERO,
                    ..good
                },
                "duration",
            ),
        ];
        for (bad, field) in cases {
            match bad.validate() {
                Err(NetError::InvalidFlow { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{bad:?}: expected an error on {field}, got {other:?}"),
            }
        }
    }

    #[test]
    fn report_arithmetic_is_hand_computed() {
        let report = FlowReport {
            sent: 10,
            send_errors: 0,
            received: 5,
            arrival_span: Duration::from_secs(2),
            one_way_delays: (1..=5).map(Duration::from_millis).collect(),
        };
        assert!((report.loss() - 0.5).abs() < 1e-12);
        assert!((report.delivered_pps() - 2.0).abs() < 1e-12);
        assert_eq!(report.delay_quantile(0.5), Some(Duration::from_millis(3)));
        assert_eq!(report.delay_quantile(1.0), Some(Duration::from_millis(5)));
    }
}
