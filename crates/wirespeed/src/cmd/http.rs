//! `wirespeed http --format vegeta`: a writer thread puts one vegeta result line per request
//! on stdout while the test runs (any other format runs as every test subcommand does), as a
//! run of its own or one member's part of a run.

use std::io;

use anyhow::Result;
use wirespeed_engine::kinds::http::results::ResultSink;
use wirespeed_engine::kinds::{self, Client};
use wirespeed_report::vegeta::{write_all, Target};

use crate::flags::HttpArgs;
use crate::resolve;

pub(super) async fn run_vegeta(args: HttpArgs) -> Result<u8> {
    let mut opts = resolve::http(&args, env!("CARGO_PKG_VERSION"))?;
    let (sink, rx) = ResultSink::new();
    opts.results = Some(sink.clone());
    let targets: Vec<Target> = opts
        .requests
        .iter()
        .map(|r| Target {
            method: r.method.clone(),
            url: format!("{}{}", r.url.origin(), r.url.path),
        })
        .collect();
    // A request ends within its timeout of being sent, and is sent within one of falling due.
    let window_ns = opts.spec.timeout_ns.saturating_mul(2).saturating_add(1_000_000_000);
    let writer =
        std::thread::spawn(move || write_all(rx, io::stdout().lock(), &targets, window_ns));
    let mut client = Client::Http(Box::new(opts));
    let code = match wirespeed_runner::member::prepare(
        &args.member.options(),
        &mut client,
        args.output.db.as_ref(),
    ) {
        Ok(plan) => {
            super::run_member(
                &args.output,
                plan,
                |tx, cancel| kinds::run(client, tx, cancel),
                |_| crate::exit::OK,
            )
            .await
        }
        Err(e) => Err(e),
    };
    // The last sender goes with the sink; then the writer drains the queue and ends.
    let lost = sink.lost();
    drop(sink);
    match writer.join() {
        Ok(Err(e)) if e.kind() != io::ErrorKind::BrokenPipe => {
            eprintln!("wirespeed: writing result lines: {e}")
        }
        Ok(Ok(late)) if late > 0 => eprintln!(
            "wirespeed: warning: {late} result lines are out of the order their requests began \
             (vegeta plot refuses them)"
        ),
        _ => {}
    }
    if lost > 0 {
        eprintln!(
            "wirespeed: warning: {lost} result lines lost (stdout was slower than the requests)"
        );
    }
    code
}
