//! Shared bottlenecks, outages, Mahimahi traces, schedules and the windowed and drain-aware
//! latency baselines.

use mocc_gym::config::{OutageConfig, ScheduleEntry};
use mocc_gym::{
    Action, ControllerConfig, Env, Link, LinkParams, Network, Pacing, Range, Scenario,
    ScenarioConfig, Sender, SenderConfig, StartRate, Step,
};
use mocc_policy::{BaselineKind, Feature};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::path::Path;
use std::sync::Arc;

fn sender(controller: ControllerConfig, pps: f64) -> SenderConfig {
    SenderConfig {
        controller,
        start_rate: StartRate::Pps(Range::Fixed(pps)),
        ..SenderConfig::default()
    }
}

/// A fixed link with one agent starting at `pps`, and practically endless episodes.
fn fixed(bw: f64, delay: f64, queue: f64, pps: f64) -> ScenarioConfig {
    let mut cfg = ScenarioConfig::fixed_link(bw, delay, queue, 0.0);
    cfg.senders = vec![sender(ControllerConfig::Agent, pps)];
    cfg.episode_mis = 1_000_000;
    cfg
}

fn env_of(cfg: ScenarioConfig) -> Env {
    Env::new(Arc::new(Scenario::new(cfg, None).unwrap()), 17, 0)
}

/// Steps at a constant rate until the MI ending after `until_s`, returning every step.
fn run_to(env: &mut Env, rate: f64, until_s: f64) -> Vec<Step> {
    let mut out = Vec::new();
    loop {
        let s = env.step(Action::Rate(rate));
        out.push(s);
        if s.info.time_s > until_s {
            return out;
        }
    }
}

/// Packets acknowledged per second over the steps whose MI lies within `[t0, t1]`, and the
/// number of such steps.
fn throughput_between(steps: &[Step], t0: f64, t1: f64) -> (f64, usize) {
    let (mut acked, mut dur, mut n) = (0.0, 0.0, 0);
    for s in steps {
        let i = s.info;
        let start = i.time_s - i.duration_s;
        if start >= t0 && i.time_s <= t1 {
            acked += i.throughput_pps * i.duration_s;
            dur += i.duration_s;
            n += 1;
        }
    }
    (acked / dur, n)
}

/// Agent at 80 pkt/s and a constant sender at `cross_pps` (from `cross_start_s`) on a
/// 100 pkt/s link with a 10-packet queue; returns (agent acks, cross acks, seconds) measured
/// from 2 s to 12 s, after checking the capacity bound.
fn shared_link(cross_pps: f64, cross_start_s: f64) -> (f64, f64, f64) {
    let (bw, queue) = (100.0, 10.0);
    let mut cfg = fixed(bw, 0.05, queue, 80.0);
    cfg.senders.push(SenderConfig {
        start_time_s: Range::Fixed(cross_start_s),
        ..sender(ControllerConfig::Constant, cross_pps)
    });
    let mut env = env_of(cfg);
    run_to(&mut env, 80.0, 2.0);
    let t0 = env.network().now_s();
    let a0: Vec<u64> = env
        .network()
        .senders()
        .iter()
        .map(|s| s.totals().acked)
        .collect();
    let steps = run_to(&mut env, 80.0, 12.0);
    let t1 = env.network().now_s();
    let a1: Vec<u64> = env
        .network()
        .senders()
        .iter()
        .map(|s| s.totals().acked)
        .collect();
    let dt = t1 - t0;
    let agent = (a1[0] - a0[0]) as f64;
    let cross = (a1[1] - a0[1]) as f64;
    // Acks of admitted packets are at least 1/bw apart (FIFO service): at most bw*dt + 1 in
    // the window, whatever sender they belong to.
    assert!(
        agent + cross <= bw * dt + 2.0,
        "{agent} + {cross} acks in {dt} s exceed the capacity"
    );
    // More than 100 pkt/s offered: the link is saturated.
    assert!(
        agent + cross >= 0.97 * bw * dt,
        "{agent} + {cross} in {dt} s"
    );
    // The agent's own statistics agree with its totals.
    let from_steps: f64 = steps
        .iter()
        .map(|s| s.info.throughput_pps * s.info.duration_s)
        .sum();
    assert!(
        (from_steps - agent).abs() < 1e-6 * agent.max(1.0),
        "{from_steps} vs {agent}"
    );
    for s in &steps {
        assert!(
            s.info.mean_rtt_s <= 0.1 + (queue - 1.0) / bw + 1e-9,
            "{:?}",
            s.info
        );
        assert_eq!(s.info.capacity_pps, bw);
    }
    // The cross-traffic sender keeps its rate and closes its own MIs.
    assert_eq!(env.network().senders()[1].rate_pps(), cross_pps);
    let bg = env.last_mi(1);
    assert!(bg.send_end_s > 11.0 && bg.send_dur_s() > 0.0, "{bg:?}");
    for snd in env.network().senders() {
        let t = snd.totals();
        assert_eq!(t.sent, t.acked + t.lost + snd.in_flight() as u64);
    }
    (agent, cross, dt)
}

