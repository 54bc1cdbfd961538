//! One writer per run folder: an exclusive lock on `<run>/mocc.lock`, which names its holder
//! (PID and host). The operating system releases it when the holder exits, even on `kill -9`,
//! so a crashed run never leaves a stale lock (only its file, which the next run reuses); a
//! run that ends removes the file.

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

/// An exclusive lock on a run folder, held until dropped. Dropping it removes the lock file
/// (a finished run leaves none behind); a process that opened the file just before that
/// finds, once it holds the lock, that the file is no longer the folder's, and opens the new
/// one instead.
#[derive(Debug)]
pub struct RunLock {
    file: File,
    path: PathBuf,
}

/// How many times [`RunLock::acquire`] reopens a lock file that was removed under it.
const REOPENS: usize = 8;

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
        for _ in 0..REOPENS {
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => return Err(busy(&path, &mut file)),
                Err(TryLockError::Error(e)) => return Err(io(e)),
            }
            if !is_the_file_at(&file, &path) {
                // Its holder removed it as it finished: the folder's lock is a new file.
                continue;
            }
            file.set_len(0).map_err(io)?;
            file.rewind().map_err(io)?;
            writeln!(file, "PID {} on {}", std::process::id(), host_name()).map_err(io)?;
            file.flush().map_err(io)?;
            return Ok(Self { file, path });
        }
        Err(io(std::io::Error::other(
            "the lock file keeps being replaced by other processes",
        )))
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Removed while still held, so no process can take the lock of a file that is gone.
        if is_the_file_at(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The error for a lock another process holds, naming what its file says of the holder.
fn busy(path: &Path, file: &mut File) -> RunLockError {
    let mut holder = String::new();
    let _ = file.read_to_string(&mut holder);
    let holder = holder.trim();
    RunLockError::Busy {
        path: path.to_path_buf(),
        holder: if holder.is_empty() {
            "another process".into()
        } else {
            holder.to_string()
        },
    }
}

/// Whether `file` is the file now at `path` (the same inode on the same device).
fn is_the_file_at(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
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
        assert!(
            !dir.join(LOCK_FILE).exists(),
            "a released lock leaves no file"
        );
        let again = RunLock::acquire(&dir);
        assert!(again.is_ok());
        drop(again);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_lock_file_removed_under_a_waiting_opener_is_not_taken() {
        // What a process that opened the file just before its holder removed it sees: it locks
        // an inode that is no longer the folder's lock, and must not count that as the lock.
        let dir = std::env::temp_dir().join(format!("mocc-lock-gone-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(LOCK_FILE);
        let stale = File::create(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(!is_the_file_at(&stale, &path));
        let lock = RunLock::acquire(&dir).unwrap();
        assert!(is_the_file_at(&lock.file, &path));
        drop(lock);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
