//! A sender fed packet events instead of finished MIs: [`MiLedger`] counts what was sent,
//! acknowledged and lost, cuts monitor intervals by the gym's rule and asks a [`RateDriver`]
//! (a learned [`Controller`], or any rate rule) for the next rate when one closes. A transport
//! then keeps no MI clock and cannot cut MIs differently from training.
//!
//! The rule is the gym's (and PCC-RL's): an MI ends with the first packet event at or after its
//! nominal end, and that event counts in it. The next MI starts at that event and lasts what
//! the driver then asks. The four times of the [`MonitorInterval`] it hands the driver are the
//! MI's own boundaries (`send_start_s = recv_start_s` = its start, `send_end_s = recv_end_s` =
//! its end), not its first and last packets. A policy trained in the simulator has only seen MIs
//! cut this way: at the 10-packet MI floor, cutting just before the send that falls on the
//! boundary (one packet fewer per MI) took the latency-heavy objective's utilization on a real
//! path from 0.85 to 0.3 (docs/real-network.md).
//!
//! Pacing follows the gym too: a new rate applies from the send after the one already
//! scheduled when the MI closed.
//!
//! A transport that knows when its application ran out of data reports its sends with
//! [`MiLedger::on_sent_limited`] (or [`MiLedger::set_app_limited`]): an MI during which the
//! application was out of data (after one of its sends, or already when it began) is
//! application-limited ([`AppLimit::Wholly`] if it was out of data at both ends, else
//! [`AppLimit::Partly`]), and the driver folds it in with [`RateDriver::on_app_limited_mi`]
//! (for a learned policy, the rule of [`crate::app_limited`]). The gym's senders always have
//! data.

use crate::app_limited::AppLimit;
use crate::controller::Controller;
use crate::mi::{MiCounters, MonitorInterval};

/// A rate rule driven by monitor intervals.
pub trait RateDriver: Send {
    /// Starts a connection whose one-way delay is estimated at `one_way_delay_s` (0 when
    /// unknown); returns the first MI's rate (packets/s).
    fn start(&mut self, one_way_delay_s: f64) -> f64;
    /// Length of the next MI (s).
    fn mi_duration_s(&self) -> f64;
    /// Folds in a finished MI; returns the next MI's rate (packets/s).
    fn on_mi(&mut self, mi: &MonitorInterval) -> f64;

    /// Folds in a finished MI in which the application ran out of data to send, as `limit`
    /// says; returns the next MI's rate (packets/s). By default the same as
    /// [`RateDriver::on_mi`].
    fn on_app_limited_mi(&mut self, mi: &MonitorInterval, _limit: AppLimit) -> f64 {
        self.on_mi(mi)
    }

    /// Packets to send back to back when an MI starts ([`crate::SenderLoop::train_packets`]);
    /// by default 1, no trains.
    fn train_packets(&self) -> u32 {
        1
    }
}

impl<D: RateDriver + ?Sized> RateDriver for Box<D> {
    fn start(&mut self, one_way_delay_s: f64) -> f64 {
        (**self).start(one_way_delay_s)
    }
    fn mi_duration_s(&self) -> f64 {
        (**self).mi_duration_s()
    }
    fn on_mi(&mut self, mi: &MonitorInterval) -> f64 {
        (**self).on_mi(mi)
    }

    fn on_app_limited_mi(&mut self, mi: &MonitorInterval, limit: AppLimit) -> f64 {
        (**self).on_app_limited_mi(mi, limit)
    }

    fn train_packets(&self) -> u32 {
        (**self).train_packets()
    }
}

/// A learned policy as a [`RateDriver`]: the deployed [`Controller`] and the rate it starts at.
#[derive(Debug, Clone)]
pub struct PolicyDriver {
    controller: Controller,
    start_rate_pps: f64,
}

impl PolicyDriver {
    /// Drives with `controller`, starting at `start_rate_pps`.
    pub fn new(controller: Controller, start_rate_pps: f64) -> Self {
        Self {
            controller,
            start_rate_pps,
        }
    }

    /// The controller (its last action, observation, objective).
    pub fn controller(&self) -> &Controller {
        &self.controller
    }

    /// The controller, to change its objective.
    pub fn controller_mut(&mut self) -> &mut Controller {
        &mut self.controller
    }
}

impl RateDriver for PolicyDriver {
    fn start(&mut self, one_way_delay_s: f64) -> f64 {
        self.controller.start(self.start_rate_pps, one_way_delay_s)
    }

