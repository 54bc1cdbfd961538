//! The return path (receiver -> sender) through the delay line: a TUN device in the router
//! namespace and a policy rule that sends everything arriving from the receiver link into it.
//! What the delay line writes back enters the router as if received on the TUN device and is
//! routed by the main table to the sender. The data path never touches it.

use std::time::Duration;

use crate::command::run_words;
use crate::delay_line::DelayLine;
use crate::error::Result;
use crate::namespace::in_namespace;
use crate::sysctl::write_sysctls;
use crate::tun::TunDevice;
use crate::wiring::{disable_offloads, set_up, ROUTER_TO_RECEIVER_IF};

/// The TUN device of the delay line, in the router namespace.
pub const TUN_IF: &str = "delay0";

/// Routing table that sends everything to the TUN device.
pub const RETURN_TABLE: &str = "100";

/// Priority of the rule selecting that table (after `local`, before `main`).
pub const RULE_PRIORITY: &str = "100";

/// Creates the TUN device in `router_ns`, routes the receiver's packets through it and starts
/// the delay line holding them for `round_trip_delay`.
pub fn install(router_ns: &str, round_trip_delay: Duration) -> Result<DelayLine> {
    let device = in_namespace(router_ns, || TunDevice::create(TUN_IF))??;
    // From here on dropping `device` (or the line that owns it) removes the interface.
    disable_offloads(router_ns, TUN_IF)?;
    let rp_filter = format!("net/ipv4/conf/{TUN_IF}/rp_filter");
    write_sysctls(router_ns, &[(rp_filter.as_str(), "0")])?;
    set_up(router_ns, TUN_IF)?;
    run_words(
        "ip",
        &format!("-n {router_ns} route add default dev {TUN_IF} table {RETURN_TABLE}"),
    )?;
    run_words(
        "ip",
        &format!(
            "-n {router_ns} rule add iif {ROUTER_TO_RECEIVER_IF} lookup {RETURN_TABLE} \
             priority {RULE_PRIORITY}"
        ),
    )?;
    DelayLine::start(device.into_fd(), round_trip_delay)
}
