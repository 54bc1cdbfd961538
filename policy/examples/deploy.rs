//! Deploying an exported policy with nothing but `mocc-policy` (no libtorch, no Python).
//!
//! Two ways to feed the controller monitor-interval (MI) statistics:
//!
//! ```text
//! # A paced sender over a toy bottleneck, closed loop (the controller sets the pacing rate):
//! cargo run --release -p mocc-policy --example deploy -- checkpoints/mocc-omega36 link 500 0.03 50
//! # Replay MI statistics recorded by `mocc simulate --mi-out FILE`:
//! cargo run --release -p mocc-policy --example deploy -- checkpoints/mocc-omega36 replay policy/examples/data/mis.csv
//! ```
//!
//! A real sender does what `PacedSender` does here: count bytes sent, acknowledged and lost
//! and collect RTT samples over each MI, close the MI after `rtt_factor x` the last mean RTT,
//! hand the `MonitorInterval` to `Controller::on_monitor_interval` and pace at the rate it
//! returns. The toy bottleneck (a FIFO queue draining at a fixed rate) only stands in for the
//! network.

use mocc_policy::{Controller, MonitorInterval, Policy, RttSummary, BYTES_PER_PACKET};
use std::collections::VecDeque;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!(
                "usage: deploy POLICY_DIR link [BW_PPS DELAY_S QUEUE_PKTS] | deploy POLICY_DIR replay MIS.csv"
            );
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let dir = args.first().ok_or("POLICY_DIR is required")?;
    let policy = Policy::load(dir).map_err(|e| e.to_string())?;
    let objective = policy.spec().default_objective;
    let controller = Controller::new(policy, objective).map_err(|e| e.to_string())?;
    match args.get(1).map(String::as_str) {
        Some("replay") => replay(controller, args.get(2).ok_or("MIS.csv is required")?),
        Some("link") | None => {
            let num = |i: usize, default: f64| -> Result<f64, String> {
                args.get(i).map_or(Ok(default), |s| {
                    s.parse().map_err(|_| format!("not a number: {s:?}"))
                })
            };
            let link = ToyLink::new(num(2, 500.0)?, num(3, 0.03)?, num(4, 50.0)?)?;
            drive(controller, link, 30.0);
            Ok(())
        }
        Some(other) => Err(format!("unknown mode {other:?}")),
    }
}

/// Feeds recorded MIs to the controller and prints each decision.
fn replay(mut controller: Controller, path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    println!("mi,send_pps,mean_rtt_ms,next_rate_pps");
    for (line_no, line) in text.lines().enumerate().skip(1) {
        let mi = MonitorInterval::from_csv_row(line)
            .map_err(|e| format!("{path}:{}: {e}", line_no + 1))?;
        if line_no == 1 {
            // The recording's sender started at its first MI's rate.
            controller.reset(mi.send_rate_pps());
        }
        let rate = controller.on_monitor_interval(&mi);
        println!(
            "{line_no},{:.1},{:.2},{rate:.1}",
            mi.send_rate_pps(),
            mi.avg_latency_s() * 1e3
        );
    }
    Ok(())
}

/// A FIFO bottleneck: `bw_pps` service rate, `queue_pkts` buffer, `delay_s` each way.
struct ToyLink {
    bw_pps: f64,
    delay_s: f64,
    queue_pkts: f64,
    busy_until_s: f64,
}

impl ToyLink {
    fn new(bw_pps: f64, delay_s: f64, queue_pkts: f64) -> Result<Self, String> {
        if !(bw_pps > 0.0 && delay_s > 0.0 && queue_pkts >= 1.0) {
            return Err("need BW_PPS > 0, DELAY_S > 0 and QUEUE_PKTS >= 1".into());
        }
        Ok(Self {
            bw_pps,
            delay_s,
            queue_pkts,
            busy_until_s: 0.0,
        })
    }

    /// Sends one packet at `now`: the time its ack returns, or `Err(t)` with the time its loss
    /// is noticed (when its ack would have arrived over an empty path).
    fn send(&mut self, now: f64) -> Result<f64, f64> {
        let start = self.busy_until_s.max(now);
        if (start - now) * self.bw_pps >= self.queue_pkts {
            return Err(now + 2.0 * self.delay_s + 1.0 / self.bw_pps);
        }
        self.busy_until_s = start + 1.0 / self.bw_pps;
        Ok(self.busy_until_s + 2.0 * self.delay_s)
    }
}