    fn mi_duration_s(&self) -> f64 {
        self.controller.mi_duration_s()
    }

    fn on_mi(&mut self, mi: &MonitorInterval) -> f64 {
        self.controller.on_monitor_interval(mi)
    }

    fn train_packets(&self) -> u32 {
        self.controller.train_packets()
    }

    fn on_app_limited_mi(&mut self, mi: &MonitorInterval, limit: AppLimit) -> f64 {
        self.controller.on_app_limited_monitor_interval(mi, limit)
    }
}

/// An MI that a packet event closed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClosedMi {
    /// Its statistics, as the driver got them.
    pub mi: MonitorInterval,
    /// The rate the MI was sent at (packets/s).
    pub rate_pps: f64,
    /// The rate the driver set for the next MI (packets/s).
    pub next_rate_pps: f64,
    /// Whether the application ran out of data to send during the MI, and how.
    pub app_limit: AppLimit,
}

/// One flow's monitor intervals, cut from its packet events (see the module docs).
#[derive(Debug, Clone)]
pub struct MiLedger<D> {
    driver: D,
    counters: MiCounters,
    rate_pps: f64,
    end_s: f64,
    /// Whether the application had no more data at the last send.
    out_of_data: bool,
    /// Whether it had none when the MI in progress began.
    began_out_of_data: bool,
    /// Whether it ran out of data during the MI in progress.
    mi_app_limited: bool,
    /// Whether the transport sends the driver's capacity trains ([`MiLedger::sending_trains`]).
    sends_trains: bool,
}

impl<D: RateDriver> MiLedger<D> {
    /// A ledger whose rates and MI lengths come from `driver`; [`MiLedger::start`] begins it.
    pub fn new(driver: D) -> Self {
        Self {
            driver,
            counters: MiCounters::starting_at(0.0),
            rate_pps: 0.0,
            end_s: f64::INFINITY,
            out_of_data: false,
            began_out_of_data: false,
            mi_app_limited: false,
            sends_trains: false,
        }
    }

    /// The same ledger for a transport that sends the driver's capacity trains: it asks
    /// [`MiLedger::packets_due`] before each departure and its acknowledgements are timed per
    /// packet, so that their spacing measures the bottleneck ([`crate::dispersion`]). A
    /// transport that does neither (acknowledgements in frames, its own pacer) leaves the
    /// policy's peak its own.
    pub fn sending_trains(mut self) -> Self {
        self.sends_trains = true;
        self
    }

    /// Packets per capacity train the transport sends (1: none).
    fn train_packets(&self) -> u32 {
        if self.sends_trains {
            self.driver.train_packets().max(1)
        } else {
            1
        }
    }

    /// Starts the connection's first MI at `now_s` (any clock in seconds; every later time is
    /// on the same clock), its one-way delay estimated at `one_way_delay_s` (0 when unknown);
    /// returns the rate to send at (packets/s). The first packet leaves one packet interval
    /// later, as in the gym.
    pub fn start(&mut self, now_s: f64, one_way_delay_s: f64) -> f64 {
        self.rate_pps = self.driver.start(one_way_delay_s);
        self.counters = MiCounters::starting_at(now_s);
        self.counters.measure_trains(self.train_packets() > 1);
        self.end_s = now_s + self.driver.mi_duration_s();
        self.out_of_data = false;
        self.began_out_of_data = false;
        self.mi_app_limited = false;
        self.rate_pps
    }

    /// The rate to send at (packets/s).
    pub fn rate_pps(&self) -> f64 {
        self.rate_pps
    }

    /// When the MI in progress ends at the earliest (its first event at or after this time
    /// closes it); infinite after [`MiLedger::hold`].
    pub fn mi_end_s(&self) -> f64 {
        self.end_s
    }

    /// The driver.
    pub fn driver(&self) -> &D {
        &self.driver
    }

    /// The driver, to change its objective.
    pub fn driver_mut(&mut self) -> &mut D {
        &mut self.driver
    }

    /// How many packets to send back to back now, at the next departure: the driver's train
    /// ([`RateDriver::train_packets`]) when it is the MI's first and the transport sends trains
    /// ([`MiLedger::sending_trains`]), else 1. Each is then told with [`MiLedger::on_sent`] at
    /// that departure, and the next departure is as many packet intervals later.
    pub fn packets_due(&self) -> u32 {
        if self.counters.sent == 0 {
            self.train_packets()
        } else {
            1
        }
    }

