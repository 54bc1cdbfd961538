//! C ABI of the `mocc-policy` runtime (see `include/mocc_policy.h`): load an exported policy
//! and turn packet events (`mocc_flow_*`, which cut MIs as the gym does) or monitor-interval
//! statistics (`mocc_controller_*`) into pacing rates from C, C++ or any language with a C
//! FFI. Every entry point checks its pointers and catches panics; errors come back as
//! messages or sentinel values (NULL, NaN, -1), never as unwinding into C.

use mocc_policy::{Controller, MiLedger, MonitorInterval, Policy, PolicyDriver, RttSummary};
use std::ffi::{c_char, c_double, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`, turning a panic into `fallback` (unwinding into C is undefined behaviour).
fn guarded<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// The C view of [`MonitorInterval`].
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct MoccMonitorInterval {
    /// Bytes sent during the MI.
    pub bytes_sent: c_double,
    /// Bytes acknowledged during the MI.
    pub bytes_acked: c_double,
    /// Bytes detected lost during the MI.
    pub bytes_lost: c_double,
    /// The MI's start (s), as the gym sets it (not its first packet).
    pub send_start_s: c_double,
    /// The MI's end (s), as the gym sets it (not its last packet).
    pub send_end_s: c_double,
    /// The MI's start again (s): the gym's acknowledgement span is the MI itself.
    pub recv_start_s: c_double,
    /// The MI's end again (s).
    pub recv_end_s: c_double,
    /// RTT samples.
    pub rtt_count: u64,
    /// Mean RTT (s).
    pub rtt_mean_s: c_double,
    /// Mean of the first half of the samples (s).
    pub rtt_first_half_mean_s: c_double,
    /// Mean of the second half (s).
    pub rtt_second_half_mean_s: c_double,
}

impl From<&MoccMonitorInterval> for MonitorInterval {
    fn from(m: &MoccMonitorInterval) -> Self {
        MonitorInterval {
            bytes_sent: m.bytes_sent,
            bytes_acked: m.bytes_acked,
            bytes_lost: m.bytes_lost,
            send_start_s: m.send_start_s,
            send_end_s: m.send_end_s,
            recv_start_s: m.recv_start_s,
            recv_end_s: m.recv_end_s,
            rtt: RttSummary {
                count: m.rtt_count,
                mean_s: m.rtt_mean_s,
                first_half_mean_s: m.rtt_first_half_mean_s,
                second_half_mean_s: m.rtt_second_half_mean_s,
            },
            // A caller's own MIs carry no acknowledgement times (the packet-event API's do):
            // a startup falls back to the MI's window.
            ack_span: None,
            train_pps: None,
        }
    }
}

/// An opaque controller handle.
pub struct MoccController(Controller);

/// Copies `msg` into `err` (NUL-terminated, truncated to `err_len`).
unsafe fn write_error(msg: &str, err: *mut c_char, err_len: usize) {
    if err.is_null() || err_len == 0 {
        return;
    }
    let mut n = msg.len().min(err_len - 1);
    while !msg.is_char_boundary(n) {
        n -= 1;
    }
    // SAFETY: the caller guarantees `err` points to `err_len` writable bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(msg.as_ptr().cast::<c_char>(), err, n);
        *err.add(n) = 0;
    }
}

unsafe fn read_objective(objective: *const c_double) -> Option<[f64; 3]> {
    if objective.is_null() {
        return None;
    }
    // SAFETY: the caller guarantees three readable doubles.
    unsafe { Some([*objective, *objective.add(1), *objective.add(2)]) }
}

/// See `mocc_policy.h`.
///
/// # Safety
/// `policy_dir` must be a NUL-terminated string, `objective` three doubles, and `err` (if not
/// null) `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn mocc_controller_new(
    policy_dir: *const c_char,
    objective: *const c_double,
    err: *mut c_char,
    err_len: usize,
) -> *mut MoccController {
    guarded(std::ptr::null_mut(), || {
        // SAFETY: forwarded caller guarantees.
        match unsafe { new_controller(policy_dir, objective) } {
            Ok(c) => Box::into_raw(Box::new(MoccController(c))),
            Err(msg) => {
                // SAFETY: forwarded caller guarantee on `err`.
                unsafe { write_error(&msg, err, err_len) };
                std::ptr::null_mut()
            }
        }
    })
}

/// Loads `policy_dir` and makes a controller for `objective`, or says why not.
unsafe fn new_controller(
    policy_dir: *const c_char,
    objective: *const c_double,
) -> Result<Controller, String> {
    if policy_dir.is_null() {
        return Err("policy_dir is NULL".into());
    }
    // SAFETY: non-null, NUL-terminated by the caller's guarantee.
    let dir = unsafe { CStr::from_ptr(policy_dir) }
        .to_str()
        .map_err(|_| "policy_dir is not valid UTF-8".to_string())?;
    // SAFETY: forwarded caller guarantee.
    let w = unsafe { read_objective(objective) }.ok_or("objective is NULL")?;
    let policy = Policy::load(dir).map_err(|e| e.to_string())?;
    Controller::new(policy, w).map_err(|e| e.to_string())
}

/// See `mocc_policy.h`.
///
/// # Safety
/// `cc` must come from `mocc_controller_new` and not be freed.
#[no_mangle]
pub unsafe extern "C" fn mocc_controller_reset(
    cc: *mut MoccController,
    start_rate_pps: f64,
) -> f64 {
    // SAFETY: caller guarantee.
    let Some(c) = (unsafe { cc.as_mut() }) else {
        return f64::NAN;
    };
    if !valid_start_rate(start_rate_pps) {
        return f64::NAN;
    }
    guarded(f64::NAN, || c.0.reset(start_rate_pps))
}

/// A start rate the C ABI accepts: a positive number (a rate above the policy's limit is
/// clamped to it; NaN, zero or negative is refused rather than replaced).
fn valid_start_rate(start_rate_pps: f64) -> bool {
    start_rate_pps > 0.0
}

/// See `mocc_policy.h`.
///
/// # Safety
/// `cc` must come from `mocc_controller_new` and not be freed.
#[no_mangle]
pub unsafe extern "C" fn mocc_controller_start(
    cc: *mut MoccController,
    start_rate_pps: f64,
    one_way_delay_s: f64,
) -> f64 {
    // SAFETY: caller guarantee.
    let Some(c) = (unsafe { cc.as_mut() }) else {
        return f64::NAN;
    };
    if !valid_start_rate(start_rate_pps) {
        return f64::NAN;
    }
    guarded(f64::NAN, || c.0.start(start_rate_pps, one_way_delay_s))
}

/// See `mocc_policy.h`.
///
/// # Safety
/// `cc` must come from `mocc_controller_new` and not be freed.
#[no_mangle]
pub unsafe extern "C" fn mocc_controller_mi_duration_s(cc: *const MoccController) -> f64 {
    // SAFETY: caller guarantee.
    unsafe { cc.as_ref() }.map_or(f64::NAN, |c| c.0.mi_duration_s())
}

/// See `mocc_policy.h`.
///
/// # Safety
/// `cc` must come from `mocc_controller_new`; `mi` must point to a `MoccMonitorInterval`.
#[no_mangle]
pub unsafe extern "C" fn mocc_controller_on_monitor_interval(
    cc: *mut MoccController,
    mi: *const MoccMonitorInterval,
) -> f64 {
    // SAFETY: caller guarantee.
    match unsafe { (cc.as_mut(), mi.as_ref()) } {
        (Some(c), Some(m)) => guarded(f64::NAN, || {
            c.0.on_monitor_interval(&MonitorInterval::from(m))
        }),
        _ => f64::NAN,
    }
}

/// See `mocc_policy.h`.
///
/// # Safety
/// `cc` must come from `mocc_controller_new`; `objective` must point to three doubles.
#[no_mangle]
pub unsafe extern "C" fn mocc_controller_set_objective(
    cc: *mut MoccController,
    objective: *const c_double,
) -> c_int {
    // SAFETY: caller guarantee.
    let (Some(c), Some(w)) = (unsafe { cc.as_mut() }, unsafe { read_objective(objective) }) else {
        return -1;
    };
    guarded(-1, || match c.0.set_objective(w) {
        Ok(()) => 0,
        Err(_) => -1,
    })
}

/// See `mocc_policy.h`.
///
/// # Safety
/// `cc` must come from `mocc_controller_new` and not be freed.
#[no_mangle]
pub unsafe extern "C" fn mocc_controller_next_mi_duration_s(cc: *const MoccController) -> f64 {
    // SAFETY: caller guarantee.
    unsafe { cc.as_ref() }
        .and_then(|c| c.0.next_mi_duration_s())
        .unwrap_or(-1.0)
}

/// See `mocc_policy.h`.
///
/// # Safety
/// `cc` must come from `mocc_controller_new` and be freed once.
#[no_mangle]
pub unsafe extern "C" fn mocc_controller_free(cc: *mut MoccController) {
    if !cc.is_null() {
        // SAFETY: created by Box::into_raw in mocc_controller_new.
        drop(unsafe { Box::from_raw(cc) });
    }
}

/// An opaque flow handle: a controller fed packet events.
pub struct MoccFlow(MiLedger<PolicyDriver>);

/// See `mocc_policy.h`.
///
/// # Safety
/// `policy_dir` must be a NUL-terminated string, `objective` three doubles, and `err` (if not
/// null) `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn mocc_flow_new(
    policy_dir: *const c_char,
    objective: *const c_double,
    start_rate_pps: f64,
    err: *mut c_char,
    err_len: usize,
) -> *mut MoccFlow {
    guarded(std::ptr::null_mut(), || {
        let made = if valid_start_rate(start_rate_pps) {
            // SAFETY: forwarded caller guarantees.
            unsafe { new_controller(policy_dir, objective) }
        } else {
            Err(format!(
                "start_rate_pps: must be a positive number of packets/s (got {start_rate_pps})"
            ))
        };
        match made {
            Ok(c) => Box::into_raw(Box::new(MoccFlow(MiLedger::new(PolicyDriver::new(
                c,
                start_rate_pps,
            ))))),
            Err(msg) => {
                // SAFETY: forwarded caller guarantee on `err`.
                unsafe { write_error(&msg, err, err_len) };
                std::ptr::null_mut()
            }
        }
    })
}

