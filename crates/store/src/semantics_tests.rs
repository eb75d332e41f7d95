//! The store's semantics, checked the same on both databases: every test here runs its body on
//! an SQLite database and on a real PostgreSQL server, so the two cannot answer differently.
//! Then what only PostgreSQL has: concurrent openers, refused schemas, lost connections, logins.

use wirespeed_model::web::{WebResult, WebSource};

use crate::sample::report;
use crate::{Location, Retention, RunFilter, Store, StoreError, WebFilter, WebPolicy};
use wirespeed_testkit::postgres::TestPostgres;

/// An empty store of each kind; the PostgreSQL server lives as long as the returned value.
fn each_store() -> (Vec<(&'static str, Store)>, Option<TestPostgres>) {
    let mut stores = vec![("sqlite", Store::open_in_memory().unwrap())];
    let pg = TestPostgres::start();
    if let Some(pg) = &pg {
        stores.push(("postgres", Store::open_at(&Location::parse(&pg.url()).unwrap()).unwrap()));
    }
    (stores, pg)
}

fn ids(s: &Store, f: RunFilter) -> Vec<i64> {
    s.list(&f).unwrap().into_iter().map(|r| r.id).collect()
}

#[test]
fn save_get_remove() {
    let (stores, _pg) = each_store();
    for (name, s) in stores {
        assert_eq!(s.schema_version().unwrap(), crate::MIGRATIONS.len() as i64, "{name}");
        let a = s.save(&report(1, 1e9), None).unwrap();
        let b = s.save(&report(2, 2e9), Some("lab")).unwrap();
        assert_eq!(s.get(a).unwrap().unwrap(), report(1, 1e9), "{name}");
        assert!(s.get(999).unwrap().is_none(), "{name}");
        let rows = s.list(&RunFilter::default()).unwrap();
        assert_eq!(rows.iter().map(|r| r.id).collect::<Vec<_>>(), vec![b, a], "{name}");
        assert_eq!(rows[0].tag.as_deref(), Some("lab"));
        assert_eq!(s.tag(b).unwrap().as_deref(), Some("lab"));
        assert_eq!(s.tag(a).unwrap(), None);
        assert_eq!(rows[0].kind, "bandwidth");
        assert_eq!(rows[0].headline, Some(2e9));
        assert_eq!(rows[0].headline_unit.as_deref(), Some("bit/s"));
        assert_eq!(s.remove(&[a, 999]).unwrap(), vec![999], "{name}");
        assert_eq!(s.count().unwrap(), 1, "{name}");
        assert!(s.get(a).unwrap().is_none(), "{name}");
        // Several at once: all or none, ids in order.
        let batch = s.save_all(&[(&report(3, 3.0), None), (&report(4, 4.0), Some("x"))]).unwrap();
        assert_eq!(batch.len(), 2);
        assert!(batch[0] < batch[1], "{name}");
        assert_eq!(s.count().unwrap(), 3, "{name}");
    }
}

#[test]
fn filters_combine() {
    let (stores, _pg) = each_store();
    for (name, s) in stores {
        let a = s.save(&report(1000, 1.0), Some("Lab A")).unwrap();
        let b = s.save(&report(2000, 1.0), Some("lab b")).unwrap();
        let c = s.save(&report(3000, 1.0), None).unwrap();
        // Equal times: the later id first.
        let d = s.save(&report(3000, 1.0), Some("100%_done")).unwrap();
        assert_eq!(ids(&s, RunFilter::default()), [d, c, b, a], "{name}");
        assert_eq!(ids(&s, RunFilter { tag: Some("LAB".into()), ..Default::default() }), [b, a]);
        assert_eq!(ids(&s, RunFilter { since_ms: Some(2000), ..Default::default() }), [d, c, b]);
        assert_eq!(ids(&s, RunFilter { until_ms: Some(2000), ..Default::default() }), [a]);
        assert_eq!(ids(&s, RunFilter { limit: Some(1), ..Default::default() }), [d]);
        assert!(ids(&s, RunFilter { kind: Some("dns".into()), ..Default::default() }).is_empty());
        let f = RunFilter {
            kind: Some("bandwidth".into()),
            target: Some("127.0".into()),
            ..Default::default()
        };
        assert_eq!(ids(&s, f), [d, c, b, a], "{name}");
        // Text filters are values, not SQL, nor patterns.
        assert!(
            ids(&s, RunFilter { tag: Some("' OR 1 --".into()), ..Default::default() }).is_empty()
        );
        assert_eq!(ids(&s, RunFilter { tag: Some("0%_".into()), ..Default::default() }), [d]);
        assert!(ids(&s, RunFilter { tag: Some("%".into()), ..Default::default() }).len() == 1);
    }
}

#[test]
fn a_saved_policy_prunes_after_each_save() {
    let (stores, _pg) = each_store();
    for (name, s) in stores {
        assert!(s.retention().unwrap().is_off(), "{name}");
        let policy = Retention { keep: Some(2), max_age_ms: None };
        s.set_retention(&policy).unwrap();
        assert_eq!(s.retention().unwrap(), policy, "{name}");
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()
                as u64;
        for i in 0..5 {
            s.save(&report(now + i, 1.0), None).unwrap();
        }
        let left: Vec<i64> =
            s.list(&RunFilter::default()).unwrap().iter().map(|r| r.started_at_ms).collect();
        assert_eq!(left, [(now + 4) as i64, (now + 3) as i64], "{name}");
        s.set_retention(&Retention::default()).unwrap();
        assert!(s.retention().unwrap().is_off(), "{name}");
    }
}

#[test]
fn prune_by_age_and_count() {
    let (stores, _pg) = each_store();
    for (name, s) in stores {
        for ms in [1_000, 2_000, 3_000, 4_000] {
            s.save(&report(ms, 1.0), None).unwrap();
        }
        let by_age = Retention { keep: None, max_age_ms: Some(1_500) };
        assert_eq!(s.prune(&by_age, 4_000).unwrap(), 2, "{name}");
        assert_eq!(s.prune(&Retention { keep: Some(1), max_age_ms: None }, 4_000).unwrap(), 1);
        assert_eq!(s.list(&RunFilter::default()).unwrap()[0].started_at_ms, 4_000, "{name}");
        assert_eq!(s.count().unwrap(), 1, "{name}");
    }
}

fn web_result(id: &str, ms: i64, network: &str) -> WebResult {
    WebResult {
        id: id.into(),
        created_ms: ms,
        network: network.into(),
        isp: "Example Net".into(),
        country: "Netherlands".into(),
        region: "Amsterdam".into(),
        download_bps: Some(9e8),
        upload_bps: Some(4e8),
        ping_ms: Some(3.5),
        jitter_ms: Some(0.4),
        download_by_server: true,
        upload_by_server: true,
        claimed_download_bps: Some(9.5e8),
        claimed_upload_bps: None,
        user_agent: "test".into(),
        lang: "en".into(),
        source: WebSource::Page,
        latency_down_ms: Some(41.5),
        latency_up_ms: None,
        latency_grade: Some("B".into()),
    }
}

fn web_ids(s: &Store, f: &WebFilter) -> Vec<String> {
    s.list_web(f).unwrap().into_iter().map(|r| r.id).collect()
}

#[test]
fn one_web_row_per_network_unless_asked_and_the_oldest_go_first() {
    let (stores, _pg) = each_store();
    for (name, s) in stores {
        let one = WebPolicy { max_results: 3, same_ip_multi: false };
        s.save_web(&web_result("a", 1, "192.0.2.0/24"), one).unwrap();
        s.save_web(&web_result("b", 2, "192.0.2.0/24"), one).unwrap();
        s.save_web(&web_result("c", 3, "198.51.100.0/24"), one).unwrap();
        assert_eq!(web_ids(&s, &WebFilter::default()), ["c", "b"], "{name}");
        let multi = WebPolicy { max_results: 3, same_ip_multi: true };
        s.save_web(&web_result("d", 4, "198.51.100.0/24"), multi).unwrap();
        s.save_web(&web_result("e", 5, "198.51.100.0/24"), multi).unwrap();
        assert_eq!(web_ids(&s, &WebFilter::default()), ["e", "d", "c"], "{name}: b was oldest");
        assert_eq!(s.get_web("d").unwrap().unwrap(), web_result("d", 4, "198.51.100.0/24"));
        assert!(s.remove_web("d").unwrap(), "{name}");
        assert!(!s.remove_web("d").unwrap(), "{name}");
        assert!(s.get_web("d").unwrap().is_none(), "{name}");
    }
}

#[test]
fn web_filters_are_values_not_sql() {
    let (stores, _pg) = each_store();
    for (name, s) in stores {
        let p = WebPolicy { max_results: 0, same_ip_multi: true };
        let mut other = web_result("x", 10, "203.0.113.0/24");
        other.isp = "Other ISP".into();
        other.country = "Germany".into();
        s.save_web(&web_result("a", 1, "192.0.2.0/24"), p).unwrap();
        s.save_web(&other, p).unwrap();
        let f = |isp: &str| WebFilter { isp: Some(isp.into()), ..Default::default() };
        assert_eq!(web_ids(&s, &f("example")), ["a"], "{name}");
        assert_eq!(web_ids(&s, &f("' OR 1 --")), Vec::<String>::new(), "{name}");
        let f = WebFilter { country: Some("GERM".into()), ..Default::default() };
        assert_eq!(web_ids(&s, &f), ["x"], "{name}");
        let f = WebFilter { since_ms: Some(5), limit: Some(1), ..Default::default() };
        assert_eq!(web_ids(&s, &f), ["x"], "{name}");
    }
}

#[test]
fn a_report_with_odd_text_comes_back_as_it_went() {
    let (stores, _pg) = each_store();
    for (name, s) in stores {
        let mut r = report(7, 1.0);
        // A NUL, as a misbehaving peer's banner may carry (jsonb would refuse it), and
        // characters outside the BMP.
        r.meta.version = "0.1.0\u{0}\u{1F680}'\"\\".into();
        let id = s.save(&r, Some("tag\u{0}x")).unwrap();
        assert_eq!(s.get(id).unwrap().unwrap(), r, "{name}: the report is whole");
        // PostgreSQL's text cannot hold a NUL: in its listing columns it becomes U+FFFD.
        let tag = if s.is_shared() { "tag\u{FFFD}x" } else { "tag\u{0}x" };
        assert_eq!(s.tag(id).unwrap().as_deref(), Some(tag), "{name}");
    }
}

/// Many processes open one new database at once (the members of a run, several web servers):
/// it is migrated once, and every save lands.
#[test]
fn postgres_openers_at_once_migrate_once_and_all_save() {
    let Some(pg) = TestPostgres::start() else { return };
    let location = Location::parse(&pg.url()).unwrap();
    let threads: Vec<_> = (0..6)
        .map(|i| {
            let location = location.clone();
            std::thread::spawn(move || {
                let s = Store::open_at(&location).unwrap();
                for j in 0..5 {
                    s.save(&report(i * 100 + j, 1.0), Some(&format!("t{i}"))).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = Store::open_at(&location).unwrap();
    assert_eq!(s.count().unwrap(), 30);
    assert_eq!(s.schema_version().unwrap(), crate::MIGRATIONS.len() as i64);
    assert_eq!(crate::postgres::latest_version(), crate::MIGRATIONS.len() as i64);
}

#[test]
fn postgres_refuses_a_newer_schema_and_a_foreign_one_changing_nothing() {
    let Some(pg) = TestPostgres::start() else { return };
    older_merges_are_marked_by_the_upgrade(&pg);
    let newer = Location::parse(&pg.create_database("newer")).unwrap();
    Store::open_at(&newer).unwrap().save(&report(1, 1.0), None).unwrap();
    let mut admin = postgres::Client::connect(&pg.url_for("newer"), postgres::NoTls).unwrap();
    admin.batch_execute("UPDATE wirespeed.schema_version SET version = 99").unwrap();
    let err = Store::open_at(&newer).unwrap_err();
    assert!(matches!(err, StoreError::TooNew { found: 99, .. }), "{err}");
    assert!(!err.to_string().contains(wirespeed_testkit::postgres::PASSWORD), "{err}");
    let count: i64 = admin.query_one("SELECT count(*) FROM wirespeed.runs", &[]).unwrap().get(0);
    assert_eq!(count, 1, "nothing changed");

    let foreign = Location::parse(&pg.create_database("other")).unwrap();
    let mut admin = postgres::Client::connect(&pg.url_for("other"), postgres::NoTls).unwrap();
    admin.batch_execute("CREATE SCHEMA wirespeed; CREATE TABLE wirespeed.notes (t TEXT)").unwrap();
    let err = Store::open_at(&foreign).unwrap_err();
    assert!(matches!(err, StoreError::Foreign { .. }), "{err}");
    let tables: i64 = admin
        .query_one("SELECT count(*) FROM pg_tables WHERE schemaname = 'wirespeed'", &[])
        .unwrap()
        .get(0);
    assert_eq!(tables, 1, "nothing created beside the foreign table");
}

/// A role that may not create the schema, or whose schema another role owns, can never use
/// the database: that is the database refused (exit 10 at the binary), not a failed call
/// (exit 1, before).
#[test]
fn postgres_without_the_rights_to_set_up_is_refused_as_unusable() {
    let Some(pg) = TestPostgres::start() else { return };
    let db = pg.create_database("guarded");
    let mut admin = postgres::Client::connect(&pg.url_for("guarded"), postgres::NoTls).unwrap();
    admin
        .batch_execute(
            "CREATE ROLE visitor LOGIN PASSWORD 'visitor-pass';
             REVOKE CREATE ON DATABASE guarded FROM PUBLIC;",
        )
        .unwrap();
    let as_visitor = db.replacen(
        &format!("wirespeed:{}", wirespeed_testkit::postgres::PASSWORD),
        "visitor:visitor-pass",
        1,
    );
    let err = Store::open_at(&Location::parse(&as_visitor).unwrap()).unwrap_err();
    assert!(matches!(err, StoreError::Postgres { connect: true, .. }), "{err}");
    assert!(err.to_string().contains("permission denied"), "{err}");
    // The schema made by another role, which grants the visitor nothing on it.
    admin.batch_execute("CREATE SCHEMA wirespeed").unwrap();
    let err = Store::open_at(&Location::parse(&as_visitor).unwrap()).unwrap_err();
    assert!(matches!(err, StoreError::Postgres { connect: true, .. }), "{err}");
}

#[test]
fn postgres_login_and_reachability_failures_say_so_without_the_password() {
    let Some(pg) = TestPostgres::start() else { return };
    let wrong = pg.url().replace(wirespeed_testkit::postgres::PASSWORD, "not-the-password");
    let err = Store::open_at(&Location::parse(&wrong).unwrap()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, StoreError::Postgres { connect: true, .. }), "{text}");
    assert!(text.contains("refused the login"), "{text}");
    assert!(text.contains("password authentication failed"), "{text}");
    assert!(!text.contains("not-the-password"), "{text}");

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let url = format!("postgres://ws:secret@127.0.0.1:{port}/db?connect_timeout=5");
    let err = Store::open_at(&Location::parse(&url).unwrap()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("cannot connect"), "{text}");
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    assert!(!text.contains("secret"), "{text}");
}

/// A server restarted under an open store: the call during the outage fails with a message,
/// and the first one after it reconnects and succeeds (it failed too, and the run it saved
/// was lost). Twice: an idle connection the server ended is found broken by a save.
#[test]
fn postgres_reconnects_after_the_server_comes_back() {
    let Some(mut pg) = TestPostgres::start() else { return };
    let s = Store::open_at(&Location::parse(&pg.url()).unwrap()).unwrap();
    s.save(&report(1, 1.0), None).unwrap();
    pg.stop_server();
    let err = s.save(&report(2, 1.0), None).unwrap_err();
    assert!(matches!(err, StoreError::Postgres { .. }), "{err}");
    pg.start_server();
    s.save(&report(3, 1.0), None).unwrap();
    assert_eq!(s.count().unwrap(), 2);
    pg.stop_server();
    pg.start_server();
    s.save(&report(4, 1.0), None).unwrap();
    assert_eq!(s.count().unwrap(), 3);
}

/// One bucket per visitor, shared by every server on the database: refilled with time, refused
/// with the wait, owed bytes taken past empty, idle buckets forgotten.
#[test]
fn transfer_budgets_refill_refuse_and_owe() {
    use crate::{Budget, Taken};
    let (stores, _pg) = each_store();
    let mib = 1_048_576.0;
    let budget = Budget { capacity: 10.0 * mib, per_sec: mib };
    for (name, s) in stores {
        let t0 = 1_000_000;
        assert_eq!(s.take_budget("192.0.2.1", 8.0 * mib, budget, t0, false).unwrap(), Taken::Yes);
        // 2 MiB left: 4 is refused, 2 s until there would be.
        assert_eq!(
            s.take_budget("192.0.2.1", 4.0 * mib, budget, t0, false).unwrap(),
            Taken::Wait(2.0),
            "{name}"
        );
        assert_eq!(s.take_budget("192.0.2.9", 4.0 * mib, budget, t0, false).unwrap(), Taken::Yes);
        // Two seconds later there are.
        assert_eq!(
            s.take_budget("192.0.2.1", 4.0 * mib, budget, t0 + 2_000, false).unwrap(),
            Taken::Yes,
            "{name}"
        );
        // Owed bytes go past empty, and the debt is paid back before anything more is taken.
        assert_eq!(
            s.take_budget("192.0.2.1", 3.0 * mib, budget, t0 + 2_000, true).unwrap(),
            Taken::Yes
        );
        assert_eq!(
            s.take_budget("192.0.2.1", 1.0 * mib, budget, t0 + 3_000, false).unwrap(),
            Taken::Wait(3.0),
            "{name}: 3 MiB owed, 1 paid back"
        );
        // Ten seconds idle: full again, and the other visitor's bucket, idle as long, is gone.
        assert_eq!(
            s.take_budget("192.0.2.1", 10.0 * mib, budget, t0 + 20_000, false).unwrap(),
            Taken::Yes,
            "{name}"
        );
    }
}

/// TLS with libpq's `sslmode`s, against a server that takes TCP logins over TLS only: plain is
/// refused by the server, `require` encrypts without checking the certificate, `verify-full`
/// checks it against `sslrootcert` and its name, `verify-ca` the chain only; a certificate
/// from another CA, or for another name under `verify-full`, is refused with the reason.
#[test]
fn postgres_over_tls_as_libpq_reads_sslmode() {
    let Some((pg, ca, other)) = TestPostgres::start_tls() else { return };
    let url = |host: &str, query: &str| {
        format!(
            "postgres://wirespeed:{}@{host}:{}/postgres?{query}",
            wirespeed_testkit::postgres::PASSWORD,
            pg.port
        )
    };
    let open = |u: String| Store::open_at(&Location::parse(&u).unwrap());
    let plain = open(url("127.0.0.1", "sslmode=disable")).unwrap_err().to_string();
    assert!(plain.contains("no encryption") || plain.contains("pg_hba.conf"), "{plain}");
    let s = open(url("127.0.0.1", "sslmode=require")).unwrap();
    s.save(&report(1, 1.0), None).unwrap();
    let verified =
        open(url("127.0.0.1", &format!("sslmode=verify-full&sslrootcert={}", ca.display())));
    assert_eq!(verified.unwrap().count().unwrap(), 1);
    let stranger =
        open(url("127.0.0.1", &format!("sslmode=verify-full&sslrootcert={}", other.display())))
            .unwrap_err()
            .to_string();
    assert!(stranger.contains("UnknownIssuer") || stranger.contains("certificate"), "{stranger}");
    let by_name = format!("sslmode=verify-full&sslrootcert={}", ca.display());
    let wrong_name = open(url("localhost", &by_name)).unwrap_err().to_string();
    assert!(wrong_name.contains("NotValidForName") || wrong_name.contains("name"), "{wrong_name}");
    let chain_only = format!("sslmode=verify-ca&sslrootcert={}", ca.display());
    assert_eq!(open(url("localhost", &chain_only)).unwrap().count().unwrap(), 1);
    let missing = open(url("127.0.0.1", "sslmode=verify-full&sslrootcert=/nonexistent/ca.pem"))
        .unwrap_err()
        .to_string();
    assert!(missing.contains("sslrootcert /nonexistent/ca.pem"), "{missing}");
}

/// A run cut short (its notes say interrupted or aborted) is listed as such on both
/// databases: the history showed it as a whole run.
#[test]
fn cut_runs_are_listed_with_how_they_ended() {
    let (stores, _pg) = each_store();
    for (name, s) in stores {
        let mut interrupted = report(1, 1.0);
        interrupted.meta.notes.push("interrupted: the test was stopped early by the user".into());
        let mut aborted = report(2, 1.0);
        aborted.meta.notes.push("aborted: lost the server mid-test: gone".into());
        s.save(&interrupted, None).unwrap();
        s.save(&aborted, None).unwrap();
        s.save(&report(3, 1.0), None).unwrap();
        let rows = s.list(&RunFilter::default()).unwrap();
        let ended: Vec<Option<&str>> = rows.iter().map(|r| r.ended.as_deref()).collect();
        assert_eq!(ended, [None, Some("aborted"), Some("interrupted")], "{name}");
    }
}

/// A member run is saved merged once: `merge --run-id` run twice (more members since, or
/// `--allow-partial`) listed the same run twice, with two different figures.
#[test]
fn merging_a_run_again_replaces_its_earlier_merge() {
    let (stores, _pg) = each_store();
    for (name, s) in stores {
        let merged = merged_report;
        let plain = s.save(&report(2, 1.0), None).unwrap();
        let first = s.save(&merged("r1", 1e9), None).unwrap();
        let other = s.save(&merged("r2", 3e9), None).unwrap();
        assert_eq!(s.merge_of("r1").unwrap(), Some(first), "{name}");
        let again = s.save(&merged("r1", 2e9), None).unwrap();
        assert_eq!(s.merge_of("r1").unwrap(), Some(again), "{name}");
        let mut left = ids(&s, RunFilter::default());
        left.sort();
        assert_eq!(left, [plain, other, again], "{name}");
        assert!(s.get(first).unwrap().is_none(), "{name}");
        assert_eq!(s.merge_of("r3").unwrap(), None, "{name}");
    }
}

/// A merged run saved at schema 7 (no `merged_run`) is marked by migration 8 from its report,
/// so that merging its run again replaces it.
fn older_merges_are_marked_by_the_upgrade(pg: &TestPostgres) {
    let older = Location::parse(&pg.create_database("older")).unwrap();
    let store = Store::open_at(&older).unwrap();
    let id = store.save(&merged_report("r7", 1.0), None).unwrap();
    store.save(&report(2, 1.0), None).unwrap();
    drop(store);
    let mut admin = postgres::Client::connect(&pg.url_for("older"), postgres::NoTls).unwrap();
    admin
        .batch_execute(
            "DROP INDEX wirespeed.runs_merged_run; ALTER TABLE wirespeed.runs DROP COLUMN merged_run;
             UPDATE wirespeed.schema_version SET version = 7",
        )
        .unwrap();
    let store = Store::open_at(&older).unwrap();
    assert_eq!(store.merge_of("r7").unwrap(), Some(id));
    assert_eq!(store.schema_version().unwrap(), crate::MIGRATIONS.len() as i64);
}

/// A report merged from member run `run_id` (two members).
pub(crate) fn merged_report(run_id: &str, value: f64) -> wirespeed_model::Report {
    let mut r = report(1, value);
    r.meta.merged = Some(wirespeed_model::provenance::MergeRecord {
        run_id: run_id.into(),
        members: 2,
        merged: vec![0, 1],
        missing: Vec::new(),
        partial: false,
        hosts: vec!["a".into(), "b".into()],
        planned_start_unix_ns: 0,
        start_skew_ns: 0,
        latest_start_late_ns: 0,
    });
    r
}
