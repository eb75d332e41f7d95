//! What an operator installs: shell completions that load in bash, zsh and fish and complete
//! subcommands and flags, manual pages that groff renders without a warning, the Debian package
//! `scripts/deb.sh` builds (its contents, and under scripts/test.sh installed for real: its
//! systemd units checked by systemd-analyze, the `wirespeed` system user, a web server running as it and
//! saving into the package's state directory, then purged without a trace), and the Docker
//! image built and started where a container engine runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::{self, debian, BIN};

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program).args(args).output().unwrap_or_else(|e| panic!("{program}: {e}"))
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn bash_completes_subcommands_flags_and_values() {
    let script = format!(
        "source <({BIN} completions bash) || exit 9
         complete -p wirespeed || exit 8
         for line in 'wirespeed se' 'wirespeed server --max-' 'wirespeed export 1 --format '; do
           read -ra COMP_WORDS <<< \"$line\"
           [ \"${{line: -1}}\" = ' ' ] && COMP_WORDS+=('')
           COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
           COMP_LINE=$line; COMP_POINT=${{#line}}
           _wirespeed wirespeed \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"
           echo \"$line => ${{COMPREPLY[*]}}\"
         done"
    );
    let out = run("bash", &["-c", &script]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let line = |prefix: &str| {
        said.lines()
            .find_map(|l| l.strip_prefix(prefix)?.strip_prefix(" => "))
            .unwrap_or_else(|| panic!("no completion of {prefix:?}:\n{said}"))
            .split(' ')
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(line("wirespeed se").contains(&"server".to_string()), "{said}");
    let flags = line("wirespeed server --max-");
    for want in ["--max-tests", "--max-duration", "--max-bitrate"] {
        assert!(flags.contains(&want.to_string()), "{want} missing: {flags:?}");
    }
    let formats = line("wirespeed export 1 --format ");
    assert!(formats.contains(&"openmetrics".to_string()), "{said}");
}

#[test]
fn zsh_and_fish_load_their_completions() {
    let (Some(()), Some(())) = (debian("zsh", "zsh"), debian("fish", "fish")) else { return };
    let zsh = run(
        "zsh",
        &[
            "-f",
            "-c",
            &format!(
                "autoload -U compinit && compinit -u -D && source <({BIN} completions zsh) && whence -w _wirespeed"
            ),
        ],
    );
    assert!(zsh.status.success() && text(&zsh).contains("_wirespeed: function"), "{}", text(&zsh));
    let fish = run(
        "fish",
        &[
            "--no-config",
            "-c",
            &format!("{BIN} completions fish | source; complete -C 'wirespeed se'; complete -C 'wirespeed web --me'"),
        ],
    );
    let said = text(&fish);
    assert!(fish.status.success(), "{said}");
    assert!(said.lines().any(|l| l.starts_with("server")), "{said}");
    assert!(said.lines().any(|l| l.starts_with("--metrics")), "{said}");
}

#[test]
fn manual_pages_render_without_warnings() {
    let page = run(BIN, &["man"]);
    assert!(page.status.success());
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("wirespeed.1");
    std::fs::write(&main, &page.stdout).unwrap();
    let written = dir.path().join("pages");
    let out = run(BIN, &["man", "--dir", written.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    for name in ["wirespeed.1", "wirespeed-server.1", "wirespeed-web.1", "wirespeed-bandwidth.1"] {
        let path = written.join(name);
        assert!(path.exists(), "{name} was not written");
        // -k: UTF-8 input through preconv, as man-db does; -ww: every warning; -z: no
        // output, only the check. And plain `groff -man`, without preconv: raw UTF-8 in the
        // page ("×", "—") was an invalid input character to it.
        for preconv in [true, false] {
            let mut args = vec!["-man", "-Tutf8", "-ww", "-z", path.to_str().unwrap()];
            if preconv {
                args.insert(0, "-k");
            }
            let checked = run("groff", &args);
            assert!(
                checked.status.success() && text(&checked).is_empty(),
                "{name} (preconv {preconv}): {}",
                text(&checked)
            );
        }
    }
    assert!(!written.join("wirespeed-role.1").exists(), "the hidden subcommand got a page");
    let server =
        run("man", &["-P", "cat", "-l", written.join("wirespeed-server.1").to_str().unwrap()]);
    let said = String::from_utf8_lossy(&server.stdout);
    assert!(said.contains("--metrics") && said.contains("--max-tests"), "{said}");
    let top = run("man", &["-P", "cat", "-l", main.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&top.stdout);
    for sub in ["bandwidth", "completions", "export", "web"] {
        assert!(said.contains(sub), "{sub} missing from wirespeed(1):\n{said}");
    }
}

/// `scripts/deb.sh` on this build's binary: the package's path.
fn build_package(out: &Path) -> PathBuf {
    let built = Command::new(repo().join("scripts/deb.sh"))
        .args(["--binary", BIN, "--out", out.to_str().unwrap()])
        .env("DEB_COMPRESSION", "gzip")
        .output()
        .unwrap();
    assert!(built.status.success(), "scripts/deb.sh: {}", text(&built));
    PathBuf::from(String::from_utf8(built.stdout).unwrap().trim())
}

#[test]
fn the_debian_package_holds_the_binary_pages_completions_and_units() {
    let dir = tempfile::tempdir().unwrap();
    let deb = build_package(dir.path());
    let info = text(&run("dpkg-deb", &["--info", deb.to_str().unwrap()]));
    for want in ["Package: wirespeed", "Depends: libc6 (>= 2.", "adduser", "postinst", "postrm"] {
        assert!(info.contains(want), "{want} missing:\n{info}");
    }
    let contents = text(&run("dpkg-deb", &["--contents", deb.to_str().unwrap()]));
    for want in [
        "./usr/bin/wirespeed",
        "./usr/share/man/man1/wirespeed.1.gz",
        "./usr/share/man/man1/wirespeed-web.1.gz",
        "./usr/share/bash-completion/completions/wirespeed",
        "./usr/share/zsh/vendor-completions/_wirespeed",
        "./usr/share/fish/vendor_completions.d/wirespeed.fish",
        "./lib/systemd/system/wirespeed-web.service",
        "./lib/systemd/system/wirespeed-server.service",
    ] {
        assert!(contents.contains(want), "{want} missing:\n{contents}");
    }
    assert!(contents.lines().all(|l| l.contains("root/root")), "not owned by root:\n{contents}");
    let root = dir.path().join("root");
    assert!(run("dpkg-deb", &["-x", deb.to_str().unwrap(), root.to_str().unwrap()])
        .status
        .success());
    let web =
        std::fs::read_to_string(root.join("lib/systemd/system/wirespeed-web.service")).unwrap();
    assert!(web.contains("ExecStart=/usr/bin/wirespeed web "), "{web}");
    assert!(
        web.contains("User=wirespeed\nGroup=wirespeed") && !web.contains("DynamicUser"),
        "{web}"
    );
    assert!(web.contains("StateDirectory=wirespeed"), "{web}");
}

/// Purges the package when dropped, however the test ends.
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = run("dpkg", &["--purge", "wirespeed"]);
    }
}

#[test]
fn the_debian_package_installs_runs_as_its_user_and_purges_clean() {
    // It installs system-wide: only where scripts/test.sh runs the suite (as root, on a machine
    // it set up), never as a side effect of a plain `cargo test`.
    if !wirespeed_testkit::skip::required() {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("SKIPPED: installs a package system-wide; scripts/test.sh runs it");
        }
        return;
    }
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "installing the package needs root");
    assert!(
        !run("dpkg", &["-s", "wirespeed"]).status.success(),
        "a wirespeed package is installed already; this test would replace it"
    );
    let dir = tempfile::tempdir().unwrap();
    let deb = build_package(dir.path());
    let installed = run("dpkg", &["-i", deb.to_str().unwrap()]);
    let _purge = Installed;
    assert!(installed.status.success(), "dpkg -i: {}", text(&installed));

    let user = text(&run("getent", &["passwd", "wirespeed"]));
    let fields: Vec<&str> = user.trim().split(':').collect();
    assert_eq!(fields.len(), 7, "{user}");
    assert!(fields[2].parse::<u32>().unwrap() < 1000, "not a system user: {user}");
    assert_eq!(fields[5], "/var/lib/wirespeed", "{user}");
    assert!(fields[6].ends_with("nologin") || fields[6].ends_with("false"), "{user}");
    let owner = text(&run("stat", &["-c", "%U:%G %a", "/var/lib/wirespeed"]));
    assert_eq!(owner.trim(), "wirespeed:wirespeed 750");
    let version = run("/usr/bin/wirespeed", &["--version"]);
    assert!(text(&version).starts_with("wirespeed "), "{}", text(&version));
    // systemd's own check of the installed units (it needs their binary in place).
    let verified = run(
        "systemd-analyze",
        &[
            "verify",
            "--man=no",
            "/lib/systemd/system/wirespeed-web.service",
            "/lib/systemd/system/wirespeed-server.service",
        ],
    );
    assert!(verified.status.success(), "systemd-analyze verify: {}", text(&verified));
    let page = text(&run("man", &["-w", "wirespeed-web"]));
    assert!(page.trim().starts_with("/usr/share/man/man1/wirespeed-web.1"), "{page}");

    // The web server as the unit runs it: the package's user, saving into its directory.
    let port = common::free_port();
    let child = common::spawn_until(
        Command::new("setpriv")
            .args(["--reuid", "wirespeed", "--regid", "wirespeed", "--init-groups"])
            .args(["/usr/bin/wirespeed", "web", "-B", "127.0.0.1", "-p", &port.to_string()])
            .args(["--db", "/var/lib/wirespeed/results.db"])
            .stdout(Stdio::null()),
        "web speed test on",
    );
    let web = common::web::Web { child, port, dir: tempfile::tempdir().unwrap() };
    let saved = web.telemetry_form([127, 0, 0, 1], b"dl=10&ul=5&ping=2&jitter=1");
    assert_eq!(saved.status, 200, "{}", saved.text());
    drop(web);
    let db = text(&run("stat", &["-c", "%U", "/var/lib/wirespeed/results.db"]));
    assert_eq!(db.trim(), "wirespeed");

    let purged = run("dpkg", &["--purge", "wirespeed"]);
    assert!(purged.status.success(), "dpkg --purge: {}", text(&purged));
    assert!(!run("getent", &["passwd", "wirespeed"]).status.success(), "the user stayed");
    assert!(!Path::new("/var/lib/wirespeed").exists(), "the results stayed after purge");
    assert!(!Path::new("/usr/bin/wirespeed").exists());
}

#[test]
fn the_docker_image_builds_and_serves_the_speed_test() {
    let engine = Command::new("docker").arg("info").output().is_ok_and(|o| o.status.success());
    if !engine {
        // No container engine on this machine (the docker client alone cannot build).
        #[allow(clippy::print_stderr)]
        {
            eprintln!("SKIPPED: no container engine answers `docker info`");
        }
        return;
    }
    let tag = "wirespeed-test:ci";
    let built = Command::new("docker")
        .args(["build", "-q", "-t", tag, "."])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(built.status.success(), "docker build: {}", text(&built));
    let port = common::free_port();
    let started = run(
        "docker",
        &["run", "-d", "--rm", "-p", &format!("127.0.0.1:{port}:80"), "-e", "MAX_LOG_COUNT=5", tag],
    );
    assert!(started.status.success(), "docker run: {}", text(&started));
    let id = String::from_utf8_lossy(&started.stdout).trim().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let answered = loop {
        if status_of(port, "/getIP") == Some(200) {
            break true;
        }
        if std::time::Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    };
    let _ = run("docker", &["rm", "-f", &id]);
    let _ = run("docker", &["rmi", tag]);
    assert!(answered, "the container never answered /getIP");
}

/// The status of `GET path` on a loopback port, if anything answers.
fn status_of(port: u16, path: &str) -> Option<u16> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").ok()?;
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    raw.split(' ').nth(1)?.parse().ok()
}
