//! Several host processes — `edge-host` and `host-example --store` — over one real Redis server
//! (valkey-server): they serve one set of sessions; one killed with SIGKILL mid-call loses
//! nothing acknowledged and strands its call with `-32001` on the survivor; Redis restarted
//! mid-run turns requests in the window into `503` and service comes back by itself. Each test
//! runs with two edge-hosts, with two host-examples, and with one of each.
//!
//! (The raw-HTTP scenarios and the TypeScript client's resume test also run against two app
//! hosts on one Redis with every connection alternating: `on_every_server!`.)

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::http::{Client, Frame};
use tests::processes::ServerProcess;
use tests::redis::RedisServer;

/// Short, so that the test does not wait ten seconds for a stranded call.
const LEASE_MS: &str = "1000";
const WAIT: Duration = Duration::from_secs(5);

/// Which host binary a process runs.
#[derive(Clone, Copy)]
enum Host {
    Edge,
    Example,
}

impl Host {
    fn start(self, redis: &RedisServer) -> ServerProcess {
        let args = ["--store", &redis.url(), "--lease-ms", LEASE_MS];
        match self {
            Host::Edge => ServerProcess::edge_host(&args),
            Host::Example => ServerProcess::host_example(&args),
        }
    }
}

/// Each test with two edge-hosts, two host-examples, and one of each (the call on the first).
macro_rules! on_host_pairs {
    ($($test:ident),* $(,)?) => {$(
        mod $test {
            use super::Host;
            #[test]
            fn edge_hosts() {
                super::$test(Host::Edge, Host::Edge)
            }
            #[test]
            fn host_examples() {
                super::$test(Host::Example, Host::Example)
            }
            #[test]
            fn host_example_then_edge_host() {
                super::$test(Host::Example, Host::Edge)
            }
        }
    )*};
}

on_host_pairs!(
    two_processes_on_one_redis_serve_one_set_of_sessions,
    a_process_killed_mid_call_loses_nothing_acknowledged_and_the_survivor_strands_the_call_once,
    redis_restarted_mid_run_means_503_meanwhile_then_service_resumes_with_nothing_lost,
);

/// The client, its requests sent to `addr` from now on.
fn at(c: &Client, addr: SocketAddr) -> Client {
    Client { addr, session: c.session.clone(), version: c.version }
}

/// The response to call `id` (whole stream read).
fn answer(c: &Client, id: i64, tool: &str, arguments: Value) -> Value {
    let frames = c.call(id, tool, arguments, &[]).frames_until_closed(WAIT);
    frames
        .iter()
        .map(Frame::json)
        .find(|v| v["id"] == json!(id))
        .unwrap_or_else(|| panic!("{tool}: {frames:?}"))
}

fn journal(c: &Client, id: i64) -> Vec<String> {
    let result = answer(c, id, "journal", json!({}));
    serde_json::from_value(result["result"]["structuredContent"]["lines"].clone()).expect("journal lines")
}

fn two_processes_on_one_redis_serve_one_set_of_sessions(first: Host, second: Host) {
    let redis = RedisServer::start();
    let (a, b) = (first.start(&redis), second.start(&redis));
    let on_a = Client::initialize(a.addr);
    let on_b = at(&on_a, b.addr);
    for (i, c) in [&on_a, &on_b, &on_a, &on_b].into_iter().enumerate() {
        let id = i as i64 + 1;
        let result = answer(c, id, "append", json!({"text": format!("line {id}")}));
        assert!(result.get("result").is_some(), "append {id}: {result}");
    }
    assert_eq!(journal(&on_b, 10), ["line 1", "line 2", "line 3", "line 4"]);
    assert_eq!(journal(&on_a, 11), journal(&on_b, 12), "one journal");
    // A session opened on B is known to A, and ended on A is gone on B.
    let other = Client::initialize(b.addr);
    assert_eq!(at(&other, a.addr).delete().status, 200);
    assert_eq!(other.call(1, "journal", json!({}), &[]).status, 404);
}

fn a_process_killed_mid_call_loses_nothing_acknowledged_and_the_survivor_strands_the_call_once(
    first: Host,
    second: Host,
) {
    let redis = RedisServer::start();
    let (mut a, b) = (first.start(&redis), second.start(&redis));
    let on_a = Client::initialize(a.addr);
    let appended = answer(&on_a, 1, "append", json!({"text": "acknowledged"}));
    assert!(appended.get("result").is_some(), "{appended}");
    let mut post = on_a.call(2, "countdown", json!({"n": 50, "interval_ms": 100}), &[]);
    let seen: Vec<Frame> = (0..4).map(|_| post.next_frame(WAIT).expect("priming and progress")).collect();
    assert_eq!(seen[3].json()["params"]["progress"], json!(3), "{seen:?}");
    a.kill();
    drop(post);

    let on_b = at(&on_a, b.addr);
    let mut get = on_b.get(seen[3].id.as_deref());
    assert_eq!(get.status, 200);
    let rest = get.frames_until_closed(WAIT);
    let progress: Vec<u64> = rest.iter().filter_map(|f| f.json()["params"]["progress"].as_u64()).collect();
    let expected: Vec<u64> = (4..4 + progress.len() as u64).collect();
    assert_eq!(progress, expected, "what was stored before the kill, each once, in order: {rest:?}");
    let errors: Vec<Value> = rest.iter().map(Frame::json).filter(|v| v.get("error").is_some()).collect();
    assert_eq!(errors.len(), 1, "the call's error once: {rest:?}");
    assert_eq!((errors[0]["id"].clone(), errors[0]["error"]["code"].clone()), (json!(2), json!(-32001)));

    let ok = answer(&on_b, 3, "test_simple_text", json!({}));
    assert!(ok.get("result").is_some(), "the session lives on: {ok}");
    assert_eq!(journal(&on_b, 4), ["acknowledged"], "the acknowledged append, exactly once");
}

fn redis_restarted_mid_run_means_503_meanwhile_then_service_resumes_with_nothing_lost(host: Host, _: Host) {
    let mut redis = RedisServer::start();
    let host = host.start(&redis);
    let c = Client::initialize(host.addr);
    assert!(answer(&c, 1, "append", json!({"text": "before"})).get("result").is_some());

    redis.stop();
    let during = c.call(2, "append", json!({"text": "while down"}), &[]);
    assert_eq!(during.status, 503, "a store failure is 503, never 404");
    assert!(during.header("Retry-After").is_some(), "with Retry-After");
    assert_eq!(Client::try_initialize(host.addr), 503, "a new session: 503 too");

    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut id = 3;
    let after = loop {
        let mut r = c.call(id, "append", json!({"text": "after"}), &[]);
        if r.status == 200 {
            break r.frames_until_closed(WAIT);
        }
        assert_eq!(r.status, 503, "only 503 while the connection comes back");
        assert!(Instant::now() < deadline, "service never resumed");
        std::thread::sleep(Duration::from_millis(100));
        id += 1;
    };
    assert!(after.iter().any(|f| f.json().get("result").is_some()), "{after:?}");
    assert_eq!(journal(&c, 100), ["before", "after"], "nothing acknowledged lost, nothing twice");
}
