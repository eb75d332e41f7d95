//! `wirespeed bandwidth` and `wirespeed pps` (its UDP small-datagram mode): run one test,
//! render it, save it.

use anyhow::Result;
use wirespeed_engine::kinds::bandwidth::client::{self, ClientOptions};
use wirespeed_engine::kinds::bandwidth::iperf3_client;

use crate::flags::{BandwidthArgs, OutputArgs, PpsArgs};
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
    super::run_one(output_args, |tx, cancel| async move {
        if iperf3 {
            iperf3_client::run(opts, tx, cancel).await
        } else {
            client::run(opts, tx, cancel).await
        }
    })
    .await
}
