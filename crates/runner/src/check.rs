//! Checks, k6-style: `FIGURE OP VALUE`, such as `p99 < 5ms`, `loss_ratio < 0.01`,
//! `throughput_bps >= 1G`. Values take the units figures are kept in: durations become
//! nanoseconds, `%` a ratio, and k/M/G multiply.

use wirespeed_model::units::parse_duration;

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
    pub fn parse(expr: &str) -> Result<Self, String> {
        let ops = [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)];
        let (at, text, op) = ops
            .iter()
            .filter_map(|(t, op)| expr.find(t).map(|at| (at, *t, *op)))
            .min_by_key(|(at, t, _)| (*at, usize::MAX - t.len()))
            .ok_or_else(|| format!("{expr:?}: expected FIGURE < VALUE (or <=, >, >=)"))?;
        let figure = expr[..at].trim();
        let value = expr[at + text.len()..].trim();
        if figure.is_empty() || !figure.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!("{expr:?}: {figure:?} is not a figure name"));
        }
        Ok(Self {
            figure: figure.to_string(),
            op,
            value: number(value).map_err(|e| format!("{expr:?}: {e}"))?,
        })
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

/// A value with an optional unit.
fn number(text: &str) -> Result<f64, String> {
    if let Some(p) = text.strip_suffix('%') {
        return p
            .trim()
            .parse::<f64>()
            .map(|v| v / 100.0)
            .map_err(|_| format!("{text:?} is not a percentage"));
    }
    if let Ok(v) = text.parse::<f64>() {
        return Ok(v);
    }
    if text.ends_with('s') && text.chars().next().is_some_and(|c| c.is_ascii_digit() || c == '.') {
        return parse_duration(text)
            .map(|d| d.as_nanos() as f64)
            .map_err(|_| format!("{text:?} is not a duration"));
    }
    let (digits, scale) = match text.chars().last() {
        Some('k') => (&text[..text.len() - 1], 1e3),
        Some('M') => (&text[..text.len() - 1], 1e6),
        Some('G') => (&text[..text.len() - 1], 1e9),
        _ => (text, 1.0),
    };
    digits.trim().parse::<f64>().map(|v| v * scale).map_err(|_| format!("{text:?} is not a number"))
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
        for bad in ["p99", "p99 < fast", "< 5", "p 99 < 5", "p99 = 5"] {
            assert!(Rule::parse(bad).is_err(), "{bad}");
        }
    }
}
