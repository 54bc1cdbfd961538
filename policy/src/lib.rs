//! mocc-policy: the deployable half of mocc.
//!
//! Everything a sender needs to turn raw monitor-interval (MI) counts into the next sending rate
//! lives here, so that the simulator used for training (`mocc-gym`) and a deployed controller run
//! the very same code: MI statistics ([`MonitorInterval`]), Aurora's metrics by name and three
//! of ours ([`Feature`]), the latency-ratio baseline, peak delivery rate, recent minimum and
//! lowest latency ([`LatencyBaseline`], [`PathEstimate`]), what the agent observes
//! ([`ObservationConfig`], [`ObservationBuilder`]), MI sizing ([`MonitorIntervalConfig`]), the
//! agent's MI clock ([`MiClock`]: warm-up, history, next MI length, when to decide), the
//! rate-update rule ([`ActionRule`]), the one decision loop every learned sender runs
//! ([`SenderLoop`]: clock, rule, the agent's rate, probes' pacing, the mode), base-RTT probes between decisions ([`ProbeRtt`]), a startup that doubles the rate every round trip before the first decision ([`Startup`]), Copa's
//! switch between a cooperative and a competitive policy ([`ModeSwitch`]), Orca's action that
//! scales an underlying Cubic's window instead of a rate ([`WindowScale`]) and the
//! [`Objective`] type.
//!
//! It also runs trained policies without libtorch: [`Policy::load`] reads and validates an
//! export folder (`policy.json` + `policy.safetensors`), and a [`Controller`] turns each
//! finished MI into the next pacing rate with the policy's mean action. A transport that would
//! rather not cut MIs itself feeds packet events to an [`MiLedger`], which cuts them by the
//! gym's rule and asks any [`RateDriver`] (a [`PolicyDriver`] for a learned policy) for rates.
//! Writing exports and every other output is mocc-outputs' job: a deployment links only what
//! reads and runs a policy.
//!
//! This crate never depends on libtorch.

pub mod ack_span;
pub mod actor;
pub mod app_limited;
pub mod baseline;
pub mod clock;
pub mod controller;
pub mod dispersion;
pub mod error;
pub mod export;
pub mod features;
pub mod history;
pub mod mi;
pub mod mode_switch;
pub mod monotone_window;
pub mod normalize;
pub mod objective;
pub mod packet_events;
pub mod probe;
pub mod provenance;
pub mod queue;
pub mod rate;
pub mod sender_loop;
pub mod serde_float;
pub mod spec;
pub mod startup;
pub mod window_scale;

pub use ack_span::{AckSpan, AckTimes};
pub use actor::{Activation, OBJECTIVE_DIM};
pub use app_limited::{app_limited_rate, AppLimit, APP_LIMITED_HEADROOM};
pub use baseline::{BaselineKind, CapacityTrains, LatencyBaseline, PathEstimate};
pub use clock::MiClock;
pub use controller::{Controller, ControllerError};
pub use error::{FileError, PolicyError, RateError};
pub use export::{
    NamedTensors, Policy, PolicyWorkspace, COMPETITIVE_DIR, SPEC_FILE, TORCHSCRIPT_FILE,
    WEIGHTS_FILE,
};
pub use features::{Feature, FeatureError, FeatureSet};
pub use history::{ObservationBuilder, ObservationConfig};
pub use mi::{
    MetricsVersion, MiCounters, MonitorInterval, MonitorIntervalConfig, RttSummary, RttTally,
    BYTES_PER_PACKET, NO_BASELINE_LATENCY_S,
};
pub use mode_switch::{Mode, ModeState, ModeSwitch};
pub use normalize::{
    normalize_value, Normalization, Normalizer, DEFAULT_OBS_CLIP, DEFAULT_OBS_EPS,
};
pub use objective::{Objective, ObjectiveError};
pub use packet_events::{ClosedMi, MiLedger, PolicyDriver, RateDriver};
pub use probe::{ProbeRtt, ProbeState};
pub use provenance::{RecipeRef, RuleObservation, SenderRule, UntrainedPart, RULE_PARTS};
pub use queue::queue_free;
pub use rate::{ActionRule, BinomialIncrease};
pub use sender_loop::{LoopSpec, SavedClock, SenderLoop};
pub use spec::{
    ArchitectureSpec, LayerSpec, MonitorIntervalSpec, ObservationSpec, PolicySpec, Provenance,
    WeightsSpec, POLICY_FORMAT_VERSION,
};
pub use startup::{Startup, StartupExit, StartupState, StartupStep};
pub use window_scale::WindowScale;
