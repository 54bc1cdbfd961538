//! A real run's path over time, in the simulator's terms: a fixed link, or a scenario's link
//! with its schedule (bandwidth, delay and loss steps, optionally periodic) and outages. It
//! gives the changes to apply to the live path (`mocc_net::run_schedule`), and the capacity
//! and base RTT that a run's metrics are measured against, from the simulator's own link model.

use mocc_gym::config::{LinkConfig, QueueRange};
use mocc_gym::{Link, LinkParams, Range};
use mocc_net::{PathChange, PathSpec};
use std::sync::Arc;

/// A path's parameters over a run.
#[derive(Debug, Clone)]
pub struct PathTimeline {
    link: Link,
    queue_pkts: u32,
}

/// Parameters are read this long after a change time, so a change is seen whatever the
/// rounding of the time it was computed at.
const AFTER_CHANGE_S: f64 = 1e-9;

impl PathTimeline {
    /// A path that never changes.
    pub fn fixed(path: &PathSpec) -> Self {
        Self {
            link: Link::fixed(params_of(path)),
            queue_pkts: path.queue_pkts,
        }
    }

    /// A scenario's link (`link:` of a scenario file, already validated by the simulator).
    /// Refuses, naming the field, what a real path cannot follow: ranges (a real run is one
    /// episode; give numbers), traces, randomly drawn changes, latency noise and host noise.
    pub fn from_link_config(link: &LinkConfig) -> Result<Self, String> {
        refuse_unsupported(link)?;
        let fixed = |r: Range, field: &str| match r {
            Range::Fixed(v) => Ok(v),
            _ => Err(format!(
                "link.{field}: a real path needs one number, not a range"
            )),
        };
        let queue = match link.queue_pkts {
            QueueRange::Fixed(q) if q >= 1.0 && q.fract() == 0.0 && q <= f64::from(u32::MAX) => {
                q as u32
            }
            QueueRange::Fixed(q) => {
                return Err(format!(
                    "link.queue_pkts: a real queue holds whole packets (got {q})"
                ))
            }
            _ => return Err("link.queue_pkts: a real path needs one number, not a range".into()),
        };
        let base = LinkParams {
            bandwidth_pps: fixed(link.bandwidth_pps, "bandwidth_pps")?,
            delay_s: fixed(link.delay_s, "delay_s")?,
            queue_pkts: f64::from(queue),
            loss: fixed(link.loss, "loss")?,
        };
        let built = Link::fixed(base)
            .with_schedule(&link.schedule, link.schedule_period_s)
            .with_outages(Arc::from(link.outages.clone()));
        Ok(Self {
            link: built,
            queue_pkts: queue,
        })
    }

    /// The path at the start of the run.
    pub fn initial(&self) -> PathSpec {
        spec_of(self.link.params_at(0.0), self.queue_pkts)
    }

    /// Mean capacity over `[t0, t1]` (packets/s; outages count as zero).
    pub fn capacity_pps(&self, t0: f64, t1: f64) -> f64 {
        self.link.capacity_pps(t0, t1)
    }

    /// Packets the path could carry over `[t0, t1]`.
    pub fn capacity_pkts(&self, t0: f64, t1: f64) -> f64 {
        if t1 <= t0 {
            return 0.0;
        }
        self.capacity_pps(t0, t1) * (t1 - t0)
    }

    /// The round-trip propagation delay in force at `t` (s).
    pub fn base_rtt_s(&self, t: f64) -> f64 {
        2.0 * self.link.params_at(t).delay_s
    }

    /// The path's steps up to `until_s`: `(time, bandwidth packets/s (0 while down), base RTT
    /// s)` at the start and at every change, for figures.
    pub fn steps(&self, until_s: f64) -> Vec<(f64, f64, f64)> {
        let mut times = vec![0.0];
        times.extend(self.link.change_times(until_s));
        times
            .into_iter()
            .map(|t| {
                let (p, down) = self.state_after(t);
                let bw = if down { 0.0 } else { p.bandwidth_pps };
                (t, bw, 2.0 * p.delay_s)
            })
            .collect()
    }

