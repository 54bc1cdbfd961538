//! The `logging:` section ([`LoggingConfig`]): which logs a run writes.

use serde::{Deserialize, Serialize};

/// What to log.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoggingConfig {
    /// Write TensorBoard event files.
    #[serde(default = "yes")]
    pub tensorboard: bool,
    /// Write metrics.csv.
    #[serde(default = "yes")]
    pub csv: bool,
}

fn yes() -> bool {
    true
}

impl Default for LoggingConfig {
    fn default() -> Self {
        Self {
            tensorboard: true,
            csv: true,
        }
    }
}
