//! The startup's growth, exits and drain, by hand.

use super::*;
use crate::mi::RttSummary;

/// An MI of `sent` packets over 0.1 s with `acked` of them acknowledged evenly over
/// `recv_s`, `lost` lost, every RTT sample `rtt_s`.
fn mi(sent: f64, acked: f64, lost: f64, recv_s: f64, rtt_s: f64) -> MonitorInterval {
    MonitorInterval {
        bytes_sent: sent * BYTES_PER_PACKET,
        bytes_acked: acked * BYTES_PER_PACKET,
        bytes_lost: lost * BYTES_PER_PACKET,
        send_start_s: 0.0,
        send_end_s: 0.1,
        recv_start_s: 0.0,
        recv_end_s: recv_s,
        rtt: RttSummary::from_samples(&[rtt_s]),
        ack_span: None,
        train_pps: None,
    }
}

#[test]
fn delivery_rate_counts_the_gaps_between_acks() {
    // 11 acks over 0.1 s: 10 gaps of 10 ms, 100 packets/s.
    let d = delivery_rate_pps(&mi(11.0, 11.0, 0.0, 0.1, 0.05)).unwrap();
    assert!((d - 100.0).abs() < 1e-9);
    assert_eq!(delivery_rate_pps(&mi(1.0, 1.0, 0.0, 0.1, 0.05)), None);
    assert_eq!(delivery_rate_pps(&mi(5.0, 5.0, 0.0, 0.0, 0.05)), None);
}

/// A 30 ms MI from `start_s` whose 10 acknowledgements arrive one per 3 ms from 1 ms in (a
/// 333 packets/s bottleneck), every RTT sample `rtt_s`, counted as a sender counts them.
fn counted_mi(start_s: f64, rtt_s: f64) -> MonitorInterval {
    let mut c = crate::MiCounters::starting_at(start_s);
    for i in 0..10 {
        c.on_sent();
        c.on_acked(start_s + 0.001 + 0.003 * f64::from(i), rtt_s);
    }
    c.close(start_s + 0.03)
}

#[test]
fn delivery_rate_times_the_acknowledgements_where_the_mi_has_them() {
    // 9 packets after the first acknowledgement over 27 ms: the bottleneck's 333/s, where
    // the window (9 over 30 ms) reads 300.
    let timed = counted_mi(1.0, 0.06);
    assert!((delivery_rate_pps(&timed).unwrap() - 1.0 / 0.003).abs() < 1e-6);
    let untimed = MonitorInterval {
        ack_span: None,
        train_pps: None,
        ..timed
    };
    assert!((delivery_rate_pps(&untimed).unwrap() - 300.0).abs() < 1e-6);
    // Five acknowledgements 0.6 ms apart in a 20 ms MI (a held ACK frame, a handshake's small
    // packets): too few to time; the window's count (4 over 20 ms) stands.
    let mut c = crate::MiCounters::starting_at(2.0);
    for i in 0..5 {
        c.on_acked(2.001 + 0.0006 * f64::from(i), 0.04);
    }
    let bunched = c.close(2.02);
    assert!(bunched.ack_span.unwrap().delivery_rate_pps().unwrap() > 1600.0);
    assert!((delivery_rate_pps(&bunched).unwrap() - 200.0).abs() < 1e-6);
}

#[test]
fn hands_the_agent_the_bottlenecks_rate_at_ten_packets_per_mi() {
    let s = Startup {
        max_drain_mis: 0,
        ..Startup::default()
    };
    let mut st = StartupState::begin(Some(&s));
    let mut rate = 200.0;
    for (k, rtt) in [0.06, 0.06, 0.08].into_iter().enumerate() {
        match st.on_mi(&s, &counted_mi(0.03 * k as f64, rtt), rate, 1e5) {
            StartupStep::Pace(next) => rate = next,
            StartupStep::Exit(agent, why) => {
                assert_eq!((k, why), (2, StartupExit::Queue));
                assert!((agent - 1.0 / 0.003).abs() < 1e-6, "{agent}");
                return;
            }
        }
    }
    panic!("the queue did not end the startup");
}

