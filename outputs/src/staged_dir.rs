//! Output folders that appear whole or not at all. A command writes its outputs into a hidden
//! sibling of the folder it was asked for (`.NAME.staged-PID`) and [`StagedDir::commit`]
//! puts the finished folder in place with one rename (on Linux an atomic exchange when a
//! previous version is there), so an interrupted or failing command leaves the previous
//! outputs as they were and never a mix of old and new files. What an interrupted command
//! leaves behind is a hidden sibling, removed by the next command that stages the same folder.
//!
//! Which existing folder may be replaced is the caller's rule ([`StagedDir::replacing`]): a
//! command replaces only a folder it wrote itself, so a mistyped `--out` never swallows a run,
//! an export or a home folder.

#[cfg(test)]
use crate::atomic_file::write_file_atomic;
use crate::atomic_file::{io_at, parent_of, refused};
use crate::output_mark::{OutputMark, MARK_FILE};
use mocc_policy::error::FileError;
use std::path::{Path, PathBuf};

/// What a staged folder may replace: which entries a previous output of the same command can
/// hold. A folder that exists, is not empty and holds anything else is refused.
#[derive(Debug, Clone, Copy)]
pub struct Replaceable {
    /// What the command writes, e.g. "an export" (used in the refusal's message).
    pub what: &'static str,
    /// Whether an entry (file or folder name) at the top of the folder is one of the command's.
    pub owns: fn(&str, bool) -> bool,
    /// The entry that marks a folder as one of the command's outputs (a folder without it is
    /// not replaced even if all its entries could be the command's, unless it carries the
    /// command's [`MARK_FILE`]).
    pub marker: &'static str,
    /// The command whose [`MARK_FILE`] the folder gets (`mocc eval`); None for an export,
    /// whose `policy.json` says what wrote it. A folder another command marked is refused.
    pub command: Option<&'static str>,
}

/// A folder being written in a hidden sibling of its destination.
#[derive(Debug)]
pub struct StagedDir {
    staged: PathBuf,
    dest: PathBuf,
    committed: bool,
    mark: Option<OutputMark>,
}

impl StagedDir {
    /// Stages a new `dest`, which must not exist or be an empty folder.
    pub fn new(dest: &Path) -> Result<Self, FileError> {
        Self::stage(dest, None)
    }

    /// Stages `dest`, which may also be a previous output that `rule` recognizes (it is
    /// replaced as a whole at [`Self::commit`]).
    pub fn replacing(dest: &Path, rule: Replaceable) -> Result<Self, FileError> {
        Self::stage(dest, Some(rule))
    }

    fn stage(dest: &Path, rule: Option<Replaceable>) -> Result<Self, FileError> {
        check_replaceable(dest, rule)?;
        let name = dest
            .file_name()
            .ok_or_else(|| refused(dest, "an output folder needs a name".into()))?
            .to_string_lossy()
            .into_owned();
        let parent = parent_of(dest);
        std::fs::create_dir_all(&parent).map_err(io_at(&parent))?;
        remove_abandoned(&parent, &name);
        let staged = parent.join(format!(".{name}.staged-{}", std::process::id()));
        if staged.exists() {
            std::fs::remove_dir_all(&staged).map_err(io_at(&staged))?;
        }
        std::fs::create_dir(&staged).map_err(io_at(&staged))?;
        Ok(Self {
            staged,
            dest: dest.to_path_buf(),
            committed: false,
            mark: rule.and_then(|r| r.command).map(OutputMark::new),
        })
    }

    /// Where to write the outputs.
    pub fn path(&self) -> &Path {
        &self.staged
    }

    /// The folder the outputs go to.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Syncs the staged files and puts the folder in place of `dest` (replacing a previous
    /// output, which is removed afterwards).
    pub fn commit(mut self) -> Result<PathBuf, FileError> {
        if let Some(mark) = &self.mark {
            mark.write(&self.staged)?;
        }
        sync_tree(&self.staged)?;
        let replaced = match std::fs::symlink_metadata(&self.dest) {
            Ok(_) => Some(self.swap_in()?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::rename(&self.staged, &self.dest).map_err(io_at(&self.dest))?;
                None
            }
            Err(e) => return Err(io_at(&self.dest)(e)),
        };
        self.committed = true;
        sync_dir(&parent_of(&self.dest));
        if let Some(old) = replaced {
            std::fs::remove_dir_all(&old).map_err(io_at(&old))?;
        }
        Ok(self.dest.clone())
    }

