//! A real, throwaway PostgreSQL server from Debian's packages, for the shared results store's
//! tests.
//!
//! [`TestPostgres`] runs `initdb` and `postgres` on a private port and socket directory. initdb
//! refuses to run as root, so as root both run as the `postgres` user that Debian's package
//! creates, in a directory handed to it. The server is the test's child process and is stopped
//! (a fast shutdown, then waited for) when the value is dropped, so no test leaves one behind.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::ports::free_port;

/// The password of the test server's `wirespeed` role.
pub const PASSWORD: &str = "wire-test-pass";

/// A PostgreSQL server for one test.
#[derive(Debug)]
pub struct TestPostgres {
    server: Option<Child>,
    dir: tempfile::TempDir,
    bin: PathBuf,
    owner: Option<(u32, u32)>,
    /// The addresses it listens on.
    listen: String,
    /// Its TCP port on 127.0.0.1 (and any address it was also asked to listen on).
    pub port: u16,
}

impl TestPostgres {
    /// Starts a new server; `None` (with a note) when PostgreSQL is not installed and the test
    /// may skip, a panic saying what to install when it may not.
    pub fn start() -> Option<Self> {
        Self::start_reachable(None)
    }

    /// Starts a new server that also listens on `(address, network)`: on `address` (one of
    /// this machine's, such as a bridge to the test's network namespaces), taking password
    /// logins from `network` (CIDR).
    pub fn start_reachable(also: Option<(&str, &str)>) -> Option<Self> {
        let mut pg = Self::init(also)?;
        pg.start_server();
        Some(pg)
    }

