//! Exactly once, whatever a client sends, against the real hosts over raw HTTP: every request
//! of a 2025-03-26 batch claims its id before any runs (a duplicate runs nothing), batches are
//! bounded and never stall another session, a flood of cheap sessions or of abandoned calls
//! never locks a newcomer out, a call whose state vanished ends with `-32001` at once, and the
//! `append` journal on a store that stalls or loses writes never appends twice and never
//! hides a line.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::fault_proxy::{Fault, FaultProxy};
use tests::http::{ACCEPT, Client, Frame, JSON, Setup, TestServer, request};
use tests::on_rust_servers;
use tests::redis::RedisServer;

const WAIT: Duration = Duration::from_secs(10);

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

fn ping(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

fn append(id: i64, text: &str) -> Value {
    call(id, "append", json!({"text": text}))
}

/// A 2025-03-26 client: batches are its revision's, so it sends that version.
fn old_client(srv: &TestServer) -> Client {
    Client { version: "2025-03-26", ..Client::initialize(srv.addr) }
}

/// Every JSON-RPC message a POST's stream carried, until it closed.
fn messages(c: &Client, body: &Value) -> Vec<Value> {
    let mut resp = c.post(body, &[]);
    assert_eq!(resp.status, 200, "{body}");
    resp.frames_until_closed(WAIT).iter().filter(|f| !f.data.is_empty()).map(Frame::json).collect()
}

fn error_code(m: &Value) -> Option<i64> {
    m["error"]["code"].as_i64()
}

fn by_id(ms: &[Value], id: i64) -> Vec<&Value> {
    ms.iter().filter(|m| m["id"] == id).collect()
}

/// The three ways a batch made `append` run twice, and what each gets now.
fn a_batch_claims_every_request_id_before_anything_runs(start: fn() -> TestServer) {
    let srv = start();
    let c = old_client(&srv);
    // 1. A batch, then a request of it again alone.
    let first = messages(&c, &json!([ping(10), append(11, "batch-11")]));
    assert_eq!(by_id(&first, 11).len(), 1);
    let again = c.post(&append(11, "batch-11"), &[]);
    assert_eq!(again.status, 400, "id 11 was claimed by the batch");
    // 2. One id twice in one batch.
    let twice = messages(&c, &json!([append(20, "twice-20"), append(20, "twice-20")]));
    let answers: Vec<Option<i64>> = by_id(&twice, 20).iter().map(|m| error_code(m)).collect();
    assert_eq!(answers.len(), 2, "each element gets its own answer: {twice:?}");
    assert!(
        answers.contains(&Some(-32600)) && answers.contains(&None),
        "one ran, one was refused: {answers:?}"
    );
    // 3. A request alone, then its id again inside a batch.
    assert_eq!(by_id(&messages(&c, &append(30, "alone-30")), 30).len(), 1);
    let mixed = messages(&c, &json!([ping(31), append(30, "alone-30")]));
    assert_eq!(error_code(by_id(&mixed, 30)[0]), Some(-32600), "{mixed:?}");
    assert!(by_id(&mixed, 31)[0].get("result").is_some(), "the rest of the batch is answered");

    let lines = srv.journal_lines();
    for line in ["batch-11", "twice-20", "alone-30"] {
        assert_eq!(lines.iter().filter(|l| *l == line).count(), 1, "{line} ran exactly once: {lines:?}");
    }
}

/// Cancelling one request of a batch stops that one; the others are answered.
fn a_cancelled_request_of_a_batch_gets_no_response_and_the_others_do(start: fn() -> TestServer) {
    let srv = start();
    let c = old_client(&srv);
    let slow = json!({"jsonrpc": "2.0", "id": 40, "method": "tools/call", "params": {"name": "countdown",
        "arguments": {"n": 40, "interval_ms": 100}, "_meta": {"progressToken": "slow"}}});
    let mut resp = c.post(&json!([slow, append(41, "after-the-cancel")]), &[]);
    assert_eq!(resp.status, 200);
    let started = resp.next_frame(WAIT).expect("the countdown reports progress");
    assert_eq!(started.json()["params"]["progressToken"], "slow", "{started:?}");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 40}});
    assert_eq!(c.post(&cancel, &[]).status, 202);
    let rest: Vec<Value> =
        resp.frames_until_closed(WAIT).iter().filter(|f| !f.data.is_empty()).map(Frame::json).collect();
    assert!(by_id(&rest, 40).is_empty(), "a cancelled request gets no response: {rest:?}");
    assert!(by_id(&rest, 41)[0].get("result").is_some(), "the next request runs and is answered: {rest:?}");
    let progress = rest.iter().filter(|m| m["method"] == "notifications/progress").count();
    assert!(progress < 39, "the countdown stopped when cancelled ({progress} more events)");
    assert_eq!(srv.journal_lines().iter().filter(|l| *l == "after-the-cancel").count(), 1);
}

