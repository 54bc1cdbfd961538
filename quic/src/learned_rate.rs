//! A learned rate for a transport that counts bytes: what a QUIC stack tells its congestion
//! controller (bytes sent, bytes acknowledged with an RTT sample, bytes lost) becomes the
//! packet events of a [`MiLedger`] over the policy ([`PolicyDriver`]), which cuts monitor
//! intervals by the gym's rule and returns the rate to pace at. Nothing here knows a stack;
//! `s2n.rs` plugs it into s2n-quic.
//!
//! The policy trained on 1500-byte packets ([`BYTES_PER_PACKET`]) as the bottleneck carries
//! them, headers included: a stack's datagrams are counted in those units, a remainder carried
//! to the next event, so that an MI holds the bytes it held in training and the rate
//! (packets/s) means the same bytes per second on the wire. A stack that counts its datagrams'
//! payload (QUIC's packets, without the IP and UDP headers) says how many header bytes each
//! datagram carries ([`LearnedRate::with_datagram_overhead`]): a full-size datagram is then
//! one whole packet. Pacing follows the rate: each datagram's departure is the previous one's
//! plus its bytes at the current rate; a sender that fell behind (late timers, an idle
//! application) catches up by at most [`PACING_BURST_PACKETS`] (or [`MAX_PACING_LAG_S`] of
//! packets, if more), and no more credit builds up while the application is idle.

use mocc_policy::{
    ClosedMi, Controller, ControllerError, MiLedger, ObjectiveError, Policy, PolicyDriver,
    BYTES_PER_PACKET, OBJECTIVE_DIM,
};
use std::sync::{Arc, Mutex, PoisonError};

/// The least congestion window (bytes) the adapter ever reports: ten full packets (TCP's
/// initial window), so that a stack's window never stalls a flow whose rate is low and RTT
/// short.
pub const MIN_WINDOW_BYTES: f64 = 10.0 * BYTES_PER_PACKET;

/// How many feedback delays (RTT plus the peer's ACK delay) of the policy's rate the window
/// allows in flight: the pacer sets the rate; the window only caps a flood after an RTT spike.
pub const WINDOW_RTTS: f64 = 2.0;

/// How far behind its schedule the pacer may fall and still catch up (s), at least: a stack's
/// timers wake a little late, and without catching up every late wake-up would lower the rate.
pub const MAX_PACING_LAG_S: f64 = 0.002;

/// The most packets (1500 bytes) the pacer sends back to back when it catches up, after a
/// late timer or an idle application (as quinn's pacer and Linux's fq allow ten): a video
/// frame or a request's answer leaves at once instead of spread over its share of the rate,
/// while the rate over an MI stays the policy's.
pub const PACING_BURST_PACKETS: f64 = 10.0;

/// An objective the application can change while its connections run: every controller that
/// shares the handle takes the newest one at its next MI's end.
#[derive(Debug, Clone, Default)]
pub struct ObjectiveHandle(Arc<Mutex<(u64, Option<[f64; OBJECTIVE_DIM]>)>>);

impl ObjectiveHandle {
    /// A handle with no change asked for.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for `w` (throughput, latency, loss weights; positive, summing to 1) from the next
    /// decision on.
    pub fn set(&self, w: [f64; OBJECTIVE_DIM]) -> Result<(), ObjectiveError> {
        mocc_policy::objective::validate(&w).map_err(ObjectiveError)?;
        let mut cell = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *cell = (cell.0 + 1, Some(w));
        Ok(())
    }

    /// The newest objective asked for after version `seen`, with its version.
    fn newer_than(&self, seen: u64) -> Option<(u64, [f64; OBJECTIVE_DIM])> {
        let cell = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match *cell {
            (version, Some(w)) if version > seen => Some((version, w)),
            _ => None,
        }
    }
}

/// Where closed MIs go when a connection records them (shared, so a test or a log outside
/// the stack can read them).
pub type MiLog = Arc<Mutex<Vec<ClosedMi>>>;

