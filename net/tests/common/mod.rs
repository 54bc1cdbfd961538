//! Helpers shared by the namespace tests: gating on the host's capabilities and running
//! one test at a time.
#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard};

use mocc_net::preflight::find_tool;
use mocc_net::{preflight, PathSpec};

static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the lock that keeps these tests from running at the same time.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether the host can build topologies (and has every tool in `extra_tools`). Without,
/// skips (false) or, with MOCC_REQUIRE_NET=1, fails with the reason.
pub fn network_ready(extra_tools: &[(&str, &str)]) -> bool {
    let mut problem = preflight().err().map(|e| e.to_string());
    for (tool, package) in extra_tools {
        if problem.is_none() && find_tool(tool).is_none() {
            problem = Some(format!("{tool} missing (apt-get install {package})"));
        }
    }
    let Some(problem) = problem else {
        return true;
    };
    if std::env::var("MOCC_REQUIRE_NET").as_deref() == Ok("1") {
        panic!("MOCC_REQUIRE_NET=1 but the network tests cannot run: {problem}");
    }
    eprintln!("skipping a namespace test: {problem}");
    false
}

/// A path of `mbit` Mbit/s (1500-byte packets), `delay_s` one way, `queue_pkts`, no loss.
pub fn path(mbit: f64, delay_s: f64, queue_pkts: u32) -> PathSpec {
    PathSpec {
        bandwidth_pps: mbit * 1e6 / (1500.0 * 8.0),
        delay_s,
        queue_pkts,
        loss: 0.0,
    }
}
