//! What can go wrong writing or loading an export (every variant names the file and the field
//! or tensor at fault), and the error of an `action:` section's parameters (the rate rule,
//! base-RTT probes, the mode switch).

use std::path::{Path, PathBuf};

/// Why an export could not be written or loaded; every variant names the file and the field or
/// tensor at fault.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A file is missing or unreadable (or could not be written).
    #[error(transparent)]
    Io(#[from] FileError),
    /// `policy.json` is not valid JSON of the expected shape.
    #[error("{path}: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's message (names the field and line).
        message: String,
    },
    /// The export was written by an incompatible format version.
    #[error(
        "{path}: format_version {found} is not supported (this build reads version {supported})"
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: String,
        /// The version this build reads.
        supported: u32,
    },
    /// The weights file's SHA-256 differs from the one recorded in `policy.json`.
    #[error("{path}: SHA-256 {actual} does not match weights.sha256 {expected} in policy.json (the weights were modified or belong to another export)")]
    Checksum {
        /// The weights file.
        path: PathBuf,
        /// Recorded checksum.
        expected: String,
        /// Checksum of the file.
        actual: String,
    },
    /// The weights file is not a valid safetensors file.
    #[error("{path}: not a valid safetensors file: {message}")]
    Weights {
        /// The weights file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A tensor the architecture needs is absent.
    #[error("{path}: tensor {name:?} is missing (architecture in policy.json needs it)")]
    MissingTensor {
        /// The weights file.
        path: PathBuf,
        /// Tensor name.
        name: String,
    },
    /// A tensor the architecture does not describe.
    #[error("{path}: tensor {name:?} is not part of the architecture in policy.json")]
    UnexpectedTensor {
        /// The weights file.
        path: PathBuf,
        /// Tensor name.
        name: String,
    },
    /// A tensor's shape disagrees with the architecture.
    #[error("{path}: tensor {name:?} has shape {found:?}, the architecture needs {expected:?}")]
    Shape {
        /// The weights file.
        path: PathBuf,
        /// Tensor name.
        name: String,
        /// Shape from the architecture.
        expected: Vec<usize>,
        /// Shape in the file.
        found: Vec<usize>,
    },
    /// A tensor is not f32 or holds a non-finite value.
    #[error("{path}: tensor {name:?}: {message}")]
    TensorValue {
        /// The weights file.
        path: PathBuf,
        /// Tensor name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A feature name that is not one of Aurora's metrics.
    #[error(
        "{path}: observation.features[{index}]: unknown feature {name:?}; known features: {known}"
    )]
    UnknownFeature {
        /// The file.
        path: PathBuf,
        /// Position in the list.
        index: usize,
        /// The name.
        name: String,
        /// Every known name.
        known: String,
    },
    /// A field with an invalid or inconsistent value.
    #[error("{path}: {field}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Dotted field path.
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// Invalid rate-rule parameters.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RateError {
    /// A field outside its domain.
    #[error("{field}: {message}")]
    Invalid {
        /// The offending field.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// The error of a rate-rule field outside its domain.
pub(crate) fn invalid(field: &'static str, message: String) -> Result<(), RateError> {
    Err(RateError::Invalid { field, message })
}

/// A file or folder that could not be read or written, and why: the I/O error of every
/// error type of the workspace that names a file.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct FileError {
    /// The file or folder.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// The largest input file (scenario, config, suite, trace, export description) read: far above
/// any real one, and a bound on what a mistaken path (`/dev/zero`, a video) can take.
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// The largest weights or state file read (an export's safetensors, a checkpoint's
/// model.safetensors and state.json): far above any model this project trains, and a bound on
/// what a mistaken path (`/dev/zero`) can take.
pub const MAX_MODEL_BYTES: u64 = 1 << 30;

/// The bytes of the file at `path` (at most `max`), or the error naming it.
pub fn read_bytes(path: &Path, max: u64) -> Result<Vec<u8>, FileError> {
    use std::io::Read;
    let at = |source| FileError {
        path: path.to_path_buf(),
        source,
    };
    if path.is_dir() {
        return Err(at(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a folder; a file (YAML, JSON, CSV or safetensors) is expected here",
        )));
    }
    let file = std::fs::File::open(path).map_err(at)?;
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).map_err(at)?;
    if bytes.len() as u64 > max {
        return Err(at(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("larger than {} MiB: not an input file of mocc", max >> 20),
        )));
    }
    Ok(bytes)
}

/// The text of the file at `path` (at most [`MAX_INPUT_BYTES`]), or the error naming it.
pub fn read_text(path: &Path) -> Result<String, FileError> {
    read_text_within(path, MAX_INPUT_BYTES)
}

/// The text of the file at `path` (at most `max` bytes: logs a run wrote may be larger than
/// an input file), or the error naming it.
pub fn read_text_within(path: &Path, max: u64) -> Result<String, FileError> {
    let bytes = read_bytes(path, max)?;
    String::from_utf8(bytes).map_err(|e| FileError {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stop_at_their_bound() {
        let err = read_bytes(Path::new("/dev/zero"), 4096).unwrap_err();
        assert_eq!(err.source.kind(), std::io::ErrorKind::FileTooLarge);
        assert!(
            err.to_string().starts_with("/dev/zero: larger than"),
            "{err}"
        );
        let err = read_text(Path::new("/dev/zero")).unwrap_err();
        assert!(
            err.to_string().contains("not an input file of mocc"),
            "{err}"
        );
        let dir = std::env::temp_dir().join(format!("mocc-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("small");
        std::fs::write(&f, b"four").unwrap();
        assert_eq!(read_bytes(&f, 4).unwrap(), b"four");
        assert!(read_bytes(&f, 3).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