    /// Exchanges the staged folder with `dest`; returns where the previous output now is.
    fn swap_in(&self) -> Result<PathBuf, FileError> {
        if exchange(&self.staged, &self.dest).is_ok() {
            return Ok(self.staged.clone());
        }
        // Without an atomic exchange: move the old folder aside, then the new one in.
        let mut aside = self.staged.clone().into_os_string();
        aside.push(".replaced");
        let aside = PathBuf::from(aside);
        std::fs::rename(&self.dest, &aside).map_err(io_at(&self.dest))?;
        std::fs::rename(&self.staged, &self.dest).map_err(io_at(&self.dest))?;
        Ok(aside)
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.staged);
        }
    }
}

/// Refuses a `dest` that holds something the command did not write.
fn check_replaceable(dest: &Path, rule: Option<Replaceable>) -> Result<(), FileError> {
    let meta = match std::fs::symlink_metadata(dest) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_at(dest)(e)),
    };
    if !meta.is_dir() {
        return Err(refused(dest, "exists and is not a folder".into()));
    }
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dest).map_err(io_at(dest))? {
        let entry = entry.map_err(io_at(dest))?;
        let is_dir = entry.file_type().map_err(io_at(dest))?.is_dir();
        entries.push((entry.file_name().to_string_lossy().into_owned(), is_dir));
    }
    if entries.is_empty() {
        return Ok(());
    }
    let Some(rule) = rule else {
        return Err(refused(
            dest,
            "the folder must be new or empty; choose another folder".into(),
        ));
    };
    let marked = match (OutputMark::read(dest)?, rule.command) {
        (None, _) => false,
        (Some(mark), Some(command)) if mark.command == command => true,
        (Some(mark), _) => {
            return Err(refused(
                dest,
                format!(
                    "holds the outputs of `{}`, not {}: it is not replaced; choose a new or \
                     empty folder",
                    mark.command, rule.what
                ),
            ))
        }
    };
    let foreign = entries
        .iter()
        .find(|(name, is_dir)| !((rule.owns)(name, *is_dir) || marked && name == MARK_FILE));
    let has_marker = marked || entries.iter().any(|(name, _)| name == rule.marker);
    match (foreign, has_marker) {
        (None, true) => Ok(()),
        (Some((name, _)), _) => Err(refused(
            dest,
            format!(
                "holds {name:?}, which is not part of {}: it is not replaced; choose a new or \
                 empty folder",
                rule.what
            ),
        )),
        (None, false) => Err(refused(
            dest,
            format!(
                "is not {} (no {}): it is not replaced; choose a new or empty folder",
                rule.what, rule.marker
            ),
        )),
    }
}

/// Removes the staged folders that commands no longer running left beside `name`.
fn remove_abandoned(parent: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let prefix = format!(".{name}.staged-");
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = file.strip_prefix(&prefix) else {
            continue;
        };
        let pid = rest.split('.').next().and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| p == std::process::id() || !process_alive(p)) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn process_alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new(&format!("/proc/{pid}")).exists()
    } else {
        true
    }
}

/// Flushes every file below `dir` to disk, so that what is renamed into place is complete.
fn sync_tree(dir: &Path) -> Result<(), FileError> {
    for entry in std::fs::read_dir(dir).map_err(io_at(dir))? {
        let path = entry.map_err(io_at(dir))?.path();
        if path.is_dir() {
            sync_tree(&path)?;
        } else {
            let file = std::fs::File::open(&path).map_err(io_at(&path))?;
            file.sync_all().map_err(io_at(&path))?;
        }
    }
    sync_dir(dir);
    Ok(())
}

/// Flushes a folder's entries (best effort: not every file system supports it).
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Swaps two paths atomically (Linux `renameat2(RENAME_EXCHANGE)`).
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let (ca, cb) = (c(a)?, c(b)?);
    // SAFETY: both are valid NUL-terminated paths that outlive the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// Bytes free for an unprivileged writer on the file system of `dir` (None where unknown).
