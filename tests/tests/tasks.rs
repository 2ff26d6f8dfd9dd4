//! Tasks in the 2026-07-28 era (the `io.modelcontextprotocol/tasks` extension, SEP-2663),
//! over raw HTTP against host-example: `countdown` and `append` run as tasks; with `--store`
//! two processes on one real Redis (valkey-server) answer for one task; a task cancelled on one
//! stops on the other; a task whose process was SIGKILLed fails within its lease and never runs
//! again; and a 2025-era session beside them sees none of it.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::http::{ACCEPT, Client, Frame, JSON, STATELESS as MODERN, TestServer, request, stateless_post};
use tests::processes::ServerProcess;
use tests::redis::RedisServer;

const TASKS: &str = "io.modelcontextprotocol/tasks";
const WAIT: Duration = Duration::from_secs(10);
/// Short, so that a killed process's task fails soon.
const LEASE_MS: &str = "900";

/// A 2026-07-28 request from a client that takes tasks; its JSON-RPC answer.
fn rpc(addr: SocketAddr, id: i64, method: &str, params: Value) -> Value {
    let mut resp = stateless_post(addr, id, method, params, json!({"extensions": {TASKS: {}}}), &[]);
    assert_eq!(resp.header("mcp-session-id"), None, "no session in this era");
    if resp.header("content-type") == Some("text/event-stream") {
        let frames = resp.frames_until_closed(WAIT);
        return frames.iter().map(Frame::json).find(|m| m["id"] == id).expect("the call's response");
    }
    resp.json()
}

/// Starts `tool` as a task; its id.
fn start(addr: SocketAddr, tool: &str, arguments: Value) -> String {
    let created = rpc(addr, 1, "tools/call", json!({"name": tool, "arguments": arguments}));
    let result = &created["result"];
    assert_eq!((&result["resultType"], &result["status"]), (&json!("task"), &json!("working")), "{created}");
    result["taskId"].as_str().expect("a task id").to_owned()
}

fn get(addr: SocketAddr, task: &str) -> Value {
    rpc(addr, 2, "tasks/get", json!({"taskId": task}))
}

