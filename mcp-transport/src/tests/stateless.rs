//! The 2026-07-28 era on the same endpoint: no session, no gate, headers that must say what
//! the body says, and a closed stream that cancels its call.

use std::cell::RefCell;

use super::*;
use crate::exchange::{Events, Exchange, Options, Timing};

const MODERN: &str = "2026-07-28";

/// A 2026-07-28 POST as the spec writes it: its version in the header and in `_meta`, its
/// method (and name) mirrored into `Mcp-Method` (and `Mcp-Name`).
fn modern(method: &str, mut params: Value) -> HttpRequest {
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(MODERN);
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut req = with_header(post(None, &body), "mcp-protocol-version", MODERN.as_bytes());
    req.headers.push(("mcp-method".into(), method.as_bytes().to_vec()));
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        req.headers.push(("mcp-name".into(), name.as_bytes().to_vec()));
    }
    req
}

fn body(p: &Plain) -> Value {
    serde_json::from_str(p.body.as_deref().expect("a body")).unwrap()
}

fn countdown(n: u64) -> HttpRequest {
    modern(
        "tools/call",
        json!({"name": "countdown", "arguments": {"n": n, "interval_ms": 10}, "_meta": {"progressToken": "p"}}),
    )
}

#[test]
fn server_discover_names_both_eras_and_who_answers() {
    let mut h = Harness::new();
    let p = plain(h.handle(&modern("server/discover", json!({}))));
    assert_eq!((p.status, p.session.as_deref()), (200, None));
    let result = &body(&p)["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]));
    assert_eq!(result["capabilities"]["tools"], json!({"listChanged": false}));
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "resume-gate");
}

#[test]
fn tools_list_is_a_cacheable_complete_result() {
    let mut h = Harness::new();
    let result = body(&plain(h.handle(&modern("tools/list", json!({})))))["result"].clone();
    assert_eq!((&result["resultType"], &result["cacheScope"]), (&json!("complete"), &json!("public")));
    assert!(result["ttlMs"].as_u64().is_some());
    assert!(result["tools"].as_array().unwrap().iter().any(|t| t["name"] == "append"));
}

#[test]
fn a_tool_call_gets_a_stream_of_its_own_that_the_gate_never_sees() {
    let mut h = Harness::new();
    let before = h.gate.counters().unwrap();
    let mut req = countdown(2);
    // A session-era header and cursor on a stateless request: both ignored.
    req.headers.push(("mcp-session-id".into(), b"someone-elses".to_vec()));
    req.headers.push(("last-event-id".into(), b"rg1.whatever".to_vec()));
    let st = stream(h.handle(&req));
    assert!(!st.resumable && st.frames.is_empty(), "no priming event: nothing is resumable");
    let headers = st.headers();
    assert!(
        headers.iter().all(|(n, _)| *n != "mcp-session-id"),
        "no session id is minted or echoed: {headers:?}"
    );
    assert!(headers.contains(&("x-accel-buffering", "no")));
    let mut exchange =
        Exchange::new(st, Options { timing: Timing::default(), shared: true, events: Events::Elsewhere }, 0);
    let journal = RefCell::new(Vec::new());
    let mut driver = driver::Driver::new(&mut h.gate, &journal);
    driver.serve(&mut exchange);
    assert!(driver.written.iter().all(|f| !f.contains("id: ")), "no event ids: {:?}", driver.written);
    let sent: Vec<Value> = driver
        .written
        .iter()
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect();
    assert_eq!(sent.len(), 3, "two progress notifications and the result: {sent:?}");
    assert_eq!(sent[2]["result"]["resultType"], "complete");
    assert_eq!(sent[2]["result"]["content"][0]["text"], "done");
    assert_eq!(h.gate.counters().unwrap(), before, "the gate was not called");
}

