//! Workload 5: `tools/call` end to end through host-example on loopback, with the gate and with
//! it bypassed (`--no-gate`: events without ids, nothing buffered), so the gate's share of a
//! request is the difference. The load generator is the tests' raw HTTP client: one TCP
//! connection per call (HTTP/1.0, as the SSE response is close-delimited), the whole SSE
//! response read until the server closes it after the result.
//!
//! The two servers run side by side and take turns, a round of calls each, so drift on a
//! shared machine hits both alike. `cargo bench --bench e2e` writes `e2e.json` for the report
//! (into `$BENCH_OUT_DIR`, default `target/bench`); `cargo test --bench e2e` makes a few calls
//! each way and checks every one got its result.

use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use resume_gate_tests::http::{Client, TestServer};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(10);

/// One `tools/call`, timed from connect to the server closing the response; checks that the
/// result arrived and whether events carried ids.
fn call(client: &Client, id: i64, tool: &str, arguments: &Value, gated: bool) -> Result<Duration> {
    let start = Instant::now();
    let mut response = client.call(id, tool, arguments.clone(), &[]);
    let frames = response.frames_until_closed(WAIT);
    let elapsed = start.elapsed();
    ensure!(response.status == 200, "{tool}: HTTP {}", response.status);
    let last = frames.last().map(|f| f.json()).unwrap_or_default();
    ensure!(last["id"] == id && last.get("result").is_some(), "{tool}: no result in {frames:?}");
    ensure!(
        frames.iter().all(|f| f.id.is_some() == gated),
        "{tool}: ids {} the gate",
        if gated { "without" } else { "with" }
    );
    Ok(elapsed)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

fn main() -> Result<()> {
    let full = std::env::args().any(|a| a == "--bench");
    let (rounds, per_round) = if full { (40, 100) } else { (2, 5) };
    let tools = [("test_simple_text", json!({})), ("countdown n=5", json!({"n": 5, "interval_ms": 0}))];
    let servers = [
        ("gate", TestServer::host_example(), true),
        ("no gate", TestServer::host_example_without_gate(), false),
    ];
    let clients: Vec<Client> = servers.iter().map(|(_, s, _)| Client::initialize(s.addr)).collect();

    let mut rows = Vec::new();
    let mut id = 1;
    for (label, arguments) in &tools {
        let tool = label.split(' ').next().unwrap();
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); servers.len()];
        let mut busy = vec![Duration::ZERO; servers.len()];
        for round in 0..=rounds {
            for (i, (_, _, gated)) in servers.iter().enumerate() {
                let started = Instant::now();
                for _ in 0..per_round {
                    let t = call(&clients[i], id, tool, arguments, *gated)?;
                    id += 1;
                    // Round 0 warms both servers up.
                    if round > 0 {
                        times[i].push(t);
                    }
                }
                if round > 0 {
                    busy[i] += started.elapsed();
                }
            }
        }
        for (i, (mode, _, _)) in servers.iter().enumerate() {
            let mut sorted = times[i].clone();
            sorted.sort();
            rows.push(json!({
                "tool": label,
                "mode": mode,
                "calls": sorted.len(),
                "p50_us": percentile(&sorted, 0.5),
                "p99_us": percentile(&sorted, 0.99),
                "calls_per_s": sorted.len() as f64 / busy[i].as_secs_f64(),
            }));
        }
    }
    let report = Value::Array(rows);
    println!("{report:#}");
    if full {
        resume_gate_tests::write_bench_result("e2e.json", &report)?;
    }
    Ok(())
}
