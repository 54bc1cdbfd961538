//! The extreme (minimum or maximum) of timed samples over a sliding window: the latency
//! baseline's windows, and Copa's 10 s minimum RTT in the gym.

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::VecDeque;

/// `(time, value)` samples of the last `seconds`, minus those that can never be the extreme:
/// a sample no better than a newer one. The front is the window's extreme (the minimum, or the
/// maximum when `MAX`), the back the newest sample, which expiry always keeps.
///
/// It serializes as the list of kept samples, oldest first, and a loaded list is replayed
/// through [`MonotoneWindow::push`], so any time-ordered list (one saved before samples were
/// pruned) loads to the same window.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(transparent)]
pub struct MonotoneWindow<const MAX: bool> {
    samples: VecDeque<(f64, f64)>,
}

/// The minimum over a window.
pub type MinWindow = MonotoneWindow<false>;
/// The maximum over a window.
pub type MaxWindow = MonotoneWindow<true>;

impl<const MAX: bool> MonotoneWindow<MAX> {
    /// Whether `old` can never be the extreme once `new` is in (ties go to the newer).
    fn dominated(old: f64, new: f64) -> bool {
        if MAX {
            old <= new
        } else {
            old >= new
        }
    }

    /// Adds a sample taken at `t` (times must not decrease).
    pub fn push(&mut self, t: f64, value: f64) {
        while self
            .samples
            .back()
            .is_some_and(|&(_, v)| Self::dominated(v, value))
        {
            self.samples.pop_back();
        }
        self.samples.push_back((t, value));
    }

    /// Drops samples taken before `now - seconds`, always keeping the newest.
    pub fn expire(&mut self, now: f64, seconds: f64) {
        while self.samples.len() > 1
            && self
                .samples
                .front()
                .is_some_and(|&(t, _)| t < now - seconds)
        {
            self.samples.pop_front();
        }
    }

    /// The extreme of the window, `None` when it is empty.
    pub fn extreme(&self) -> Option<f64> {
        self.samples.front().map(|&(_, v)| v)
    }

    /// No samples held.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Empties the window, keeping its capacity.
    pub fn clear(&mut self) {
        self.samples.clear();
    }
}

impl<'de, const MAX: bool> Deserialize<'de> for MonotoneWindow<MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut window = Self::default();
        for (t, v) in Vec::<(f64, f64)>::deserialize(d)? {
            window.push(t, v);
        }
        Ok(window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_and_max_over_a_sliding_window_keep_the_newest() {
        let mut lo = MinWindow::default();
        let mut hi = MaxWindow::default();
        for (t, v) in [(0.0, 5.0), (1.0, 3.0), (2.0, 4.0), (3.0, 6.0)] {
            lo.push(t, v);
            hi.push(t, v);
        }
        assert_eq!((lo.extreme(), hi.extreme()), (Some(3.0), Some(6.0)));
        // At t = 3.5 with a 2 s window the sample from t = 1 (3.0) has left: min of 4 and 6.
        lo.expire(3.5, 2.0);
        assert_eq!(lo.extreme(), Some(4.0));
        // Long after, only the newest stays.
        lo.expire(100.0, 2.0);
        hi.expire(100.0, 2.0);
        assert_eq!((lo.extreme(), hi.extreme()), (Some(6.0), Some(6.0)));
        lo.clear();
        assert_eq!(lo.extreme(), None);
    }

    #[test]
    fn a_time_ordered_list_loads_pruned() {
        // Saved before pruning: oldest first, 0.05 then 0.04 -> the minimum is 0.04.
        let w: MinWindow = serde_json::from_str("[[0.0, 0.05], [1.0, 0.04], [2.0, 0.06]]").unwrap();
        assert_eq!(w.extreme(), Some(0.04));
        assert_eq!(
            serde_json::to_string(&w).unwrap(),
            "[[1.0,0.04],[2.0,0.06]]"
        );
    }
}
