//! Names the commit the binary is built from, for `--version`: two builds of one version (a
//! commit and the one before it, side by side in benches/builds/) then say which is which.
//! Outside a git checkout (a source tarball) the version stands alone.

use std::path::Path;
use std::process::Command;

/// What `git ARGS` prints, trimmed; `None` without git or a repository.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    // Only a checkout of wirespeed itself: sources unpacked inside some other repository would
    // otherwise name that repository's commit.
    let ours = git(&["ls-files", "--full-name", "Cargo.toml"]).is_some();
    let commit = ours.then(|| git(&["rev-parse", "--short=12", "HEAD"])).flatten();
    println!("cargo:rustc-env=WIRESPEED_COMMIT={}", commit.as_deref().unwrap_or(""));
    // Built again when HEAD moves: a new commit, or another branch checked out.
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &branch]));
        watched.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    }
    for path in watched.into_iter().flatten() {
        if Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
