//! Exactly once per (session, request id), whatever carries the request: every element of
//! a batch claims its id before any runs, and a duplicate runs nothing.
use std::cell::RefCell;

use super::*;
use crate::calls::PendingCall;
use crate::exchange::{Events, Options};

fn batch(h: &mut Harness, session: &str, version: Option<&str>, body: Value) -> Reply {
    let mut req = post(Some(session), &body);
    req.headers.retain(|(n, _)| n != "mcp-protocol-version");
    if let Some(v) = version {
        req.headers.push(("mcp-protocol-version".into(), v.as_bytes().to_vec()));
    }
    h.handle(&req)
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

fn ping(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

/// Answers the stream's requests as a host does, through an `Exchange`; the messages
/// written. `cancelled` were cancelled before anything ran; after `vanish_after` events the
/// session is ended under the call.
fn run(
    h: &mut Harness,
    st: &Stream,
    journal: &RefCell<Vec<String>>,
    cancelled: &[RequestId],
    vanish_after: Option<usize>,
) -> Vec<Value> {
    let options = Options { timing: Default::default(), shared: false, events: Events::Here };
    let mut exchange = crate::exchange::Exchange::new(st.clone(), options, 0);
    for id in cancelled {
        exchange.handle_cancel(id);
    }
    let mut driver = driver::Driver { gate: &mut h.gate, journal, now: 0, vanish_after, written: Vec::new() };
    driver.serve(&mut exchange);
    messages(&Stream { frames: driver.written, ..st.clone() })
}
fn ids(messages: &[Value]) -> Vec<Value> {
    messages.iter().map(|m| m["id"].clone()).collect()
}

fn codes(messages: &[Value]) -> Vec<Option<i64>> {
    messages.iter().map(|m| m["error"]["code"].as_i64()).collect()
}

#[test]
fn a_2025_03_26_batch_of_requests_is_answered_on_one_stream_in_order() {
    let mut h = Harness::new();
    let s = h.initialize();
    let body = json!([
        ping(1),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "no/such"},
        17,
    ]);
    let st = stream(batch(&mut h, &s, None, body));
    assert!(messages(&st).is_empty(), "nothing is answered before the host's turn: {st:?}");
    let journal = RefCell::new(Vec::new());
    let sent = run(&mut h, &st, &journal, &[], None);
    assert_eq!(
        ids(&sent),
        [json!(1), json!(2), json!(3), Value::Null],
        "one response per request, then the error"
    );
    let status = h.gate.check_stream(&s, st.stream, st.attachment).unwrap();
    assert!(!status.running, "the last response is the terminal event");
    let again = json!([ping(1)]);
    assert_eq!(plain(batch(&mut h, &s, Some("2025-03-26"), again)).status, 400, "id 1 was claimed");
}

#[test]
fn tool_calls_in_a_batch_run_after_the_transports_answers_in_order() {
    let mut h = Harness::new();
    let s = h.initialize();
    let body =
        json!([call(5, "append", json!({"text": "a"})), ping(6), call(7, "append", json!({"text": "b"}))]);
    let st = stream(batch(&mut h, &s, Some("2025-03-26"), body));
    let order: Vec<Option<&RequestId>> = st.calls.iter().map(PendingCall::id).collect();
    assert_eq!(
        order,
        [Some(&RequestId::Number(6)), Some(&RequestId::Number(5)), Some(&RequestId::Number(7))]
    );
    let journal = RefCell::new(Vec::new());
    let sent = run(&mut h, &st, &journal, &[], None);
    assert_eq!(ids(&sent), [json!(6), json!(5), json!(7)]);
    assert_eq!(*journal.borrow(), ["a", "b"]);
}

#[test]
fn a_request_of_a_batch_whose_id_is_reused_alone_later_runs_nothing() {
    let mut h = Harness::new();
    let s = h.initialize();
    let journal = RefCell::new(Vec::new());
    let st = stream(batch(&mut h, &s, None, json!([ping(10), call(11, "append", json!({"text": "x"}))])));
    run(&mut h, &st, &journal, &[], None);
    let again = post(Some(&s), &call(11, "append", json!({"text": "x"})));
    let p = plain(h.handle(&again));
    assert_eq!((p.status, error_code(&p)), (400, INVALID_REQUEST));
    assert_eq!(journal.borrow().len(), 1, "append ran once");
}

#[test]
fn a_duplicate_inside_one_batch_gets_its_own_32600_and_runs_nothing() {
    let mut h = Harness::new();
    let s = h.initialize();
    let journal = RefCell::new(Vec::new());
    let body = json!([call(20, "append", json!({"text": "x"})), call(20, "append", json!({"text": "x"}))]);
    let st = stream(batch(&mut h, &s, None, body));
    let sent = run(&mut h, &st, &journal, &[], None);
    assert_eq!(codes(&sent), [Some(INVALID_REQUEST), None], "the refusal is answered first, then the call");
    assert_eq!(journal.borrow().len(), 1, "append ran once");
}

#[test]
fn a_batch_reusing_an_id_the_session_holds_refuses_that_element_and_answers_the_rest() {
    let mut h = Harness::new();
    let s = h.initialize();
    let journal = RefCell::new(Vec::new());
    let alone = stream(h.handle(&post(Some(&s), &call(30, "append", json!({"text": "x"})))));
    run(&mut h, &alone, &journal, &[], None);
    let st = stream(batch(&mut h, &s, None, json!([ping(31), call(30, "append", json!({"text": "x"}))])));
    let sent = run(&mut h, &st, &journal, &[], None);
    assert_eq!(ids(&sent), [json!(31), json!(30)]);
    assert_eq!(codes(&sent), [None, Some(INVALID_REQUEST)]);
    assert_eq!(journal.borrow().len(), 1, "append ran once");

    let all_used = json!([call(30, "append", json!({"text": "x"})), ping(31)]);
    let p = plain(batch(&mut h, &s, None, all_used));
    let refused: Value = serde_json::from_str(p.body.as_deref().unwrap()).unwrap();
    assert_eq!(p.status, 400, "every id used before: nothing to stream");
    assert_eq!(refused.as_array().map(Vec::len), Some(2), "one -32600 each: {refused}");
    assert_eq!(journal.borrow().len(), 1);
}

#[test]
fn a_cancelled_request_of_a_batch_gets_no_response_and_the_others_do() {
    let mut h = Harness::new();
    let s = h.initialize();
    let journal = RefCell::new(Vec::new());
    let body =
        json!([call(40, "append", json!({"text": "a"})), call(41, "append", json!({"text": "b"})), ping(42)]);
    let st = stream(batch(&mut h, &s, None, body));
    assert!(h.gate.abort_request(&s, &RequestId::Number(41)).unwrap(), "the gate finds any element");
    let status = h.gate.check_stream(&s, st.stream, st.attachment).unwrap();
    assert_eq!((status.running, &status.cancelled[..]), (true, &[RequestId::Number(41)][..]));
    let sent = run(&mut h, &st, &journal, &status.cancelled, None);
    assert_eq!(ids(&sent), [json!(42), json!(40)]);
    assert!(!h.gate.check_stream(&s, st.stream, st.attachment).unwrap().running, "answered to the end");
    assert_eq!(*journal.borrow(), ["a"], "the cancelled call never ran");
}

#[test]
fn a_batch_whose_last_request_was_cancelled_ends_with_an_empty_terminal_event() {
    let mut h = Harness::new();
    let s = h.initialize();
    let journal = RefCell::new(Vec::new());
    let st = stream(batch(&mut h, &s, None, json!([ping(50), call(51, "append", json!({"text": "a"}))])));
    h.gate.abort_request(&s, &RequestId::Number(51)).unwrap();
    let sent = run(&mut h, &st, &journal, &[RequestId::Number(51)], None);
    assert_eq!(ids(&sent), [json!(50)]);
    let status = h.gate.check_stream(&s, st.stream, st.attachment).unwrap();
    assert!(!status.running, "the stream ended with its terminal event");
    assert!(journal.borrow().is_empty());
    // Cancelling every request ends the stream.
    let st = stream(batch(&mut h, &s, None, json!([ping(52), ping(53)])));
    h.gate.abort_request(&s, &RequestId::Number(52)).unwrap();
    assert!(h.gate.check_stream(&s, st.stream, st.attachment).unwrap().running);
    h.gate.abort_request(&s, &RequestId::Number(53)).unwrap();
    assert!(!h.gate.check_stream(&s, st.stream, st.attachment).unwrap().running);
}

#[test]
fn a_resume_takes_over_the_whole_batch_and_a_stranded_batch_names_each_request() {
    let mut h = Harness::new();
    let s = h.initialize();
    let journal: RefCell<Vec<String>> = RefCell::new(Vec::new());
    let st = stream(batch(&mut h, &s, None, json!([ping(60), call(61, "append", json!({"text": "a"}))])));
    // The ping was answered, then the connection dropped; the GET resume takes the stream over.
    let pong = h.gate.emit(&s, st.stream, r#"{"jsonrpc":"2.0","id":60,"result":{}}"#).unwrap();
    let cursor = pong.id;
    h.gate.detach(&s, st.stream, st.attachment).unwrap();
    let resumed = h.get(&s, &cursor);
    assert_eq!((resumed.stream, resumed.decision.as_ref().map(|d| d.resumed)), (st.stream, Some(true)));
    let old = h.gate.check_stream(&s, st.stream, st.attachment).unwrap();
    assert!(!old.attached && old.running, "the batch runs on, for the new connection");
    // Its writer then stops renewing its lease: every request of the batch is stranded.
    h.gate.advance(resume_gate::Config::DEFAULT_LEASE_MS + 1);
    let after = h.get(&s, &cursor);
    assert_eq!(after.decision.unwrap().stranded, [RequestId::Number(60), RequestId::Number(61)]);
    assert!(journal.borrow().is_empty());
}

#[test]
fn a_call_whose_state_vanished_answers_its_requests_with_32001_at_once() {
    let mut h = Harness::new();
    let s = h.initialize();
    let journal = RefCell::new(Vec::new());
    let body = json!([ping(70), call(71, "countdown", json!({"n": 3, "interval_ms": 0})), ping(72)]);
    let mut st = stream(batch(&mut h, &s, None, body));
    for pending in &mut st.calls {
        if let PendingCall::Tool { call, .. } = pending {
            call.progress_token = Some(json!("p"));
        }
    }
    let journal: RefCell<Vec<String>> = journal;
    let sent = run(&mut h, &st, &journal, &[], Some(1));
    let lost: Vec<&Value> =
        sent.iter().filter(|m| m["error"]["code"] == RESULT_LOST).map(|m| &m["id"]).collect();
    assert_eq!(lost, [&json!(72), &json!(71)], "every request not answered yet: {sent:?}");
}

#[test]
fn batches_are_bounded_before_anything_is_claimed() {
    let mut h = Harness::new();
    let s = h.initialize();
    let max = h.server.config.max_batch;
    let over: Vec<Value> = (0..=max as i64).map(ping).collect();
    let p = plain(batch(&mut h, &s, None, Value::Array(over)));
    assert_eq!((p.status, error_code(&p)), (400, INVALID_REQUEST));
    assert!(p.body.unwrap().contains(&max.to_string()), "the error names the bound");
    let at: Vec<Value> = (0..max as i64).map(ping).collect();
    let st = stream(batch(&mut h, &s, None, Value::Array(at)));
    let journal = RefCell::new(Vec::new());
    let sent = run(&mut h, &st, &journal, &[], None);
    assert_eq!(sent.len(), max, "ids 0 to max - 1 were free: the refused batch claimed none");
}

#[test]
fn notifications_alone_are_accepted_and_cancel_what_they_name() {
    let mut h = Harness::new();
    let s = h.initialize();
    let body = json!([
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "b"}},
        {"jsonrpc": "2.0", "id": 9, "result": {}},
    ]);
    let Reply::Accepted { cancels, .. } = batch(&mut h, &s, None, body) else { panic!("202") };
    assert_eq!(cancels, [RequestId::Number(1), RequestId::Text("b".into())]);
}

