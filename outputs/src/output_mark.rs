//! Which command wrote an output folder, and with which arguments. Every folder a mocc
//! command writes (an evaluation, a real-path run, a training run and its checkpoints, a
//! sweep, an experiment) holds a [`MARK_FILE`]; a command refuses to write into a folder that
//! another command marked, and `--resume` refuses a folder whose recorded arguments differ
//! from the ones given, naming the first difference. Exports are the exception: their
//! `policy.json` says what wrote them, so an export folder holds no mark, and a marked folder
//! is never an export's.

use crate::atomic_file::{refused, write_file_atomic};
use mocc_policy::error::FileError;
use serde_json::Value;
use std::path::Path;

/// The file that marks a folder as one command's output.
pub const MARK_FILE: &str = "mocc-output.json";

/// What a [`MARK_FILE`] says: the command (`mocc eval`, `mocc net run`, ...) and the
/// arguments that identify its run (`null` where a rerun may replace the outputs whatever its
/// arguments).
#[derive(Debug, Clone, PartialEq)]
pub struct OutputMark {
    /// The command, as a user types it (`mocc net app`).
    pub command: String,
    /// What identifies the run: compared by `--resume`.
    pub arguments: Value,
}

impl OutputMark {
    /// The mark of `command`'s outputs, without arguments.
    pub fn new(command: &str) -> Self {
        Self {
            command: command.to_string(),
            arguments: Value::Null,
        }
    }

    /// The mark of `command`'s run with `arguments` (what `--resume` must be given again).
    pub fn with_arguments(command: &str, arguments: Value) -> Self {
        Self {
            command: command.to_string(),
            arguments,
        }
    }

    /// The mark in `dir` (None where the folder or its mark does not exist).
    pub fn read(dir: &Path) -> Result<Option<Self>, FileError> {
        let path = dir.join(MARK_FILE);
        if !path.is_file() {
            return Ok(None);
        }
        let text = mocc_policy::error::read_text(&path)?;
        let value: Value = serde_json::from_str(&text).map_err(|e| invalid(&path, &e))?;
        let command = value
            .get("command")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(&path, &"no \"command\""))?;
        Ok(Some(Self {
            command: command.to_string(),
            arguments: value.get("arguments").cloned().unwrap_or(Value::Null),
        }))
    }

    /// Writes the mark into `dir` (which must exist), atomically.
    pub fn write(&self, dir: &Path) -> Result<(), FileError> {
        let json = serde_json::json!({
            "command": self.command,
            "arguments": self.arguments,
        });
        let text = serde_json::to_string_pretty(&json).unwrap_or_default() + "\n";
        write_file_atomic(&dir.join(MARK_FILE), text.as_bytes())
    }

    /// Refuses `dir` where another command marked it (its arguments are not compared: a
    /// command may replace its own earlier outputs).
    pub fn check_owner(&self, dir: &Path) -> Result<(), FileError> {
        match Self::read(dir)? {
            Some(mark) if mark.command != self.command => Err(refused(
                dir,
                format!(
                    "holds the outputs of `{}`, not of `{}`: it is not written into; choose a \
                     new or empty folder",
                    mark.command, self.command
                ),
            )),
            _ => Ok(()),
        }
    }

    /// For `--resume` in `dir`: the folder must carry this command's mark with the same
    /// arguments; otherwise the error names the first argument that differs.
    pub fn check_resume(&self, dir: &Path) -> Result<(), FileError> {
        let Some(mark) = Self::read(dir)? else {
            return Err(refused(
                dir,
                format!(
                    "--resume: holds no run of `{}` ({MARK_FILE} is missing); start it \
                     without --resume",
                    self.command
                ),
            ));
        };
        self.check_owner(dir)?;
        match first_difference(&mark.arguments, &self.arguments, "") {
            None => Ok(()),
            Some(d) => Err(refused(
                dir,
                format!(
                    "--resume: this run was started with other arguments ({d}); resume with \
                     the arguments it started with, or choose another --out"
                ),
            )),
        }
    }

    /// Marks `dir` (created if needed) for a run that starts there, refusing a folder another
    /// command marked or one this command marked with other arguments (an earlier run's: its
    /// record is never overwritten); with `resume`, [`Self::check_resume`].
    pub fn claim(&self, dir: &Path, resume: bool) -> Result<(), FileError> {
        if resume {
            return self.check_resume(dir);
        }
        self.check_owner(dir)?;
        if let Some(mark) = Self::read(dir)? {
            if let Some(d) = first_difference(&mark.arguments, &self.arguments, "") {
                return Err(refused(
                    dir,
                    format!(
                        "holds a run of `{}` started with other arguments ({d}); continue \
                         it with --resume and its arguments, or choose another --out",
                        self.command
                    ),
                ));
            }
        }
        std::fs::create_dir_all(dir).map_err(|source| FileError {
            path: dir.to_path_buf(),
            source,
        })?;
        self.write(dir)
    }
}

