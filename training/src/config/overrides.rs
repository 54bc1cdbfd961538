//! `--set key.path=value` overrides: applied to a config's tree (reaching into a scenario
//! file), and the tree read back with errors that name the override.

use super::error::ConfigError;
use super::train::TrainConfig;
use std::path::{Path, PathBuf};

/// A config from its tree after `--set` overrides. An error names the field by its dotted
/// path, and the override that set it when one did (else the file).
pub(super) fn from_tree(
    tree: serde_json::Value,
    path: &Path,
    overrides: &[String],
) -> Result<TrainConfig, ConfigError> {
    serde_path_to_error::deserialize(tree).map_err(|e| {
        let field = e.path().to_string();
        let message = super::error::plain_message(&e.inner().to_string());
        let from_override = overrides.iter().find(|o| {
            let key = o.split_once('=').map_or(o.as_str(), |(k, _)| k).trim();
            field == key
                || field.starts_with(&format!("{key}."))
                || key.starts_with(&format!("{field}."))
        });
        match from_override {
            Some(o) => ConfigError::Override(format!("{o}: {field}: {message}")),
            None if field == "." => ConfigError::Parse {
                path: path.to_path_buf(),
                message,
            },
            None => ConfigError::Invalid {
                path: path.to_path_buf(),
                field,
                message,
            },
        }
    })
}

/// Replaces a `scenario:` file path in a config tree by the file's contents (its relative
/// trace path re-anchored at the config's folder), so `--set scenario.X=V` can reach into it.
pub(super) fn inline_scenario_file(
    tree: &mut serde_json::Value,
    config_path: &Path,
) -> Result<(), ConfigError> {
    let Some(rel) = tree
        .get("scenario")
        .and_then(|v| v.as_str())
        .map(PathBuf::from)
    else {
        return Ok(());
    };
    let base = config_path.parent().unwrap_or(Path::new("."));
    let file = if rel.is_relative() {
        base.join(&rel)
    } else {
        rel
    };
    let text = mocc_policy::error::read_text(&file)?;
    mocc_gym::scenario::require_content(&text, &file)?;
    let mut scenario: serde_json::Value =
        serde_saphyr::from_str(&text).map_err(|e| ConfigError::Parse {
            path: file.clone(),
            message: e.to_string(),
        })?;
    let scenario_dir = file.parent().unwrap_or(Path::new("."));
    if let Some(trace) = scenario.pointer_mut("/link/trace") {
        if let Some(t) = trace
            .as_str()
            .map(PathBuf::from)
            .filter(|t| t.is_relative())
        {
            let joined = scenario_dir.join(t);
            let absolute = std::fs::canonicalize(&joined).unwrap_or(joined);
            *trace = serde_json::Value::String(absolute.to_string_lossy().into_owned());
        }
    }
    tree["scenario"] = scenario;
    Ok(())
}

/// Applies `a.b.c=value` (value parsed as YAML) to a JSON tree.
pub fn apply_override(tree: &mut serde_json::Value, spec: &str) -> Result<(), ConfigError> {
    let (key, raw) = spec
        .split_once('=')
        .ok_or_else(|| ConfigError::Override(format!("{spec:?}: expected path.to.key=value")))?;
    let value: serde_json::Value = serde_saphyr::from_str(raw)
        .map_err(|e| ConfigError::Override(format!("{spec:?}: bad value: {e}")))?;
    let mut node = tree;
    let parts: Vec<&str> = key.trim().split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        if part.is_empty() {
            return Err(ConfigError::Override(format!(
                "{spec:?}: empty key segment"
            )));
        }
        let map = node.as_object_mut().ok_or_else(|| {
            ConfigError::Override(format!(
                "{spec:?}: {} is not a mapping",
                parts[..i].join(".")
            ))
        })?;
        if i + 1 == parts.len() {
            map.insert((*part).to_string(), value);
            return Ok(());
        }
        node = map
            .entry((*part).to_string())
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
    }
    Ok(())
}