#[test]
fn grows_by_the_factor_until_the_rtt_rises() {
    let s = Startup {
        growth_per_mi: 2.0,
        exit_latency_ratio: 1.25,
        max_drain_mis: 0,
        ..Startup::default()
    };
    let mut st = StartupState::begin(Some(&s));
    assert!(st.running());
    // Delivery doubles with the rate: never flat. RTT 50 ms, then 62.4 (within 1.25), then
    // 63 ms (above): it ends there, at the best delivery rate, 400 pkt/s (no drain).
    assert_eq!(
        st.on_mi(&s, &mi(11.0, 11.0, 0.0, 0.1, 0.05), 100.0, 1e5),
        StartupStep::Pace(200.0)
    );
    assert_eq!(
        st.on_mi(&s, &mi(21.0, 21.0, 0.0, 0.1, 0.0624), 200.0, 1e5),
        StartupStep::Pace(400.0)
    );
    assert_eq!(
        st.on_mi(&s, &mi(41.0, 41.0, 0.0, 0.1, 0.063), 400.0, 1e5),
        StartupStep::Exit(400.0, StartupExit::Queue)
    );
    assert!(!st.running());
    assert_eq!(st.exit(), Some(StartupExit::Queue));
}

#[test]
fn the_drain_paces_at_its_fraction_until_the_rtt_is_back() {
    let s = Startup {
        growth_per_mi: 2.0,
        exit_latency_ratio: 1.25,
        drain_rate_fraction: 0.5,
        max_drain_mis: 3,
        ..Startup::default()
    };
    // The second MI paced 200 pkt/s where the path delivered 140 (14 gaps over 0.1 s):
    // the queue is the startup's own, and it drains.
    let run = |rtts: &[f64]| {
        let mut st = StartupState::begin(Some(&s));
        let mut steps = vec![
            st.on_mi(&s, &mi(11.0, 11.0, 0.0, 0.1, 0.05), 100.0, 1e5),
            st.on_mi(&s, &mi(21.0, 15.0, 0.0, 0.1, 0.07), 200.0, 1e5),
        ];
        assert!(st.draining());
        // Drain MIs follow the growth's (which ended at 0.1 s), 0.1 s apart.
        for (k, &rtt) in rtts.iter().enumerate() {
            let start = 0.1 * (k + 1) as f64;
            let drain_mi = MonitorInterval {
                send_start_s: start,
                send_end_s: start + 0.1,
                recv_start_s: start,
                recv_end_s: start + 0.1,
                ..mi(10.0, 10.0, 0.0, 0.1, rtt)
            };
            steps.push(st.on_mi(&s, &drain_mi, 70.0, 1e5));
        }
        (steps, st)
    };
    // Best delivery 140 pkt/s: drain at 70 while the RTT stays above 1.1 x 50 ms.
    let (steps, st) = run(&[0.06, 0.054]);
    assert_eq!(
        steps,
        [
            StartupStep::Pace(200.0),
            StartupStep::Pace(70.0),
            StartupStep::Pace(70.0),
            StartupStep::Exit(140.0, StartupExit::Queue),
        ]
    );
    assert!(!st.running() && !st.draining());
    // The first drain MI's acknowledgements are of the growth's last packets (it began less
    // than the lowest RTT, 50 ms, after the drain): their RTT, not yet showing the queue,
    // does not end the drain; the next MI's does.
    let (steps, _) = run(&[0.05, 0.054]);
    assert_eq!(steps[2], StartupStep::Pace(70.0));
    assert_eq!(steps[3], StartupStep::Exit(140.0, StartupExit::Queue));
    // A queue that stays: the drain ends after max_drain_mis all the same.
    let (steps, _) = run(&[0.07, 0.07, 0.07]);
    assert_eq!(steps[4], StartupStep::Exit(140.0, StartupExit::Queue));
    // Cut short by a probe while draining: the agent gets the settled rate.
    let mut st = StartupState::begin(Some(&s));
    st.on_mi(&s, &mi(11.0, 11.0, 0.0, 0.1, 0.05), 100.0, 1e5);
    st.on_mi(&s, &mi(21.0, 15.0, 0.0, 0.1, 0.07), 200.0, 1e5);
    assert_eq!(st.end(70.0), 140.0);
    // Cut short while growing: the best delivery rate, not above the paced rate.
    let mut st = StartupState::begin(Some(&s));
    st.on_mi(&s, &mi(21.0, 21.0, 0.0, 0.1, 0.05), 100.0, 1e5);
    assert_eq!(st.end(150.0), 150.0);
    assert_eq!(st.exit(), Some(StartupExit::Probe));
    // Delivered as fast as it paced: the queue is not the startup's, nothing drains.
    let mut st = StartupState::begin(Some(&s));
    st.on_mi(&s, &mi(11.0, 11.0, 0.0, 0.1, 0.05), 100.0, 1e5);
    assert_eq!(
        st.on_mi(&s, &mi(21.0, 21.0, 0.0, 0.1, 0.07), 200.0, 1e5),
        StartupStep::Exit(200.0, StartupExit::Queue)
    );
    assert!(!st.running());
}