/// Runs `f` on the flow behind `flow` and returns the rate to pace at after it, or NaN for a
/// null handle or a panic.
unsafe fn with_flow(flow: *mut MoccFlow, f: impl FnOnce(&mut MiLedger<PolicyDriver>)) -> f64 {
    // SAFETY: the caller guarantees `flow` came from `mocc_flow_new` and is not freed.
    match unsafe { flow.as_mut() } {
        Some(fl) => guarded(f64::NAN, || {
            f(&mut fl.0);
            fl.0.rate_pps()
        }),
        None => f64::NAN,
    }
}

/// See `mocc_policy.h`.
///
/// # Safety
/// `flow` must come from `mocc_flow_new` and not be freed.
#[no_mangle]
pub unsafe extern "C" fn mocc_flow_start(
    flow: *mut MoccFlow,
    now_s: f64,
    one_way_delay_s: f64,
) -> f64 {
    // SAFETY: forwarded caller guarantee.
    unsafe {
        with_flow(flow, |l| {
            l.start(now_s, one_way_delay_s);
        })
    }
}

/// See `mocc_policy.h`.
///
/// # Safety
/// `flow` must come from `mocc_flow_new` and not be freed.
#[no_mangle]
pub unsafe extern "C" fn mocc_flow_on_sent(flow: *mut MoccFlow, t_s: f64) -> f64 {
    // SAFETY: forwarded caller guarantee.
    unsafe {
        with_flow(flow, |l| {
            l.on_sent(t_s);
        })
    }
}

