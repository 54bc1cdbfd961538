//! What a run folder holds, by name: the checkpoints, the lock, the logs (metrics.csv and
//! TensorBoard event files) and an adaptation's pool. A fresh run accepts a folder holding only
//! these (an earlier attempt of its own), and nothing else.

use crate::checkpoint::CHECKPOINTS_DIR;
use crate::recorder::METRICS_CSV;
use crate::run_lock::LOCK_FILE;

/// File in an adaptation's run folder holding the pool after it (objectives seen so far).
pub const POOL_FILE: &str = "pool.json";

/// Whether `name` is one of a run's logs, which a fresh run in the folder starts afresh.
pub fn is_log(name: &str) -> bool {
    name == METRICS_CSV || (name.starts_with("events.out.tfevents.") && name.ends_with(".mocc"))
}

/// Whether `name` (at the top of a run folder) is something a run writes.
pub fn is_run_entry(name: &str) -> bool {
    is_log(name) || [LOCK_FILE, CHECKPOINTS_DIR, POOL_FILE].contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_folder_holds_its_checkpoints_lock_logs_and_pool_only() {
        for name in ["checkpoints", "mocc.lock", "metrics.csv", "pool.json"] {
            assert!(is_run_entry(name), "{name}");
        }
        assert!(is_log("events.out.tfevents.1700000000.42.mocc"));
        for name in [
            "policy.json",
            "notes.txt",
            "events.out.tfevents.1.other",
            "results.csv",
        ] {
            assert!(!is_run_entry(name), "{name}");
        }
    }
}
