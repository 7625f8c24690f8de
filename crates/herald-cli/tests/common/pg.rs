//! A private PostgreSQL for a test: Debian's `postgresql` binaries
//! (`/usr/lib/postgresql/*/bin`, installed by `.ci/run`), a fresh data
//! directory, a free loopback port. `postgres` refuses to run as root, so
//! as root the server runs as the `postgres` user.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub struct Postgres {
    child: Child,
    _dir: tempfile::TempDir,
    pub port: u16,
    bin: PathBuf,
}

fn bin_dir() -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path().join("bin")))
                .collect()
        })
        .unwrap_or_default();
    dirs.retain(|d| d.join("initdb").exists());
    dirs.sort();
    dirs.pop().unwrap_or_else(|| {
        panic!(
            "PostgreSQL is not installed: the queue tests need Debian's postgresql package \
             (.ci/run installs it: apt-get install postgresql)"
        )
    })
}

/// Whether the tests run as root.
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// `program args…` as the `postgres` user when running as root.
fn as_owner(program: PathBuf) -> Command {
    if is_root() {
        let mut cmd = Command::new("setpriv");
        cmd.args([
            "--reuid",
            "postgres",
            "--regid",
            "postgres",
            "--clear-groups",
        ])
        .arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

impl Postgres {
    pub fn start() -> Self {
        Self::start_with(None)
    }

    /// A server that takes only TLS connections over TCP (`hostssl` in
    /// pg_hba.conf), with this certificate and key (PEM).
    pub fn start_tls(cert: &std::path::Path, key: &std::path::Path) -> Self {
        Self::start_with(Some((cert, key)))
    }

    fn start_with(tls: Option<(&std::path::Path, &std::path::Path)>) -> Self {
        let bin = bin_dir();
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        if let Some((cert, key)) = tls {
            std::fs::copy(cert, dir.path().join("server.crt")).unwrap();
            std::fs::copy(key, dir.path().join("server.key")).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(
                dir.path().join("server.key"),
                std::fs::Permissions::from_mode(0o600),
            )
            .unwrap();
        }
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(status.success());
        }
        let out = as_owner(bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut extra: Vec<String> = Vec::new();
        if tls.is_some() {
            std::fs::write(
                data.join("pg_hba.conf"),
                "local all all trust\nhostssl all all 127.0.0.1/32 trust\n",
            )
            .unwrap();
            for setting in [
                "ssl=on".to_owned(),
                format!("ssl_cert_file={}", dir.path().join("server.crt").display()),
                format!("ssl_key_file={}", dir.path().join("server.key").display()),
            ] {
                extra.push("-c".to_owned());
                extra.push(setting);
            }
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = as_owner(bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .arg("-p")
            .arg(port.to_string())
            .arg("-k")
            .arg(dir.path())
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "max_connections=200",
            ])
            .args(&extra)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pg = Self {
            child,
            _dir: dir,
            port,
            bin,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = Command::new(pg.bin.join("pg_isready"))
                .args(["-h", "127.0.0.1", "-p", &port.to_string()])
                .output()
                .unwrap();
            if ready.status.success() {
                break;
            }
            assert!(Instant::now() < deadline, "PostgreSQL did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        pg
    }

    /// The connection string (TLS off: the test server has none).
    pub fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable",
            self.port
        )
    }

    /// The connection string without its TLS settings: add
    /// `?sslmode=…` yourself.
    pub fn base_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Runs one SQL statement with psql and returns its output rows.
    pub fn sql(&self, statement: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-At",
                "-c",
                statement,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // SIGINT: fast shutdown.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        );
        let _ = self.child.wait();
    }
}
