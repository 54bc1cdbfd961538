//! A controller's decisions allocate nothing once it exists.

mod common;

use mocc_policy::{
    BaselineMode, Controller, MonitorInterval, Policy, RttSummary, BYTES_PER_PACKET,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

struct CountingAlloc;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn note_allocation() {
    let _ = COUNTING.try_with(|c| {
        if c.get() {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        }
    });
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn allocations_during(f: impl FnOnce()) -> u64 {
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.with(|n| n.get())
}

/// 64 MIs of 30 ms with varying counts, losses and RTTs.
fn intervals() -> Vec<MonitorInterval> {
    (0..64)
        .map(|k| {
            let t = k as f64 * 0.03;
            MonitorInterval {
                bytes_sent: (10 + k % 7) as f64 * BYTES_PER_PACKET,
                bytes_acked: (9 + k % 5) as f64 * BYTES_PER_PACKET,
                bytes_lost: (k % 3) as f64 * BYTES_PER_PACKET,
                send_start_s: t,
                send_end_s: t + 0.03,
                recv_start_s: t + 0.06,
                recv_end_s: t + 0.09,
                rtt: RttSummary::from_samples(&[0.06, 0.061 + 0.001 * (k % 4) as f64]),
            }
        })
        .collect()
}

/// A controller over a random policy with the given latency baseline.
fn controller(preference: bool, baseline: BaselineMode) -> Controller {
    let (mut spec, tensors) = common::random_policy(preference, 9);
    spec.observation.config.latency_baseline = baseline;
    let policy = Policy::from_parts(spec, &tensors, Path::new("mem"), Path::new("mem"))
        .expect("valid policy");
    Controller::new(policy, [0.5, 0.3, 0.2]).unwrap()
}

/// Allocations during a connection over `mis`, an objective change and the same MIs again.
fn connection_allocations(c: &mut Controller, mis: &[MonitorInterval]) -> u64 {
    let mut last = 0.0;
    let n = allocations_during(|| {
        c.reset(100.0);
        for mi in mis {
            last = c.on_monitor_interval(mi);
        }
        c.set_objective([0.2, 0.6, 0.2]).unwrap();
        for mi in mis {
            last = c.on_monitor_interval(mi);
        }
    });
    assert!(last > 0.0);
    n
}

#[test]
fn decisions_do_not_allocate() {
    for preference in [false, true] {
        let mut c = controller(preference, BaselineMode::ConnectionMin);
        let n = connection_allocations(&mut c, &intervals());
        assert_eq!(n, 0, "preference {preference}: {n} allocations");
    }
}

#[test]
fn windowed_baselines_allocate_only_while_their_windows_first_grow() {
    let windowed = [
        BaselineMode::WindowedMin { seconds: 5.0 },
        BaselineMode::DrainAware {
            seconds: 5.0,
            drain_fraction: 0.5,
        },
    ];
    let mis = intervals();
    for baseline in windowed {
        let mut c = controller(false, baseline);
        connection_allocations(&mut c, &mis);
        // A reset keeps the windows' capacity: the next connection allocates nothing.
        let n = connection_allocations(&mut c, &mis);
        assert_eq!(n, 0, "{baseline:?}: {n} allocations");
    }
}
