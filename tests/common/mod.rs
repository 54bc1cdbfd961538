//! Helpers shared by the command-line tests.
#![allow(dead_code)]

use std::process::{Command, Output};

/// Runs the `mocc` binary with `args` from the repository root.
pub fn mocc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mocc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("mocc runs")
}
