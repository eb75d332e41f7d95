//! `wirespeed cps`: run one connections-per-second test, render it, save it.

use anyhow::Result;
use wirespeed_engine::kinds::cps::client;

use crate::flags::CpsArgs;
use crate::resolve;

pub async fn run(args: CpsArgs) -> Result<u8> {
    let opts = resolve::cps(&args, env!("CARGO_PKG_VERSION"))?;
    super::run_one(&args.output, |tx, cancel| client::run(opts, tx, cancel)).await
}
