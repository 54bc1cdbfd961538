//! Whose folder a command writes into, and what it leaves there (issue 40): a resume never
//! writes into a run the checkpoint does not belong to, an export never shares a folder with a
//! run, a new export replaces an old one whole, and output folders appear complete or not at
//! all, also when the command is killed or the disk is full.

mod common;

use common::mocc;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("mocc-out-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn succeeds(out: &Output) {
    assert!(out.status.success(), "failed: {}", stderr(out));
}

/// Failed with a clean exit (code 1, no panic) naming `needle`.
fn fails_naming(out: &Output, needle: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "not a clean failure: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(needle), "{needle:?} not in: {err}");
}

/// Every file below `dir` with its bytes, by path relative to `dir`.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Entries of `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `mocc train configs/tiny.yaml` (three updates, a checkpoint each) into `run`.
fn train_tiny(run: &Path, set: &[&str]) {
    let mut args = vec!["train", "configs/tiny.yaml", "--out", s(run)];
    for kv in set {
        args.extend(["--set", kv]);
    }
    succeeds(&mocc(&args));
}

#[test]
fn a_resume_never_writes_into_a_run_its_checkpoint_does_not_belong_to() {
    let root = temp("resume-owner");
    let (reference, victim) = (root.join("ref"), root.join("victim"));
    train_tiny(&reference, &[]);
    train_tiny(&victim, &["seed=11"]);
    let before = snapshot(&victim);
    let ckpt = reference.join("checkpoints/ckpt-00000002");

    // A checkpoint in a folder of the victim's that is not its checkpoints/.
    let imported = victim.join("imported/ckpt-00000002");
    common::copy_dir(&ckpt, &imported);
    let out = mocc(&["train", "--resume", s(&imported)]);
    fails_naming(&out, "outside a run's checkpoints/ folder");
    std::fs::remove_dir_all(victim.join("imported")).unwrap();

    // A checkpoint of another run copied into the victim's checkpoints/.
    let planted = victim.join("checkpoints/ckpt-00000009");
    common::copy_dir(&ckpt, &planted);
    let out = mocc(&["train", "--resume", s(&victim)]);
    fails_naming(&out, "another config");
    std::fs::remove_dir_all(&planted).unwrap();
    let after: Vec<_> = snapshot(&victim)
        .into_iter()
        .filter(|(p, _)| p != Path::new("mocc.lock"))
        .collect();
    let before: Vec<_> = before
        .into_iter()
        .filter(|(p, _)| p != Path::new("mocc.lock"))
        .collect();
    assert!(after == before, "the victim's run changed");

    // A checkpoint on its own continues only in a run folder of its own.
    let lonely = root.join("lonely");
    common::copy_dir(&ckpt, &lonely);
    let out = mocc(&["train", "--resume", s(&lonely)]);
    fails_naming(&out, "--resume CHECKPOINT --out NEW_RUN");
    assert_eq!(
        names(&root),
        ["lonely", "ref", "victim"],
        "nothing was created"
    );
    let branch = root.join("branch");
    succeeds(&mocc(&[
        "train",
        "--resume",
        s(&lonely),
        "--out",
        s(&branch),
    ]));
    assert_eq!(
        names(&branch.join("checkpoints")),
        ["ckpt-00000002", "ckpt-00000003", "mocc-output.json"]
    );
    // It ends where the run it came from ended.
    let weights =
        |run: &Path| std::fs::read(run.join("checkpoints/ckpt-00000003/model.safetensors"));
    assert_eq!(weights(&branch).unwrap(), weights(&reference).unwrap());
    // Into a folder with checkpoints of its own, it is refused.
    let out = mocc(&["train", "--resume", s(&lonely), "--out", s(&victim)]);
    fails_naming(&out, "already holds checkpoints");

    // A config beside --resume is refused, not ignored.
    let out = mocc(&["train", "/nonexistent.yaml", "--resume", s(&reference)]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot be used with"),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_rerun_of_a_run_killed_before_its_first_checkpoint_logs_each_update_once() {
    let root = temp("rerun");
    let run = root.join("run");
    // An attempt killed after it logged updates and before its first checkpoint (the cadence
    // is past the budget, so only the end would have saved one).
    let args = [
        "train",
        "configs/tiny.yaml",
        "--out",
        s(&run),
        "--set",
        "budget.env_steps=100000000",
        "--set",
        "checkpoint.every_updates=100000",
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_mocc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let logged =
        || std::fs::read_to_string(run.join("metrics.csv")).is_ok_and(|t| t.lines().count() > 20);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !logged() {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing logged in 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let ckpts = run.join("checkpoints");
    assert!(
        !ckpts.exists() || !names(&ckpts).iter().any(|n| n.starts_with("ckpt-")),
        "killed after a checkpoint"
    );
    // The same command again, with a budget it finishes: every (step, tag) once.
    train_tiny(&run, &[]);
    let csv = std::fs::read_to_string(run.join("metrics.csv")).unwrap();
    let mut seen = std::collections::HashSet::new();
    for line in csv.lines().skip(1) {
        let cols: Vec<&str> = line.split(',').collect();
        assert!(seen.insert((cols[1], cols[2])), "logged twice: {line}");
    }
    // A folder that holds anything a run does not write is not taken for one.
    let stranger = root.join("stranger");
    std::fs::create_dir_all(&stranger).unwrap();
    std::fs::write(stranger.join("notes.txt"), "mine").unwrap();
    let out = mocc(&["train", "configs/tiny.yaml", "--out", s(&stranger)]);
    fails_naming(&out, "\"notes.txt\", which a run does not write");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn exports_and_runs_never_share_a_folder_and_an_export_is_replaced_whole() {
    let root = temp("export-folders");
    let run = root.join("run");
    train_tiny(&run, &[]);
    // An export into the run folder is refused, and the run is untouched.
    let out = mocc(&["export", s(&run), "--out", s(&run)]);
    fails_naming(&out, "holds the outputs of `mocc train`, not an export");
    assert!(!run.join("policy.json").exists());
    // A run into an export folder is refused.
    let shipped = root.join("aurora-copy");
    common::copy_dir(Path::new("checkpoints/aurora"), &shipped);
    let out = mocc(&["train", "configs/tiny.yaml", "--out", s(&shipped)]);
    fails_naming(&out, "which a run does not write");
    // A folder that is both (made by hand) is refused by eval rather than guessed at.
    common::copy_dir(&shipped, &run.join("."));
    let suite = root.join("suite.yaml");
    std::fs::write(
        &suite,
        "networks:\n  - {bw_pps: 100, delay_s: 0.05, queue_pkts: 10}\nseeds: [0]\nsteps: 20\n",
    )
    .unwrap();
    let out = mocc(&[
        "eval",
        "--policy",
        s(&run),
        "--suite",
        s(&suite),
        "--out",
        s(&root.join("ev")),
    ]);
    fails_naming(&out, "ambiguous");
    for f in ["policy.json", "policy.safetensors"] {
        std::fs::remove_file(run.join(f)).unwrap();
    }
    // A TorchScript export, then a plain one into the same folder: no policy.pt is left.
    let export = root.join("exA");
    let first = run.join("checkpoints/ckpt-00000001");
    succeeds(&mocc(&[
        "export",
        s(&first),
        "--out",
        s(&export),
        "--torchscript",
    ]));
    assert!(export.join("policy.pt").is_file());
    succeeds(&mocc(&["export", s(&run), "--out", s(&export)]));
    assert_eq!(names(&export), ["policy.json", "policy.safetensors"]);
    let spec = std::fs::read_to_string(export.join("policy.json")).unwrap();
    assert!(
        spec.contains("ckpt-00000003"),
        "not the newest checkpoint's: {spec}"
    );
    assert_eq!(names(&root), ["aurora-copy", "exA", "run", "suite.yaml"]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_killed_export_leaves_the_previous_export_whole() {
    let root = temp("export-kill");
    let run = root.join("run");
    train_tiny(&run, &[]);
    let export = root.join("ex");
    succeeds(&mocc(&["export", s(&run), "--out", s(&export)]));
    let old = snapshot(&export);
    // Killed at times spread over the export's life (it takes ~0.1-1 s with tracing).
    for k in 0..12u64 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mocc"))
            .args(["export", s(&run), "--out", s(&export), "--torchscript"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(40 * k));
        let _ = child.kill();
        let _ = child.wait();
        let now = snapshot(&export);
        let complete_new = names(&export) == ["policy.json", "policy.pt", "policy.safetensors"];
        assert!(
            now == old || complete_new,
            "after a kill at {} ms: {:?}",
            40 * k,
            names(&export)
        );
        let visible: Vec<String> = names(&root)
            .into_iter()
            .filter(|n| !n.starts_with('.'))
            .collect();
        assert_eq!(visible, ["ex", "run"]);
    }
    // The next export cleans what the killed ones left.
    succeeds(&mocc(&["export", s(&run), "--out", s(&export)]));
    assert_eq!(names(&root), ["ex", "run"]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_killed_pair_leaves_no_folder_and_a_rerun_succeeds() {
    let root = temp("pair-kill");
    let out = root.join("pair");
    std::fs::create_dir_all(&root).unwrap();
    for k in 0..6u64 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mocc"))
            .args([
                "pair",
                "checkpoints/mocc-pair/competitive",
                "checkpoints/mocc-pair/competitive",
                "--out",
                s(&out),
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(3 * k));
        let _ = child.kill();
        let _ = child.wait();
        if out.exists() {
            // Only complete: it loads.
            assert!(out.join("competitive/policy.json").is_file());
            std::fs::remove_dir_all(&out).unwrap();
        }
    }
    succeeds(&mocc(&[
        "pair",
        "checkpoints/mocc-pair/competitive",
        "checkpoints/mocc-pair/competitive",
        "--out",
        s(&out),
    ]));
    assert_eq!(names(&root), ["pair"]);
    let _ = std::fs::remove_dir_all(&root);
}

/// A tmpfs of `kib` KiB mounted at a fresh folder (root only), unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// None where this process may not mount (not root): the caller then skips, unless
    /// `MOCC_REQUIRE_ROOT=1` (as `make test` sets for root) demands the check.
    fn mount(name: &str, kib: u64) -> Option<Self> {
        let dir = temp(name);
        std::fs::create_dir_all(&dir).unwrap();
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={kib}k"),
                "tmpfs",
                s(&dir),
            ])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|st| st.success());
        if ok {
            return Some(Self(dir));
        }
        assert!(
            std::env::var("MOCC_REQUIRE_ROOT").as_deref() != Ok("1"),
            "cannot mount a tmpfs, and MOCC_REQUIRE_ROOT=1"
        );
        eprintln!("skipped: mounting a tmpfs needs root");
        None
    }

    /// Fills the file system until fewer than `keep` bytes are free.
    fn fill(&self, keep: u64) {
        let mut f = std::fs::File::create(self.0.join("ballast")).unwrap();
        let block = vec![1u8; 4096];
        loop {
            let free = mocc_outputs::staged_dir::free_bytes(&self.0).unwrap();
            if free <= keep || std::io::Write::write_all(&mut f, &block).is_err() {
                break;
            }
        }
        let _ = f.sync_all();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_full_disk_keeps_the_previous_results_and_exports() {
    let Some(fs) = Tmpfs::mount("full", 4096) else {
        return;
    };
    let root = temp("full-src");
    let run = root.join("run");
    train_tiny(&run, &[]);
    let suite = root.join("suite.yaml");
    std::fs::write(
        &suite,
        "networks:\n  - {bw_pps: 100, delay_s: 0.05, queue_pkts: 10}\nseeds: [0, 1]\nsteps: 30\n",
    )
    .unwrap();
    let (ev, ex) = (fs.0.join("eval"), fs.0.join("ex"));
    let eval = |out: &Path| {
        mocc(&[
            "eval",
            "--policy",
            "const:50",
            "--suite",
            s(&suite),
            "--out",
            s(out),
        ])
    };
    succeeds(&eval(&ev));
    succeeds(&mocc(&["export", s(&run), "--out", s(&ex)]));
    let (old_eval, old_export) = (snapshot(&ev), snapshot(&ex));
    fs.fill(8 * 1024);
    let out = eval(&ev);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        snapshot(&ev) == old_eval,
        "the last complete results were replaced"
    );
    let out = mocc(&["export", s(&run), "--out", s(&ex), "--torchscript"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("No space left") || err.contains("bytes free"),
        "{err}"
    );
    assert!(
        snapshot(&ex) == old_export,
        "the previous export was replaced"
    );
    let visible: Vec<String> = names(&fs.0)
        .into_iter()
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(visible, ["ballast", "eval", "ex"]);
    let _ = std::fs::remove_dir_all(&root);
}

/// The last stdout line of a command that succeeded, as JSON.
fn json_line(out: &Output) -> serde_json::Value {
    succeeds(out);
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().expect("a result line")).expect("JSON")
}

#[test]
fn a_killed_sweep_resumes_to_the_rows_of_an_uninterrupted_one() {
    let root = temp("sweep-kill");
    std::fs::create_dir_all(&root).unwrap();
    let suite = root.join("suite.yaml");
    std::fs::write(
        &suite,
        "networks:\n  - {bw_pps: 200, delay_s: 0.05, queue_pkts: 20}\n\
         objectives: [[0.6, 0.3, 0.1]]\nseeds: [0]\nsteps: 20\n",
    )
    .unwrap();
    let args = |out: &Path, resume: bool| {
        let mut a: Vec<String> = [
            "sweep",
            "configs/tiny-mocc.yaml",
            "--omega",
            "3,6",
            "--suite",
            s(&suite),
            "--out",
            s(out),
            "--set",
            "budget.env_steps=1536",
        ]
        .map(String::from)
        .to_vec();
        if resume {
            a.push("--resume".into());
        }
        a
    };
    let run = |a: Vec<String>| mocc(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let whole = json_line(&run(args(&root.join("whole"), false)));
    let cut = root.join("cut");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mocc"))
        .args(args(&cut, false))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the second run has saved a checkpoint.
    let second = cut.join("omega-6/checkpoints");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !second.exists() || !names(&second).iter().any(|n| n.starts_with("ckpt-")) {
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint of omega 6 in 120 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    fails_naming(&run(args(&cut, false)), "continue it with --resume");
    // A resume with other arguments is refused, naming the first that differs.
    let mut other = args(&cut, true);
    other[3] = "3,10".into();
    fails_naming(&run(other), "omega: [3,6] then, [3,10] now");
    let resumed = json_line(&run(args(&cut, true)));
    let (whole, resumed) = (whole.as_array().unwrap(), resumed.as_array().unwrap());
    assert_eq!(whole.len(), resumed.len());
    for (a, b) in whole.iter().zip(resumed) {
        for key in ["omega", "env_steps", "mean", "p10", "p50", "p90"] {
            assert_eq!(a[key], b[key], "{key}: {a} against {b}");
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}
