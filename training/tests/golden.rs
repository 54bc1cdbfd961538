//! Behaviour pin for refactors: tiny trainings (Aurora, Aurora with reward scaling, MOCC's
//! landmark schedule, adaptation with requirement replay) must end in checkpoints whose bytes
//! match the digests recorded in `tests/data/golden.json`, and checkpoints written mid-run by
//! the code of 8e046a1 (`tests/data/checkpoints-8e046a1`) must resume to their recorded digests:
//! old checkpoints keep resuming, bit for bit. (That a resumed run ends where an uninterrupted
//! one does is `train_e2e.rs`'s; these checkpoints were written with another machine's
//! arithmetic, so they end elsewhere under the pinned one.)
//!
//! A change that is meant to alter training (new defaults, a different sampler) re-records the
//! digests with `MOCC_BLESS_GOLDEN=1 cargo test --profile ci -p mocc-training --test golden`
//! and says so in its commit message; a refactor must leave them untouched.
//!
//! The digests are of libtorch's arithmetic, which follows the CPU: MKL and ATen pick AVX-512,
//! AVX2 or older kernels by what the machine has, and each rounds differently. The tests pin
//! both to the paths meant to run alike on every x86-64 machine ([`pin_numerics`]: MKL
//! documents its compatible path so), so that the recorded digests hold beyond the machine
//! that recorded them (checked so far on one AVX-512 machine only).

use mocc_training::adaptation::{start_adaptation, AdaptSpec};
use mocc_training::config::LoadedConfig;
use mocc_training::trainer::Trainer;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, Once};

/// libtorch's global RNG initializes the weights: build trainers one at a time.
static TORCH: Mutex<()> = Mutex::new(());

/// Before libtorch's first use in this process: MKL's conditional numerical reproducibility in
/// its compatible code path (`MKL_CBWR=COMPATIBLE`) and ATen's kernels without vector
/// extensions (`ATEN_CPU_CAPABILITY=default`). Without them a machine with AVX-512 trains other
/// bits than one with AVX2 from the same seed. Both are read once, at their first use.
fn pin_numerics() {
    static PIN: Once = Once::new();
    PIN.call_once(|| {
        std::env::set_var("MKL_CBWR", "COMPATIBLE");
        std::env::set_var("ATEN_CPU_CAPABILITY", "default");
    });
}

/// The lock every test here holds, with the numerics pinned.
fn torch_lock() -> MutexGuard<'static, ()> {
    let guard = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    pin_numerics();
    guard
}

mod common;

const GOLDEN: &str = "tests/data/golden.json";

fn config(name: &str, overrides: &[&str]) -> LoadedConfig {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../configs")
        .join(name);
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    LoadedConfig::load(&path, &o).expect("tiny config")
}

/// SHA-256 (hex) of the checkpoint's tensors file and of the path-independent part of its
/// state (counters, Adam step, normalization statistics, RNG, env snapshots, schedule).
fn digest(ckpt: &Path) -> BTreeMap<String, String> {
    let hex = |bytes: &[u8]| {
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let weights = std::fs::read(ckpt.join("model.safetensors")).expect("weights file");
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ckpt.join("state.json")).expect("state file"))
            .expect("state json");
    let kept: BTreeMap<&str, &serde_json::Value> = [
        "counters",
        "adam_step",
        "obs_norm",
        "reward_norm",
        "rng",
        "recent_return",
        "envs",
        "schedule",
    ]
    .into_iter()
    .map(|k| (k, &state[k]))
    .collect();
    let state_bytes = serde_json::to_vec(&kept).expect("serialize");
    BTreeMap::from([
        ("weights".to_string(), hex(&weights)),
        ("state".to_string(), hex(&state_bytes)),
    ])
}

type Digests = BTreeMap<String, BTreeMap<String, String>>;

fn golden_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(GOLDEN)
}

fn recorded() -> Digests {
    serde_json::from_slice(&std::fs::read(golden_path()).expect("golden digests"))
        .expect("golden json")
}

/// With `MOCC_BLESS_GOLDEN` set, records `got` (keeping the other tests' entries); otherwise
/// checks `got` against the recorded entries of the same names.
fn bless_or_check(got: &Digests, what: &str) {
    if std::env::var_os("MOCC_BLESS_GOLDEN").is_some() {
        let mut all = recorded();
        all.extend(got.clone());
        let text = serde_json::to_string_pretty(&all).expect("serialize") + "\n";
        std::fs::write(golden_path(), text).expect("write golden digests");
        return;
    }
    let all = recorded();
    let want: Digests = got
        .keys()
        .map(|k| {
            let recorded = all
                .get(k)
                .unwrap_or_else(|| panic!("no digest recorded for {k}"));
            (k.clone(), recorded.clone())
        })
        .collect();
    assert_eq!(got, &want, "{what}");
}

/// Copies a directory tree (a run folder of the fixtures) to `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create");
    for entry in std::fs::read_dir(from).expect("read fixture") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn train(name: &str, cfg: &LoadedConfig) -> PathBuf {
    let dir = common::temp_dir("golden", name);
    let mut t = Trainer::new(cfg, &dir).expect("trainer");
    t.run(None, |_| {}).expect("training").final_checkpoint
}

fn adapted(from: &Path) -> PathBuf {
    let spec = AdaptSpec {
        from: from.to_path_buf(),
        objective: [0.25, 0.45, 0.30],
        iterations: 3,
        replay: true,
        replay_fraction: 0.5,
        pool: None,
        seed: None,
    };
    let dir = common::temp_dir("golden", "adapt");
    let mut t = start_adaptation(&spec, &dir).expect("adaptation");
    t.run(None, |_| {})
        .expect("adaptation run")
        .final_checkpoint
}

#[test]
fn tiny_runs_match_their_recorded_digests() {
    let _g = torch_lock();
    let aurora = train("aurora", &config("tiny.yaml", &[]));
    let scaled = train(
        "scaled",
        &config("tiny.yaml", &["ppo.normalize_reward=true"]),
    );
    let mocc = train("mocc", &config("tiny-mocc.yaml", &[]));
    let adapt = adapted(&mocc);
    let got: Digests = [
        ("aurora", &aurora),
        ("aurora-reward-scaling", &scaled),
        ("mocc-landmarks", &mocc),
        ("adaptation-replay", &adapt),
    ]
    .into_iter()
    .map(|(k, p)| (k.to_string(), digest(p)))
    .collect();
    bless_or_check(
        &got,
        "tiny runs no longer train to the recorded checkpoints",
    );
}

#[test]
fn checkpoints_of_the_recording_code_resume_to_the_recorded_digests() {
    let _g = torch_lock();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/checkpoints-8e046a1");
    let got: Digests = [
        ("aurora", "aurora-resumed-8e046a1"),
        ("mocc", "mocc-landmarks-resumed-8e046a1"),
    ]
    .into_iter()
    .map(|(run, key)| {
        let dir = common::temp_dir("golden-resume", run);
        copy_tree(&fixtures.join(run), &dir);
        let mut t = Trainer::resume(&dir).expect("an old checkpoint resumes");
        let end = t.run(None, |_| {}).expect("training").final_checkpoint;
        (key.to_string(), digest(&end))
    })
    .collect();
    bless_or_check(
        &got,
        "old checkpoints no longer resume to the recorded digests",
    );
}
