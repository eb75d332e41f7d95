//! How a failure reaches the user: the error's chain of causes without the repeats that
//! errors embedding their source produce, and, for a command line clap refused, the wirespeed
//! spelling of what an iperf3 user typed.

/// `err` and its causes, `: `-joined, each said once: an error whose message already carries
/// its source (`results database /tmp: unable to open database file`) is not followed by
/// that source again.
pub(crate) fn message(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if gist(&out).contains(&gist(&text)) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// What a message says, for telling repeats apart: lower case, letters and digits only, without
/// SQLite's "Error code N:" prefix or the word "the" (SQLite words one failure both ways).
fn gist(text: &str) -> String {
    let lower = text.to_lowercase();
    let body = match lower.strip_prefix("error code ") {
        Some(rest) => rest.split_once(": ").map_or(rest, |(_, r)| r),
        None => &lower,
    };
    body.split_whitespace()
        .filter(|w| *w != "the")
        .flat_map(|w| w.chars().filter(|c| c.is_alphanumeric()))
        .collect()
}

/// What an iperf3 user meant by `args`, when clap refused them: iperf3's flags that wirespeed
/// spells otherwise (`-c HOST`, `-s`, `-J`, `-f m`).
pub(crate) fn iperf3_hint(args: &[String]) -> Option<String> {
    let mut hints = Vec::new();
    for (i, a) in args.iter().enumerate() {
        match a.as_str() {
            "-c" | "--client" => hints.push(
                "the server is an argument, not -c: `wirespeed bw HOST` (iperf3 -c HOST)"
                    .to_string(),
            ),
            "-s" | "--server" => {
                hints.push("run the server with `wirespeed server` (iperf3 -s)".to_string())
            }
            "-J" | "--json" => hints.push(
                "`-f json` prints wirespeed's JSON, `-f iperf3-json` iperf3's -J document"
                    .to_string(),
            ),
            "-f" | "--format"
                if args.get(i + 1).is_some_and(|v| {
                    matches!(v.as_str(), "k" | "m" | "g" | "t" | "K" | "M" | "G" | "T" | "b" | "B")
                }) =>
            {
                hints.push(
                    "-f chooses the output format (text, json, csv, …); rates are scaled to their \
                     size by themselves, so iperf3's -f k/m/g has no counterpart"
                        .to_string(),
                )
            }
            _ => {}
        }
    }
    (!hints.is_empty()).then(|| hints.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let inner = std::io::Error::other("unable to open database file");
        let err = anyhow::Error::new(inner)
            .context("results database /tmp: unable to open database file")
            .context("opening the store");
        assert_eq!(
            message(&err),
            "opening the store: results database /tmp: unable to open database file"
        );
    }

    #[test]
    fn sqlite_saying_one_failure_twice_is_said_once() {
        let err = anyhow::Error::new(std::io::Error::other(
            "Error code 14: Unable to open the database file",
        ))
        .context("results database /tmp: unable to open database file: /tmp");
        assert_eq!(message(&err), "results database /tmp: unable to open database file: /tmp");
    }

    #[test]
    fn iperf3_spellings_get_a_hint() {
        let args = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert!(iperf3_hint(&args("wirespeed bw -c host")).unwrap().contains("wirespeed bw HOST"));
        assert!(iperf3_hint(&args("wirespeed -s")).unwrap().contains("wirespeed server"));
        assert!(iperf3_hint(&args("wirespeed bw h -J")).unwrap().contains("iperf3-json"));
        assert!(iperf3_hint(&args("wirespeed bw h -f m")).unwrap().contains("output format"));
        assert_eq!(iperf3_hint(&args("wirespeed bw h -f json")), None);
    }
}
