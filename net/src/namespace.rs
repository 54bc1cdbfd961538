//! Named network namespaces (`ip netns`): creating and removing them, and running commands
//! or Rust code inside one.
//!
//! Rust code runs on a dedicated thread that enters the namespace with
//! `setns(CLONE_NEWNET)`; only that thread changes namespace. A socket keeps the namespace it
//! was created in, so a socket opened by [`in_namespace`] can be used from any thread.

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Command;
use std::thread::JoinHandle;

use crate::command::run;
use crate::error::{NetError, Result};
use crate::preflight::find_tool;

/// Where `ip netns` keeps the bind mounts that name namespaces.
pub const NETNS_DIR: &str = "/var/run/netns";

/// A namespace this process created; dropping it removes it (`ip netns delete`).
#[derive(Debug)]
pub struct OwnedNamespace {
    name: String,
}

impl OwnedNamespace {
    /// Creates the namespace `name` (`ip netns add`).
    pub fn create(name: &str) -> Result<Self> {
        run("ip", &["netns", "add", name])?;
        Ok(OwnedNamespace {
            name: name.to_string(),
        })
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Removes the namespace now, reporting failure (dropping does the same silently).
    pub fn delete(mut self) -> Result<()> {
        let name = std::mem::take(&mut self.name);
        delete_namespace(&name)
    }
}

impl Drop for OwnedNamespace {
    fn drop(&mut self) {
        if self.name.is_empty() {
            return; // already deleted by `delete`
        }
        // Nothing to report to from a destructor; `cleanup_stale` removes what this misses.
        let _ = delete_namespace(&self.name);
    }
}

/// Removes the namespace `name` (`ip netns delete`); its interfaces, routes, qdiscs and
/// nftables tables go with it.
pub fn delete_namespace(name: &str) -> Result<()> {
    run("ip", &["netns", "delete", name]).map(|_| ())
}

/// Whether a namespace called `name` exists.
pub fn namespace_exists(name: &str) -> bool {
    namespace_path(name).exists()
}

/// The bind-mount file naming the namespace.
pub fn namespace_path(name: &str) -> PathBuf {
    PathBuf::from(NETNS_DIR).join(name)
}

/// The names of all namespaces `ip netns` knows, sorted.
pub fn list_namespaces() -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(NETNS_DIR) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(NetError::io(format!("reading {NETNS_DIR}"), e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| NetError::io(format!("reading {NETNS_DIR}"), e))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

/// Runs `program args...` inside namespace `name` (`ip netns exec`) and returns its stdout.
pub fn exec_in<S: AsRef<str>>(name: &str, program: &str, args: &[S]) -> Result<String> {
    let mut full = vec!["netns", "exec", name, program];
    full.extend(args.iter().map(|a| a.as_ref()));
    run("ip", &full)
}

/// A `Command` that runs `program` inside namespace `name` (`ip netns exec`), for callers that
/// need to stream its output or run it in the background.
pub fn command_in(name: &str, program: &str) -> Command {
    let ip = find_tool("ip").unwrap_or_else(|| "ip".into());
    let mut command = Command::new(ip);
    command.args(["netns", "exec", name, program]);
    command
}

/// Moves the calling thread into namespace `name`. Irreversible for the thread: only call it
/// on a thread made for that namespace.
pub fn enter_namespace(name: &str) -> Result<()> {
    let path = namespace_path(name);
    let file = std::fs::File::open(&path)
        .map_err(|e| NetError::io(format!("opening {}", path.display()), e))?;
    // SAFETY: the fd is valid for the duration of the call; setns only changes this thread.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(NetError::last_os(format!(
            "setns into network namespace {name}"
        )));
    }
    Ok(())
}

/// Runs `f` on a fresh thread inside namespace `name` and returns its result; a panic in `f`
/// is resumed on the caller.
pub fn in_namespace<T, F>(name: &str, f: F) -> Result<T>
where
    T: Send,
    F: FnOnce() -> T + Send,
{
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name(format!("netns-{name}"))
            .spawn_scoped(scope, || enter_namespace(name).map(|()| f()))
            .map_err(|e| NetError::io(format!("spawning a thread for namespace {name}"), e))?;
        match handle.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// Spawns a thread called `thread_name` that enters namespace `name` and then runs `f`.
/// Joining it gives `f`'s result, or the error of entering the namespace.
pub fn spawn_in_namespace<T, F>(
    name: &str,
    thread_name: &str,
    f: F,
) -> Result<JoinHandle<Result<T>>>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let namespace = name.to_string();
    std::thread::Builder::new()
        .name(thread_name.to_string())
        .spawn(move || enter_namespace(&namespace).map(|()| f()))
        .map_err(|e| {
            NetError::io(
                format!("spawning thread {thread_name} for namespace {name}"),
                e,
            )
        })
}