#[test]
fn a_busy_path_skips_the_startup_at_the_start_rate() {
    let s = Startup::default();
    // A warm-up MI at 60 ms after one at 50 ms (above 1.15 x 50): others keep a queue.
    let mut st = StartupState::begin(Some(&s));
    assert!(!st.on_warmup_mi(&s, &mi(10.0, 10.0, 0.0, 0.1, 0.05)));
    assert!(st.running());
    assert!(st.on_warmup_mi(&s, &mi(10.0, 10.0, 0.0, 0.1, 0.06)));
    assert!(!st.running());
    assert_eq!(st.exit(), Some(StartupExit::BusyPath));
    // Heavy loss in the warm-up does the same.
    let mut st = StartupState::begin(Some(&s));
    assert!(st.on_warmup_mi(&s, &mi(10.0, 7.0, 3.0, 0.1, 0.05)));
    // The first startup MI, still at the start rate, sees the queue the warm-up did not:
    // the agent keeps the start rate, and nothing drains.
    let mut st = StartupState::begin(Some(&s));
    st.on_warmup_mi(&s, &mi(10.0, 10.0, 0.0, 0.1, 0.05));
    assert_eq!(
        st.on_mi(&s, &mi(10.0, 8.0, 0.0, 0.1, 0.07), 100.0, 1e5),
        StartupStep::Exit(100.0, StartupExit::BusyPath)
    );
    // Without the skip the same MI ends the growth as a queue, at what was delivered.
    let keep = Startup {
        skip_busy_path: false,
        ..s
    };
    let mut st = StartupState::begin(Some(&keep));
    assert!(!st.on_warmup_mi(&keep, &mi(10.0, 10.0, 0.0, 0.1, 0.05)));
    assert!(!st.on_warmup_mi(&keep, &mi(10.0, 10.0, 0.0, 0.1, 0.06)));
    assert!(st.running());
    assert_eq!(
        st.on_mi(&keep, &mi(11.0, 11.0, 0.0, 0.1, 0.07), 100.0, 1e5),
        StartupStep::Exit(100.0, StartupExit::Queue)
    );
}

#[test]
fn the_newer_half_of_the_samples_tells_the_queue() {
    let s = Startup::default();
    let mut st = StartupState::begin(Some(&s));
    st.on_warmup_mi(&s, &mi(10.0, 10.0, 0.0, 0.1, 0.05));
    assert_eq!(
        st.on_mi(&s, &mi(11.0, 11.0, 0.0, 0.1, 0.05), 100.0, 1e5),
        StartupStep::Pace(100.0 * s.growth_per_mi)
    );
    // Mean 56.5 ms (within 1.15 x 50), its newer half 60 ms (above): the growth ends.
    let mut rising = mi(15.0, 15.0, 0.0, 0.1, 0.05);
    rising.rtt = RttSummary::from_samples(&[0.053, 0.053, 0.06, 0.06]);
    assert!(rising.avg_latency_s() < s.exit_latency_ratio * 0.05);
    st.on_mi(&s, &rising, 141.0, 1e5);
    assert_eq!(st.exit(), Some(StartupExit::Queue));
}

#[test]
fn a_flat_delivery_rate_ends_it_after_the_plateau_mis() {
    let s = Startup::default();
    let mut st = StartupState::begin(Some(&s));
    // Delivery 100, then 120, 124, 125 pkt/s: each within 1.25 of the best before it.
    let flat = |st: &mut StartupState, rtt_s: f64| {
        let mut steps = Vec::new();
        for acked in [11.0, 13.0, 13.4, 13.5] {
            steps.push(st.on_mi(&s, &mi(acked, acked, 0.0, 0.1, rtt_s), 1000.0, 1e5));
        }
        steps
    };
    let steps = flat(&mut st, 0.05);
    assert!(steps[..3].iter().all(|s| matches!(s, StartupStep::Pace(_))));
    // The path was never queued: no drain, and the agent gets 125.
    match steps[3] {
        StartupStep::Exit(r, StartupExit::Plateau) => assert!((r - 125.0).abs() < 1e-9),
        other => panic!("{other:?}"),
    }
    assert!(!st.running());
    // A plateau whose last MI sent 1,000 pkt/s where 125 came through drains at 0.75 x
    // 125 first: the queue is the startup's own.
    let mut st = StartupState::begin(Some(&s));
    st.on_mi(&s, &mi(11.0, 11.0, 0.0, 0.1, 0.05), 100.0, 1e5);
    let mut last = StartupStep::Pace(0.0);
    for acked in [13.0, 13.4, 13.5] {
        last = st.on_mi(&s, &mi(100.0, acked, 0.0, 0.1, 0.056), 1000.0, 1e5);
    }
    match last {
        StartupStep::Pace(r) => assert!((r - 93.75).abs() < 1e-9, "{r}"),
        other => panic!("{other:?}"),
    }
    assert!(st.draining());
    assert_eq!(st.exit(), Some(StartupExit::Plateau));
}

