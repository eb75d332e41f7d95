//! `wirespeed` in a scenario means the build that runs it. A scenario's processes (`wirespeed
//! server …`, `sh -c '… exec wirespeed …'`), its version commands and its `requires` find
//! their programs on PATH, where an installed wirespeed of another version may come first: its
//! server would then be measured as this build's, and the table would say nothing of it. So
//! for the length of `bench`, a directory holding only a `wirespeed` link to this very binary
//! goes first on PATH; every other program is looked up as before.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{Context, Result};

/// The directory put first on PATH; removed (with its link) when dropped.
pub(crate) struct OwnBuildFirst {
    dir: PathBuf,
}

/// Puts this binary first on PATH as `wirespeed`, for this process and every process it
/// starts. Call it before any thread starts (PATH is process-wide).
pub(crate) fn first_on_path() -> Result<OwnBuildFirst> {
    let exe = std::env::current_exe().context("finding this wirespeed binary")?;
    let dir = std::env::temp_dir().join(format!("wirespeed-own-build-{}", std::process::id()));
    // A directory left by a process of the same pid that died without removing it.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let guard = OwnBuildFirst { dir };
    let link = guard.dir.join("wirespeed");
    std::os::unix::fs::symlink(&exe, &link)
        .with_context(|| format!("linking {} to {}", link.display(), exe.display()))?;
    let mut path = vec![guard.dir.clone()];
    path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    let joined: OsString = std::env::join_paths(path).context("PATH")?;
    std::env::set_var("PATH", joined);
    Ok(guard)
}

impl Drop for OwnBuildFirst {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
