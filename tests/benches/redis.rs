//! Workload 7: the gate on a real Redis-protocol server (valkey-server over loopback, no
//! persistence), p50 and p99 per operation, one run:
//!
//! - `on-emit` (128 B) and a resume of k = 10 events, with 10² and 10⁴ events buffered, for the
//!   native core over Redis and the gate-kv component in wasmtime over Redis; with one host,
//!   and with two hosts working at once (each its own connection and instance, on its own
//!   thread and session: what two processes on one shard do).
//! - `tools/call` end to end (`countdown {n: 0}`, one and 32 kept-alive sessions): host-example
//!   and edge-host (the Spin app) over Redis, each beside itself without it.
//! - Keys in Redis after the end-to-end run, against the sessions still open, and after those
//!   ended.
//!
//! `cargo bench --bench redis` writes `redis.md` (into `$BENCH_OUT_DIR`, default `target/bench`)
//! for the report; `cargo test --bench redis` runs each part briefly and checks every answer.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use resume_gate::kv::KvStore;
use resume_gate::{Config, Decision, Origin, RequestId};
use resume_gate_redis::RedisKv;
use resume_gate_tests::drivers::{Driver, Native, WasmKv};
use resume_gate_tests::http::TestServer;
use resume_gate_tests::keep_alive::{self, percentile};
use resume_gate_tests::redis::RedisServer;
use serde_json::json;

struct Plan {
    samples: usize,
    buffered: &'static [usize],
    e2e: Duration,
    /// Sessions calling at once in the end-to-end table (each on its own connection).
    sessions: &'static [usize],
}

#[derive(Clone, Copy)]
enum Side {
    Native,
    Component,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Native => "native core + Redis",
            Side::Component => "gate-kv component (wasmtime) + Redis",
        }
    }

    fn driver(self, kv: RedisKv, seed: u64) -> Result<Box<dyn Driver + Send>> {
        Ok(match self {
            Side::Native => Box::new(Native::with_store(Config::default(), KvStore::new(kv, seed))),
            Side::Component => Box::new(WasmKv::new(kv)?),
        })
    }
}

/// Latencies of one operation, sorted.
struct Timings {
    emit: Vec<Duration>,
    resume: Vec<Duration>,
}

/// One host's share: a session with a request stream holding `buffered` events, then
/// `samples` emits and `samples` resumes of the last ten events.
fn one_host(side: Side, kv: RedisKv, seed: u64, buffered: usize, samples: usize) -> Result<Timings> {
    let mut d = side.driver(kv, seed)?;
    let config = Config { max_events_per_stream: buffered as u32, ..Config::default() };
    d.configure(&config)?.map_err(|e| anyhow::anyhow!("configure: {e:?}"))?;
    let session = format!("bench-{seed}");
    d.open_session(&session)?.map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let opened = d
        .open_stream(&session, &Origin::Request(RequestId::Number(1)))?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let data = "x".repeat(128);
    let mut ids = Vec::with_capacity(buffered);
    for _ in 0..buffered {
        ids.push(d.emit(&session, opened.stream, &data)?.map_err(|e| anyhow::anyhow!("{e:?}"))?.id);
    }
    let mut emit = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        let event = d.emit(&session, opened.stream, &data)?.map_err(|e| anyhow::anyhow!("{e:?}"))?;
        emit.push(t.elapsed());
        ids.push(event.id);
    }
    let cursor = ids[ids.len() - 11].clone();
    let mut resume = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        let decision = d.reconnect(&session, cursor.as_bytes(), &Origin::Standalone)?;
        resume.push(t.elapsed());
        match decision {
            Ok(Decision::Resume(r)) => ensure!(r.events.len() == 10, "resumed {} events", r.events.len()),
            other => anyhow::bail!("expected a resume of 10 events: {other:?}"),
        }
    }
    d.end_session(&session)?.map_err(|e| anyhow::anyhow!("{e:?}"))?;
    emit.sort();
    resume.sort();
    Ok(Timings { emit, resume })
}

/// `hosts` hosts at once, each on its own thread with its own connection.
fn hosts_at_once(
    side: Side,
    server: &RedisServer,
    hosts: usize,
    buffered: usize,
    samples: usize,
) -> Result<Timings> {
    let handles: Vec<_> = (0..hosts)
        .map(|h| {
            let kv = RedisKv::connect(&server.url()).map_err(|e| anyhow::anyhow!(e.0));
            std::thread::spawn(move || one_host(side, kv?, 11 + h as u64, buffered, samples))
        })
        .collect();
    let mut all = Timings { emit: Vec::new(), resume: Vec::new() };
    for h in handles {
        let t = h.join().map_err(|_| anyhow::anyhow!("a host thread panicked"))??;
        all.emit.extend(t.emit);
        all.resume.extend(t.resume);
    }
    all.emit.sort();
    all.resume.sort();
    Ok(all)
}