#[test]
fn two_senders_share_the_bottleneck() {
    // Different rates: the phases drift and each gets a fair part of the link.
    let (agent, cross, dt) = shared_link(70.0, 0.0);
    assert!(
        agent / dt > 35.0 && cross / dt > 35.0,
        "{agent} / {cross} in {dt} s"
    );
}

#[test]
fn equal_rate_senders_both_get_through() {
    // Equal deterministic rates lock the phases, so the split depends on them (with
    // simultaneous sends the lower sender index is served first); both still get through.
    for start in [0.0, 0.005, 0.011] {
        let (agent, cross, dt) = shared_link(80.0, start);
        assert!(
            agent / dt > 10.0 && cross / dt > 10.0,
            "start {start}: {agent} / {cross}"
        );
    }
}

fn outage_link(outages: Vec<OutageConfig>) -> Network {
    let link = Link::fixed(LinkParams {
        bandwidth_pps: 100.0,
        delay_s: 0.05,
        queue_pkts: 2.0,
        loss: 0.0,
    })
    .with_outages(Arc::from(outages));
    Network::new(link, vec![Sender::new(50.0, Pacing::Continuous, 0.0)])
}

#[test]
fn every_packet_sent_during_an_outage_is_lost() {
    // 50 pkt/s under capacity: the only losses are the outage's. Sends at 0.02k; the window
    // [2.01, 2.99) holds k = 101..=149.
    let mut net = outage_link(vec![OutageConfig {
        start_s: 2.01,
        duration_s: 0.98,
        period_s: None,
    }]);
    assert!(net.link().is_down(2.5) && !net.link().is_down(2.0) && !net.link().is_down(2.995));
    assert_eq!(net.link().capacity_pps(2.1, 2.9), 0.0);
    assert!((net.link().capacity_pps(2.0, 4.0) - 100.0 * (1.0 - 0.98 / 2.0)).abs() < 1e-9);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    net.run_until(10.0, &mut rng, |_, _| {});
    let s = &net.senders()[0];
    let t = s.totals();
    assert_eq!(t.lost, 49, "{t:?}");
    assert_eq!(t.acked + t.lost + s.in_flight() as u64, t.sent);
    assert!(s.in_flight() <= 6);

    // Periodic: [1.005, 1.505) every 2 s; each window holds 25 sends (k = 50j+1 ..= 50j+25),
    // five windows before 10 s.
    let mut net = outage_link(vec![OutageConfig {
        start_s: 1.005,
        duration_s: 0.5,
        period_s: Some(2.0),
    }]);
    net.run_until(10.0, &mut rng, |_, _| {});
    assert_eq!(net.senders()[0].totals().lost, 125);
}

