//! The expressions inside a placeholder: cells of kept tables (`ours[tcp-upload/direct].median`,
//! globs for several), numbers, `+ − × ÷`, and the named rules `min`, `max`, `median`, `mean`,
//! `range`, `count`, `sum`, `abs` and `first` (the first of its arguments the data hold), and
//! `each(s in alias[glob], EXPR)`, EXPR once per matching row with `{s}` its key part. Lists combine element by element, in file order.

use std::collections::HashMap;

use super::data::{is_pattern, Table};
use super::PublishError;

/// What an expression evaluates to.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// One number.
    Number(f64),
    /// Several, from a glob: one per matching row, in file order.
    List(Vec<f64>),
    /// The lowest and highest of several.
    Range(f64, f64),
    /// A cell that is not a number (a version, a date), written as it is.
    Text(String),
    /// A cell the data do not hold, and why: it spreads through arithmetic and rules (but
    /// `first`), and is an error unless a placeholder's `else` answers it.
    Missing(String),
}

/// What an expression is evaluated against: the tables by alias, and the loop variables.
pub struct Scope<'a> {
    /// The template's tables.
    pub tables: &'a HashMap<String, Table>,
    /// `{{#each}}` variables and the value each holds in this pass.
    pub vars: &'a [(String, String)],
}

