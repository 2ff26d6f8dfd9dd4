//! Garbage collection as hosts run it: the gate-kv component in real wasmtime makes whole
//! `collect-garbage` passes over a shared store — an in-process one and a real Redis-protocol
//! server (valkey) — and the collecting thread edge-host and host-example `--store` start.
//! What instances killed mid-operation leave is collected, a drifted session count is set
//! right, and nothing a live record leads to is touched. (Which leftovers each kill point leaves, and that collection takes all of them and
//! nothing in flight, is the crash matrix's: `crash_matrix.rs`.)

use std::time::{Duration, Instant};

use edge_host::keyvalue::SharedKv;
use gate_host::collector::{Collector, collect_pass};
use gate_host::kv_world;
use resume_gate::kv::{Kv, MemoryKv, event_key};
use resume_gate::stream::DataKey;
use resume_gate::{Config, Decision, Origin, RequestId};
use tests::drivers::{GateApi, WasmKv};

/// Every key but garbage collection's own bookkeeping (`rg/count-check`).
fn keys(kv: &SharedKv) -> Vec<String> {
    kv.keys().unwrap().into_iter().filter(|k| k != "rg/count-check").collect()
}

/// A session with a detached request stream holding three events: (stream, priming cursor).
fn live_session(kv: &SharedKv) -> (u64, String) {
    let mut gate = WasmKv::new(kv.clone()).expect("instantiate gate-kv");
    gate.open_session("live").expect("open");
    let opened = gate.open_stream("live", &Origin::Request(RequestId::Number(1))).expect("open a stream");
    for data in ["e1", "e2", "e3"] {
        gate.emit("live", opened.stream, data).expect("emit");
    }
    gate.detach("live", opened.stream, opened.attachment).expect("detach");
    (opened.stream, opened.priming.id)
}

/// What killed instances leave: keys of a session that ended half-way, and event data a
/// writer stored but never published (written long ago).
fn leftovers(kv: &mut SharedKv, stream: u64) -> Vec<String> {
    let unpublished = event_key("live", stream, DataKey { writer: 0xdead, n: 7 });
    let mut value = 1_000u64.to_le_bytes().to_vec();
    value.extend(b"never published");
    kv.set(&unpublished, &value).unwrap();
    kv.set("rg/{ended}/e/1/beef.0", b"\0\0\0\0\0\0\0\0data").unwrap();
    kv.increment("rg/{ended}/r/n1", 1).unwrap();
    kv.increment("rg/{ended}/n", 1).unwrap();
    vec![unpublished, "rg/{ended}/e/1/beef.0".into(), "rg/{ended}/n".into(), "rg/{ended}/r/n1".into()]
}

fn collects_leftovers_and_nothing_live(mut kv: SharedKv) {
    let (stream, priming) = live_session(&kv);
    let live = keys(&kv);
    let left = leftovers(&mut kv, stream);
    let pre = kv_world::prepare(&wasmtime::Engine::default()).expect("link gate-kv");
    let removed = collect_pass(&pre, &kv, &Config::default()).expect("a pass");
    assert_eq!(removed as usize, left.len(), "every leftover, nothing else");
    assert_eq!(keys(&kv), live, "the store holds what the live records lead to");
    let mut gate = WasmKv::new(kv.clone()).expect("instantiate gate-kv");
    match gate.reconnect("live", priming.as_bytes(), &Origin::Standalone).expect("reconnect") {
        Decision::Resume(r) => {
            let data: Vec<&str> = r.events.iter().map(|e| e.data.as_str()).collect();
            assert_eq!(data, ["e1", "e2", "e3"], "the live stream still resumes in full");
            assert_eq!(r.stream, stream);
        }
        Decision::Fresh(f) => panic!("the live stream no longer resumes: {:?}", f.reason),
    }
    assert_eq!(
        collect_pass(&pre, &kv, &Config::default()).expect("a pass"),
        0,
        "a second pass finds nothing"
    );

    // A session count that drifted (an instance died between counting a session and writing
    // its record) is set right by the pass that comes a lease after a pass that counted alike.
    kv.increment("rg/sessions", 1).unwrap();
    let short = Config { lease_ms: 1, ..Config::default() };
    collect_pass(&pre, &kv, &short).expect("a pass");
    std::thread::sleep(Duration::from_millis(5));
    collect_pass(&pre, &kv, &short).expect("a pass");
    assert_eq!(kv.increment("rg/sessions", 0).unwrap(), 1, "one session, counted once");
}

#[test]
fn a_pass_of_the_component_collects_leftovers_and_nothing_live() {
    collects_leftovers_and_nothing_live(MemoryKv::new().into());
}

#[test]
fn a_pass_over_a_real_redis_collects_leftovers_and_nothing_live() {
    collects_leftovers_and_nothing_live(tests::redis::fresh_kv().into());
}

#[test]
fn the_collecting_thread_removes_leftovers_while_a_host_serves() {
    let mut kv: SharedKv = MemoryKv::new().into();
    let (stream, _) = live_session(&kv);
    let live = keys(&kv);
    let left = leftovers(&mut kv, stream);
    let collector =
        Collector::spawn(kv.clone(), Duration::from_millis(100), Config::default()).expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(30);
    while keys(&kv) != live {
        assert!(Instant::now() < deadline, "still there after 30 s: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(collector);
}

#[test]
fn edge_host_collect_garbage_cleans_a_store_it_shares_with_other_hosts() {
    let server = tests::redis::RedisServer::start_in_memory();
    // Under `rg:`, the prefix edge-host uses unless told otherwise (`--store-prefix`).
    let mut kv: SharedKv = server.kv("rg:").into();
    let (stream, _) = live_session(&kv);
    let live = keys(&kv);
    leftovers(&mut kv, stream);
    let binary = tests::processes::built_binary("edge-host", "edge-host");
    let out = std::process::Command::new(binary)
        .args(["collect-garbage", "--store", &server.url()])
        .output()
        .expect("run edge-host collect-garbage");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "removed 4 keys");
    assert_eq!(keys(&kv), live);
}
