//! Workload 7: the gate on a real Redis-protocol server (valkey-server over loopback, no
//! persistence), p50 and p99 per operation, one run:
//!
//! - `on-emit` (128 B) and a resume of k = 10 events, with 10² and 10⁴ events buffered, for the
//!   native core over Redis and the gate-kv component in wasmtime over Redis; with one host,
//!   and with two host processes working at once (each its own connection, instance and
//!   session: the second is this binary again, started with `RESUME_GATE_BENCH_PEER`).
//! - `tools/call` end to end (`countdown {n: 0}`, one and 32 kept-alive sessions): host-example
//!   and edge-host (the Spin app) over Redis, each beside itself without it.
//! - Store commands (counted by Redis: `INFO commandstats`) and round trips (counted by the
//!   gate's client) per `tools/call`, per `on-emit` and per resume of k events; beside them the
//!   TypeScript SDK server with an event store over Redis Streams
//!   (`benches/node/redis-streams-event-store.mjs`, what an SDK user would write).
//! - `tools/call` from 1, 32 and 256 sessions spread over two host-example processes sharing one
//!   Redis, and sharing a Redis Cluster of three masters, beside one host-example keeping its
//!   state in its instance and the TypeScript SDK server (in memory, and over Redis Streams).
//! - Keys in Redis after the end-to-end run, against the sessions still open, and after those
//!   ended.
//!
//! `cargo bench --bench redis` writes `redis.md` (into `$BENCH_OUT_DIR`, default `target/bench`)
//! for the report; `cargo test --bench redis` runs each part briefly and checks every answer.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use resume_gate::kv::KvStore;
use resume_gate::{Config, Decision, Origin, RequestId};
use resume_gate_redis::RedisKv;
use serde_json::json;
use tests::drivers::{Driver, InProcess, WasmKv};
use tests::http::TestServer;
use tests::keep_alive::{self, percentile};
use tests::processes::ServerProcess;
use tests::redis::RedisServer;
use tests::redis_cluster::RedisCluster;

struct Plan {
    samples: usize,
    buffered: &'static [usize],
    e2e: Duration,
    /// Sessions calling at once in the end-to-end table (each on its own connection).
    sessions: &'static [usize],
    /// How many of each operation the command counts average over.
    counted_calls: usize,
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
            Side::Native => Box::new(
                InProcess::with_store(Config::default(), KvStore::new(kv, seed)).expect("the default bounds"),
            ),
            Side::Component => Box::new(WasmKv::new(kv)?),
        })
    }
}

/// Latencies of one operation, sorted.
struct Timings {
    emit: Vec<Duration>,
    resume: Vec<Duration>,
}

/// One host's session: a request stream holding `buffered` events, ready to measure.
struct Host {
    d: Box<dyn Driver + Send>,
    session: String,
    stream: u64,
    data: String,
    ids: Vec<String>,
}

fn prepare(side: Side, kv: RedisKv, seed: u64, buffered: usize) -> Result<Host> {
    let mut d = side.driver(kv, seed)?;
    let config = Config { max_events_per_stream: buffered as u32, ..Config::default() };
    d.configure(&config).context("configure")?;
    let session = format!("bench-{seed}");
    d.open_session(&session)?;
    let opened = d.open_stream(&session, &Origin::Request(RequestId::Number(1)))?;
    let data = "x".repeat(128);
    let mut ids = Vec::with_capacity(buffered);
    for _ in 0..buffered {
        ids.push(d.emit(&session, opened.stream, &data)?.id);
    }
    Ok(Host { d, session, stream: opened.stream, data, ids })
}

/// `samples` emits, then `samples` resumes of the last ten events; ends the session.
fn measure(mut h: Host, samples: usize) -> Result<Timings> {
    let mut emit = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        let event = h.d.emit(&h.session, h.stream, &h.data)?;
        emit.push(t.elapsed());
        h.ids.push(event.id);
    }
    let cursor = h.ids[h.ids.len() - 11].clone();
    let mut resume = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        let decision = h.d.reconnect(&h.session, cursor.as_bytes(), &Origin::Standalone);
        resume.push(t.elapsed());
        match decision {
            Ok(Decision::Resume(r)) => ensure!(r.events.len() == 10, "resumed {} events", r.events.len()),
            other => anyhow::bail!("expected a resume of 10 events: {other:?}"),
        }
    }
    h.d.end_session(&h.session)?;
    emit.sort();
    resume.sort();
    Ok(Timings { emit, resume })
}

