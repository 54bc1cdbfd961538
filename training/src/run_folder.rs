//! Run folders: what one holds, by name (the checkpoints, the lock, the logs, an adaptation's
//! pool), so that a fresh run accepts only a folder of its own; and which run folder a
//! checkpoint belongs to, so that a resume writes only into its own run.

use crate::checkpoint::{
    checkpoint_name, fsync_dir, fsync_file, io, list, read_model_file, CheckpointError, Counters,
    CHECKPOINTS_DIR, STATE, WEIGHTS,
};
use crate::recorder::METRICS_CSV;
use crate::run_lock::LOCK_FILE;
use mocc_outputs::{OutputMark, MARK_FILE};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// File in an adaptation's run folder holding the pool after it (objectives seen so far).
pub const POOL_FILE: &str = "pool.json";

/// Whether `name` is one of a run's logs, which a fresh run in the folder starts afresh.
pub fn is_log(name: &str) -> bool {
    name == METRICS_CSV || (name.starts_with("events.out.tfevents.") && name.ends_with(".mocc"))
}

/// Whether `name` (at the top of a run folder) is something a run writes.
pub fn is_run_entry(name: &str) -> bool {
    is_log(name) || [LOCK_FILE, CHECKPOINTS_DIR, POOL_FILE, MARK_FILE].contains(&name)
}

/// The command whose mark a run folder and its checkpoints folder carry.
pub const TRAIN_COMMAND: &str = "mocc train";

/// Refuses `run` where another command marked it (an evaluation's, a sweep's folder).
pub fn check_run_folder(run: &Path) -> Result<(), CheckpointError> {
    let mark = OutputMark::new(TRAIN_COMMAND);
    for dir in [run.to_path_buf(), run.join(CHECKPOINTS_DIR)] {
        mark.check_owner(&dir)
            .map_err(|e| CheckpointError::NotInRun {
                path: run.to_path_buf(),
                message: e.source.to_string(),
            })?;
    }
    Ok(())
}

/// Marks `run` and its checkpoints folder (both created if needed) as a training run's, so
/// that no other command writes into them (an export into an empty checkpoints folder, say).
pub fn mark_run_folder(run: &Path) -> Result<(), CheckpointError> {
    let mark = OutputMark::new(TRAIN_COMMAND);
    for dir in [run.to_path_buf(), run.join(CHECKPOINTS_DIR)] {
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        mark.write(&dir).map_err(|e| io(&e.path)(e.source))?;
    }
    Ok(())
}

/// The run folder that holds checkpoint folder `ckpt` (`<run>/checkpoints/ckpt-N`), which a
/// resume writes into (metrics, further checkpoints, retention). A checkpoint anywhere else,
/// or one whose config differs from that of the run's newest other checkpoint (a checkpoint
/// copied into another run's folder), is refused: resuming it would prune and append to a run
/// it does not belong to. [`adopt`] continues such a checkpoint in a run folder of its own.
pub fn run_dir_of(ckpt: &Path) -> Result<PathBuf, CheckpointError> {
    let foreign = |message: String| CheckpointError::NotInRun {
        path: ckpt.to_path_buf(),
        message,
    };
    let ckpts = ckpt
        .parent()
        .filter(|p| p.file_name().is_some_and(|n| n == CHECKPOINTS_DIR))
        .ok_or_else(|| {
            foreign(format!(
                "lies outside a run's {CHECKPOINTS_DIR}/ folder, so no run folder owns it; \
                 continue it in a new run folder with --resume CHECKPOINT --out NEW_RUN"
            ))
        })?;
    let run = match ckpts.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let own = read_identity(ckpt)?;
    let siblings = list(ckpts)?;
    let newest_other = siblings.iter().rev().find(|(_, p)| !same_folder(p, ckpt));
    if let Some((_, other)) = newest_other {
        if read_identity(other)? != own {
            return Err(foreign(format!(
                "was written by another config than the run's {} (a checkpoint copied into \
                 {}?); continue it in a new run folder with --resume CHECKPOINT --out NEW_RUN",
                other.display(),
                run.display()
            )));
        }
    }
    Ok(run)
}

/// Whether two paths name the same folder.
fn same_folder(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// What identifies the run a checkpoint belongs to: its resolved config (seed included).
fn read_identity(ckpt: &Path) -> Result<serde_json::Value, CheckpointError> {
    Ok(read_header(ckpt)?.config)
}

/// The parts of a checkpoint's state.json that say which run and how far.
#[derive(Deserialize)]
struct StateHeader {
    config: serde_json::Value,
    counters: Counters,
}

fn read_header(ckpt: &Path) -> Result<StateHeader, CheckpointError> {
    let state_path = ckpt.join(STATE);
    let bytes = read_model_file(&state_path)?;
    serde_json::from_slice(&bytes).map_err(|e| CheckpointError::Corrupt {
        path: state_path,
        message: e.to_string(),
    })
}

/// Copies checkpoint folder `ckpt` into `run`'s checkpoints (a new run folder, or one without
/// checkpoints), so that the run continues there; returns the copy.
pub fn adopt(ckpt: &Path, run: &Path) -> Result<PathBuf, CheckpointError> {
    check_run_folder(run)?;
    let dir = run.join(CHECKPOINTS_DIR);
    if dir.is_dir() && !list(&dir)?.is_empty() {
        return Err(CheckpointError::NotInRun {
            path: run.to_path_buf(),
            message: "already holds checkpoints of its own; continue a checkpoint in a new \
                      run folder"
                .into(),
        });
    }
    if run.join(METRICS_CSV).exists() {
        return Err(CheckpointError::NotInRun {
            path: run.to_path_buf(),
            message: format!(
                "holds another run's {METRICS_CSV}; continue a checkpoint in a new run folder"
            ),
        });
    }
    let name = checkpoint_name(read_header(ckpt)?.counters.updates);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let tmp = dir.join(format!("{name}.tmp-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(io(&tmp))?;
    for file in [STATE, WEIGHTS] {
        let to = tmp.join(file);
        std::fs::copy(ckpt.join(file), &to).map_err(io(&ckpt.join(file)))?;
        fsync_file(&to)?;
    }
    let copy = dir.join(&name);
    std::fs::rename(&tmp, &copy).map_err(io(&copy))?;
    fsync_dir(&dir)?;
    mark_run_folder(run)?;
    Ok(copy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_folder_holds_its_checkpoints_lock_logs_and_pool_only() {
        for name in [
            "checkpoints",
            "mocc.lock",
            "metrics.csv",
            "pool.json",
            "mocc-output.json",
        ] {
            assert!(is_run_entry(name), "{name}");
        }
        assert!(is_log("events.out.tfevents.1700000000.42.mocc"));
        for name in [
            "policy.json",
            "notes.txt",
            "events.out.tfevents.1.other",
            "results.csv",
        ] {
            assert!(!is_run_entry(name), "{name}");
        }
    }
}
