//! One writer per run folder: an exclusive lock on `<run>/mocc.lock`, which names its holder
//! (PID and host). The operating system releases it when the holder exits, even on `kill -9`,
//! so a crashed run never leaves a stale lock.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The lock file's name inside a run folder.
pub const LOCK_FILE: &str = "mocc.lock";

/// Why a run folder could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum RunLockError {
    /// Another process holds the lock.
    #[error(
        "{path}: the run folder is in use by {holder}; wait for it to finish or choose \
         another --out"
    )]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// What the lock file says of its holder.
        holder: String,
    },
    /// The lock file could not be created, read or written.
    #[error("{path}: {reason}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// Why.
        reason: std::io::Error,
    },
}

/// An exclusive lock on a run folder, held until dropped.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

impl RunLock {
    /// Takes the lock of `run_dir` (created if missing), or says who holds it.
    pub fn acquire(run_dir: &Path) -> Result<Self, RunLockError> {
        let path = run_dir.join(LOCK_FILE);
        let io = |reason| RunLockError::Io {
            path: path.clone(),
            reason,
        };
        if run_dir.exists() && !run_dir.is_dir() {
            return Err(RunLockError::Io {
                path: run_dir.to_path_buf(),
                reason: std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "exists and is not a folder: a run folder cannot go there",
                ),
            });
        }
        std::fs::create_dir_all(run_dir).map_err(io)?;
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(RunLockError::Busy {
                    path,
                    holder: if holder.is_empty() {
                        "another process".into()
                    } else {
                        holder.to_string()
                    },
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "PID {} on {}", std::process::id(), host_name()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(Self { _file: file })
    }
}

/// This machine's host name, as the kernel reports it.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "an unknown host".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_and_freed_on_drop() {
        let dir = std::env::temp_dir().join(format!("mocc-lock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = RunLock::acquire(&dir).unwrap();
        let e = RunLock::acquire(&dir).unwrap_err().to_string();
        assert!(e.contains(&format!("PID {}", std::process::id())), "{e}");
        assert!(e.contains("in use"), "{e}");
        drop(first);
        let again = RunLock::acquire(&dir);
        assert!(again.is_ok());
        drop(again);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
