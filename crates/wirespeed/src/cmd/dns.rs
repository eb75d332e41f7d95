//! `wirespeed dns`: load a DNS server, render the run, save it. A run in which nothing was
//! answered still prints and saves its report, and then fails: exit 6 when answers came but
//! none matched a query (the server answers garbage), else 3 (nothing answered at all).

use anyhow::Result;
use wirespeed_engine::kinds::dns::client;
use wirespeed_model::ReportBody;

use crate::exit;
use crate::flags::DnsArgs;
use crate::resolve;

pub async fn run(args: DnsArgs) -> Result<u8> {
    let opts = resolve::dns(&args, env!("CARGO_PKG_VERSION"))?;
    super::run_judged(
        &args.output,
        |tx, cancel| client::run(opts, tx, cancel),
        |report| match &report.body {
            ReportBody::Dns(d) if d.summary.completed == 0 && d.summary.stray.total() > 0 => {
                exit::PROTOCOL
            }
            ReportBody::Dns(d) if d.summary.completed == 0 => exit::UNREACHABLE,
            _ => exit::OK,
        },
    )
    .await
}
