//! Every loader a user's bytes reach (config, scenario, trace, suite, checkpoint, export) fed
//! random flips, truncations, extreme numbers and random bytes: each answer is an error or a
//! value that passes validation, never a panic, and each comes back in bounded time (a hang
//! guard, not a speed test).

use mocc_eval::suite::Suite;
use mocc_gym::{Scenario, Trace};
use mocc_training::checkpoint;
use mocc_training::config::LoadedConfig;
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod common;

/// No loader may take longer than this on a file of a few kilobytes.
const HANG: Duration = Duration::from_secs(20);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Numbers a hostile file might hold in place of a real one.
const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "-1e308",
    "1e-300",
    "nan",
    ".nan",
    ".inf",
    "-.inf",
    "1e999",
    "18446744073709551615",
    "99999999999999999999",
    "2.5",
    "-0",
    "null",
    "[]",
    "{}",
    "\"x\"",
];

/// A mutation of a file's bytes.
#[derive(Debug, Clone)]
enum Mutation {
    /// XOR the byte at (index mod len) with a mask.
    Flip(Vec<(usize, u8)>),
    /// Keep the first (index mod len) bytes.
    Truncate(usize),
    /// Replace the k-th number (mod count) with an extreme value.
    Extreme(usize, usize),
    /// Random bytes instead of the file.
    Random(Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        prop::collection::vec((any::<usize>(), 1u8..=255), 1..4).prop_map(Mutation::Flip),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 0..EXTREMES.len()).prop_map(|(k, e)| Mutation::Extreme(k, e)),
        prop::collection::vec(any::<u8>(), 0..256).prop_map(Mutation::Random),
    ]
}

/// Byte ranges of the numbers in `bytes` (runs of digits, with a sign, point or exponent).
fn numbers(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = if i > 0 && bytes[i - 1] == b'-' {
                i - 1
            } else {
                i
            };
            let mut j = i;
            while j < bytes.len() && (bytes[j].is_ascii_digit() || b".eE+-".contains(&bytes[j])) {
                j += 1;
            }
            out.push((start, j));
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

fn apply(original: &[u8], m: &Mutation) -> Vec<u8> {
    let mut b = original.to_vec();
    match m {
        Mutation::Flip(flips) => {
            for &(i, mask) in flips {
                if !b.is_empty() {
                    let n = b.len();
                    b[i % n] ^= mask;
                }
            }
        }
        Mutation::Truncate(i) => b.truncate(i % (original.len() + 1)),
        Mutation::Extreme(k, e) => {
            let nums = numbers(&b);
            if !nums.is_empty() {
                let (s, t) = nums[k % nums.len()];
                b.splice(s..t, EXTREMES[*e].bytes());
            }
        }
        Mutation::Random(r) => b = r.clone(),
    }
    b
}

/// Runs `load` on its own thread and waits at most [`HANG`] for it: a loader that loops
/// forever fails the test instead of hanging it. `load` returns `Err` when it accepted a value
/// that does not validate.
fn bounded(what: &str, load: impl FnOnce() -> Result<(), String> + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(load());
    });
    match rx.recv_timeout(HANG) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("{what}: accepted an invalid value: {e}"),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("{what}: no answer in {HANG:?}"),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
    }
}