/// More messages than `--max-batch` is `400`/`-32600` and claims nothing.
fn a_batch_over_the_bound_is_refused_whole(start: fn() -> TestServer) {
    let srv = start();
    let c = old_client(&srv);
    let max = mcp_transport::server::DEFAULT_MAX_BATCH as i64;
    let over: Vec<Value> = (0..=max).map(ping).collect();
    let resp = c.post(&Value::Array(over), &[]);
    assert_eq!(resp.status, 400);
    let body = resp.json();
    assert_eq!(body["error"]["code"], -32600, "{body}");
    let at: Vec<Value> = (0..max).map(ping).collect();
    assert_eq!(
        messages(&c, &Value::Array(at)).len(),
        max as usize,
        "the refused batch claimed none of its ids"
    );
}

on_rust_servers!(
    a_batch_claims_every_request_id_before_anything_runs,
    a_cancelled_request_of_a_batch_gets_no_response_and_the_others_do,
    a_batch_over_the_bound_is_refused_whole,
);

mod a_batch_claims_every_request_id_before_anything_runs_on_the_typescript_sdk {
    #[test]
    fn node_example() {
        super::a_batch_claims_every_request_id_before_anything_runs(super::TestServer::node_example)
    }
}

/// A 4 MB batch of 80,000 `tools/list`s is refused at once, and another session's `ping`
/// meanwhile is answered as usual (before: a 122 MB answer built first, 5.2 s for the ping).
fn a_huge_batch_stalls_no_one(start: fn() -> TestServer) {
    let srv = start();
    let c = old_client(&srv);
    let bystander = Client::initialize(srv.addr);
    let item = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let body = format!("[{}]", vec![item.as_str(); 80_000].join(","));
    assert!(body.len() > 3 << 20, "{} bytes", body.len());
    let addr = srv.addr;
    let session = c.session.clone();
    let huge = std::thread::spawn(move || {
        let headers =
            [JSON, ACCEPT, ("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-03-26")];
        let resp = request(addr, "POST", &headers, body.as_bytes());
        (resp.status, resp.body().len())
    });
    let started = Instant::now();
    let mut answered = 0;
    while !huge.is_finished() || answered == 0 {
        let mut pong = bystander.post(&ping(1000 + answered), &[]);
        assert_eq!(pong.status, 200);
        assert_eq!(pong.frames_until_closed(WAIT).len(), 2, "priming and the answer");
        answered += 1;
    }
    let (status, len) = huge.join().unwrap();
    assert_eq!(status, 400);
    assert!(len < 200, "a short refusal, not 80,000 answers: {len} bytes");
    // A guard with a wide margin (the stall measured before was 5.2 s per ping).
    let per_ping = started.elapsed() / u32::try_from(answered).unwrap();
    assert!(per_ping < Duration::from_secs(1), "{answered} pings, {per_ping:?} each");
}

#[test]
fn a_huge_batch_stalls_no_one_on_host_example() {
    a_huge_batch_stalls_no_one(TestServer::host_example);
}

#[test]
fn a_huge_batch_stalls_no_one_on_the_spin_app() {
    a_huge_batch_stalls_no_one(TestServer::edge);
}

