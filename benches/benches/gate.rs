//! The gate's hot path, side by side in one run: the native core (the limit), the component in
//! wasmtime over its memory store, the native core over the key-value store, and the gate-kv
//! component over wasmtime's draft2 key-value host; then what a per-request host pays to get an
//! instance of either component. Workloads 1–4 of BENCHMARKS.md.
//!
//! `benches/run` measures everything and writes BENCHMARKS.md; `cargo test --bench gate` runs
//! every benchmark once (criterion's test mode) so they keep compiling and measuring the right
//! path: each checks the decision it times.

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use gate_host::kv_world::{self, KvWorld};
use gate_host::memory::{self, MemoryWorld};
use gate_host::supervised::DEFAULT_MEMORY_LIMIT;
use resume_gate::kv::{KvStore, MemoryKv};
use resume_gate::{Config, Decision, Origin, RequestId, StaleReason};
use tests::drivers::{Driver, GateApi, InProcess, Wasm, WasmKv};
use wasmtime::{Engine, InstanceAllocationStrategy, PoolingAllocationConfig};
use wasmtime_wasi::WasiCtxBuilder;

const SESSION: &str = "bench-session";
const PAYLOADS: [usize; 2] = [128, 4096];

const SIDES: [&str; 4] = ["native", "component", "native+kv", "component+kv"];

/// Whether `side` keeps its state in the key-value store.
fn over_kv(side: &str) -> bool {
    side.ends_with("+kv")
}

/// A fresh gate of `side`, configured with `config`. Benchmarks build theirs on first use, so
/// a filtered run (`cargo bench --bench gate -- NAME`, e.g. under a profiler) sets up only
/// what it measures.
fn new_gate(side: &str, config: &Config) -> Box<dyn Driver> {
    match side {
        "native" => Box::new(InProcess::with_config(config.clone()).expect("valid config")),
        "component" => {
            let mut wasm = Wasm::new().expect("instantiate the component");
            wasm.configure(config).expect("configure the component");
            Box::new(wasm)
        }
        "native+kv" => Box::new(
            InProcess::with_store(config.clone(), KvStore::new(MemoryKv::new(), 7)).expect("valid config"),
        ),
        "component+kv" => {
            let mut wasm = WasmKv::new(MemoryKv::new()).expect("instantiate gate-kv");
            wasm.configure(config).expect("configure gate-kv");
            Box::new(wasm)
        }
        other => unreachable!("no side {other}"),
    }
}

/// Per-stream bounds that hold `events` events of `payload` bytes (plus their ids).
fn holding(events: usize, payload: usize) -> Config {
    let events = events.max(1024);
    Config {
        max_events_per_stream: events as u32,
        max_bytes_per_stream: ((events * (payload + 64)) as u64).max(1 << 20),
        ..Config::default()
    }
}

/// A request stream of `session` holding `buffered` events, detached: (stream, the id of the
/// event `k` before the end).
fn filled(
    gate: &mut dyn Driver,
    session: &str,
    id: i64,
    buffered: usize,
    data: &str,
    k: usize,
) -> (u64, String) {
    let opened = gate.open_stream(session, &Origin::Request(RequestId::Number(id))).unwrap();
    let mut cursor = opened.priming.id.clone();
    for i in 0..buffered {
        let event = gate.emit(session, opened.stream, data).unwrap();
        if i + k + 1 == buffered {
            cursor = event.id;
        }
    }
    gate.detach(session, opened.stream, opened.attachment).unwrap();
    (opened.stream, cursor)
}

