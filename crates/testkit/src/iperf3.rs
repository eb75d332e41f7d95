//! The two iperf3 versions the interop tests run against: Debian's 3.12 (`iperf3`) and the head
//! of upstream's main branch, 3.21+ (`iperf3-3.21`, built by `scripts/peers.sh` from the
//! snapshot in `../shared/peers/iperf`), whose streams run on threads of their own and whose UDP
//! batches with GSO/GRO. A test body that takes the program's name runs once per version:
//! [`each_iperf3!`](crate::each_iperf3) makes a test of each.

/// Debian's iperf3 (3.12).
pub const DEBIAN: &str = "iperf3";

/// Upstream's iperf3 at the head of its main branch (3.21+).
pub const UPSTREAM: &str = "iperf3-3.21";

/// Whether the iperf3 that printed `version` (its JSON's `start.version`, "iperf 3.21+") runs
/// each stream on a thread of its own (3.16 and later). Such an iperf3 may write a stream's last
/// block after it took that stream's count, so what it says it sent can fall short of what the
/// other end received by up to one block per stream, against its own server as against ours
/// (seen here: 3.21's client against 3.21's server, receiver ahead by 128 KiB on some streams).
pub fn threaded(version: &str) -> bool {
    let number = version.trim_start_matches("iperf ").trim_end_matches('+');
    let mut parts = number.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (3, 16)
}

/// What the iperf3 that printed `version` may have written of a stream and left out of its own
/// count: one `block` where it is [`threaded`], nothing otherwise.
pub fn unsaid(version: &str, block: u64) -> u64 {
    if threaded(version) {
        block
    } else {
        0
    }
}

/// `program` when it is on PATH, else [`crate::skip::skipped`] (a failure under CI).
pub fn installed(program: &'static str) -> Option<&'static str> {
    if crate::ready::on_path(program) {
        return Some(program);
    }
    let how = if program == DEBIAN {
        "`apt-get install iperf3`"
    } else {
        "scripts/peers.sh builds it from ../shared/peers/iperf"
    };
    crate::skip::skipped(&format!("{program} is missing; {how} (scripts/test.sh does)"))
}

/// For each `name`, a module `name` of two tests, `debian_3_12` and `upstream_3_21`, each
/// calling the body `async fn name(iperf3: &'static str)` with its version's program.
#[macro_export]
macro_rules! each_iperf3 {
    ($($name:ident),* $(,)?) => {
        $(mod $name {
            #[tokio::test(flavor = "multi_thread")]
            async fn debian_3_12() {
                if let Some(p) = $crate::iperf3::installed($crate::iperf3::DEBIAN) {
                    super::$name(p).await
                }
            }

            #[tokio::test(flavor = "multi_thread")]
            async fn upstream_3_21() {
                if let Some(p) = $crate::iperf3::installed($crate::iperf3::UPSTREAM) {
                    super::$name(p).await
                }
            }
        })*
    };
}

#[cfg(test)]
mod tests {
    use super::{threaded, unsaid};

    #[test]
    fn threads_came_with_3_16() {
        assert!(threaded("iperf 3.21+"));
        assert!(threaded("iperf 3.16"));
        assert!(!threaded("iperf 3.12"));
        assert!(!threaded("iperf 3.9"));
        assert_eq!(unsaid("iperf 3.21+", 131_072), 131_072);
        assert_eq!(unsaid("iperf 3.12", 131_072), 0);
    }
}