    /// A packet left at `t` (its scheduled departure). Returns the MI it closed, if any.
    pub fn on_sent(&mut self, t: f64) -> Option<ClosedMi> {
        self.counters.on_sent();
        self.event_at(t)
    }

    /// [`MiLedger::on_sent`] from a transport that knows whether its application had more
    /// data waiting: `app_limited` when this packet left the application with none (see the
    /// module docs).
    pub fn on_sent_limited(&mut self, t: f64, app_limited: bool) -> Option<ClosedMi> {
        self.set_app_limited(app_limited);
        self.on_sent(t)
    }

    /// Whether the application is out of data (`true`) or has more waiting (`false`) from now
    /// on, for a transport whose sends are not whole packets: set before the send it follows.
    pub fn set_app_limited(&mut self, app_limited: bool) {
        self.out_of_data = app_limited;
        self.mi_app_limited |= app_limited;
    }

    /// How the application limited the MI in progress so far (as if it closed now).
    pub fn app_limit(&self) -> AppLimit {
        match (
            self.mi_app_limited,
            self.began_out_of_data && self.out_of_data,
        ) {
            (false, _) => AppLimit::Not,
            (true, false) => AppLimit::Partly,
            (true, true) => AppLimit::Wholly,
        }
    }

    /// A packet was acknowledged at `t` with an RTT sample of `rtt_s`. Returns the MI it
    /// closed, if any.
    pub fn on_acked(&mut self, t: f64, rtt_s: f64) -> Option<ClosedMi> {
        self.counters.on_acked(t, rtt_s);
        self.event_at(t)
    }

    /// `n` packets were found lost at `t`. Returns the MI that closed, if any (none for
    /// `n = 0`).
    pub fn on_lost(&mut self, t: f64, n: u64) -> Option<ClosedMi> {
        if n == 0 {
            return None;
        }
        self.counters.lost += n;
        self.event_at(t)
    }

    /// From now on no event closes the MI in progress (the flow stopped sending and waits for
    /// its last acknowledgements).
    pub fn hold(&mut self) {
        self.end_s = f64::INFINITY;
    }

    /// Closes the MI in progress at `t` without asking the driver (the flow ended).
    pub fn finish(&mut self, t: f64) -> MonitorInterval {
        self.end_s = f64::INFINITY;
        self.counters.close(t)
    }

