//! mocc-quic: an exported policy as the congestion controller of a production QUIC stack.
//!
//! [`learned_rate::LearnedRate`] turns what a stack tells its congestion controller (bytes
//! sent, acknowledged with an RTT sample, lost) into the gym's monitor intervals
//! (`mocc_policy::MiLedger` over `PolicyDriver`) and paces at the policy's rate;
//! [`s2n::LearnedEndpoint`] plugs it into s2n-quic, which lets its controller set every
//! packet's departure time. The objective can change while connections run
//! ([`learned_rate::ObjectiveHandle`]). [`transfer`] serves and fetches one body over
//! s2n-quic with the learned controller or the stack's own Cubic or BBR.
//!
//! Never depends on libtorch.

pub mod learned_rate;
pub mod s2n;
pub mod transfer;

pub use learned_rate::{sent_over_policy, LearnedRate, MiLog, ObjectiveHandle};
pub use s2n::{LearnedController, LearnedEndpoint};
