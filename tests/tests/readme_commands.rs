//! Every command line in the README's shell blocks runs as written, from the repository root,
//! so the README cannot name a command that fails: servers until they listen and answer an MCP
//! `initialize`, one-shot commands to a zero exit, the fuzzer until libFuzzer is fuzzing, the
//! 25-minute benchmark with `--help`. Servers in one block run side by side unless they share a
//! port, as an operator would start them; those sharing a store must share sessions too.
//!
//! `.ci/run` runs the test command itself (and `fuzz/run --smoke`); the `spin` lines run when a
//! Spin CLI is on `PATH` (none can be installed where CI runs; `spin_manifest.rs` runs
//! `spin build`'s commands verbatim instead).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;
use tests::http::{ACCEPT, JSON, request};
use tests::redis::RedisServer;
use tests::workspace::{Shell, readme_code_blocks, root, run_to_end};

/// How a README line is run.
#[derive(Clone, Copy, Debug)]
enum Run {
    /// A server: until it listens on `port`, then `initialize` with `Host: host` gets a session.
    Serves { port: u16, host: &'static str },
    /// To its end; it must exit 0.
    Completes,
    /// Until it prints `text`, showing the long job began; then stopped.
    Begins(&'static str),
    /// `LINE --help`: the benchmark run takes 25 minutes of release builds and measurement.
    Help,
    /// As `Serves`, with a `spin` CLI on `PATH`.
    Spin { port: u16, host: &'static str },
    /// `.ci/run` runs it.
    CiRuns,
    /// `tests/packages.rs` runs it in an empty project outside the repository, with the
    /// package it installs made there.
    InAnEmptyProject,
}

/// Every command line the README shows, and how this test runs it.
const COMMANDS: &[(&str, Run)] = &[
    ("cargo run -p host-example", Run::Serves { port: 8080, host: "127.0.0.1:8080" }),
    ("cargo test --workspace", Run::CiRuns),
    (
        "cargo run -p host-example -- --bind 0.0.0.0 --allowed-host mcp.example.com --allowed-host 10.0.0.5:8080",
        Run::Serves { port: 8080, host: "mcp.example.com" },
    ),
    (
        "RESUME_GATE_ALLOWED_HOSTS=mcp.example.com,10.0.0.5:8080 cargo run -p host-example -- --bind 0.0.0.0",
        Run::Serves { port: 8080, host: "10.0.0.5:8080" },
    ),
    (
        "cargo run -p edge-host -- --allowed-host mcp.example.com",
        Run::Serves { port: 3000, host: "mcp.example.com" },
    ),
    (
        "SPIN_VARIABLE_ALLOWED_HOSTS=mcp.example.com spin up",
        Run::Spin { port: 3000, host: "mcp.example.com" },
    ),
    ("spin build && spin up", Run::Spin { port: 3000, host: "127.0.0.1:3000" }),
    (
        "spin up --runtime-config-file runtime-config.redis.toml",
        Run::Spin { port: 3000, host: "127.0.0.1:3000" },
    ),
    ("cargo run -p edge-host", Run::Serves { port: 3000, host: "127.0.0.1:3000" }),
    ("cargo run -p edge-host -- --kv-semantics redis", Run::Serves { port: 3000, host: "127.0.0.1:3000" }),
    (
        "cargo run -p edge-host -- --store redis://127.0.0.1:6379",
        Run::Serves { port: 3000, host: "127.0.0.1:3000" },
    ),
    ("cargo run -p edge-host -- compose --out app.wasm", Run::Completes),
    ("cargo run -p edge-host -- collect-garbage --store redis://127.0.0.1:6379", Run::Completes),
    (
        "cargo run -p host-example -- --store redis://127.0.0.1:6379 --port 8080",
        Run::Serves { port: 8080, host: "127.0.0.1:8080" },
    ),
    (
        "cargo run -p host-example -- --store redis://127.0.0.1:6379 --port 8081",
        Run::Serves { port: 8081, host: "127.0.0.1:8081" },
    ),
    (
        "cargo run -p edge-host -- --store redis://127.0.0.1:6379 --port 3000",
        Run::Serves { port: 3000, host: "127.0.0.1:3000" },
    ),
    ("hosts/node/example --port 9000", Run::Serves { port: 9000, host: "127.0.0.1:9000" }),
    ("hosts/python/example --port 9001", Run::Serves { port: 9001, host: "127.0.0.1:9001" }),
    ("npm install ./resume-gate-0.1.0.tgz @modelcontextprotocol/sdk@1.32", Run::InAnEmptyProject),
    (
        "npm install ./resume-gate-0.1.0.tgz @modelcontextprotocol/server@2.4 @modelcontextprotocol/node@2.1",
        Run::InAnEmptyProject,
    ),
    ("node server.mjs", Run::InAnEmptyProject),
    ("pip install \"./resume_gate-0.1.0-py3-none-any.whl[sdk]\"", Run::InAnEmptyProject),
    ("python server.py", Run::InAnEmptyProject),
    (
        "cargo run -p resume-gate-oci -- push target/component/resume_gate.wasm 127.0.0.1:5000/resume-gate/gate:0.1.0",
        Run::Completes,
    ),
    (
        "cargo run -p resume-gate-oci -- pull 127.0.0.1:5000/resume-gate/gate:0.1.0 --out gate.wasm",
        Run::Completes,
    ),
    (
        "cargo run -p host-example -- --component gate.wasm",
        Run::Serves { port: 8080, host: "127.0.0.1:8080" },
    ),
    ("benches/run", Run::Help),
    ("fuzz/run", Run::Begins("INITED")),
    ("fuzz/run --smoke", Run::CiRuns),
    ("fuzz/run gate_ops -- -max_total_time=600", Run::Begins("INITED")),
];

/// The README's `sh` blocks, each a list of command lines (comments and blank lines dropped).
fn readme_blocks() -> Vec<Vec<String>> {
    readme_code_blocks()
        .into_iter()
        .filter(|(lang, _)| lang == "sh")
        .map(|(_, lines)| {
            lines
                .iter()
                .map(|line| line.split(" #").next().unwrap().trim().to_owned())
                .filter(|command| !command.is_empty() && !command.starts_with('#'))
                .collect()
        })
        .collect()
}

fn how(line: &str) -> Run {
    COMMANDS.iter().find(|(c, _)| *c == line).map(|(_, run)| *run).unwrap_or_else(|| {
        panic!("README.md shows `{line}`, which this test does not know how to run: add it to COMMANDS")
    })
}

#[test]
fn every_command_the_readme_shows_is_listed_here_and_every_listed_one_is_in_the_readme() {
    let shown: BTreeSet<String> = readme_blocks().into_iter().flatten().collect();
    let listed: BTreeSet<String> = COMMANDS.iter().map(|(c, _)| (*c).to_owned()).collect();
    assert_eq!(shown, listed, "README.md's commands and this test's list differ");
}

/// `initialize` through `Host: host`; the session id it mints.
fn initialize(port: u16, host: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "readme", "version": "1"}}});
    let resp = request(addr(port), "POST", &[JSON, ACCEPT, ("Host", host)], body.to_string().as_bytes());
    assert_eq!(resp.status, 200, "initialize on port {port} with Host {host}");
    resp.header("mcp-session-id").expect("a session id").to_owned()
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// A server the test started, and the port it holds.
struct Running {
    line: String,
    port: u16,
    _shell: Shell,
}