const MAX_SESSIONS: u32 = 16;
const MAX_DETACHED_MS: u64 = 600;

/// Ten times `max-sessions` cheap sessions (`initialize`, then one `ping` answered in full)
/// while an honest client's call runs with its connection cut: every one gets in, so does a
/// newcomer during and after the flood, and the honest client gets its result on resume. Then
/// a table filled with abandoned calls (a ten-minute `countdown` whose connection was dropped):
/// each holds its session for `max-detached` only, after which a newcomer gets in.
fn a_flood_locks_no_newcomer_out(start: fn(Setup) -> TestServer) {
    let setup = Setup {
        max_sessions: Some(MAX_SESSIONS),
        max_detached_ms: Some(MAX_DETACHED_MS),
        lease_ms: Some(2_000),
        ..Setup::default()
    };
    let srv = start(setup);
    let honest = Client::initialize(srv.addr);
    let slow = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "countdown",
        "arguments": {"n": 3, "interval_ms": 100}, "_meta": {"progressToken": "honest"}}});
    let mut cut = honest.post(&slow, &[]);
    let seen = cut.next_frame(WAIT).expect("the priming event");
    drop(cut);

    let addr = srv.addr;
    let flood = std::thread::spawn(move || {
        let mut statuses = Vec::new();
        for _ in 0..10 * MAX_SESSIONS {
            let Ok(c) = Client::open(addr) else {
                statuses.push(503);
                continue;
            };
            let mut pong = c.post(&ping(1), &[]);
            statuses.push(pong.status);
            let _ = pong.frames_until_closed(WAIT);
        }
        statuses
    });
    std::thread::sleep(Duration::from_millis(100));
    let during = Client::try_initialize(srv.addr);
    let statuses = flood.join().unwrap();
    let after = Client::try_initialize(srv.addr);
    assert_eq!((during, after), (200, 200), "newcomers get in during and after the flood");
    assert!(
        statuses.iter().all(|s| *s == 200),
        "every flooding session got in and was answered: {statuses:?}"
    );

    let mut resumed = honest.get(seen.id.as_deref());
    assert_eq!(resumed.status, 200, "the honest session survived the flood (its call was resumed in time)");
    let rest = resumed.frames_until_closed(WAIT);
    let results: Vec<Value> =
        rest.iter().filter(|f| !f.data.is_empty()).map(Frame::json).filter(|m| m["id"] == 1).collect();
    assert_eq!(results.len(), 1, "its result, once: {rest:?}");
    assert!(results[0].get("result").is_some(), "{rest:?}");

    // Abandoned ten-minute calls fill the table; each holds its session for max-detached.
    for _ in 0..MAX_SESSIONS {
        if let Ok(c) = Client::open(addr) {
            drop(c.post(&call(1, "countdown", json!({"n": 10, "interval_ms": 60_000})), &[]));
        }
    }
    // A host learns the client went away at once (host-example) or at the wait's next slice,
    // a third of the lease (the Spin app: a comment on the connection finds it).
    std::thread::sleep(Duration::from_millis(MAX_DETACHED_MS + 2_000 / 3 + 800));
    assert_eq!(Client::try_initialize(srv.addr), 200, "abandoned calls pin no session past max-detached");
    println!("flood: {} initialize + ping, all admitted; newcomers during and after: 200", statuses.len());
}

#[test]
fn a_flood_locks_no_newcomer_out_of_host_example() {
    a_flood_locks_no_newcomer_out(TestServer::host_example_with);
}

#[test]
fn a_flood_locks_no_newcomer_out_of_host_example_over_valkey() {
    a_flood_locks_no_newcomer_out(TestServer::host_example_over_redis_with);
}

#[test]
fn a_flood_locks_no_newcomer_out_of_the_spin_app() {
    a_flood_locks_no_newcomer_out(TestServer::edge_with);
}

