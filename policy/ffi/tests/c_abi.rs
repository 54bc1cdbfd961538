//! The C entry points on the shipped MOCC policy: the same rates as the Rust controller (also
//! when the application limits the sender), errors as messages, null pointers refused.

use mocc_policy::{
    Controller, MiLedger, MonitorInterval, Policy, PolicyDriver, RttSummary, BYTES_PER_PACKET,
};
use mocc_policy_ffi::*;
use std::ffi::CString;
use std::path::Path;

fn shipped() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../checkpoints/mocc-omega36")
        .display()
        .to_string()
}

fn mi(k: usize) -> MoccMonitorInterval {
    let t = 0.03 * k as f64;
    let rtt = RttSummary::from_samples(&[0.06, 0.061 + 0.0005 * (k % 5) as f64, 0.063]);
    MoccMonitorInterval {
        bytes_sent: (12 + k % 4) as f64 * BYTES_PER_PACKET,
        bytes_acked: (11 + k % 3) as f64 * BYTES_PER_PACKET,
        bytes_lost: (k % 2) as f64 * BYTES_PER_PACKET,
        send_start_s: t,
        send_end_s: t + 0.03,
        recv_start_s: t + 0.06,
        recv_end_s: t + 0.09,
        rtt_count: rtt.count,
        rtt_mean_s: rtt.mean_s,
        rtt_first_half_mean_s: rtt.first_half_mean_s,
        rtt_second_half_mean_s: rtt.second_half_mean_s,
    }
}

#[test]
fn c_controller_matches_the_rust_controller() {
    let dir = CString::new(shipped()).unwrap();
    let w = [0.6, 0.3, 0.1];
    let mut err = [0 as std::ffi::c_char; 256];
    // SAFETY: valid pointers and lengths throughout.
    unsafe {
        let cc = mocc_controller_new(dir.as_ptr(), w.as_ptr(), err.as_mut_ptr(), err.len());
        assert!(!cc.is_null());
        let mut rust = Controller::new(Policy::load(shipped()).unwrap(), w).unwrap();
        assert_eq!(mocc_controller_reset(cc, 200.0), rust.reset(200.0));
        assert!(mocc_controller_next_mi_duration_s(cc) < 0.0);
        for k in 0..50 {
            let m = mi(k);
            let expect = rust.on_monitor_interval(&MonitorInterval::from(&m));
            assert_eq!(
                mocc_controller_on_monitor_interval(cc, &m),
                expect,
                "MI {k}"
            );
            if k == 25 {
                let lat = [0.1, 0.8, 0.1];
                assert_eq!(mocc_controller_set_objective(cc, lat.as_ptr()), 0);
                rust.set_objective(lat).unwrap();
            }
        }
        assert!(mocc_controller_next_mi_duration_s(cc) > 0.0);
        let bad = [0.5, 0.5, 0.5];
        assert_eq!(mocc_controller_set_objective(cc, bad.as_ptr()), -1);
        assert!(mocc_controller_on_monitor_interval(cc, std::ptr::null()).is_nan());
        mocc_controller_free(cc);
        mocc_controller_free(std::ptr::null_mut());
    }
}

#[test]
fn a_c_flow_fed_packet_events_matches_the_rust_ledger() {
    // A paced sender on a 200 pkt/s path of 30 ms: every packet acknowledged one RTT after it
    // left, a loss every 17th; the C flow and a Rust MiLedger over the same controller see the
    // same events and must give the same rate after every one.
    let dir = CString::new(shipped()).unwrap();
    let w = [0.1, 0.8, 0.1];
    let mut err = [0 as std::ffi::c_char; 256];
    // SAFETY: valid pointers and lengths throughout.
    unsafe {
        let f = mocc_flow_new(dir.as_ptr(), w.as_ptr(), 150.0, err.as_mut_ptr(), err.len());
        assert!(!f.is_null());
        let controller = Controller::new(Policy::load(shipped()).unwrap(), w).unwrap();
        let mut rust = MiLedger::new(PolicyDriver::new(controller, 150.0));
        let t0 = 1000.0;
        let mut rate = mocc_flow_start(f, t0, 0.03);
        assert_eq!(rate, rust.start(t0, 0.03));
        let (mut t, mut decisions) = (t0, 0);
        let mut acks = std::collections::VecDeque::new();
        for k in 0..3000u64 {
            t += 1.0 / rate;
            while acks.front().is_some_and(|&(at, _)| at <= t) {
                let (at, lost) = acks.pop_front().unwrap();
                let expect = if lost {
                    rust.on_lost(at, 1)
                } else {
                    rust.on_acked(at, 0.06)
                };
                decisions += usize::from(expect.is_some());
                rate = if lost {
                    mocc_flow_on_lost(f, at, 1)
                } else {
                    mocc_flow_on_acked(f, at, 0.06)
                };
                assert_eq!(rate, rust.rate_pps(), "event at {at}");
            }
            // Every other send says whether the application had more data; every 50th
            // left it with none.
            let out_of_data = k % 50 == 49;
            if k % 2 == 0 {
                decisions += usize::from(rust.on_sent(t).is_some());
                rate = mocc_flow_on_sent(f, t);
            } else {
                decisions += usize::from(rust.on_sent_limited(t, out_of_data).is_some());
                rate = mocc_flow_on_sent_limited(f, t, i32::from(out_of_data));
            }
            assert_eq!(rate, rust.rate_pps(), "send {k}");
            acks.push_back((t + 0.06, k % 17 == 16));
        }
        assert!(decisions > 100, "{decisions} MIs closed");
        assert!(mocc_flow_on_sent(std::ptr::null_mut(), t).is_nan());
        let bad = [0.5, 0.5, 0.5];
        assert_eq!(mocc_flow_set_objective(f, bad.as_ptr()), -1);
        assert_eq!(mocc_flow_set_objective(f, [0.6, 0.3, 0.1].as_ptr()), 0);
        mocc_flow_free(f);
        mocc_flow_free(std::ptr::null_mut());
    }
}