/// Polls `tasks/get` on `addr` until the task is terminal; the task.
fn settle(addr: SocketAddr, task: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let task_now = get(addr, task)["result"].clone();
        if task_now["status"] != "working" {
            return task_now;
        }
        assert!(Instant::now() < deadline, "still working: {task_now}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The journal's lines, read by a 2026-07-28 call.
fn journal(addr: SocketAddr) -> Vec<String> {
    let page = rpc(addr, 3, "tools/call", json!({"name": "journal", "arguments": {}}));
    serde_json::from_value(page["result"]["structuredContent"]["lines"].clone()).expect("journal lines")
}

#[test]
fn countdown_and_append_run_as_tasks_each_once_and_a_session_beside_them_sees_nothing() {
    let srv = TestServer::host_example();
    let session = Client::initialize(srv.addr);
    let countdown = start(srv.addr, "countdown", json!({"n": 3, "interval_ms": 50, "_": 1}));
    let append = start(srv.addr, "append", json!({"text": "task line", "delay_ms": 100}));
    assert_ne!(countdown, append);
    assert!(countdown.len() == 32 && countdown.bytes().all(|b| b.is_ascii_hexdigit()), "128 random bits");
    let done = settle(srv.addr, &countdown, WAIT);
    assert_eq!(
        (&done["status"], &done["result"]["content"][0]["text"]),
        (&json!("completed"), &json!("done"))
    );
    let appended = settle(srv.addr, &append, WAIT);
    assert_eq!(appended["result"]["structuredContent"]["lines"], 1);
    // Polled again, it answers the same: the line is not written again.
    assert_eq!(settle(srv.addr, &append, WAIT)["result"], appended["result"]);
    assert_eq!(journal(srv.addr), ["task line"]);

    // The 2025-era session has no such methods and its calls are never tasks.
    let mut asked = session
        .post(&json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/get", "params": {"taskId": append}}), &[]);
    let asked =
        asked.frames_until_closed(WAIT).iter().map(Frame::json).find(|m| m["id"] == 9).expect("an answer");
    let frames = session.call(10, "append", json!({"text": "session line"}), &[]).frames_until_closed(WAIT);
    let answer = frames.iter().map(Frame::json).find(|m| m["id"] == 10).expect("the answer");
    assert!(answer["result"].get("taskId").is_none(), "{answer}");
    assert_eq!(asked["error"]["code"], -32601, "{asked}");
    assert_eq!(journal(srv.addr), ["task line", "session line"]);
}

/// host-example's set-ups that keep tasks: in its memory, on Redis, and two processes (every
/// connection alternating between them) on Redis and on a three-master Redis Cluster.
#[test]
fn every_set_up_runs_a_task_once_and_answers_for_it_from_each_process() {
    type Start = fn() -> TestServer;
    let set_ups: [(&str, Start); 4] = [
        ("memory", TestServer::host_example),
        ("redis", TestServer::host_example_over_redis),
        ("two on redis", TestServer::two_host_examples_over_redis),
        ("two on a cluster", TestServer::two_host_examples_over_cluster),
    ];
    for (what, start_server) in set_ups {
        let srv = start_server();
        let appended = start(srv.addr, "append", json!({"text": what, "delay_ms": 200}));
        let cancelled = start(srv.addr, "slow_compute", json!({"seconds": 30}));
        let ack = rpc(srv.addr, 4, "tasks/cancel", json!({"taskId": cancelled}));
        assert_eq!(ack["result"], json!({"resultType": "complete"}), "{what}");
        let done = settle(srv.addr, &appended, WAIT);
        assert_eq!(done["status"], "completed", "{what}: {done}");
        for _ in 0..4 {
            assert_eq!(
                get(srv.addr, &appended)["result"]["status"],
                "completed",
                "{what}: from each process"
            );
            assert_eq!(get(srv.addr, &cancelled)["result"]["status"], "cancelled", "{what}");
        }
        assert_eq!(journal(srv.addr), [what], "{what}: written once");
    }
}

#[test]
fn a_client_that_does_not_take_tasks_is_answered_directly_and_cannot_read_one() {
    let srv = TestServer::host_example();
    let task = start(srv.addr, "slow_compute", json!({"seconds": 1}));
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"taskId": task, "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}}});
    let headers =
        [JSON, ACCEPT, ("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tasks/get"), ("Mcp-Name", &task)];
    let refused = request(srv.addr, "POST", &headers, body.to_string().as_bytes()).json();
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(refused["error"]["data"]["requiredCapabilities"]["extensions"][TASKS], json!({}));
    assert_eq!(settle(srv.addr, &task, WAIT)["status"], "completed");
}

/// Two host-examples on one Redis; the task runs on `a`.
fn two_processes(redis: &RedisServer) -> (ServerProcess, ServerProcess) {
    let args = ["--store", &redis.url(), "--lease-ms", LEASE_MS];
    (ServerProcess::host_example(&args), ServerProcess::host_example(&args))
}

#[test]
fn a_task_created_on_one_process_is_read_and_cancelled_on_the_other() {
    let redis = RedisServer::start();
    let (a, b) = two_processes(&redis);
    let appended = start(a.addr, "append", json!({"text": "once", "delay_ms": 300}));
    assert_eq!(get(b.addr, &appended)["result"]["status"], "working", "stored before its id was returned");
    let done = settle(b.addr, &appended, WAIT);
    assert_eq!(
        (&done["status"], &done["result"]["structuredContent"]["lines"]),
        (&json!("completed"), &json!(1))
    );

    // Cancelled on B while A waits: A stops at once, and writes nothing.
    let cancelled = start(a.addr, "append", json!({"text": "never", "delay_ms": 3000}));
    assert_eq!(
        rpc(b.addr, 5, "tasks/cancel", json!({"taskId": cancelled}))["result"],
        json!({"resultType": "complete"})
    );
    assert_eq!(get(a.addr, &cancelled)["result"]["status"], "cancelled");
    std::thread::sleep(Duration::from_millis(3500));
    assert_eq!(get(a.addr, &cancelled)["result"]["status"], "cancelled", "a late outcome changes nothing");
    assert_eq!(journal(b.addr), ["once"]);
    let unknown = rpc(b.addr, 6, "tasks/update", json!({"taskId": "0".repeat(32), "inputResponses": {}}));
    assert_eq!(unknown["error"]["code"], -32602);
}

#[test]
fn a_task_whose_process_was_killed_fails_within_its_lease_and_never_runs_again() {
    let redis = RedisServer::start();
    let (mut a, b) = two_processes(&redis);
    let running = start(a.addr, "countdown", json!({"n": 100, "interval_ms": 100}));
    let waiting = start(a.addr, "append", json!({"text": "lost with its process", "delay_ms": 2000}));
    std::thread::sleep(Duration::from_millis(300));
    a.kill();
    let killed_at = Instant::now();
    for task in [&running, &waiting] {
        let failed = settle(b.addr, task, WAIT);
        assert_eq!(
            (&failed["status"], &failed["error"]["code"]),
            (&json!("failed"), &json!(-32603)),
            "{failed}"
        );
        assert!(failed["statusMessage"].as_str().unwrap().contains("not run again"), "{failed}");
    }
    let lease = Duration::from_millis(LEASE_MS.parse().unwrap());
    assert!(killed_at.elapsed() < lease * 4, "failed within the lease: {:?}", killed_at.elapsed());
    std::thread::sleep(Duration::from_millis(2000));
    assert!(journal(b.addr).is_empty(), "the append never ran, here or there");
    assert_eq!(get(b.addr, &waiting)["result"]["status"], "failed", "and stays failed");
}

#[test]
fn tasks_are_bounded_across_processes_and_expire_after_their_ttl() {
    let redis = RedisServer::start();
    let args = ["--store", &redis.url(), "--max-tasks", "2", "--task-ttl-ms", "1500"];
    let (a, b) = (ServerProcess::host_example(&args), ServerProcess::host_example(&args));
    let first = start(a.addr, "slow_compute", json!({"seconds": 1}));
    start(b.addr, "slow_compute", json!({"seconds": 1}));
    let full = rpc(a.addr, 1, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 1}}));
    assert_eq!(full["error"]["code"], -32603, "{full}");
    assert!(full["error"]["message"].as_str().unwrap().contains("as many tasks"), "{full}");
    // A quick call and a session are not tasks: untouched by the bound.
    let quick = rpc(b.addr, 2, "tools/call", json!({"name": "greet", "arguments": {"name": "x"}}));
    assert_eq!(quick["result"]["content"][0]["text"], "Hello, x!");
    assert_eq!(settle(b.addr, &first, WAIT)["ttlMs"], 1500);
    std::thread::sleep(Duration::from_millis(1600));
    assert_eq!(get(b.addr, &first)["error"]["code"], -32602, "gone after its TTL");
    start(a.addr, "slow_compute", json!({"seconds": 1}));
}

#[test]
fn a_task_running_on_a_process_stopped_by_sigterm_fails_at_once_on_the_other() {
    let redis = RedisServer::start();
    let args = ["--store", &redis.url(), "--drain-ms", "2000"];
    let (mut a, b) = (ServerProcess::host_example(&args), ServerProcess::host_example(&args));
    let quick = start(a.addr, "slow_compute", json!({"seconds": 1}));
    let long = start(a.addr, "slow_compute", json!({"seconds": 60}));
    std::thread::sleep(Duration::from_millis(100));
    a.terminate();
    assert!(a.wait_exit(WAIT).is_some_and(|s| s.success()), "a clean exit");
    let failed = get(b.addr, &long)["result"].clone();
    assert_eq!((&failed["status"], &failed["error"]["code"]), (&json!("failed"), &json!(-32603)), "{failed}");
    assert!(failed["statusMessage"].as_str().unwrap().contains("server stopped"), "{failed}");
    // The drain let the short one finish.
    assert_eq!(get(b.addr, &quick)["result"]["status"], "completed");
}
