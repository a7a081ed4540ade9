//! Throwaway PostgreSQL clusters for the tests that need one: `initdb` in a folder under the
//! target directory, a free loopback port, run as an unprivileged user when the tests run as root
//! (PostgreSQL refuses root). A cluster dies with the test process (its server is started with a
//! parent-death signal), and every test gets a database of its own.
//!
//! Without PostgreSQL's programs (a bare machine) these tests say so and pass, unless
//! `MAILSHELF_REQUIRE` is set, as `scripts/test` does: then their absence fails (see [`super::needs`]).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// PostgreSQL's programs: `MAILSHELF_TEST_PG_BIN`, else the newest `/usr/lib/postgresql/*/bin`.
pub fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("MAILSHELF_TEST_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

/// Whether PostgreSQL tests can run here; says why not (or fails, when they are required).
pub fn available(test: &str) -> bool {
    super::needs::present(test, "PostgreSQL", bin_dir().is_some(), "apt-get install postgresql")
}

/// The backend the shared test helpers ([`super::TestApp`]) run on: `postgres` in
/// `MAILSHELF_TEST_BACKEND` puts every test app in a database of its own.
pub fn backend_is_postgres() -> bool {
    std::env::var("MAILSHELF_TEST_BACKEND").is_ok_and(|b| b == "postgres")
}

/// A running cluster.
pub struct Cluster {
    dir: PathBuf,
    port: u16,
    server: Mutex<Option<Child>>,
}

impl Cluster {
    /// A new cluster of its own (for tests that stop and start it).
    pub fn start() -> Cluster {
        let bin = bin_dir().expect("PostgreSQL's programs");
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        clear_leftovers(base);
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = base.join(format!("pg-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("cluster folder");
        let data = dir.join("data");
        as_postgres_user(&dir);
        let status = unprivileged(&bin.join("initdb"))
            .args(["-D"])
            .arg(&data)
            .args(["-U", "mailshelf", "--auth=trust", "-E", "UTF8", "--no-locale"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("initdb runs");
        assert!(status.success(), "initdb failed");
        let port = TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("port").port();
        let cluster = Cluster { dir, port, server: Mutex::new(None) };
        cluster.resume();
        cluster
    }

    /// The cluster every test app shares (see [`backend_is_postgres`]).
    pub fn shared() -> &'static Cluster {
        static SHARED: OnceLock<Cluster> = OnceLock::new();
        SHARED.get_or_init(Cluster::start)
    }

    /// Starts the server (again) and waits until it accepts connections.
    pub fn resume(&self) {
        let bin = bin_dir().expect("PostgreSQL's programs");
        let mut cmd = unprivileged(&bin.join("postgres"));
        cmd.arg("-D")
            .arg(self.dir.join("data"))
            .args(["-p", &self.port.to_string(), "-k"])
            .arg(&self.dir)
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=400"])
            .args(["-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = spawn_kept(cmd);
        *self.server.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = Command::new(bin.join("pg_isready"))
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-q"])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return;
            }
            assert!(Instant::now() < deadline, "PostgreSQL did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the server at once (as a crash would, or `pg_ctl stop -m immediate`).
    pub fn halt(&self) {
        if let Some(mut child) = self.server.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = Command::new("kill").args(["-QUIT", &child.id().to_string()]).status();
            let _ = child.wait();
        }
    }

    /// A new empty database, and its URL.
    pub fn database(&self) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("t{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let bin = bin_dir().expect("PostgreSQL's programs");
        let status = Command::new(bin.join("createdb"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "mailshelf", &name])
            .status()
            .expect("createdb runs");
        assert!(status.success(), "createdb {name}");
        format!("postgres://mailshelf@127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.halt();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Clusters of test processes that are gone.
fn clear_leftovers(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("pg-").and_then(|r| r.split('-').next()) else { continue };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// Makes `dir` the unprivileged user's when the tests run as root.
fn as_postgres_user(dir: &Path) {
    if is_root() {
        let ok = Command::new("chown").arg("-R").arg("nobody").arg(dir).status().is_ok_and(|s| s.success());
        assert!(ok, "chown nobody {}", dir.display());
    }
}

/// `program`, run as `nobody` when the tests run as root, and killed when the thread that starts
/// it ends (see [`spawn_kept`]).
fn unprivileged(program: &Path) -> Command {
    let mut cmd = Command::new("setpriv");
    if is_root() {
        cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"]);
    }
    cmd.args(["--pdeathsig", "KILL", "--"]).arg(program);
    cmd
}

/// Starts a process from one thread that lives as long as the test process: the parent-death
/// signal follows the thread that started a process, and test threads end with their test.
fn spawn_kept(cmd: Command) -> Child {
    type Job = (Command, Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        std::thread::spawn(move || {
            for (mut cmd, reply) in rx {
                let _ = reply.send(cmd.spawn());
            }
            // Never reached: the sender lives in a static.
            loop {
                std::thread::park();
            }
        });
        Mutex::new(tx)
    });
    let (reply_tx, reply_rx) = channel();
    spawner.lock().unwrap_or_else(|e| e.into_inner()).send((cmd, reply_tx)).expect("spawner thread");
    reply_rx.recv().expect("spawner answers").expect("PostgreSQL starts")
}
