//! Raw-HTTP scenarios, one per row of the decision table a client can reach, plus the
//! bad-input rules; each runs against host-example and against the Spin app (front + gate-kv,
//! an instance per request), over a store that answers like Spin's SQLite backend and one that
//! answers like its Redis backend, and against the official SDKs' servers with the gate's
//! adapter (the Node and Python packages' examples). Connections are cut by dropping them
//! mid-stream.
//!
//! Two scenarios hold the project's own hosts to more than an SDK's server can give: the exact
//! status and JSON-RPC code of every bad input (the SDKs answer with their own; every server
//! must refuse with a 4xx and keep the adapter's rules), and batches (the Python SDK 2.x
//! accepts none; the Node example runs them too).

use std::time::Duration;

use serde_json::{Value, json};
use tests::http::{ACCEPT, Client, Frame, JSON, Response, TestServer, request};
use tests::{on_every_server, on_rust_servers};

on_every_server!(
    a_cut_mid_stream_resumes_with_exactly_the_missed_events,
    a_resume_takes_the_stream_over_and_the_old_connection_gets_nothing_more,
    a_client_that_missed_the_terminal_gets_it_once_then_its_cursor_is_stale,
    a_post_carrying_a_stale_last_event_id_runs_only_its_own_call,
    append_under_a_cut_runs_exactly_once_and_its_result_arrives_on_resume,
    a_cursor_from_another_session_replays_nothing_and_does_not_disturb_its_owner,
    forged_and_malformed_cursors_never_replay_and_never_fail_the_server,
    unknown_and_deleted_sessions_get_404_and_a_missing_one_is_refused,
    after_a_restart_the_old_session_is_gone_and_no_old_event_is_replayed,
    bad_input_is_refused_and_leaves_other_sessions_untouched,
    the_polling_tool_closes_its_stream_mid_call_and_the_get_resume_delivers_the_result,
    a_cancelled_call_is_never_resumed_and_never_answered,
    older_clients_get_no_priming_event_but_every_event_still_carries_its_id,
    the_journal_is_read_in_pages,
);

on_rust_servers!(
    bad_input_gets_the_right_status_and_leaves_other_sessions_untouched,
    a_2025_03_26_batch_is_answered_request_by_request_and_resumes,
);

mod a_2025_03_26_batch_on_the_typescript_sdk {
    #[test]
    fn node_example() {
        super::a_2025_03_26_batch_is_answered_request_by_request_and_resumes(super::TestServer::node_example)
    }
}

const WAIT: Duration = Duration::from_secs(5);
/// How long a fresh stream is watched to show that nothing is replayed into it.
const QUIET: Duration = Duration::from_millis(400);

fn frames(resp: &mut Response, n: usize) -> Vec<Frame> {
    (0..n).map(|i| resp.next_frame(WAIT).unwrap_or_else(|| panic!("frame {i} of {n} never came"))).collect()
}

fn progress_of(f: &Frame) -> Option<u64> {
    f.json()["params"]["progress"].as_u64()
}

fn result_id(f: &Frame) -> Option<i64> {
    let v = f.json();
    (v.get("result").is_some() || v.get("error").is_some()).then(|| v["id"].as_i64()).flatten()
}

/// A fresh stream: status 200, a priming event, then nothing replayed.
fn assert_fresh(mut resp: Response) {
    assert_eq!(resp.status, 200);
    let first = resp.next_frame(WAIT).expect("a priming event");
    assert!(first.is_priming(), "{first:?}");
    assert_eq!(resp.next_frame(QUIET), None, "nothing may be replayed into a fresh stream");
}

fn a_cut_mid_stream_resumes_with_exactly_the_missed_events(start: fn() -> TestServer) {
    let srv = start();
    let c = Client::initialize(srv.addr);
    let mut post = c.call(1, "countdown", json!({"n": 5, "interval_ms": 100}), &[]);
    assert_eq!(post.status, 200);
    let seen = frames(&mut post, 3);
    assert!(seen[0].is_priming());
    assert_eq!(progress_of(&seen[2]), Some(2));
    drop(post);

    let mut get = c.get(seen[2].id.as_deref());
    assert_eq!(get.status, 200);
    let rest = get.frames_until_closed(WAIT);
    let progress: Vec<u64> = rest.iter().filter_map(progress_of).collect();
    assert_eq!(progress, [3, 4, 5], "every missed event once, in order");
    assert_eq!(rest.iter().filter_map(result_id).collect::<Vec<_>>(), [1], "the result exactly once");
    assert_eq!(rest.last().map(|f| f.json()["result"]["content"][0]["text"].clone()), Some(json!("done")));
}

