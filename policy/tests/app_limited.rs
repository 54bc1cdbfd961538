//! A deployed controller whose application limits the sender (the shipped `mocc-pair`, with
//! its startup and probes): an application-limited MI that the agent would answer with a cut
//! holds the rate instead, raised to twice what the application sent only if it was out of
//! data at both ends; the MI is recorded as any other; a base-RTT probe paces such a sender no
//! slower than its application sends; the ledger classifies MIs by what the transport said.

use mocc_policy::{
    AppLimit, Controller, MiLedger, MonitorInterval, Policy, PolicyDriver, RttSummary,
    BYTES_PER_PACKET,
};
use std::path::PathBuf;
use std::sync::Arc;

const RTC: [f64; 3] = [0.1, 0.8, 0.1];
const BASE_RTT_S: f64 = 0.04;
const CAPACITY_PPS: f64 = 800.0;

fn pair() -> Arc<Policy> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../checkpoints/mocc-pair");
    Arc::new(Policy::load(dir).expect("the shipped pair loads"))
}

/// An MI at `t` of `dur_s` that sent `sent_pps`, of which `lost` was the lost share, with RTT
/// samples around `rtt_s`.
fn mi(t: f64, dur_s: f64, sent_pps: f64, lost: f64, rtt_s: f64) -> MonitorInterval {
    let sent = sent_pps * dur_s * BYTES_PER_PACKET;
    MonitorInterval {
        bytes_sent: sent,
        bytes_acked: sent * (1.0 - lost),
        bytes_lost: sent * lost,
        send_start_s: t,
        send_end_s: t + dur_s,
        recv_start_s: t,
        recv_end_s: t + dur_s,
        rtt: RttSummary::from_samples(&[rtt_s, rtt_s, rtt_s]),
        ack_span: None,
        train_pps: None,
    }
}

/// A controller past its warm-up and startup on a path of [`CAPACITY_PPS`]: each MI sends at
/// the rate, delivers at most the capacity, and the excess queues (a fluid model).
fn settled() -> (Controller, f64) {
    let mut c = Controller::new(pair(), RTC).expect("objective");
    c.start(200.0, BASE_RTT_S / 2.0);
    let (mut t, mut queue) = (0.0, 0.0f64);
    for _ in 0..200 {
        let (rate, dur) = (c.rate_pps(), c.mi_duration_s());
        queue = (queue + (rate - CAPACITY_PPS) * dur).max(0.0);
        let rtt = BASE_RTT_S + queue / CAPACITY_PPS;
        c.on_monitor_interval(&mi(t, dur, rate, 0.0, rtt));
        t += dur;
    }
    assert!(!c.sender_loop().paces_next_mi(), "deciding, not probing");
    (c, t)
}

#[test]
fn an_application_limited_mi_holds_the_rate_the_agent_would_cut() {
    let (mut plain, t) = settled();
    let mut limited = plain.clone();
    let before = plain.rate_pps();
    let dur = plain.mi_duration_s();
    // 40% of the rate sent, one packet in five lost and the RTT doubled: the agent cuts.
    let bad = mi(t, dur, 0.4 * before, 0.2, 2.0 * BASE_RTT_S);
    let cut = plain.on_monitor_interval(&bad);
    assert!(cut < before, "the agent cuts: {cut} from {before}");
    assert_eq!(
        limited.on_app_limited_monitor_interval(&bad, AppLimit::Wholly),
        before
    );
    // Both recorded it: the next decision sees the same history.
    assert_eq!(plain.observation(), limited.observation());
}

#[test]
fn an_application_limited_rate_grows_to_twice_what_the_application_sent() {
    let (mut c, t) = settled();
    let before = c.rate_pps();
    let dur = c.mi_duration_s();
    let sent = 0.8 * before;
    // Data waiting at one end (a burst after a pause): held, not grown.
    let burst = mi(t, dur, sent, 0.0, BASE_RTT_S);
    let mut partly = c.clone();
    assert_eq!(
        partly.on_app_limited_monitor_interval(&burst, AppLimit::Partly),
        before
    );
    let rate = c.on_app_limited_monitor_interval(&burst, AppLimit::Wholly);
    let expected = 2.0 * mi(t, dur, sent, 0.0, BASE_RTT_S).send_rate_pps();
    assert!(
        (rate - expected).abs() < 1e-9 * expected,
        "{rate} {expected}"
    );
    // Then idle (nothing sent): held.
    let idle = c
        .on_app_limited_monitor_interval(&mi(t + dur, dur, 0.0, 0.0, BASE_RTT_S), AppLimit::Wholly);
    assert_eq!(idle, rate);
}

