//! One module per test kind, each rendering its kind in every format: the text banner's
//! description, interval lines and summary; CSV columns, rows and summary; the live panel's
//! sample; the quick table's lines (and bandwidth's iperf3 JSON). The format modules
//! ([`crate::text`], [`crate::csv`], [`crate::live`], [`crate::quick`]) ask a [`View`] and
//! never match on the kind.
//!
//! A new kind is a module here (its [`KindView`]) and one line in [`view`], whose `match` is
//! exhaustive: a kind left out fails to compile.

pub(crate) mod bandwidth;
pub(crate) mod cps;
pub(crate) mod dns;
pub(crate) mod http;
pub(crate) mod latency;
pub(crate) mod ping;
pub(crate) mod rpm;
pub(crate) mod trace;

use std::io::{self, Write};

use wirespeed_model::event::Steps;
use wirespeed_model::report::BodyVariant;
use wirespeed_model::{Event, Meta, Report, TestSpec};

use crate::text::Style;

/// What the live panel shows for one interval (or probe).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LiveSample {
    /// When the interval ended, nanoseconds since the start.
    pub(crate) end_ns: u64,
    /// The figure the sparkline plots.
    pub(crate) value: f64,
    /// That figure as text.
    pub(crate) current: String,
    /// A few more figures (percentiles, errors).
    pub(crate) details: Vec<String>,
}

/// One line of the quick table: test name, two figures, details.
pub(crate) type QuickLine = (String, String, String, String);

/// How one kind's run is shown, as the formats ask: any event, any report. Made from the run's
/// spec when it starts ([`view`]), so it can keep what later events need (the spec, a ping's
/// peer, mtr's table on the terminal). Each kind writes a [`KindView`] instead, in its own
/// types; [`Typed`] is the one `View` there is.
pub(crate) trait View: Send {
    /// What the test is, in one line under the banner ("TCP, 1 stream, upload, 10 s, …").
    fn describe(&self) -> String;

    /// Text: the lines after the banner (the interval table's heading).
    fn text_start(&mut self, meta: &Meta, style: &Style, out: &mut dyn Write) -> io::Result<()>;

    /// Text: the lines for one of the kind's running events (interval, probe, round).
    fn text_event(&mut self, event: &Event, style: &Style, out: &mut dyn Write) -> io::Result<()>;

    /// Text: the summary.
    fn text_end(&mut self, report: &Report, style: &Style, out: &mut dyn Write) -> io::Result<()>;

    /// CSV: the header line.
    fn csv_columns(&self) -> String;

    /// CSV: the rows for one running event.
    fn csv_rows(&self, event: &Event) -> Vec<String>;

    /// CSV: the summary rows.
    fn csv_summary(&self, report: &Report) -> Vec<String>;

    /// The live panel's sample for one running event, if it has one.
    fn live(&self, event: &Event) -> Option<LiveSample>;

    /// The quick table's lines for a finished run called `name`.
    fn quick(&self, name: &str, report: &Report) -> Vec<QuickLine>;
}

/// One step of a kind's run as its view sees it (an interval, a probe, a round).
pub(crate) type Step<V> = <<V as KindView>::Report as Steps>::Step;

/// How one kind's run is shown, in the kind's own types: each method gets the kind's step or
/// report, never another kind's. [`Typed`] makes it a [`View`], taking each event and report
/// down to the kind's once.
pub(crate) trait KindView: Send {
    /// The kind's report (and, through [`Steps`], its step).
    type Report: Steps;

    /// What the test is, in one line under the banner ("TCP, 1 stream, upload, 10 s, …").
    fn describe(&self) -> String;

    /// Text: the lines after the banner (the interval table's heading).
    fn text_start(&mut self, meta: &Meta, style: &Style, out: &mut dyn Write) -> io::Result<()>;

    /// Text: the lines for one step.
    fn text_step(
        &mut self,
        step: &Step<Self>,
        style: &Style,
        out: &mut dyn Write,
    ) -> io::Result<()>;

    /// Text: the summary.
    fn text_end(
        &mut self,
        report: &Self::Report,
        style: &Style,
        out: &mut dyn Write,
    ) -> io::Result<()>;

    /// CSV: the header line.
    fn csv_columns(&self) -> String;

    /// CSV: the rows for one step.
    fn csv_rows(&self, step: &Step<Self>) -> Vec<String>;

    /// CSV: the summary rows.
    fn csv_summary(&self, report: &Self::Report) -> Vec<String>;

    /// The live panel's sample for one step, if it has one.
    fn live(&self, step: &Step<Self>) -> Option<LiveSample>;

    /// The quick table's lines for a finished run called `name`.
    fn quick(&self, name: &str, report: &Self::Report) -> Vec<QuickLine>;
}

/// A kind's view as the formats ask for it: an event or a report of another kind (a notice,
/// the start) is nothing to it.
pub(crate) struct Typed<V>(pub(crate) V);

impl<V: KindView> View for Typed<V> {
    fn describe(&self) -> String {
        self.0.describe()
    }

    fn text_start(&mut self, meta: &Meta, style: &Style, out: &mut dyn Write) -> io::Result<()> {
        self.0.text_start(meta, style, out)
    }

    fn text_event(&mut self, event: &Event, style: &Style, out: &mut dyn Write) -> io::Result<()> {
        V::Report::step_of(event).map_or(Ok(()), |step| self.0.text_step(step, style, out))
    }

    fn text_end(&mut self, report: &Report, style: &Style, out: &mut dyn Write) -> io::Result<()> {
        V::Report::of_body(&report.body).map_or(Ok(()), |r| self.0.text_end(r, style, out))
    }

    fn csv_columns(&self) -> String {
        self.0.csv_columns()
    }

    fn csv_rows(&self, event: &Event) -> Vec<String> {
        V::Report::step_of(event).map(|step| self.0.csv_rows(step)).unwrap_or_default()
    }

    fn csv_summary(&self, report: &Report) -> Vec<String> {
        V::Report::of_body(&report.body).map(|r| self.0.csv_summary(r)).unwrap_or_default()
    }

    fn live(&self, event: &Event) -> Option<LiveSample> {
        V::Report::step_of(event).and_then(|step| self.0.live(step))
    }

    fn quick(&self, name: &str, report: &Report) -> Vec<QuickLine> {
        V::Report::of_body(&report.body).map(|r| self.0.quick(name, r)).unwrap_or_default()
    }
}

/// The view of a run of `spec`'s kind.
pub(crate) fn view(spec: &TestSpec) -> Box<dyn View> {
    match spec {
        TestSpec::Bandwidth(s) => Box::new(Typed(bandwidth::BandwidthView::new(s))),
        TestSpec::Latency(s) => Box::new(Typed(latency::LatencyView(s.clone()))),
        TestSpec::Cps(s) => Box::new(Typed(cps::CpsView(s.clone()))),
        TestSpec::Ping(s) => Box::new(Typed(ping::PingView::new(s))),
        TestSpec::Trace(s) => Box::new(Typed(trace::TraceView::new(s))),
        TestSpec::Http(s) => Box::new(Typed(http::HttpView(s.as_ref().clone()))),
        TestSpec::Dns(s) => Box::new(Typed(dns::DnsView(s.as_ref().clone()))),
        TestSpec::Rpm(s) => Box::new(Typed(rpm::RpmView(s.as_ref().clone()))),
    }
}

/// One quick line: `name`, a first figure, an empty second column, details.
pub(crate) fn one_line(name: &str, first: String, details: String) -> Vec<QuickLine> {
    vec![(name.to_string(), first, String::new(), details)]
}