/// Keys and bytes (key plus value, as stored) by kind of record, for the capacity notes.
fn key_classes(kv: &RedisKv, keys: &[String]) -> Result<String> {
    use resume_gate::kv::Kv;
    let kinds = [
        ("rg/s/", "session record"),
        ("rg/n/", "session's stream counter"),
        ("rg/p/", "session's admission-queue slot"),
        ("rg/q/", "admission queue entry (and its two ends)"),
        ("rg/t/", "stream record"),
        ("rg/r/", "request-id claim"),
        ("rg/e/", "event data"),
        ("rg/sessions", "session count"),
        ("journal/", "the `append` tool's journal (the app's, not the gate's)"),
    ];
    let mut kv = kv.clone();
    let mut out = String::from(
        "\nWhat Redis holds with 10 sessions open, each after one `append` and one `countdown {n: 3}`:\n",
    );
    out.push_str("\n| key | what | keys | bytes (key + value), mean |\n| --- | --- | ---: | ---: |\n");
    for (prefix, what) in kinds {
        let mine: Vec<&String> = keys.iter().filter(|k| k.starts_with(prefix)).collect();
        let mut bytes = 0;
        for key in &mine {
            bytes += key.len() + kv.get(key).map_err(|e| anyhow::anyhow!(e.0))?.map_or(0, |v| v.len());
        }
        let mean = if mine.is_empty() { 0 } else { bytes / mine.len() };
        out.push_str(&format!("| `{prefix}…` | {what} | {} | {mean} |\n", mine.len()));
    }
    Ok(out)
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 1000.0 { format!("{:.2} ms", us / 1000.0) } else { format!("{us:.0} µs") }
}

fn p50_p99(sorted: &[Duration]) -> String {
    format!("{} / {}", fmt(percentile(sorted, 0.5)), fmt(percentile(sorted, 0.99)))
}

fn main() -> Result<()> {
    let full = std::env::args().any(|a| a == "--bench");
    let plan = if full {
        Plan { samples: 300, buffered: &[100, 10_000], e2e: Duration::from_secs(3), sessions: &[1, 32] }
    } else {
        Plan { samples: 3, buffered: &[100], e2e: Duration::from_millis(200), sessions: &[1, 4] }
    };
    let server = RedisServer::start_in_memory();
    let mut md = String::from("### 7. On Redis\n\n");
    md.push_str(&format!(
        "valkey-server over loopback (no persistence), 128 B events, {} samples per cell per host; \
         p50 / p99. Two hosts: two threads, each with its own connection, instance and session, \
         at once.\n\n",
        plan.samples
    ));
    md.push_str("| side | buffered | hosts | `on-emit` p50 / p99 | resume k = 10 p50 / p99 |\n");
    md.push_str("| --- | ---: | ---: | ---: | ---: |\n");
    for side in [Side::Native, Side::Component] {
        for &buffered in plan.buffered {
            for hosts in [1, 2] {
                eprintln!("{} at {buffered} buffered, {hosts} host(s)", side.name());
                let t = hosts_at_once(side, &server, hosts, buffered, plan.samples)?;
                md.push_str(&format!(
                    "| {} | {buffered} | {hosts} | {} | {} |\n",
                    side.name(),
                    p50_p99(&t.emit),
                    p50_p99(&t.resume)
                ));
            }
        }
    }

    // End to end, connections kept alive: the Spin app over Redis and over its own map.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    md.push_str(
        "\n`tools/call` end to end (`countdown {n: 0}`), each server over Redis beside itself without \
         it: one session calling back to back, and 32 at once, each on its own kept-alive \
         connection:\n\n",
    );
    md.push_str("| server | sessions | calls/s | p50 | p99 |\n| --- | ---: | ---: | ---: | ---: |\n");
    let prefix = resume_gate_tests::redis::fresh_prefix();
    let keys_kv = server.kv(&prefix);
    for (name, srv) in [
        ("host-example `--store` (Redis)", TestServer::host_example_over(server.kv(&prefix))),
        ("host-example (state in its instance)", TestServer::host_example()),
        ("edge-host `--store` (Redis)", TestServer::edge_over(server.kv(&prefix))),
        ("edge-host (in-process map)", TestServer::edge()),
    ] {
        for sessions in plan.sessions {
            let load = runtime
                .block_on(keep_alive::load(
                    srv.addr,
                    *sessions,
                    "countdown",
                    json!({"n": 0}),
                    plan.e2e / 5,
                    plan.e2e,
                ))
                .with_context(|| name.to_owned())?;
            ensure!(load.calls > 0, "{name}: no call finished");
            md.push_str(&format!(
                "| {name} | {sessions} | {:.0} | {} | {} |\n",
                load.calls_per_s,
                fmt(load.percentile(0.5)),
                fmt(load.percentile(0.99))
            ));
        }
    }
    // Keys left: the load above opened and closed its session; open a few more and end them.
    let during = {
        let srv = TestServer::edge_over(server.kv(&prefix));
        let sessions = runtime.block_on(async {
            let mut open = Vec::new();
            for _ in 0..10 {
                let mut s = keep_alive::Session::open(srv.addr).await?;
                s.call("append", json!({"text": "x"})).await?;
                s.call("countdown", json!({"n": 3})).await?;
                open.push(s);
            }
            anyhow::Ok(open)
        })?;
        let during = keys_kv.keys().map_err(|e| anyhow::anyhow!(e.0))?;
        md.push_str(&key_classes(&keys_kv, &during)?);
        let during = during.len();
        runtime.block_on(async {
            for s in sessions {
                s.close().await?;
            }
            anyhow::Ok(())
        })?;
        during
    };
    let after: Vec<String> = keys_kv.keys().map_err(|e| anyhow::anyhow!(e.0))?;
    let (journal, gate): (Vec<&String>, Vec<&String>) = after.iter().partition(|k| k.starts_with("journal/"));
    ensure!(gate.len() <= 3, "the gate left keys behind its sessions: {gate:?}");
    md.push_str(&format!(
        "\n{during} keys in all; after those sessions ended: {} of the `append` journal (kept on \
         purpose) and {} of the gate ({}): its global counters.\n",
        journal.len(),
        gate.len(),
        gate.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
    ));
    if full {
        resume_gate_tests::write_bench_result_text("redis.md", &md)?;
    }
    println!("{md}");
    Ok(())
}
