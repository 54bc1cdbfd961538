//! mocc-net: real emulated network paths in Linux network namespaces.
//!
//! [`Topology::create`] builds a sender, a router and a receiver namespace joined by veth
//! pairs. The router holds the bottleneck (tbf + a packet-counted pfifo, on its egress to the
//! receiver), random loss of the data direction (an nftables `numgen random` rule) and a
//! user-space delay line on a TUN device that holds the return path for the round-trip
//! propagation delay, so the data path stays pure kernel. Dropping the topology removes all
//! of it; [`cleanup_stale`] removes what killed processes left behind. [`run_schedule`]
//! changes a live path's bandwidth, delay and loss, and takes it down and up, at given times.
//!
//! Needs root, `ip`/`tc` (iproute2), `nft` (nftables), `ethtool` and /dev/net/tun; see
//! [`preflight`]. The crate never prints, and touches no interface, route or firewall rule
//! outside the namespaces it creates.

pub mod addressing;
pub mod bottleneck;
pub mod cleanup;
pub mod command;
pub mod delay_line;
pub mod error;
pub mod interrupt;
pub mod link;
pub mod loss;
pub mod namespace;
pub mod path_schedule;
pub mod preflight;
pub mod probe;
pub mod return_path;
pub mod rx_timestamp;
pub mod sysctl;
pub mod timing;
pub mod topology;
pub mod transport;
pub mod tun;
pub mod wiring;

pub use addressing::Addresses;
pub use cleanup::cleanup_stale;
pub use delay_line::{DelayLine, DelayLineStats};
pub use error::{NetError, Result};
pub use interrupt::remove_namespaces_on_interrupt;
pub use link::PathSpec;
pub use path_schedule::{run_schedule, AppliedChange, PathChange};
pub use preflight::preflight;
pub use probe::{run_udp_flow, FlowReport, FlowSpec};
pub use topology::{Host, Topology};
