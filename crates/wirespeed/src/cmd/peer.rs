//! `wirespeed peer [--client NAME --like JSON] -- PROGRAM …`: another tool's client run as a
//! workload on a study's host, its figures printed as a wirespeed report in JSON for the
//! runner to read (`crate::foreign`; ethr's, `crate::ethr`, without `--client`).

use anyhow::{Context, Result};

use crate::exit;
use crate::flags::PeerArgs;

/// Runs the peer's command until it ends or the process is interrupted; prints its report.
pub(crate) fn run(args: &PeerArgs) -> Result<u8> {
    let mut words = vec!["wirespeed".to_string(), "peer".into()];
    if let Some(omit) = &args.omit {
        words.extend(["--omit".into(), omit.clone()]);
    }
    if let (Some(client), Some(like)) = (&args.client, &args.like) {
        words.extend(["--client".into(), client.clone(), "--like".into(), like.clone()]);
    }
    if let Some(n) = args.members {
        words.extend(["--members".into(), n.to_string()]);
    }
    words.push("--".into());
    words.extend(args.argv.iter().cloned());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let report = runtime.block_on(async {
        let cancel = super::interrupt_token();
        if args.client.is_some() {
            crate::foreign::run(&words, cancel).await
        } else {
            crate::ethr::run(&words, cancel).await
        }
    })?;
    let json = serde_json::to_string(&report)?;
    crate::output::write_stdout(format!("{json}\n").as_bytes())?;
    Ok(exit::OK)
}
