//! Unit tests of MI statistics: hand-computed rates and RTT summaries, capacity trains and
//! CSV rows.

use super::*;

#[test]
fn rtt_tallies_weight_by_samples() {
    let mut a = RttTally::default();
    // Four samples of 0.15 s against 0.1 s, then an MI without samples.
    a.add(&RttSummary::from_samples(&[0.15; 4]), 0.1);
    a.add(&RttSummary::from_samples(&[]), 0.1);
    assert!((a.ratio_sum - 6.0).abs() < 1e-12);
    assert_eq!(a.samples, 4);
    let mut b = RttTally::default();
    b.add(&RttSummary::from_samples(&[0.2, 0.4]), 0.2);
    // (6 + 1 + 2) / 6 samples.
    let mean = RttTally::mean_of([&a, &b]).unwrap();
    assert!((mean - 9.0 / 6.0).abs() < 1e-12);
    assert_eq!(RttTally::mean_of([&RttTally::default()]), None);
    // Base 1 sums the RTTs themselves: (0.2 + 0.4) / 2.
    let mut rtts = RttTally::default();
    rtts.add(&RttSummary::from_samples(&[0.2, 0.4]), 1.0);
    assert!((rtts.mean().unwrap() - 0.3).abs() < 1e-12);
}

#[test]
fn a_sender_that_sends_trains_times_them_and_samples_only_their_first_packet() {
    // Three packets sent at 1.0 s leave a 500 pkt/s bottleneck 2 ms apart; then one paced.
    let acks = [(1.05, 0.05), (1.052, 0.052), (1.054, 0.054), (1.075, 0.05)];
    let mut trains = MiCounters::starting_at(1.0);
    trains.measure_trains(true);
    let mut plain = MiCounters::starting_at(1.0);
    for &(t, rtt) in &acks {
        trains.on_acked(t, rtt);
        plain.on_acked(t, rtt);
    }
    let (with, without) = (trains.close(1.1), plain.close(1.1));
    assert!((with.train_pps.unwrap() - 500.0).abs() < 1e-6);
    assert_eq!((with.rtt.count, with.rtt.mean_s), (2, 0.05));
    assert_eq!((without.train_pps, without.rtt.count), (None, 4));
    assert_eq!(with.bytes_acked, without.bytes_acked);
    // The next MI starts without a train, and a reset sender measures none.
    assert_eq!(trains.close(1.2).train_pps, None);
    trains.measure_trains(false);
    trains.on_acked(1.25, 0.05);
    trains.on_acked(1.252, 0.052);
    assert_eq!(trains.close(1.3).train_pps, None);
}

#[test]
fn csv_rows_round_trip_exactly() {
    let mi = MonitorInterval {
        bytes_sent: 15.0 * BYTES_PER_PACKET,
        bytes_acked: 13.0 * BYTES_PER_PACKET,
        bytes_lost: BYTES_PER_PACKET,
        send_start_s: 0.1,
        send_end_s: 0.1 + 1.0 / 3.0,
        recv_start_s: 0.17,
        recv_end_s: 0.5,
        rtt: RttSummary::from_samples(&[0.07, 0.071, 0.0723]),
        ack_span: Some(AckSpan {
            packets_after_first: 12.0,
            span_s: 0.3 + 1.0 / 7.0,
        }),
        train_pps: Some(800.0 + 1.0 / 3.0),
    };
    assert_eq!(MonitorInterval::CSV_HEADER.split(',').count(), 14);
    assert_eq!(MonitorInterval::from_csv_row(&mi.to_csv_row()).unwrap(), mi);
    // Without a train rate its cell is empty; a row of the 13 columns before it has none.
    let trainless = MonitorInterval {
        train_pps: None,
        ..mi
    };
    let row = trainless.to_csv_row();
    assert!(row.ends_with(','), "{row}");
    assert_eq!(MonitorInterval::from_csv_row(&row).unwrap(), trainless);
    assert_eq!(
        MonitorInterval::from_csv_row(row.trim_end_matches(',')).unwrap(),
        trainless
    );
    // Without a span its cells are empty; a row of the 11 columns before it has none.
    let spanless = MonitorInterval {
        ack_span: None,
        train_pps: None,
        ..mi
    };
    let row = spanless.to_csv_row();
    assert!(row.ends_with(",,,"), "{row}");
    assert_eq!(MonitorInterval::from_csv_row(&row).unwrap(), spanless);
    let old_row = row.trim_end_matches(',');
    assert_eq!(MonitorInterval::from_csv_row(old_row).unwrap(), spanless);
    let err = MonitorInterval::from_csv_row("1,2,3").unwrap_err();
    assert!(err.contains("expected 14 columns"), "{err}");
    let bad = mi.to_csv_row().replacen("22500", "x", 1);
    let err = MonitorInterval::from_csv_row(&bad).unwrap_err();
    assert!(err.starts_with("bytes_sent"), "{err}");
}

#[test]
fn rtt_summary_halves_follow_aurora() {
    // n = 5: half = 2 -> first half [1,2], second half [3,4,5].
    let s = RttSummary::from_samples(&[1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(s.count, 5);
    assert_eq!(s.mean_s, 3.0);
    assert_eq!(s.first_half_mean_s, 1.5);
    assert_eq!(s.second_half_mean_s, 4.0);
    assert_eq!(s.latency_increase_s(), 2.5);
    let one = RttSummary::from_samples(&[0.2]);
    assert_eq!(one.mean_s, 0.2);
    assert_eq!(one.latency_increase_s(), 0.0);
    assert_eq!(RttSummary::from_samples(&[]), RttSummary::default());
}

#[test]
fn rates_and_loss_match_hand_computation() {
    let mi = MonitorInterval {
        bytes_sent: 10.0 * BYTES_PER_PACKET,
        bytes_acked: 6.0 * BYTES_PER_PACKET,
        bytes_lost: 2.0 * BYTES_PER_PACKET,
        send_start_s: 1.0,
        send_end_s: 1.5,
        recv_start_s: 1.0,
        recv_end_s: 1.5,
        rtt: RttSummary::default(),
        ack_span: None,
        train_pps: None,
    };
    assert_eq!(mi.send_rate_pps(), 20.0);
    assert_eq!(mi.throughput_pps(), 12.0);
    assert_eq!(mi.send_rate_bps(), 20.0 * 12000.0);
    assert_eq!(mi.loss_ratio(), 0.25);
    assert_eq!(MonitorInterval::default().loss_ratio(), 0.0);
    assert_eq!(MonitorInterval::default().send_rate_bps(), 0.0);
}

#[test]
fn mi_floor_applies_only_below_min_packets() {
    // 10 packets at 40 pkt/s take 0.25 s: longer than a 0.05 s RTT rule.
    assert_eq!(floored_mi_duration_s(0.05, 10.0, 40.0), 0.25);
    // At 400 pkt/s they take 0.025 s: the RTT rule stands.
    assert_eq!(floored_mi_duration_s(0.05, 10.0, 400.0), 0.05);
    // Off (0) and a sender with no rate leave the RTT rule as is.
    assert_eq!(floored_mi_duration_s(0.05, 0.0, 40.0), 0.05);
    assert_eq!(floored_mi_duration_s(0.05, 10.0, 0.0), 0.05);
    assert_eq!(floored_mi_duration_s(1e7, 0.0, 100.0), MAX_MI_S);
    assert_eq!(floored_mi_duration_s(0.05, 10.0, 1e-3), MAX_MI_S);
    assert_eq!(floored_mi_duration_s(30.0, 0.0, 1e6), 1.0);
}
