//! `wirespeed latency`: run one round-trip test, render it, save it.

use anyhow::Result;
use wirespeed_engine::kinds::latency::client;

use crate::flags::LatencyArgs;
use crate::resolve;

pub async fn run(args: LatencyArgs) -> Result<u8> {
    let opts = resolve::latency(&args, env!("CARGO_PKG_VERSION"))?;
    super::run_one(&args.output, |tx, cancel| client::run(opts, tx, cancel)).await
}
