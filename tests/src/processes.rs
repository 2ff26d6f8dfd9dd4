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
    let ok = Command::new(env!("CARGO"))
        .args(["build", "--locked", "-p", package, "--bin", bin])
        .status()
        .expect("run cargo");
    assert!(ok.success(), "cargo build -p {package} --bin {bin} failed");
    // This test binary is target/<profile>/deps/<name>; the hosts sit in target/<profile>.
    let exe = std::env::current_exe().expect("the test binary's path");
    let path = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>").join(bin);
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

    fn start(binary: PathBuf, args: &[&str]) -> Self {
        let mut cmd = Command::new(binary);
        cmd.args(args).env("RUST_LOG", "warn");
        Self::serve(cmd)
    }

    /// `cmd --port P` on a free loopback port, once it accepts connections.
    pub fn serve(mut cmd: Command) -> Self {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let child = cmd
            .args(["--port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the host");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "the host never listened on {addr}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, addr }
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