#[test]
fn the_ledger_routes_mis_by_what_the_transport_said() {
    // Two ledgers of one controller fed one event sequence; only the flags differ.
    let (c, _) = settled();
    let start = c.rate_pps();
    let mut told = MiLedger::new(PolicyDriver::new(c.clone(), start));
    let mut plain = MiLedger::new(PolicyDriver::new(c, start));
    told.start(0.0, BASE_RTT_S / 2.0);
    plain.start(0.0, BASE_RTT_S / 2.0);
    let (mut told_mis, mut plain_mis) = (Vec::new(), Vec::new());
    // Sends with data waiting across a bottleneck of CAPACITY_PPS (acks in FIFO order, each a
    // base RTT after its packet's service), until the startup is over and 20 MIs more have
    // closed; then one send that leaves the application out of data; then acks at three base
    // RTTs to an idle application for 20 MIs.
    let (mut t, mut served, mut acks) = (0.0, 0.0f64, std::collections::VecDeque::new());
    let mut after_startup = 0;
    let mut out_of_data = false;
    while after_startup < 40 {
        let send_at = t + 1.0 / told.rate_pps();
        let ack_due = acks.front().copied().unwrap_or(f64::INFINITY);
        let (closed_told, closed_plain) = if out_of_data || ack_due <= send_at {
            t = if out_of_data { t + 0.002 } else { ack_due };
            if !out_of_data {
                acks.pop_front();
            }
            // Idle, the path's RTT grows (another flow's queue): the agent would cut.
            let queued = acks.len() as f64 / CAPACITY_PPS;
            let rtt = if out_of_data {
                3.0 * BASE_RTT_S
            } else {
                BASE_RTT_S + queued
            };
            (told.on_acked(t, rtt), plain.on_acked(t, rtt))
        } else {
            t = send_at;
            served = served.max(t) + 1.0 / CAPACITY_PPS;
            acks.push_back(served + BASE_RTT_S);
            out_of_data = after_startup >= 20;
            (told.on_sent_limited(t, out_of_data), plain.on_sent(t))
        };
        if closed_told.is_some() && !told.driver().controller().sender_loop().in_startup() {
            after_startup += 1;
        }
        told_mis.extend(closed_told);
        plain_mis.extend(closed_plain);
        assert!(t < 60.0, "the startup ends");
    }
    assert_eq!(told_mis.len(), plain_mis.len());
    let limits: Vec<AppLimit> = told_mis.iter().map(|m| m.app_limit).collect();
    let first = limits
        .iter()
        .position(|l| l.any())
        .expect("an app-limited MI");
    assert!(limits[..first].iter().all(|l| !l.any()), "{limits:?}");
    // The MI of the last send began with data waiting; from the next on, out of data.
    assert_eq!(limits[first], AppLimit::Partly);
    assert!(
        limits[first + 1..].iter().all(|&l| l == AppLimit::Wholly),
        "idle stays app-limited: {limits:?}"
    );
    assert!(plain_mis.iter().all(|m| m.app_limit == AppLimit::Not));
    // Identical until the first app-limited MI; from it on, the told ledger never lowers.
    assert_eq!(told_mis[..first], plain_mis[..first]);
    for m in &told_mis[first..] {
        assert!(m.next_rate_pps >= m.rate_pps, "{m:?}");
    }
    assert!(
        plain_mis[first..]
            .iter()
            .any(|m| m.next_rate_pps < m.rate_pps),
        "the agent alone would have cut"
    );
}

#[test]
fn a_burst_after_a_pause_is_partly_limited_and_does_not_grow_the_rate() {
    // A controller's ledger idles (acks only), then the application writes a burst that
    // the pacer sends: the MI that began out of data and ended with data waiting is Partly.
    let (c, _) = settled();
    let start = c.rate_pps();
    let mut l = MiLedger::new(PolicyDriver::new(c, start));
    l.start(0.0, BASE_RTT_S / 2.0);
    let mut t = 0.0;
    let mut mis = Vec::new();
    // Out of data from the first send on, then idle for a few MIs.
    mis.extend(l.on_sent_limited(t, true));
    while mis.len() < 30 || l.driver().controller().sender_loop().in_startup() {
        t += 0.002;
        mis.extend(l.on_acked(t, BASE_RTT_S));
        assert!(t < 60.0, "the startup ends");
    }
    assert_eq!(mis.last().map(|m| m.app_limit), Some(AppLimit::Wholly));
    let held = l.rate_pps();
    // The burst: 2,000 packets back to back over 0.2 s, each with more waiting behind it.
    let mut burst = Vec::new();
    for _ in 0..2000 {
        t += 1e-4;
        burst.extend(l.on_sent_limited(t, false));
    }
    let first = burst.first().expect("the burst closes an MI");
    assert_eq!(first.app_limit, AppLimit::Partly);
    assert!(
        first.mi.send_rate_pps() > 2.0 * held,
        "a burst well above the rate"
    );
    assert_eq!(
        first.next_rate_pps, held,
        "held, not grown to twice the burst"
    );
    assert!(burst[1..].iter().all(|m| m.app_limit == AppLimit::Not));
}

#[test]
fn a_probe_paces_an_application_limited_stream_no_slower_than_it_sends() {
    // A stream at a third of the rate, out of data at both ends of every MI, on a path whose
    // base RTT stepped up by half: the baseline is stale, so the probe timer runs out.
    let (mut c, mut t) = settled();
    let stream = c.rate_pps() / 3.0;
    let mut probe_mis = 0;
    for _ in 0..400 {
        let dur = c.mi_duration_s();
        let m = mi(t, dur, stream, 0.0, 1.5 * BASE_RTT_S);
        let rate = c.on_app_limited_monitor_interval(&m, AppLimit::Wholly);
        t += dur;
        if c.probing() {
            probe_mis += 1;
            let share = c.sender_loop().pacing_rate_pps();
            assert!(
                share < stream,
                "the probe's own share ({share}) is below the stream"
            );
            let sent = m.send_rate_pps();
            assert!(rate >= sent && rate <= c.agent_rate_pps(), "{rate} {sent}");
        }
    }
    assert!(probe_mis > 0, "a probe came");
}
