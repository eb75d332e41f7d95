//! The lab is built with the system's own tools — `ip` (iproute2), `tc` and `nft` — run as
//! programs, so every step is a command line a person could type, and a failure says which
//! one and what the tool answered.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::LabError;

/// Runs `program args…` and returns what it printed; a failure carries the line and the
/// tool's own message.
pub fn run(program: &str, args: &[&str]) -> Result<String, LabError> {
    run_with_input(program, args, None)
}

/// [`run`], with `input` written to the program's standard input (`nft -f -`).
pub fn run_with_input(
    program: &str,
    args: &[&str],
    input: Option<&str>,
) -> Result<String, LabError> {
    let line = std::iter::once(program).chain(args.iter().copied()).collect::<Vec<_>>().join(" ");
    let failed = |message: String| LabError::Command { line: line.clone(), message };
    let mut child = Command::new(program)
        .args(args)
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("cannot run {program}: {e}")))?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin.write_all(text.as_bytes()).map_err(|e| failed(e.to_string()))?;
    }
    let out = child.wait_with_output().map_err(|e| failed(e.to_string()))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let said = if said.is_empty() { format!("exited with {}", out.status) } else { said };
        return Err(failed(said));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// True when `program` runs at all (`nft --version`).
pub fn available(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
