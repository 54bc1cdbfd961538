//! Behaviour pin for refactors: tiny trainings (Aurora, Aurora with reward scaling, MOCC's
//! landmark schedule, adaptation with requirement replay) must end in checkpoints whose bytes
//! match the digests recorded in `tests/data/golden.json`, and checkpoints written mid-run by
//! the code of 8e046a1 (`tests/data/checkpoints-8e046a1`) must resume to their recorded digests:
//! old checkpoints keep resuming, bit for bit.
//!
//! Bits hold only between machines that compute alike, so every recording sits beside the
//! numerics fingerprint of the machine that made it ([`mocc_agents::fingerprint`]: the digest of
//! one fixed update through the learner's kernels). Each check runs with both kinds of
//! numerics (`ppo.numerics`):
//! - where this machine's fingerprint is one recorded, the digests must match bit for bit;
//! - elsewhere the same runs are checked by what holds on any machine: two runs are bit for bit
//!   the same, so are runs on 1 and 2 simulator threads, a run resumed after its first update
//!   ends where the uninterrupted one does, and the fixed update's loss and gradient norm agree
//!   with the recording's to a relative 1e-4 (f32 sums of 256 rows round at about 256 x 2^-24
//!   = 1.5e-5 relative; tiny runs themselves are compared by properties only, since one rounding
//!   difference in an action moves a simulated packet and the run with it).
//!
//! Each check writes which of the two it made to the test's standard error (uncaptured), so a
//! CI log says it. Portable numerics are meant to give one fingerprint on every x86-64 machine
//! with AVX2; native ones one per kind of machine.
//!
//! A change that is meant to alter training (new defaults, a different sampler) re-records the
//! digests with `MOCC_BLESS_GOLDEN=1 cargo test --profile ci -p mocc-training --test golden`
//! and says so in its commit message; a refactor must leave them untouched. Blessing replaces
//! the recording of this machine's fingerprint and drops the others (they belong to the old
//! behaviour); a machine of another kind adds its own recording of unchanged behaviour with
//! `MOCC_BLESS_GOLDEN=add`.

use mocc_agents::{fingerprint, Fingerprint, Numerics};
use mocc_training::adaptation::{start_adaptation, AdaptSpec};
use mocc_training::config::LoadedConfig;
use mocc_training::trainer::Trainer;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, Once};

/// libtorch's global RNG initializes native weights: build trainers one at a time.
static TORCH: Mutex<()> = Mutex::new(());

/// Replaces the ATen kernel build the tests pin (`default`), to check a machine whose
/// arithmetic differs from the recording's on this one (`avx2`, say).
const CAPABILITY_OVERRIDE: &str = "MOCC_GOLDEN_ATEN_CAPABILITY";

/// Before libtorch's first use in this process: ATen's kernels without vector extensions and
/// MKL's compatible path ([`mocc_agents::pin_portable_kernels`]), or the kernel build
/// [`CAPABILITY_OVERRIDE`] names. Both are read once, at their first use.
fn pin_numerics() {
    static PIN: Once = Once::new();
    PIN.call_once(|| {
        if let Some(capability) = std::env::var_os(CAPABILITY_OVERRIDE) {
            std::env::set_var(mocc_agents::numerics::ATEN_CAPABILITY_VAR, capability);
        }
        mocc_agents::pin_portable_kernels();
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

/// Weights and state digests of each run, by run name.
type Digests = BTreeMap<String, BTreeMap<String, String>>;

/// A machine's fingerprint as recorded (numbers as Rust prints them, which parse back exactly).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct RecordedFingerprint {
    digest: String,
    loss: String,
    grad_norm: String,
    /// Digests of the fixed update's stages, in order (the first that differs on another
    /// machine says where its arithmetic parts from the recording's).
    stages: Vec<(String, String)>,
    /// The recording machine's CPU, for people (never compared).
    cpu: String,
}

impl RecordedFingerprint {
    fn of(f: &Fingerprint) -> Self {
        Self {
            digest: f.digest.clone(),
            loss: format!("{:?}", f.loss),
            grad_norm: format!("{:?}", f.grad_norm),
            stages: f.stages.clone(),
            cpu: mocc_agents::fingerprint::cpu_model(),
        }
    }
}

/// One machine's recording of every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Recording {
    fingerprint: RecordedFingerprint,
    runs: Digests,
}

/// The recordings of each kind of numerics (`native`, `portable`).
type Golden = BTreeMap<String, Vec<Recording>>;

fn golden_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(GOLDEN)
}