/// A scratch folder for this test process and `name`.
fn scratch(name: &str) -> PathBuf {
    let d = common::temp_dir("fuzz", name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn scenario_files(m in mutation(), which in 0usize..5) {
        let files = ["aurora-env.yaml", "scenarios/mocc-env.yaml", "scenarios/shared-link.yaml",
                     "scenarios/leo.yaml", "scenarios/mocc-paths.yaml"];
        let original = std::fs::read(repo().join("configs").join(files[which])).unwrap();
        let text = String::from_utf8_lossy(&apply(&original, &m)).into_owned();
        let origin = repo().join("configs").join(files[which]);
        bounded("scenario", move || match Scenario::from_yaml_str(&text, &origin) {
            Ok(s) => s.config().validate().map_err(|e| e.to_string()),
            Err(_) => Ok(()),
        });
    }

    #[test]
    fn training_configs(m in mutation(), which in 0usize..4) {
        let files = ["tiny.yaml", "tiny-mocc.yaml", "mocc-omega36.yaml", "mocc-paths.yaml"];
        let path = repo().join("configs").join(files[which]);
        let original = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&apply(&original, &m)).into_owned();
        bounded("config", move || {
            let Ok(c) = LoadedConfig::from_yaml(&text, &path, &[]) else {
                return Ok(());
            };
            c.validate().map_err(|e| e.to_string())?;
            match c.scenario() {
                Ok(s) => s.config().validate().map_err(|e| e.to_string()),
                Err(_) => Ok(()),
            }
        });
    }

    #[test]
    fn traces(m in mutation()) {
        let path = repo().join("configs/traces/step-12mbps.trace");
        let original = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&apply(&original, &m)).into_owned();
        bounded("trace", move || {
            let _ = Trace::parse(&text, &path);
            Ok(())
        });
    }

    #[test]
    fn suites(m in mutation(), which in 0usize..3) {
        let files = ["mocc-grid.yaml", "shared.yaml", "multiflow.yaml"];
        let original = std::fs::read(repo().join("configs/eval").join(files[which])).unwrap();
        // Written beside the originals' copies so relative paths inside still resolve.
        let dir = scratch("suite");
        let path = dir.join(files[which]);
        std::fs::write(&path, apply(&original, &m)).unwrap();
        bounded("suite", move || {
            let _ = Suite::load(&path);
            Ok(())
        });
    }

    #[test]
    fn checkpoints(m in mutation(), weights in any::<bool>()) {
        let fixture = repo().join("training/tests/data/checkpoints-8e046a1/mocc/checkpoints/ckpt-00000009");
        let dir = scratch("ckpt").join("ckpt-00000009");
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["state.json", "model.safetensors"] {
            std::fs::copy(fixture.join(f), dir.join(f)).unwrap();
        }
        let target = dir.join(if weights { "model.safetensors" } else { "state.json" });
        let original = std::fs::read(&target).unwrap();
        std::fs::write(&target, apply(&original, &m)).unwrap();
        bounded("checkpoint", move || match checkpoint::load(&dir) {
            Ok((state, tensors)) => state.validate(&tensors),
            Err(_) => Ok(()),
        });
    }

    #[test]
    fn exports(m in mutation(), weights in any::<bool>(), paths in any::<bool>()) {
        let shipped = repo().join(if paths { "checkpoints/mocc-paths" } else { "checkpoints/mocc-omega36" });
        let dir = scratch("export");
        for f in ["policy.json", "policy.safetensors"] {
            std::fs::copy(shipped.join(f), dir.join(f)).unwrap();
        }
        let target = dir.join(if weights { "policy.safetensors" } else { "policy.json" });
        let original = std::fs::read(&target).unwrap();
        std::fs::write(&target, apply(&original, &m)).unwrap();
        bounded("export", move || {
            let _ = mocc_policy::Policy::load(&dir);
            Ok(())
        });
    }
}

/// The unmutated files load, so the mutations above start from valid inputs and each error
/// comes from a mutation.
#[test]
fn the_originals_load() {
    let configs = repo().join("configs");
    for f in [
        "aurora-env.yaml",
        "scenarios/mocc-env.yaml",
        "scenarios/mocc-paths.yaml",
        "scenarios/shared-link.yaml",
        "scenarios/leo.yaml",
    ] {
        Scenario::load(&configs.join(f)).unwrap();
    }
    for f in [
        "tiny.yaml",
        "tiny-mocc.yaml",
        "mocc-omega36.yaml",
        "mocc-paths.yaml",
    ] {
        LoadedConfig::load(&configs.join(f), &[])
            .unwrap()
            .scenario()
            .unwrap();
    }
    Trace::load(&configs.join("traces/step-12mbps.trace")).unwrap();
    Suite::load(&configs.join("eval/mocc-grid.yaml")).unwrap();
    let fixture =
        repo().join("training/tests/data/checkpoints-8e046a1/mocc/checkpoints/ckpt-00000009");
    let (state, tensors) = checkpoint::load(&fixture).unwrap();
    state.validate(&tensors).unwrap();
    for shipped in ["checkpoints/mocc-omega36", "checkpoints/mocc-paths"] {
        mocc_policy::Policy::load(repo().join(shipped)).unwrap();
    }
}