#[test]
fn env_mis_resolving_outage_packets_are_all_lost() {
    let mut cfg = fixed(100.0, 0.05, 2.0, 50.0);
    cfg.link.outages = vec![OutageConfig {
        start_s: 2.01,
        duration_s: 0.98,
        period_s: None,
    }];
    let mut env = env_of(cfg);
    let steps = run_to(&mut env, 50.0, 5.0);
    let (mut inside, mut outside) = (0, 0);
    for s in &steps {
        let i = s.info;
        let start = i.time_s - i.duration_s;
        // Packets sent in [2.01, 2.99) resolve 0.1 s later, in [2.11, 3.09).
        if start >= 2.11 && i.time_s < 3.09 {
            assert_eq!(i.throughput_pps, 0.0, "{i:?}");
            // Aurora's recv rate counts one packet fewer than acknowledged: -1 / dur here.
            assert!(
                (i.metric_thr_pps + 1.0 / i.duration_s).abs() < 1e-9,
                "{i:?}"
            );
            assert_eq!(i.mean_rtt_s, 0.0, "{i:?}");
            // At 50 pkt/s a 0.05 s MI resolves at least two packets, all lost.
            assert_eq!(i.loss, 1.0, "{i:?}");
            inside += 1;
        }
        if i.time_s < 2.1 || start > 3.1 {
            assert_eq!(i.loss, 0.0, "{i:?}");
            outside += 1;
        }
        // The capacity of an MI entirely inside the outage is zero.
        if start >= 2.01 && i.time_s < 2.99 {
            assert_eq!(i.capacity_pps, 0.0, "{i:?}");
            assert_eq!(i.utilization, 0.0);
        }
    }
    assert!(inside >= 10, "{inside} MIs inside the outage");
    assert!(outside >= 20);
}

fn write_trace(tag: &str, ms: impl Iterator<Item = u64>) -> std::path::PathBuf {
    let dir = std::env::temp_dir();
    let name = format!("mocc-gym-time-varying-{}-{tag}.trace", std::process::id());
    let text: String = ms.map(|t| format!("{t}\n")).collect();
    std::fs::write(dir.join(&name), text).unwrap();
    dir.join(name)
}

#[test]
fn trace_caps_throughput_at_its_rate() {
    // (spacing in ms, lines): mean rate = lines / period = 1000 / spacing.
    for (spacing, lines) in [(1u64, 1000u64), (5, 200)] {
        let rate = 1000.0 / spacing as f64;
        let trace = write_trace(
            &format!("every-{spacing}ms"),
            (1..=lines).map(|k| k * spacing),
        );
        // A relative trace path is resolved against the scenario file's directory.
        let yaml = format!(
            "link:\n  bandwidth_pps: 7\n  delay_s: 0.02\n  queue_pkts: 20\n  loss: 0\n  trace: {}\n\
             senders:\n  - controller: agent\n    start_rate: {{pps: {}}}\nepisode_mis: 1000000\n",
            trace.file_name().unwrap().to_str().unwrap(),
            rate / 2.0,
        );
        let origin = trace.with_file_name("scenario.yaml");
        let scenario = Scenario::from_yaml_str(&yaml, &origin).unwrap_or_else(|e| panic!("{e}"));
        let _ = std::fs::remove_file(&trace);
        let mut env = Env::new(Arc::new(scenario), 3, 0);
        // Above the trace rate: throughput is the trace rate.
        let steps = run_to(&mut env, 2.0 * rate, 6.0);
        let (thr, n) = throughput_between(&steps, 2.0, 6.0);
        assert!(n > 10);
        assert!(
            (thr - rate).abs() < 0.02 * rate,
            "trace {rate}/s: throughput {thr}"
        );
        for s in &steps {
            assert_eq!(s.info.capacity_pps, rate);
        }
        // Below it: everything gets through.
        let steps = run_to(&mut env, 0.5 * rate, 12.0);
        let (thr, _) = throughput_between(&steps, 8.0, 12.0);
        assert!(
            (thr - 0.5 * rate).abs() < 0.03 * rate,
            "trace {rate}/s: throughput {thr} at half rate"
        );
        for s in steps.iter().filter(|s| s.info.time_s > 8.0) {
            assert_eq!(s.info.loss, 0.0, "{:?}", s.info);
        }
    }
}