    /// What to change on the live path, in time order, up to `until_s`: at every change time,
    /// the fields that differ from before; a path down at `until_s` comes up then.
    pub fn changes(&self, until_s: f64) -> Vec<PathChange> {
        let mut before = self.link.params_at(0.0);
        let mut down_before = self.link.is_down(0.0);
        let mut out = Vec::new();
        for t in self.link.change_times(until_s) {
            let (p, down) = self.state_after(t);
            let differs = |a: f64, b: f64| (a != b).then_some(a);
            let change = PathChange {
                at_s: t,
                bandwidth_pps: differs(p.bandwidth_pps, before.bandwidth_pps),
                delay_s: differs(p.delay_s, before.delay_s),
                loss: differs(p.loss, before.loss),
                down: (down != down_before).then_some(down),
            };
            if !change.is_empty() {
                out.push(change);
            }
            before = p;
            down_before = down;
        }
        if down_before {
            // The run ends inside an outage: the path comes back up then, so that what the
            // flows still have in flight drains instead of holding the run's end.
            out.push(PathChange {
                at_s: until_s,
                down: Some(false),
                ..PathChange::default()
            });
        }
        out
    }

    /// The parameters and whether the path is down just after a change at `t`.
    fn state_after(&self, t: f64) -> (LinkParams, bool) {
        let at = t + AFTER_CHANGE_S;
        (self.link.params_at(at), self.link.is_down(at))
    }
}

fn refuse_unsupported(link: &LinkConfig) -> Result<(), String> {
    let refuse = |field: &str, what: &str| Err(format!("link.{field}: {what}"));
    if link.trace.is_some() {
        return refuse(
            "trace",
            "a real path has no trace-driven service; use a schedule",
        );
    }
    if link.changes.is_some() {
        return refuse(
            "changes",
            "random path changes are drawn per episode; write them as a schedule",
        );
    }
    if link.cross_traffic_loss.is_some() {
        return refuse(
            "cross_traffic_loss",
            "drawn per episode from who takes part; give link.loss",
        );
    }
    if link.latency_noise != 0.0 {
        return refuse(
            "latency_noise",
            "the real path has its own noise; leave it 0",
        );
    }
    if link.jitter_s != Range::Fixed(0.0) {
        return refuse(
            "jitter_s",
            "the real hosts add their own jitter; leave it 0",
        );
    }
    if link.ack_aggregation_s != Range::Fixed(0.0) {
        return refuse(
            "ack_aggregation_s",
            "the real path does not aggregate acknowledgements; leave it 0",
        );
    }
    Ok(())
}

fn params_of(path: &PathSpec) -> LinkParams {
    LinkParams {
        bandwidth_pps: path.bandwidth_pps,
        delay_s: path.delay_s,
        queue_pkts: f64::from(path.queue_pkts),
        loss: path.loss,
    }
}

