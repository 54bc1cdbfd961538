//! Names of the namespaces this crate creates, and removal of those a dead process left.
//!
//! Every namespace is called `mocc-<pid>-<counter>-<role>`, `pid` being the creating
//! process. A topology removes its namespaces when dropped, on success, error or panic
//! (unwinding). A binary that runs its work through
//! [`crate::remove_namespaces_on_interrupt`] removes them on Ctrl-C and SIGTERM (`mocc net`
//! does). A process killed otherwise leaves them behind; [`cleanup_stale`] removes those whose
//! creator no longer exists, and `Topology::create` calls it first.

use std::path::Path;

use crate::error::{NetError, Result};
use crate::namespace::{delete_namespace, list_namespaces, namespace_exists};

/// Prefix of every namespace this crate creates.
pub const NAME_PREFIX: &str = "mocc-";

/// The namespace name of `role` in topology `counter` of process `pid`.
pub fn namespace_name(pid: u32, counter: u32, role: &str) -> String {
    format!("{NAME_PREFIX}{pid}-{counter}-{role}")
}

/// The creating process of a namespace named by [`namespace_name`], or `None` for any other
/// name.
pub fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(NAME_PREFIX)?;
    let mut parts = rest.splitn(3, '-');
    let pid = parts.next()?.parse().ok()?;
    let _counter: u32 = parts.next()?.parse().ok()?;
    parts.next().filter(|role| !role.is_empty())?;
    Some(pid)
}

/// Whether process `pid` exists.
pub fn process_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes every `mocc-*` namespace whose creating process is gone and returns their names.
/// Tries them all; the error names the first that could not be removed.
pub fn cleanup_stale() -> Result<Vec<String>> {
    remove_where(|pid| !process_alive(pid))
}

/// Removes every namespace this process created (what an interrupted run leaves) and returns
/// their names.
pub fn remove_own() -> Result<Vec<String>> {
    remove_where(|pid| pid == std::process::id())
}

/// Removes the `mocc-*` namespaces whose creating pid satisfies `owner`; tries them all, the
/// error naming the first that could not be removed.
fn remove_where(owner: impl Fn(u32) -> bool) -> Result<Vec<String>> {
    let stale: Vec<String> = list_namespaces()?
        .into_iter()
        .filter(|name| owner_pid(name).is_some_and(&owner))
        .collect();
    let mut first_error: Option<NetError> = None;
    let mut removed = Vec::new();
    for name in stale {
        match delete_namespace(&name) {
            Ok(()) => removed.push(name),
            // Another process cleaning up at the same time got there first.
            Err(_) if !namespace_exists(&name) => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(removed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_to_their_pid() {
        let name = namespace_name(4321, 7, "rtr");
        assert_eq!(name, "mocc-4321-7-rtr");
        assert_eq!(owner_pid(&name), Some(4321));
    }

    #[test]
    fn foreign_names_have_no_owner() {
        for name in [
            "mocc",
            "mocc-",
            "mocc-x-1-rtr",
            "mocc-12-rtr",
            "mocc-12-3-",
            "other-12-3-rtr",
        ] {
            assert_eq!(owner_pid(name), None, "{name}");
        }
    }

    #[test]
    fn this_process_is_alive() {
        assert!(process_alive(std::process::id()));
    }
}
