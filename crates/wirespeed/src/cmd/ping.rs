//! `wirespeed ping`: probe a host, print a line per probe and the summary, save the run. Like
//! `ping`, a run that got no reply at all fails (exit 3).

use anyhow::Result;
use wirespeed_engine::kinds::ping::client;
use wirespeed_model::ReportBody;

use crate::exit;
use crate::flags::PingArgs;
use crate::resolve;

pub async fn run(args: PingArgs) -> Result<u8> {
    let opts = resolve::ping(&args, env!("CARGO_PKG_VERSION"))?;
    super::run_judged(
        &args.output,
        |tx, cancel| client::run(opts, tx, cancel),
        |report| match &report.body {
            ReportBody::Ping(p) if p.summary.received == 0 => exit::UNREACHABLE,
            _ => exit::OK,
        },
    )
    .await
}