/// Workload 1: `on-emit` on one stream, and round-robin over 1 000 streams in 100 sessions.
fn emit(c: &mut Criterion) {
    for payload in PAYLOADS {
        let data = "x".repeat(payload);
        let mut group = c.benchmark_group(format!("emit/one stream/{payload} B"));
        group.throughput(Throughput::Elements(1));
        for side in SIDES {
            let mut scene = None;
            group.bench_function(side, |b| {
                let (gate, stream) = scene.get_or_insert_with(|| {
                    let mut gate = new_gate(side, &holding(1024, payload));
                    gate.open_session(SESSION).unwrap();
                    let (stream, _) = filled(gate.as_mut(), SESSION, 1, 0, &data, 0);
                    (gate, stream)
                });
                b.iter(|| gate.emit(SESSION, *stream, &data).unwrap())
            });
        }
        group.finish();

        let mut group = c.benchmark_group(format!("emit/1000 streams in 100 sessions/{payload} B"));
        group.throughput(Throughput::Elements(1));
        for side in SIDES {
            let mut scene = None;
            let mut next = 0;
            group.bench_function(side, |b| {
                let (gate, streams) = scene.get_or_insert_with(|| {
                    let mut gate = new_gate(side, &holding(1024, payload));
                    let mut streams = Vec::new();
                    for s in 0..100 {
                        let session = format!("bench-session-{s}");
                        gate.open_session(&session).unwrap();
                        for r in 0..10 {
                            streams
                                .push((session.clone(), filled(gate.as_mut(), &session, r, 0, &data, 0).0));
                        }
                    }
                    (gate, streams)
                });
                b.iter(|| {
                    let (session, stream) = &streams[next % streams.len()];
                    next += 1;
                    gate.emit(session, *stream, &data).unwrap()
                })
            });
        }
        group.finish();
    }
}

/// The gate's work for one `tools/call` whose result is ready at once, as host-example does it:
/// open the request's stream, record the result as its terminal event, detach when the
/// response ends.
fn one_call(gate: &mut dyn Driver, id: i64) {
    let result = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}]}}"#;
    let opened = gate.open_stream(SESSION, &Origin::Request(RequestId::Number(id))).unwrap();
    gate.terminal(SESSION, opened.stream, result).unwrap();
    gate.detach(SESSION, opened.stream, opened.attachment).unwrap();
}

/// A gate of `side` whose session is at `max-streams-per-session`, where every call makes room
/// by dropping the oldest answered stream: the steady state of a long-lived session. `next`
/// numbers the calls.
fn full_session(side: &str, next: &mut i64) -> Box<dyn Driver> {
    let config = Config::default();
    let mut gate = new_gate(side, &config);
    gate.open_session(SESSION).unwrap();
    for _ in 0..config.max_streams_per_session {
        *next += 1;
        one_call(gate.as_mut(), *next);
    }
    gate
}

/// One call's gate work in a full session, with the caches hot (criterion's loop), and cold.
fn call(c: &mut Criterion) {
    let mut group = c.benchmark_group("call/open, terminal, detach");
    group.throughput(Throughput::Elements(1));
    for side in SIDES {
        let (mut scene, mut next) = (None, 0);
        group.bench_function(side, |b| {
            let gate = scene.get_or_insert_with(|| full_session(side, &mut next));
            b.iter(|| {
                next += 1;
                one_call(gate.as_mut(), next)
            })
        });
    }
    group.finish();

    // The same call after the caches were filled with something else, as a server's next call
    // finds them: between two calls of one client it ran the HTTP stack, the kernel's TCP and
    // other sessions' work. Sides without the key-value store only.
    let mut group = c.benchmark_group("call/open, terminal, detach, caches cold");
    group.throughput(Throughput::Elements(1));
    for side in ["native", "component"] {
        let (mut scene, mut next) = (None, 0);
        group.bench_function(side, |b| {
            let (gate, other_work) =
                scene.get_or_insert_with(|| (full_session(side, &mut next), vec![0u8; COLD_BYTES]));
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for i in 0..iters {
                    for line in other_work.chunks_mut(64) {
                        line[0] = line[0].wrapping_add(i as u8);
                    }
                    next += 1;
                    let start = Instant::now();
                    one_call(gate.as_mut(), next);
                    timed += start.elapsed();
                }
                std::hint::black_box(&other_work);
                timed
            })
        });
    }
    group.finish();
}

/// Bytes written between two cold calls: more than a core's L2 cache.
const COLD_BYTES: usize = 4 << 20;

