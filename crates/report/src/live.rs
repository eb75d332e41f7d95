//! The live panel a terminal shows while a test runs: elapsed and planned time, the current
//! rate with a sparkline of recent intervals, p50/p99 and errors. Sans-I/O: it reads the same
//! events as the renderers and returns lines; the binary draws and erases them on stderr.

use std::collections::VecDeque;

use wirespeed_model::histogram::LatencyStats;
use wirespeed_model::Event;

use crate::kinds::{self, LiveSample, View};
use crate::units::{nanos, per_second};

/// How many intervals the sparkline shows.
const SPARK: usize = 24;
const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The panel's state.
#[derive(Default)]
pub struct Panel {
    /// How the run's kind turns an event into a sample, from its start.
    view: Option<Box<dyn View>>,
    title: String,
    planned_s: Option<f64>,
    elapsed_s: f64,
    current: String,
    recent: VecDeque<f64>,
    details: Vec<String>,
    /// True once something worth showing arrived (the first interval).
    live: bool,
}

impl std::fmt::Debug for Panel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Panel").field("title", &self.title).finish_non_exhaustive()
    }
}

/// A sample of events per second with a latency distribution (its median called `p50`) and
/// an error count: what the load kinds show.
pub(crate) fn rated(
    end_ns: u64,
    per_s: f64,
    events: &str,
    p50: &str,
    stats: &LatencyStats,
    errors: String,
) -> LiveSample {
    let details = vec![
        format!("{p50} {}", nanos(stats.p50_ns as f64)),
        format!("p99 {}", nanos(stats.p99_ns as f64)),
        errors,
    ];
    LiveSample { end_ns, value: per_s, current: per_second(per_s, events), details }
}

/// A sparkline of `values`, scaled to their maximum.
pub fn sparkline(values: impl IntoIterator<Item = f64>) -> String {
    let v: Vec<f64> = values.into_iter().collect();
    let max = v.iter().copied().fold(0.0, f64::max);
    v.iter()
        .map(|x| {
            if max <= 0.0 {
                BLOCKS[0]
            } else {
                BLOCKS[((x / max) * 7.0).round().clamp(0.0, 7.0) as usize]
            }
        })
        .collect()
}

impl Panel {
    /// An empty panel.
    pub fn new() -> Self {
        Self::default()
    }

    /// True once the panel has something to show.
    pub fn is_live(&self) -> bool {
        self.live
    }

    fn sample(&mut self, s: LiveSample) {
        self.elapsed_s = s.end_ns as f64 / 1e9;
        self.current = s.current;
        self.recent.push_back(s.value);
        if self.recent.len() > SPARK {
            self.recent.pop_front();
        }
        self.details = s.details;
        self.live = true;
    }

    /// Takes in one event.
    pub fn on_event(&mut self, event: &Event) {
        match event {
            Event::Start { spec, .. } => {
                self.title = format!("{} {}", spec.kind(), spec.target());
                self.planned_s = spec.planned_ns().map(|ns| ns as f64 / 1e9);
                self.view = Some(kinds::view(spec));
            }
            running => {
                if let Some(s) = self.view.as_ref().and_then(|v| v.live(running)) {
                    self.sample(s);
                }
            }
        }
    }

    /// The panel's lines, each cut to `width` characters (a wrapped line could not be erased).
    pub fn lines(&self, width: usize) -> Vec<String> {
        if !self.live {
            return Vec::new();
        }
        let time = match self.planned_s {
            Some(total) => format!("{:.1} s / {:.0} s", self.elapsed_s, total),
            None => format!("{:.1} s", self.elapsed_s),
        };
        let first = format!(
            "▶ {}  {time}  {}  {}",
            self.title,
            self.current,
            sparkline(self.recent.iter().copied())
        );
        let mut out = vec![first];
        if !self.details.is_empty() {
            out.push(format!("  {}", self.details.join("  ")));
        }
        out.into_iter().map(|l| l.chars().take(width.max(1)).collect()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use wirespeed_model::kinds::bandwidth::Direction;
    use wirespeed_model::rules::Protocol;
    use wirespeed_model::Event;

    #[test]
    fn a_bandwidth_run_as_the_panel_sees_it() {
        let mut p = Panel::new();
        let events = Event::replay(&fixtures::report(Protocol::Udp, Direction::Upload));
        p.on_event(&events[0]);
        assert!(!p.is_live() && p.lines(80).is_empty(), "nothing before the first interval");
        p.on_event(&events[1]);
        p.on_event(&events[2]);
        insta::assert_snapshot!(p.lines(100).join("\n"), @r"
        ▶ bandwidth 127.0.0.1  2.0 s / 2 s  11.2 Gbit/s  ██
          Upload 11.2 Gbit/s  lost 2
        ");
        assert!(p.lines(20).iter().all(|l| l.chars().count() <= 20));
    }

    #[test]
    fn sparklines_scale_to_the_maximum() {
        assert_eq!(sparkline([0.0, 50.0, 100.0]), "▁▅█");
        assert_eq!(sparkline([0.0, 0.0]), "▁▁");
        assert_eq!(sparkline([]), "");
    }
}
