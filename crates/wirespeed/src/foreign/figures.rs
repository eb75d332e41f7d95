//! Reading a client's figures from what it printed: its JSON document at the pointers its
//! description names, or its text (terminal colours left out) at the first group of each
//! pattern, each times its scale. A figure the output does not hold is absent, not 0.

use anyhow::{bail, Context, Result};
use regex::Regex;

use super::defs::{KindDef, Output, UnitWords};
use super::report::Read;

/// What a client printed, ready to read.
pub(crate) struct Printed {
    /// Its text, without terminal escape sequences.
    pub text: String,
    /// Its JSON document, for a client whose output is JSON.
    pub json: Option<serde_json::Value>,
}

impl Printed {
    /// `stdout` as `def` says it is; `None` for JSON output that does not parse.
    pub(crate) fn of(def: &KindDef, stdout: &str) -> Option<Printed> {
        let text = without_escapes(stdout);
        let json = match def.output {
            Output::Json => Some(serde_json::from_str(stdout).ok()?),
            Output::Text => None,
        };
        Some(Printed { text, json })
    }

    /// What its JSON says went wrong, at `def`'s `error` pointer.
    pub(crate) fn error(&self, def: &KindDef) -> Option<String> {
        let said = self.json.as_ref()?.pointer(def.error.as_deref()?)?;
        Some(said.as_str().map_or_else(|| said.to_string(), String::from))
    }
}

/// Every figure of `def` that `printed` holds.
pub(crate) fn read(def: &KindDef, printed: &Printed) -> Result<Read> {
    let mut figures = Read::new();
    for (name, at) in &def.figures {
        let (pointers, pattern, scale) = at.parts();
        let number = |v: &serde_json::Value| match v {
            serde_json::Value::Object(map) if at.sums() => {
                map.values().map(serde_json::Value::as_f64).sum::<Option<f64>>()
            }
            serde_json::Value::Array(list) if at.sums() => {
                list.iter().map(serde_json::Value::as_f64).sum::<Option<f64>>()
            }
            v => v.as_f64(),
        };
        let from_json = printed
            .json
            .as_ref()
            .and_then(|doc| pointers.iter().find_map(|p| number(doc.pointer(p)?)));
        let from_text = match pattern {
            Some((p, unit)) if from_json.is_none() => matched(p, unit, &printed.text)
                .with_context(|| format!("figure {name}: pattern {p:?}"))?,
            _ => None,
        };
        if let Some(v) = from_json.or(from_text) {
            figures.insert(name.clone(), v * scale);
        }
    }
    Ok(figures)
}

/// The number in the first group of `pattern`'s first match in `text`; with a `unit`, times
/// what the second group's unit word is worth.
fn matched(pattern: &str, unit: Option<UnitWords>, text: &str) -> Result<Option<f64>> {
    let re = Regex::new(pattern)?;
    let Some(caps) = re.captures(text) else { return Ok(None) };
    let Some(group) = caps.get(1) else { bail!("it has no group around the number") };
    let Ok(number) = group.as_str().trim().parse::<f64>() else { return Ok(None) };
    let Some(unit) = unit else { return Ok(Some(number)) };
    let Some(word) = caps.get(2) else { bail!("it has no second group around the unit") };
    match unit.factor(word.as_str().trim()) {
        Some(factor) => Ok(Some(number * factor)),
        None => bail!("{:?} is not a unit it knows ({unit:?})", word.as_str()),
    }
}

/// `text` without ANSI escape sequences (`ESC [ … letter`): the colours some clients print
/// even into a pipe.
fn without_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_are_left_out_and_the_first_group_is_the_number() {
        let said = "sockperf: \u{1b}[2;35m====> avg-rtt=34.110 (std-dev=1.9)\u{1b}[0m\n";
        let text = without_escapes(said);
        assert_eq!(text, "sockperf: ====> avg-rtt=34.110 (std-dev=1.9)\n");
        assert_eq!(matched(r"avg-rtt=([0-9.]+)", None, &text).unwrap(), Some(34.11));
        assert_eq!(matched(r"avg-lat=([0-9.]+)", None, &text).unwrap(), None);
        assert!(matched(r"avg-rtt=[0-9.]+", None, &text).is_err(), "no group");
    }

    #[test]
    fn a_number_with_its_unit_word_is_read_in_the_figures_unit() {
        let wrk = "    Latency   523.97us    1.88ms   8.17ms   90.40%\n  27365 requests in 1.00s, 22.26MB read\n";
        let latency = r"Latency\s+([0-9.]+)(\S+)\s+\S+\s+([0-9.]+)";
        let time = Some(UnitWords::Time);
        assert_eq!(matched(latency, time, wrk).unwrap(), Some(523.97e3));
        let read = r"requests in [^,]+, ([0-9.]+)(\w+) read";
        let bytes = matched(read, Some(UnitWords::BinaryBytes), wrk).unwrap().unwrap();
        assert_eq!(bytes, 22.26 * 1024.0 * 1024.0);
        assert_eq!(matched(r"in ([0-9.]+)(\w+),", time, wrk).unwrap(), Some(1e9));
        // A unit word it does not know is refused, not read as 1.
        let e = matched(r"([0-9.]+)(%)", time, wrk).unwrap_err();
        assert!(e.to_string().contains("not a unit"), "{e}");
        assert!(matched(r"Latency\s+([0-9.]+)", time, wrk).is_err(), "no unit group");
    }
}
