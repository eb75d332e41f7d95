//! The `wirespeed` binary: parse flags, run the subcommand, map the outcome to an exit code.
//! All the work happens in the library crates; this file only wires them together.

// The binary is where output happens: the library crates return values and write to the
// `Write` they are given (their lints deny printing).
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod cmd;
mod errors;
mod ethr;
mod exit;
mod flags;
mod foreign;
mod output;
mod resolve;
mod saved;
mod test_kinds;

use std::io::IsTerminal;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = flags::parse_from(std::env::args_os()).unwrap_or_else(|e| {
        let args: Vec<String> = std::env::args().collect();
        if e.use_stderr() {
            if let Some(hint) = errors::iperf3_hint(&args) {
                let _ = e.print();
                eprintln!("\nhint: {}", hint.replace('\n', "\nhint: "));
                std::process::exit(e.exit_code());
            }
        }
        e.exit()
    });
    init_logging(
        cli.verbose,
        matches!(cli.command, flags::Command::Server(_) | flags::Command::Web(_)),
    );
    let code = match cmd::run(cli.command) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("wirespeed: error: {}", errors::message(&err));
            exit::code_of(&err)
        }
    };
    ExitCode::from(code)
}

/// Logs go to stderr: info and above for the server, warnings for clients; `-v` adds debug,
/// `-vv` trace; `RUST_LOG` overrides both.
fn init_logging(verbose: u8, server: bool) {
    use tracing::level_filters::LevelFilter;
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let level = match (verbose, server) {
        (0, false) => LevelFilter::WARN,
        (0, true) => LevelFilter::INFO,
        (1, _) => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    };
    // `RUST_LOG` as `target=level` pairs (tracing's `Targets`; span and field filters, which
    // need the regex engine, are not worth its build time here).
    let from_env = std::env::var("RUST_LOG").ok().and_then(|v| v.parse::<Targets>().ok());
    let filter = from_env.unwrap_or_else(|| {
        ["wirespeed", "wirespeed_engine", "wirespeed_web"]
            .into_iter()
            .fold(Targets::new(), |t, target| t.with_target(target, level))
    });
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // Escape codes only where a person reads them, not in log files or pipes.
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
        .with_target(false)
        .finish()
        .with(filter)
        .init();
}
