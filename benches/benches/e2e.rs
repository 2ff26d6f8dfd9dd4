//! Workload 5: `tools/call` end to end, as clients really connect — HTTP/1.1, connections kept
//! alive — against every server side by side in one run:
//!
//! - host-example, host-example with no gate (events without ids, nothing buffered: the
//!   difference is the gate's share of a call), edge-host (the Spin app: front + gate-kv, an
//!   instance per request), edge-host with Nagle on (Nagle's algorithm left on, as Spin may leave
//!   it: the front's own write coalescing is all that keeps a call from waiting for a delayed
//!   ACK), the TypeScript SDK's reference server with its example event store
//!   (`benches/node/ts-sdk-server.mjs`, a Node process), and the Python SDK's own server
//!   (`benches/python/py_sdk_server.py`, uvicorn; the package ships no event store).
//! - **client**: the official TypeScript client (`benches/node/ts-client-bench.mjs`, undici
//!   keeps its connection alive) makes sequential calls; p50 and p99.
//! - **load**: [`keep_alive::load_over`] with 1, 32 and 256 sessions, each on its own kept-alive
//!   connection with its own request ids, calling back to back; throughput, p50, p99.
//!
//! Every call is `countdown {n: 0}` (its result is ready at once) and must return its result.
//! Sides take turns, a round each, so drift on a shared machine hits all alike.
//! `cargo bench --bench e2e` writes `e2e.json` for the report (into `$BENCH_OUT_DIR`, default
//! `target/bench`; `-- --side NAME` and `-- --sessions N`, each repeatable, measure only those
//! sides and load levels and write nothing); `cargo test --bench e2e` runs every side and
//! workload briefly and checks every call got its result.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};
use tests::http::{Setup, Tcp, TestServer};
use tests::keep_alive::{self, percentile};
use tests::python;

const TOOL: &str = "countdown";

fn arguments() -> Value {
    json!({"n": 0})
}

/// What serves one side: a server in this process, or a child process.
enum Server {
    InProcess { _running: Box<TestServer> },
    Process { _running: benches::ChildServer },
}

struct Side {
    name: &'static str,
    addr: SocketAddr,
    _server: Server,
}

fn in_process(name: &'static str, server: TestServer) -> Side {
    Side { name, addr: server.addr, _server: Server::InProcess { _running: Box::new(server) } }
}

/// The TypeScript SDK's reference server, with its example's in-memory event store.
fn ts_sdk_server() -> Result<Side> {
    let server = benches::ts_sdk_server(&[])?;
    Ok(Side { name: "ts-sdk server", addr: server.addr, _server: Server::Process { _running: server } })
}

