//! The 2026-07-28 era on the same `/mcp` as the 2025 one, over raw HTTP against every host of
//! the project (host-example, the Spin app, each over its stores, two processes sharing one):
//! no session minted or echoed, no event ids, headers that must say what the body says, and a
//! closed response stream that cancels its call — nothing resumes in this era.

use std::time::Duration;

use serde_json::{Value, json};
use tests::http::{
    ACCEPT, Client, JSON, Response, STATELESS as MODERN, Setup, TestServer, request, stateless_post,
};
use tests::on_rust_servers;

on_rust_servers!(
    a_stateless_request_is_served_without_a_session_and_its_headers_must_match,
    closing_a_stateless_stream_cancels_its_call_and_a_reissue_runs_once,
);

/// They have no session for the gate to bound: `--max-stateless-calls` does, and a 2025-era
/// session beside them is untouched.
#[test]
fn stateless_calls_beyond_their_bound_get_503_and_sessions_are_untouched() {
    let srv = TestServer::host_example_with(Setup { max_stateless_calls: Some(2), ..Setup::default() });
    let long = json!({"name": "countdown", "arguments": {"n": 100, "interval_ms": 50}, "_meta": {"progressToken": "p"}});
    let mut open: Vec<Response> = (1..=2).map(|id| post(&srv, id, "tools/call", long.clone(), &[])).collect();
    for stream in &mut open {
        assert_eq!(stream.status, 200);
        assert!(stream.next_frame(WAIT).is_some(), "it runs");
    }
    let refused = post(&srv, 3, "tools/call", long.clone(), &[]);
    assert_eq!(refused.header("retry-after"), Some("1"));
    let (status, code, _) = error_of(refused);
    assert_eq!((status, code), (503, json!(-32603)));
    let session = Client::initialize(srv.addr);
    let frames = session.call(4, "test_simple_text", json!({}), &[]).frames_until_closed(WAIT);
    assert!(frames.iter().any(|f| f.json()["id"] == 4), "a session's call is not counted");

    // A closed stream gives its slot back once the server notices (at its next event).
    drop(open.pop());
    let admitted = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        post(&srv, 5, "tools/call", json!({"name": "test_simple_text"}), &[]).status == 200
    });
    assert!(admitted, "the slot came back");
}

const WAIT: Duration = Duration::from_secs(10);

/// A 2026-07-28 POST from a client that declares no capabilities.
fn post(srv: &TestServer, id: i64, method: &str, params: Value, extra: &[(&str, &str)]) -> Response {
    stateless_post(srv.addr, id, method, params, json!({}), extra)
}

fn error_of(resp: Response) -> (u16, Value, Option<String>) {
    let status = resp.status;
    let session = resp.header("mcp-session-id").map(str::to_owned);
    (status, resp.json()["error"]["code"].clone(), session)
}

