//! When a test cannot run here: a peer `scripts/test.sh` installs is missing, or the machine
//! refuses a privilege the test needs. Under CI (`CI` or `WIRESPEED_REQUIRE_PEERS` set, as
//! `scripts/test.sh` sets it) that fails the test with what to do, since a test must never pass
//! by skipping; elsewhere the test is skipped with a visible note.
#![allow(dead_code)]

/// True when a test that cannot run must fail rather than skip.
pub(crate) fn required() -> bool {
    ["CI", "WIRESPEED_REQUIRE_PEERS"]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false"))
}

/// The test cannot run because of `what`; `remedy` says how to make it run. Panics when
/// [`required`], else prints a note (the caller then returns).
#[allow(clippy::print_stderr)] // the one place a test says it was skipped
pub(crate) fn missing(what: &str, remedy: &str) {
    let reason = format!("{what}; {remedy}");
    if required() {
        panic!("cannot run here: {reason}");
    }
    eprintln!("SKIPPED: {reason}");
}

/// `program` is not installed; Debian's `package` has it.
pub(crate) fn not_installed(program: &str, package: &str) {
    missing(
        &format!("{program} is not installed"),
        &format!("`apt-get install {package}` (scripts/test.sh does)"),
    );
}
