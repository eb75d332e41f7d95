//! Whether this process may build a lab: making network namespaces takes CAP_SYS_ADMIN, and
//! links, addresses and queues CAP_NET_ADMIN. Checked before anything is made, so a refusal
//! never leaves half a lab behind.

use crate::LabError;

/// CAP_NET_ADMIN's bit in the capability sets.
const CAP_NET_ADMIN: u32 = 12;
/// CAP_SYS_ADMIN's bit.
const CAP_SYS_ADMIN: u32 = 21;

/// The effective capabilities of this process, from `/proc/self/status`.
fn effective_capabilities() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(line.trim(), 16).ok()
}

/// Refuses, saying what is missing, unless this process holds CAP_SYS_ADMIN and CAP_NET_ADMIN.
pub fn check() -> Result<(), LabError> {
    let caps = effective_capabilities().unwrap_or(0);
    let missing: Vec<&str> = [(CAP_NET_ADMIN, "CAP_NET_ADMIN"), (CAP_SYS_ADMIN, "CAP_SYS_ADMIN")]
        .into_iter()
        .filter(|(bit, _)| caps & (1 << bit) == 0)
        .map(|(_, name)| name)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(LabError::NotPermitted(format!(
        "hosts as network namespaces need {} (run as root, or under sudo)",
        missing.join(" and ")
    )))
}