/// A call nobody came back for is given up after `--max-detached-ms`: a client that comes back
/// later gets `-32001`, never a wait.
fn an_abandoned_call_is_given_up_and_a_late_client_gets_32001(start: fn(Setup) -> TestServer) {
    let srv =
        start(Setup { max_detached_ms: Some(MAX_DETACHED_MS), lease_ms: Some(1_500), ..Setup::default() });
    let c = Client::initialize(srv.addr);
    let long = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "countdown",
        "arguments": {"n": 600, "interval_ms": 100}, "_meta": {"progressToken": "long"}}});
    let mut cut = c.post(&long, &[]);
    let priming = cut.next_frame(WAIT).expect("priming");
    drop(cut);
    std::thread::sleep(Duration::from_millis(MAX_DETACHED_MS + 700));
    let mut late = c.get(priming.id.as_deref());
    assert_eq!(late.status, 200);
    let frames = late.frames_until_closed(Duration::from_secs(3));
    let lost: Vec<Value> =
        frames.iter().filter(|f| !f.data.is_empty()).map(Frame::json).filter(|m| m["id"] == 7).collect();
    assert_eq!(lost.len(), 1, "{frames:?}");
    assert_eq!(lost[0]["error"]["code"], -32001, "{lost:?}");
}

#[test]
fn an_abandoned_call_is_given_up_on_host_example() {
    an_abandoned_call_is_given_up_and_a_late_client_gets_32001(TestServer::host_example_with);
}

#[test]
fn an_abandoned_call_is_given_up_on_the_spin_app() {
    an_abandoned_call_is_given_up_and_a_late_client_gets_32001(TestServer::edge_with);
}

#[test]
fn countdown_runs_at_most_ten_minutes() {
    let srv = TestServer::host_example();
    let c = Client::initialize(srv.addr);
    let mut resp = c.call(1, "countdown", json!({"n": 10_000, "interval_ms": 60_000}), &[]);
    let answer: Vec<Value> =
        resp.frames_until_closed(WAIT).iter().filter(|f| !f.data.is_empty()).map(Frame::json).collect();
    assert_eq!(answer.last().unwrap()["error"]["code"], -32602, "{answer:?}");
}

/// A call whose session is ended under it (here by DELETE; a flushed store or a reclaimed
/// session likewise) answers its request with `-32001` and ends its stream at its next step.
fn a_call_whose_state_vanished_ends_with_32001(srv: &TestServer, vanish: impl FnOnce(&Client)) {
    let c = Client::initialize(srv.addr);
    let long = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "countdown",
        "arguments": {"n": 100, "interval_ms": 100}, "_meta": {"progressToken": "v"}}});
    let mut resp = c.post(&long, &[]);
    resp.next_frame(WAIT).expect("priming");
    resp.next_frame(WAIT).expect("progress");
    vanish(&c);
    let started = Instant::now();
    let rest = resp.frames_until_closed(WAIT);
    let ended = started.elapsed();
    let last = rest.iter().rev().find(|f| !f.data.is_empty()).map(Frame::json).expect("an answer");
    assert_eq!((last["id"].as_i64(), last["error"]["code"].as_i64()), (Some(9), Some(-32001)), "{rest:?}");
    assert!(ended < Duration::from_secs(5), "ended at its next step, not hung: {ended:?}");
}

#[test]
fn a_call_whose_session_was_deleted_ends_with_32001_on_host_example() {
    let srv = TestServer::host_example();
    a_call_whose_state_vanished_ends_with_32001(&srv, |c| assert_eq!(c.delete().status, 200));
}

#[test]
fn a_call_whose_session_was_deleted_ends_with_32001_on_the_spin_app() {
    let srv = TestServer::edge();
    a_call_whose_state_vanished_ends_with_32001(&srv, |c| assert_eq!(c.delete().status, 200));
}

#[test]
fn a_call_whose_store_was_flushed_ends_with_32001() {
    let redis = RedisServer::start();
    let srv =
        TestServer::host_example_over_with(redis.kv(""), Setup { lease_ms: Some(900), ..Setup::default() });
    a_call_whose_state_vanished_ends_with_32001(&srv, |_| redis.flush_all());
}

