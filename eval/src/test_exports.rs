//! Policy exports the unit tests build from the shipped ones.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The shipped `checkpoints/mocc-paths` export's folder.
pub fn shipped_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../checkpoints/mocc-paths")
}

/// The shipped `checkpoints/mocc-paths` export with a base-RTT probe whenever its latency
/// baseline has stood for 0.5 s, without the quiet-latency trigger (its policy.json with
/// `action.probe_rtt` added, and declared untrained), written to `dir`.
pub fn probing_export(dir: &Path) -> Arc<mocc_policy::Policy> {
    let shipped = shipped_dir();
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let text = std::fs::read_to_string(shipped.join("policy.json")).unwrap();
    let mut spec: serde_json::Value = serde_json::from_str(&text).unwrap();
    spec["action"]["probe_rtt"] = serde_json::json!({"interval_s": 0.5});
    spec["provenance"]["untrained"] = serde_json::json!([{
        "part": "action.probe_rtt",
        "declared_by": "eval's unit tests",
        "why": "to test probes on a shipped export's weights"
    }]);
    std::fs::write(dir.join("policy.json"), spec.to_string()).unwrap();
    let weights = "policy.safetensors";
    std::fs::copy(shipped.join(weights), dir.join(weights)).unwrap();
    Arc::new(mocc_policy::Policy::load(dir).unwrap())
}
