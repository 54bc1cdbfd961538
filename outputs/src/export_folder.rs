//! Export folders on disk: a new export from a description and its tensors
//! ([`write_export`]), a loaded policy as it is in memory, a pair included ([`save_policy`]),
//! and a pair of two exports ([`write_pair`]). Every write is validated by loading the folder
//! back; [`EXPORT_FOLDER`] says which folder an export may replace.

use crate::atomic_file::write_file_atomic;
use crate::staged_dir::Replaceable;
use mocc_policy::error::FileError;
use mocc_policy::export::{
    sha256_hex, NamedTensors, COMPETITIVE_DIR, SPEC_FILE, TORCHSCRIPT_FILE, WEIGHTS_FILE,
};
use mocc_policy::{ModeSwitch, Policy, PolicyError, PolicySpec, POLICY_FORMAT_VERSION};
use safetensors::tensor::{Dtype, TensorView};
use std::path::Path;

/// What an export folder holds, so that writing an export replaces a previous export as a
/// whole (no file of the old one stays beside the new) and never a folder of anything else.
pub const EXPORT_FOLDER: Replaceable = Replaceable {
    what: "an export",
    owns: |name, is_dir| {
        if is_dir {
            name == COMPETITIVE_DIR
        } else {
            [SPEC_FILE, WEIGHTS_FILE, TORCHSCRIPT_FILE].contains(&name)
        }
    },
    marker: SPEC_FILE,
    command: None,
};

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PolicyError + '_ {
    move |source| {
        PolicyError::Io(FileError {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// Writes an export folder: the tensors (PyTorch layout) to `policy.safetensors`, then `spec`
/// with the weights' file name and checksum filled in to `policy.json`. The description is
/// validated before anything is written, and the folder by loading it back. Returns the
/// written description.
pub fn write_export(
    dir: &Path,
    mut spec: PolicySpec,
    tensors: &NamedTensors,
) -> Result<PolicySpec, PolicyError> {
    let weights_path = dir.join(WEIGHTS_FILE);
    let spec_path = dir.join(SPEC_FILE);
    spec.format_version = POLICY_FORMAT_VERSION;
    spec.weights.file = WEIGHTS_FILE.to_string();
    // Validate before touching the folder, so a bad export never replaces a good one.
    Policy::from_parts(spec.clone(), tensors, &spec_path, &weights_path)?;
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let bytes = serialize_safetensors(tensors, &weights_path)?;
    spec.weights.sha256 = sha256_hex(&bytes);
    write_file_atomic(&weights_path, &bytes)?;
    write_spec(&spec_path, &spec)?;
    Policy::load(dir)?;
    Ok(spec)
}

/// Writes a paired export to `dir` (new or empty): [`Policy::paired`] of the two, written by
/// [`save_policy`]. Every input file is read before anything is written. Returns the written
/// pair, loaded back.
pub fn write_pair(
    dir: &Path,
    cooperative: &Policy,
    competitive: &Policy,
    switch: ModeSwitch,
    declared_by: &str,
) -> Result<Policy, PolicyError> {
    let paired = Policy::paired(
        cooperative.clone(),
        competitive.clone(),
        switch,
        declared_by,
    )?;
    save_policy(&paired, dir)
}

/// Writes `policy` (a paired one with its competitive half in `competitive/`) to `dir`, which
/// must be new or empty, as it is in memory: its description (a rule or provenance changed
/// since loading included) and the weights of the folder each half was loaded from, whose
/// checksums are checked again. Returns the written policy, loaded back.
pub fn save_policy(policy: &Policy, dir: &Path) -> Result<Policy, PolicyError> {
    let mut halves = vec![(policy, dir.to_path_buf())];
    if let Some(c) = policy.competitive() {
        halves.push((c, dir.join(COMPETITIVE_DIR)));
    }
    let mut weights = Vec::new();
    for (p, _) in &halves {
        let spec = p.spec();
        let path = p.source().join(&spec.weights.file);
        let bytes = std::fs::read(&path).map_err(io(&path))?;
        let actual = sha256_hex(&bytes);
        if actual != spec.weights.sha256.to_ascii_lowercase() {
            return Err(PolicyError::Checksum {
                path,
                expected: spec.weights.sha256.clone(),
                actual,
            });
        }
        weights.push(bytes);
    }
    refuse_non_empty(dir)?;
    for ((p, folder), bytes) in halves.iter().zip(&weights).rev() {
        std::fs::create_dir_all(folder).map_err(io(folder))?;
        write_file_atomic(&folder.join(&p.spec().weights.file), bytes)?;
        write_spec(&folder.join(SPEC_FILE), p.spec())?;
    }
    Policy::load(dir)
}

/// Writes a description as `policy.json` does.
fn write_spec(spec_path: &Path, spec: &PolicySpec) -> Result<(), PolicyError> {
    let json = serde_json::to_string_pretty(spec).map_err(|e| PolicyError::Json {
        path: spec_path.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok(write_file_atomic(
        spec_path,
        format!("{json}\n").as_bytes(),
    )?)
}

/// Refuses a folder that exists and holds anything (an export is written into a new folder, so
/// a pair never replaces one of its own halves).
fn refuse_non_empty(dir: &Path) -> Result<(), PolicyError> {
    let mut entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(dir)(e)),
    };
    if entries.next().is_none() {
        return Ok(());
    }
    Err(PolicyError::Io(FileError {
        path: dir.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "an export's folder must be new or empty",
        ),
    }))
}

/// The tensors as a safetensors file's bytes (f32, little-endian).
fn serialize_safetensors(tensors: &NamedTensors, path: &Path) -> Result<Vec<u8>, PolicyError> {
    let weights_err = |message: String| PolicyError::Weights {
        path: path.to_path_buf(),
        message,
    };
    let raw: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
        .iter()
        .map(|(name, (shape, data))| {
            let bytes = data.iter().flat_map(|v| v.to_le_bytes()).collect();
            (name.clone(), shape.clone(), bytes)
        })
        .collect();
    let mut views = Vec::with_capacity(raw.len());
    for (name, shape, bytes) in &raw {
        let view = TensorView::new(Dtype::F32, shape.clone(), bytes)
            .map_err(|e| weights_err(format!("tensor {name:?}: {e}")))?;
        views.push((name.clone(), view));
    }
    safetensors::serialize(views, None).map_err(|e| weights_err(e.to_string()))
}