fn invalid(path: &Path, e: &dyn std::fmt::Display) -> FileError {
    FileError {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not a mocc output mark: {e}"),
        ),
    }
}

/// The first place where `recorded` and `given` differ, as `key: recorded -> given` (keys
/// joined with dots; None where they are equal).
pub fn first_difference(recorded: &Value, given: &Value, at: &str) -> Option<String> {
    if let (Value::Object(a), Value::Object(b)) = (recorded, given) {
        let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
        keys.sort();
        keys.dedup();
        return keys.into_iter().find_map(|k| {
            let key = if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
            first_difference(
                a.get(k).unwrap_or(&Value::Null),
                b.get(k).unwrap_or(&Value::Null),
                &key,
            )
        });
    }
    (recorded != given).then(|| {
        let name = if at.is_empty() { "arguments" } else { at };
        format!("{name}: {recorded} then, {given} now")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("mocc-mark-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn the_first_difference_names_its_key() {
        let a = json!({"omega": [3, 6], "seeds": [1], "suite": "a.yaml"});
        let b = json!({"omega": [3, 6], "seeds": [1, 2], "suite": "b.yaml"});
        assert_eq!(
            first_difference(&a, &b, "").unwrap(),
            "seeds: [1] then, [1,2] now"
        );
        assert_eq!(first_difference(&a, &a, ""), None);
        let nested = first_difference(&json!({"x": {"y": 1}}), &json!({"x": {"y": 2}}), "");
        assert_eq!(nested.unwrap(), "x.y: 1 then, 2 now");
        assert!(first_difference(&json!({"k": 1}), &json!({}), "")
            .unwrap()
            .starts_with("k: 1 then, null now"));
    }

    #[test]
    fn another_commands_folder_is_refused_and_an_own_one_is_not() {
        let dir = scratch("owner");
        OutputMark::new("mocc net run").claim(&dir, false).unwrap();
        let err = OutputMark::new("mocc eval").check_owner(&dir).unwrap_err();
        assert!(err.to_string().contains("`mocc net run`"), "{err}");
        OutputMark::new("mocc net run").check_owner(&dir).unwrap();
        // An unmarked folder belongs to no command.
        OutputMark::new("mocc eval")
            .check_owner(&scratch("none"))
            .unwrap();
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn resume_needs_the_same_arguments() {
        let dir = scratch("resume");
        let started = OutputMark::with_arguments("mocc sweep", json!({"omega": [3], "seeds": [1]}));
        started.claim(&dir, false).unwrap();
        started.claim(&dir, true).unwrap();
        let other = OutputMark::with_arguments("mocc sweep", json!({"omega": [6], "seeds": [1]}));
        let err = other.claim(&dir, true).unwrap_err().to_string();
        assert!(err.contains("omega: [3] then, [6] now"), "{err}");
        // A fresh run with other arguments does not overwrite the earlier run's record.
        let err = other.claim(&dir, false).unwrap_err().to_string();
        assert!(err.contains("other arguments"), "{err}");
        started.claim(&dir, true).unwrap();
        let err = OutputMark::new("mocc sweep")
            .check_resume(&scratch("fresh"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("holds no run"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
