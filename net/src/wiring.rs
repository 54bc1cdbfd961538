//! The veth links of a topology: sender <-> router <-> receiver, with addresses, routes and
//! segmentation offloads off (so queues count real packets, not 64 KB super-packets).

use crate::addressing::{with_prefix, Addresses};
use crate::command::run_words;
use crate::error::Result;

/// The sender's interface (in the sender namespace).
pub const SENDER_IF: &str = "veth0";
/// The router's interface towards the sender.
pub const ROUTER_TO_SENDER_IF: &str = "to-snd";
/// The router's interface towards the receiver: the bottleneck's egress.
pub const ROUTER_TO_RECEIVER_IF: &str = "to-rcv";
/// The receiver's interface (in the receiver namespace).
pub const RECEIVER_IF: &str = "veth0";

/// The three namespaces a line of links connects.
#[derive(Debug, Clone, Copy)]
pub struct LineNamespaces<'a> {
    /// The sender's namespace.
    pub sender: &'a str,
    /// The router's namespace.
    pub router: &'a str,
    /// The receiver's namespace.
    pub receiver: &'a str,
}

/// Creates both veth pairs, addresses them, turns offloads off, brings everything up and
/// routes each end host through the router.
pub fn wire_line(ns: LineNamespaces<'_>, addresses: &Addresses) -> Result<()> {
    add_veth_pair(ns.router, ROUTER_TO_SENDER_IF, ns.sender, SENDER_IF)?;
    add_veth_pair(ns.router, ROUTER_TO_RECEIVER_IF, ns.receiver, RECEIVER_IF)?;
    let interfaces = [
        (ns.sender, SENDER_IF, addresses.sender),
        (ns.router, ROUTER_TO_SENDER_IF, addresses.router_sender_side),
        (
            ns.router,
            ROUTER_TO_RECEIVER_IF,
            addresses.router_receiver_side,
        ),
        (ns.receiver, RECEIVER_IF, addresses.receiver),
    ];
    for (namespace, interface, address) in interfaces {
        let address = with_prefix(address);
        run_words(
            "ip",
            &format!("-n {namespace} addr add {address} dev {interface}"),
        )?;
        disable_offloads(namespace, interface)?;
        set_up(namespace, interface)?;
    }
    for namespace in [ns.sender, ns.router, ns.receiver] {
        set_up(namespace, "lo")?;
    }
    add_default_route(ns.sender, &addresses.router_sender_side.to_string())?;
    add_default_route(ns.receiver, &addresses.router_receiver_side.to_string())
}

/// A veth pair with one end `a_if` in `a_ns` and the other `b_if` in `b_ns`, created directly
/// in the namespaces (never in the host's).
fn add_veth_pair(a_ns: &str, a_if: &str, b_ns: &str, b_if: &str) -> Result<()> {
    run_words(
        "ip",
        &format!("-n {a_ns} link add {a_if} type veth peer name {b_if} netns {b_ns}"),
    )
    .map(|_| ())
}

/// Turns TSO, GSO and GRO off on `interface` (`ethtool -K`).
pub fn disable_offloads(namespace: &str, interface: &str) -> Result<()> {
    run_words(
        "ip",
        &format!("netns exec {namespace} ethtool -K {interface} tso off gso off gro off"),
    )
    .map(|_| ())
}

/// `ip link set dev up`.
pub fn set_up(namespace: &str, interface: &str) -> Result<()> {
    run_words("ip", &format!("-n {namespace} link set dev {interface} up")).map(|_| ())
}

fn add_default_route(namespace: &str, gateway: &str) -> Result<()> {
    run_words(
        "ip",
        &format!("-n {namespace} route add default via {gateway}"),
    )
    .map(|_| ())
}
