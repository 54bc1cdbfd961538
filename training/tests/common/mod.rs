//! Helpers shared by the training crate's integration tests.
#![allow(dead_code)]

use mocc_training::trainer::Trainer;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A fresh folder `<tmp>/mocc-<group>-<pid>-<name>` (removed if it exists).
pub fn temp_dir(group: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mocc-{group}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Every weight of a trainer's model, by name.
pub fn weights(t: &Trainer) -> BTreeMap<String, Vec<f32>> {
    t.var_store()
        .variables()
        .into_iter()
        .map(|(k, v)| (k, mocc_agents::to_vec(&v.flatten(0, -1))))
        .collect()
}
