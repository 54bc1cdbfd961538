//! Helpers shared by the command-line tests.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// Runs the `mocc` binary with `args` from the repository root.
pub fn mocc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mocc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("mocc runs")
}

/// Starts the `mocc` binary with `args` from the repository root, its output discarded (for a
/// test that signals or kills it).
pub fn spawn_quiet(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_mocc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("mocc starts")
}

/// Copies the folder tree `from` to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("creates");
    for e in std::fs::read_dir(from).expect("reads") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copies");
        }
    }
}

/// Complete checkpoints in a run's `checkpoints/` folder (folders holding their `state.json`;
/// the folder's output mark and a checkpoint still being written do not count).
pub fn complete_checkpoints(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.path().join("state.json").is_file())
                .count()
        })
        .unwrap_or(0)
}
