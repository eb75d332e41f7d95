//! A crate's module graph read from its source, for the tests that keep it free of cycles: each
//! file is a module, and a path through `crate::`, `super::` or `self::` is an edge to the
//! deepest module it names. Test modules (`#[cfg(test)] mod tests` at a file's end) and
//! comments are left out. A cycle means two modules each need the other: one of them is no
//! longer a layer the other stands on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's path under the crate root (`["kinds", "dns", "stream"]`; the root is empty).
type Module = Vec<String>;

/// The cycles in the crate whose sources are under `src`: each a set of modules (named
/// `a::b`, the root `crate`) that reach one another through their imports. Empty when the
/// modules form layers.
pub fn cycles(src: &Path) -> Vec<Vec<String>> {
    let files = modules(src);
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, text) in &files {
        for path in paths(text) {
            let (base, rest) = path.split_first().expect("a path has a first word");
            let mut full: Module = match base.as_str() {
                "crate" => Vec::new(),
                "self" => module.clone(),
                _ => module[..module.len().saturating_sub(1)].to_vec(),
            };
            let mut words = rest.iter().peekable();
            if base == "super" {
                while words.peek().is_some_and(|w| *w == "super") {
                    words.next();
                    full.pop();
                }
            }
            full.extend(words.cloned());
            let target =
                (0..=full.len()).rev().map(|k| &full[..k]).find(|m| files.contains_key(*m));
            if let Some(target) = target {
                if target != module.as_slice() {
                    edges.entry(module.clone()).or_default().insert(target.to_vec());
                }
            }
        }
    }
    strongly_connected(&edges)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut names: Vec<String> = c
                .iter()
                .map(|m| if m.is_empty() { "crate".into() } else { m.join("::") })
                .collect();
            names.sort();
            names
        })
        .collect()
}

/// Every module's text, comments and trailing test module removed.
fn modules(src: &Path) -> BTreeMap<Module, String> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("the source directory reads") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).expect("under src").with_extension("");
            let mut module: Module =
                rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            // A directory's own module (`lib.rs`, `mod.rs`) is the directory.
            if matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).expect("a source file reads");
            out.insert(module, code_of(&text));
        }
    }
    out
}

/// `text` without its comments and without a test module at its end.
fn code_of(text: &str) -> String {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    code.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The module paths `code` names: `crate::a::b`, `super::x`, `self::y`, each group
/// `crate::a::{b, c::d}` opened into one path per member.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for base in ["crate", "super", "self"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(&format!("{base}::")).map(|i| i + from) {
            from = at + base.len() + 2;
            let starts_word =
                at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
            let after_colons = at >= 2 && &code[at - 2..at] == "::";
            if !starts_word || after_colons {
                continue;
            }
            let mut words = vec![base.to_string()];
            let mut rest = &code[at + base.len()..];
            while let Some(next) = rest.strip_prefix("::") {
                if let Some(group) = next.strip_prefix('{') {
                    let inner = group.split('}').next().unwrap_or("");
                    for member in inner.split(',') {
                        let member = member.split(" as ").next().unwrap_or("").trim();
                        let mut path = words.clone();
                        if !member.is_empty() && member != "self" {
                            path.extend(member.split("::").map(|w| w.trim().to_string()));
                        }
                        out.push(path);
                    }
                    words.clear();
                    break;
                }
                let word: String =
                    next.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if word.is_empty() {
                    break;
                }
                rest = &next[word.len()..];
                words.push(word);
            }
            if words.len() > 1 {
                out.push(words);
            }
        }
    }
    out
}

/// Tarjan's strongly connected components of `edges`.
fn strongly_connected(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct State<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        found: Vec<Vec<Module>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Module) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            s.found.push(component);
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    let nodes: BTreeSet<&Module> = edges.keys().chain(edges.values().flatten()).collect();
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found
}
