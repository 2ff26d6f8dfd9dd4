//! The hosts as separate processes, for what an in-process server cannot show: several
//! processes sharing one store, and one of them killed with SIGKILL.
//!
//! The binaries are built on first use with the cargo that runs the tests, into the same
//! target directory, so `cargo test` alone is enough on a fresh checkout.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The path of `bin` from `package`, built once per test process.
pub fn built_binary(package: &str, bin: &str) -> PathBuf {
    static BUILT: Mutex<Option<HashMap<String, PathBuf>>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(path) = built.get_or_insert_with(HashMap::new).get(bin) {
        return path.clone();
    }
    // This test binary is target/<profile>/deps/<name>; the hosts sit in target/<profile>,
    // built with the same profile (a release bench measures release hosts).
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>");
    let release = profile.file_name().is_some_and(|p| p == "release");
    let ok = Command::new(env!("CARGO"))
        .args(["build", "--locked", "-p", package, "--bin", bin])
        .args(release.then_some("--release"))
        .status()
        .expect("run cargo");
    assert!(ok.success(), "cargo build -p {package} --bin {bin} failed");
    let path = profile.join(bin);
    assert!(path.is_file(), "{} was not built", path.display());
    built.get_or_insert_with(HashMap::new).insert(bin.to_owned(), path.clone());
    path
}

/// A host process serving on a free loopback port; killed when dropped.
pub struct ServerProcess {
    child: Child,
    pub addr: SocketAddr,
}

impl ServerProcess {
    /// `edge-host --port P` with `args`, once it accepts connections.
    pub fn edge_host(args: &[&str]) -> Self {
        Self::start(built_binary("edge-host", "edge-host"), args)
    }

    /// `host-example --port P` with `args` (and a journal file of its own, unused with `--store`).
    pub fn host_example(args: &[&str]) -> Self {
        let journal =
            std::env::temp_dir().join(format!("rg-journal-{}-{}.txt", std::process::id(), args.len()));
        let mut all = vec!["--journal", journal.to_str().expect("a UTF-8 temp path")];
        all.extend_from_slice(args);
        Self::start(built_binary("host-example", "host-example"), &all)
    }

    /// `package`'s binary (`host-example`, `edge-host`) with `args`, logging at `info` into
    /// `log` instead of the test's stderr: for tests that read what an operator would.
    pub fn logged(package: &str, args: &[&str], log: &std::path::Path) -> Self {
        let mut cmd = Command::new(built_binary(package, package));
        let file = std::fs::File::create(log).expect("create the log file");
        cmd.args(args).env("RUST_LOG", "info").stderr(file);
        Self::serve(cmd)
    }

    fn start(binary: PathBuf, args: &[&str]) -> Self {
        let mut cmd = Command::new(binary);
        cmd.args(args).env("RUST_LOG", "warn").stderr(Stdio::inherit());
        Self::serve(cmd)
    }

    /// `cmd --port P` on a free loopback port, once it accepts connections.
    pub fn serve(mut cmd: Command) -> Self {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let child =
            cmd.args(["--port", &port.to_string()]).stdout(Stdio::null()).spawn().expect("start the host");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "the host never listened on {addr}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, addr }
    }

    /// SIGTERM, as a deploy stops a process.
    pub fn terminate(&self) {
        let ok = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().expect("kill");
        assert!(ok.success());
    }

    /// Waits for the process to exit, up to `within`; its exit status.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL: no cleanup runs, as when a machine or a container dies.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
