//! `wirespeed trace`: find the path to a host, print the hop table, save the run. A trace
//! that never reached its destination fails (exit 3), as traceroute's users script on.

use anyhow::Result;
use wirespeed_engine::kinds::trace::client;
use wirespeed_model::ReportBody;

use crate::exit;
use crate::flags::TraceArgs;
use crate::resolve;

pub async fn run(args: TraceArgs) -> Result<u8> {
    let opts = resolve::trace(&args, env!("CARGO_PKG_VERSION"))?;
    super::run_judged(
        &args.output,
        |tx, cancel| client::run(opts, tx, cancel),
        |report| match &report.body {
            ReportBody::Trace(t) if !t.summary.reached => exit::UNREACHABLE,
            _ => exit::OK,
        },
    )
    .await
}
