//! [`ConfigError`]: what can go wrong reading, overriding and checking a training config.

use mocc_gym::ScenarioError;
use std::path::PathBuf;

/// Errors of training configs.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error(transparent)]
    Io(#[from] mocc_policy::FileError),
    /// YAML that does not fit the schema (unknown field, wrong type).
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A value out of its domain; `field` is the dotted path.
    #[error("{path}: {field}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Dotted field path.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A malformed `--set` override.
    #[error("--set {0}")]
    Override(String),
    /// The scenario could not be used.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}
