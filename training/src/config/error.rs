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
    /// A value given on the command line (not in a file); the message names the flag.
    #[error("{0}")]
    Argument(String),
    /// The scenario could not be used.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}

/// A deserializer's message in the words of a config file: Rust's type names (`u64`,
/// `struct BudgetConfig`) become what a YAML value must be.
pub fn plain_message(message: &str) -> String {
    let mut out = message.to_string();
    for (rust, plain) in [
        ("expected u64", "expected a whole number >= 0"),
        ("expected u32", "expected a whole number >= 0"),
        ("expected usize", "expected a whole number >= 0"),
        ("expected i64", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("invalid u64", "not a whole number >= 0 (or too large)"),
        ("invalid u32", "not a whole number >= 0 (or too large)"),
        ("invalid usize", "not a whole number >= 0 (or too large)"),
    ] {
        out = out.replace(rust, plain);
    }
    if let Some(i) = out.find("expected struct ") {
        let rest = &out[i + "expected struct ".len()..];
        let name_len = rest
            .find(|c: char| !c.is_alphanumeric() && c != '_')
            .unwrap_or(rest.len());
        out = format!("{}expected a mapping{}", &out[..i], &rest[name_len..]);
    }
    out
}

#[cfg(test)]
mod plain_message_tests {
    use super::plain_message;

    #[test]
    fn rust_type_names_become_what_the_value_must_be() {
        assert_eq!(
            plain_message("invalid type: integer `5`, expected struct BudgetConfig"),
            "invalid type: integer `5`, expected a mapping"
        );
        assert_eq!(
            plain_message("invalid value: integer `-5`, expected u64"),
            "invalid value: integer `-5`, expected a whole number >= 0"
        );
        assert_eq!(
            plain_message("line 2 column 21: invalid u64"),
            "line 2 column 21: not a whole number >= 0 (or too large)"
        );
        assert_eq!(plain_message("unknown field `x`"), "unknown field `x`");
    }
}
