//! Checks, k6-style: `FIGURE OP VALUE`, such as `p99 < 5ms`, `loss_ratio < 0.01`,
//! `throughput_bps >= 1G`. Values take the units figures are kept in: durations become
//! nanoseconds, `%` a ratio, and k/M/G multiply.

use wirespeed_model::Report;

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A parsed check.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The figure's key (`p99`, `loss_ratio`, `throughput_bps`).
    pub figure: String,
    /// How it is compared.
    pub op: Op,
    /// What it is compared with, in the figure's own unit.
    pub value: f64,
}

impl Rule {
    /// Parses `expr`; the error says what is wrong with it.
    pub fn parse(expr: &str) -> Result<Self, RuleError> {
        let fail = |why: RuleFault| RuleError { expr: expr.to_string(), why };
        let ops = [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)];
        let (at, text, op) = ops
            .iter()
            .filter_map(|(t, op)| expr.find(t).map(|at| (at, *t, *op)))
            .min_by_key(|(at, t, _)| (*at, usize::MAX - t.len()))
            .ok_or_else(|| fail(RuleFault::NoComparison))?;
        let figure = expr[..at].trim();
        let value = expr[at + text.len()..].trim();
        if figure.is_empty() || !figure.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(fail(RuleFault::NotAFigure(figure.to_string())));
        }
        let value = number(value).map_err(fail)?;
        // NaN compares false with everything: the check could never pass, or never fail.
        if !value.is_finite() {
            return Err(fail(RuleFault::NotComparable(value)));
        }
        Ok(Self { figure: figure.to_string(), op, value })
    }

    /// True when `actual` meets the rule.
    pub fn holds(&self, actual: f64) -> bool {
        match self.op {
            Op::Lt => actual < self.value,
            Op::Le => actual <= self.value,
            Op::Gt => actual > self.value,
            Op::Ge => actual >= self.value,
        }
    }
}

/// The unit of figure `name` of `report` (as [`figure`] finds it), for a message.
pub fn figure_unit(report: &Report, name: &str) -> Option<wirespeed_model::metrics::Unit> {
    let all = report.metrics();
    let key = match name {
        "p50" | "p99" => {
            let suffix = format!("_{name}_ns");
            return all.iter().find(|m| m.key.ends_with(&suffix)).map(|m| m.unit);
        }
        "error_ratio" => "success_ratio",
        "loss_ratio" if all.iter().all(|m| m.key != "loss_ratio") => "lost_ratio",
        "lost_ratio" if all.iter().all(|m| m.key != "lost_ratio") => "loss_ratio",
        other => other,
    };
    all.iter().find(|m| m.key == key).map(|m| m.unit)
}

/// The figure `name` of `report`: a key of its metrics (`throughput_bps`, `rtt_p99_ns`,
/// `loss_ratio`, …), or a short name — `p50`, `p99` (its kind's latency percentiles, ns),
/// `error_ratio` (1 − success ratio), `loss_ratio` and `lost_ratio` for one another.
pub fn figure(report: &Report, name: &str) -> Option<f64> {
    let all = report.metrics();
    let find = |k: &str| all.iter().find(|m| m.key == k).map(|m| m.value);
    find(name).or_else(|| match name {
        "p50" | "p99" => {
            let suffix = format!("_{name}_ns");
            all.iter().find(|m| m.key.ends_with(&suffix)).map(|m| m.value)
        }
        "error_ratio" => find("success_ratio").map(|s| 1.0 - s),
        "loss_ratio" => find("lost_ratio"),
        "lost_ratio" => find("loss_ratio"),
        _ => None,
    })
}

/// The figures a report of workload kind `kind` can have (its metrics' keys, as
/// [`wirespeed_model::kind::KindReport::metrics`] makes them, and the short names [`figure`] takes);
/// `None` for a kind this list does not know. A check is held to these when its scenario is
/// read, not after the study has run.
pub fn figures_of(kind: &str) -> Option<&'static [&'static str]> {
    const HTTP: &[&str] = &[
        "requests_per_second",
        "success_ratio",
        "latency_p50_ns",
        "latency_p99_ns",
        "p50",
        "p99",
        "error_ratio",
    ];
    const BANDWIDTH: &[&str] = &[
        "packet_rate",
        "throughput_bps",
        "reverse_throughput_bps",
        "loss_ratio",
        "lost_ratio",
        "jitter_ns",
        "retransmits",
    ];
    Some(match kind {
        "bandwidth" | "pps" => BANDWIDTH,
        "latency" => &["messages_per_second", "rtt_p50_ns", "rtt_p99_ns", "p50", "p99"],
        "cps" => &["connections_per_second", "connect_p50_ns", "connect_p99_ns", "p50", "p99"],
        "http" | "vegeta" => HTTP,
        "dns" => &[
            "queries_per_second",
            "lost_ratio",
            "loss_ratio",
            "latency_p50_ns",
            "latency_p99_ns",
            "p50",
            "p99",
        ],
        "ping" => &["rtt_p50_ns", "rtt_mean_ns", "loss_ratio", "lost_ratio", "p50"],
        "trace" => &["hops", "rtt_mean_ns"],
        "rpm" => &["rpm", "loaded_latency_ns", "idle_latency_p50_ns", "download_bps", "upload_bps"],
        _ => return None,
    })
}

