//! A controller's decisions allocate nothing once it exists.

mod common;

use mocc_policy::{Controller, MonitorInterval, Policy, RttSummary, BYTES_PER_PACKET};
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

#[test]
fn decisions_do_not_allocate() {
    for preference in [false, true] {
        let (spec, tensors) = common::random_policy(preference, 9);
        let policy = Policy::from_parts(spec, &tensors, Path::new("mem"), Path::new("mem"))
            .expect("valid policy");
        let mut c = Controller::new(policy, [0.5, 0.3, 0.2]).unwrap();
        let mis: Vec<MonitorInterval> = (0..64)
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
            .collect();
        let mut last = 0.0;
        let n = allocations_during(|| {
            c.reset(100.0);
            for mi in &mis {
                last = c.on_monitor_interval(mi);
            }
            c.set_objective([0.2, 0.6, 0.2]).unwrap();
            for mi in &mis {
                last = c.on_monitor_interval(mi);
            }
        });
        assert_eq!(n, 0, "preference {preference}: {n} allocations");
        assert!(last > 0.0);
    }
}
