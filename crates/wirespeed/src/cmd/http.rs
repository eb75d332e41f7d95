//! `wirespeed http`: load an HTTP server, render the run, save it.

use anyhow::Result;
use wirespeed_engine::http::client;

use crate::flags::HttpArgs;
use crate::resolve;

pub async fn run(args: HttpArgs) -> Result<u8> {
    let opts = resolve::http(&args, env!("CARGO_PKG_VERSION"))?;
    super::run_one(&args.output, |tx, cancel| client::run(opts, tx, cancel)).await
}
