//! Data-parallel training under `mpirun` (feature `mpi`): two ranks, oversubscribed on any
//! machine, as root where CI runs. `make test` builds the feature and runs these.
#![cfg(feature = "mpi")]

mod common;

use mocc_training::checkpoint::Checkpoint;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `mpirun -np N mocc ARGS` from the repository root.
fn mpirun(ranks: usize, args: &[&str]) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args(["-np", &ranks.to_string(), "--oversubscribe"])
        .arg(env!("CARGO_BIN_EXE_mocc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        // mpirun refuses root without these (CI runs as root).
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        // One MPI job on a machine without a high-speed network: shared memory only.
        .env("OMPI_MCA_btl", "self,vader")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1");
    cmd
}

fn run_ok(mut cmd: Command) -> Output {
    let out = cmd.output().expect("mpirun runs (OpenMPI installed?)");
    assert!(
        out.status.success(),
        "{:?} failed: {}\n{}",
        cmd,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mocc-mpi-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The tiny config with one full-batch minibatch per epoch (the update of N ranks then equals
/// one process's up to float rounding).
fn tiny_args<'a>(out: &'a str, envs: &'a str) -> Vec<&'a str> {
    vec![
        "train",
        "configs/tiny.yaml",
        "--out",
        out,
        "--set",
        envs,
        "--set",
        "ppo.num_minibatches=1",
        "--set",
        "ppo.normalize_reward=true",
    ]
}

fn last_json(out: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().expect("a summary line");
    serde_json::from_str(line).expect("the summary is JSON")
}

fn checkpoint(dir: &Path, updates: u64) -> Checkpoint {
    Checkpoint::open(&dir.join(format!("checkpoints/ckpt-{updates:08}"))).expect("opens")
}

/// The largest absolute difference between two checkpoints' tensors of the same names.
fn max_difference(a: &Checkpoint, b: &Checkpoint) -> f64 {
    assert_eq!(a.tensors.len(), b.tensors.len());
    a.tensors
        .iter()
        .map(|(name, t)| {
            let u = b.tensors.get(name).expect("same tensors");
            (t - u).abs().max().double_value(&[])
        })
        .fold(0.0, f64::max)
}

#[test]
fn two_ranks_of_two_envs_train_as_one_process_of_four() {
    let two = temp_dir("two");
    let one = temp_dir("one");
    let out = run_ok(mpirun(2, &tiny_args(two.to_str().unwrap(), "envs=2")));
    let summary = last_json(&out);
    assert_eq!(summary["ranks"], 2);
    assert_eq!(summary["env_steps"], 768, "steps of both ranks count");
    // Only rank 0 prints the summary.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .matches("\"ranks\"")
            .count(),
        1
    );
    let single = Command::new(env!("CARGO_BIN_EXE_mocc"))
        .args(tiny_args(one.to_str().unwrap(), "envs=4"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("mocc runs");
    assert!(single.status.success());
    let (a, b) = (checkpoint(&two, 3), checkpoint(&one, 3));
    let diff = max_difference(&a, &b);
    assert!(
        diff < 1e-4,
        "weights differ by {diff} from the one-process run"
    );
    assert_eq!(a.state.counters.env_steps, b.state.counters.env_steps);
    // The same envs ran: the same episodes ended.
    assert_eq!(a.state.counters.episodes, b.state.counters.episodes);
    let _ = std::fs::remove_dir_all(&two);
    let _ = std::fs::remove_dir_all(&one);
}

#[test]
fn a_run_on_two_ranks_resumes_bit_for_bit_and_only_with_two() {
    let full = temp_dir("full");
    run_ok(mpirun(2, &tiny_args(full.to_str().unwrap(), "envs=2")));
    // A copy stopped after update 2: its last checkpoint is the second.
    let split = temp_dir("split");
    common::copy_dir(&full, &split);
    std::fs::remove_dir_all(split.join("checkpoints/ckpt-00000003")).expect("removes");
    let ckpt2 = split.join("checkpoints/ckpt-00000002");
    let refused = mpirun(3, &["train", "--resume", ckpt2.to_str().unwrap()])
        .output()
        .expect("mpirun runs");
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("written by 2 rank(s)"), "{err}");
    run_ok(mpirun(2, &["train", "--resume", ckpt2.to_str().unwrap()]));
    let (a, b) = (checkpoint(&full, 3), checkpoint(&split, 3));
    assert_eq!(
        max_difference(&a, &b),
        0.0,
        "the resumed run is the uninterrupted one"
    );
    assert_eq!(a.state.rng, b.state.rng);
    let _ = std::fs::remove_dir_all(&full);
    let _ = std::fs::remove_dir_all(&split);
}

#[test]
fn a_killed_rank_ends_the_job_and_leaves_the_last_checkpoint_whole() {
    let dir = temp_dir("killed");
    let marker = dir.to_str().expect("a UTF-8 path").to_string();
    let child = mpirun(
        2,
        &[
            "train",
            "configs/tiny.yaml",
            "--out",
            dir.to_str().unwrap(),
            "--set",
            "envs=2",
            "--set",
            "budget.env_steps=100000000",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("mpirun starts");
    // Ends the job however the test ends.
    let mut child = KillOnDrop(child);
    let started = Instant::now();
    while checkpoints(&dir).len() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no checkpoints"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let rank1 = rank_pid(&marker, 1).expect("rank 1 runs");
    assert!(Command::new("kill")
        .args(["-9", &rank1.to_string()])
        .status()
        .expect("kill runs")
        .success());
    let killed_at = Instant::now();
    let status = loop {
        if let Some(s) = child.0.try_wait().expect("waits") {
            break s;
        }
        assert!(
            killed_at.elapsed() < Duration::from_secs(60),
            "the job still runs a minute after a rank died"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!status.success(), "a job with a dead rank must fail");
    // mpirun ends the other ranks as it goes; give the last a moment to exit.
    let ended = Instant::now();
    while rank_pid(&marker, 0).is_some() {
        assert!(
            ended.elapsed() < Duration::from_secs(20),
            "rank 0 still runs after the job ended"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Every checkpoint left is whole: it opens (weights digest checked).
    let left = checkpoints(&dir);
    assert!(!left.is_empty());
    for path in left {
        Checkpoint::open(&path).expect("a whole checkpoint");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A child process killed when dropped (a failed assertion leaves no job running).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // SIGTERM: mpirun then ends its ranks (SIGKILL would leave them running).
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .stderr(Stdio::null())
            .status();
        let _ = self.0.wait();
    }
}

fn checkpoints(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir.join("checkpoints")) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.join("state.json").exists())
        .collect()
}

/// The process with MPI rank `rank` of the job whose command line holds `marker` (its run
/// folder), from `/proc`.
fn rank_pid(marker: &str, rank: usize) -> Option<u32> {
    let want = format!("OMPI_COMM_WORLD_RANK={rank}");
    std::fs::read_dir("/proc").ok()?.find_map(|e| {
        let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        let cmd = String::from_utf8_lossy(&cmdline);
        let env = String::from_utf8_lossy(&env);
        let ours = cmd.contains(marker);
        (ours && env.split('\0').any(|kv| kv == want)).then_some(pid)
    })
}

#[test]
fn a_sweep_spreads_its_runs_over_the_ranks_and_rank_zero_collects_them() {
    let out = temp_dir("sweep");
    std::fs::create_dir_all(&out).expect("creates");
    let suite = out.join("suite.yaml");
    std::fs::write(
        &suite,
        "networks:\n  - {bw_pps: 300, delay_s: 0.02, queue_pkts: 50, loss: 0.0}\n\
         objectives: [[0.6, 0.3, 0.1]]\nseeds: [0]\nsteps: 20\n",
    )
    .expect("writes");
    let o = run_ok(mpirun(
        2,
        &[
            "sweep",
            "configs/tiny-mocc.yaml",
            "--omega",
            "3,6",
            "--seeds",
            "1,2",
            "--suite",
            suite.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--set",
            "budget.env_steps=384",
        ],
    ));
    let rows = last_json(&o);
    let got: Vec<(u64, u64)> = rows
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| (r["omega"].as_u64().unwrap(), r["seed"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        got,
        vec![(3, 1), (3, 2), (6, 1), (6, 2)],
        "every run, in run order"
    );
    // Each rank trained its own runs: rank 0 runs 0 and 2, rank 1 runs 1 and 3.
    let stderr = String::from_utf8_lossy(&o.stderr);
    for (omega, seed, rank) in [(3, 1, 0), (3, 2, 1), (6, 1, 0), (6, 2, 1)] {
        assert!(
            stderr.contains(&format!("omega {omega} seed {seed} (rank {rank})")),
            "{stderr}"
        );
        assert!(out
            .join(format!("omega-{omega}-s{seed}/checkpoints"))
            .is_dir());
    }
    // A run trained on rank 1 is the run one process trains with that seed.
    let single = temp_dir("sweep-single");
    let alone = Command::new(env!("CARGO_BIN_EXE_mocc"))
        .args([
            "sweep",
            "configs/tiny-mocc.yaml",
            "--omega",
            "3",
            "--seeds",
            "2",
            "--suite",
            suite.to_str().unwrap(),
            "--out",
            single.to_str().unwrap(),
            "--set",
            "budget.env_steps=384",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("mocc runs");
    assert!(alone.status.success());
    let alone = last_json(&alone);
    assert_eq!(alone[0]["p50"], rows[1]["p50"]);
    assert_eq!(alone[0]["env_steps"], rows[1]["env_steps"]);
    let csv = std::fs::read_to_string(out.join("sweep.csv")).expect("rank 0 wrote sweep.csv");
    assert_eq!(csv.lines().count(), 5);
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&single);
}
