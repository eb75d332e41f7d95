//! Self-contained HTML reports: tables plus interactive charts drawn by Chart.js, which is
//! compiled into the binary and inlined into the page, so a report opens offline, from a mail
//! attachment or a CI artefact, with no CDN. The charts are the same [`Chart`]s the SVG/PNG
//! painter draws; the page's script turns each into a Chart.js configuration.
//!
//! The page records how rendering went on `<body>`: `data-charts` (charts drawn),
//! `data-inked` (charts whose canvas has pixels) and `data-errors` (script errors), which the
//! browser test reads.

use std::io::{self, Write};

use wirespeed_model::compare::Comparison;
use wirespeed_model::{Event, Report};

use crate::charts::{self, Chart};
use crate::diagnosis;
use crate::digest::{self, RunLabel};
use crate::table::escape_html;
use crate::{comparison, Renderer};

/// Chart.js (MIT), vendored: HTML reports and the web speed test's results page inline it.
pub const CHART_JS: &str = include_str!("../assets/chart.umd.min.js");

/// A page being put together: HTML sections and the charts they place.
#[derive(Debug, Default)]
struct Page {
    body: String,
    charts: Vec<(String, Chart)>,
}

impl Page {
    fn push(&mut self, html: &str) {
        self.body.push_str(html);
    }

    /// Places the charts in a grid.
    fn charts(&mut self, charts: Vec<Chart>) {
        if charts.is_empty() {
            return;
        }
        self.push("<div class=\"charts\">\n");
        for c in charts {
            let id = format!("chart{}", self.charts.len());
            self.push(&format!(
                "<figure class=\"chart\"><div class=\"box\"><canvas id=\"{id}\" role=\"img\" aria-label=\"{}\"></canvas></div></figure>\n",
                escape_html(&c.title)
            ));
            self.charts.push((id, c));
        }
        self.push("</div>\n");
    }

    fn run(&mut self, report: &Report, label: &RunLabel, with_charts: bool) {
        self.push(&format!("<section>\n<h2>{}</h2>\n", escape_html(&digest::title(report, label))));
        self.push(
            &digest::facts(report, label)
                .html()
                .replace("<thead><tr><th></th><th></th></tr></thead>\n", ""),
        );
        self.push("<h3>Key figures</h3>\n");
        self.push(&digest::key_figures(report).html());
        if with_charts {
            self.charts(charts::run_charts(report));
        }
        if let Some(t) = digest::intervals(report) {
            self.push("<details><summary>Intervals</summary>\n");
            self.push(&t.html());
            self.push("</details>\n");
        }
        if let Some(d) = &report.meta.diagnosis {
            self.push("<h3>Tester</h3>\n<ul>\n");
            for line in diagnosis::findings(d) {
                self.push(&format!("<li>{}</li>\n", escape_html(&line)));
            }
            self.push("</ul>\n<details><summary>Threads</summary>\n");
            self.push(&diagnosis::threads(d).html());
            self.push("</details>\n");
        }
        self.push("<details><summary>Options</summary>\n");
        self.push(&digest::spec(report).html());
        self.push("</details>\n</section>\n");
    }

    fn finish(self, title: &str) -> String {
        let data: Vec<serde_json::Value> =
            self.charts.iter().map(|(id, c)| serde_json::json!({ "id": id, "chart": c })).collect();
        // `</` would end the script element early; JSON allows `<\/` for it.
        let data =
            serde_json::to_string(&data).unwrap_or_else(|_| "[]".into()).replace("</", "<\\/");
        format!(
            "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body data-charts=\"0\" data-inked=\"0\" data-errors=\"0\">\n<h1>{title}</h1>\n{body}<p class=\"foot\">Made by wirespeed {version}. Charts: Chart.js, inlined.</p>\n<ul id=\"errors\"></ul>\n<script>{CHART_JS}</script>\n<script type=\"application/json\" id=\"wirespeed-charts\">{data}</script>\n<script>{SCRIPT}</script>\n</body>\n</html>\n",
            title = escape_html(title),
            body = self.body,
            version = env!("CARGO_PKG_VERSION"),
        )
    }
}

