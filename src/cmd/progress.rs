//! Training from the command line: the progress bar (or a line every 10 s), and a clean stop
//! on SIGINT or SIGTERM with a checkpoint and the exit status a shell expects; shared by
//! `mocc train`, its recipes, `mocc sweep` of a recipe and `mocc adapt`.

use indicatif::{ProgressBar, ProgressStyle};
use mocc_training::trainer::{Progress, TrainSummary, Trainer};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// Makes the first SIGINT or SIGTERM stop `trainer` within a minibatch (one process only:
/// ranks would stop at different updates).
pub fn stop_cleanly_on_signals(trainer: &mut Trainer) {
    stop_on_signals();
    trainer.stop_when(&STOP);
}

/// Exits with 128 + the signal that stopped training (after the caller said how to continue).
pub fn exit_for_signal() -> ! {
    std::process::exit(128 + STOP_SIGNAL.load(Ordering::SeqCst));
}

/// After a run a signal stopped: says how to continue it and exits with 128 + the signal.
pub fn exit_if_interrupted(summary: &TrainSummary, trainer: &Trainer) {
    if summary.interrupted {
        if summary.final_checkpoint.as_os_str().is_empty() {
            eprintln!(
                "interrupted before the first checkpoint: nothing saved in {}",
                trainer.run_dir().display()
            );
        } else {
            eprintln!(
                "interrupted: the last checkpoint is {}; continue with `mocc train --resume {}`",
                summary.final_checkpoint.display(),
                trainer.run_dir().display()
            );
        }
        std::process::exit(128 + STOP_SIGNAL.load(Ordering::SeqCst));
    }
}

/// Set by SIGINT or SIGTERM: training stops between updates with a checkpoint, or within an
/// update before its next minibatch, keeping the last complete checkpoint.
static STOP: AtomicBool = AtomicBool::new(false);
/// The signal that set [`STOP`] (the exit status is 128 + it, as a shell reports a signal).
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn request_stop(signal: libc::c_int) {
    STOP_SIGNAL.store(signal, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

/// Makes the first SIGINT or SIGTERM request a clean stop (a second one ends the process at
/// once: the handler resets itself).
fn stop_on_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is valid; the handler only stores to atomics, which is
        // async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = request_stop as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Trains to the end of the budget with a progress bar (or a line every 10 s when stderr is
/// not a terminal); returns the summary and each update's rollout reward on the run's
/// objective. Only rank 0 of several reports.
pub fn run_with_progress(trainer: &mut Trainer) -> anyhow::Result<(TrainSummary, Vec<f64>)> {
    trainer.record_git_revision(env!("MOCC_GIT_REVISION"));
    let reports = trainer.rank() == 0;
    if reports {
        eprintln!("run folder: {}", trainer.run_dir().display());
    }
    let total = trainer.total_updates();
    if reports && trainer.counters().updates >= total {
        eprintln!("the run is complete ({total} of {total} updates): nothing left to train");
    }
    let bar = progress_bar(total, trainer.counters().updates).filter(|_| reports);
    let mut last_line = Instant::now();
    let mut rewards = Vec::new();
    let summary = trainer.run(None, |p: &Progress| {
        rewards.push(p.rollout_reward);
        let ret = p
            .mean_return
            .map_or_else(|| "-".to_string(), |r| format!("{r:.2}"));
        match &bar {
            Some(b) => {
                b.set_position(p.updates);
                b.set_message(format!("{:.0} steps/s  return {ret}", p.steps_per_sec));
            }
            None if reports
                && (last_line.elapsed() >= Duration::from_secs(10) || p.updates == total) =>
            {
                last_line = Instant::now();
                eprintln!(
                    "update {}/{}  env_steps {}  {:.0} steps/s  return {ret}  kl {:.4}",
                    p.updates, p.total_updates, p.env_steps, p.steps_per_sec, p.losses.approx_kl
                );
            }
            None => {}
        }
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    for w in trainer.take_warnings() {
        eprintln!("warning: {w}");
    }
    Ok((summary?, rewards))
}

fn progress_bar(total: u64, done: u64) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(total).with_position(done);
    let style = ProgressStyle::with_template(
        "{elapsed_precise} [{bar:30}] {pos}/{len} updates  ETA {eta}  {msg}",
    )
    .ok()?;
    bar.set_style(style.progress_chars("=> "));
    Some(bar)
}
