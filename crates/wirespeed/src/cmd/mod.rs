//! One module per subcommand; each returns the process exit code.

mod bench;
mod compare;
mod history;
mod http;
mod prune;
mod quick;
mod server;
mod show;
mod web;

use std::future::Future;

use anyhow::{Context, Result};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio_util::sync::CancellationToken;
use wirespeed_engine::ClientError;
use wirespeed_model::{Event, Report};

use crate::exit;
use crate::flags::{Command, FormatArg, OutputArgs};
use crate::output;
use crate::test_kinds::TestArgs;

/// Runs a subcommand to completion.
pub(crate) fn run(command: Command) -> Result<u8> {
    // Subcommands on saved results need no network and no runtime.
    let command = match command {
        Command::History(args) => return history::run(args),
        Command::Show(args) => return show::show(args),
        Command::Export(args) => return show::export(args),
        Command::Compare(args) => return compare::run(args),
        Command::Rm(args) => return prune::rm(args),
        Command::Retention(args) => return prune::retention(args),
        Command::Bench(args) => match bench::inspect(&args)? {
            Some(code) => return Ok(code),
            None => Command::Bench(args),
        },
        other => other,
    };
    if let Some(o) = output_args(&command) {
        if o.format == FormatArg::Vegeta && !matches!(command, Command::Http(_)) {
            anyhow::bail!("--format vegeta is for `wirespeed http` only");
        }
        if let Some(path) = &o.chart {
            crate::saved::chart_file(path)?;
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        match command {
            Command::Server(args) => server::run(*args).await,
            Command::Web(args) => web::run(*args).await,
            Command::Quick(args) => quick::run(args).await,
            Command::Bench(args) => bench::run(args).await,
            Command::Http(args) if args.output.format == FormatArg::Vegeta => {
                http::run_vegeta(*args).await
            }
            command => match command.test() {
                Some((_, test)) => run_test(test).await,
                None => unreachable!("the subcommands on saved runs return above"),
            },
        }
    })
}

/// The output flags of a subcommand that runs tests.
fn output_args(command: &Command) -> Option<&OutputArgs> {
    match command {
        Command::Quick(a) => Some(&a.output),
        other => other.test().map(|(_, test)| test.output()),
    }
}

/// Runs one test subcommand: its client, rendered as it goes, saved, judged.
async fn run_test(test: &dyn TestArgs) -> Result<u8> {
    let client = test.client(env!("CARGO_PKG_VERSION"))?;
    run_judged(
        test.output(),
        |tx, cancel| wirespeed_engine::kinds::run(client, tx, cancel),
        |report| test.judge(report),
    )
    .await
}

/// A token cancelled by the first Ctrl-C or SIGTERM.
pub(crate) fn interrupt_token() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let terminated = async {
            match term.as_mut() {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminated => {}
        }
        t.cancel();
    });
    token
}

/// Runs one client test: its events go to the chosen renderer as they happen, then the
/// report is saved. Returns the exit code.
pub(crate) async fn run_one<F, Fut>(output_args: &OutputArgs, test: F) -> Result<u8>
where
    F: FnOnce(UnboundedSender<Event>, CancellationToken) -> Fut,
    Fut: Future<Output = Result<Report, ClientError>>,
{
    run_judged(output_args, test, |_| exit::OK).await
}

/// [`run_one`], with `judge` giving the exit code of a run that finished: a ping nobody
/// answered has a report, and still failed.
pub(crate) async fn run_judged<F, Fut>(
    output_args: &OutputArgs,
    test: F,
    judge: impl FnOnce(&Report) -> u8,
) -> Result<u8>
where
    F: FnOnce(UnboundedSender<Event>, CancellationToken) -> Fut,
    Fut: Future<Output = Result<Report, ClientError>>,
{
    let store = output::open_shared_store(output_args)?;
    let cancel = interrupt_token();
    let (tx, rx) = unbounded_channel();
    let printer = output::spawn_printer(output_args, rx);
    let result = test(tx, cancel.clone()).await;
    match printer.await? {
        // The reader went away (`| head`): the run still counts and is still saved.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    let report = result?;
    if let Some(path) = &output_args.chart {
        if let Err(e) =
            crate::saved::write_chart(path, &wirespeed_report::charts::run_charts(&report))
        {
            eprintln!("wirespeed: warning: no chart written: {e:#}");
        }
    }
    if let Err(e) = output::save(output_args, store, &[&report]) {
        eprintln!("wirespeed: warning: results not saved: {e:#}");
        return Ok(exit::NOT_SAVED);
    }
    Ok(if cancel.is_cancelled() { exit::INTERRUPTED } else { judge(&report) })
}
