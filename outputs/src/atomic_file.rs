//! Single files written whole: a temporary file beside the destination, synced and renamed
//! into place.

use mocc_policy::error::FileError;
use std::path::{Path, PathBuf};

/// Writes `bytes` to a temporary file beside `path`, syncs it and renames it into place, so
/// `path` holds either its previous contents or all of `bytes`.
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    use std::io::Write;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent_of(path).join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp).map_err(io_at(&tmp))?;
        f.write_all(bytes).map_err(io_at(&tmp))?;
        f.sync_all().map_err(io_at(&tmp))?;
        std::fs::rename(&tmp, path).map_err(io_at(path))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The folder that holds `path` (`.` for a bare name).
pub(crate) fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// An I/O error at `path`.
pub(crate) fn io_at(path: &Path) -> impl Fn(std::io::Error) -> FileError + '_ {
    move |source| FileError {
        path: path.to_path_buf(),
        source,
    }
}

/// Why an output (a file, a folder) is not written there: the error names the path.
pub(crate) fn refused(path: &Path, message: String) -> FileError {
    FileError {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::AlreadyExists, message),
    }
}
