//! Owner leases, end to end on the Spin app (an instance per request, state in the key-value
//! store): the instance running a call is stopped mid-`countdown`, as a crash or an evicted
//! serverless instance would be. The client's reconnect gets the events stored before the stop,
//! then the JSON-RPC `-32001` error for its call, once, within the lease — never a wait without
//! end — and the session lives on. On a store that answers like each of Spin's backends.

use std::time::Duration;

use resume_gate::kv::Semantics;
use serde_json::json;
use tests::http::{Client, Frame, Setup, TestServer};

/// Short, so that the test does not wait ten seconds; a running call renews it every third.
const LEASE_MS: u64 = 1_000;
/// Longer than the lease plus a poll, shorter than the front's 10 s follow window: a frame
/// that does not come within it would have meant a wait without end.
const WAIT: Duration = Duration::from_secs(4);

fn progress_of(f: &Frame) -> Option<u64> {
    f.json()["params"]["progress"].as_u64()
}

fn a_stopped_instance_strands_its_call_at_once_and_the_session_lives_on(kv_semantics: Semantics) {
    let srv = TestServer::edge_with(Setup { lease_ms: Some(LEASE_MS), kv_semantics, ..Setup::default() });
    let c = Client::initialize(srv.addr);
    let mut post = c.call(1, "countdown", json!({"n": 50, "interval_ms": 100}), &[]);
    assert_eq!(post.status, 200);
    let seen: Vec<Frame> = (0..4).map(|_| post.next_frame(WAIT).expect("priming and progress")).collect();
    assert_eq!(progress_of(&seen[3]), Some(3));
    assert_eq!(srv.stop_instances(), 1, "the instance running the call");
    drop(post);

    let mut get = c.get(seen[3].id.as_deref());
    assert_eq!(get.status, 200);
    let rest = get.frames_until_closed(WAIT);
    let last = rest.last().expect("the stream ends with a frame").json();
    assert_eq!(last["id"], json!(1), "the call's own id: {rest:?}");
    assert_eq!(last["error"]["code"], json!(-32001), "the call's result is lost: {rest:?}");
    let progress: Vec<u64> = rest.iter().filter_map(progress_of).collect();
    let expected: Vec<u64> = (4..4 + progress.len() as u64).collect();
    assert_eq!(progress, expected, "what was stored before the stop, each once, in order");
    let errors = rest.iter().filter(|f| f.json().get("error").is_some()).count();
    assert_eq!(errors, 1, "the error once");
    assert!(rest.iter().all(|f| f.retry.is_none()), "no 'poll again': the call is over");

    let mut next = c.call(2, "test_simple_text", json!({}), &[]);
    let frames = next.frames_until_closed(WAIT);
    let result = frames.iter().map(Frame::json).find(|v| v["id"] == json!(2)).expect("a response");
    assert_eq!(result["result"]["content"][0]["text"], json!("This is a simple text response for testing."));
}

#[test]
fn a_stopped_instance_strands_its_call_at_once_and_the_session_lives_on_sqlite() {
    a_stopped_instance_strands_its_call_at_once_and_the_session_lives_on(Semantics::Sqlite);
}

#[test]
fn a_stopped_instance_strands_its_call_at_once_and_the_session_lives_on_redis() {
    a_stopped_instance_strands_its_call_at_once_and_the_session_lives_on(Semantics::Redis);
}

/// The other side of the lease: a call that runs longer than the lease without an event keeps
/// its stream by heartbeats, and its result arrives on the resume.
#[test]
fn a_call_silent_for_longer_than_the_lease_keeps_its_stream_by_heartbeats() {
    let srv = TestServer::edge_with(Setup { lease_ms: Some(300), ..Setup::default() });
    let c = Client::initialize(srv.addr);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "countdown", "arguments": {"n": 1, "interval_ms": 1500}}});
    let mut post = c.post(&body, &[]);
    let priming = post.next_frame(WAIT).expect("a priming event");
    drop(post);
    let mut get = c.get(priming.id.as_deref());
    let rest = get.frames_until_closed(WAIT);
    let last = rest.last().expect("the result").json();
    assert_eq!(last["result"]["content"][0]["text"], json!("done"), "{rest:?}");
}
