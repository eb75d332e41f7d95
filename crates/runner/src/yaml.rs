//! YAML out of JSON values, for the files other tools read (an Ansible playbook, Kubernetes
//! manifests): block style, every string double-quoted with JSON's escapes (which YAML reads
//! the same), so no value is ever taken for a number, a boolean or a date.

use serde_json::Value;

/// `value` as a YAML document.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, value, 0, false);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// A string that starts with this is written with Ansible's `!unsafe` tag (the marker left
/// out): Ansible then never reads braces in it as a template.
pub const UNSAFE: &str = "\u{0}unsafe:";

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::Null => Some("null".into()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(match s.strip_prefix(UNSAFE) {
            Some(rest) => format!("!unsafe {}", Value::String(rest.to_string())),
            None => Value::String(s.clone()).to_string(),
        }),
        Value::Array(a) if a.is_empty() => Some("[]".into()),
        Value::Object(o) if o.is_empty() => Some("{}".into()),
        _ => None,
    }
}

fn key(k: &str) -> String {
    let plain = !k.is_empty()
        && k.chars().all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c))
        && !k.starts_with(|c: char| c.is_ascii_digit() || c == '-');
    if plain {
        k.to_string()
    } else {
        Value::String(k.to_string()).to_string()
    }
}

/// Writes `v` at `indent`; `inline` when it continues a `- ` line.
fn write(out: &mut String, v: &Value, indent: usize, inline: bool) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(map) if !map.is_empty() => {
            // `name` first, as people write tasks and plays; the rest in key order.
            let named = map.iter().filter(|(k, _)| *k == "name");
            let entries = named.chain(map.iter().filter(|(k, _)| *k != "name"));
            for (i, (k, val)) in entries.enumerate() {
                if !(inline && i == 0) {
                    out.push_str(&pad);
                }
                out.push_str(&key(k));
                out.push(':');
                match scalar(val) {
                    Some(s) => {
                        out.push(' ');
                        out.push_str(&s);
                        out.push('\n');
                    }
                    None => {
                        out.push('\n');
                        write(out, val, indent + 2, false);
                    }
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                out.push_str(&pad);
                out.push_str("- ");
                match scalar(item) {
                    Some(s) => {
                        out.push_str(&s);
                        out.push('\n');
                    }
                    None => write(out, item, indent + 2, true),
                }
            }
        }
        other => {
            if !inline {
                out.push_str(&pad);
            }
            out.push_str(&scalar(other).unwrap_or_default());
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_style_with_every_string_quoted() {
        let v = serde_json::json!({
            "name": "run 1",
            "hosts": "localhost",
            "gather_facts": false,
            "tasks": [
                {"name": "start", "ansible.builtin.shell": "echo 'a: b'", "args": {"chdir": "/tmp"}},
                {"name": "no", "list": [], "map": {}, "n": 3}
            ],
            "odd key": ["yes", "1.0", null, format!("{UNSAFE}{{{{ x }}}}")]
        });
        let y = to_yaml(&v);
        assert_eq!(
            y,
            "name: \"run 1\"\ngather_facts: false\nhosts: \"localhost\"\n\"odd key\":\n  - \"yes\"\n  - \"1.0\"\n  - null\n  - !unsafe \"{{ x }}\"\ntasks:\n  - name: \"start\"\n    ansible.builtin.shell: \"echo 'a: b'\"\n    args:\n      chdir: \"/tmp\"\n  - name: \"no\"\n    list: []\n    map: {}\n    n: 3\n"
        );
    }
}
