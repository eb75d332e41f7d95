//! The study pages in docs/studies/: each is exactly what `wirespeed publish` renders from its
//! template and the kept data it names (so no page carries a figure its data do not hold, and
//! a page edited by hand fails), and every scenario a page runs is in examples/ and expands.

use std::path::{Path, PathBuf};

use crate::common::client;

fn studies() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/studies")
}

fn pages(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    names
}

fn check(templates: &[PathBuf]) -> std::process::Output {
    let mut args = vec!["publish", "--check"];
    args.extend(templates.iter().map(|t| t.to_str().unwrap()));
    client(&args)
}

#[test]
fn every_page_is_what_its_template_and_data_render() {
    let dir = studies();
    let templates = pages(&dir.join("templates"));
    for page in pages(&dir) {
        assert!(
            templates.contains(&page),
            "{page} has no template in templates/: a page is rendered, not typed"
        );
    }
    for t in &templates {
        assert!(dir.join(t).is_file(), "templates/{t} renders to a page that is not there");
    }
    let paths: Vec<PathBuf> = templates.iter().map(|t| dir.join("templates").join(t)).collect();
    let out = check(&paths);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A copy of docs/studies in which one figure is changed (on a page, then in its data) and one
/// figure is typed into a template's prose: each is caught.
#[test]
fn one_changed_figure_fails_the_check() {
    let copy = tempfile::tempdir().unwrap();
    copy_dir(&studies(), copy.path());
    let template = copy.path().join("templates/gost-transports.md");
    let page = copy.path().join("gost-transports.md");
    let original = std::fs::read_to_string(&page).unwrap();
    assert_eq!(check(std::slice::from_ref(&template)).status.code(), Some(0));

    // One digit of the first throughput in a table, changed by hand.
    let (n, line) =
        original.lines().enumerate().find(|(_, l)| l.starts_with("| direct |")).unwrap();
    let at = line.find(|c: char| c.is_ascii_digit()).unwrap();
    let digit = line.as_bytes()[at];
    let changed = format!(
        "{}{}{}",
        &line[..at],
        if digit == b'9' { '1' } else { (digit + 1) as char },
        &line[at + 1..]
    );
    std::fs::write(&page, original.replacen(line, &changed, 1)).unwrap();
    let out = check(std::slice::from_ref(&template));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(14), "{err}");
    assert!(err.contains(&format!("line {} reads", n + 1)) && err.contains(&changed), "{err}");
    std::fs::write(&page, &original).unwrap();

    // One value in the kept data: the page no longer says what the data hold.
    let data = copy.path().join("gost-transports/summary.csv");
    let csv = std::fs::read_to_string(&data).unwrap();
    let row = csv.lines().find(|l| l.starts_with("tcp-latency,gost-ws,")).unwrap();
    let fields: Vec<&str> = row.split(',').collect();
    let p50: f64 = fields[7].parse().unwrap();
    let moved = row.replace(&format!(",{},", fields[7]), &format!(",{},", p50 * 1.5));
    std::fs::write(&data, csv.replacen(row, &moved, 1)).unwrap();
    assert_eq!(check(std::slice::from_ref(&template)).status.code(), Some(14));
    std::fs::write(&data, &csv).unwrap();

    // A data file gone: no page can be rendered without it.
    std::fs::remove_file(copy.path().join("gost-transports/seed.csv")).unwrap();
    let out = check(std::slice::from_ref(&template));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("seed.csv: cannot be read"));
    copy_dir(&studies().join("gost-transports"), &copy.path().join("gost-transports"));

    // A figure typed into the template's prose is refused before anything is rendered.
    let text = std::fs::read_to_string(&template).unwrap();
    let typed = text.replacen(
        "## Beside the source\n",
        "## Beside the source\n\nIt ran at 25.3 Gbit/s.\n",
        1,
    );
    std::fs::write(&template, typed).unwrap();
    let out = check(std::slice::from_ref(&template));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("figures typed into the prose") && err.contains("'25.3'"), "{err}");
}

/// Every `wirespeed bench` command a page gives names a scenario in examples/ and expands with
/// the page's own options (`--dry-run` in place of `--out`).
#[test]
fn every_command_a_page_gives_names_an_example_that_expands() {
    let dir = studies();
    let mut seen = 0;
    for page in pages(&dir) {
        let text = std::fs::read_to_string(dir.join(&page)).unwrap();
        for line in text.lines() {
            let Some((_, args)) = line.split_once("wirespeed bench ") else { continue };
            if line.trim_start().starts_with(['-', '|', '(']) || !line.contains(".toml") {
                continue;
            }
            let mut words =
                wirespeed_runner::words::split(args.split(" #").next().unwrap()).unwrap();
            if let Some(i) = words.iter().position(|w| w == "--out") {
                words.drain(i..i + 2);
            }
            let file = words.iter().find(|w| w.ends_with(".toml")).unwrap().clone();
            assert!(file.starts_with("examples/"), "{page}: {file} is not in examples/: {line}");
            let root = dir.join("../..");
            assert!(root.join(&file).is_file(), "{page}: {file} is missing");
            let mut args: Vec<String> = vec!["bench".into()];
            args.extend(words.into_iter().map(|w| {
                if w == file {
                    root.join(&w).display().to_string()
                } else {
                    w
                }
            }));
            args.push("--dry-run".into());
            let out = client(&args.iter().map(String::as_str).collect::<Vec<_>>());
            assert_eq!(
                out.status.code(),
                Some(0),
                "{page}: {line}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            seen += 1;
        }
    }
    assert!(seen >= 7, "commands found: {seen}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
