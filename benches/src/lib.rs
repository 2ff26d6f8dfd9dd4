//! What the benchmarks share: the host with no gate they measure the gate's share against
//! ([`bypass`]), and where a bench binary leaves its result for `benches/run`'s report.
//!
//! # Layout
//!
//! - `benches/gate.rs` (criterion): each operation on every side — the native core, the
//!   component in wasmtime, either over the key-value store;
//! - `benches/memory.rs`, `benches/e2e.rs`, `benches/redis.rs`: bench binaries (memory per
//!   session; end to end as clients connect, beside the official SDKs; on a real Redis);
//! - `src/bin/report/`: the report writer, the last step of `benches/run`;
//! - `node/`, `python/`: the official SDKs' servers and clients the end-to-end bench runs.

pub mod bypass;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use anyhow::{Context, ensure};

/// `benches/node`: the official TypeScript SDK's server and client, installed by `npm ci`.
pub fn node_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("node")
}

/// A server in a child process, killed when dropped.
pub struct ChildServer {
    child: Child,
    pub addr: SocketAddr,
}

impl ChildServer {
    pub fn new(child: Child, addr: SocketAddr) -> Self {
        Self { child, addr }
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The TypeScript SDK's reference server (`node/ts-sdk-server.mjs`) with `args`, on a port it
/// picks.
pub fn ts_sdk_server(args: &[&str]) -> anyhow::Result<ChildServer> {
    let dir = node_dir();
    ensure!(
        dir.join("node_modules/@modelcontextprotocol/sdk").exists(),
        "run `npm ci --prefix benches/node` first (benches/run and .ci/run do)"
    );
    let mut child = Command::new("node")
        .arg(dir.join("ts-sdk-server.mjs"))
        .args(["--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .context("start node")?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("stdout")?).read_line(&mut line)?;
    let port = line.trim().strip_prefix("listening ").and_then(|p| p.parse().ok());
    let server = ChildServer::new(child, SocketAddr::from(([127, 0, 0, 1], port.unwrap_or(0))));
    ensure!(port.is_some(), "the TypeScript SDK server did not start: {line:?}");
    Ok(server)
}

/// Writes a bench binary's result as `name` into `$BENCH_OUT_DIR` (default `target/bench`),
/// where `benches/run` hands it to the report.
pub fn write_bench_result(name: &str, result: &serde_json::Value) -> anyhow::Result<()> {
    write_bench_result_text(name, &result.to_string())
}

/// Writes a bench binary's text result (a markdown section) like [`write_bench_result`].
pub fn write_bench_result_text(name: &str, text: &str) -> anyhow::Result<()> {
    let dir = std::env::var_os("BENCH_OUT_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench"));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(name), text)?;
    Ok(())
}
