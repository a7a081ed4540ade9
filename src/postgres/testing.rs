//! A throwaway PostgreSQL cluster for unit tests that need a live database: initialised in a
//! temporary folder, listening on a free local port, stopped and removed when dropped. Tests call
//! [`Cluster::start`] and return early when it answers `None` (PostgreSQL is not installed).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use super::Database;

pub(crate) struct Cluster {
    /// Removed when the cluster is dropped, after the server stops.
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
}

impl Cluster {
    /// A fresh, running cluster, or `None` (said on stderr) when PostgreSQL is not installed.
    pub(crate) fn start() -> Option<Cluster> {
        let Some(bin) = installed() else {
            assert!(
                std::env::var_os("MAILSHELF_REQUIRE").is_none(),
                "PostgreSQL is required (MAILSHELF_REQUIRE) but not installed"
            );
            eprintln!("skipped: no PostgreSQL server in /usr/lib/postgresql/*/bin");
            return None;
        };
        let dir = tempfile::Builder::new().prefix("mailshelf-pg-").tempdir().expect("temp dir");
        if as_root() {
            // initdb refuses to run as root: the cluster belongs to `nobody`.
            let chowned = Command::new("chown").arg("nobody").arg(dir.path()).status().expect("chown runs");
            assert!(chowned.success(), "chown nobody {}", dir.path().display());
        }
        let data = dir.path().join("data");
        let init = run(
            &bin.join("initdb"),
            dir.path(),
            &["-D", path(&data), "-U", "mailshelf", "--auth=trust", "-E", "UTF8", "--no-locale"],
        );
        assert!(init.status.success(), "initdb: {}", String::from_utf8_lossy(&init.stderr));
        let mut cluster = Cluster { dir, bin, port: 0 };
        // A free port can be taken by someone else between finding it and the server binding it.
        for _ in 0..5 {
            cluster.port = free_port();
            let options = format!(
                "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
                 -c full_page_writes=off -c shared_buffers=16MB",
                cluster.port,
                path(cluster.dir.path())
            );
            let log = cluster.dir.path().join("log");
            let started = run(
                &cluster.bin.join("pg_ctl"),
                cluster.dir.path(),
                &["-D", path(&data), "-l", path(&log), "-o", &options, "-w", "start"],
            );
            if started.status.success() {
                return Some(cluster);
            }
            eprintln!(
                "pg_ctl start on port {}: {}{}",
                cluster.port,
                String::from_utf8_lossy(&started.stderr),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        panic!("the test cluster did not start");
    }

    pub(crate) fn url(&self) -> String {
        format!("postgres://mailshelf@127.0.0.1:{}/postgres", self.port)
    }

    /// A connection pool to the cluster, its schema applied.
    pub(crate) fn database(&self) -> Arc<Database> {
        Database::connect(&self.url()).expect("connects to the test cluster")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let _ = run(&self.bin.join("pg_ctl"), self.dir.path(), &["-D", path(&data), "-m", "immediate", "stop"]);
    }
}

/// The bin folder of the newest PostgreSQL installed the Debian way.
fn installed() -> Option<PathBuf> {
    let mut found: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("bin/initdb").is_file())
        .map(|e| {
            let version = e.file_name().to_string_lossy().split('.').filter_map(|p| p.parse().ok()).collect();
            (version, e.path().join("bin"))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

fn as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the process's effective user.
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Runs a PostgreSQL program, as `nobody` when we are root, from `cwd` (which that user can read).
fn run(program: &Path, cwd: &Path, args: &[&str]) -> Output {
    let mut command = if as_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    command.args(args).current_dir(cwd).output().expect("PostgreSQL program runs")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("temp paths are UTF-8")
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds a local port");
    listener.local_addr().expect("bound address").port()
}