#[test]
fn closing_the_stream_cancels_its_call() {
    let mut h = Harness::new();
    let st = stream(h.handle(&countdown(1000)));
    let mut exchange =
        Exchange::new(st, Options { timing: Timing::default(), shared: false, events: Events::Here }, 0);
    let call = exchange.poll_call(&mut h.gate, 0).expect("the call");
    assert!(matches!(call, crate::calls::PendingCall::Tool { .. }));
    assert!(exchange.handle_event(&mut h.gate, r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#));
    assert!(exchange.poll_transmit().is_some());
    exchange.handle_closed(&mut h.gate);
    assert!(!exchange.call_running(), "the tool is told to stop");
    assert!(!exchange.handle_event(&mut h.gate, "{}"), "and takes no more events");
    exchange.handle_response(&mut h.gate, r#"{"jsonrpc":"2.0","id":7,"result":{}}"#);
    assert_eq!(exchange.poll_transmit(), None, "nothing is sent for a cancelled call");
    assert_eq!(exchange.poll_call(&mut h.gate, 0), None);
    assert!(exchange.is_finished());
}

#[test]
fn logging_reaches_only_a_request_that_names_a_level() {
    let mut h = Harness::new();
    for (meta, expected) in [(json!({}), 0), (json!({"io.modelcontextprotocol/logLevel": "info"}), 3)] {
        let st =
            stream(h.handle(&modern("tools/call", json!({"name": "test_tool_with_logging", "_meta": meta}))));
        let mut exchange =
            Exchange::new(st, Options { timing: Timing::default(), shared: false, events: Events::Here }, 0);
        let journal = RefCell::new(Vec::new());
        let mut driver = driver::Driver::new(&mut h.gate, &journal);
        driver.serve(&mut exchange);
        let logs = driver.written.iter().filter(|f| f.contains("notifications/message")).count();
        assert_eq!(logs, expected);
    }
}

#[test]
fn subscriptions_listen_is_acknowledged_held_and_ended_gracefully() {
    let mut h = Harness::new();
    let st = stream(
        h.handle(&modern("subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}))),
    );
    let ack: Value = serde_json::from_str(st.frames[0].strip_prefix("data: ").unwrap().trim()).unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
    assert_eq!(ack["params"]["notifications"], json!({}), "none honoured: our tools never change");
    let timing = Timing { follow_ms: 1_000, ..Timing::default() };
    let mut exchange = Exchange::new(st, Options { timing, shared: true, events: Events::Elsewhere }, 0);
    assert!(exchange.poll_transmit().is_some());
    assert_eq!(exchange.poll_timeout(), Some(1_000));
    exchange.handle_timeout(&mut h.gate, 999);
    assert!(!exchange.is_finished(), "held until its deadline");
    exchange.handle_timeout(&mut h.gate, 1_000);
    let farewell = exchange.poll_transmit().unwrap();
    assert!(farewell.contains(r#""id":7"#) && farewell.contains(r#""resultType":"complete""#), "{farewell}");
    assert!(exchange.is_finished());
}

#[test]
fn headers_must_say_what_the_body_says() {
    let mut h = Harness::new();
    let call = || modern("tools/call", json!({"name": "append", "arguments": {"text": "x"}}));
    let mismatch = |h: &mut Harness, req: HttpRequest, why: &str| {
        let p = plain(h.handle(&req));
        assert_eq!((p.status, error_code(&p)), (400, -32020), "{why}");
        assert_eq!(body(&p)["id"], 7, "{why}: the error answers the request");
    };
    let mut no_method = call();
    no_method.headers.retain(|(n, _)| n != "mcp-method");
    mismatch(&mut h, no_method, "no Mcp-Method");
    mismatch(&mut h, with_header(call(), "mcp-method", b"tools/list"), "another Mcp-Method");
    let mut no_name = call();
    no_name.headers.retain(|(n, _)| n != "mcp-name");
    mismatch(&mut h, no_name, "no Mcp-Name on tools/call");
    mismatch(&mut h, with_header(call(), "mcp-name", b"journal"), "another Mcp-Name");
    mismatch(
        &mut h,
        with_header(call(), "mcp-name", b"=?base64?am91cm5hbA==?="),
        "another Mcp-Name, encoded",
    );
    mismatch(&mut h, with_header(call(), "mcp-name", b"app\x01end"), "an invalid character");
    let encoded = with_header(call(), "mcp-name", b"=?base64?YXBwZW5k?=");
    assert!(matches!(h.handle(&encoded), Reply::Stream(_)), "the base64 sentinel is decoded first");

    let with_meta = |meta: Value| {
        let mut req = call();
        let mut b: Value = serde_json::from_slice(&req.body).unwrap();
        b["params"]["_meta"] = meta;
        req.body = b.to_string().into_bytes();
        req
    };
    let (version, capabilities) =
        ("io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities");
    for (meta, why) in [
        (Value::Null, "no _meta"),
        (json!({capabilities: {}}), "no protocol version in _meta"),
        (json!({version: MODERN}), "no client capabilities in _meta"),
    ] {
        let p = plain(h.handle(&with_meta(meta)));
        assert_eq!((p.status, error_code(&p), &body(&p)["id"]), (400, INVALID_PARAMS, &json!(7)), "{why}");
    }
    mismatch(
        &mut h,
        with_meta(json!({version: "2025-11-25", capabilities: {}})),
        "another protocol version in _meta",
    );

    // A session-era POST whose body claims the new revision without the header.
    let mut headerless = call();
    headerless.headers.retain(|(n, _)| n != "mcp-protocol-version");
    mismatch(&mut h, headerless, "_meta names 2026-07-28 but no MCP-Protocol-Version");
}

#[test]
fn an_x_mcp_header_parameter_must_be_mirrored_into_its_header() {
    let mut h = Harness::new();
    let call = |region: Value| {
        modern("tools/call", json!({"name": "test_param_header", "arguments": {"region": region}}))
    };
    let p = plain(h.handle(&call(json!("eu-west"))));
    assert_eq!((p.status, error_code(&p)), (400, -32020), "the header is missing");
    for (value, header) in
        [("eu-west", &b"eu-west"[..]), ("Hello", b"=?base64?SGVsbG8=?="), ("=?base64?x", b"=?base64?x")]
    {
        let req = with_header(call(json!(value)), "mcp-param-region", header);
        assert!(matches!(h.handle(&req), Reply::Stream(_)), "{value}");
    }
    for header in [&b"us-east"[..], b"=?base64?SGVs!!!bG8=?=", b"=?base64?SGVsbG8?="] {
        let p = plain(h.handle(&with_header(call(json!("Hello")), "mcp-param-region", header)));
        assert_eq!((p.status, error_code(&p)), (400, -32020), "{}", String::from_utf8_lossy(header));
    }
    let absent = modern("tools/call", json!({"name": "test_param_header", "arguments": {}}));
    assert!(matches!(h.handle(&absent), Reply::Stream(_)), "no value, no header expected");
}

#[test]
fn unknown_and_removed_methods_are_404_with_method_not_found() {
    let mut h = Harness::new();
    for method in ["initialize", "ping", "logging/setLevel", "resources/list", "no/such"] {
        let p = plain(h.handle(&modern(method, json!({}))));
        assert_eq!((p.status, error_code(&p)), (404, METHOD_NOT_FOUND), "{method}");
    }
}

#[test]
fn what_a_stateless_client_may_not_send_is_refused_plainly() {
    let mut h = Harness::new();
    let batch = HttpRequest { body: b"[]".to_vec(), ..modern("tools/list", json!({})) };
    let p = plain(h.handle(&batch));
    assert_eq!((p.status, error_code(&p)), (400, INVALID_REQUEST));
    let response =
        HttpRequest { body: br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec(), ..modern("x", json!({})) };
    assert_eq!(plain(h.handle(&response)).status, 400);
    let note = HttpRequest {
        body: br#"{"jsonrpc":"2.0","method":"notifications/x"}"#.to_vec(),
        ..modern("x", json!({}))
    };
    let p = plain(h.handle(&note));
    assert_eq!((p.status, p.session), (202, None));
    let junk = HttpRequest { body: b"{not json".to_vec(), ..modern("x", json!({})) };
    assert_eq!(error_code(&plain(h.handle(&junk))), PARSE_ERROR);
    for method in ["GET", "DELETE"] {
        let req = with_header(request(method, Some("s")), "mcp-protocol-version", MODERN.as_bytes());
        let p = plain(h.handle(&req));
        assert_eq!((p.status, p.allow), (405, Some("POST")), "{method}");
    }
    let p = plain(h.handle(&with_header(modern("tools/list", json!({})), "accept", b"text/event-stream")));
    assert_eq!(p.status, 406);
    let p = plain(h.handle(&modern("tools/call", json!({"name": 3}))));
    assert_eq!((p.status, error_code(&p)), (400, -32020), "a name that is not a string matches no Mcp-Name");
}

#[test]
fn a_session_and_a_stateless_call_never_share_state() {
    let mut h = Harness::new();
    let session = h.initialize();
    let st = stream(h.handle(&countdown(1)));
    assert_ne!(st.session, session, "a stateless stream is keyed apart from every session");
    let mut mixed = countdown(1);
    mixed.headers.push(("mcp-session-id".into(), session.as_bytes().to_vec()));
    let st = stream(h.handle(&mixed));
    assert!(!st.resumable);
    assert_ne!(st.session, session, "a session header does not put a stateless call in that session");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let mut req = post(None, &init);
    req.headers.retain(|(n, _)| n != "mcp-protocol-version");
    let p = plain(h.handle(&req));
    assert_eq!(p.status, 200);
    assert!(p.session.is_some(), "initialize without the 2026-07-28 header opens a session");
}

#[test]
fn an_unsupported_version_answers_the_request_by_its_id() {
    let mut h = Harness::new();
    let req = with_header(modern("tools/list", json!({})), "mcp-protocol-version", b"2099-01-01");
    let p = plain(h.handle(&req));
    assert_eq!((p.status, error_code(&p), &body(&p)["id"]), (400, -32022, &json!(7)));
}