#[test]
fn failures_come_back_as_messages() {
    let mut err = [0 as std::ffi::c_char; 128];
    let w = [0.6, 0.3, 0.1];
    let missing = CString::new("/nonexistent/policy").unwrap();
    // SAFETY: valid pointers and lengths.
    unsafe {
        let cc = mocc_controller_new(missing.as_ptr(), w.as_ptr(), err.as_mut_ptr(), err.len());
        assert!(cc.is_null());
        let msg = std::ffi::CStr::from_ptr(err.as_ptr()).to_string_lossy();
        assert!(msg.contains("policy.json"), "{msg}");
        let dir = CString::new(shipped()).unwrap();
        let bad = [1.0, 0.0, 0.0];
        let cc = mocc_controller_new(dir.as_ptr(), bad.as_ptr(), err.as_mut_ptr(), err.len());
        assert!(cc.is_null());
        let msg = std::ffi::CStr::from_ptr(err.as_ptr()).to_string_lossy();
        assert!(msg.contains("objective"), "{msg}");
        let cc = mocc_controller_new(std::ptr::null(), w.as_ptr(), std::ptr::null_mut(), 0);
        assert!(cc.is_null());
        let f = mocc_flow_new(
            missing.as_ptr(),
            w.as_ptr(),
            100.0,
            err.as_mut_ptr(),
            err.len(),
        );
        assert!(f.is_null());
        let msg = std::ffi::CStr::from_ptr(err.as_ptr()).to_string_lossy();
        assert!(msg.contains("policy.json"), "{msg}");
        assert!(mocc_controller_reset(std::ptr::null_mut(), 100.0).is_nan());
    }
}

#[test]
fn start_rates_are_clamped_to_the_policys_limits_and_non_rates_refused() {
    let dir = CString::new(shipped()).unwrap();
    let w = [0.6, 0.3, 0.1];
    let max = Policy::load(shipped()).unwrap().spec().action.max_rate_pps;
    let mut err = [0 as std::ffi::c_char; 128];
    // SAFETY: valid pointers and lengths throughout.
    unsafe {
        let cc = mocc_controller_new(dir.as_ptr(), w.as_ptr(), err.as_mut_ptr(), err.len());
        assert!(!cc.is_null());
        // The warm-up MIs pace at the limit, not at 1e300.
        assert_eq!(mocc_controller_reset(cc, 1e300), max);
        assert_eq!(mocc_controller_start(cc, f64::INFINITY, 0.02), max);
        for bad in [f64::NAN, -5.0, 0.0, f64::NEG_INFINITY] {
            assert!(mocc_controller_reset(cc, bad).is_nan(), "{bad}");
            assert!(mocc_controller_start(cc, bad, 0.02).is_nan(), "{bad}");
        }
        mocc_controller_free(cc);
        let f = mocc_flow_new(dir.as_ptr(), w.as_ptr(), 1e300, err.as_mut_ptr(), err.len());
        assert!(!f.is_null());
        assert_eq!(mocc_flow_start(f, 0.0, 0.02), max);
        mocc_flow_free(f);
        let f = mocc_flow_new(
            dir.as_ptr(),
            w.as_ptr(),
            f64::NAN,
            err.as_mut_ptr(),
            err.len(),
        );
        assert!(f.is_null());
        let msg = std::ffi::CStr::from_ptr(err.as_ptr()).to_string_lossy();
        assert!(
            msg.contains("start_rate_pps: must be a positive number"),
            "{msg}"
        );
    }
}

#[test]
fn the_header_declares_every_entry_point() {
    let header = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("include/mocc_policy.h"),
    )
    .unwrap();
    for f in [
        "mocc_controller_new",
        "mocc_controller_reset",
        "mocc_controller_on_monitor_interval",
        "mocc_controller_set_objective",
        "mocc_controller_next_mi_duration_s",
        "mocc_controller_free",
        "mocc_controller_start",
        "mocc_controller_mi_duration_s",
        "mocc_flow_new",
        "mocc_flow_start",
        "mocc_flow_on_sent",
        "mocc_flow_on_sent_limited",
        "mocc_flow_on_acked",
        "mocc_flow_on_lost",
        "mocc_flow_set_objective",
        "mocc_flow_free",
    ] {
        assert!(header.contains(&format!("{f}(")), "{f}");
    }
    // The struct's field order is the Rust one (repr(C)).
    let fields: Vec<&str> = header
        .lines()
        .skip_while(|l| !l.contains("typedef struct MoccMonitorInterval"))
        .take_while(|l| !l.contains("} MoccMonitorInterval;"))
        .filter_map(|l| {
            l.trim()
                .strip_suffix(';')
                .or_else(|| l.split(';').next().filter(|_| l.contains(';')))
        })
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    assert_eq!(
        fields,
        [
            "bytes_sent",
            "bytes_acked",
            "bytes_lost",
            "send_start_s",
            "send_end_s",
            "recv_start_s",
            "recv_end_s",
            "rtt_count",
            "rtt_mean_s",
            "rtt_first_half_mean_s",
            "rtt_second_half_mean_s"
        ]
    );
}