fn a_resume_takes_the_stream_over_and_the_old_connection_gets_nothing_more(start: fn() -> TestServer) {
    let srv = start();
    let c = Client::initialize(srv.addr);
    let mut post = c.call(1, "countdown", json!({"n": 6, "interval_ms": 150}), &[]);
    let seen = frames(&mut post, 3);
    assert_eq!(progress_of(&seen[2]), Some(2));

    // The client believes the POST is dead and resumes while it is in fact still open.
    let mut get = c.get(seen[2].id.as_deref());
    assert_eq!(get.status, 200);
    let rest = get.frames_until_closed(WAIT);
    let progress: Vec<u64> = rest.iter().filter_map(progress_of).collect();
    assert_eq!(progress, [3, 4, 5, 6], "the new connection gets every later event");
    assert_eq!(rest.iter().filter_map(result_id).collect::<Vec<_>>(), [1]);

    let late = post.frames_until_closed(QUIET);
    let late_progress: Vec<u64> = late.iter().filter_map(progress_of).collect();
    assert!(
        late_progress.iter().all(|p| *p <= 3) && late.iter().all(|f| result_id(f).is_none()),
        "after the take-over the old connection got {late_progress:?} and {} results",
        late.iter().filter_map(result_id).count()
    );
}

fn a_client_that_missed_the_terminal_gets_it_once_then_its_cursor_is_stale(start: fn() -> TestServer) {
    let srv = start();
    let c = Client::initialize(srv.addr);
    let mut post = c.call(1, "countdown", json!({"n": 2, "interval_ms": 100}), &[]);
    let seen = frames(&mut post, 2);
    drop(post);
    std::thread::sleep(Duration::from_millis(400));

    let mut get = c.get(seen[1].id.as_deref());
    let rest = get.frames_until_closed(WAIT);
    assert_eq!(rest.iter().filter_map(progress_of).collect::<Vec<_>>(), [2]);
    assert_eq!(rest.iter().filter_map(result_id).collect::<Vec<_>>(), [1]);
    let terminal = rest.last().and_then(|f| f.id.clone()).unwrap();

    // The seed's failure 1: the terminal event's id on a GET. Fresh, nothing replayed.
    assert_fresh(c.get(Some(&terminal)));
    // The seed's failure 3: an earlier cursor of the now completed stream.
    assert_fresh(c.get(seen[1].id.as_deref()));
}

fn a_post_carrying_a_stale_last_event_id_runs_only_its_own_call(start: fn() -> TestServer) {
    let srv = start();
    let c = Client::initialize(srv.addr);
    let mut first = c.call(1, "append", json!({"text": "one"}), &[]);
    let done = first.frames_until_closed(WAIT);
    let terminal = done.last().and_then(|f| f.id.clone()).unwrap();

    let mut second = c.call(2, "append", json!({"text": "two"}), &[("Last-Event-ID", &terminal)]);
    assert_eq!(second.status, 200);
    let got = second.frames_until_closed(WAIT);
    assert_eq!(got.iter().filter_map(result_id).collect::<Vec<_>>(), [2], "only its own result");
    assert_eq!(srv.journal_lines(), ["one", "two"], "each append ran exactly once");
}

fn append_under_a_cut_runs_exactly_once_and_its_result_arrives_on_resume(start: fn() -> TestServer) {
    let srv = start();
    let c = Client::initialize(srv.addr);
    let mut post = c.call(7, "append", json!({"text": "charged"}), &[]);
    let priming = post.next_frame(WAIT).unwrap();
    drop(post);
    std::thread::sleep(Duration::from_millis(100));
    let mut get = c.get(priming.id.as_deref());
    let rest = get.frames_until_closed(WAIT);
    assert_eq!(rest.iter().filter_map(result_id).collect::<Vec<_>>(), [7]);
    assert_eq!(srv.journal_lines(), ["charged"]);
}

