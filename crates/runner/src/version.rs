//! Which version of each system's program a study measured. A system may name a command that
//! prints it (`version = { cmd = "frps --version", expect = "0.71.0" }`); before the runs, each
//! such command runs once (no shell, at most a few seconds), and what it printed goes in the
//! summary. A version that does not contain the expected text is reported as such, with what
//! was printed: the runs still go ahead, since their figures are real, but of another version
//! than the scenario was written for. A workload whose load is another program's (vegeta)
//! has that program's version recorded the same way.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::matrix::SystemCell;
use crate::Loaded;

/// Longest a version command may run.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// One system's version, as its command printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// The system's cells (`frp-tcp`, `frp-tls`).
    pub systems: Vec<String>,
    /// The command run.
    pub command: String,
    /// The line that says the version (the one holding the expected text, else the first),
    /// or why nothing was read.
    pub printed: Result<String, NotPrinted>,
    /// The text the scenario expects in it.
    pub expected: Option<String>,
}

impl Version {
    /// Whether it printed what the scenario expects (true when nothing is expected).
    pub fn as_expected(&self) -> bool {
        match (&self.printed, &self.expected) {
            (Ok(line), Some(e)) => line.contains(e.as_str()),
            (Ok(_), None) => true,
            (Err(_), _) => false,
        }
    }

    /// One line for people: what was printed, and what was expected where it differs.
    pub fn describe(&self) -> String {
        let printed = match &self.printed {
            Ok(line) => format!("{:?} printed {line:?}", self.command),
            Err(why) => format!("{:?} {why}", self.command),
        };
        match (&self.expected, self.as_expected()) {
            (Some(e), false) => format!("{printed}, not the expected {e:?}"),
            _ => printed,
        }
    }
}

/// Runs the version command of every system whose programs are installed (for a system of a
/// matrix, those its cells name: `requires = ["{program}"]`), rendered over each cell's axes
/// (`{bin} --version`): once per command it becomes, labelled with the cells that run it.
pub fn check(loaded: &Loaded) -> Vec<Version> {
    let s = &loaded.scenario;
    let installed = |c: &&SystemCell| {
        s.system[c.system].requires.iter().all(|p| crate::process::which(&c.with_vars(p)).is_some())
    };
    let mut versions = Vec::new();
    for (i, system) in s.system.iter().enumerate() {
        let Some(v) = system.version.as_ref() else { continue };
        // Each command the cells render, in the cells' order, with the cells that run it.
        let mut commands: Vec<(String, Option<String>, Vec<String>)> = Vec::new();
        for c in loaded.plan.systems.iter().filter(|c| c.system == i).filter(installed) {
            let cmd = c.with_vars(&v.cmd);
            let expect = v.expect.as_deref().map(|e| c.with_vars(e));
            match commands.iter_mut().find(|(k, e, _)| *k == cmd && *e == expect) {
                Some((_, _, names)) => names.push(c.name.clone()),
                None => commands.push((cmd, expect, vec![c.name.clone()])),
            }
        }
        for (command, expected, systems) in commands {
            let printed = printed(&command, expected.as_deref(), TIMEOUT);
            versions.push(Version { systems, command, printed, expected });
        }
    }
    versions
}

/// The version of a program that is not a system (a workload's own load generator, such as
/// vegeta), under `label`: what `cmd` prints.
pub fn of_program(label: &str, cmd: &str, expect: Option<&str>) -> Version {
    Version {
        systems: vec![label.to_string()],
        command: cmd.to_string(),
        printed: printed(cmd, expect, TIMEOUT),
        expected: expect.map(str::to_string),
    }
}

/// Why a version command said nothing usable; said after the command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotPrinted {
    /// The command is not words.
    #[error("{0}")]
    Words(#[from] crate::words::Unclosed),
    /// The command is empty.
    #[error("is empty")]
    Empty,
    /// It could not be started.
    #[error("did not start: {0}")]
    NotStarted(String),
    /// It ran past its time.
    #[error("did not finish in {0:?}")]
    Timeout(Duration),
    /// Its output could not be read.
    #[error("could not be read: {0}")]
    Unreadable(String),
    /// It failed without a word.
    #[error("failed ({0})")]
    Failed(String),
    /// It succeeded without a word.
    #[error("printed nothing")]
    Nothing,
}

/// Runs `cmd` and picks the line of its output that holds `expect` (else the first line),
/// spaces squeezed.
fn printed(cmd: &str, expect: Option<&str>, timeout: Duration) -> Result<String, NotPrinted> {
    let output = run(cmd, timeout)?;
    let lines: Vec<String> = output
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect();
    let holding = expect.and_then(|e| lines.iter().find(|l| l.contains(e)));
    holding.or(lines.first()).cloned().ok_or(NotPrinted::Nothing)
}

/// Its stdout, then its stderr; an error when it cannot start, fails, or outlasts `timeout`.
fn run(cmd: &str, timeout: Duration) -> Result<String, NotPrinted> {
    let words = crate::words::split(cmd)?;
    let (program, args) = words.split_first().ok_or(NotPrinted::Empty)?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| NotPrinted::NotStarted(e.to_string()))?;
    let began = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if began.elapsed() < timeout => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(NotPrinted::Timeout(timeout));
            }
        }
    };
    // It has exited: what is left in its pipes is all it wrote.
    let out = child.wait_with_output().map_err(|e| NotPrinted::Unreadable(e.to_string()))?;
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    if !status.success() && text.trim().is_empty() {
        return Err(NotPrinted::Failed(status.to_string()));
    }
    Ok(text.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_holding_the_expected_text_is_kept() {
        let cmd = "printf 'rathole \\nBuild Timestamp:   2026\\nBuild Version:     0.5.0\\n'";
        let cmd = format!("sh -c \"{cmd}\"");
        assert_eq!(printed(&cmd, Some("0.5.0"), TIMEOUT).unwrap(), "Build Version: 0.5.0");
        assert_eq!(printed(&cmd, None, TIMEOUT).unwrap(), "rathole");
        let v = |expected: &str| Version {
            systems: vec!["rathole-tcp".into()],
            command: cmd.clone(),
            printed: printed(&cmd, Some(expected), TIMEOUT),
            expected: Some(expected.into()),
        };
        assert!(v("0.5.0").as_expected());
        let other = v("0.5.1");
        assert!(!other.as_expected());
        assert!(other.describe().ends_with("printed \"rathole\", not the expected \"0.5.1\""));
    }

    #[test]
    fn a_matrix_systems_version_is_asked_of_the_cells_whose_programs_are_installed() {
        let text = include_str!("../tests/scenarios/valid/matrix_programs.toml");
        let loaded = crate::parse("matrix_programs.toml", text, &["latency"]).unwrap();
        let versions = check(&loaded);
        assert_eq!(versions.len(), 1, "{versions:?}");
        assert_eq!(versions[0].systems, ["a-server"]);
        assert_eq!(versions[0].printed.as_deref(), Ok("server 1.2"));
    }

    #[test]
    fn a_command_that_fails_or_hangs_says_so() {
        let short = Duration::from_millis(200);
        let fails = |cmd: &str| printed(cmd, None, short).unwrap_err();
        let missing = fails("no-such-program-here --version");
        assert!(matches!(missing, NotPrinted::NotStarted(_)), "{missing}");
        assert_eq!(fails("false").to_string(), "failed (exit status: 1)");
        assert_eq!(fails("sleep 30").to_string(), "did not finish in 200ms");
        assert_eq!(fails("'open"), NotPrinted::Words(crate::words::split("'open").unwrap_err()));
    }
}