/// Whether criterion measures (`cargo bench`) or only runs each benchmark once (`cargo test`).
fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// Workload 2: a resume replaying k = 10 events, as the buffer grows. The key-value sides stop
/// at 10⁴: its stream record lists the whole buffer, so filling 10⁶ costs O(n²). The smoke run
/// stops there too: filling 10⁶ events unoptimized takes minutes.
fn resume(c: &mut Criterion) {
    const K: usize = 10;
    let data = "x".repeat(128);
    let mut group = c.benchmark_group("resume k=10/128 B");
    let sizes: &[usize] = if measuring() { &[100, 10_000, 1_000_000] } else { &[100, 10_000] };
    for &buffered in sizes {
        for side in SIDES {
            if over_kv(side) && buffered > 10_000 {
                continue;
            }
            let mut scene = None;
            group.bench_function(BenchmarkId::new(side, buffered), |b| {
                let (gate, cursor) = scene.get_or_insert_with(|| {
                    let mut gate = new_gate(side, &holding(buffered, 128));
                    gate.open_session(SESSION).unwrap();
                    let (_, cursor) = filled(gate.as_mut(), SESSION, 1, buffered, &data, K);
                    (gate, cursor)
                });
                b.iter(|| match gate.reconnect(SESSION, cursor.as_bytes(), &Origin::Standalone) {
                    Ok(Decision::Resume(r)) => assert_eq!(r.events.len(), K),
                    other => panic!("expected a resume of {K} events: {other:?}"),
                })
            });
        }
    }
    group.finish();
}

/// One reconnect to time: the cursor, the session it is presented on, and the request's origin.
#[derive(Clone)]
struct Attempt {
    session: &'static str,
    cursor: String,
    origin: Origin,
}

fn standalone(cursor: &str) -> Attempt {
    Attempt { session: SESSION, cursor: cursor.to_owned(), origin: Origin::Standalone }
}

/// Sets the scene for `n` reconnects that each must come out `fresh` with `reason`, on a gate
/// whose sessions are opened (or re-issued, which drops every stream) here.
fn stale_attempts(gate: &mut dyn Driver, reason: StaleReason, n: usize) -> Vec<Attempt> {
    use StaleReason as R;
    gate.open_session(SESSION).unwrap();
    gate.open_session("other-session").unwrap();
    let (stream, cursor) = filled(gate, SESSION, 0, 4, "x", 1);
    let repeat = |attempt: Attempt| vec![attempt; n];
    match reason {
        R::Malformed => repeat(standalone("rg1.zz")),
        // On a gate with a signing key: the same id with its MAC's last digit changed.
        R::Forged => {
            let (head, last) = cursor.split_at(cursor.len() - 1);
            repeat(standalone(&format!("{head}{}", if last == "0" { "1" } else { "0" })))
        }
        R::OtherSession => repeat(Attempt { session: "other-session", ..standalone(&cursor) }),
        R::EpochChanged => {
            gate.open_session(SESSION).unwrap();
            repeat(standalone(&cursor))
        }
        // A sequence number never issued on a live stream.
        R::Unknown => {
            let (head, _) = cursor.rsplit_once('.').unwrap();
            repeat(standalone(&format!("{head}.999999")))
        }
        R::PostNeverResumes => (0..n)
            .map(|i| Attempt {
                origin: Origin::Request(RequestId::Number(1000 + i as i64)),
                ..standalone(&cursor)
            })
            .collect(),
        R::Completed => {
            let terminal = gate.terminal(SESSION, stream, "done").unwrap().id;
            repeat(standalone(&terminal))
        }
        R::Aborted => {
            gate.abort(SESSION, stream).unwrap();
            repeat(standalone(&cursor))
        }
        R::Superseded => {
            let first = gate.open_stream(SESSION, &Origin::Standalone).unwrap().priming.id;
            gate.open_stream(SESSION, &Origin::Standalone).unwrap();
            repeat(standalone(&first))
        }
        // Each attempt needs its own stream: the verdict strands (and ends) the stream.
        R::Evicted => (0..n)
            .map(|i| {
                let opened =
                    gate.open_stream(SESSION, &Origin::Request(RequestId::Number(100 + i as i64))).unwrap();
                for _ in 0..3 {
                    gate.emit(SESSION, opened.stream, "x").unwrap();
                }
                standalone(&opened.priming.id)
            })
            .collect(),
    }
}

