//! A hostile or careless client, against host-example and the Spin app (edge-host): a flood of
//! `initialize`s while an honest call is in flight, oversized request ids across many
//! sessions, a megabyte method name. Each must leave every other client's work intact, keep
//! the gate within its memory budget, and answer in the protocol's own terms without echoing
//! what was oversized. (A foreign or configured `Host`: `exposure.rs`.)

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::http::{ACCEPT, Client, JSON, Setup, TestServer, request};

const WAIT: Duration = Duration::from_secs(10);
const MAX_SESSIONS: u32 = 32;

fn progress(frames: &[tests::http::Frame]) -> Vec<u64> {
    frames.iter().filter_map(|f| f.json()["params"]["progress"].as_u64()).collect()
}

fn results_for(frames: &[tests::http::Frame], id: i64) -> usize {
    frames.iter().filter(|f| f.json()["id"] == id && f.json().get("result").is_some()).count()
}

/// Ten times `max-sessions` `initialize`s from one client while an honest client's
/// `countdown` runs with its connection cut, and a newcomer arrives mid-flood.
fn a_flood_of_sessions_denies_no_one(start: fn(Setup) -> TestServer) {
    let srv = start(Setup { max_sessions: Some(MAX_SESSIONS), ..Setup::default() });
    let honest = Client::initialize(srv.addr);
    let mut call = honest.call(1, "countdown", json!({"n": 12, "interval_ms": 250}), &[]);
    let seen: Vec<_> = (0..2).map(|_| call.next_frame(WAIT).expect("the call starts")).collect();
    drop(call);

    let addr = srv.addr;
    let flood = std::thread::spawn(move || {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}}});
        let statuses: Vec<u16> = (0..10 * MAX_SESSIONS)
            .map(|_| request(addr, "POST", &[JSON, ACCEPT], body.to_string().as_bytes()).status)
            .collect();
        statuses
    });
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let newcomer = Client::initialize(srv.addr);
    let mut answer = newcomer.call(1, "test_simple_text", json!({}), &[]);
    assert_eq!(answer.status, 200);
    let frames = answer.frames_until_closed(WAIT);
    let newcomer_ms = started.elapsed().as_millis();
    assert_eq!(results_for(&frames, 1), 1, "the newcomer's call is answered: {frames:?}");

    let statuses = flood.join().unwrap();
    let admitted = statuses.iter().filter(|s| **s == 200).count();
    assert_eq!(admitted, statuses.len(), "every flooding initialize got in by displacing an idle session");

    let mut resumed = honest.get(seen[1].id.as_deref());
    assert_eq!(resumed.status, 200, "the honest session survived the flood");
    let rest = resumed.frames_until_closed(WAIT);
    let mut all = progress(&seen);
    all.extend(progress(&rest));
    assert_eq!(all, (1..=12).collect::<Vec<u64>>(), "every progress event once, in order");
    assert_eq!(results_for(&rest, 1), 1, "the result exactly once");
    println!(
        "flood: {admitted}/{} initializes admitted, honest call completed 1/1, newcomer initialize + call {newcomer_ms} ms",
        statuses.len()
    );
}

/// A body whose JSON-RPC error is read and checked for size.
fn error_reply(resp: tests::http::Response) -> (u16, usize, Value) {
    let status = resp.status;
    let body = resp.body();
    (status, body.len(), serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn oversized_ids_and_method_names_are_refused_without_an_echo(start: fn(Setup) -> TestServer) {
    let srv = start(Setup::default());
    let bystander = Client::initialize(srv.addr);
    let huge = "i".repeat(2 << 20);
    for _ in 0..4 {
        let c = Client::initialize(srv.addr);
        for _ in 0..8 {
            let ping = json!({"jsonrpc": "2.0", "id": huge, "method": "ping"});
            let (status, len, body) = error_reply(c.post(&ping, &[]));
            assert_eq!((status, body["error"]["code"].as_i64()), (400, Some(-32600)));
            assert!(len < 300, "the id is not echoed: {len} bytes");
        }
    }
    let method = json!({"jsonrpc": "2.0", "id": 5, "method": "m".repeat(1 << 20)});
    let (status, len, body) = error_reply(bystander.post(&method, &[]));
    assert_eq!((status, body["error"]["code"].as_i64(), body["id"].as_i64()), (400, Some(-32601), Some(5)));
    assert!(len < 300, "the method name is not echoed: {len} bytes");

    let mut call = bystander.call(6, "countdown", json!({"n": 2, "interval_ms": 0}), &[]);
    assert_eq!(results_for(&call.frames_until_closed(WAIT), 6), 1, "everyone else keeps working");
}

/// Many sessions store as much as they may (256-byte request ids, big results) well past a
/// small budget: the gate's linear memory stays within the budget + 10 %.
#[test]
fn host_example_stays_within_its_memory_budget_under_many_sessions() {
    const BUDGET: u64 = 32 << 20;
    let srv = TestServer::host_example_with(Setup { max_total_bytes: Some(BUDGET), ..Setup::default() });
    let app = srv.app.clone().expect("host-example");
    let writer = Client::initialize(srv.addr);
    for i in 0..8 {
        let mut r = writer.call(i, "append", json!({"text": "j".repeat(60_000)}), &[]);
        assert_eq!(results_for(&r.frames_until_closed(WAIT), i), 1);
    }
    let before = app.gate_memory_bytes().expect("a component's linear memory");
    let mut sent = 0usize;
    for s in 0..24 {
        let c = Client::initialize(srv.addr);
        for k in 0..8 {
            let id = format!("{s:03}-{k:03}-{}", "r".repeat(248));
            let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "journal", "arguments": {}}});
            let mut r = c.post(&body, &[]);
            assert_eq!(r.status, 200, "session {s} call {k}");
            sent += r.frames_until_closed(WAIT).iter().map(|f| f.data.len()).sum::<usize>();
        }
    }
    let after = app.gate_memory_bytes().unwrap();
    println!(
        "budget {} MiB: {} MiB of results sent, gate linear memory {:.1} MiB before, {:.1} MiB after",
        BUDGET >> 20,
        sent >> 20,
        before as f64 / f64::from(1 << 20),
        after as f64 / f64::from(1 << 20)
    );
    assert!(sent as u64 > 2 * BUDGET, "the test sent enough to overflow the budget ({sent} bytes)");
    assert!(
        (after.saturating_sub(before)) as f64 <= BUDGET as f64 * 1.1,
        "linear memory grew by {} bytes, budget {BUDGET}",
        after - before
    );
    let mut r = writer.call(100, "countdown", json!({"n": 1, "interval_ms": 0}), &[]);
    assert_eq!(results_for(&r.frames_until_closed(WAIT), 100), 1, "still serving");
}

mod host_example {
    use super::*;

    #[test]
    fn a_flood_of_sessions_denies_no_one() {
        super::a_flood_of_sessions_denies_no_one(TestServer::host_example_with)
    }

    #[test]
    fn oversized_ids_and_method_names_are_refused_without_an_echo() {
        super::oversized_ids_and_method_names_are_refused_without_an_echo(TestServer::host_example_with)
    }
}

mod edge {
    use super::*;

    #[test]
    fn a_flood_of_sessions_denies_no_one() {
        super::a_flood_of_sessions_denies_no_one(TestServer::edge_with)
    }

    #[test]
    fn oversized_ids_and_method_names_are_refused_without_an_echo() {
        super::oversized_ids_and_method_names_are_refused_without_an_echo(TestServer::edge_with)
    }
}
