//! Changes of a live path at given times: bandwidth, delay, loss, and outages, applied to a
//! [`Topology`] while flows run, as the simulator's link schedules change its link.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::topology::Topology;

/// What changes at one moment of a run; fields left `None` stay as they are.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PathChange {
    /// When, in seconds from the run's start.
    pub at_s: f64,
    /// The new bottleneck rate (packets/s).
    pub bandwidth_pps: Option<f64>,
    /// The new one-way delay (s).
    pub delay_s: Option<f64>,
    /// The new random loss probability.
    pub loss: Option<f64>,
    /// Whether the path goes down (`Some(true)`) or comes back up (`Some(false)`).
    pub down: Option<bool>,
}

impl PathChange {
    /// Whether it changes anything.
    pub fn is_empty(&self) -> bool {
        self.bandwidth_pps.is_none()
            && self.delay_s.is_none()
            && self.loss.is_none()
            && self.down.is_none()
    }
}

/// A change as it was applied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AppliedChange {
    /// The change.
    pub change: PathChange,
    /// When it took effect, in seconds from the run's start (after its `at_s`).
    pub applied_s: f64,
}

/// How often a waiting schedule looks at its stop flag.
const STOP_POLL: Duration = Duration::from_millis(20);

/// Applies `changes` (in time order) to `topology` at their times, counted from `start`, until
/// they are done or `stop` is set; returns what it applied and when. The first failing change
/// stops it with its error.
pub fn run_schedule(
    topology: &Topology,
    changes: &[PathChange],
    start: Instant,
    stop: &AtomicBool,
) -> Result<Vec<AppliedChange>> {
    let mut applied = Vec::with_capacity(changes.len());
    for change in changes {
        if !wait_until(start + Duration::from_secs_f64(change.at_s.max(0.0)), stop) {
            break;
        }
        apply(topology, change)?;
        applied.push(AppliedChange {
            change: *change,
            applied_s: start.elapsed().as_secs_f64(),
        });
    }
    Ok(applied)
}

/// Applies one change now; the outage state last, so a path coming up gets the new loss.
pub fn apply(topology: &Topology, change: &PathChange) -> Result<()> {
    if let Some(bw) = change.bandwidth_pps {
        topology.set_bandwidth(bw)?;
    }
    if let Some(d) = change.delay_s {
        topology.set_delay(d)?;
    }
    if let Some(l) = change.loss {
        topology.set_loss(l)?;
    }
    if let Some(down) = change.down {
        topology.set_down(down)?;
    }
    Ok(())
}

/// Sleeps until `deadline`; false if `stop` was set first.
fn wait_until(deadline: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        std::thread::sleep((deadline - now).min(STOP_POLL));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_change_is_empty() {
        assert!(PathChange::default().is_empty());
        let c = PathChange {
            down: Some(false),
            ..PathChange::default()
        };
        assert!(!c.is_empty());
    }

    #[test]
    fn a_stopped_wait_returns_at_once() {
        let stop = AtomicBool::new(true);
        let t = Instant::now();
        assert!(!wait_until(t + Duration::from_secs(60), &stop));
        assert!(t.elapsed() < Duration::from_secs(1));
        let go = AtomicBool::new(false);
        assert!(wait_until(Instant::now(), &go));
    }
}