/// The `append` journal over a store that stalls or loses a write: a timeout is reported as an
/// outcome not known (never as a failure of a write that may land), the line is there once if
/// the write landed, and later lines are always readable.
#[test]
fn the_journal_over_a_store_that_stalls_or_loses_writes_never_appends_twice_nor_hides_a_line() {
    let redis = RedisServer::start();
    let proxy = FaultProxy::start(redis.addr());
    let kv = resume_gate_redis::RedisKv::connect(&proxy.url()).unwrap();
    let srv = TestServer::host_example_over(kv);
    let c = Client::initialize(srv.addr);
    let result = |id: i64, text: &str| -> Value {
        let mut resp = c.call(id, "append", json!({"text": text}), &[]);
        let frames = resp.frames_until_closed(Duration::from_secs(20));
        frames
            .iter()
            .filter(|f| !f.data.is_empty())
            .map(Frame::json)
            .find(|m| m["id"] == id)
            .expect("an answer")
    };
    let text = |m: &Value| m["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    // The store has the journal's script once one line was written.
    assert!(result(0, "before-the-faults")["result"].get("isError").is_none());

    // The write lands; its answer comes after the store timeout.
    proxy.on("stalled-line", Fault::DelayReply(Duration::from_secs(3)));
    let stalled = result(1, "stalled-line");
    assert_eq!(stalled["result"]["isError"], true, "{stalled}");
    assert!(text(&stalled).contains("outcome unknown"), "never called a failure: {stalled}");
    // The write is sent and never answered (it may or may not have run).
    proxy.on("unanswered-line", Fault::DropReply);
    assert!(text(&result(2, "unanswered-line")).contains("outcome unknown"));
    // The write is lost on the way: not written.
    proxy.on("lost-line", Fault::DropRequest);
    assert!(text(&result(3, "lost-line")).contains("outcome unknown"));
    assert!(proxy.hits("stalled-line") >= 1 && proxy.hits("lost-line") >= 1);
    // (The journal's page carries the lines' text: no fault may meet it.)
    proxy.clear();
    let after = result(4, "after-the-faults");
    assert!(after["result"].get("isError").is_none(), "{after}");

    let lines = srv.journal_lines();
    let count = |l: &str| lines.iter().filter(|x| *x == l).count();
    assert_eq!((count("stalled-line"), count("unanswered-line"), count("lost-line")), (1, 1, 0), "{lines:?}");
    assert_eq!(
        (count("before-the-faults"), count("after-the-faults")),
        (1, 1),
        "every line readable: {lines:?}"
    );
}

/// Over plain key-value calls (the Spin app: no scripts in `wasi:keyvalue`), a line whose write
/// was lost after its number was taken leaves a gap that readers skip.
#[test]
fn a_lost_journal_write_on_the_spin_app_hides_no_later_line() {
    let redis = RedisServer::start();
    let proxy = FaultProxy::start(redis.addr());
    let kv = resume_gate_redis::RedisKv::connect(&proxy.url()).unwrap();
    let srv = TestServer::edge_over(kv);
    let c = Client::initialize(srv.addr);
    proxy.on("lost-on-the-way", Fault::DropRequest);
    let mut first = c.call(1, "append", json!({"text": "lost-on-the-way"}), &[]);
    let answer = first.frames_until_closed(Duration::from_secs(20));
    let m = answer
        .iter()
        .filter(|f| !f.data.is_empty())
        .map(Frame::json)
        .find(|m| m["id"] == 1)
        .expect("an answer");
    assert!(m["result"]["content"][0]["text"].as_str().unwrap().contains("outcome unknown"), "{m}");
    let mut second = c.call(2, "append", json!({"text": "written-after-the-gap"}), &[]);
    second.frames_until_closed(WAIT);
    let lines = srv.journal_lines();
    assert_eq!(lines, ["written-after-the-gap"], "the gap is skipped, the later line read");
}