#[test]
fn schedule_halving_bandwidth_halves_throughput() {
    let mut cfg = fixed(200.0, 0.05, 10.0, 300.0);
    cfg.link.schedule = vec![ScheduleEntry {
        time_s: 5.0,
        bandwidth_pps: Some(100.0),
        delay_s: None,
        loss: None,
    }];
    let mut env = env_of(cfg);
    let steps = run_to(&mut env, 300.0, 10.0);
    let (before, nb) = throughput_between(&steps, 2.0, 5.0);
    let (after, na) = throughput_between(&steps, 6.0, 10.0);
    assert!(nb > 10 && na > 10);
    assert!((before - 200.0).abs() < 4.0, "before {before}");
    assert!((after - 100.0).abs() < 2.0, "after {after}");
    assert!((after / before - 0.5).abs() < 0.02);
    for s in &steps {
        let i = s.info;
        let start = i.time_s - i.duration_s;
        if i.time_s <= 5.0 {
            assert!((i.capacity_pps - 200.0).abs() < 1e-9, "{i:?}");
        } else if start >= 5.0 {
            assert!((i.capacity_pps - 100.0).abs() < 1e-9, "{i:?}");
        } else {
            assert!(i.capacity_pps > 100.0 && i.capacity_pps < 200.0, "{i:?}");
        }
        assert_eq!(i.base_rtt_s, 0.1);
    }
}

fn latency_ratio(env: &Env) -> f64 {
    let features = &env.scenario().config().observation.features;
    let col = features
        .features()
        .iter()
        .position(|f| *f == Feature::LatencyRatio)
        .expect("latency ratio is an Aurora feature");
    let obs = env.observation();
    f64::from(obs[obs.len() - features.len() + col])
}

/// An agent starting at `pps` on a 100 pkt/s link whose one-way delay goes from 0.05 to 0.15 s
/// at t = 5 (base RTT 0.1 -> 0.3), with the latency baseline `mode`.
fn delay_step_env(mode: BaselineKind, pps: f64) -> Env {
    let mut cfg = fixed(100.0, 0.05, 10.0, pps);
    cfg.link.schedule = vec![ScheduleEntry {
        time_s: 5.0,
        bandwidth_pps: None,
        delay_s: Some(0.15),
        loss: None,
    }];
    cfg.observation.latency_baseline = mode;
    env_of(cfg)
}

/// Latency ratio after each step across the delay step, the sender well under capacity (no
/// queueing).
fn ratios_after_delay_step(mode: BaselineKind) -> Vec<(f64, f64)> {
    let mut env = delay_step_env(mode, 50.0);
    let mut out = Vec::new();
    while env.network().now_s() < 12.0 {
        let s = env.step(Action::Rate(50.0));
        if s.info.mean_rtt_s > 0.0 {
            out.push((s.info.time_s, latency_ratio(&env)));
        }
        let expected_base = if s.info.time_s < 5.0 { 0.1 } else { 0.3 };
        assert_eq!(s.info.base_rtt_s, expected_base);
        if s.info.time_s > 5.5 && s.info.time_s - s.info.duration_s > 5.5 {
            assert!((s.info.mean_rtt_s - 0.3).abs() < 1e-12, "{:?}", s.info);
        }
    }
    out
}

#[test]
fn windowed_min_baseline_follows_a_base_rtt_increase() {
    let conn = ratios_after_delay_step(BaselineKind::ConnectionMin);
    let windowed = ratios_after_delay_step(BaselineKind::WindowedMin { seconds: 2.0 });
    for (name, r) in [("connection_min", &conn), ("windowed_min", &windowed)] {
        let before: Vec<_> = r.iter().filter(|(t, _)| *t > 1.0 && *t < 5.0).collect();
        assert!(before.len() > 10);
        for (t, x) in before {
            assert!((x - 1.0).abs() < 1e-6, "{name} at {t}: ratio {x}");
        }
    }
    // Right after the change the window still holds 0.1 s MIs: both see 0.3 / 0.1.
    for (name, r) in [("connection_min", &conn), ("windowed_min", &windowed)] {
        let early: Vec<_> = r.iter().filter(|(t, _)| *t > 5.6 && *t < 6.9).collect();
        assert!(!early.is_empty());
        for (t, x) in early {
            assert!((x - 3.0).abs() < 1e-5, "{name} at {t}: ratio {x}");
        }
    }
    // Once the window has passed the change, the windowed baseline is the new RTT.
    let late_w: Vec<_> = windowed.iter().filter(|(t, _)| *t > 8.0).collect();
    let late_c: Vec<_> = conn.iter().filter(|(t, _)| *t > 8.0).collect();
    assert!(late_w.len() > 10 && late_c.len() > 10);
    for (t, x) in late_w {
        assert!((x - 1.0).abs() < 1e-6, "windowed_min at {t}: ratio {x}");
    }
    for (t, x) in late_c {
        assert!((x - 3.0).abs() < 1e-5, "connection_min at {t}: ratio {x}");
    }
}