/// A scenario's results: a table per section, then the charts.
pub fn bench_document(
    title: &str,
    sections: &[(String, crate::table::Table)],
    charts: Vec<Chart>,
) -> String {
    let mut page = Page::default();
    for (heading, table) in sections {
        page.push(&format!("<section>\n<h2>{}</h2>\n", escape_html(heading)));
        page.push(&table.html());
        page.push("</section>\n");
    }
    page.charts(charts);
    page.finish(title)
}

/// Saved runs, each with its tables and charts.
pub fn runs_document(runs: &[(&Report, RunLabel)]) -> String {
    let mut page = Page::default();
    for (r, label) in runs {
        page.run(r, label, true);
    }
    let title = match runs {
        [(r, label)] => digest::title(r, label),
        _ => format!("{} wirespeed runs", runs.len()),
    };
    page.finish(&title)
}

/// A comparison: warnings, the verdict table and charts, then each run's tables.
pub fn comparison_document(
    runs: &[(&Report, RunLabel)],
    labels: &[String],
    cmp: &Comparison,
) -> String {
    let mut page = Page::default();
    let kind = runs.first().map_or("", |r| r.0.kind().name());
    let warnings = comparison::spec_warnings(cmp);
    if !warnings.is_empty() {
        page.push(
            "<div class=\"warning\"><strong>The runs were not asked the same thing:</strong><ul>\n",
        );
        for w in warnings {
            page.push(&format!("<li><code>{}</code></li>\n", escape_html(&w)));
        }
        page.push("</ul></div>\n");
    }
    let limits = comparison::diagnosis_warnings(cmp, labels);
    if !limits.is_empty() {
        page.push(&format!(
            "<div class=\"warning\"><strong>Warning: {}</strong><ul>\n",
            escape_html(&comparison::DIAGNOSIS_HEADING.replace('`', ""))
        ));
        for w in limits {
            page.push(&format!("<li>{}</li>\n", escape_html(&w)));
        }
        page.push("</ul></div>\n");
    }
    page.push("<ul class=\"verdicts\">\n");
    for v in comparison::verdicts(cmp, labels) {
        page.push(&format!("<li>{}</li>\n", escape_html(&v)));
    }
    page.push("</ul>\n");
    page.push(&comparison::table(cmp, labels).html());
    let reports: Vec<&Report> = runs.iter().map(|r| r.0).collect();
    page.charts(charts::comparison_charts(&reports, labels, cmp));
    for (r, label) in runs {
        page.run(r, label, false);
    }
    page.finish(&format!("Comparison of {} {kind} runs", runs.len()))
}

/// The `--format html` renderer of a live run: the page, once the run has ended.
#[derive(Debug, Default)]
pub struct Html;

impl Renderer for Html {
    fn on_event(&mut self, event: &Event, out: &mut dyn Write) -> io::Result<()> {
        if let Event::End(report) = event {
            out.write_all(runs_document(&[(report, RunLabel::default())]).as_bytes())?;
        }
        Ok(())
    }
}

const STYLE: &str = include_str!("../assets/report.css");

/// Turns each chart into a Chart.js configuration, then records what was drawn on `<body>`.
const SCRIPT: &str = include_str!("../assets/report.js");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use wirespeed_model::kinds::bandwidth::Direction;
    use wirespeed_model::rules::Protocol;

    #[test]
    fn a_page_is_self_contained_and_escapes_what_it_shows() {
        let mut r = fixtures::report(Protocol::Udp, Direction::Upload);
        r.meta.notes.push("<script>alert(1)</script>".into());
        let page = runs_document(&[(&r, RunLabel { id: Some(3), tag: Some("a & b".into()) })]);
        assert!(page.contains("Chart.js v4"), "the library is inlined");
        assert!(!page.contains("src=\"http"), "nothing is fetched");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("a &amp; b"));
        assert_eq!(page.matches("<canvas").count(), charts::run_charts(&r).len());
        // The chart data parses as JSON, with `</` escaped.
        let data = page
            .split("id=\"wirespeed-charts\">")
            .nth(1)
            .unwrap()
            .split("</script>")
            .next()
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(v.as_array().unwrap().len(), charts::run_charts(&r).len());
    }
}
