//! The sans-IO exchange: what every host's serving loop does, in process.
use std::cell::RefCell;

use resume_gate::Config;

use super::*;
use crate::exchange::{Events, Exchange, Options, Timing};

const TIMING: Timing = Timing { lease_ms: 900, poll_ms: 25, follow_ms: 1_000, retry_ms: 250 };

fn options(shared: bool, events: Events) -> Options {
    Options { timing: TIMING, shared, events }
}

fn serve(h: &mut Harness, exchange: &mut Exchange, journal: &RefCell<Vec<String>>) -> Vec<Value> {
    let mut driver = driver::Driver::new(&mut h.gate, journal);
    driver.serve(exchange);
    driver
        .written
        .iter()
        .filter_map(|f| f.lines().find_map(|l| l.strip_prefix("data: ")))
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn countdown(h: &mut Harness, s: &str, id: i64, n: u64, interval_ms: u64) -> Stream {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "countdown",
        "arguments": {"n": n, "interval_ms": interval_ms}, "_meta": {"progressToken": "t"}}});
    stream(h.handle(&post(Some(s), &body)))
}

#[test]
fn a_call_answers_its_request_once_with_every_event_before_the_terminal() {
    let mut h = Harness::new();
    let s = h.initialize();
    let st = countdown(&mut h, &s, 1, 3, 10);
    let mut exchange = Exchange::new(st, options(false, Events::Here), 0);
    let sent = serve(&mut h, &mut exchange, &RefCell::new(Vec::new()));
    let progress = sent.iter().filter(|m| m["method"] == "notifications/progress").count();
    assert_eq!((progress, &sent.last().unwrap()["id"]), (3, &json!(1)), "{sent:?}");
    assert!(exchange.is_finished());
}

#[test]
fn a_waiting_call_renews_its_lease_every_third_of_it_and_is_never_stranded() {
    let mut h = Harness::new();
    let s = h.initialize();
    // One wait of three leases without an event: only heartbeats keep the stream.
    let st = countdown(&mut h, &s, 1, 1, 3 * TIMING.lease_ms);
    h.gate.configure(&Config { lease_ms: TIMING.lease_ms, ..Config::default() }).unwrap();
    let cursor = first_id(&st);
    let mut exchange = Exchange::new(st, options(false, Events::Here), 0);
    let sent = serve(&mut h, &mut exchange, &RefCell::new(Vec::new()));
    assert!(sent.last().unwrap().get("result").is_some(), "{sent:?}");
    let resumed = h.get(&s, &cursor);
    assert!(resumed.decision.unwrap().stranded.is_empty(), "its writer held the lease throughout");
}

#[test]
fn a_closed_connection_is_detached_and_the_call_goes_on_recording() {
    let mut h = Harness::new();
    let s = h.initialize();
    let st = countdown(&mut h, &s, 1, 2, 10);
    let cursor = first_id(&st);
    let mut exchange = Exchange::new(st, options(false, Events::Here), 0);
    exchange.handle_closed(&mut h.gate);
    let sent = serve(&mut h, &mut exchange, &RefCell::new(Vec::new()));
    assert!(sent.is_empty(), "nothing is written to a closed connection: {sent:?}");
    let resumed = h.get(&s, &cursor);
    let replay = messages(&resumed);
    assert_eq!(replay.len(), 3, "two progress events and the result, stored: {replay:?}");
    assert!(resumed.close, "the replay ends with the terminal");
}

#[test]
fn with_a_shared_store_a_resume_elsewhere_ends_this_connection_and_the_call_goes_on() {
    let mut h = Harness::new();
    let s = h.initialize();
    let st = countdown(&mut h, &s, 1, 3, 10);
    let cursor = first_id(&st);
    let mut exchange = Exchange::new(st, options(true, Events::Here), 0);
    // The client resumed on another instance before the call's first event.
    h.gate.detach(&s, exchange.stream(), exchange.attachment()).unwrap();
    let elsewhere = h.get(&s, &cursor);
    assert_eq!(elsewhere.decision.as_ref().map(|d| d.resumed), Some(true));
    let sent = serve(&mut h, &mut exchange, &RefCell::new(Vec::new()));
    assert!(sent.is_empty(), "the taken-over connection gets nothing: {sent:?}");
    assert!(!exchange.is_connected());
    let polled = h.gate.poll(&s, elsewhere.stream, elsewhere.attachment, elsewhere.follow_after).unwrap();
    assert_eq!(polled.events.len(), 4, "every event recorded for the resume: {polled:?}");
}

#[test]
fn a_follower_writes_each_event_once_then_ends_at_the_terminal() {
    let mut h = Harness::new();
    let s = h.initialize();
    let st = countdown(&mut h, &s, 1, 0, 0);
    let cursor = first_id(&st);
    h.gate.detach(&s, st.stream, st.attachment).unwrap();
    for i in 1..=2 {
        h.gate.emit(&s, st.stream, &format!("{{\"progress\":{i}}}")).unwrap();
    }
    let resumed = h.get(&s, &cursor);
    let mut follower = Exchange::new(resumed, options(true, Events::Elsewhere), 0);
    while follower.poll_transmit().is_some() {}
    h.gate.emit(&s, st.stream, "{\"progress\":3}").unwrap();
    h.gate.terminal(&s, st.stream, "{\"id\":1,\"result\":{}}").unwrap();
    let sent = serve(&mut h, &mut follower, &RefCell::new(Vec::new()));
    assert_eq!(sent, [json!({"progress": 3}), json!({"id": 1, "result": {}})], "only what came after");
    assert!(follower.is_finished());
}

#[test]
fn a_follower_asks_the_client_to_poll_again_when_its_time_is_up() {
    let mut h = Harness::new();
    let s = h.initialize();
    let st = countdown(&mut h, &s, 1, 0, 0);
    let cursor = first_id(&st);
    h.gate.detach(&s, st.stream, st.attachment).unwrap();
    let resumed = h.get(&s, &cursor);
    let mut follower = Exchange::new(resumed, options(true, Events::Elsewhere), 0);
    let journal = RefCell::new(Vec::new());
    let mut driver = driver::Driver::new(&mut h.gate, &journal);
    driver.serve(&mut follower);
    assert_eq!(driver.written.last().map(String::as_str), Some("retry: 250\n\n"));
    assert!(driver.now >= TIMING.follow_ms, "it followed for its time: {} ms", driver.now);
}

#[test]
fn a_follower_answers_a_call_whose_writer_is_gone_with_32001() {
    let mut h = Harness::new();
    let s = h.initialize();
    h.gate
        .configure(&Config { lease_ms: TIMING.lease_ms, max_detached_ms: Some(60_000), ..Config::default() })
        .unwrap();
    let st = countdown(&mut h, &s, 7, 0, 0);
    let cursor = first_id(&st);
    h.gate.detach(&s, st.stream, st.attachment).unwrap();
    let resumed = h.get(&s, &cursor);
    let mut follower = Exchange::new(resumed, options(true, Events::Elsewhere), 0);
    let sent = serve(&mut h, &mut follower, &RefCell::new(Vec::new()));
    assert_eq!(sent.last().map(|m| (&m["id"], &m["error"]["code"])), Some((&json!(7), &json!(RESULT_LOST))));
}