/// Latency ratio at the end of each MI across the delay step, the agent sending at `rate(t)`;
/// the queue never builds (rates under 100).
fn ratios_with_rates(mode: BaselineKind, rate: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
    let mut env = delay_step_env(mode, 90.0);
    let mut out = Vec::new();
    while env.network().now_s() < 12.0 {
        let s = env.step(Action::Rate(rate(env.network().now_s())));
        if s.info.mean_rtt_s > 0.0 {
            out.push((s.info.time_s, latency_ratio(&env)));
        }
    }
    out
}

#[test]
fn drain_aware_baseline_follows_a_base_rtt_increase_once_the_sender_backs_off() {
    // 90 pkt/s until t = 7, then 40 pkt/s: under half of the 90 pkt/s the path delivered.
    let mode = BaselineKind::DrainAware {
        seconds: 10.0,
        drain_fraction: 0.5,
    };
    let backs_off = |t: f64| if t < 7.0 { 90.0 } else { 40.0 };
    let drain = ratios_with_rates(mode, backs_off);
    let windowed = ratios_with_rates(BaselineKind::WindowedMin { seconds: 10.0 }, backs_off);
    let steady = ratios_with_rates(mode, |_| 90.0);
    let in_span = |r: &[(f64, f64)], from: f64, to: f64| -> Vec<f64> {
        r.iter()
            .filter(|(t, _)| *t > from && *t < to)
            .map(|&(_, x)| x)
            .collect()
    };
    for x in in_span(&drain, 1.0, 5.0) {
        assert!((x - 1.0).abs() < 1e-6, "before the step: {x}");
    }
    // At 90 pkt/s nothing tells the new base RTT from a queue: 0.3 / 0.1.
    let at_full_rate = in_span(&drain, 5.6, 7.0);
    assert!(!at_full_rate.is_empty());
    for x in at_full_rate {
        assert!((x - 3.0).abs() < 1e-5, "at full rate after the step: {x}");
    }
    // Backing off to 40 pkt/s with a flat RTT drains: the baseline is the new path's.
    let backed_off = in_span(&drain, 7.5, 12.0);
    assert!(backed_off.len() > 10);
    for x in backed_off {
        assert!((x - 1.0).abs() < 1e-6, "after backing off: {x}");
    }
    // A 10 s windowed minimum still holds the old path, and so does the drain-aware one
    // while the sender never backs off.
    for r in [&windowed, &steady] {
        for x in in_span(r, 7.5, 12.0) {
            assert!((x - 3.0).abs() < 1e-5, "without a drain: {x}");
        }
    }
}

#[test]
fn drain_aware_baseline_keeps_a_standing_queue_after_a_capacity_drop() {
    // 100 pkt/s, 0.1 s base RTT, 50 packets of queue; at t = 5 the capacity falls to 45 pkt/s.
    // The agent overdrives it until t = 6 (a full queue, over a second of delay), then sends
    // 44 pkt/s: under half the 100 pkt/s peak, but the queue drains at 1 pkt/s only.
    let mut cfg = fixed(100.0, 0.05, 50.0, 95.0);
    cfg.link.schedule = vec![ScheduleEntry {
        time_s: 5.0,
        bandwidth_pps: Some(45.0),
        delay_s: None,
        loss: None,
    }];
    cfg.observation.latency_baseline = BaselineKind::DrainAware {
        seconds: 10.0,
        drain_fraction: 0.5,
    };
    let mut env = env_of(cfg);
    let mut after = Vec::new();
    while env.network().now_s() < 12.0 {
        let now = env.network().now_s();
        let rate = if now < 5.0 {
            95.0
        } else if now < 6.0 {
            110.0
        } else {
            44.0
        };
        let s = env.step(Action::Rate(rate));
        if s.info.time_s > 7.0 && s.info.mean_rtt_s > 0.0 {
            assert!(s.info.mean_rtt_s > 0.5, "the queue drained: {:?}", s.info);
            after.push(latency_ratio(&env));
        }
    }
    assert!(after.len() > 5);
    for x in after {
        assert!(
            x > 5.0,
            "the standing queue read as the base RTT: ratio {x}"
        );
    }
}

