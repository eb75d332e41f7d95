//! `wirespeed publish`: study pages rendered from their templates and kept data, or checked
//! against what they render (`--check`, which CI runs on docs/studies).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use wirespeed_report::publish;

use crate::exit;
use crate::flags::PublishArgs;

/// Renders (or checks) each template's page.
pub(super) fn run(args: &PublishArgs) -> Result<u8> {
    let mut differs = Vec::new();
    for template in &args.templates {
        let page = page_of(template)?;
        let text = std::fs::read_to_string(template)
            .with_context(|| format!("reading {}", template.display()))?;
        let dir = page.parent().unwrap_or(Path::new(".")).to_path_buf();
        let rendered = publish::render(&text, &|path| std::fs::read_to_string(dir.join(path)))
            .map_err(|e| anyhow!("{}: {e}", template.display()))?;
        if !args.check {
            std::fs::write(&page, rendered)
                .with_context(|| format!("writing {}", page.display()))?;
            println!("{} -> {}", template.display(), page.display());
            continue;
        }
        match std::fs::read_to_string(&page) {
            Ok(on_disk) if on_disk == rendered => {}
            Ok(on_disk) => differs.push(format!(
                "{}: {}",
                page.display(),
                first_difference(&on_disk, &rendered)
            )),
            Err(e) => differs.push(format!("{}: cannot be read ({e})", page.display())),
        }
    }
    if differs.is_empty() {
        return Ok(exit::OK);
    }
    for d in &differs {
        eprintln!("wirespeed: {d}");
    }
    eprintln!("wirespeed: {} page(s) are not what their templates and data render: run `wirespeed publish` on the templates, and edit templates, not pages", differs.len());
    Ok(exit::PAGE_DIFFERS)
}

/// `DIR/templates/NAME.md` renders to `DIR/NAME.md`.
fn page_of(template: &Path) -> Result<PathBuf> {
    let folder = template.parent().filter(|p| p.file_name().is_some_and(|n| n == "templates"));
    let (Some(folder), Some(name)) = (folder, template.file_name()) else {
        return Err(anyhow!(
            "{}: a template lives in a folder named templates/, beside the page it renders",
            template.display()
        ));
    };
    Ok(folder.parent().unwrap_or(Path::new(".")).join(name))
}

/// The first line where `page` and `rendered` part, both sides shown.
fn first_difference(page: &str, rendered: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (page.lines().collect(), rendered.lines().collect());
    let n = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    match (a.get(n), b.get(n)) {
        (Some(x), Some(y)) => {
            format!("line {} reads\n    {x}\n  where the template and data give\n    {y}", n + 1)
        }
        (Some(_), None) => format!("has lines past the rendered end, from line {}", n + 1),
        (None, _) => format!("ends at line {n}, before what the template renders"),
    }
}
