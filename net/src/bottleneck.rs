//! The bottleneck: a tbf rate limiter with a packet-counted drop-tail queue (pfifo) as its
//! child, on the router's egress towards the receiver.

use crate::command::run_words;
use crate::error::Result;
use crate::link::tbf_rate_bit_per_s;
use crate::wiring::ROUTER_TO_RECEIVER_IF;

/// tbf bucket: two full-size frames. Below 1514 bytes tbf drops every full-size packet.
pub const TBF_BURST_BYTES: u32 = 3028;

/// Handle of the pfifo child.
const QUEUE_HANDLE: &str = "10:";

/// Installs tbf (`bandwidth_pps` packets of 1500 IP bytes per second) and its pfifo child of
/// `queue_pkts` packets on the router's egress to the receiver.
pub fn install(router_ns: &str, bandwidth_pps: f64, queue_pkts: u32) -> Result<()> {
    tbf(router_ns, "add", bandwidth_pps, queue_pkts)?;
    set_queue(router_ns, queue_pkts)
}

/// Changes the rate; the pfifo and the packets in it stay. A tbf change sets its child
/// fifo's limit to tbf's `limit` argument, which is therefore the queue size; the pfifo's
/// limit is put back explicitly afterwards all the same.
pub fn change_rate(router_ns: &str, bandwidth_pps: f64, queue_pkts: u32) -> Result<()> {
    tbf(router_ns, "change", bandwidth_pps, queue_pkts)?;
    set_queue(router_ns, queue_pkts)
}

/// Sets (or replaces) the pfifo child's limit; a pfifo already there keeps its packets.
pub fn set_queue(router_ns: &str, queue_pkts: u32) -> Result<()> {
    run_words(
        "tc",
        &format!(
            "-n {router_ns} qdisc replace dev {ROUTER_TO_RECEIVER_IF} parent 1:1 \
             handle {QUEUE_HANDLE} pfifo limit {queue_pkts}"
        ),
    )
    .map(|_| ())
}

/// `tc qdisc add|change ... tbf`. tc requires a `limit`; tbf passes it on to its child fifo
/// (on `add`, a byte fifo that `set_queue` replaces at once), so it is the queue size.
fn tbf(router_ns: &str, verb: &str, bandwidth_pps: f64, queue_pkts: u32) -> Result<()> {
    let rate = tbf_rate_bit_per_s(bandwidth_pps);
    run_words(
        "tc",
        &format!(
            "-n {router_ns} qdisc {verb} dev {ROUTER_TO_RECEIVER_IF} root handle 1: \
             tbf rate {rate}bit burst {TBF_BURST_BYTES} limit {queue_pkts}"
        ),
    )
    .map(|_| ())
}
