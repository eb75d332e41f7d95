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

/// `roff` with every character beyond ASCII written as groff's `\[uXXXX]`: the help text's
/// "×", "—" and "µ" went out as raw UTF-8, which plain `groff -man` (and man on a machine
/// without a UTF-8 locale) warns about and misprints.
fn ascii_roff(roff: &str) -> String {
    let mut out = String::with_capacity(roff.len());
    for c in roff.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            out.push_str(&format!("\\[u{:04X}]", c as u32));
        }
    }
    out
}

/// Prints wirespeed.1, or writes every page into `args.dir`.
pub(super) fn man(args: &ManArgs) -> Result<u8> {
    let cmd = flags::command();
    match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(cmd, dir)
                .with_context(|| format!("writing manual pages into {}", dir.display()))?;
            for entry in std::fs::read_dir(dir)? {
                let path = entry?.path();
                if path.extension().is_some_and(|e| e == "1") {
                    let text = std::fs::read_to_string(&path)?;
                    std::fs::write(&path, ascii_roff(&text))
                        .with_context(|| format!("writing {}", path.display()))?;
                }
            }
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut out).context("rendering the manual page")?;
            out.flush()?;
            crate::output::write_stdout(ascii_roff(&String::from_utf8_lossy(&out)).as_bytes())?;
        }
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    #[test]
    fn roff_is_ascii_with_groff_escapes() {
        let roff = super::ascii_roff("a \u{d7} b \u{2014} 5 \u{b5}s");
        assert_eq!(roff, "a \\[u00D7] b \\[u2014] 5 \\[u00B5]s");
    }
}