fn a_stateless_request_is_served_without_a_session_and_its_headers_must_match(start: fn() -> TestServer) {
    let srv = start();
    let session = Client::initialize(srv.addr);

    let discover = post(&srv, 1, "server/discover", json!({}), &[]);
    assert_eq!((discover.status, discover.header("mcp-session-id")), (200, None));
    let result = discover.json()["result"].clone();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"][0], MODERN);
    assert!(result["supportedVersions"].as_array().unwrap().contains(&json!("2025-11-25")));

    // Another session's id and a cursor on a stateless call: both ignored.
    let extra = [("Mcp-Session-Id", session.session.as_str()), ("Last-Event-ID", "rg1.anything")];
    let args = json!({"name": "countdown", "arguments": {"n": 2, "interval_ms": 20}, "_meta": {"progressToken": "p"}});
    let mut call = post(&srv, 2, "tools/call", args, &extra);
    assert_eq!(call.status, 200);
    assert_eq!(call.header("content-type"), Some("text/event-stream"));
    assert_eq!(call.header("mcp-session-id"), None, "no session is minted or echoed");
    let frames = call.frames_until_closed(WAIT);
    assert!(frames.iter().all(|f| f.id.is_none()), "no event ids: {frames:?}");
    let messages: Vec<Value> = frames.iter().map(|f| f.json()).collect();
    assert_eq!(messages.len(), 3, "two progress notifications and the result: {messages:?}");
    assert_eq!(messages[2]["id"], 2);
    assert_eq!(messages[2]["result"]["resultType"], "complete");

    let list = post(&srv, 3, "tools/list", json!({}), &[]).json();
    assert_eq!(
        (&list["result"]["resultType"], &list["result"]["cacheScope"]),
        (&json!("complete"), &json!("public"))
    );

    let wrong_name = post(&srv, 4, "tools/call", json!({"name": "append"}), &[("Mcp-Name", "journal")]);
    assert_eq!(error_of(wrong_name), (400, json!(-32020), None));
    let no_version_meta = {
        let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}}).to_string();
        let h = [JSON, ACCEPT, ("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/list")];
        request(srv.addr, "POST", &h, body.as_bytes())
    };
    assert_eq!(error_of(no_version_meta), (400, json!(-32602), None));
    assert_eq!(error_of(post(&srv, 6, "ping", json!({}), &[])), (404, json!(-32601), None));
    let batch = request(srv.addr, "POST", &[JSON, ACCEPT, ("MCP-Protocol-Version", MODERN)], b"[]");
    assert_eq!(error_of(batch), (400, json!(-32600), None));
    let note = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
    let accepted = request(srv.addr, "POST", &[JSON, ACCEPT, ("MCP-Protocol-Version", MODERN)], note);
    assert_eq!((accepted.status, accepted.header("mcp-session-id")), (202, None));
    for method in ["GET", "DELETE"] {
        let refused = request(srv.addr, method, &[ACCEPT, ("MCP-Protocol-Version", MODERN)], b"");
        assert_eq!((refused.status, refused.header("allow")), (405, Some("POST")), "{method}");
    }
    let version = request(srv.addr, "POST", &[JSON, ACCEPT, ("MCP-Protocol-Version", "2099-01-01")], b"{}");
    assert_eq!(error_of(version), (400, json!(-32022), None));

    // The 2025-era session beside it is untouched.
    let frames = session.call(7, "test_simple_text", json!({}), &[]).frames_until_closed(WAIT);
    assert!(frames.iter().any(|f| f.json()["id"] == 7));
}

fn closing_a_stateless_stream_cancels_its_call_and_a_reissue_runs_once(start: fn() -> TestServer) {
    let srv = start();
    let line = format!("stateless-{}", std::process::id());
    let append = json!({"name": "append", "arguments": {"text": line, "delay_ms": 2_000}});
    let mut cut = post(&srv, 1, "tools/call", append.clone(), &[]);
    assert_eq!(cut.status, 200);
    // Nothing but keep-alive comments comes until the append: the client goes away while the
    // call waits.
    let early: Vec<_> = std::iter::from_fn(|| cut.next_frame(Duration::from_millis(300))).take(1).collect();
    assert!(early.iter().all(|f| f.data.is_empty()), "{early:?}");
    drop(cut);
    // Past the append's delay, with a margin: a host that learns of the cut by writing (the
    // Spin app) learns it within two of its 200 ms beats.
    std::thread::sleep(Duration::from_millis(2_500));
    let count = || srv.journal_lines().iter().filter(|l| **l == line).count();
    assert_eq!(count(), 0, "the call was cancelled with its stream: nothing was written");

    let frames = post(&srv, 2, "tools/call", append, &[]).frames_until_closed(WAIT);
    let result = frames.iter().map(|f| f.json()).find(|m| m["id"] == 2).expect("the re-issued call's result");
    assert_eq!(result["result"]["resultType"], "complete");
    assert_eq!(count(), 1, "the re-issued call ran once");
}