const STALE_REASONS: [StaleReason; 10] = [
    StaleReason::Malformed,
    StaleReason::Forged,
    StaleReason::OtherSession,
    StaleReason::EpochChanged,
    StaleReason::Unknown,
    StaleReason::PostNeverResumes,
    StaleReason::Completed,
    StaleReason::Aborted,
    StaleReason::Superseded,
    StaleReason::Evicted,
];

/// Workload 3: the cost of saying no, per reason. Every fresh decision opens a stream, so the
/// scene is set again (untimed) every `BATCH` attempts, before tombstones crowd it out; each
/// attempt is timed on its own.
fn stale(c: &mut Criterion) {
    const BATCH: usize = 32;
    let mut group = c.benchmark_group("stale");
    for reason in STALE_REASONS {
        let config = Config {
            max_streams_per_session: 256,
            max_events_per_stream: 2,
            signing_key: (reason == StaleReason::Forged).then(|| vec![7; 32]),
            ..Config::default()
        };
        for side in SIDES {
            let mut scene = None;
            group.bench_function(BenchmarkId::new(side, reason.as_str()), |b| {
                let gate = scene.get_or_insert_with(|| new_gate(side, &config));
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    let mut left = iters as usize;
                    while left > 0 {
                        let batch = left.min(BATCH);
                        for attempt in stale_attempts(gate.as_mut(), reason, batch) {
                            let start = Instant::now();
                            let decision =
                                gate.reconnect(attempt.session, attempt.cursor.as_bytes(), &attempt.origin);
                            total += start.elapsed();
                            match decision {
                                Ok(Decision::Fresh(f)) if f.reason == reason => {
                                    if let Origin::Request(_) = attempt.origin {
                                        gate.abort(SESSION, f.opened.stream).unwrap();
                                    }
                                }
                                other => panic!("expected fresh ({}), got {other:?}", reason.as_str()),
                            }
                        }
                        left -= batch;
                    }
                    total
                })
            });
        }
    }
    group.finish();
}

/// An engine whose instances come from wasmtime's pooling allocator, sized for a server that
/// runs a few hundred per-request instances at once.
fn pooling_engine() -> Engine {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(256).total_core_instances(256).total_memories(256).total_tables(256);
    pool.max_memory_size(64 << 20);
    // Pages a per-request instance touches stay mapped between instances: zeroing them is
    // cheaper than faulting them in again.
    pool.linear_memory_keep_resident(256 << 10).table_keep_resident(64 << 10);
    let mut config = wasmtime::Config::new();
    config.memory_reservation(64 << 20);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config).expect("a pooling engine")
}

/// Workload 4: a per-request instance of either world, from a pre-linked component
/// (`InstancePre`), ready when it has answered its first call (gate-kv's first call reads the
/// store).
fn instantiate(c: &mut Criterion) {
    let mut group = c.benchmark_group("instantiate");
    for (allocator, engine) in [("on-demand", Engine::default()), ("pooling", pooling_engine())] {
        let pre = memory::prepare(&engine, gate_host::GATE_MEMORY_WASM).expect("link the gate");
        group.bench_function(BenchmarkId::new("component", allocator), |b| {
            b.iter(|| {
                let mut instance =
                    MemoryWorld::new(&pre, WasiCtxBuilder::new().build(), DEFAULT_MEMORY_LIMIT).unwrap();
                let (gate, store) = instance.exports();
                assert_eq!(gate.call_has_session(store, SESSION).unwrap(), Ok(false));
            })
        });
        let pre_kv = kv_world::prepare(&engine).expect("link gate-kv");
        let kv = MemoryKv::new();
        group.bench_function(BenchmarkId::new("component+kv", allocator), |b| {
            b.iter(|| {
                let mut instance = KvWorld::new(&pre_kv, kv.clone()).unwrap();
                let (gate, store) = instance.exports();
                assert_eq!(gate.call_has_session(store, SESSION).unwrap(), Ok(false));
            })
        });
    }
    group.finish();
}

// Instances first, in a process that holds nothing else yet, as a per-request host is: measured
// last, after scenes of up to 10⁶ buffered events, gate-kv's came out at 30.9 µs in a full run
// against 16.8 µs alone.
criterion_group!(benches, instantiate, emit, call, resume, stale);
criterion_main!(benches);