fn a_cursor_from_another_session_replays_nothing_and_does_not_disturb_its_owner(start: fn() -> TestServer) {
    let srv = start();
    let owner = Client::initialize(srv.addr);
    let thief = Client::initialize(srv.addr);
    let mut post = owner.call(1, "countdown", json!({"n": 3, "interval_ms": 150}), &[]);
    let seen = frames(&mut post, 2);
    drop(post);

    assert_fresh(thief.get(seen[1].id.as_deref()));
    let mut get = owner.get(seen[1].id.as_deref());
    let rest = get.frames_until_closed(WAIT);
    assert_eq!(rest.iter().filter_map(progress_of).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(rest.iter().filter_map(result_id).collect::<Vec<_>>(), [1]);
}

fn forged_and_malformed_cursors_never_replay_and_never_fail_the_server(start: fn() -> TestServer) {
    let srv = start();
    let c = Client::initialize(srv.addr);
    let mut post = c.call(1, "countdown", json!({"n": 2, "interval_ms": 200}), &[]);
    let seen = frames(&mut post, 2);
    drop(post);
    let genuine = seen[1].id.clone().unwrap();
    let altered = format!("{}9", &genuine[..genuine.len() - 1]);
    let huge = "A".repeat(6000);
    for cursor in ["", "1", "0-1-2", "rg1.", altered.as_str(), "rg1.zz.zz.1.1", huge.as_str()] {
        let resp = c.get(Some(cursor));
        assert!(resp.status < 500, "{cursor:.20}: {}", resp.status);
        assert_fresh(resp);
    }
    // The owner's own cursor still resumes afterwards.
    let rest = c.get(Some(&genuine)).frames_until_closed(WAIT);
    assert_eq!(rest.iter().filter_map(result_id).collect::<Vec<_>>(), [1]);
}

fn unknown_and_deleted_sessions_get_404_and_a_missing_one_is_refused(start: fn() -> TestServer) {
    let srv = start();
    let c = Client::initialize(srv.addr);
    let mut post = c.call(1, "test_simple_text", json!({}), &[]);
    let done = post.frames_until_closed(WAIT);
    let cursor = done[0].id.clone().unwrap();

    let stranger = Client { session: "no-such-session".into(), ..Client::initialize(srv.addr) };
    assert_eq!(stranger.get(Some(&cursor)).status, 404);
    assert_eq!(c.delete().status, 200);
    assert_eq!(c.get(Some(&cursor)).status, 404);
    assert_eq!(c.delete().status, 404);
    // A session-era server refuses it (400); a dual-era one has nothing to GET without one (405).
    let no_session = request(srv.addr, "GET", &[ACCEPT], b"");
    assert!(matches!(no_session.status, 400 | 405), "{}", no_session.status);
}

fn after_a_restart_the_old_session_is_gone_and_no_old_event_is_replayed(start: fn() -> TestServer) {
    let srv = start();
    let c = Client::initialize(srv.addr);
    let mut post = c.call(1, "countdown", json!({"n": 3, "interval_ms": 100}), &[]);
    let seen = frames(&mut post, 2);
    drop(post);
    drop(srv);

    let srv = start();
    let old = Client { addr: srv.addr, ..c };
    assert_eq!(old.get(seen[1].id.as_deref()).status, 404, "the session died with the memory store");
    let new = Client::initialize(srv.addr);
    assert_fresh(new.get(seen[1].id.as_deref()));
}

fn bad_input_gets_the_right_status_and_leaves_other_sessions_untouched(start: fn() -> TestServer) {
    let srv = start();
    let bystander = Client::initialize(srv.addr);
    let mut running = bystander.call(1, "countdown", json!({"n": 3, "interval_ms": 150}), &[]);
    let seen = frames(&mut running, 2);

    let c = Client::initialize(srv.addr);
    let expect = |resp: Response, status: u16, code: Option<i64>| {
        assert_eq!(resp.status, status);
        if let Some(code) = code {
            assert_eq!(resp.json()["error"]["code"], json!(code));
        }
    };
    expect(c.post(&json!("not an object"), &[]), 400, Some(-32600));
    let raw = |body: &[u8], extra: &[(&str, &str)]| {
        let mut h = vec![JSON, ACCEPT, ("Mcp-Session-Id", c.session.as_str())];
        h.extend_from_slice(extra);
        request(srv.addr, "POST", &h, body)
    };
    expect(raw(b"{not json", &[]), 400, Some(-32700));
    let batch = b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]";
    expect(raw(batch, &[("MCP-Protocol-Version", "2025-11-25")]), 400, Some(-32600));
    expect(raw(&vec![b' '; 5 << 20], &[]), 413, None);
    expect(raw(b"{}", &[("MCP-Protocol-Version", "1999-01-01")]), 400, Some(-32022));
    let stateless_get =
        [ACCEPT, ("Mcp-Session-Id", c.session.as_str()), ("MCP-Protocol-Version", "2026-07-28")];
    expect(request(srv.addr, "GET", &stateless_get, b""), 405, None);
    expect(request(srv.addr, "PUT", &[JSON], b"{}"), 405, None);
    let text = request(srv.addr, "POST", &[("Content-Type", "text/plain"), ACCEPT], b"hi");
    expect(text, 415, None);
    let evil = request(srv.addr, "POST", &[JSON, ACCEPT, ("Host", "evil.example:80")], b"{}");
    expect(evil, 403, None);
    let evil_origin = request(srv.addr, "POST", &[JSON, ACCEPT, ("Origin", "http://evil.example")], b"{}");
    expect(evil_origin, 403, None);
    let call = json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope"}});
    let mut unknown_tool = c.post(&call, &[]);
    let got = unknown_tool.frames_until_closed(WAIT);
    assert_eq!(got.last().map(|f| f.json()["error"]["code"].clone()), Some(json!(-32602)));
    let reused = c.post(&call, &[]);
    expect(reused, 400, Some(-32600));

    let rest = running.frames_until_closed(WAIT);
    assert_eq!(rest.iter().filter_map(progress_of).collect::<Vec<_>>(), [2, 3], "the bystander saw nothing");
    assert_eq!(rest.iter().filter_map(result_id).collect::<Vec<_>>(), [1]);
    let _ = seen;
}