/// How closely a connection paced: for each logged MI that sent (and spans time), the rate it
/// was sent at over the policy's rate for it.
pub fn sent_over_policy(mis: &[ClosedMi]) -> Vec<f64> {
    mis.iter()
        .filter(|m| m.mi.send_end_s > m.mi.send_start_s && m.mi.bytes_sent > 0.0)
        .map(|m| {
            let sent_pps =
                m.mi.bytes_sent / BYTES_PER_PACKET / (m.mi.send_end_s - m.mi.send_start_s);
            sent_pps / m.rate_pps
        })
        .collect()
}

/// Byte counts as whole policy packets, the remainder carried.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Units {
    carry: f64,
}

impl Units {
    /// Adds `bytes`, of which `bytes_per_packet` make a packet; returns how many whole packets
    /// are now due.
    fn add(&mut self, bytes: f64, bytes_per_packet: f64) -> u64 {
        self.carry += bytes / bytes_per_packet;
        let whole = self.carry.floor();
        self.carry -= whole;
        whole as u64
    }
}

/// One connection's learned rate (see the module docs).
#[derive(Debug, Clone)]
pub struct LearnedRate {
    ledger: MiLedger<PolicyDriver>,
    objective: ObjectiveHandle,
    objective_seen: u64,
    sent: Units,
    acked: Units,
    lost: Units,
    /// The stack's bytes that make one policy packet ([`BYTES_PER_PACKET`] less the headers
    /// each datagram carries that the stack does not count).
    bytes_per_packet: f64,
    next_departure_s: f64,
    started: bool,
    log: Option<MiLog>,
}

impl LearnedRate {
    /// A connection of `policy` for `objective`, starting at `start_rate_pps` (1500-byte
    /// packets per second), taking objective changes from `objective_changes` and appending
    /// every closed MI to `log` when given.
    pub fn new(
        policy: Arc<Policy>,
        objective: [f64; OBJECTIVE_DIM],
        start_rate_pps: f64,
        objective_changes: ObjectiveHandle,
        log: Option<MiLog>,
    ) -> Result<Self, ControllerError> {
        let controller = Controller::new(policy, objective)?;
        Ok(Self {
            ledger: MiLedger::new(PolicyDriver::new(controller, start_rate_pps)),
            objective: objective_changes,
            objective_seen: 0,
            sent: Units::default(),
            acked: Units::default(),
            lost: Units::default(),
            bytes_per_packet: BYTES_PER_PACKET,
            next_departure_s: 0.0,
            started: false,
            log,
        })
    }

    /// Counts `overhead_bytes` of headers per datagram that the stack's byte counts leave out
    /// (28 for UDP over IPv4, 48 over IPv6: [`udp_overhead_bytes`]), so that a full-size
    /// datagram is one whole 1500-byte packet on the wire and the rate paces the wire's bytes.
    /// Call before the first event. Overheads outside [0, 1000) are refused (kept as they were).
    pub fn with_datagram_overhead(mut self, overhead_bytes: f64) -> Self {
        if (0.0..1000.0).contains(&overhead_bytes) {
            self.bytes_per_packet = BYTES_PER_PACKET - overhead_bytes;
        }
        self
    }

    /// Starts the first MI at `now_s` (the stack's clock, in seconds) if it has not started;
    /// `one_way_delay_s` estimates the path's one-way delay (0: unknown).
    pub fn start(&mut self, now_s: f64, one_way_delay_s: f64) {
        if !self.started {
            self.started = true;
            self.ledger.start(now_s, one_way_delay_s);
            self.next_departure_s = now_s;
        }
    }

    /// `bytes` left at `now_s`; the next datagram may leave at [`Self::earliest_departure_s`].
    pub fn on_sent(&mut self, now_s: f64, bytes: usize) {
        self.on_sent_limited(now_s, bytes, false);
    }

