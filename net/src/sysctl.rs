//! Per-namespace kernel settings (`/proc/sys/net/...`), written from a thread inside the
//! namespace: the `net` sysctls a process sees are those of its network namespace.

use crate::error::{NetError, Result};
use crate::namespace::in_namespace;

/// Writes each `(key, value)` (keys relative to /proc/sys, e.g. `net/ipv4/ip_forward`) inside
/// namespace `name`.
pub fn write_sysctls(name: &str, settings: &[(&str, &str)]) -> Result<()> {
    in_namespace(name, || {
        settings
            .iter()
            .try_for_each(|(key, value)| write_one(name, key, value, false))
    })?
}

/// Turns IPv6 off in namespace `name` (no router solicitations or MLD reports through the
/// bottleneck). A kernel without IPv6 has nothing to turn off.
pub fn disable_ipv6(name: &str) -> Result<()> {
    in_namespace(name, || {
        [
            "net/ipv6/conf/all/disable_ipv6",
            "net/ipv6/conf/default/disable_ipv6",
        ]
        .iter()
        .try_for_each(|key| write_one(name, key, "1", true))
    })?
}

fn write_one(namespace: &str, key: &str, value: &str, missing_ok: bool) -> Result<()> {
    let path = format!("/proc/sys/{key}");
    match std::fs::write(&path, value) {
        Ok(()) => Ok(()),
        Err(e) if missing_ok && e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(NetError::io(
            format!("writing {value} to {path} in namespace {namespace}"),
            e,
        )),
    }
}
