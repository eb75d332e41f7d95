//! `wirespeed k8s job`: the manifest of a Kubernetes Indexed Job that runs one test as N
//! members, for `kubectl apply -f -`. Kubernetes places the pods (one per node), gives each its
//! index (`JOB_COMPLETION_INDEX`) and tracks completion; the members meet at the barrier in the
//! database whose URL a Secret holds, and `wirespeed merge --run-id` adds them up. Nothing of
//! ours runs in the cluster but the members.
//!
//! The Job never restarts a member (`backoffLimit: 0`, replacements only once a pod has failed):
//! a restarted member would arrive after the start and be turned away anyway, so the pod
//! failure policy fails the whole Job at once on the exit codes that mean the run cannot go on
//! (12: late, twice, barrier timed out, clock; 10: the database refused).

use std::fmt::Write as _;
use std::hash::{BuildHasher, Hasher};

use anyhow::{anyhow, bail, Result};
use wirespeed_model::member::Member;

use crate::exit;
use crate::flags::K8sJobArgs;

/// The exit codes that fail the whole Job: no member can help the run after them.
const FAIL_JOB_ON: [u8; 2] = [exit::MEMBER_REFUSED, exit::DB_UNUSABLE];

pub(super) fn job(args: K8sJobArgs) -> Result<u8> {
    let run_id = args.run_id.clone().unwrap_or_else(new_run_id);
    let member_args = member_arguments(&args, &run_id)?;
    let name = match &args.name {
        Some(n) => {
            if !is_dns_label(n) || n.len() > 52 {
                bail!("--name {n:?}: a Job name is lowercase letters, digits and '-', at most 52 (its pods' host names add the index)");
            }
            n.clone()
        }
        None => dns_label(&format!("wirespeed-{run_id}"), 52),
    };
    let selectors = args
        .node_selector
        .iter()
        .map(|kv| {
            kv.split_once('=')
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| anyhow!("--node-selector {kv:?}: use KEY=VALUE"))
        })
        .collect::<Result<Vec<_>>>()?;
    let secret = args.db_secret.as_deref().map(|s| s.split_once(':').unwrap_or((s, "url")));
    let manifest = Manifest {
        name: &name,
        namespace: args.namespace.as_deref(),
        run_label: &label_value(&run_id),
        run_id: &run_id,
        members: args.members,
        image: &args.image,
        args: &member_args,
        secret,
        selectors: &selectors,
        resources: (args.cpu.as_deref(), args.memory.as_deref()),
    };
    print!("{}", manifest.yaml());
    Ok(exit::OK)
}

/// The members' command line: the test, checked now (it must parse, make load, and share out
/// among the members), with the run's member flags added; the index comes from Kubernetes.
fn member_arguments(args: &K8sJobArgs, run_id: &str) -> Result<Vec<String>> {
    if args.test.iter().any(|a| a == "--index" || a.starts_with("--index=")) {
        bail!("leave --index out: each pod is given its own ($JOB_COMPLETION_INDEX)");
    }
    if args.test.iter().any(|a| matches!(a.as_str(), "--members" | "--run-id")) {
        bail!("give --members and --run-id to `k8s job`, not to the test");
    }
    let parse = |words: &[String]| {
        let all = std::iter::once("wirespeed").chain(words.iter().map(String::as_str));
        crate::flags::parse_from(all)
            .map_err(|e| anyhow!("the test's arguments do not parse: {}", e.to_string().trim()))
    };
    // The kind first, on the test's own words: a kind that takes no member flags is named as
    // such, not as a parse error about them.
    let alone = parse(&args.test)?;
    let Some((kind, test)) = alone.command.test() else {
        bail!("{:?} is not a test: give a kind that makes load (http, dns, cps, latency, bandwidth, pps) and its arguments", args.test[0]);
    };
    if test.member().is_none() {
        bail!("a {kind} measures a path, not load: it does not run as members");
    }
    let mut words = args.test.clone();
    words.extend(["--members".into(), args.members.to_string(), "--run-id".into(), run_id.into()]);
    let cli = parse(&words)?;
    let Some(test) = cli.command.test().map(|(_, test)| test) else {
        unreachable!("the same subcommand as above")
    };
    let Some(member_flags) = test.member() else { unreachable!("checked above") };
    if member_flags.start_at.is_none() && args.db_secret.is_none() {
        bail!("the members need a common start: --db-secret NAME[:KEY] (the PostgreSQL URL they meet at), or --start-at TIME in the test's arguments");
    }
    let member = Member { run_id: run_id.to_string(), index: 0, members: args.members };
    member.validate().map_err(anyhow::Error::msg)?;
    let client = test.client(env!("CARGO_PKG_VERSION"))?;
    client.spec().share(&member).map_err(|e| anyhow!("--members: {e}"))?;
    Ok(words)
}

/// A run id when none was given: the time and some random bits, as a label allows.
fn new_run_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    format!("ws-{secs:x}-{:06x}", random & 0xff_ffff)
}

/// True for an RFC 1123 label: lowercase letters, digits and '-', not at either end.
fn is_dns_label(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

/// `text` made an RFC 1123 label of at most `max` characters.
fn dns_label(text: &str, max: usize) -> String {
    wirespeed_runner::execute::k8s::label(text, max)
}

/// `text` made a label value: at most 63 of letters, digits, '-', '_' and '.', starting and
/// ending with a letter or digit.
fn label_value(text: &str) -> String {
    let mapped: String = text
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '-' })
        .take(63)
        .collect();
    mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_string()
}

