//! The kept tables a page is drawn from: CSV files (a bench run's `summary.csv`, a study's
//! `seed.csv`), each read whole and addressed by the values of its key columns.

use std::collections::HashMap;

use super::PublishError;
pub(super) use wirespeed_model::glob::{capture, glob, is_pattern};

/// One CSV file: its header and rows, and which columns make a row's key.
#[derive(Debug, Clone)]
pub struct Table {
    /// Where it was read from, for messages.
    pub source: String,
    header: Vec<String>,
    keys: Vec<usize>,
    rows: Vec<Vec<String>>,
}

/// One matched row: its key parts and the table it is in.
#[derive(Debug, Clone, Copy)]
pub struct Row<'t> {
    table: &'t Table,
    index: usize,
}

impl Table {
    /// `text` as CSV with a header line; `keys` name the columns that address a row.
    pub fn parse(source: &str, text: &str, keys: &[String]) -> Result<Table, PublishError> {
        let bad = |why: String| PublishError::Data(format!("{source}: {why}"));
        let mut reader = ::csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes());
        let header: Vec<String> =
            reader.headers().map_err(|e| bad(e.to_string()))?.iter().map(str::to_owned).collect();
        let keys = keys
            .iter()
            .map(|k| {
                header.iter().position(|h| h == k).ok_or_else(|| {
                    bad(format!("has no column '{k}' (its columns: {})", header.join(", ")))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record.map_err(|e| bad(e.to_string()))?;
            rows.push(record.iter().map(str::to_owned).collect::<Vec<_>>());
        }
        let mut seen = HashMap::new();
        for (i, row) in rows.iter().enumerate() {
            let key: Vec<&str> =
                keys.iter().map(|&k| row.get(k).map_or("", String::as_str)).collect();
            if let Some(first) = seen.insert(key.join("/"), i) {
                return Err(bad(format!(
                    "rows {} and {} have the same key '{}'",
                    first + 2,
                    i + 2,
                    key.join("/")
                )));
            }
        }
        Ok(Table { source: source.into(), header, keys, rows })
    }

    /// How many key columns address a row.
    pub fn key_len(&self) -> usize {
        self.keys.len()
    }

    /// The rows whose key parts each match `patterns` (globs: `*`, `{a,b}`), in file order.
    pub fn select(&self, patterns: &[String]) -> Result<Vec<Row<'_>>, PublishError> {
        if patterns.len() != self.keys.len() {
            return Err(PublishError::Template(format!(
                "{} is addressed by {} key part(s) ({}), not {}",
                self.source,
                self.keys.len(),
                self.keys.iter().map(|&k| self.header[k].as_str()).collect::<Vec<_>>().join("/"),
                patterns.len()
            )));
        }
        Ok((0..self.rows.len())
            .filter(|&i| patterns.iter().zip(&self.keys).all(|(p, &k)| glob(p, &self.rows[i][k])))
            .map(|index| Row { table: self, index })
            .collect())
    }

    /// What a loop variable takes over the rows matching `keys` (`{{#each}}` and `each()`):
    /// for each row, in file order, the key part the first glob stands in (what its one `*`
    /// matched, or the whole part). A key with no glob is a template error.
    pub fn bindings(&self, keys: &[String]) -> Result<Vec<String>, PublishError> {
        let part = keys
            .iter()
            .position(|k| is_pattern(k))
            .ok_or_else(|| PublishError::Template("a loop needs a glob in one key part".into()))?;
        Ok(self
            .select(keys)?
            .iter()
            .map(|r| capture(&keys[part], r.key(part)).to_string())
            .collect())
    }

    fn column(&self, name: &str) -> Result<usize, PublishError> {
        self.header.iter().position(|h| h == name).ok_or_else(|| {
            PublishError::Template(format!(
                "{} has no column '{name}' (its columns: {})",
                self.source,
                self.header.join(", ")
            ))
        })
    }
}

impl<'t> Row<'t> {
    /// The row's value in `column`, as written in the file; None where the cell is empty.
    pub fn cell(&self, column: &str) -> Result<Option<&'t str>, PublishError> {
        let c = self.table.column(column)?;
        let text = self.table.rows[self.index].get(c).map_or("", String::as_str);
        Ok((!text.is_empty()).then_some(text))
    }

    /// The row's key part `i`.
    pub fn key(&self, i: usize) -> &'t str {
        &self.table.rows[self.index][self.table.keys[i]]
    }

    /// The whole key, parts joined by `/`, for messages.
    pub fn name(&self) -> String {
        (0..self.table.keys.len()).map(|i| self.key(i)).collect::<Vec<_>>().join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_found_by_their_keys_and_duplicates_refused() {
        let text = "workload,system,median\nup,a,1\nup,b,2\ndown,a,3\n";
        let t = Table::parse("s.csv", text, &["workload".into(), "system".into()]).unwrap();
        let rows = t.select(&["*".into(), "a".into()]).unwrap();
        let values: Vec<_> = rows.iter().map(|r| r.cell("median").unwrap().unwrap()).collect();
        assert_eq!(values, ["1", "3"]);
        assert!(t.select(&["up".into()]).is_err());
        assert!(rows[0].cell("mean").is_err());
        let twice = "key,value\nx,1\nx,2\n";
        let err = Table::parse("seed.csv", twice, &["key".into()]).unwrap_err();
        assert!(err.to_string().contains("same key 'x'"), "{err}");
    }
}