#[test]
fn on_off_sender_is_silent_while_off() {
    let link = Link::fixed(LinkParams {
        bandwidth_pps: 100.0,
        delay_s: 0.05,
        queue_pkts: 2.0,
        loss: 0.0,
    });
    let pacing = Pacing::OnOff {
        on_s: 1.0,
        off_s: 1.0,
    };
    let mut net = Network::new(link, vec![Sender::new(50.0, pacing, 0.0)]);
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut last_sent = 0;
    while net.now_s() < 10.0 {
        let before = net.now_s();
        net.run_until(before + 1e-6, &mut rng, |_, _| {});
        let now = net.now_s();
        let sent = net.senders()[0].totals().sent;
        if sent > last_sent {
            let phase = now - 2.0 * (now / 2.0).floor();
            assert!(
                !(1.0 + 1e-9..=2.0 - 1e-9).contains(&phase),
                "sent at {now} (phase {phase})"
            );
        }
        last_sent = sent;
    }
    // Five on periods of about 50 sends each.
    let sent = net.senders()[0].totals().sent;
    assert!((245..=255).contains(&sent), "{sent}");
    assert_eq!(net.senders()[0].totals().lost, 0);
}

#[test]
fn yaml_scenario_with_cross_traffic_and_schedule_loads() {
    let yaml = "\
link:
  bandwidth_pps: 100
  delay_s: 0.05
  queue_pkts: 10
  loss: 0
  schedule:
    - {time_s: 1, bandwidth_pps: 50}
    - {time_s: 2, delay_s: 0.1}
  schedule_period_s: 3
  outages:
    - {start_s: 0.5, duration_s: 0.1, period_s: 5}
senders:
  - controller: agent
    start_rate: {pps: 60}
  - controller: {on_off: {on_s: 0.5, off_s: 0.5}}
    start_rate: {pps: 20}
    start_time_s: 0.25
";
    let s =
        Scenario::from_yaml_str(yaml, Path::new("inline.yaml")).unwrap_or_else(|e| panic!("{e}"));
    let link = s.build_link(s.sample_link(&mut ChaCha8Rng::seed_from_u64(0)));
    assert_eq!(link.params_at(0.5).bandwidth_pps, 100.0);
    assert_eq!(link.params_at(1.5).bandwidth_pps, 50.0);
    // Cumulative: the delay step keeps the halved bandwidth.
    assert_eq!(link.params_at(2.5).bandwidth_pps, 50.0);
    assert_eq!(link.params_at(2.5).delay_s, 0.1);
    // Periodic: back to the base at 3 s.
    assert_eq!(link.params_at(3.5).bandwidth_pps, 100.0);
    assert_eq!(link.params_at(3.5).delay_s, 0.05);
    assert!(link.is_down(0.55) && link.is_down(5.55) && !link.is_down(0.65));
    let mut env = Env::new(Arc::new(s), 0, 0);
    let mut prev = env.network().now_s();
    for _ in 0..300 {
        let st = env.step(Action::Delta(0.0));
        assert!(st.info.time_s >= prev);
        prev = st.info.time_s;
        let n = env.network();
        for snd in n.senders() {
            let t = snd.totals();
            assert_eq!(t.sent, t.acked + t.lost + snd.in_flight() as u64);
        }
    }
    assert!(env.network().senders()[1].totals().acked > 0);
}