/// What the manifest is made of.
struct Manifest<'a> {
    name: &'a str,
    namespace: Option<&'a str>,
    run_label: &'a str,
    /// The run id the members are given (the label is it made fit for a label value).
    run_id: &'a str,
    members: u32,
    image: &'a str,
    args: &'a [String],
    secret: Option<(&'a str, &'a str)>,
    selectors: &'a [(&'a str, &'a str)],
    resources: (Option<&'a str>, Option<&'a str>),
}

/// A YAML scalar: JSON's quoting, which YAML reads as a double-quoted string.
fn q(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

impl Manifest<'_> {
    fn yaml(&self) -> String {
        let mut y = String::new();
        let labels = format!(
            "app.kubernetes.io/name: wirespeed\n        wirespeed/run: {}\n        wirespeed/role: member",
            q(self.run_label)
        );
        // The run id the members get, which `merge --run-id` takes; the label may differ (it
        // was shown here, and a sanitised id named no run the members saved).
        let _ = writeln!(y, "# wirespeed: {} members of run {}", self.members, q(self.run_id));
        if self.run_label != self.run_id {
            let _ = writeln!(
                y,
                "# (labelled wirespeed/run={}, a label's spelling of it)",
                q(self.run_label)
            );
        }
        let _ = writeln!(
            y,
            "# kubectl apply -f THIS; kubectl wait --for=condition=complete job/{}",
            self.name
        );
        y.push_str("apiVersion: batch/v1\nkind: Job\nmetadata:\n");
        let _ = writeln!(y, "  name: {}", q(self.name));
        if let Some(ns) = self.namespace {
            let _ = writeln!(y, "  namespace: {}", q(ns));
        }
        let _ = writeln!(
            y,
            "  labels:\n    app.kubernetes.io/name: wirespeed\n    wirespeed/run: {}",
            q(self.run_label)
        );
        y.push_str("spec:\n  completionMode: Indexed\n");
        let _ = writeln!(y, "  completions: {}\n  parallelism: {}", self.members, self.members);
        y.push_str("  backoffLimit: 0\n  podReplacementPolicy: Failed\n");
        y.push_str("  podFailurePolicy:\n    rules:\n    - action: FailJob\n      onExitCodes:\n");
        y.push_str("        containerName: wirespeed\n        operator: In\n");
        let codes: Vec<String> = FAIL_JOB_ON.iter().map(u8::to_string).collect();
        let _ = writeln!(y, "        values: [{}]", codes.join(", "));
        y.push_str("  template:\n    metadata:\n      labels:\n");
        let _ = writeln!(y, "        {labels}");
        y.push_str("    spec:\n      restartPolicy: Never\n");
        // One member per node: two on one node would share its CPU and NIC.
        y.push_str("      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n");
        y.push_str("          - topologyKey: kubernetes.io/hostname\n            labelSelector:\n              matchLabels:\n");
        let _ = writeln!(
            y,
            "                wirespeed/run: {}\n                wirespeed/role: member",
            q(self.run_label)
        );
        if !self.selectors.is_empty() {
            y.push_str("      nodeSelector:\n");
            for (k, v) in self.selectors {
                let _ = writeln!(y, "        {}: {}", q(k), q(v));
            }
        }
        y.push_str("      containers:\n      - name: wirespeed\n");
        let _ = writeln!(y, "        image: {}", q(self.image));
        y.push_str("        command: [\"wirespeed\"]\n        args:\n");
        for a in self.args {
            let _ = writeln!(y, "        - {}", q(a));
        }
        if let Some((secret, key)) = self.secret {
            y.push_str("        env:\n        - name: WIRESPEED_DB\n          valueFrom:\n            secretKeyRef:\n");
            let _ = writeln!(y, "              name: {}\n              key: {}", q(secret), q(key));
        }
        if self.resources != (None, None) {
            y.push_str("        resources:\n");
            for part in ["requests", "limits"] {
                let _ = writeln!(y, "          {part}:");
                if let Some(cpu) = self.resources.0 {
                    let _ = writeln!(y, "            cpu: {}", q(cpu));
                }
                if let Some(mem) = self.resources.1 {
                    let _ = writeln!(y, "            memory: {}", q(mem));
                }
            }
        }
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_labels_are_made_valid() {
        assert_eq!(dns_label("wirespeed-Run_42/x", 52), "wirespeed-run-42-x");
        assert!(dns_label(&"x".repeat(80), 52).len() == 52);
        assert_eq!(label_value("-run id 7-"), "run-id-7");
        assert!(is_dns_label("ws-1") && !is_dns_label("Ws") && !is_dns_label("-a"));
        assert!(new_run_id().starts_with("ws-"));
    }

    /// The header named the label's spelling of the run id ("nightly-42"), which no member
    /// was given: `merge --run-id` with it found nothing.
    #[test]
    fn the_header_names_the_run_id_the_members_get() {
        let args = ["http".to_string()];
        let m = Manifest {
            name: "wirespeed-x",
            namespace: None,
            run_label: &label_value("Nightly 42!"),
            run_id: "Nightly 42!",
            members: 2,
            image: "i",
            args: &args,
            secret: None,
            selectors: &[],
            resources: (None, None),
        };
        let yaml = m.yaml();
        assert!(yaml.starts_with("# wirespeed: 2 members of run \"Nightly 42!\"\n"), "{yaml}");
        assert!(yaml.contains("labelled wirespeed/run=\"Nightly-42\""), "{yaml}");
    }
}