fn recorded() -> Golden {
    let path = golden_path();
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Writes a line past the test harness's capture, so that a CI log shows it.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "golden: {line}");
}

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

/// A run to digest: how to start it (and to resume it for the resume property).
#[derive(Clone, Copy)]
enum Run {
    /// A tiny config with overrides, trained from scratch.
    Fresh(&'static str, &'static [&'static str]),
    /// A MOCC tiny run adapted with requirement replay.
    Adapted,
    /// A fixture checkpoint of 8e046a1 (a folder under `tests/data/checkpoints-8e046a1`)
    /// resumed to its end.
    Resumed(&'static str),
}

/// A tiny config with its overrides, `numerics` and `extra` overrides.
fn fresh_config(
    file: &str,
    overrides: &[&str],
    numerics: Numerics,
    extra: &[&str],
) -> LoadedConfig {
    let numerics_set = format!("ppo.numerics={numerics}");
    let mut all: Vec<&str> = overrides.to_vec();
    all.push(&numerics_set);
    all.extend_from_slice(extra);
    config(file, &all)
}

/// Trains `run` with `numerics` and extra overrides into a fresh folder named `name`; returns
/// the final checkpoint.
fn train(run: Run, numerics: Numerics, extra: &[&str], name: &str) -> PathBuf {
    match run {
        Run::Fresh(file, overrides) => {
            let dir = common::temp_dir("golden", name);
            let cfg = fresh_config(file, overrides, numerics, extra);
            let mut t = Trainer::new(&cfg, &dir).expect("trainer");
            t.run(None, |_| {}).expect("training").final_checkpoint
        }
        Run::Adapted => {
            let from = train(
                Run::Fresh("tiny-mocc.yaml", &[]),
                numerics,
                extra,
                &format!("{name}-base"),
            );
            let spec = AdaptSpec {
                from,
                objective: [0.25, 0.45, 0.30],
                iterations: 3,
                replay: true,
                replay_fraction: 0.5,
                pool: None,
                seed: None,
            };
            let dir = common::temp_dir("golden", name);
            let mut t = start_adaptation(&spec, &dir).expect("adaptation");
            t.run(None, |_| {})
                .expect("adaptation run")
                .final_checkpoint
        }
        Run::Resumed(fixture) => {
            let fixtures =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/checkpoints-8e046a1");
            let dir = common::temp_dir("golden-resume", name);
            copy_tree(&fixtures.join(fixture), &dir);
            let mut t = Trainer::resume(&dir).expect("an old checkpoint resumes");
            t.run(None, |_| {}).expect("training").final_checkpoint
        }
    }
}

/// A fresh run stopped after its first update and resumed to the end.
fn train_resumed(file: &str, overrides: &[&str], numerics: Numerics, name: &str) -> PathBuf {
    let dir = common::temp_dir("golden", name);
    let cfg = fresh_config(file, overrides, numerics, &[]);
    let mut first = Trainer::new(&cfg, &dir).expect("trainer");
    first.run(Some(1), |_| {}).expect("first update");
    drop(first);
    let mut second = Trainer::resume(&dir).expect("resume");
    second.run(None, |_| {}).expect("training").final_checkpoint
}

/// Digests of `runs` (name, run) trained with `numerics`.
fn digests(runs: &[(&str, Run)], numerics: Numerics, extra: &[&str], tag: &str) -> Digests {
    runs.iter()
        .map(|&(key, run)| {
            let end = train(run, numerics, extra, &format!("{numerics}-{tag}-{key}"));
            (key.to_string(), digest(&end))
        })
        .collect()
}

/// The recording of `numerics` whose fingerprint is this machine's, if any, and the first one
/// (to compare numbers with) otherwise.
fn recording_for<'a>(
    golden: &'a Golden,
    numerics: Numerics,
    mine: &Fingerprint,
) -> (Option<&'a Recording>, Option<&'a Recording>) {
    let list = golden
        .get(numerics.name())
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let same = list.iter().find(|r| r.fingerprint.digest == mine.digest);
    (same, list.first())
}

/// Records `got` as this machine's recording of `numerics` (`MOCC_BLESS_GOLDEN=add` keeps the
/// other machines' recordings, any other value drops them).
fn bless(numerics: Numerics, mine: &Fingerprint, got: &Digests) {
    let keep_others = std::env::var("MOCC_BLESS_GOLDEN").is_ok_and(|v| v == "add");
    let mut golden = recorded();
    let list = golden.entry(numerics.name().to_string()).or_default();
    let mut runs = list
        .iter()
        .find(|r| r.fingerprint.digest == mine.digest)
        .map(|r| r.runs.clone())
        .unwrap_or_default();
    runs.extend(got.clone());
    if keep_others {
        list.retain(|r| r.fingerprint.digest != mine.digest);
    } else {
        list.clear();
    }
    list.push(Recording {
        fingerprint: RecordedFingerprint::of(mine),
        runs,
    });
    let text = serde_json::to_string_pretty(&golden).expect("serialize") + "\n";
    std::fs::write(golden_path(), text).expect("write golden digests");
}

/// The first stage of the fixed update whose digest differs between two machines.
fn first_difference(mine: &[(String, String)], recorded: &[(String, String)]) -> String {
    mine.iter().zip(recorded).find(|(a, b)| a != b).map_or(
        "no stage (only the overall digest)".to_string(),
        |(a, _)| format!("its {} stage", a.0),
    )
}

/// `|got - want| <= 1e-4 |want|` for a recorded number.
fn assert_close(what: &str, got: f64, recorded: &str) {
    let want: f64 = recorded.parse().expect("a recorded number");
    assert!(
        (got - want).abs() <= 1e-4 * want.abs(),
        "{what}: {got} here, {want} recorded: more than rounding apart"
    );
}

/// Checks `runs` with `numerics`: bit for bit against this machine's recording, or by the
/// properties of the module page where the recording is another machine's.
fn check(runs: &[(&str, Run)], numerics: Numerics, what: &str) {
    let mine = fingerprint(numerics);
    if std::env::var_os("MOCC_BLESS_GOLDEN").is_some() {
        bless(numerics, &mine, &digests(runs, numerics, &[], "bless"));
        return;
    }
    let golden = recorded();
    match recording_for(&golden, numerics, &mine) {
        (Some(recording), _) => {
            say(&format!(
                "{what}, {numerics} numerics: this machine's fingerprint {} is the recording's \
                 ({}): checked bit for bit",
                &mine.digest[..12],
                recording.fingerprint.cpu
            ));
            let got = digests(runs, numerics, &[], "bits");
            let want: Digests = got
                .keys()
                .map(|k| {
                    let digest = recording
                        .runs
                        .get(k)
                        .unwrap_or_else(|| panic!("no {numerics} digest recorded for {k}"));
                    (k.clone(), digest.clone())
                })
                .collect();
            assert_eq!(
                got, want,
                "{what} ({numerics} numerics): not the recorded digests"
            );
        }
        (None, first) => {
            say(&format!(
                "{what}, {numerics} numerics: this machine's fingerprint {} is not recorded \
                 (recorded: {}): checked by properties (repeat, thread count, resume, the \
                 fixed update within rounding), not bits",
                &mine.digest[..12],
                first.map_or("none".to_string(), |r| format!(
                    "{} on {}; the fixed update first differs at {}",
                    &r.fingerprint.digest[..12],
                    r.fingerprint.cpu,
                    first_difference(&mine.stages, &r.fingerprint.stages)
                ))
            ));
            check_properties(runs, numerics, what);
            if let Some(r) = first {
                assert_close("fixed update loss", mine.loss, &r.fingerprint.loss);
                assert_close(
                    "fixed update gradient norm",
                    mine.grad_norm,
                    &r.fingerprint.grad_norm,
                );
            }
        }
    }
}

/// What holds on any machine: two runs agree bit for bit, and so do runs on one simulator
/// thread; a fresh run resumed after one update ends where the uninterrupted one does.
fn check_properties(runs: &[(&str, Run)], numerics: Numerics, what: &str) {
    let once = digests(runs, numerics, &[], "once");
    let again = digests(runs, numerics, &[], "again");
    assert_eq!(once, again, "{what} ({numerics}): two runs differ");
    let fresh: Vec<(&str, Run)> = runs
        .iter()
        .copied()
        .filter(|(_, r)| !matches!(r, Run::Resumed(_)))
        .collect();
    let one_thread = digests(&fresh, numerics, &["threads=1"], "one-thread");
    for (key, d) in &one_thread {
        assert_eq!(
            Some(d),
            once.get(key),
            "{what} ({numerics}): {key} on 1 thread differs"
        );
    }
    for &(key, run) in runs {
        if let Run::Fresh(file, overrides) = run {
            let resumed = train_resumed(
                file,
                overrides,
                numerics,
                &format!("{numerics}-resumed-{key}"),
            );
            assert_eq!(
                Some(&digest(&resumed)),
                once.get(key),
                "{what} ({numerics}): {key} resumed after one update differs"
            );
        }
    }
}

/// The tiny runs of the pin.
const TINY_RUNS: [(&str, Run); 4] = [
    ("aurora", Run::Fresh("tiny.yaml", &[])),
    (
        "aurora-reward-scaling",
        Run::Fresh("tiny.yaml", &["ppo.normalize_reward=true"]),
    ),
    ("mocc-landmarks", Run::Fresh("tiny-mocc.yaml", &[])),
    ("adaptation-replay", Run::Adapted),
];

/// The checkpoints of 8e046a1, resumed (they ran native numerics).
const OLD_CHECKPOINTS: [(&str, Run); 2] = [
    ("aurora-resumed-8e046a1", Run::Resumed("aurora")),
    ("mocc-landmarks-resumed-8e046a1", Run::Resumed("mocc")),
];

#[test]
fn tiny_runs_with_portable_numerics_match_their_recorded_digests() {
    let _g = torch_lock();
    check(&TINY_RUNS, Numerics::Portable, "tiny runs");
}

#[test]
fn tiny_runs_with_native_numerics_match_their_recorded_digests() {
    let _g = torch_lock();
    check(&TINY_RUNS, Numerics::Native, "tiny runs");
}

#[test]
fn checkpoints_of_the_recording_code_resume_to_the_recorded_digests() {
    let _g = torch_lock();
    check(&OLD_CHECKPOINTS, Numerics::Native, "old checkpoints");
}

/// The check a machine of another kind makes, made here: this test binary again, with ATen's
/// vectorized kernels instead of the pinned ones, so that the native and portable
/// fingerprints both differ from this machine's recordings. Every check must then say it
/// checked properties, and pass. (The failure of an AMD machine against recordings made on an
/// Intel one, before fingerprints, is this case.)
#[test]
fn a_machine_that_computes_otherwise_is_checked_by_properties() {
    if std::env::var_os(CAPABILITY_OVERRIDE).is_some()
        || std::env::var_os("MOCC_BLESS_GOLDEN").is_some()
    {
        return; // the child process itself, or a bless
    }
    let other = other_kernels();
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--test-threads=1", "recorded_digests"])
        .args(["--skip", "a_machine_that_computes_otherwise"])
        .env(CAPABILITY_OVERRIDE, other)
        .output()
        .expect("run the golden tests again");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "under {other} kernels:\n{stdout}\n{stderr}"
    );
    let by_properties = stderr.matches("checked by properties").count();
    let by_bits = stderr.matches("checked bit for bit").count();
    say(&format!(
        "under ATen's {other} kernels: {by_properties} checks by properties, {by_bits} bit for bit"
    ));
    assert_eq!(by_properties + by_bits, 3, "{stderr}");
    if other == "avx2" {
        assert_eq!(
            by_properties, 3,
            "the avx2 kernels computed the recorded bits:\n{stderr}"
        );
    }
}

/// ATen's vectorized kernel build this CPU runs (`default`, the pinned one, where it has no
/// AVX2: the child then checks bits, and says so).
fn other_kernels() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        return "avx2";
    }
    "default"
}
