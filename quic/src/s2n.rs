//! The learned rate as s2n-quic's congestion controller (its `unstable-congestion-controller`
//! trait). s2n-quic asks its controller when the next packet may leave
//! (`earliest_departure_time`), so the stack paces at the policy's rate exactly; the window it
//! also asks for is [`LearnedRate::window_bytes`], a cap that pacing keeps from binding.
//!
//! ```no_run
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! use mocc_quic::s2n::LearnedEndpoint;
//! let endpoint = LearnedEndpoint::load("checkpoints/mocc-pair", [0.6, 0.3, 0.1], 200.0)?;
//! use std::path::Path;
//! let server = s2n_quic::Server::builder()
//!     .with_tls((Path::new("cert.pem"), Path::new("key.pem")))?
//!     .with_io("0.0.0.0:4433")?
//!     .with_congestion_controller(endpoint)?
//!     .start()?;
//! # Ok(()) }
//! ```

use crate::learned_rate::{udp_overhead_bytes, LearnedRate, MiLog, ObjectiveHandle};
use mocc_policy::{Policy, PolicyError, OBJECTIVE_DIM};
use s2n_quic::provider::congestion_controller::{
    self, CongestionController, Publisher, RandomGenerator, RttEstimator, Timestamp,
};
use s2n_quic::provider::event::events::SocketAddress;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Makes one [`LearnedController`] per connection path, all of one export and objective.
#[derive(Debug, Clone)]
pub struct LearnedEndpoint {
    policy: Arc<Policy>,
    objective: [f64; OBJECTIVE_DIM],
    start_rate_pps: f64,
    changes: ObjectiveHandle,
    log: Option<MiLog>,
}