/// The figures `report` has, for a message that names a figure it lacks.
pub fn figure_names(report: &Report) -> Vec<&'static str> {
    report.metrics().into_iter().map(|m| m.key).collect()
}

/// A check that is not one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{expr:?}: {why}")]
pub struct RuleError {
    /// The check as written.
    pub expr: String,
    /// What is wrong with it.
    pub why: RuleFault,
}

/// What is wrong with a check.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuleFault {
    /// No comparison in it.
    #[error("expected FIGURE < VALUE (or <=, >, >=)")]
    NoComparison,
    /// The left side is not a figure's name.
    #[error("{0:?} is not a figure name")]
    NotAFigure(String),
    /// The right side is not a value: `what` it was read as (a percentage, a duration, a number).
    #[error("{text:?} is not a {what}")]
    NotAValue {
        /// The text.
        text: String,
        /// What it looked like.
        what: &'static str,
    },
    /// A value no figure can be compared with (NaN, infinity).
    #[error("{0} is not a value a figure can be compared with")]
    NotComparable(f64),
}

/// A value with an optional unit.
fn number(text: &str) -> Result<f64, RuleFault> {
    let not = |what| RuleFault::NotAValue { text: text.to_string(), what };
    if let Some(p) = text.strip_suffix('%') {
        return p.trim().parse::<f64>().map(|v| v / 100.0).map_err(|_| not("percentage"));
    }
    if let Ok(v) = text.parse::<f64>() {
        return Ok(v);
    }
    // Durations, in nanoseconds: ns, us (or µs), ms, s.
    for (suffix, ns) in [("ns", 1.0), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)] {
        if let Some(v) = text.strip_suffix(suffix) {
            return v.trim().parse::<f64>().map(|v| v * ns).map_err(|_| not("duration"));
        }
    }
    let (digits, scale) = match text.chars().last() {
        Some('k') => (&text[..text.len() - 1], 1e3),
        Some('M') => (&text[..text.len() - 1], 1e6),
        Some('G') => (&text[..text.len() - 1], 1e9),
        _ => (text, 1.0),
    };
    digits.trim().parse::<f64>().map(|v| v * scale).map_err(|_| not("number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_with_units() {
        let r = Rule::parse("p99 < 5ms").unwrap();
        assert_eq!((r.figure.as_str(), r.op, r.value), ("p99", Op::Lt, 5e6));
        assert!(r.holds(4e6) && !r.holds(5e6));
        assert_eq!(Rule::parse("loss_ratio<=1%").unwrap().value, 0.01);
        assert_eq!(Rule::parse("throughput_bps >= 1.5G").unwrap().op, Op::Ge);
        assert_eq!(Rule::parse("throughput_bps >= 1.5G").unwrap().value, 1.5e9);
        assert_eq!(Rule::parse("error_ratio < 0.01").unwrap().value, 0.01);
        assert_eq!(Rule::parse("p50 < 1ns").unwrap().value, 1.0);
        assert_eq!(Rule::parse("p50 < 250us").unwrap().value, 250e3);
        assert_eq!(Rule::parse("p50 < 2.5s").unwrap().value, 2.5e9);
        for bad in ["p99", "p99 < fast", "< 5", "p 99 < 5", "p99 = 5", "p99 < NaN", "p99 < inf"] {
            assert!(Rule::parse(bad).is_err(), "{bad}");
        }
        let e = Rule::parse("p99 < 5 ms s").unwrap_err();
        assert_eq!(e.to_string(), r#""p99 < 5 ms s": "5 ms s" is not a duration"#);
        assert_eq!(
            Rule::parse("p99 < inf").unwrap_err().why,
            RuleFault::NotComparable(f64::INFINITY)
        );
    }
}
