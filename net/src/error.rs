//! Errors of building and running an emulated path. Each names what failed: the command line,
//! the namespace, the file or the field.

/// Why an emulated path could not be built, changed or used.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// A precondition of the host is not met (not root, a tool or /dev/net/tun missing).
    #[error("preflight: {0}")]
    Preflight(String),
    /// A `PathSpec` field outside its domain.
    #[error("path spec: {field}: {message}")]
    InvalidSpec {
        /// The field, e.g. `bandwidth_pps`.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A probe `FlowSpec` field outside its domain.
    #[error("probe flow: {field}: {message}")]
    InvalidFlow {
        /// The field, e.g. `packet_bytes`.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// An external command could not be started.
    #[error("could not run `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An external command exited with a failure status.
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// What it wrote to stderr (trimmed).
        stderr: String,
    },
    /// A system call or file operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, e.g. `setns into mocc-12-0-rtr`.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A helper thread panicked.
    #[error("thread `{0}` panicked")]
    ThreadPanicked(String),
}

impl NetError {
    /// An I/O error while doing `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        NetError::Io {
            what: what.into(),
            source,
        }
    }

    /// The last OS error (errno) while doing `what`.
    pub fn last_os(what: impl Into<String>) -> Self {
        NetError::io(what, std::io::Error::last_os_error())
    }
}

/// Result of this crate.
pub type Result<T> = std::result::Result<T, NetError>;