fn the_polling_tool_closes_its_stream_mid_call_and_the_get_resume_delivers_the_result(
    start: fn() -> TestServer,
) {
    let srv = start();
    let c = Client::initialize(srv.addr);
    let mut post = c.call(3, "test_reconnection", json!({}), &[]);
    let got = post.frames_until_closed(WAIT);
    assert_eq!(got.len(), 1, "only the priming event before the server closes: {got:?}");
    assert!(got[0].retry.is_some(), "the priming event says when to come back");
    let rest = c.get(got[0].id.as_deref()).frames_until_closed(WAIT);
    assert_eq!(rest.iter().filter_map(result_id).collect::<Vec<_>>(), [3]);
    let text: Value = rest.last().unwrap().json()["result"]["content"][0]["text"].clone();
    assert_eq!(text, json!("Reconnection test completed successfully"));
}

fn a_cancelled_call_is_never_resumed_and_never_answered(start: fn() -> TestServer) {
    let srv = start();
    let c = Client::initialize(srv.addr);
    let mut post = c.call(4, "countdown", json!({"n": 20, "interval_ms": 100}), &[]);
    let seen = frames(&mut post, 2);
    drop(post);
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}});
    assert_eq!(c.post(&cancel, &[]).status, 202);

    let mut get = c.get(seen[1].id.as_deref());
    assert_eq!(get.status, 200);
    let priming = get.next_frame(WAIT).unwrap();
    assert!(priming.is_priming(), "a fresh stream, not a resume: {priming:?}");
    assert_eq!(
        get.next_frame(QUIET),
        None,
        "no progress event of the cancelled call is replayed, and no response: MCP sends none for a cancelled request"
    );
}

fn older_clients_get_no_priming_event_but_every_event_still_carries_its_id(start: fn() -> TestServer) {
    let srv = start();
    let c = Client { version: "2025-06-18", ..Client::initialize(srv.addr) };
    let mut post = c.call(1, "countdown", json!({"n": 2, "interval_ms": 50}), &[]);
    let got = post.frames_until_closed(WAIT);
    assert_eq!(got.len(), 3, "two progress events and the result, no priming: {got:?}");
    assert!(got.iter().all(|f| f.id.is_some() && !f.data.is_empty()));
    // The first event's id is still a valid cursor for a GET resume.
    let rest = c.get(got[0].id.as_deref()).frames_until_closed(WAIT);
    assert_eq!(rest.iter().filter_map(progress_of).collect::<Vec<_>>(), [2]);
    assert_eq!(rest.iter().filter_map(result_id).collect::<Vec<_>>(), [1]);
}

