//! Times `Store::list` over every saved run, for the history benchmark
//! (`scripts/bench/history.sh`): prints the milliseconds and the row count.
//!
//!     cargo run --release -p wirespeed-store --example list_all -- DB   (a file or a postgres:// URL)
#![allow(clippy::print_stdout)] // an example prints its result

use wirespeed_store::{Location, RunFilter, Store};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = std::env::args().nth(1).ok_or("usage: list_all DB")?;
    let store = Store::open_at(&Location::parse(&db)?)?;
    let started = std::time::Instant::now();
    let rows = store.list(&RunFilter::default())?;
    println!("{} {}", started.elapsed().as_millis(), rows.len());
    Ok(())
}
