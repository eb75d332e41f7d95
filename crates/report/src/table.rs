//! A plain table (headers and rows of text) and its four spellings: aligned text, Markdown,
//! CSV and HTML. History, comparisons and the key-figure sections of Markdown and HTML
//! reports are built as a [`Table`] once and printed in whichever format was asked for.

/// `text` with its control characters escaped (`\n`, `\u{1b}`): a tag or target is free text,
/// and printed raw a terminal escape in it acted on the terminal and a newline broke the table.
/// CSV and JSON keep the text as it is (they quote it).
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Rows of cells under headers; `numeric` columns are right-aligned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    /// Column names.
    pub headers: Vec<String>,
    /// Right-align this column (numbers).
    pub numeric: Vec<bool>,
    /// The cells, one `Vec` per row, as wide as `headers`.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these columns; a header starting with `>` is numeric.
    pub fn new(headers: &[&str]) -> Self {
        Self {
            headers: headers.iter().map(|h| h.trim_start_matches('>').to_string()).collect(),
            numeric: headers.iter().map(|h| h.starts_with('>')).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub fn push(&mut self, row: Vec<String>) {
        debug_assert_eq!(row.len(), self.headers.len());
        self.rows.push(row);
    }

    /// Columns padded to their widest cell, two spaces apart; control characters shown
    /// escaped (see [`visible`]).
    pub fn text(&self) -> String {
        // Display width: bytes for ASCII (the common case, and cheap), characters otherwise.
        let width = |c: &String| {
            let c = visible(c);
            if c.is_ascii() {
                c.len()
            } else {
                c.chars().count()
            }
        };
        let cols = self.headers.len();
        // Every cell's width in one flat vector: a history of 100 000 runs is one allocation
        // here, not one per row.
        let mut counts = Vec::with_capacity((self.rows.len() + 1) * cols);
        counts.extend(self.headers.iter().map(width));
        for r in &self.rows {
            counts.extend(r.iter().map(width));
        }
        let mut widths = vec![0; cols];
        for row in counts.chunks(cols.max(1)) {
            for (w, n) in widths.iter_mut().zip(row) {
                *w = (*w).max(*n);
            }
        }
        let line_len = widths.iter().sum::<usize>() + 2 * widths.len() + 1;
        // One buffer for the whole table, too.
        let mut out = String::with_capacity(line_len * (self.rows.len() + 1));
        let pad = |out: &mut String, n: usize| {
            const SPACES: &str = "                                                                ";
            let mut left = n;
            while left > 0 {
                let k = left.min(SPACES.len());
                out.push_str(&SPACES[..k]);
                left -= k;
            }
        };
        let mut line = |cells: &[String], counts: &[usize]| {
            let start = out.len();
            for (i, c) in cells.iter().enumerate() {
                let gap = widths[i] - counts[i];
                if i > 0 {
                    out.push_str("  ");
                }
                let c = visible(c);
                if self.numeric[i] {
                    pad(&mut out, gap);
                    out.push_str(&c);
                } else {
                    out.push_str(&c);
                    if i + 1 < cells.len() {
                        pad(&mut out, gap);
                    }
                }
            }
            let kept = out[start..].trim_end().len();
            out.truncate(start + kept);
            out.push('\n');
        };
        let mut rows_counts = counts.chunks(cols.max(1));
        if let Some(c) = rows_counts.next() {
            line(&self.headers, c);
        }
        for (r, c) in self.rows.iter().zip(rows_counts) {
            line(r, c);
        }
        out
    }

    /// A GitHub-flavoured Markdown table (pipes in cells escaped).
    pub fn markdown(&self) -> String {
        let cell = |c: &str| visible(c).replace('|', "\\|");
        let row = |cells: &[String]| {
            format!("| {} |\n", cells.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | "))
        };
        let mut out = row(&self.headers);
        let rule: Vec<&str> =
            self.numeric.iter().map(|&n| if n { "---:" } else { "---" }).collect();
        out.push_str(&format!("| {} |\n", rule.join(" | ")));
        for r in &self.rows {
            out.push_str(&row(r));
        }
        out
    }

    /// RFC 4180 CSV: cells with commas, quotes or line breaks are quoted.
    pub fn csv(&self) -> String {
        let mut out = crate::csv::record(&self.headers) + "\n";
        for r in &self.rows {
            out.push_str(&crate::csv::record(r));
            out.push('\n');
        }
        out
    }

    /// An HTML `<table>`, every cell escaped.
    pub fn html(&self) -> String {
        let class = |i: usize| if self.numeric[i] { " class=\"num\"" } else { "" };
        let mut out = String::from("<table>\n<thead><tr>");
        for (i, h) in self.headers.iter().enumerate() {
            out.push_str(&format!("<th{}>{}</th>", class(i), escape_html(h)));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for r in &self.rows {
            out.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                out.push_str(&format!("<td{}>{}</td>", class(i), escape_html(c)));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
        out
    }
}

/// Text made safe inside HTML elements and attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_in_cells_are_shown_escaped_not_sent_to_the_terminal() {
        let mut t = Table::new(&["Tag", ">N"]);
        t.push(vec!["red\x1b[31m\nline".into(), "1".into()]);
        let text = t.text();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.contains("red\\u{1b}[31m\\nline"), "{text}");
        assert!(!text.contains('\x1b'));
        assert!(t.markdown().lines().count() == 3, "{}", t.markdown());
        assert!(t.csv().contains('\x1b'), "CSV keeps the text as it is");
    }

    fn sample() -> Table {
        let mut t = Table::new(&["name", ">value"]);
        t.push(vec!["a|b".into(), "1".into()]);
        t.push(vec!["say \"hi\", <you>".into(), "1234".into()]);
        t
    }

    #[test]
    fn four_spellings() {
        let t = sample();
        insta::assert_snapshot!(t.text(), @r#"
        name             value
        a|b                  1
        say "hi", <you>   1234
        "#);
        insta::assert_snapshot!(t.markdown(), @r#"
        | name | value |
        | --- | ---: |
        | a\|b | 1 |
        | say "hi", <you> | 1234 |
        "#);
        insta::assert_snapshot!(t.csv(), @r#"
        name,value
        a|b,1
        "say ""hi"", <you>",1234
        "#);
        assert!(t
            .html()
            .contains("<td>say &quot;hi&quot;, &lt;you&gt;</td><td class=\"num\">1234</td>"));
    }
}