#[test]
fn heavy_loss_and_the_maximum_end_it_light_loss_does_not() {
    let s = Startup::default();
    let mut st = StartupState::begin(Some(&s));
    // 5% loss goes on; 30% ends the growth.
    st.on_mi(&s, &mi(20.0, 19.0, 1.0, 0.1, 0.05), 200.0, 1e5);
    assert_eq!(st.exit(), None);
    // Loss without a queue in the RTT: the agent gets the best delivery rate (27 / 0.1 s),
    // no drain.
    assert_eq!(
        st.on_mi(&s, &mi(40.0, 28.0, 12.0, 0.1, 0.05), 283.0, 1e5),
        StartupStep::Exit(270.0, StartupExit::Loss)
    );
    assert_eq!(st.exit(), Some(StartupExit::Loss));
    // With a queue showing, heavy loss after sending 390 pkt/s where 270 came through
    // drains at 0.75 x 270 first.
    let mut st = StartupState::begin(Some(&s));
    st.on_mi(&s, &mi(20.0, 19.0, 1.0, 0.1, 0.05), 200.0, 1e5);
    assert_eq!(
        st.on_mi(&s, &mi(40.0, 28.0, 12.0, 0.1, 0.056), 283.0, 1e5),
        StartupStep::Pace(202.5)
    );
    assert_eq!(st.exit(), Some(StartupExit::Loss));
    // At the maximum the rate stays until the delivery rate is flat for the plateau MIs;
    // the RTT never rose, so the agent gets the delivery rate with no drain.
    let mut st = StartupState::begin(Some(&s));
    assert_eq!(
        st.on_mi(&s, &mi(91.0, 91.0, 0.0, 0.1, 0.05), 900.0, 1000.0),
        StartupStep::Pace(1000.0)
    );
    for _ in 1..s.plateau_mis {
        assert_eq!(
            st.on_mi(&s, &mi(99.0, 99.0, 0.0, 0.1, 0.05), 1000.0, 1000.0),
            StartupStep::Pace(1000.0)
        );
    }
    match st.on_mi(&s, &mi(99.0, 99.0, 0.0, 0.1, 0.05), 1000.0, 1000.0) {
        StartupStep::Exit(r, StartupExit::MaxRate) => assert!((r - 980.0).abs() < 1e-9),
        other => panic!("{other:?}"),
    }
    assert!(!st.running());
    // A maximum above the link: the queue ends it; pacing 1,000 against 900 delivered,
    // it drains at 0.75 x 900 first.
    let mut st = StartupState::begin(Some(&s));
    st.on_mi(&s, &mi(91.0, 91.0, 0.0, 0.1, 0.05), 900.0, 1000.0);
    assert_eq!(
        st.on_mi(&s, &mi(95.0, 81.0, 0.0, 0.1, 0.07), 1000.0, 1000.0),
        StartupStep::Pace(675.0)
    );
    assert_eq!(st.exit(), Some(StartupExit::Queue));
    assert!(!StartupState::begin(None).running());
}