fn the_journal_is_read_in_pages(start: fn() -> TestServer) {
    let srv = start();
    let c = Client::initialize(srv.addr);
    for (i, line) in ["one", "two", "three"].into_iter().enumerate() {
        let id = i as i64 + 1;
        let frames = c.call(id, "append", json!({"text": line}), &[]).frames_until_closed(WAIT);
        assert!(frames.iter().any(|f| result_id(f) == Some(id)));
    }
    let page = |id: i64, args: Value| {
        let frames = c.call(id, "journal", args, &[]).frames_until_closed(WAIT);
        frames.iter().map(Frame::json).find(|v| v["id"] == id).expect("an answer")
    };
    let first = page(10, json!({"limit": 2}));
    let content = &first["result"]["structuredContent"];
    assert_eq!((content["lines"].clone(), content["total"].clone()), (json!(["one", "two"]), json!(3)));
    assert_eq!(content["next"], json!(2));
    let rest = page(11, json!({"from": 2}));
    assert_eq!(rest["result"]["structuredContent"]["lines"], json!(["three"]));
    assert_eq!(rest["result"]["structuredContent"]["next"], Value::Null);
    assert_eq!(page(12, json!({"from": 7}))["result"]["structuredContent"]["lines"], json!([]));
    assert_eq!(page(13, json!({"limit": 101}))["error"]["code"], json!(-32602));
}

fn a_2025_03_26_batch_is_answered_request_by_request_and_resumes(start: fn() -> TestServer) {
    let srv = start();
    let mut c = Client::initialize(srv.addr);
    c.version = "2025-03-26";
    let body = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "countdown",
            "arguments": {"n": 4, "interval_ms": 150}, "_meta": {"progressToken": "b"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "test_simple_text"}},
    ]);
    let mut post = c.post(&body, &[]);
    assert_eq!(post.status, 200);
    // Up to the first progress event (the ping's answer and the quick call's may come first).
    let mut seen = Vec::new();
    while seen.last().and_then(progress_of).is_none() {
        seen.push(post.next_frame(WAIT).expect("the batch's first progress event"));
    }
    drop(post);

    let mut get = c.get(seen.last().unwrap().id.as_deref());
    assert_eq!(get.status, 200);
    let rest = get.frames_until_closed(WAIT);
    let all: Vec<&Frame> = seen.iter().chain(&rest).collect();
    assert_eq!(all.iter().filter_map(|f| progress_of(f)).collect::<Vec<_>>(), [1, 2, 3, 4]);
    let mut results: Vec<i64> = all.iter().filter_map(|f| result_id(f)).collect();
    results.sort();
    assert_eq!(results, [1, 2, 3], "every response once");
}

/// What every front must do with bad input, the SDKs' servers included: refuse it with a 4xx,
/// refuse a reused request id with `-32600` (the gate's claim on it), answer an unknown tool
/// with `-32602`, and leave other sessions untouched.
fn bad_input_is_refused_and_leaves_other_sessions_untouched(start: fn() -> TestServer) {
    let srv = start();
    let bystander = Client::initialize(srv.addr);
    let mut running = bystander.call(1, "countdown", json!({"n": 3, "interval_ms": 150}), &[]);
    let seen = frames(&mut running, 2);

    let c = Client::initialize(srv.addr);
    let headers = [JSON, ACCEPT, ("Mcp-Session-Id", c.session.as_str()), ("MCP-Protocol-Version", c.version)];
    for body in [&b"{not json"[..], b"\"not an object\"", b"{}", b"[]"] {
        let status = request(srv.addr, "POST", &headers, body).status;
        assert!((400..500).contains(&status), "{}: {status}", String::from_utf8_lossy(body));
    }
    let call = json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope"}});
    let got = c.post(&call, &[]).frames_until_closed(WAIT);
    assert_eq!(got.last().map(|f| f.json()["error"]["code"].clone()), Some(json!(-32602)));
    let reused = c.post(&call, &[]);
    assert_eq!(reused.status, 400);
    assert_eq!(reused.json()["error"]["code"], json!(-32600));

    let rest = running.frames_until_closed(WAIT);
    assert_eq!(rest.iter().filter_map(progress_of).collect::<Vec<_>>(), [2, 3], "the bystander saw nothing");
    assert_eq!(rest.iter().filter_map(result_id).collect::<Vec<_>>(), [1]);
    assert_eq!(seen.len(), 2);
}