/// Why an endpoint could not be made.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// The export folder.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The objective.
    #[error("objective: {0}")]
    Objective(#[from] mocc_policy::ObjectiveError),
    /// An export a rate controller cannot run (Orca's window scaling).
    #[error(transparent)]
    Controller(#[from] mocc_policy::ControllerError),
}

impl LearnedEndpoint {
    /// Controllers of the export in `dir` for `objective`, each connection starting at
    /// `start_rate_pps` (1500-byte packets per second).
    pub fn load(
        dir: impl AsRef<Path>,
        objective: [f64; OBJECTIVE_DIM],
        start_rate_pps: f64,
    ) -> Result<Self, EndpointError> {
        Self::new(Arc::new(Policy::load(dir)?), objective, start_rate_pps)
    }

    /// Controllers of `policy` (see [`LearnedEndpoint::load`]).
    pub fn new(
        policy: Arc<Policy>,
        objective: [f64; OBJECTIVE_DIM],
        start_rate_pps: f64,
    ) -> Result<Self, EndpointError> {
        mocc_policy::objective::validate(&objective).map_err(mocc_policy::ObjectiveError)?;
        mocc_policy::Controller::check_runs(&policy)?;
        Ok(Self {
            policy,
            objective,
            start_rate_pps,
            changes: ObjectiveHandle::new(),
            log: None,
        })
    }

    /// Appends every connection's closed MIs to `log`.
    pub fn with_log(mut self, log: MiLog) -> Self {
        self.log = Some(log);
        self
    }

    /// The handle that changes the objective of every connection of this endpoint.
    pub fn objective_handle(&self) -> ObjectiveHandle {
        self.changes.clone()
    }
}

impl congestion_controller::Endpoint for LearnedEndpoint {
    type CongestionController = LearnedController;

    fn new_congestion_controller(
        &mut self,
        path: congestion_controller::PathInfo,
    ) -> Self::CongestionController {
        let rate = LearnedRate::new(
            self.policy.clone(),
            self.objective,
            self.start_rate_pps,
            self.changes.clone(),
            self.log.clone(),
        )
        .expect("the endpoint checked the objective and the export's rule")
        .with_datagram_overhead(udp_overhead_bytes(is_ipv6(&path.remote_address)));
        LearnedController {
            rate,
            epoch: None,
            bytes_in_flight: 0,
            max_datagram_size: u32::from(path.max_datagram_size),
            feedback_delay_s: 0.0,
        }
    }
}

/// Whether a path's peer is an IPv6 address (its datagrams carry 40 bytes of IP header, not 20).
fn is_ipv6(address: &SocketAddress) -> bool {
    matches!(address, SocketAddress::IpV6 { .. })
}

/// The path's one-way delay as far as the estimator knows it: half the smoothed RTT once it
/// has a sample, 0 (unknown) before.
fn one_way_delay_estimate_s(rtt: &RttEstimator) -> f64 {
    match rtt.first_rtt_sample() {
        Some(_) => rtt.smoothed_rtt().as_secs_f64() / 2.0,
        None => 0.0,
    }
}

/// How long feedback on a packet takes at most, usually: the smoothed RTT and the peer's
/// maximum ACK delay.
fn feedback_delay_s(rtt: &RttEstimator) -> f64 {
    (rtt.smoothed_rtt() + rtt.max_ack_delay()).as_secs_f64()
}

/// One path's learned congestion controller (see the module docs).
#[derive(Debug, Clone)]
pub struct LearnedController {
    rate: LearnedRate,
    /// The stack's time 0 for the rate's clock: its first event.
    epoch: Option<Timestamp>,
    bytes_in_flight: u32,
    max_datagram_size: u32,
    /// Smoothed RTT plus the peer's maximum ACK delay (s).
    feedback_delay_s: f64,
}

impl LearnedController {
    /// Seconds since the first event (which becomes time 0).
    fn seconds(&mut self, t: Timestamp) -> f64 {
        let epoch = *self.epoch.get_or_insert(t);
        t.saturating_duration_since(epoch).as_secs_f64()
    }

    fn window(&self) -> u32 {
        self.rate
            .window_bytes(self.feedback_delay_s)
            .min(f64::from(u32::MAX)) as u32
    }

    /// The learned rate (its controller, rate and pacing).
    pub fn learned_rate(&self) -> &LearnedRate {
        &self.rate
    }
}

impl CongestionController for LearnedController {
    type PacketInfo = ();

    fn congestion_window(&self) -> u32 {
        self.window()
    }

    fn bytes_in_flight(&self) -> u32 {
        self.bytes_in_flight
    }

    fn is_congestion_limited(&self) -> bool {
        self.bytes_in_flight.saturating_add(self.max_datagram_size) > self.window()
    }

    fn requires_fast_retransmission(&self) -> bool {
        false
    }

    fn on_packet_sent<Pub: Publisher>(
        &mut self,
        time_sent: Timestamp,
        sent_bytes: usize,
        app_limited: Option<bool>,
        rtt: &RttEstimator,
        _publisher: &mut Pub,
    ) -> Self::PacketInfo {
        if sent_bytes == 0 {
            return; // pure ACKs are not congestion controlled
        }
        let now = self.seconds(time_sent);
        self.feedback_delay_s = feedback_delay_s(rtt);
        // The first packet starts the connection (later calls do nothing). Before the path's
        // first RTT sample the estimator holds QUIC's initial 333 ms, which would size the
        // warm-up MIs at half a second each: then the delay is unknown, and the MIs are sized
        // by their packet floor until one has RTT samples.
        self.rate.start(now, one_way_delay_estimate_s(rtt));
        self.bytes_in_flight = self.bytes_in_flight.saturating_add(sent_bytes as u32);
        // s2n-quic says whether the application had more to send (None: unknown, taken as
        // more waiting, the gym's case).
        self.rate
            .on_sent_limited(now, sent_bytes, app_limited.unwrap_or(false));
    }

    fn on_rtt_update<Pub: Publisher>(
        &mut self,
        _time_sent: Timestamp,
        _now: Timestamp,
        rtt: &RttEstimator,
        _publisher: &mut Pub,
    ) {
        self.feedback_delay_s = feedback_delay_s(rtt);
    }

    fn on_ack<Pub: Publisher>(
        &mut self,
        _newest_acked_time_sent: Timestamp,
        bytes_acknowledged: usize,
        _newest_acked_packet_info: Self::PacketInfo,
        rtt: &RttEstimator,
        _random_generator: &mut dyn RandomGenerator,
        ack_receive_time: Timestamp,
        _publisher: &mut Pub,
    ) {
        let now = self.seconds(ack_receive_time);
        self.bytes_in_flight = self
            .bytes_in_flight
            .saturating_sub(bytes_acknowledged as u32);
        // One RTT sample per ACK frame (its newest packet's), as the stack measures it.
        self.rate
            .on_acked(now, bytes_acknowledged, rtt.latest_rtt().as_secs_f64());
    }

    fn on_packet_lost<Pub: Publisher>(
        &mut self,
        lost_bytes: u32,
        _packet_info: Self::PacketInfo,
        _persistent_congestion: bool,
        _new_loss_burst: bool,
        _random_generator: &mut dyn RandomGenerator,
        timestamp: Timestamp,
        _publisher: &mut Pub,
    ) {
        let now = self.seconds(timestamp);
        self.bytes_in_flight = self.bytes_in_flight.saturating_sub(lost_bytes);
        self.rate.on_lost(now, lost_bytes as usize);
    }

    fn on_explicit_congestion<Pub: Publisher>(
        &mut self,
        _ce_count: u64,
        _event_time: Timestamp,
        _publisher: &mut Pub,
    ) {
        // The policy reads delay and loss, not ECN marks.
    }

    fn on_mtu_update<Pub: Publisher>(&mut self, max_data_size: u16, _publisher: &mut Pub) {
        self.max_datagram_size = u32::from(max_data_size);
    }

    fn on_packet_discarded<Pub: Publisher>(&mut self, bytes_sent: usize, _publisher: &mut Pub) {
        self.bytes_in_flight = self.bytes_in_flight.saturating_sub(bytes_sent as u32);
    }

    fn earliest_departure_time(&self) -> Option<Timestamp> {
        let epoch = self.epoch?;
        epoch.checked_add(Duration::from_secs_f64(self.rate.earliest_departure_s()))
    }
}
