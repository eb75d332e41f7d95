//! `wirespeed completions` and `wirespeed man`: shell completion scripts and manual pages,
//! generated from the same clap definitions that parse the command line, so neither can
//! drift from the flags.

use std::io::Write;

use anyhow::{Context, Result};

use crate::exit;
use crate::flags::{self, CompletionsArgs, ManArgs};

/// Prints the completion script of `args.shell`.
pub(super) fn completions(args: &CompletionsArgs) -> Result<u8> {
    let mut cmd = flags::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "wirespeed", &mut out);
    crate::output::write_stdout(&out)?;
    Ok(exit::OK)
}

/// Prints wirespeed.1, or writes every page into `args.dir`.
pub(super) fn man(args: &ManArgs) -> Result<u8> {
    let cmd = flags::command();
    match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(cmd, dir)
                .with_context(|| format!("writing manual pages into {}", dir.display()))?;
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut out).context("rendering the manual page")?;
            out.flush()?;
            crate::output::write_stdout(&out)?;
        }
    }
    Ok(exit::OK)
}