pub fn free_bytes(dir: &Path) -> Option<u64> {
    free_bytes_of(dir)
}

#[cfg(unix)]
#[allow(clippy::useless_conversion)] // the field types differ between platforms
fn free_bytes_of(dir: &Path) -> Option<u64> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `st` is plain data that statvfs fills; `c` is a valid NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (rc == 0).then(|| u64::from(st.f_bavail).saturating_mul(u64::from(st.f_frsize)))
}

#[cfg(not(unix))]
fn free_bytes_of(_: &Path) -> Option<u64> {
    None
}

/// A file written row by row beside its destination (`.NAME.tmp-PID`) and renamed into place
/// by [`StagedFile::commit`]: a killed or failing writer leaves the previous file as it was,
/// never a truncated one where a complete one stood. A destination that exists and is not a
/// regular file (a pipe, `/dev/stdout`, a device) is written directly: there is nothing to
/// keep whole, and it must not be replaced.
#[derive(Debug)]
pub struct StagedFile {
    /// Where the rows go before the rename (the destination itself when written directly).
    tmp: PathBuf,
    dest: PathBuf,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl StagedFile {
    /// Starts writing `dest` (its folder is created if needed).
    pub fn create(dest: &Path) -> Result<Self, FileError> {
        let name = dest
            .file_name()
            .ok_or_else(|| refused(dest, "an output file needs a name".into()))?
            .to_string_lossy()
            .into_owned();
        if dest.is_dir() {
            return Err(refused(dest, "is a folder; give a file name".into()));
        }
        if std::fs::metadata(dest).is_ok_and(|m| !m.is_file()) {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(dest)
                .map_err(io_at(dest))?;
            return Ok(Self {
                tmp: dest.to_path_buf(),
                dest: dest.to_path_buf(),
                file: Some(std::io::BufWriter::new(file)),
            });
        }
        let parent = parent_of(dest);
        std::fs::create_dir_all(&parent).map_err(io_at(&parent))?;
        let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
        let file = std::fs::File::create(&tmp).map_err(io_at(&tmp))?;
        Ok(Self {
            tmp,
            dest: dest.to_path_buf(),
            file: Some(std::io::BufWriter::new(file)),
        })
    }

    /// The file being written (errors name the destination).
    pub fn writer(&mut self) -> &mut impl std::io::Write {
        self.file
            .as_mut()
            .expect("a staged file is open until it is committed")
    }

    /// The file it becomes.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Flushes and syncs the file and renames it into place.
    pub fn commit(mut self) -> Result<PathBuf, FileError> {
        use std::io::Write;
        let mut file = self.file.take().expect("committed once");
        file.flush().map_err(io_at(&self.dest))?;
        let file = file
            .into_inner()
            .map_err(|e| io_at(&self.dest)(e.into_error()))?;
        if self.tmp == self.dest {
            return Ok(self.dest.clone());
        }
        file.sync_all().map_err(io_at(&self.dest))?;
        std::fs::rename(&self.tmp, &self.dest).map_err(io_at(&self.dest))?;
        sync_dir(&parent_of(&self.dest));
        Ok(self.dest.clone())
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if self.file.is_some() && self.tmp != self.dest {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXPORT_LIKE: Replaceable = Replaceable {
        what: "a test output",
        owns: |name, is_dir| !is_dir && (name == "a.json" || name == "b.bin"),
        marker: "a.json",
        command: None,
    };

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mocc-staged-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_staged_file_replaces_its_destination_only_when_committed() {
        use std::io::Write;
        let root = scratch("file");
        let dest = root.join("rows.csv");
        std::fs::write(&dest, "old\n").unwrap();
        let mut staged = StagedFile::create(&dest).unwrap();
        writeln!(staged.writer(), "new").unwrap();
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "old\n");
        drop(staged);
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "old\n");
        assert_eq!(
            std::fs::read_dir(&root).unwrap().count(),
            1,
            "no temporary file left"
        );
        let mut staged = StagedFile::create(&dest).unwrap();
        writeln!(staged.writer(), "new").unwrap();
        staged.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "new\n");
        assert!(StagedFile::create(&root).is_err());
        // A device is written in place, never replaced.
        let mut null = StagedFile::create(Path::new("/dev/null")).unwrap();
        writeln!(null.writer(), "rows").unwrap();
        null.commit().unwrap();
        assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn a_new_folder_appears_only_at_commit() {
        let root = scratch("new");
        let dest = root.join("out");
        let staged = StagedDir::new(&dest).unwrap();
        std::fs::write(staged.path().join("a.json"), "1").unwrap();
        assert!(!dest.exists());
        staged.commit().unwrap();
        assert_eq!(names(&dest), ["a.json"]);
        assert_eq!(names(&root), ["out"], "nothing staged is left beside it");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_dropped_stage_leaves_the_previous_output_untouched() {
        let root = scratch("dropped");
        let dest = root.join("out");
        std::fs::create_dir_all(&dest).unwrap();
        std::fs::write(dest.join("a.json"), "old").unwrap();
        {
            let staged = StagedDir::replacing(&dest, EXPORT_LIKE).unwrap();
            std::fs::write(staged.path().join("a.json"), "half").unwrap();
        }
        assert_eq!(std::fs::read_to_string(dest.join("a.json")).unwrap(), "old");
        assert_eq!(names(&root), ["out"]);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_replaced_output_keeps_none_of_its_old_files() {
        let root = scratch("replaced");
        let dest = root.join("out");
        std::fs::create_dir_all(&dest).unwrap();
        std::fs::write(dest.join("a.json"), "old").unwrap();
        std::fs::write(dest.join("b.bin"), "old").unwrap();
        let staged = StagedDir::replacing(&dest, EXPORT_LIKE).unwrap();
        std::fs::write(staged.path().join("a.json"), "new").unwrap();
        staged.commit().unwrap();
        assert_eq!(names(&dest), ["a.json"]);
        assert_eq!(std::fs::read_to_string(dest.join("a.json")).unwrap(), "new");
        assert_eq!(names(&root), ["out"]);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_folder_with_foreign_entries_or_without_the_marker_is_refused() {
        let root = scratch("foreign");
        let dest = root.join("out");
        std::fs::create_dir_all(dest.join("checkpoints")).unwrap();
        std::fs::write(dest.join("a.json"), "x").unwrap();
        let err = StagedDir::replacing(&dest, EXPORT_LIKE).unwrap_err();
        assert!(err.to_string().contains("\"checkpoints\""), "{err}");
        std::fs::remove_dir_all(dest.join("checkpoints")).unwrap();
        std::fs::remove_file(dest.join("a.json")).unwrap();
        std::fs::write(dest.join("b.bin"), "x").unwrap();
        let err = StagedDir::replacing(&dest, EXPORT_LIKE).unwrap_err();
        assert!(err.to_string().contains("no a.json"), "{err}");
        let err = StagedDir::new(&dest).unwrap_err();
        assert!(err.to_string().contains("new or empty"), "{err}");
        std::fs::write(root.join("file"), "x").unwrap();
        assert!(StagedDir::new(&root.join("file")).is_err());
        assert_eq!(names(&dest), ["b.bin"], "a refusal writes nothing");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn an_abandoned_stage_is_cleaned_by_the_next_one() {
        let root = scratch("abandoned");
        let dest = root.join("out");
        // A PID above the kernel's limit (2^22) names no running process.
        let stale = root.join(".out.staged-4194305");
        std::fs::create_dir_all(&stale).unwrap();
        std::fs::write(stale.join("a.json"), "torn").unwrap();
        let staged = StagedDir::new(&dest).unwrap();
        assert!(!stale.exists());
        staged.commit().unwrap();
        assert_eq!(names(&root), ["out"]);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn an_atomic_write_replaces_the_whole_file() {
        let root = scratch("atomic");
        let f = root.join("results.csv");
        std::fs::write(&f, "old contents, longer than the new").unwrap();
        write_file_atomic(&f, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
        assert_eq!(names(&root), ["results.csv"]);
        let missing = root.join("no-such-folder").join("x.csv");
        assert!(write_file_atomic(&missing, b"x").is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
