//! `wirespeed latency`: run one round-trip test, render it, save it.

use anyhow::Result;
use tokio::sync::mpsc::unbounded_channel;
use wirespeed_engine::latency::client;

use crate::exit;
use crate::flags::LatencyArgs;
use crate::output;
use crate::resolve;

pub async fn run(args: LatencyArgs) -> Result<u8> {
    let opts = resolve::latency(&args, env!("CARGO_PKG_VERSION"))?;
    let cancel = super::interrupt_token();
    let (tx, rx) = unbounded_channel();
    let printer = output::spawn_printer(output::format_of(args.output.format), rx);
    let result = client::run(opts, tx, cancel.clone()).await;
    printer.await??;
    let report = result?;
    if let Err(e) = output::save(&args.output, &[&report]) {
        eprintln!("wirespeed: warning: results not saved: {e:#}");
        return Ok(exit::NOT_SAVED);
    }
    Ok(if cancel.is_cancelled() { exit::INTERRUPTED } else { exit::OK })
}
