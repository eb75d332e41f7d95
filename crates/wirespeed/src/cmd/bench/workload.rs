//! A scenario's workload cell as the command line it stands for — `wirespeed KIND ENTRY
//! --OPTION VALUE …` — so that a cell of a benchmark matrix and a command line are the same
//! thing: the runner will parse these words with the same flags and resolve them with the same
//! code as a test typed by hand, and an option a test kind does not have is refused in clap's
//! words. `--dry-run` shows them.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use wirespeed_runner::matrix::scalar_text;

/// The words of the command line for `kind` aimed at `entry` with `options`.
pub fn command_line(
    kind: &str,
    entry: &str,
    options: &BTreeMap<String, toml::Value>,
) -> Result<Vec<String>> {
    let mut words = vec!["wirespeed".to_string(), kind.to_string()];
    match kind {
        "http" if entry.starts_with("http://") || entry.starts_with("https://") => {
            words.push(entry.into())
        }
        "http" => words.push(format!("http://{entry}/")),
        "dns" => {
            let (host, port) = entry
                .rsplit_once(':')
                .with_context(|| format!("dns entry {entry:?}: expected HOST:PORT"))?;
            let host = host.trim_start_matches('[').trim_end_matches(']');
            words.extend(["--server".into(), host.into(), "--port".into(), port.into()]);
        }
        _ => words.push(entry.into()),
    }
    for (key, value) in options {
        let flag = if key.chars().count() == 1 { format!("-{key}") } else { format!("--{key}") };
        match value {
            toml::Value::Boolean(true) => words.push(flag),
            toml::Value::Boolean(false) => {}
            v => {
                let text = scalar_text(v).with_context(|| {
                    format!("option {key}: expected a word, number or true/false")
                })?;
                words.extend([flag, text]);
            }
        }
    }
    words.extend(["--no-save".into(), "--quiet".into()]);
    Ok(words)
}
