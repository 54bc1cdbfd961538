//! Running the external tools (`ip`, `tc`, `nft`, `ethtool`) with errors that quote the command.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use crate::error::{NetError, Result};
use crate::preflight::find_tool;

/// Runs `program args...`, waits for it and returns its stdout; a failure status is an error
/// carrying the command line and its stderr.
pub fn run<S: AsRef<str>>(program: &str, args: &[S]) -> Result<String> {
    run_with_stdin(program, args, None)
}

/// Runs `program` with the whitespace-separated words of `args` (none of which may contain
/// whitespace itself), e.g. `run_words("tc", "-n ns qdisc show")`.
pub fn run_words(program: &str, args: &str) -> Result<String> {
    run(program, &args.split_whitespace().collect::<Vec<_>>())
}

/// Like [`run`], writing `stdin` to the command's standard input first (e.g. `nft -f -`).
pub fn run_with_stdin<S: AsRef<str>>(
    program: &str,
    args: &[S],
    stdin: Option<&str>,
) -> Result<String> {
    let line = command_line(program, args);
    let output = spawn_and_wait(program, args, stdin).map_err(|source| NetError::Spawn {
        command: line.clone(),
        source,
    })?;
    if !output.status.success() {
        return Err(NetError::Command {
            command: line,
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Starts the command with piped streams, feeds `stdin` and collects its output.
fn spawn_and_wait<S: AsRef<str>>(
    program: &str,
    args: &[S],
    stdin: Option<&str>,
) -> std::io::Result<Output> {
    let executable = find_tool(program).unwrap_or_else(|| program.into());
    let mut child = Command::new(executable)
        .args(args.iter().map(|a| a.as_ref()))
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes())?;
    }
    child.wait_with_output()
}

/// The command as a shell would show it, for error messages.
pub fn command_line<S: AsRef<str>>(program: &str, args: &[S]) -> String {
    std::iter::once(program)
        .chain(args.iter().map(|a| a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_stdout_of_a_successful_command() {
        assert_eq!(run("echo", &["a", "b"]).unwrap(), "a b\n");
    }

    #[test]
    fn a_failing_command_names_itself_and_its_stderr() {
        let err = run("sh", &["-c", "echo oops >&2; exit 3"]).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("sh -c echo oops >&2; exit 3"), "{message}");
        assert!(message.contains("oops"), "{message}");
    }

    #[test]
    fn splits_words() {
        assert_eq!(run_words("echo", "  a   b ").unwrap(), "a b\n");
    }

    #[test]
    fn feeds_stdin() {
        assert_eq!(
            run_with_stdin("cat", &[] as &[&str], Some("x\n")).unwrap(),
            "x\n"
        );
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let err = run("no-such-tool-mocc-net", &["x"]).unwrap_err();
        assert!(matches!(err, NetError::Spawn { .. }), "{err}");
    }
}
