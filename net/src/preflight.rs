//! Preconditions of building a topology: root, the tools it runs and the TUN device node.

use std::path::{Path, PathBuf};

use crate::error::{NetError, Result};

/// The external tools a topology runs, each with the Debian package that provides it.
pub const REQUIRED_TOOLS: [(&str, &str); 4] = [
    ("ip", "iproute2"),
    ("tc", "iproute2"),
    ("nft", "nftables"),
    ("ethtool", "ethtool"),
];

/// The TUN/TAP clone device the delay line opens.
pub const TUN_DEVICE: &str = "/dev/net/tun";

/// Folders searched after `PATH`: root's tools live in sbin, which a non-login `PATH` may lack.
const SBIN_DIRS: [&str; 4] = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"];

/// Checks every precondition and reports all that fail in one error.
pub fn preflight() -> Result<()> {
    let mut problems = Vec::new();
    if !is_root() {
        problems.push("not running as root (namespaces, tc and nft need root)".to_string());
    }
    let missing: Vec<String> = REQUIRED_TOOLS
        .iter()
        .filter(|(tool, _)| find_tool(tool).is_none())
        .map(|(tool, package)| format!("{tool} (apt-get install {package})"))
        .collect();
    if !missing.is_empty() {
        problems.push(format!("missing tools: {}", missing.join(", ")));
    }
    if !Path::new(TUN_DEVICE).exists() {
        problems.push(format!(
            "{TUN_DEVICE} is missing (kernel without TUN support?)"
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(NetError::Preflight(problems.join("; ")))
    }
}

/// Whether the effective user is root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The full path of an executable `name`, searched on `PATH` and then in the sbin/bin folders.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    let path_dirs = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    path_dirs
        .into_iter()
        .chain(SBIN_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is a regular file with an execute bit.
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_sh_and_not_a_made_up_tool() {
        assert!(find_tool("sh").is_some());
        assert!(find_tool("no-such-tool-mocc-net").is_none());
    }

    #[test]
    fn every_tool_names_its_package() {
        for (tool, package) in REQUIRED_TOOLS {
            assert!(!tool.is_empty() && !package.is_empty());
        }
    }
}