#[test]
fn later_revisions_empty_batches_and_a_batched_initialize_are_400() {
    let mut h = Harness::new();
    let s = h.initialize();
    let ping = json!([ping(1)]);
    for version in ["2025-06-18", "2025-11-25"] {
        let p = plain(batch(&mut h, &s, Some(version), ping.clone()));
        assert_eq!((p.status, error_code(&p)), (400, INVALID_REQUEST), "{version}");
    }
    let p = plain(batch(&mut h, &s, None, json!([])));
    assert_eq!((p.status, error_code(&p)), (400, INVALID_REQUEST));
    let init = json!([{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}]);
    assert_eq!(plain(batch(&mut h, &s, None, init)).status, 400);
    assert_eq!(plain(batch(&mut h, "nobody", None, ping)).status, 404);
}

#[test]
fn pathologically_nested_json_is_a_400_parse_error() {
    let mut h = Harness::new();
    let s = h.initialize();
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let req = HttpRequest { body: deep.into_bytes(), ..request("POST", Some(&s)) };
    let p = plain(h.handle(&req));
    assert_eq!((p.status, error_code(&p)), (400, PARSE_ERROR));
    let mut req = post(Some(&s), &json!({}));
    req.body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{}{}}}",
        "{\"a\":".repeat(50_000),
        "}".repeat(50_000)
    )
    .into_bytes();
    let p = plain(h.handle(&req));
    assert_eq!((p.status, error_code(&p)), (400, PARSE_ERROR));
}