/// Set in the environment of the second host process: `side buffered samples seed url`.
const PEER: &str = "RESUME_GATE_BENCH_PEER";

/// The second host, in a process of its own (this binary again): prepares, says `ready`,
/// measures on `go` and prints its latencies in nanoseconds, one line per operation.
fn peer(spec: &str) -> Result<()> {
    use std::io::{BufRead, Write};
    let [side, buffered, samples, seed, url] = spec.split(' ').collect::<Vec<_>>()[..] else {
        anyhow::bail!("{PEER}: expected `side buffered samples seed url`, got {spec:?}");
    };
    let side = if side == "native" { Side::Native } else { Side::Component };
    let kv = RedisKv::connect(url).map_err(|e| anyhow::anyhow!(e.0))?;
    let host = prepare(side, kv, seed.parse()?, buffered.parse()?)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    std::io::stdin().lock().read_line(&mut String::new())?;
    let t = measure(host, samples.parse()?)?;
    for op in [&t.emit, &t.resume] {
        let ns: Vec<String> = op.iter().map(|d| d.as_nanos().to_string()).collect();
        writeln!(out, "{}", ns.join(" "))?;
    }
    Ok(())
}

/// One host in this process, and with `two_processes` a second in a process of its own, each
/// with its own connection, instance and session, measuring at once.
fn hosts_at_once(
    side: Side,
    server: &RedisServer,
    two_processes: bool,
    buffered: usize,
    samples: usize,
) -> Result<Timings> {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let kv = RedisKv::connect(&server.url()).map_err(|e| anyhow::anyhow!(e.0))?;
    let mine = prepare(side, kv, 11, buffered)?;
    if !two_processes {
        return measure(mine, samples);
    }
    let name = match side {
        Side::Native => "native",
        Side::Component => "component",
    };
    let mut child = Command::new(std::env::current_exe()?)
        .env(PEER, format!("{name} {buffered} {samples} 12 {}", server.url()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("starting the second host process")?;
    let mut from_peer = BufReader::new(child.stdout.take().context("peer stdout")?);
    let mut line = String::new();
    from_peer.read_line(&mut line)?;
    ensure!(line.trim() == "ready", "the second host did not get ready: {line:?}");
    writeln!(child.stdin.take().context("peer stdin")?, "go")?;
    let mut all = measure(mine, samples)?;
    for op in [&mut all.emit, &mut all.resume] {
        line.clear();
        from_peer.read_line(&mut line)?;
        for ns in line.split_whitespace() {
            op.push(Duration::from_nanos(ns.parse()?));
        }
        op.sort();
    }
    ensure!(child.wait()?.success(), "the second host process failed");
    ensure!(all.emit.len() == 2 * samples, "the second host sent {} emit timings", all.emit.len() - samples);
    Ok(all)
}

/// Keys and bytes (key plus value, as stored) by kind of record, for the capacity notes.
fn key_classes(kv: &RedisKv, keys: &[String]) -> Result<String> {
    use resume_gate::kv::Kv;
    use resume_gate::kv::{KeyKind, parse_key};
    type Class = (&'static str, &'static str, fn(&str) -> bool);
    let kinds: [Class; 9] = [
        ("rg/{session}/s", "session record", |k| matches!(parse_key(k), Some((_, KeyKind::Session)))),
        ("rg/{session}/n", "session's stream counter", |k| {
            matches!(parse_key(k), Some((_, KeyKind::StreamCounter)))
        }),
        ("rg/{session}/p", "session's admission-queue slot", |k| {
            matches!(parse_key(k), Some((_, KeyKind::QueueSlot)))
        }),
        ("rg/q/…", "admission queue entry (and its two ends)", |k| k.starts_with("rg/q/")),
        ("rg/{session}/t/…", "stream record", |k| matches!(parse_key(k), Some((_, KeyKind::Stream(_))))),
        ("rg/{session}/r/…", "request-id claim", |k| matches!(parse_key(k), Some((_, KeyKind::Claim)))),
        ("rg/{session}/e/…", "event data", |k| matches!(parse_key(k), Some((_, KeyKind::Event(_))))),
        ("rg/sessions", "session count", |k| k == "rg/sessions"),
        ("journal/…", "the `append` tool's journal (the app's, not the gate's)", |k| {
            k.starts_with("journal/")
        }),
    ];
    let mut kv = kv.clone();
    let mut out = String::from(
        "\nWhat Redis holds with 10 sessions open, each after one `append` and one `countdown {n: 3}`:\n",
    );
    out.push_str("\n| key | what | keys | bytes (key + value), mean |\n| --- | --- | ---: | ---: |\n");
    for (pattern, what, is) in kinds {
        let mine: Vec<&String> = keys.iter().filter(|k| is(k)).collect();
        let mut bytes = 0;
        for key in &mine {
            bytes += key.len() + kv.get(key).map_err(|e| anyhow::anyhow!(e.0))?.map_or(0, |v| v.len());
        }
        let mean = if mine.is_empty() { 0 } else { bytes / mine.len() };
        out.push_str(&format!("| `{pattern}` | {what} | {} | {mean} |\n", mine.len()));
    }
    Ok(out)
}

/// What one operation cost the store, averaged over the times it ran.
struct Cost {
    commands: f64,
    /// Round trips the gate's client made (`None`: not counted, another client).
    round_trips: Option<f64>,
    /// The commands, most frequent first.
    by_command: String,
}

/// Runs `op` `times` times and counts what every server of `servers` ran meanwhile, and the
/// round trips `kv` (if given) made.
fn cost_of(
    servers: &[&RedisServer],
    kv: Option<&RedisKv>,
    times: usize,
    mut op: impl FnMut() -> Result<()>,
) -> Result<Cost> {
    for s in servers {
        s.reset_command_counts();
    }
    let trips = kv.map(RedisKv::calls);
    for _ in 0..times {
        op()?;
    }
    let trips = kv.zip(trips).map(|(kv, before)| (kv.calls() - before) as f64 / times as f64);
    let mut counts: Vec<(String, u64)> = Vec::new();
    for s in servers {
        for (name, n) in s.command_counts() {
            match counts.iter_mut().find(|(c, _)| *c == name) {
                Some((_, sum)) => *sum += n,
                None => counts.push((name, n)),
            }
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let total: u64 = counts.iter().map(|(_, n)| n).sum();
    let per = |n: u64| n as f64 / times as f64;
    let by_command =
        counts.iter().map(|(name, n)| format!("{:.1} `{name}`", per(*n))).collect::<Vec<_>>().join(", ");
    Ok(Cost { commands: per(total), round_trips: trips, by_command })
}

fn cost_row(what: &str, c: &Cost) -> String {
    let trips = c.round_trips.map_or("—".to_owned(), |t| format!("{t:.1}"));
    format!("| {what} | {:.1} | {trips} | {} |\n", c.commands, c.by_command)
}

/// Store commands per operation: `tools/call` through each server, and the gate's own
/// operations through the native core.
fn costs(
    server: &RedisServer,
    cluster: &RedisCluster,
    runtime: &tokio::runtime::Runtime,
    calls: usize,
) -> Result<String> {
    let mut md = String::from(
        "\nStore commands per operation, counted by the store (`INFO commandstats`, summed over \
         every master of the cluster), and round trips counted by the gate's client; a \
         `tools/call` is `countdown {n: 0}` on a session already open:\n\n\
         | operation | commands | round trips | commands by name |\n| --- | ---: | ---: | --- |\n",
    );
    let call = |addr: SocketAddr, servers: &[&RedisServer], kv: Option<&RedisKv>| -> Result<Cost> {
        let mut session = runtime.block_on(keep_alive::Session::open(addr))?;
        runtime.block_on(session.call("countdown", json!({"n": 0})))?;
        let cost = cost_of(servers, kv, calls, || {
            runtime.block_on(session.call("countdown", json!({"n": 0}))).map(drop)
        })?;
        runtime.block_on(session.close())?;
        Ok(cost)
    };
    let kv = server.kv(&tests::redis::fresh_prefix());
    let host = TestServer::host_example_over(kv.clone());
    md.push_str(&cost_row("`tools/call`, host-example `--store`", &call(host.addr, &[server], Some(&kv))?));
    drop(host);
    let edge = TestServer::edge_over(kv.clone());
    md.push_str(&cost_row(
        "`tools/call`, edge-host `--store` (the Spin app)",
        &call(edge.addr, &[server], Some(&kv))?,
    ));
    drop(edge);
    let masters: Vec<&RedisServer> = cluster.nodes().iter().collect();
    let ckv = RedisKv::connect(&cluster.url())
        .map_err(|e| anyhow::anyhow!(e.0))?
        .with_prefix(&tests::redis::fresh_prefix());
    let host = TestServer::host_example_over(ckv.clone());
    md.push_str(&cost_row(
        "`tools/call`, host-example `--store redis+cluster://`",
        &call(host.addr, &masters, Some(&ckv))?,
    ));
    drop(host);
    let ts = benches::ts_sdk_server(&["--event-store", &server.url()])?;
    md.push_str(&cost_row(
        "`tools/call`, TypeScript SDK server, events in Redis Streams",
        &call(ts.addr, &[server], None)?,
    ));
    drop(ts);

    let mut h = prepare(Side::Native, kv.clone(), 21, 200)?;
    md.push_str(&cost_row(
        "`on-emit` (native core)",
        &cost_of(&[server], Some(&kv), calls, || {
            h.ids.push(h.d.emit(&h.session, h.stream, &h.data)?.id);
            Ok(())
        })?,
    ));
    for k in [10, 100] {
        let ids = h.ids.clone();
        let cursor = ids[ids.len() - 1 - k].clone();
        let resumed = cost_of(&[server], Some(&kv), calls, || {
            match h.d.reconnect(&h.session, cursor.as_bytes(), &Origin::Standalone) {
                Ok(Decision::Resume(r)) if r.events.len() == k => Ok(()),
                other => anyhow::bail!("expected a resume of {k} events: {other:?}"),
            }
        })?;
        md.push_str(&cost_row(&format!("resume of k = {k} (native core)"), &resumed));
    }
    h.d.end_session(&h.session)?;
    Ok(md)
}

/// What serves a row of the end-to-end table.
enum Running {
    InProcess(TestServer),
    TwoProcesses([ServerProcess; 2]),
    Child(benches::ChildServer),
}

impl Running {
    fn addrs(&self) -> Vec<SocketAddr> {
        match self {
            Running::InProcess(s) => vec![s.addr],
            Running::TwoProcesses(two) => two.iter().map(|p| p.addr).collect(),
            Running::Child(server) => vec![server.addr],
        }
    }
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 1000.0 { format!("{:.2} ms", us / 1000.0) } else { format!("{us:.0} µs") }
}

fn p50_p99(sorted: &[Duration]) -> String {
    format!("{} / {}", fmt(percentile(sorted, 0.5)), fmt(percentile(sorted, 0.99)))
}

fn main() -> Result<()> {
    if let Ok(spec) = std::env::var(PEER) {
        return peer(&spec);
    }
    let full = std::env::args().any(|a| a == "--bench");
    let plan = if full {
        Plan {
            samples: 300,
            buffered: &[100, 10_000],
            e2e: Duration::from_secs(3),
            sessions: &[1, 32, 256],
            counted_calls: 200,
        }
    } else {
        Plan {
            samples: 3,
            buffered: &[100],
            e2e: Duration::from_millis(200),
            sessions: &[1, 4],
            counted_calls: 5,
        }
    };
    let server = RedisServer::start_in_memory();
    let mut md = String::from("### 7. On Redis\n\n");
    md.push_str(&format!(
        "valkey-server over loopback (no persistence), 128 B events, {} samples per cell per host; \
         p50 / p99. Two hosts: two processes, each with its own connection, instance and session, \
         measuring at once.\n\n",
        plan.samples
    ));
    md.push_str("| side | buffered | hosts | `on-emit` p50 / p99 | resume k = 10 p50 / p99 |\n");
    md.push_str("| --- | ---: | ---: | ---: | ---: |\n");
    for side in [Side::Native, Side::Component] {
        for &buffered in plan.buffered {
            for hosts in [1, 2] {
                eprintln!("{} at {buffered} buffered, {hosts} host process(es)", side.name());
                let t = hosts_at_once(side, &server, hosts == 2, buffered, plan.samples)?;
                md.push_str(&format!(
                    "| {} | {buffered} | {hosts} | {} | {} |\n",
                    side.name(),
                    p50_p99(&t.emit),
                    p50_p99(&t.resume)
                ));
            }
        }
    }

    // End to end, connections kept alive: every server over Redis beside itself without it.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let cluster = RedisCluster::start();
    md.push_str(&costs(&server, &cluster, &runtime, plan.counted_calls)?);
    md.push_str(
        "\n`tools/call` end to end (`countdown {n: 0}`), each server over Redis beside itself without \
         it; sessions call at once, each on its own kept-alive connection, spread evenly over the \
         processes of a row:\n\n",
    );
    md.push_str("| server | sessions | calls/s | p50 | p99 |\n| --- | ---: | ---: | ---: | ---: |\n");
    let prefix = tests::redis::fresh_prefix();
    let keys_kv = server.kv(&prefix);
    let processes = |url: &str| {
        let p = tests::redis::fresh_prefix();
        let args = ["--store", url, "--store-prefix", &p];
        Running::TwoProcesses([ServerProcess::host_example(&args), ServerProcess::host_example(&args)])
    };
    let sides = [
        ("host-example (state in its instance)", Running::InProcess(TestServer::host_example())),
        (
            "host-example `--store` (Redis)",
            Running::InProcess(TestServer::host_example_over(server.kv(&prefix))),
        ),
        ("two host-example processes `--store` (Redis)", processes(&server.url())),
        ("two host-example processes `--store` (3-master cluster)", processes(&cluster.url())),
        ("edge-host `--store` (Redis)", Running::InProcess(TestServer::edge_over(server.kv(&prefix)))),
        ("edge-host (in-process map)", Running::InProcess(TestServer::edge())),
        ("TypeScript SDK server (in memory)", Running::Child(benches::ts_sdk_server(&[])?)),
        (
            "TypeScript SDK server, events in Redis Streams",
            Running::Child(benches::ts_sdk_server(&["--event-store", &server.url()])?),
        ),
    ];
    for (name, running) in &sides {
        let addrs = running.addrs();
        for sessions in plan.sessions {
            let load = runtime
                .block_on(keep_alive::load_over(
                    &addrs,
                    *sessions,
                    "countdown",
                    json!({"n": 0}),
                    plan.e2e / 5,
                    plan.e2e,
                ))
                .with_context(|| (*name).to_owned())?;
            ensure!(load.calls > 0, "{name}: no call finished");
            md.push_str(&format!(
                "| {name} | {sessions} | {:.0} | {} | {} |\n",
                load.calls_per_s,
                fmt(load.percentile(0.5)),
                fmt(load.percentile(0.99))
            ));
        }
    }
    drop(sides);
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
    let behind: Vec<&&String> = gate.iter().filter(|k| !resume_gate::kv::outlives_sessions(k)).collect();
    ensure!(behind.is_empty(), "the gate left keys behind its sessions: {behind:?}");
    md.push_str(&format!(
        "\n{during} keys in all; after those sessions ended: {} of the `append` journal (kept on \
         purpose) and {} of the gate ({}): its global counters.\n",
        journal.len(),
        gate.len(),
        gate.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
    ));
    if full {
        benches::write_bench_result_text("redis.md", &md)?;
    }
    println!("{md}");
    Ok(())
}
