//! Errors of scenario and trace loading. Each names the field (or file and line) at fault.

use std::path::PathBuf;

/// Why a scenario or trace could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// A file could not be read.
    #[error(transparent)]
    Io(#[from] mocc_policy::FileError),
    /// The YAML did not parse into a scenario (unknown field, wrong type, bad syntax).
    #[error("{path}: {message}")]
    Parse {
        /// The file (`<inline>` for strings).
        path: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A value outside its domain.
    #[error("{}{field}: {message}", path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default())]
    Invalid {
        /// The scenario file, when known.
        path: Option<PathBuf>,
        /// Dotted path of the field, e.g. `link.bandwidth_pps.min`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A Mahimahi trace line that is malformed or out of order, or an empty trace.
    #[error("{}:{line}: {message}", path.display())]
    Trace {
        /// The trace file.
        path: PathBuf,
        /// 1-based line number (0 for whole-file problems).
        line: usize,
        /// What is wrong.
        message: String,
    },
}

impl ScenarioError {
    /// An invalid value of `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError::Invalid {
            path: None,
            field: field.into(),
            message: message.into(),
        }
    }

    /// Attaches the scenario file to an `Invalid` error.
    pub fn in_file(self, file: &std::path::Path) -> Self {
        match self {
            ScenarioError::Invalid {
                path: None,
                field,
                message,
            } => ScenarioError::Invalid {
                path: Some(file.to_path_buf()),
                field,
                message,
            },
            other => other,
        }
    }
}
