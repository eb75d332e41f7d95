//! Fills a results database with many runs, for the history benchmark
//! (`scripts/bench/history.sh`): copies of real runs from a `wirespeed export` JSON file, one
//! minute apart, every tenth tagged, saved in batches of 10 000.
//!
//!     cargo run --release -p wirespeed-store --example fill -- DB COUNT EXPORT.json
//!
//! DB is a file or a `postgres://` URL.
#![allow(clippy::print_stdout)] // an example prints its result

use wirespeed_model::Report;
use wirespeed_store::{Location, Store};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, db, count, export] = args.as_slice() else {
        return Err("usage: fill DB COUNT EXPORT.json".into());
    };
    let count: u64 = count.parse()?;
    let exported: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(export)?)?;
    let reports: Vec<Report> = exported
        .into_iter()
        .map(|e| serde_json::from_value(e["report"].clone()))
        .collect::<Result<_, _>>()?;
    if reports.is_empty() {
        return Err("the export holds no runs".into());
    }
    let store = Store::open_at(&Location::parse(db)?)?;
    let start = reports[0].meta.start_unix_ms.saturating_sub(count * 60_000);
    let mut done = 0;
    while done < count {
        let batch: Vec<(Report, Option<String>)> = (done..count.min(done + 10_000))
            .map(|i| {
                let mut r = reports[(i % reports.len() as u64) as usize].clone();
                r.meta.start_unix_ms = start + i * 60_000;
                (r, (i % 10 == 0).then(|| format!("batch {}", i / 1000)))
            })
            .collect();
        let refs: Vec<(&Report, Option<&str>)> =
            batch.iter().map(|(r, t)| (r, t.as_deref())).collect();
        done += store.save_all(&refs)?.len() as u64;
    }
    println!("{done} runs in {db}");
    Ok(())
}
