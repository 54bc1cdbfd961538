//! The `checkpoint:` section ([`CheckpointConfig`]): how often checkpoints are saved and how
//! many are kept.

use serde::{Deserialize, Serialize};

/// Checkpoint cadence and retention.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointConfig {
    /// Save every this many updates (and always at the end).
    #[serde(default = "default_every")]
    pub every_updates: u64,
    /// Keep the newest this many checkpoints (plus the best).
    #[serde(default = "default_keep")]
    pub keep_last: usize,
}

fn default_every() -> u64 {
    10
}
fn default_keep() -> usize {
    3
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        Self {
            every_updates: default_every(),
            keep_last: default_keep(),
        }
    }
}
