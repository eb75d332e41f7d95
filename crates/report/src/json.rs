//! JSON: one pretty document at the end (`--format json`), or one compact object per event
//! as it happens (`--format json-stream`, NDJSON: `{"event":"interval","data":{…}}`).
//! Non-finite numbers cannot occur: every rate is computed with a non-zero divisor or is 0.

use std::io::{self, Write};

use wirespeed_model::Event;

use crate::Renderer;

/// The single-document renderer.
#[derive(Debug, Default)]
pub struct Json;

impl Renderer for Json {
    fn on_event(&mut self, event: &Event, out: &mut dyn Write) -> io::Result<()> {
        if let Event::End(report) = event {
            serde_json::to_writer_pretty(&mut *out, report.as_ref())?;
            writeln!(out)?;
        }
        Ok(())
    }
}

/// The NDJSON event renderer.
#[derive(Debug, Default)]
pub struct JsonStream;

impl Renderer for JsonStream {
    fn on_event(&mut self, event: &Event, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer(&mut *out, event)?;
        writeln!(out)?;
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use crate::fixtures::report;
    use crate::{render_report, Format};
    use wirespeed_model::kinds::bandwidth::Direction;
    use wirespeed_model::rules::Protocol;
    use wirespeed_model::Report;

    #[test]
    fn document_has_the_promised_shape_and_round_trips() {
        let r = report(Protocol::Tcp, Direction::Upload);
        let mut out = Vec::new();
        render_report(&r, Format::Json, false, &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        for key in ["kind", "spec", "meta", "intervals", "summary"] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert_eq!(v["kind"], "bandwidth");
        assert!(v["summary"]["received_bps"].as_f64().unwrap() > 0.0);
        assert!(v["meta"]["version"].is_string());
        let back: Report = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn stream_is_one_event_per_line() {
        let mut out = Vec::new();
        render_report(
            &report(Protocol::Udp, Direction::Upload),
            Format::JsonStream,
            false,
            &mut out,
        )
        .unwrap();
        let lines: Vec<serde_json::Value> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let kinds: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["start", "interval", "interval", "end"]);
        assert_eq!(lines[1]["data"]["flows"][0]["jitter_ns"], 12345.0);
    }
}