fn serve(line: &str, port: u16, host: &str) -> Running {
    // The previous holder of the port was killed a moment ago; its socket closes with it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(addr(port)).is_ok() {
        assert!(std::time::Instant::now() < deadline, "port {port} is taken before `{line}`");
        std::thread::sleep(Duration::from_millis(50));
    }
    let started = std::time::Instant::now();
    let mut shell = Shell::start(line, &root());
    shell.wait_listening(addr(port));
    initialize(port, host);
    eprintln!("ran `{line}`: listening on {port} after {:?}, initialize answered", started.elapsed());
    Running { line: line.to_owned(), port, _shell: shell }
}

/// Servers of one block over one store serve one set of sessions.
fn check_shared_sessions(running: &[Running]) {
    let shared: Vec<&Running> = running.iter().filter(|r| r.line.contains("--store redis://")).collect();
    let [first, others @ ..] = shared.as_slice() else { return };
    if others.is_empty() {
        return;
    }
    let session = initialize(first.port, &format!("127.0.0.1:{}", first.port));
    for (id, other) in others.iter().enumerate() {
        // A request id is used once per session.
        let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string();
        let host = format!("127.0.0.1:{}", other.port);
        let headers = [
            JSON,
            ACCEPT,
            ("Host", host.as_str()),
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        let resp = request(addr(other.port), "POST", &headers, ping.as_bytes());
        assert_eq!(resp.status, 200, "`{}` serves the session `{}` opened", other.line, first.line);
    }
}

fn spin_installed() -> bool {
    std::process::Command::new("spin").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Files git would show as new: what a command left that `.gitignore` does not cover.
fn untracked() -> BTreeSet<String> {
    let out = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(root())
        .output()
        .expect("run git status");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("?? "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_command_the_readme_shows_runs_as_written() {
    let blocks = readme_blocks();
    let untracked_before = untracked();
    let needs_redis = blocks.iter().flatten().any(|l| l.contains("redis://127.0.0.1:6379"));
    let _redis = needs_redis.then(|| RedisServer::start_on(6379));
    let needs_registry = blocks.iter().flatten().any(|l| l.contains("127.0.0.1:5000/"));
    let _registry = needs_registry.then(|| tests::oci_registry::Registry::start_on(5000, None));
    let spin = spin_installed();
    let mut not_run = Vec::new();
    for block in &blocks {
        let mut running: Vec<Running> = Vec::new();
        for line in block {
            match how(line) {
                Run::Serves { port, host } => {
                    running.retain(|r| r.port != port);
                    running.push(serve(line, port, host));
                }
                Run::Spin { port, host } if spin => {
                    running.retain(|r| r.port != port);
                    running.push(serve(line, port, host));
                }
                Run::Spin { .. } => not_run.push(format!("`{line}`: no spin CLI on PATH")),
                Run::Completes => {
                    run_to_end(line, &root(), &[]);
                    eprintln!("ran `{line}` to a zero exit");
                }
                Run::Begins(text) => {
                    let mut shell = Shell::start(line, &root());
                    shell.wait_printed(text, Duration::from_secs(1800));
                    eprintln!("ran `{line}` until it printed {text:?}");
                }
                Run::Help => {
                    let usage = run_to_end(&format!("{line} --help"), &root(), &[]);
                    assert!(usage.contains(line), "`{line} --help` shows how it is run:\n{usage}");
                    eprintln!("ran `{line} --help`");
                }
                Run::CiRuns => not_run.push(format!("`{line}`: .ci/run runs it")),
                Run::InAnEmptyProject => not_run.push(format!("`{line}`: tests/packages.rs runs it")),
            }
        }
        check_shared_sessions(&running);
    }
    let left: Vec<String> = untracked().difference(&untracked_before).cloned().collect();
    assert!(left.is_empty(), "the README's commands left files .gitignore does not cover: {left:?}");
    eprintln!("not run here: {not_run:#?}");
}
