//! The `budget:` section ([`BudgetConfig`]): how much to train.

use serde::{Deserialize, Serialize};

/// How much to train.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// Environment steps (MIs over all envs).
    pub env_steps: u64,
}