    fn event_at(&mut self, t: f64) -> Option<ClosedMi> {
        if t < self.end_s {
            return None;
        }
        let mi = self.counters.close(t);
        let rate_pps = self.rate_pps;
        let app_limit = self.app_limit();
        self.rate_pps = if app_limit.any() {
            self.driver.on_app_limited_mi(&mi, app_limit)
        } else {
            self.driver.on_mi(&mi)
        };
        self.end_s = t + self.driver.mi_duration_s();
        // An application still out of data leaves the next MI application-limited from its
        // start.
        self.began_out_of_data = self.out_of_data;
        self.mi_app_limited = self.out_of_data;
        Some(ClosedMi {
            mi,
            rate_pps,
            next_rate_pps: self.rate_pps,
            app_limit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mi::BYTES_PER_PACKET;

    /// MIs of exactly `packets` sends at the rate it sets, which halves at each MI's end.
    struct Halving {
        rate_pps: f64,
        packets: f64,
    }

    impl RateDriver for Halving {
        fn start(&mut self, _one_way_delay_s: f64) -> f64 {
            self.rate_pps
        }
        fn mi_duration_s(&self) -> f64 {
            self.packets / self.rate_pps
        }
        fn on_mi(&mut self, _mi: &MonitorInterval) -> f64 {
            self.rate_pps /= 2.0;
            self.rate_pps
        }
    }

    /// [`Halving`] whose sender sends 3-packet capacity trains.
    struct Trains(Halving);

    impl RateDriver for Trains {
        fn start(&mut self, one_way_delay_s: f64) -> f64 {
            self.0.start(one_way_delay_s)
        }
        fn mi_duration_s(&self) -> f64 {
            self.0.mi_duration_s()
        }
        fn on_mi(&mut self, mi: &MonitorInterval) -> f64 {
            self.0.on_mi(mi)
        }
        fn train_packets(&self) -> u32 {
            3
        }
    }

    #[test]
    fn a_transport_that_sends_trains_is_asked_for_one_at_each_mis_start() {
        let driver = || {
            Trains(Halving {
                rate_pps: 100.0,
                packets: 10.0,
            })
        };
        // A transport that does not send them is never asked, and measures none.
        let mut plain = MiLedger::new(driver());
        plain.start(0.0, 0.0);
        assert_eq!(plain.packets_due(), 1);
        assert!(plain.counters.dispersion.is_none());
        let mut l = MiLedger::new(driver()).sending_trains();
        l.start(0.0, 0.0);
        assert!(l.counters.dispersion.is_some());
        assert_eq!(l.packets_due(), 3);
        for _ in 0..3 {
            assert!(l.on_sent(0.01).is_none());
        }
        assert_eq!(l.packets_due(), 1, "the rest of the MI is paced");
        // The MI (0.1 s at 100 pkt/s) closes at its first event after 0.1 s.
        let mut t = 0.01;
        while l.on_sent(t).is_none() {
            assert_eq!(l.packets_due(), 1);
            t += 0.01;
        }
        assert_eq!(l.packets_due(), 3, "the next MI starts with a train");
    }

    fn ledger(rate_pps: f64, packets: f64, now_s: f64) -> MiLedger<Halving> {
        let mut l = MiLedger::new(Halving { rate_pps, packets });
        assert_eq!(l.start(now_s, 0.01), rate_pps);
        l
    }

    fn packets(bytes: f64) -> f64 {
        bytes / BYTES_PER_PACKET
    }

    #[test]
    fn the_send_at_the_boundary_counts_in_the_mi_it_closes() {
        // 128 pkt/s: sends every 1/128 s, exact in binary, so the 10th send of an MI of
        // 10/128 s falls exactly on its end, closes it and counts in it.
        let mut l = ledger(128.0, 10.0, 2.0);
        let mut t = 2.0;
        let mut closed = Vec::new();
        for k in 1..=20 {
            t += 1.0 / l.rate_pps();
            if let Some(c) = l.on_sent(t) {
                closed.push((k, c));
            }
        }
        assert_eq!(closed.len(), 2, "{closed:?}");
        let (k0, first) = closed[0];
        let (k1, second) = closed[1];
        assert_eq!((k0, k1), (10, 20));
        assert_eq!(packets(first.mi.bytes_sent), 10.0);
        assert_eq!(packets(second.mi.bytes_sent), 10.0);
        assert_eq!((first.rate_pps, first.next_rate_pps), (128.0, 64.0));
        assert_eq!((second.rate_pps, second.next_rate_pps), (64.0, 32.0));
        // The MIs' own boundaries, on the caller's clock.
        assert_eq!(first.mi.send_start_s, 2.0);
        assert_eq!(first.mi.recv_end_s, 2.0 + 10.0 / 128.0);
        assert_eq!(second.mi.send_start_s, 2.0 + 10.0 / 128.0);
        assert_eq!(second.mi.send_end_s, 2.0 + 10.0 / 128.0 + 10.0 / 64.0);
        assert_eq!(l.mi_end_s(), t + 10.0 / 32.0);
    }

    #[test]
    fn the_first_event_after_the_end_closes_the_mi_and_counts_in_it() {
        let mut l = ledger(100.0, 10.0, 0.0); // the MI ends at 0.1 s
        for k in 0..9 {
            assert!(l.on_sent(0.01 * f64::from(k)).is_none());
        }
        assert!(l.on_acked(0.0999, 0.05).is_none());
        assert!(l.on_lost(0.1002, 0).is_none(), "no loss, no event");
        let c = l.on_lost(0.1003, 2).expect("the losses close the MI");
        assert_eq!(packets(c.mi.bytes_lost), 2.0);
        assert_eq!(packets(c.mi.bytes_acked), 1.0);
        assert_eq!(c.mi.rtt.count, 1);
        assert_eq!(c.mi.send_end_s, 0.1003);
        assert!(l.on_acked(0.1004, 0.07).is_none());
        let last = l.finish(0.2);
        assert_eq!(packets(last.bytes_acked), 1.0);
        assert_eq!(last.send_start_s, 0.1003);
    }

    #[test]
    fn a_held_ledger_keeps_every_late_event_in_its_last_mi() {
        let mut l = ledger(100.0, 10.0, 0.0);
        assert!(l.on_sent(0.01).is_none());
        l.hold();
        assert!(l.on_acked(5.0, 0.05).is_none());
        let last = l.finish(5.0);
        assert_eq!(
            (packets(last.bytes_sent), packets(last.bytes_acked)),
            (1.0, 1.0)
        );
    }
}
