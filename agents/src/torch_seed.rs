//! Seeded use of libtorch's process-wide RNG.
//!
//! libtorch draws weight initializations from one global generator. Two threads that each seed
//! it and then initialize a model interleave their draws, so neither gets the weights its seed
//! names. Every draw from that generator in this workspace goes through [`with_seed`] (draws a
//! seed names) or [`unseeded`] (draws that are overwritten, such as a model about to be loaded):
//! both hold one process-wide lock, so a seeded draw sees only its own seed's stream.

use std::cell::Cell;
use std::sync::Mutex;

static TORCH_RNG: Mutex<()> = Mutex::new(());

thread_local! {
    /// Whether this thread holds `TORCH_RNG` (so a nested call does not lock it again).
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `draw` holding the lock; nested calls on the holding thread run directly.
fn exclusively<T>(draw: impl FnOnce() -> T) -> T {
    if HOLDING.with(Cell::get) {
        return draw();
    }
    // A panic in another holder leaves nothing half-written here: the lock guards no data.
    let _held = TORCH_RNG
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    HOLDING.with(|h| h.set(true));
    let released = ReleaseOnDrop;
    let out = draw();
    drop(released);
    out
}

/// Clears `HOLDING` when the draw returns or unwinds.
struct ReleaseOnDrop;

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        HOLDING.with(|h| h.set(false));
    }
}

/// Seeds libtorch's global RNG with `seed` and runs `draw` while no other thread draws from it:
/// the result is the same whatever runs beside it.
pub fn with_seed<T>(seed: i64, draw: impl FnOnce() -> T) -> T {
    exclusively(|| {
        tch::manual_seed(seed);
        draw()
    })
}

/// Runs `draw`, whose draws from libtorch's global RNG do not matter, without taking draws from
/// a seeded stream in another thread.
pub fn unseeded<T>(draw: impl FnOnce() -> T) -> T {
    exclusively(draw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind, Tensor};

    fn sum_of_draws() -> Tensor {
        (0..50)
            .map(|_| Tensor::randn([64], (Kind::Float, Device::Cpu)))
            .fold(Tensor::zeros([64], (Kind::Float, Device::Cpu)), |a, b| {
                a + b
            })
    }

    #[test]
    fn concurrent_seeded_draws_are_each_seeds_own() {
        let alone = with_seed(7, sum_of_draws);
        let together: Vec<Tensor> = std::thread::scope(|s| {
            let seeded: Vec<_> = (0..3)
                .map(|_| s.spawn(|| with_seed(7, sum_of_draws)))
                .collect();
            let noise: Vec<_> = (0..3).map(|_| s.spawn(|| unseeded(sum_of_draws))).collect();
            noise
                .into_iter()
                .for_each(|h| drop(h.join().expect("no panic")));
            seeded
                .into_iter()
                .map(|h| h.join().expect("no panic"))
                .collect()
        });
        for t in &together {
            assert!(t.equal(&alone));
        }
        assert!(!with_seed(8, sum_of_draws).equal(&alone));
    }

    #[test]
    fn a_nested_draw_continues_the_outer_stream_without_deadlock() {
        let nested = with_seed(5, || {
            let first = Tensor::randn([4], (Kind::Float, Device::Cpu));
            let second = unseeded(|| Tensor::randn([4], (Kind::Float, Device::Cpu)));
            (first, second)
        });
        let flat = with_seed(5, || {
            let first = Tensor::randn([4], (Kind::Float, Device::Cpu));
            (first, Tensor::randn([4], (Kind::Float, Device::Cpu)))
        });
        assert!(nested.0.equal(&flat.0) && nested.1.equal(&flat.1));
        // The lock was released: another thread can take it.
        std::thread::scope(|s| s.spawn(|| with_seed(1, || ())).join().expect("no panic"));
    }
}
