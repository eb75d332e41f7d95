//! `wirespeed bandwidth` and `wirespeed pps` (its UDP small-datagram mode): run one test,
//! render it, save it.

use anyhow::Result;
use tokio::sync::mpsc::unbounded_channel;
use wirespeed_engine::bandwidth::client::{self, ClientOptions};
use wirespeed_engine::bandwidth::iperf3_client;

use crate::exit;
use crate::flags::{BandwidthArgs, OutputArgs, PpsArgs};
use crate::output;
use crate::resolve;

pub async fn run(args: BandwidthArgs) -> Result<u8> {
    let opts = resolve::bandwidth(&args, env!("CARGO_PKG_VERSION"))?;
    run_with(opts, args.iperf3, &args.output).await
}

/// `wirespeed pps`: the bandwidth test's UDP mode with small datagrams.
pub async fn run_pps(args: PpsArgs) -> Result<u8> {
    let opts = resolve::pps(&args, env!("CARGO_PKG_VERSION"))?;
    run_with(opts, false, &args.output).await
}

async fn run_with(opts: ClientOptions, iperf3: bool, output_args: &OutputArgs) -> Result<u8> {
    let cancel = super::interrupt_token();
    let (tx, rx) = unbounded_channel();
    let printer = output::spawn_printer(output::format_of(output_args.format), rx);
    let result = if iperf3 {
        iperf3_client::run(opts, tx, cancel.clone()).await
    } else {
        client::run(opts, tx, cancel.clone()).await
    };
    printer.await??;
    let report = result?;
    if let Err(e) = output::save(output_args, &[&report]) {
        eprintln!("wirespeed: warning: results not saved: {e:#}");
        return Ok(exit::NOT_SAVED);
    }
    Ok(if cancel.is_cancelled() { exit::INTERRUPTED } else { exit::OK })
}
