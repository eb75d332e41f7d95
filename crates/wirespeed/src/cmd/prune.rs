//! `wirespeed rm` and `wirespeed retention`: deleting saved runs, once or by a standing policy.

use anyhow::Result;
use wirespeed_store::Retention;

use crate::exit;
use crate::flags::{RetentionArgs, RmArgs};
use crate::saved::{self, NoSuchRun};

/// Deletes the named runs, or those `--keep`/`--older-than` leave out.
pub(super) fn rm(args: RmArgs) -> Result<u8> {
    let store = saved::open(&args.db)?;
    let mut ids = Vec::new();
    let mut unknown = Vec::new();
    for name in &args.runs {
        match saved::resolve_id(&store, name) {
            Ok(id) => ids.push(id),
            Err(e) if e.downcast_ref::<NoSuchRun>().is_some() => unknown.push(name.clone()),
            Err(e) => return Err(e),
        }
    }
    let missing = store.remove(&ids)?;
    let mut gone = (ids.len() - missing.len()) as u64;
    unknown.extend(missing.iter().map(i64::to_string));
    let policy = Retention {
        keep: args.keep,
        max_age_ms: args.older_than.as_deref().map(saved::age_ms).transpose()?,
    };
    if !policy.is_off() {
        gone += store.prune(&policy, saved::now_ms())?;
    }
    println!("removed {gone} run{}; {} left", if gone == 1 { "" } else { "s" }, store.count()?);
    if !unknown.is_empty() {
        eprintln!("wirespeed: error: {}", NoSuchRun(unknown.join(", ")));
        return Ok(exit::NOT_FOUND);
    }
    Ok(exit::OK)
}

/// Shows the retention policy, or sets it (and applies it at once).
pub(super) fn retention(args: RetentionArgs) -> Result<u8> {
    let store = wirespeed_store::Store::open_at(&saved::db_location(&args.db.db)?)?;
    let setting = args.off || args.keep.is_some() || args.max_age.is_some();
    if setting {
        let policy = Retention {
            keep: args.keep,
            max_age_ms: args.max_age.as_deref().map(saved::age_ms).transpose()?,
        };
        store.set_retention(&policy)?;
        let gone = if policy.is_off() { 0 } else { store.prune(&policy, saved::now_ms())? };
        if gone > 0 {
            println!(
                "removed {gone} run{} the new policy does not keep",
                if gone == 1 { "" } else { "s" }
            );
        }
    }
    let p = store.retention()?;
    let keep = p.keep.map_or("all runs".to_string(), |n| format!("the newest {n} runs"));
    let age = p.max_age_ms.map_or(String::new(), |ms| {
        format!(
            ", none older than {}",
            humantime::format_duration(std::time::Duration::from_millis(ms as u64))
        )
    });
    println!("retention: keep {keep}{age} ({} saved now, in {})", store.count()?, store.describe());
    Ok(exit::OK)
}