/// See `mocc_policy.h`.
///
/// # Safety
/// `flow` must come from `mocc_flow_new` and not be freed.
#[no_mangle]
pub unsafe extern "C" fn mocc_flow_on_sent_limited(
    flow: *mut MoccFlow,
    t_s: f64,
    app_limited: i32,
) -> f64 {
    // SAFETY: forwarded caller guarantee.
    unsafe {
        with_flow(flow, |l| {
            l.on_sent_limited(t_s, app_limited != 0);
        })
    }
}

/// See `mocc_policy.h`.
///
/// # Safety
/// `flow` must come from `mocc_flow_new` and not be freed.
#[no_mangle]
pub unsafe extern "C" fn mocc_flow_on_acked(flow: *mut MoccFlow, t_s: f64, rtt_s: f64) -> f64 {
    // SAFETY: forwarded caller guarantee.
    unsafe {
        with_flow(flow, |l| {
            l.on_acked(t_s, rtt_s);
        })
    }
}

/// See `mocc_policy.h`.
///
/// # Safety
/// `flow` must come from `mocc_flow_new` and not be freed.
#[no_mangle]
pub unsafe extern "C" fn mocc_flow_on_lost(flow: *mut MoccFlow, t_s: f64, packets: u64) -> f64 {
    // SAFETY: forwarded caller guarantee.
    unsafe {
        with_flow(flow, |l| {
            l.on_lost(t_s, packets);
        })
    }
}

/// See `mocc_policy.h`.
///
/// # Safety
/// `flow` must come from `mocc_flow_new`; `objective` must point to three doubles.
#[no_mangle]
pub unsafe extern "C" fn mocc_flow_set_objective(
    flow: *mut MoccFlow,
    objective: *const c_double,
) -> c_int {
    // SAFETY: caller guarantee.
    let (Some(f), Some(w)) = (unsafe { flow.as_mut() }, unsafe {
        read_objective(objective)
    }) else {
        return -1;
    };
    guarded(-1, || {
        match f.0.driver_mut().controller_mut().set_objective(w) {
            Ok(()) => 0,
            Err(_) => -1,
        }
    })
}

/// See `mocc_policy.h`.
///
/// # Safety
/// `flow` must come from `mocc_flow_new` and be freed once.
#[no_mangle]
pub unsafe extern "C" fn mocc_flow_free(flow: *mut MoccFlow) {
    if !flow.is_null() {
        // SAFETY: created by Box::into_raw in mocc_flow_new.
        drop(unsafe { Box::from_raw(flow) });
    }
}