/// The Python SDK's own server (`benches/python/py_sdk_server.py`, uvicorn), on a free port.
fn py_sdk_server() -> Result<Side> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benches/python/py_sdk_server.py");
    let child = Command::new(python::venv_python())
        .arg(script)
        .args(["--port", &port.to_string()])
        .stdout(Stdio::null())
        .spawn()
        .context("start the Python SDK server")?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let side = Side {
        name: "py-sdk server",
        addr,
        _server: Server::Process { _running: benches::ChildServer::new(child, addr) },
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(side.addr).is_err() {
        ensure!(std::time::Instant::now() < deadline, "the Python SDK server did not start listening");
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(side)
}

/// The official TypeScript client's call times against `side`, in µs.
fn ts_client(side: &Side, calls: usize, warm_up: usize) -> Result<Vec<f64>> {
    let out = Command::new("node")
        .arg(benches::node_dir().join("ts-client-bench.mjs"))
        .args(["--url", &format!("http://{}/mcp", side.addr)])
        .args(["--calls", &calls.to_string(), "--warm-up", &warm_up.to_string()])
        .args(["--tool", TOOL, "--arguments", &arguments().to_string()])
        .stderr(Stdio::inherit())
        .output()
        .context("run the TypeScript client")?;
    if !out.status.success() {
        bail!("the TypeScript client failed against {}: {}", side.name, String::from_utf8_lossy(&out.stdout));
    }
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let times: Vec<f64> = serde_json::from_value(report["times_us"].clone())?;
    ensure!(times.len() == calls, "{}: {} of {calls} calls", side.name, times.len());
    Ok(times)
}

fn percentile_us(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

struct Plan {
    rounds: usize,
    client_calls: usize,
    client_warm_up: usize,
    levels: &'static [usize],
    warm_up: Duration,
    measure: Duration,
}

fn main() -> Result<()> {
    tests::npm_ci(&benches::node_dir());
    let full = std::env::args().any(|a| a == "--bench");
    let plan = if full {
        Plan {
            rounds: 2,
            client_calls: 300,
            client_warm_up: 50,
            levels: &[1, 32, 256],
            warm_up: Duration::from_millis(500),
            measure: Duration::from_secs(3),
        }
    } else {
        Plan {
            rounds: 1,
            client_calls: 5,
            client_warm_up: 1,
            levels: &[1, 8],
            warm_up: Duration::from_millis(50),
            measure: Duration::from_millis(200),
        }
    };
    // `-- --side NAME` (repeatable) measures only those sides, to re-check one in isolation.
    let args: Vec<String> = std::env::args().collect();
    let only: Vec<&str> = args.windows(2).filter(|w| w[0] == "--side").map(|w| w[1].as_str()).collect();
    let wanted = |name: &str| only.is_empty() || only.contains(&name);
    let levels: Vec<usize> =
        args.windows(2).filter(|w| w[0] == "--sessions").filter_map(|w| w[1].parse().ok()).collect();
    let partial = !only.is_empty() || !levels.is_empty();
    type Start = (&'static str, fn() -> Result<Side>);
    let starts: [Start; 6] = [
        ("host-example", || Ok(in_process("host-example", TestServer::host_example()))),
        ("host-example, no gate", || {
            Ok(in_process(
                "host-example, no gate",
                TestServer::host_example_over_gate(Box::new(benches::bypass::Bypass::default())),
            ))
        }),
        ("edge-host", || Ok(in_process("edge-host", TestServer::edge()))),
        ("edge-host, Nagle on", || {
            let setup = Setup { tcp: Tcp::Nagle, ..Setup::default() };
            Ok(in_process("edge-host, Nagle on", TestServer::edge_with(setup)))
        }),
        ("ts-sdk server", ts_sdk_server),
        ("py-sdk server", py_sdk_server),
    ];
    let sides = starts
        .iter()
        .filter(|(name, _)| wanted(name))
        .map(|(_, start)| start())
        .collect::<Result<Vec<_>>>()?;
    // The load generator runs on one thread of its own; each server has its own runtime.
    let load_runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;

    let mut client_times: Vec<Vec<f64>> = vec![Vec::new(); sides.len()];
    let mut loads: Vec<Vec<Vec<keep_alive::Load>>> = vec![vec![Vec::new(); plan.levels.len()]; sides.len()];
    for round in 0..plan.rounds {
        for (i, side) in sides.iter().enumerate() {
            eprintln!("round {round}: official TypeScript client against {}", side.name);
            client_times[i].extend(ts_client(side, plan.client_calls, plan.client_warm_up)?);
        }
        for (l, &sessions) in plan.levels.iter().enumerate() {
            if !levels.is_empty() && !levels.contains(&sessions) {
                continue;
            }
            for (i, side) in sides.iter().enumerate() {
                let run = load_runtime
                    .block_on(keep_alive::load_over(
                        &[side.addr],
                        sessions,
                        TOOL,
                        arguments(),
                        plan.warm_up,
                        plan.measure,
                    ))
                    .with_context(|| format!("load on {} with {sessions} sessions", side.name))?;
                eprintln!(
                    "round {round}: {} sessions against {}: {:.0} calls/s, p50 {:?}",
                    sessions,
                    side.name,
                    run.calls_per_s,
                    run.percentile(0.5)
                );
                ensure!(run.calls > 0, "{}: no call completed with {sessions} sessions", side.name);
                loads[i][l].push(run);
            }
        }
    }

    let mut client_rows = Vec::new();
    let mut load_rows = Vec::new();
    for (i, side) in sides.iter().enumerate() {
        let mut times = client_times[i].clone();
        times.sort_by(f64::total_cmp);
        client_rows.push(json!({
            "side": side.name,
            "calls": times.len(),
            "p50_us": percentile_us(&times, 0.5),
            "p99_us": percentile_us(&times, 0.99),
        }));
        for (l, &sessions) in plan.levels.iter().enumerate() {
            let runs = &loads[i][l];
            if runs.is_empty() {
                continue;
            }
            let mut latencies: Vec<Duration> =
                runs.iter().flat_map(|r| r.latencies.iter().copied()).collect();
            latencies.sort();
            let calls_per_s = runs.iter().map(|r| r.calls_per_s).sum::<f64>() / runs.len() as f64;
            load_rows.push(json!({
                "side": side.name,
                "sessions": sessions,
                "calls": latencies.len(),
                "calls_per_s": calls_per_s,
                "p50_us": percentile(&latencies, 0.5).as_secs_f64() * 1e6,
                "p99_us": percentile(&latencies, 0.99).as_secs_f64() * 1e6,
            }));
        }
    }
    let report = json!({
        "tool": format!("{TOOL} {}", arguments()),
        "load_seconds": plan.measure.as_secs_f64() * plan.rounds as f64,
        "client": client_rows,
        "load": load_rows,
    });
    println!("{report:#}");
    if full && !partial {
        benches::write_bench_result("e2e.json", &report)?;
    }
    Ok(())
}