/// Evaluates `source` in `scope`. A cell that is empty or a row that is missing is
/// [`PublishError::Missing`], which a placeholder's `| else TEXT` answers.
pub fn eval(source: &str, scope: &Scope<'_>) -> Result<Value, PublishError> {
    let tokens = tokenize(source)?;
    let mut parser = Parser { tokens, at: 0 };
    let tree = parser.sum()?;
    if let Some(t) = parser.tokens.get(parser.at) {
        return Err(PublishError::Template(format!("'{source}': unexpected {t:?}")));
    }
    match tree.value(scope.tables, &mut scope.vars.to_vec())? {
        Value::Missing(why) => Err(PublishError::Missing(why)),
        value => Ok(value),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(f64),
    /// `alias[key/parts].column` or `alias[key/parts]` (its `value` column).
    Cell {
        alias: String,
        keys: Vec<String>,
        column: Option<String>,
    },
    Name(String),
    Op(char),
}

/// A parsed expression.
#[derive(Debug, Clone)]
enum Tree {
    Number(f64),
    Cell {
        alias: String,
        keys: Vec<String>,
        column: Option<String>,
    },
    Binary(char, Box<Tree>, Box<Tree>),
    Rule(String, Vec<Tree>),
    /// `each(VAR in alias[keys], EXPR)`: EXPR once per matching row, a list.
    Each {
        var: String,
        alias: String,
        keys: Vec<String>,
        body: Box<Tree>,
    },
}

fn tokenize(source: &str) -> Result<Vec<Token>, PublishError> {
    let bad = |why: &str| PublishError::Template(format!("'{source}': {why}"));
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if "+-*/(),".contains(c) {
            tokens.push(Token::Op(c));
            i += 1;
        } else if c.is_ascii_digit() || c == '.' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric()
                    || chars[i] == '.'
                    || ((chars[i] == '-' || chars[i] == '+') && matches!(chars[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            let n = text.parse().map_err(|_| bad(&format!("'{text}' is not a number")))?;
            tokens.push(Token::Number(n));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let name: String = chars[start..i].iter().collect();
            if chars.get(i) != Some(&'[') {
                tokens.push(Token::Name(name));
                continue;
            }
            // A key may hold brackets of its own (a sweep's `tcp-upload[loss=0%]`).
            let mut depth = 0;
            let close = chars[i..]
                .iter()
                .position(|&c| {
                    depth += match c {
                        '[' => 1,
                        ']' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .ok_or_else(|| bad("a '[' without its ']'"))?;
            let keys: String = chars[i + 1..i + close].iter().collect();
            i += close + 1;
            let mut column = None;
            if chars.get(i) == Some(&'.') {
                let start = i + 1;
                i = start;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                column = Some(chars[start..i].iter().collect());
            }
            let keys = keys.split('/').map(|k| k.trim().to_string()).collect();
            tokens.push(Token::Cell { alias: name, keys, column });
        } else {
            return Err(bad(&format!("unexpected '{c}'")));
        }
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek_op(&self) -> Option<char> {
        match self.tokens.get(self.at) {
            Some(Token::Op(c)) => Some(*c),
            _ => None,
        }
    }

    fn expect(&mut self, op: char) -> Result<(), PublishError> {
        if self.peek_op() == Some(op) {
            self.at += 1;
            Ok(())
        } else {
            Err(PublishError::Template(format!("expected '{op}' at token {}", self.at + 1)))
        }
    }

    fn sum(&mut self) -> Result<Tree, PublishError> {
        let mut left = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek_op() {
            self.at += 1;
            left = Tree::Binary(op, Box::new(left), Box::new(self.product()?));
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<Tree, PublishError> {
        let mut left = self.factor()?;
        while let Some(op @ ('*' | '/')) = self.peek_op() {
            self.at += 1;
            left = Tree::Binary(op, Box::new(left), Box::new(self.factor()?));
        }
        Ok(left)
    }

    fn factor(&mut self) -> Result<Tree, PublishError> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        match token {
            Some(Token::Number(n)) => Ok(Tree::Number(n)),
            Some(Token::Op('-')) => {
                Ok(Tree::Binary('-', Box::new(Tree::Number(0.0)), Box::new(self.factor()?)))
            }
            Some(Token::Op('(')) => {
                let t = self.sum()?;
                self.expect(')')?;
                Ok(t)
            }
            Some(Token::Cell { alias, keys, column }) => Ok(Tree::Cell { alias, keys, column }),
            Some(Token::Name(name)) if name == "each" && self.peek_op() == Some('(') => {
                self.at += 1;
                let bad =
                    || PublishError::Template("write each(s in alias[key/parts], EXPR)".into());
                let (
                    Some(Token::Name(var)),
                    Some(Token::Name(within)),
                    Some(Token::Cell { alias, keys, .. }),
                ) = (
                    self.tokens.get(self.at).cloned(),
                    self.tokens.get(self.at + 1).cloned(),
                    self.tokens.get(self.at + 2).cloned(),
                )
                else {
                    return Err(bad());
                };
                if within != "in" {
                    return Err(bad());
                }
                self.at += 3;
                self.expect(',')?;
                let body = Box::new(self.sum()?);
                self.expect(')')?;
                Ok(Tree::Each { var, alias, keys, body })
            }
            Some(Token::Name(name)) if self.peek_op() == Some('(') => {
                self.at += 1;
                let mut args = vec![self.sum()?];
                while self.peek_op() == Some(',') {
                    self.at += 1;
                    args.push(self.sum()?);
                }
                self.expect(')')?;
                Ok(Tree::Rule(name, args))
            }
            Some(Token::Name(name)) => Err(PublishError::Template(format!(
                "'{name}' is neither a rule nor a cell (cells are alias[key].column)"
            ))),
            other => Err(PublishError::Template(format!("unexpected {other:?}"))),
        }
    }
}

impl Tree {
    fn value(
        &self,
        tables: &HashMap<String, Table>,
        vars: &mut Vec<(String, String)>,
    ) -> Result<Value, PublishError> {
        match self {
            Tree::Number(n) => Ok(Value::Number(*n)),
            Tree::Cell { alias, keys, column } => {
                cell(tables, vars, alias, keys, column.as_deref())
            }
            Tree::Binary(op, a, b) => combine(*op, a.value(tables, vars)?, b.value(tables, vars)?),
            Tree::Rule(name, args) => {
                let args = args.iter().map(|a| a.value(tables, vars)).collect::<Result<_, _>>()?;
                rule(name, args)
            }
            Tree::Each { var, alias, keys, body } => {
                let table = table(tables, alias)?;
                let keys: Vec<String> =
                    keys.iter().map(|k| substitute(k, vars)).collect::<Result<_, _>>()?;
                let names = table.bindings(&keys)?;
                if names.is_empty() {
                    return Ok(Value::Missing(format!(
                        "each(): no rows of {} match",
                        table.source
                    )));
                }
                let mut values = Vec::new();
                for name in names {
                    vars.push((var.clone(), name));
                    let v = body.value(tables, vars);
                    vars.pop();
                    match v? {
                        Value::Number(n) => values.push(n),
                        Value::Missing(why) => return Ok(Value::Missing(why)),
                        other => {
                            return Err(PublishError::Template(format!(
                                "each(): the expression gave {other:?}, not one number"
                            )))
                        }
                    }
                }
                Ok(Value::List(values))
            }
        }
    }
}

fn table<'t>(tables: &'t HashMap<String, Table>, alias: &str) -> Result<&'t Table, PublishError> {
    tables
        .get(alias)
        .ok_or_else(|| PublishError::Template(format!("no table '{alias}' in the template's data")))
}

/// A cell, or a list of them where a key part is a glob.
fn cell(
    tables: &HashMap<String, Table>,
    vars: &[(String, String)],
    alias: &str,
    keys: &[String],
    column: Option<&str>,
) -> Result<Value, PublishError> {
    let table = table(tables, alias)?;
    let keys: Vec<String> = keys.iter().map(|k| substitute(k, vars)).collect::<Result<_, _>>()?;
    let column = column.unwrap_or("value");
    let rows = table.select(&keys)?;
    let name = || format!("{alias}[{}].{column}", keys.join("/"));
    if !keys.iter().any(|k| is_pattern(k)) {
        let Some(row) = rows.first() else {
            return Ok(Value::Missing(format!("{}: no row in {}", name(), table.source)));
        };
        let Some(text) = row.cell(column)? else {
            return Ok(Value::Missing(format!("{} is empty", name())));
        };
        return Ok(text
            .parse::<f64>()
            .map_or_else(|_| Value::Text(text.to_string()), Value::Number));
    }
    if rows.is_empty() {
        return Ok(Value::Missing(format!("{}: no rows match in {}", name(), table.source)));
    }
    let mut values = Vec::new();
    for row in rows {
        let Some(text) = row.cell(column)? else {
            return Ok(Value::Missing(format!("{alias}[{}].{column} is empty", row.name())));
        };
        values.push(text.parse::<f64>().map_err(|_| {
            PublishError::Template(format!(
                "{alias}[{}].{column}: '{text}' is not a number",
                row.name()
            ))
        })?);
    }
    Ok(Value::List(values))
}

/// `{var}` in a key replaced by the loop variable's value.
pub fn substitute(text: &str, vars: &[(String, String)]) -> Result<String, PublishError> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let Some(len) = rest[open..].find('}') else { break };
        let inner = &rest[open + 1..open + len];
        out.push_str(&rest[..open]);
        if inner.contains(',') {
            // A glob's choices, not a variable.
            out.push_str(&rest[open..=open + len]);
        } else {
            let value = vars.iter().rev().find(|(n, _)| n == inner).ok_or_else(|| {
                PublishError::Template(format!("'{{{inner}}}' is not a loop variable here"))
            })?;
            out.push_str(&value.1);
        }
        rest = &rest[open + len + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn numbers(v: &Value) -> Result<Vec<f64>, PublishError> {
    match v {
        Value::Number(n) => Ok(vec![*n]),
        Value::List(v) => Ok(v.clone()),
        Value::Range(lo, hi) => Ok(vec![*lo, *hi]),
        Value::Text(t) => Err(PublishError::Template(format!("'{t}' is not a number"))),
        Value::Missing(why) => Err(PublishError::Missing(why.clone())),
    }
}

fn combine(op: char, left: Value, right: Value) -> Result<Value, PublishError> {
    let f = |a: f64, b: f64| match op {
        '+' => a + b,
        '-' => a - b,
        '*' => a * b,
        _ => a / b,
    };
    match (&left, &right) {
        (Value::Missing(_), _) => Ok(left),
        (_, Value::Missing(_)) => Ok(right),
        (Value::Number(a), Value::Number(b)) => Ok(Value::Number(f(*a, *b))),
        (Value::List(a), Value::Number(b)) => {
            Ok(Value::List(a.iter().map(|a| f(*a, *b)).collect()))
        }
        (Value::Number(a), Value::List(b)) => {
            Ok(Value::List(b.iter().map(|b| f(*a, *b)).collect()))
        }
        (Value::List(a), Value::List(b)) if a.len() == b.len() => {
            Ok(Value::List(a.iter().zip(b).map(|(a, b)| f(*a, *b)).collect()))
        }
        (Value::Range(lo, hi), Value::Number(b)) => {
            let (x, y) = (f(*lo, *b), f(*hi, *b));
            Ok(Value::Range(x.min(y), x.max(y)))
        }
        (Value::Number(a), Value::Range(lo, hi)) => {
            let (x, y) = (f(*a, *lo), f(*a, *hi));
            Ok(Value::Range(x.min(y), x.max(y)))
        }
        (Value::List(a), Value::List(b)) => Err(PublishError::Template(format!(
            "'{op}' between {} values and {}: lists combine element by element",
            a.len(),
            b.len()
        ))),
        _ => Err(PublishError::Template(format!("'{op}' needs numbers or lists of them"))),
    }
}

/// The named rules.
fn rule(name: &str, args: Vec<Value>) -> Result<Value, PublishError> {
    if name == "first" {
        let missing = args.iter().find(|a| matches!(a, Value::Missing(_))).cloned();
        return Ok(args
            .into_iter()
            .find(|a| !matches!(a, Value::Missing(_)))
            .or(missing)
            .unwrap_or(Value::Missing("first() of nothing".into())));
    }
    if let Some(missing) = args.iter().find(|a| matches!(a, Value::Missing(_))) {
        return Ok(missing.clone());
    }
    let mut all = Vec::new();
    for a in &args {
        all.extend(numbers(a)?);
    }
    if all.is_empty() {
        return Err(PublishError::Missing(format!("{name}() of nothing")));
    }
    let sorted = {
        let mut v = all.clone();
        v.sort_by(f64::total_cmp);
        v
    };
    Ok(match name {
        "min" => Value::Number(sorted[0]),
        "max" => Value::Number(sorted[sorted.len() - 1]),
        "median" => Value::Number(crate::bench::median(&all).unwrap_or(f64::NAN)),
        "mean" => Value::Number(all.iter().sum::<f64>() / all.len() as f64),
        "count" => Value::Number(all.len() as f64),
        "sum" => Value::Number(all.iter().sum()),
        "range" => Value::Range(sorted[0], sorted[sorted.len() - 1]),
        "abs" => match args.as_slice() {
            [Value::Number(n)] => Value::Number(n.abs()),
            _ => Value::List(all.iter().map(|n| n.abs()).collect()),
        },
        _ => {
            return Err(PublishError::Template(format!(
                "unknown rule '{name}' (min, max, median, mean, count, sum, range, abs, first)"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables() -> HashMap<String, Table> {
        let ours = "workload,system,median\nup,direct,100\nup,a,50\nup,b,25\ndown,direct,90\ndown,a,45\ndown,b,\nup[loss=1%],c,40\n";
        let seed = "key,value,unit\nup.direct,80,bit/s\nversion,Debian 12.11,\n";
        HashMap::from([
            (
                "ours".into(),
                Table::parse("ours.csv", ours, &["workload".into(), "system".into()]).unwrap(),
            ),
            ("seed".into(), Table::parse("seed.csv", seed, &["key".into()]).unwrap()),
        ])
    }

    fn run(source: &str, vars: &[(String, String)]) -> Result<Value, PublishError> {
        let tables = tables();
        eval(source, &Scope { tables: &tables, vars })
    }

    #[test]
    fn cells_rules_and_arithmetic() {
        assert_eq!(
            run("ours[up/direct].median / seed[up.direct]", &[]).unwrap(),
            Value::Number(1.25)
        );
        assert_eq!(
            run("(ours[up/a].median / ours[up/direct].median - 1) * 100", &[]).unwrap(),
            Value::Number(-50.0)
        );
        assert_eq!(run("ours[*/a].median", &[]).unwrap(), Value::List(vec![50.0, 45.0]));
        assert_eq!(
            run("range(ours[*/a].median / ours[*/direct].median)", &[]).unwrap(),
            Value::Range(0.5, 0.5)
        );
        assert_eq!(run("max(ours[up/*].median)", &[]).unwrap(), Value::Number(100.0));
        assert_eq!(run("100 - range(ours[up/*].median)", &[]).unwrap(), Value::Range(0.0, 75.0));
        assert_eq!(run("ours[up[loss=1%]/c].median", &[]).unwrap(), Value::Number(40.0));
        assert_eq!(run("count(ours[up/{a,b}].median)", &[]).unwrap(), Value::Number(2.0));
        assert_eq!(run("sum(ours[up/{a,b}].median)", &[]).unwrap(), Value::Number(75.0));
        assert_eq!(run("seed[version]", &[]).unwrap(), Value::Text("Debian 12.11".into()));
        assert_eq!(
            run("first(ours[down/b].median, ours[down/a].median / 3)", &[]).unwrap(),
            Value::Number(15.0)
        );
        let vars = [("s".to_string(), "b".to_string())];
        assert_eq!(run("ours[up/{s}].median * 2e0", &vars).unwrap(), Value::Number(50.0));
        assert_eq!(
            run("each(s in ours[*/a], ours[{s}/a].median / ours[{s}/direct].median)", &[]).unwrap(),
            Value::List(vec![0.5, 0.5])
        );
        assert!(matches!(
            run("each(s in ours[down/*], ours[down/{s}].median)", &[]),
            Err(PublishError::Missing(_))
        ));
    }

    #[test]
    fn missing_data_is_told_from_a_wrong_template() {
        assert!(matches!(run("ours[down/b].median", &[]), Err(PublishError::Missing(_))));
        assert!(matches!(run("ours[down/c].median", &[]), Err(PublishError::Missing(_))));
        assert!(matches!(run("ours[*/b].median", &[]), Err(PublishError::Missing(_))));
        assert!(matches!(
            run("max(ours[down/b].median, 1) * 2", &[]),
            Err(PublishError::Missing(_))
        ));
        assert!(matches!(
            run("first(ours[down/b].median, seed[none])", &[]),
            Err(PublishError::Missing(_))
        ));
        assert!(matches!(run("ours[up/a].mean", &[]), Err(PublishError::Template(_))));
        assert!(matches!(run("other[up].value", &[]), Err(PublishError::Template(_))));
        assert!(matches!(run("ours[up/a].median +", &[]), Err(PublishError::Template(_))));
        assert!(matches!(
            run("ours[*/a].median / ours[up/*].median", &[]),
            Err(PublishError::Template(_))
        ));
        assert!(matches!(run("ours[up/{s}].median", &[]), Err(PublishError::Template(_))));
    }
}