fn spec_of(p: LinkParams, queue_pkts: u32) -> PathSpec {
    PathSpec {
        bandwidth_pps: p.bandwidth_pps,
        delay_s: p.delay_s,
        queue_pkts,
        loss: p.loss,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mocc_gym::Scenario;

    fn link(yaml: &str) -> LinkConfig {
        let s = Scenario::from_yaml_str(yaml, std::path::Path::new("test.yaml")).unwrap();
        s.config().link.clone()
    }

    #[test]
    fn a_periodic_schedule_and_outage_become_changes_in_time_order() {
        // The LEO scenario's shape: 800 -> 400 pkt/s at 5 s, 900 at 10 s, back to 800 at 15 s
        // (the period), and a 0.3 s outage at 14.5 s every 15 s.
        let t = PathTimeline::from_link_config(&link(
            "link:\n  bandwidth_pps: 800\n  delay_s: 0.02\n  queue_pkts: 100\n  loss: 0.001\n  \
             schedule:\n    - {time_s: 5, bandwidth_pps: 400, delay_s: 0.03}\n    \
             - {time_s: 10, bandwidth_pps: 900, delay_s: 0.015}\n  schedule_period_s: 15\n  \
             outages:\n    - {start_s: 14.5, duration_s: 0.3, period_s: 15}\n",
        ))
        .unwrap();
        assert_eq!(t.initial().bandwidth_pps, 800.0);
        assert_eq!(t.initial().queue_pkts, 100);
        let c = t.changes(21.0);
        let at: Vec<f64> = c.iter().map(|c| c.at_s).collect();
        assert_eq!(at, vec![5.0, 10.0, 14.5, 14.8, 15.0, 20.0]);
        assert_eq!(
            (c[0].bandwidth_pps, c[0].delay_s, c[0].loss),
            (Some(400.0), Some(0.03), None)
        );
        assert_eq!(
            (c[1].bandwidth_pps, c[1].delay_s),
            (Some(900.0), Some(0.015))
        );
        assert_eq!((c[2].down, c[2].bandwidth_pps), (Some(true), None));
        assert_eq!(c[3].down, Some(false));
        assert_eq!(
            (c[4].bandwidth_pps, c[4].delay_s),
            (Some(800.0), Some(0.02))
        );
        assert_eq!(c[5].bandwidth_pps, Some(400.0));
        // Capacity over the first period: 5 s each of 800, 400 and 900 pkt/s, less the 0.3 s
        // of outage at 900.
        let expect = 5.0 * 800.0 + 5.0 * 400.0 + 5.0 * 900.0 - 0.3 * 900.0;
        let got = t.capacity_pkts(0.0, 15.0);
        assert!((got - expect).abs() < 1e-6, "{got} against {expect}");
        assert!((t.base_rtt_s(7.0) - 0.06).abs() < 1e-12);
        let steps = t.steps(15.0);
        assert_eq!(steps[0], (0.0, 800.0, 0.04));
        assert_eq!(steps[3].1, 0.0, "down at 14.5 s");
    }

    #[test]
    fn a_run_that_ends_inside_an_outage_brings_the_path_back_up_at_its_end() {
        let t = PathTimeline::from_link_config(&link(
            "link:\n  bandwidth_pps: 900\n  delay_s: 0.025\n  queue_pkts: 45\n  loss: 0\n  \
             outages:\n    - {start_s: 14.85, duration_s: 0.15, period_s: 15}\n",
        ))
        .unwrap();
        let c = t.changes(29.9);
        let last = c.last().unwrap();
        assert_eq!((last.at_s, last.down), (29.9, Some(false)), "{c:?}");
        assert_eq!(c[c.len() - 2].down, Some(true));
        // A run that ends with the path up gets no extra change.
        let ups = t
            .changes(20.0)
            .iter()
            .filter(|c| c.down == Some(false))
            .count();
        assert_eq!(ups, 1);
    }

    #[test]
    fn a_fixed_path_has_no_changes() {
        let path = PathSpec {
            bandwidth_pps: 300.0,
            delay_s: 0.025,
            queue_pkts: 40,
            loss: 0.01,
        };
        let t = PathTimeline::fixed(&path);
        assert!(t.changes(100.0).is_empty());
        assert_eq!(t.initial(), path);
        assert!((t.capacity_pkts(2.0, 12.0) - 3000.0).abs() < 1e-9);
    }

    #[test]
    fn what_a_real_path_cannot_follow_is_refused_by_field() {
        let fixed = "delay_s: 0.02, loss: 0";
        for (extra, field) in [
            (
                "bandwidth_pps: {min: 100, max: 200}, queue_pkts: 20",
                "link.bandwidth_pps",
            ),
            (
                "bandwidth_pps: 300, queue_pkts: 20, latency_noise: 0.1",
                "link.latency_noise",
            ),
            (
                "bandwidth_pps: 300, queue_pkts: 20, jitter_s: 0.001",
                "link.jitter_s",
            ),
            (
                "bandwidth_pps: 300, queue_pkts: 20, cross_traffic_loss: 0",
                "link.cross_traffic_loss",
            ),
        ] {
            let yaml = format!("link: {{{fixed}, {extra}}}\n");
            let e = PathTimeline::from_link_config(&link(&yaml)).unwrap_err();
            assert!(e.starts_with(field), "{yaml}: {e}");
        }
    }
}