type Scenario = (&'static str, fn(fn() -> TestServer));

/// Every scenario above, by the name the README's comparison table gives it.
const SCENARIOS: [Scenario; 15] = [
    (
        "a cut mid-stream resumes with exactly the missed events",
        a_cut_mid_stream_resumes_with_exactly_the_missed_events,
    ),
    (
        "a resume takes the stream over",
        a_resume_takes_the_stream_over_and_the_old_connection_gets_nothing_more,
    ),
    (
        "a missed terminal arrives once, then the cursor is stale",
        a_client_that_missed_the_terminal_gets_it_once_then_its_cursor_is_stale,
    ),
    (
        "a POST with a stale Last-Event-ID runs only its own call",
        a_post_carrying_a_stale_last_event_id_runs_only_its_own_call,
    ),
    (
        "append under a cut runs once, its result arrives on resume",
        append_under_a_cut_runs_exactly_once_and_its_result_arrives_on_resume,
    ),
    (
        "another session's cursor replays nothing",
        a_cursor_from_another_session_replays_nothing_and_does_not_disturb_its_owner,
    ),
    (
        "forged and malformed cursors start fresh",
        forged_and_malformed_cursors_never_replay_and_never_fail_the_server,
    ),
    (
        "unknown and deleted sessions get 404",
        unknown_and_deleted_sessions_get_404_and_a_missing_one_is_refused,
    ),
    (
        "after a restart no old event is replayed",
        after_a_restart_the_old_session_is_gone_and_no_old_event_is_replayed,
    ),
    (
        "bad input is refused, other sessions untouched",
        bad_input_is_refused_and_leaves_other_sessions_untouched,
    ),
    (
        "a polling tool's result arrives on the GET resume",
        the_polling_tool_closes_its_stream_mid_call_and_the_get_resume_delivers_the_result,
    ),
    ("a cancelled call is never resumed", a_cancelled_call_is_never_resumed_and_never_answered),
    (
        "older clients: no priming event, ids still resume",
        older_clients_get_no_priming_event_but_every_event_still_carries_its_id,
    ),
    ("the journal is read in pages", the_journal_is_read_in_pages),
    ("a 2025-03-26 batch resumes", a_2025_03_26_batch_is_answered_request_by_request_and_resumes),
];

/// What the Python SDK 2.x cannot carry, whatever its store: it accepts no JSON-RPC batch.
const PYTHON_SDK_CANNOT: [&str; 1] = ["a 2025-03-26 batch resumes"];

/// The README's side-by-side table: every scenario against the official SDKs' servers (the
/// Node and Python packages' example servers) with the SDKs' example event stores, and with
/// the gate's adapter. Written to `target/sdk-comparison.md`; the README must show the same.
#[test]
fn the_sdk_comparison_table_is_the_readmes() {
    type Column = (&'static str, fn() -> TestServer);
    let columns: [Column; 4] = [
        ("TS SDK, its example store", TestServer::node_sdk_store),
        ("TS SDK + resume-gate", TestServer::node_example),
        ("Python SDK, its example store", TestServer::python_sdk_store),
        ("Python SDK + resume-gate", TestServer::python_example),
    ];
    let mut table = format!(
        "| scenario | {} |\n|---|{}\n",
        columns.map(|(name, _)| name).join(" | "),
        ":---:|".repeat(columns.len())
    );
    let mut passed = [0; 4];
    let mut gate_failures = Vec::new();
    for (scenario, run) in SCENARIOS {
        let row: Vec<bool> =
            columns.iter().map(|(_, start)| std::panic::catch_unwind(|| run(*start)).is_ok()).collect();
        for (i, ok) in row.iter().enumerate() {
            passed[i] += usize::from(*ok);
        }
        if !row[1] || (!row[3] && !PYTHON_SDK_CANNOT.contains(&scenario)) {
            gate_failures.push(scenario);
        }
        let cells: Vec<&str> = row.iter().map(|ok| if *ok { "pass" } else { "**fail**" }).collect();
        table.push_str(&format!("| {scenario} | {} |\n", cells.join(" | ")));
    }
    table.push_str(&format!(
        "| **passed** | {} |\n",
        passed.map(|n| format!("{n}/{}", SCENARIOS.len())).join(" | ")
    ));
    println!("{table}");
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/sdk-comparison.md");
    std::fs::write(&out, &table).unwrap();
    assert!(
        gate_failures.is_empty(),
        "with the gate, every scenario the SDK can carry passes: {gate_failures:?}"
    );
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    assert!(
        readme.contains(&table),
        "the README's comparison table differs from this run's (see {})",
        out.display()
    );
}
