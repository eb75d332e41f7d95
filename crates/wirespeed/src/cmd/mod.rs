//! One module per subcommand; each returns the process exit code.

mod bench;
mod compare;
mod history;
mod http;
mod k8s;
mod merge;
mod metrics;
mod peer;
mod prune;
mod publish;
mod quick;
mod role;
mod server;
mod shell;
mod show;
mod web;

pub(crate) use bench::{
    vegeta_line, vegeta_run, workload_line as bench_workload_line,
    workload_spec as bench_workload_spec,
};

use std::future::Future;

use anyhow::{Context, Result};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio_util::sync::CancellationToken;
use wirespeed_engine::ClientError;
use wirespeed_model::{Event, Report};
use wirespeed_runner::member;

use crate::exit;
use crate::flags::{Command, FormatArg, OutputArgs};
use crate::output;
use crate::test_kinds::TestArgs;

/// Runs a subcommand to completion.
pub(crate) fn run(command: Command) -> Result<u8> {
    // Before any thread starts: PATH is the whole process's.
    let _own_build = match &command {
        Command::Bench(_) => Some(bench::own_build_first_on_path()?),
        _ => None,
    };
    // Subcommands on saved results need no network and no runtime.
    let command = match command {
        Command::History(args) => return history::run(args),
        Command::Show(args) => return show::show(args),
        Command::Export(args) => return show::export(args),
        Command::Compare(args) => return compare::run(args),
        Command::Rm(args) => return prune::rm(args),
        Command::Retention(args) => return prune::retention(args),
        Command::Merge(args) => return merge::run(*args),
        Command::K8s(crate::flags::K8sCommand::Job(args)) => return k8s::job(*args),
        Command::Role(args) => return role::run(&args),
        Command::Peer(args) => return peer::run(&args),
        Command::Publish(args) => return publish::run(&args),
        Command::Completions(args) => return shell::completions(&args),
        Command::Man(args) => return shell::man(&args),
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

/// Runs one test subcommand: its client (one member's share of a run, with `--members`),
/// rendered as it goes, saved, judged.
async fn run_test(test: &dyn TestArgs) -> Result<u8> {
    let mut client = test.client(env!("CARGO_PKG_VERSION"))?;
    let plan = match test.member() {
        Some(args) => member::prepare(&args.options(), &mut client, test.output().db.as_ref())?,
        None => None,
    };
    run_member(
        test.output(),
        plan,
        |tx, cancel| async move {
            // This process is the load and nothing else: what it used up to the end event is
            // the load's cost, in the report printed and the one saved alike.
            let (inner, mut events) = unbounded_channel();
            let since = ProcessCpu::now();
            let stamp = tokio::spawn(async move {
                let mut used = None;
                while let Some(mut event) = events.recv().await {
                    if let Event::End(report) = &mut event {
                        report.meta.load_cpu = Some(since.used());
                        used = report.meta.load_cpu;
                    }
                    let _ = tx.send(event);
                }
                used
            });
            let run = wirespeed_engine::kinds::run(client, inner, cancel).await;
            let used = stamp.await.ok().flatten();
            run.map(|mut report| {
                report.meta.load_cpu = used;
                report
            })
        },
        |report| test.judge(report),
    )
    .await
}

/// This process's CPU (every thread's, the kernel's account) from a point on.
struct ProcessCpu {
    user_ns: u64,
    system_ns: u64,
    at: std::time::Instant,
}

impl ProcessCpu {
    fn now() -> Self {
        let (user_ns, system_ns) = wirespeed_engine::process_cpu_ns();
        Self { user_ns, system_ns, at: std::time::Instant::now() }
    }

    /// What was used since.
    fn used(&self) -> wirespeed_model::report::LoadCpu {
        let now = Self::now();
        wirespeed_model::report::LoadCpu {
            user_ns: now.user_ns.saturating_sub(self.user_ns),
            system_ns: now.system_ns.saturating_sub(self.system_ns),
            wall_ns: now.at.duration_since(self.at).as_nanos() as u64,
        }
    }
}

/// A token cancelled by the first Ctrl-C or SIGTERM. The handlers are in place when this
/// returns (registered here, not in the task that waits on them): a signal that came before
/// the task first ran killed the process instead.
pub(crate) fn interrupt_token() -> CancellationToken {
    use tokio::signal::unix::{signal, SignalKind};
    let token = CancellationToken::new();
    let t = token.clone();
    let (mut int, mut term) =
        (signal(SignalKind::interrupt()).ok(), signal(SignalKind::terminate()).ok());
    tokio::spawn(async move {
        tokio::select! {
            _ = next_signal(int.as_mut()) => {}
            _ = next_signal(term.as_mut()) => {}
        }
        t.cancel();
    });
    token
}

/// The next delivery of `signal`; never, when its handler could not be set.
async fn next_signal(signal: Option<&mut tokio::signal::unix::Signal>) {
    match signal {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// Runs one client test: its events go to the chosen renderer as they happen, then the
/// report is saved; as one member of a run when `plan` says so (it waits for the common start and
/// stamps its report), with `judge` giving the exit code of a run that finished: a ping nobody
/// answered has a report, and still failed.
pub(crate) async fn run_member<F, Fut>(
    output_args: &OutputArgs,
    plan: Option<member::Plan>,
    test: F,
    judge: impl FnOnce(&Report) -> u8,
) -> Result<u8>
where
    F: FnOnce(UnboundedSender<Event>, CancellationToken) -> Fut,
    Fut: Future<Output = Result<Report, ClientError>>,
{
    // A barrier needs the database even when nothing is saved in it.
    let store = match &plan {
        Some(plan) if plan.meets_at_barrier() => {
            output::open_shared_store(&OutputArgs { no_save: false, ..output_args.clone() })?
        }
        _ => output::open_shared_store(output_args)?,
    };
    let cancel = interrupt_token();
    let started = match &plan {
        Some(plan) => {
            let host = wirespeed_engine::hostname();
            let say = |line: &str| eprintln!("wirespeed: {line}");
            Some(member::start(plan, store.as_ref(), host, &cancel, &say).await?)
        }
        None => None,
    };
    let finish = |outcome: Result<Option<i64>, String>| {
        if let (Some(store), Some(joined)) =
            (&store, started.as_ref().and_then(|s| s.barrier.as_ref()))
        {
            if let Err(e) = member::barrier::finish(store, joined, outcome) {
                eprintln!(
                    "wirespeed: warning: could not mark this member finished in the run: {e}"
                );
            }
        }
    };
    let (tx, rx) = unbounded_channel();
    let printer = output::spawn_printer(output_args, rx, started.clone());
    let result = test(tx, cancel.clone()).await;
    match printer.await? {
        // The reader went away (`| head`): the run still counts and is still saved.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    // A test that failed midway keeps what it measured: saved like any run, marked aborted,
    // and the failure is still the exit code.
    let (mut report, failure) = match result {
        Ok(report) => (report, None),
        Err(ClientError::Partial { report, cause }) => (*report, Some(*cause)),
        Err(e) => {
            finish(Err(e.to_string()));
            return Err(e.into());
        }
    };
    if let Some(started) = &started {
        member::record(&mut report, started);
    }
    if let Some(path) = &output_args.chart {
        if let Err(e) =
            crate::saved::write_chart(path, &wirespeed_report::charts::run_charts(&report))
        {
            eprintln!("wirespeed: warning: no chart written: {e:#}");
        }
    }
    match output::save(output_args, store.as_ref(), &[&report]) {
        Ok(_) if failure.is_some() => {}
        Ok(ids) => finish(Ok(ids.first().copied())),
        Err(e) => {
            eprintln!("wirespeed: warning: results not saved: {e:#}");
            // A run is not lost with the database: kept beside it (a member's for `merge`).
            match member::keep_locally(&report) {
                Ok(path) => eprintln!("wirespeed: the report is kept in {}", path.display()),
                Err(k) => eprintln!("wirespeed: and could not be kept locally either: {k:#}"),
            }
            if failure.is_none() {
                finish(Err(format!("its report could not be saved: {e:#}")));
                return Ok(exit::NOT_SAVED);
            }
        }
    }
    if let Some(cause) = failure {
        finish(Err(cause.to_string()));
        return Err(cause.into());
    }
    Ok(if cancel.is_cancelled() { exit::INTERRUPTED } else { judge(&report) })
}