/// What the sender counts during one MI.
#[derive(Default)]
struct MiCounter {
    start_s: f64,
    sent: f64,
    acked: f64,
    lost: f64,
    first_ack_s: Option<f64>,
    last_ack_s: f64,
    rtts: Vec<f64>,
}

impl MiCounter {
    fn close(&mut self, end_s: f64) -> MonitorInterval {
        let mi = MonitorInterval {
            bytes_sent: self.sent * BYTES_PER_PACKET,
            bytes_acked: self.acked * BYTES_PER_PACKET,
            bytes_lost: self.lost * BYTES_PER_PACKET,
            send_start_s: self.start_s,
            send_end_s: end_s,
            recv_start_s: self.first_ack_s.unwrap_or(end_s),
            recv_end_s: self.last_ack_s.max(self.first_ack_s.unwrap_or(end_s)),
            rtt: RttSummary::from_samples(&self.rtts),
            ack_span: None,
            train_pps: None,
        };
        self.start_s = end_s;
        self.sent = 0.0;
        self.acked = 0.0;
        self.lost = 0.0;
        self.first_ack_s = None;
        self.rtts.clear();
        mi
    }
}

/// A paced sender on the toy link for `seconds`, its rate set by the controller.
fn drive(mut controller: Controller, mut link: ToyLink, seconds: f64) {
    let rule = controller.policy().action_rule();
    let mi_spec = controller.policy().spec().monitor_interval;
    let mut rate =
        controller.reset((0.5 * link.bw_pps).clamp(rule.min_rate_pps, rule.max_rate_pps));
    let mut in_flight: VecDeque<(f64, f64, bool)> = VecDeque::new(); // (sent, event time, acked)
    let mut mi = MiCounter::default();
    let first_mi_s = mi_spec.sizing.initial_delay_factor * link.delay_s;
    let mut mi_end = mi_spec.sizing.duration_s(first_mi_s, rate);
    let mut next_send = 0.0;
    let (mut mis, mut acked_total, mut rtt_sum, mut rtt_n) = (0u64, 0.0, 0.0, 0.0f64);
    println!("time_s,rate_pps,thr_pps,mean_rtt_ms,loss");
    while next_send < seconds {
        // Events come in time order: acks/losses due, the MI's end, the next send.
        let due = in_flight.iter().map(|e| e.1).fold(f64::INFINITY, f64::min);
        if due <= next_send.min(mi_end) {
            let k = in_flight.iter().position(|e| e.1 == due).unwrap_or(0);
            let Some((sent_at, at, acked)) = in_flight.remove(k) else {
                continue;
            };
            if acked {
                mi.acked += 1.0;
                mi.first_ack_s.get_or_insert(at);
                mi.last_ack_s = at;
                mi.rtts.push(at - sent_at);
            } else {
                mi.lost += 1.0;
            }
        } else if mi_end <= next_send {
            let closed = mi.close(mi_end);
            rate = controller.on_monitor_interval(&closed);
            mis += 1;
            acked_total += closed.bytes_acked / BYTES_PER_PACKET;
            if closed.rtt.count > 0 {
                rtt_sum += closed.avg_latency_s();
                rtt_n += 1.0;
            }
            if mis % 50 == 0 {
                println!(
                    "{:.2},{rate:.1},{:.1},{:.2},{:.4}",
                    mi_end,
                    closed.throughput_pps(),
                    closed.avg_latency_s() * 1e3,
                    closed.loss_ratio()
                );
            }
            let dur = controller
                .next_mi_duration_s()
                .unwrap_or_else(|| mi_spec.sizing.duration_s(first_mi_s, rate));
            mi_end += dur;
        } else {
            let now = next_send;
            mi.sent += 1.0;
            match link.send(now) {
                Ok(ack) => in_flight.push_back((now, ack, true)),
                Err(noticed) => in_flight.push_back((now, noticed, false)),
            }
            next_send += 1.0 / rate;
        }
    }
    eprintln!(
        "{mis} decisions over {seconds} s: utilization {:.3}, mean RTT {:.1} ms (base {:.1} ms)",
        acked_total / (link.bw_pps * seconds),
        1e3 * rtt_sum / rtt_n.max(1.0),
        2e3 * link.delay_s
    );
}
