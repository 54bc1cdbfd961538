//! The startup in the env: a learned sender that starts at 1 Mbit/s on a free 1 Gbit/s path
//! is at the link's rate within 3 s with the startup (its MIs are the reset's loop MIs, no
//! decision between), and nowhere near it without; several learned senders each run their
//! own; a sender with a startup is deterministic per seed.

use mocc_gym::{Action, Env, Scenario, SlotPhase};
use std::path::Path;
use std::sync::Arc;

/// 1 Gbit/s of 1500-byte packets.
const GBIT_PPS: f64 = 83_333.0;

fn env(yaml: &str, seed: u64) -> Env {
    let s = Scenario::from_yaml_str(yaml, Path::new("startup.yaml")).expect("scenario");
    Env::new(Arc::new(s), seed, 0)
}

/// A free 1 Gbit/s path of `rtt_s`, a 1-BDP buffer, one learned sender from 83 pkt/s, with
/// or without the startup.
fn fast_path(rtt_s: f64, startup: bool) -> String {
    fast_path_with(rtt_s, startup, "")
}

/// [`fast_path`] with `more_senders` (YAML list items) after the first.
fn fast_path_with(rtt_s: f64, startup: bool, more_senders: &str) -> String {
    let startup = if startup { ", startup: {}" } else { "" };
    format!(
        "link: {{bandwidth_pps: {GBIT_PPS}, delay_s: {}, queue_pkts: {}, loss: 0}}\n\
         senders:\n  - {{controller: agent, start_rate: {{pps: 83}}}}\n{more_senders}\
         action: {{max_rate_pps: 100000{startup}}}\nepisode_mis: 100000\n",
        rtt_s / 2.0,
        (GBIT_PPS * rtt_s).round()
    )
}

/// Steps with a zero action (the rate stays where the loop left it) until `until_s`; returns
/// the end time of the first MI that delivered >= 0.9 of the link, if any.
fn time_to_ninety_percent(e: &mut Env, until_s: f64) -> Option<f64> {
    let mut first = e
        .slot_probe_mis(0)
        .iter()
        .find(|m| m.info.throughput_pps >= 0.9 * GBIT_PPS)
        .map(|m| m.info.time_s);
    while e.network().now_s() < until_s && first.is_none() {
        let step = e.step(Action::Delta(0.0));
        first = e
            .slot_probe_mis(0)
            .iter()
            .map(|m| &m.info)
            .chain(std::iter::once(&step.info))
            .find(|i| i.throughput_pps >= 0.9 * GBIT_PPS)
            .map(|i| i.time_s);
    }
    first
}

#[test]
fn the_startup_fills_a_free_gigabit_path_within_three_seconds() {
    for rtt in [0.01, 0.05, 0.1] {
        let mut e = env(&fast_path(rtt, true), 0);
        // The reset ran the startup: its MIs grew the rate without a decision.
        let loop_mis = e.slot_probe_mis(0);
        assert!(
            loop_mis.len() > 10,
            "rtt {rtt}: {} startup MIs",
            loop_mis.len()
        );
        assert!(loop_mis[1].info.rate_pps > 1.3 * loop_mis[0].info.rate_pps);
        assert_eq!(e.slot_phase(0), SlotPhase::Ready);
        let t = time_to_ninety_percent(&mut e, 3.0);
        assert!(t.is_some_and(|t| t <= 3.0), "rtt {rtt}: {t:?}");
        // It hands the agent about the link's rate, and the queue it built has drained.
        let step = e.step(Action::Delta(0.0));
        assert!(
            (0.9 * GBIT_PPS..=1.05 * GBIT_PPS).contains(&step.info.rate_pps),
            "rtt {rtt}: {:?}",
            step.info
        );
        assert!(
            step.info.mean_rtt_s < 1.2 * rtt,
            "rtt {rtt}: {:?}",
            step.info
        );
    }
    // Without it the same sender is still far below the link at 3 s.
    let mut e = env(&fast_path(0.05, false), 0);
    assert!(e.slot_probe_mis(0).is_empty());
    assert_eq!(time_to_ninety_percent(&mut e, 3.0), None);
}

#[test]
fn each_learned_sender_runs_its_own_startup_and_runs_repeat() {
    let yaml = fast_path_with(
        0.02,
        true,
        "  - {controller: agent, start_rate: {pps: 83}, start_time_s: 1.0}\n",
    );
    let run = |seed| {
        let mut e = env(&yaml, seed);
        let mut loop_mis = [e.slot_probe_mis(0).len(), e.slot_probe_mis(1).len()];
        let mut rates = Vec::new();
        while e.network().now_s() < 3.0 {
            e.step_slots(&[Action::Delta(0.0), Action::Delta(0.0)]);
            for (k, n) in loop_mis.iter_mut().enumerate() {
                *n += e.slot_probe_mis(k).len();
            }
            rates.push(e.network().senders()[1].rate_pps().to_bits());
        }
        (loop_mis, rates)
    };
    let (loop_mis, rates) = run(4);
    assert!(loop_mis.iter().all(|&n| n > 5), "{loop_mis:?}");
    assert_eq!(run(4).1, rates, "same seed, same run");
}