    /// [`Self::on_sent`] from a stack that says whether the application had more data waiting:
    /// `app_limited` when it had none (s2n-quic's `app_limited`). MIs in which the application
    /// ran out of data hold the rate ([`mocc_policy::app_limited`]).
    pub fn on_sent_limited(&mut self, now_s: f64, bytes: usize, app_limited: bool) {
        self.before_event(now_s);
        self.ledger.set_app_limited(app_limited);
        for _ in 0..self.sent.add(bytes as f64, self.bytes_per_packet) {
            let closed = self.ledger.on_sent(now_s);
            self.keep(closed);
        }
        let rate = self.pacing_rate_bytes_per_s();
        let credit_s =
            MAX_PACING_LAG_S.max((PACING_BURST_PACKETS - 1.0) * self.bytes_per_packet / rate);
        self.next_departure_s = self.next_departure_s.max(now_s - credit_s) + bytes as f64 / rate;
    }

    /// `bytes` were acknowledged at `now_s`, their RTT sampled at `rtt_s`.
    pub fn on_acked(&mut self, now_s: f64, bytes: usize, rtt_s: f64) {
        self.before_event(now_s);
        for _ in 0..self.acked.add(bytes as f64, self.bytes_per_packet) {
            let closed = self.ledger.on_acked(now_s, rtt_s);
            self.keep(closed);
        }
    }

    /// `bytes` were declared lost at `now_s`.
    pub fn on_lost(&mut self, now_s: f64, bytes: usize) {
        self.before_event(now_s);
        let n = self.lost.add(bytes as f64, self.bytes_per_packet);
        let closed = self.ledger.on_lost(now_s, n);
        self.keep(closed);
    }

    /// Starts the connection if needed and takes a newer objective, so that the decision an
    /// event may trigger uses it.
    fn before_event(&mut self, now_s: f64) {
        self.start(now_s, 0.0);
        if let Some((version, w)) = self.objective.newer_than(self.objective_seen) {
            self.objective_seen = version;
            // The handle validated it; the controller would refuse only what it refused.
            let _ = self.ledger.driver_mut().controller_mut().set_objective(w);
        }
    }

    fn keep(&mut self, closed: Option<ClosedMi>) {
        let Some(mi) = closed else {
            return;
        };
        if let Some(log) = &self.log {
            log.lock().unwrap_or_else(PoisonError::into_inner).push(mi);
        }
    }

    /// The rate to pace at (1500-byte packets per second).
    pub fn rate_pps(&self) -> f64 {
        self.ledger.rate_pps()
    }

    /// The rate to pace at (the stack's bytes per second).
    pub fn pacing_rate_bytes_per_s(&self) -> f64 {
        self.ledger.rate_pps() * self.bytes_per_packet
    }

    /// When the next datagram may leave (the stack's clock, s).
    pub fn earliest_departure_s(&self) -> f64 {
        self.next_departure_s
    }

    /// The window to report to a stack that asks for one: [`WINDOW_RTTS`] feedback delays
    /// (`feedback_delay_s`: the smoothed RTT plus the peer's maximum ACK delay) at the rate,
    /// at least [`MIN_WINDOW_BYTES`].
    pub fn window_bytes(&self, feedback_delay_s: f64) -> f64 {
        (WINDOW_RTTS * self.pacing_rate_bytes_per_s() * feedback_delay_s).max(MIN_WINDOW_BYTES)
    }

    /// The controller (its objective, last action, observation).
    pub fn controller(&self) -> &Controller {
        self.ledger.driver().controller()
    }
}

/// The bytes of headers a UDP datagram carries that a QUIC stack's byte counts leave out: UDP's
/// 8 and IP's 20 (IPv4) or 40 (IPv6).
pub fn udp_overhead_bytes(ipv6: bool) -> f64 {
    if ipv6 {
        48.0
    } else {
        28.0
    }
}
