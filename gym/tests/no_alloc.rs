//! Stepping an env allocates nothing, auto-resets of Aurora episodes included.

use mocc_gym::{Action, Env, Scenario, ScenarioConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

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
fn steps_and_resets_do_not_allocate_once_warm() {
    let config = ScenarioConfig {
        episode_mis: 50,
        ..ScenarioConfig::default()
    };
    let scenario = Arc::new(Scenario::new(config, None).expect("valid"));
    let mut env = Env::new(scenario, 11, 0);
    // Warm-up: buffers grow to their working size over a few episodes of every kind of network.
    let drive = |env: &mut Env, steps: usize| {
        for i in 0..steps {
            let a = if i % 7 < 3 { 2.0 } else { -1.5 };
            if env.step(Action::Delta(a)).truncated {
                env.reset(None);
            }
        }
    };
    drive(&mut env, 20_000);
    let n = allocations_during(|| drive(&mut env, 2_000));
    // A rare new high-water mark of in-flight packets may still grow a buffer; a per-step
    // allocation would show up as thousands.
    assert!(n <= 5, "{n} allocations in 2000 steps");
}