#[test]
fn validation_names_fields_and_defaults_read() {
    let field = |s: Startup| {
        s.validate()
            .map_err(|RateError::Invalid { field, .. }| field)
    };
    assert_eq!(field(Startup::default()), Ok(()));
    for (s, want) in [
        (
            Startup {
                growth_per_mi: 1.0,
                ..Startup::default()
            },
            "startup.growth_per_mi",
        ),
        (
            Startup {
                exit_latency_ratio: 1.0,
                ..Startup::default()
            },
            "startup.exit_latency_ratio",
        ),
        (
            Startup {
                exit_loss_ratio: 0.0,
                ..Startup::default()
            },
            "startup.exit_loss_ratio",
        ),
        (
            Startup {
                plateau_growth: f64::NAN,
                ..Startup::default()
            },
            "startup.plateau_growth",
        ),
        (
            Startup {
                plateau_mis: 0,
                ..Startup::default()
            },
            "startup.plateau_mis",
        ),
        (
            Startup {
                drain_rate_fraction: 1.0,
                ..Startup::default()
            },
            "startup.drain_rate_fraction",
        ),
        (
            Startup {
                drained_latency_ratio: 0.9,
                ..Startup::default()
            },
            "startup.drained_latency_ratio",
        ),
        (
            Startup {
                max_drain_mis: 101,
                ..Startup::default()
            },
            "startup.max_drain_mis",
        ),
    ] {
        assert_eq!(field(s), Err(want));
    }
    let read: Startup = serde_json::from_str("{}").unwrap();
    assert_eq!(read, Startup::default());
    assert!(serde_json::from_str::<Startup>(r#"{"growth": 2}"#).is_err());
}

#[test]
fn an_mi_with_no_feedback_holds_the_rate() {
    let s = Startup {
        growth_per_mi: 2.0,
        exit_latency_ratio: 1.25,
        ..Startup::default()
    };
    let silent = MonitorInterval {
        rtt: RttSummary::default(),
        ..mi(10.0, 0.0, 0.0, 0.0, 0.0)
    };
    let mut st = StartupState::begin(Some(&s));
    // Three MIs before the first acknowledgement: the rate holds at the start rate...
    for _ in 0..3 {
        assert_eq!(st.on_mi(&s, &silent, 100.0, 1e5), StartupStep::Pace(100.0));
    }
    assert!(st.running());
    // ...and the first MI that hears back is the startup's first: it grows from the start
    // rate, or, when it already loses heavily at that rate, meets a busy path.
    let mut heard = st;
    assert_eq!(
        heard.on_mi(&s, &mi(11.0, 11.0, 0.0, 0.1, 0.05), 100.0, 1e5),
        StartupStep::Pace(200.0)
    );
    let mut lossy = st;
    assert_eq!(
        lossy.on_mi(&s, &mi(10.0, 0.0, 5.0, 0.0, 0.0), 100.0, 1e5),
        StartupStep::Exit(100.0, StartupExit::BusyPath)
    );
}

#[test]
fn acks_of_what_left_while_the_rate_held_do_not_make_a_plateau() {
    let s = Startup {
        growth_per_mi: 2.0,
        exit_latency_ratio: 1.25,
        plateau_mis: 3,
        ..Startup::default()
    };
    // `sent` packets from `start` s for 10 ms, `acked` of them over the same 10 ms, RTT 40 ms.
    let at = |start: f64, sent: f64, acked: f64| MonitorInterval {
        send_start_s: start,
        send_end_s: start + 0.01,
        recv_start_s: start,
        recv_end_s: start + 0.01,
        ..mi(sent, acked, 0.0, 0.01, 0.04)
    };
    let silent = |start: f64| MonitorInterval {
        rtt: RttSummary::default(),
        ..at(start, 10.0, 0.0)
    };
    let run = |held: bool| {
        let mut st = StartupState::begin(Some(&s));
        let mut t = 0.0;
        if held {
            // The first round trip: four MIs at the start rate hear nothing.
            for _ in 0..4 {
                assert_eq!(
                    st.on_mi(&s, &silent(t), 1000.0, 1e5),
                    StartupStep::Pace(1000.0)
                );
                t += 0.01;
            }
        }
        // Then a round trip of acks of what left at 1,000 packets/s (11 per 10 ms), while
        // the rate doubles every MI.
        let mut rate = 1000.0;
        let mut steps = Vec::new();
        for _ in 0..4 {
            let step = st.on_mi(&s, &at(t, rate / 100.0, 11.0), rate, 1e5);
            steps.push(step);
            if let StartupStep::Pace(r) = step {
                rate = r;
            }
            t += 0.01;
        }
        (steps, st.exit())
    };
    // After a hold, the held rate's acks are not a plateau: the growth goes on.
    let (after_hold, exit) = run(true);
    assert_eq!(exit, None);
    assert!(
        after_hold.iter().all(|s| matches!(s, StartupStep::Pace(_))),
        "{after_hold:?}"
    );
    assert_eq!(after_hold[3], StartupStep::Pace(16000.0));
    // Without a hold, four flat MIs are a plateau, as they always were; it sent 8,000
    // packets/s where 1,000 came through, and drains at 0.75 x 1,000 first.
    let (no_hold, exit) = run(false);
    assert_eq!(exit, Some(StartupExit::Plateau));
    match no_hold[3] {
        StartupStep::Pace(r) => assert!((r - 750.0).abs() < 1e-9, "{r}"),
        other => panic!("{other:?}"),
    }
}