    /// Starts a new server that takes TCP logins over TLS only (`hostssl`), with a
    /// certificate for 127.0.0.1 signed by a CA of its own. Returns the server, that CA's
    /// certificate and another CA's (which did not sign it), as PEM files.
    pub fn start_tls() -> Option<(Self, PathBuf, PathBuf)> {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
        let mut pg = Self::init(None)?;
        let data = pg.dir.path().join("data");
        let ca = |cn: &str| {
            let key = KeyPair::generate().expect("key");
            let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
            params.distinguished_name.push(DnType::CommonName, cn);
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            let cert = params.self_signed(&key).expect("CA");
            (cert, key)
        };
        let (ours, ours_key) = ca("wirespeed test CA");
        let (other, _) = ca("some other CA");
        let server_key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
        params.distinguished_name.push(DnType::CommonName, "127.0.0.1");
        let server = params.signed_by(&server_key, &ours, &ours_key).expect("signed");
        std::fs::write(data.join("server.crt"), server.pem()).expect("cert");
        std::fs::write(data.join("server.key"), server_key.serialize_pem()).expect("key");
        // PostgreSQL refuses a key others can read.
        std::fs::set_permissions(
            data.join("server.key"),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .expect("chmod");
        if let Some((uid, gid)) = pg.owner {
            for f in ["server.crt", "server.key"] {
                std::os::unix::fs::chown(data.join(f), Some(uid), Some(gid)).expect("chown");
            }
        }
        let conf = data.join("postgresql.conf");
        let mut settings = std::fs::read_to_string(&conf).expect("postgresql.conf");
        settings
            .push_str("\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n");
        std::fs::write(&conf, settings).expect("postgresql.conf");
        let hba = data.join("pg_hba.conf");
        let rules = std::fs::read_to_string(&hba).expect("pg_hba.conf");
        let tls_only: String = rules
            .lines()
            .map(|l| match l.strip_prefix("host ") {
                Some(rest) => format!("hostssl {rest}\n"),
                None => format!("{l}\n"),
            })
            .collect();
        std::fs::write(&hba, tls_only).expect("pg_hba.conf");
        let (ca_file, other_file) =
            (pg.dir.path().join("ca.pem"), pg.dir.path().join("other-ca.pem"));
        std::fs::write(&ca_file, ours.pem()).expect("ca");
        std::fs::write(&other_file, other.pem()).expect("ca");
        pg.start_server();
        Some((pg, ca_file, other_file))
    }

    /// Makes the cluster (not started): initdb, the password, and `also`'s login rule.
    fn init(also: Option<(&str, &str)>) -> Option<Self> {
        let Some(bin) = server_bin_dir() else {
            let why = "PostgreSQL's server is not installed; `apt-get install postgresql` (scripts/test.sh does)";
            return crate::skip::skipped(why);
        };
        let dir = tempfile::tempdir().expect("temporary directory");
        // As root, the server runs as `postgres`, which must own its directory.
        let owner = is_root()
            .then(|| postgres_ids().expect("a `postgres` user (Debian's package makes it)"));
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown");
        }
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, PASSWORD).expect("password file");
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(&pwfile, Some(uid), Some(gid)).expect("chown");
        }
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(dir.path().join("data"))
            .args(["-U", "wirespeed", "--auth-local=trust", "--auth-host=scram-sha-256"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .args(["--no-sync", "-E", "UTF8", "--locale=C"]);
        let out = as_owner(&mut initdb, owner).output().expect("run initdb");
        assert!(out.status.success(), "initdb failed: {}", String::from_utf8_lossy(&out.stderr));
        let mut listen = "127.0.0.1".to_string();
        if let Some((address, network)) = also {
            listen.push_str(&format!(",{address}"));
            let hba = dir.path().join("data/pg_hba.conf");
            let mut rules = std::fs::read_to_string(&hba).expect("pg_hba.conf");
            rules.push_str(&format!("host all all {network} scram-sha-256\n"));
            std::fs::write(&hba, rules).expect("pg_hba.conf");
        }
        Some(Self { server: None, dir, bin, owner, listen, port: free_port() })
    }

    /// Starts (or starts again) the server process and waits until it takes connections.
    pub fn start_server(&mut self) {
        assert!(self.server.is_none(), "already running");
        let mut postgres = Command::new(self.bin.join("postgres"));
        postgres
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-k")
            .arg(self.dir.path())
            .arg("-c")
            .arg(format!("listen_addresses={}", self.listen))
            // Nothing here must survive a crash of the machine: trade durability for speed.
            .args(["-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.dir.path().join("server.log")).expect("log"));
        self.server = Some(as_owner(&mut postgres, self.owner).spawn().expect("start postgres"));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut config = postgres::Config::new();
            config.host_path(self.dir.path()).port(self.port).user("wirespeed").dbname("postgres");
            if config.connect(postgres::NoTls).is_ok() {
                return;
            }
            if let Some(status) = self.server.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!("postgres exited ({status}) before it was ready:\n{}", self.log());
            }
            assert!(Instant::now() < deadline, "postgres not ready in 30 s:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the server (a fast shutdown: sessions are ended), and waits for it to exit.
    pub fn stop_server(&mut self) {
        if let Some(mut child) = self.server.take() {
            // SAFETY: signalling our own child, which has not been waited for, so its pid is ours.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            let _ = child.wait();
        }
    }

    /// A URL for the `wirespeed` role on database `db`.
    pub fn url_for(&self, db: &str) -> String {
        format!("postgres://wirespeed:{PASSWORD}@127.0.0.1:{}/{db}?sslmode=disable", self.port)
    }

    /// The URL of the server's `postgres` database.
    pub fn url(&self) -> String {
        self.url_for("postgres")
    }

    /// Creates database `name` (one per store, where a test needs several).
    pub fn create_database(&self, name: &str) -> String {
        self.execute(&format!("CREATE DATABASE {name}"));
        self.url_for(name)
    }

    /// Runs `sql` on the `postgres` database as the superuser, over the socket.
    pub fn execute(&self, sql: &str) {
        let mut client = postgres::Config::new()
            .host_path(self.dir.path())
            .port(self.port)
            .user("wirespeed")
            .dbname("postgres")
            .connect(postgres::NoTls)
            .expect("connect to the test server");
        client.batch_execute(sql).expect(sql);
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        self.stop_server();
    }
}

/// The directory of `initdb` and `postgres`: Debian keeps them per major version, off PATH.
fn server_bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The `postgres` user's uid and gid, from the password database.
fn postgres_ids() -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        (f.first() == Some(&"postgres") && f.len() > 3)
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
            .flatten()
    })
}

fn as_owner(command: &mut Command, owner: Option<(u32, u32)>) -> &mut Command {
    if let Some((uid, gid)) = owner {
        command.uid(uid).gid(gid).env("HOME", "/tmp");
    }
    command
}
