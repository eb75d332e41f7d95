//! When a test cannot run here: a peer `scripts/test.sh` installs is missing, or the machine
//! refuses a privilege the test needs. Under CI (`CI` or `WIRESPEED_REQUIRE_PEERS` set, as
//! `scripts/test.sh` sets it) that fails the test with what to do, since a test must never pass
//! by skipping; elsewhere the test is skipped with a visible note.

/// True when a test that cannot run must fail rather than skip.
pub fn required() -> bool {
    ["CI", "WIRESPEED_REQUIRE_PEERS"]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false"))
}

/// The test cannot run because of `what`; `remedy` says how to make it run. Panics when
/// [`required`], else prints a note (the caller then returns).
#[allow(clippy::print_stderr)] // the one place a test says it was skipped
pub fn missing(what: &str, remedy: &str) {
    let reason = format!("{what}; {remedy}");
    if required() {
        panic!("cannot run here: {reason}");
    }
    eprintln!("SKIPPED: {reason}");
}

/// `program` is not installed; Debian's `package` has it.
pub fn not_installed(program: &str, package: &str) {
    missing(
        &format!("{program} is not installed"),
        &format!("`apt-get install {package}` (scripts/test.sh does)"),
    );
}

/// [`missing`] for a test that returns early: `None` once the note is printed (`why` says what
/// is missing and how to install it).
pub fn skipped<T>(why: &str) -> Option<T> {
    assert!(!required(), "cannot run here: {why}");
    #[allow(clippy::print_stderr)] // the one place a test says it was skipped
    {
        eprintln!("SKIPPED: {why}");
    }
    None
}

/// A program a Debian package installs (a path, or a name on PATH), or [`skipped`].
pub fn debian(program: &str, package: &str) -> Option<()> {
    let found = if program.contains('/') {
        std::path::Path::new(program).exists()
    } else {
        crate::ready::on_path(program)
    };
    if found {
        return Some(());
    }
    skipped(&format!("{program} is missing; `apt-get install {package}` (scripts/test.sh does)"))
}

/// A tool from PyPI that `check` (a command) proves is there, or [`skipped`].
pub fn pypi_tool(check: &[&str], package: &str) -> Option<()> {
    let ran = std::process::Command::new(check[0]).args(&check[1..]).output();
    if ran.is_ok_and(|o| o.status.success()) {
        return Some(());
    }
    skipped(&format!("{package} is not installed; `pip install {package}` (scripts/test.sh does)"))
}
