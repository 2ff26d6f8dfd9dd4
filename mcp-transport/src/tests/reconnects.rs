use super::*;

/// A request stream that lost its connection after one progress event.
fn dropped_call(h: &mut Harness, s: &str, id: i64) -> (u64, String) {
    let opened = h.gate.open_stream(s, &Origin::Request(RequestId::Number(id))).unwrap();
    let event =
        h.gate.emit(s, opened.stream, r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#).unwrap();
    h.gate.detach(s, opened.stream, opened.attachment).unwrap();
    (opened.stream, event.id)
}

#[test]
fn a_get_with_a_valid_cursor_resumes_with_exactly_the_missed_events() {
    let mut h = Harness::new();
    let s = h.initialize();
    let (stream, cursor) = dropped_call(&mut h, &s, 1);
    h.gate.terminal(&s, stream, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap();
    let st = h.get(&s, &cursor);
    assert!(st.decision.as_ref().unwrap().resumed);
    assert_eq!(messages(&st), [json!({"jsonrpc": "2.0", "id": 1, "result": {}})]);
    assert!(st.close, "the terminal was replayed");
    let terminal = st.frames.last().unwrap().lines().find_map(|l| l.strip_prefix("id: ")).unwrap();
    let again = h.get(&s, terminal);
    assert_eq!(again.decision.unwrap().reason, Some(resume_gate::StaleReason::Completed));
}

#[test]
fn a_stranded_request_is_answered_with_32001_on_the_fresh_stream() {
    let mut h = Harness::new();
    let s = h.initialize();
    dropped_call(&mut h, &s, 1);
    // Two GET streams: the second supersedes the first and strands nothing (standalone).
    let g1 = stream(h.handle(&request("GET", Some(&s))));
    let _g2 = stream(h.handle(&request("GET", Some(&s))));
    let st = h.get(&s, &first_id(&g1));
    assert!(st.decision.unwrap().stranded.is_empty());
    // A request stream whose events after the cursor were evicted is stranded.
    h.gate.gate.configure(resume_gate::Config { max_events_per_stream: 1, ..Default::default() }).unwrap();
    let opened = h.gate.open_stream(&s, &Origin::Request(RequestId::Number(2))).unwrap();
    let early = h.gate.emit(&s, opened.stream, "{}").unwrap();
    h.gate.emit(&s, opened.stream, "{}").unwrap();
    h.gate.emit(&s, opened.stream, "{}").unwrap();
    let st = h.get(&s, &early.id);
    let m = messages(&st);
    assert_eq!(m[0]["id"], json!(2));
    assert_eq!(m[0]["error"]["code"], json!(RESULT_LOST));
    assert!(!st.close, "a fresh stream stays open");
}

#[test]
fn a_call_whose_writer_is_gone_gets_what_it_stored_then_32001_and_the_stream_closes() {
    let mut h = Harness::new();
    let s = h.initialize();
    let opened = h.gate.open_stream(&s, &Origin::Request(RequestId::Number(3))).unwrap();
    let first = h.gate.emit(&s, opened.stream, r#"{"jsonrpc":"2.0","method":"one"}"#).unwrap();
    h.gate.emit(&s, opened.stream, r#"{"jsonrpc":"2.0","method":"two"}"#).unwrap();
    h.gate.advance(resume_gate::Config::DEFAULT_LEASE_MS + 1);
    let st = h.get(&s, &first.id);
    let m = messages(&st);
    assert_eq!(m[0]["method"], json!("two"), "what the writer stored first");
    assert_eq!((m[1]["id"].clone(), m[1]["error"]["code"].clone()), (json!(3), json!(RESULT_LOST)));
    assert_eq!(m.len(), 2);
    assert!(st.close, "the response ends with the error");
    assert_eq!(st.decision.unwrap().stranded, [RequestId::Number(3)]);
}

#[test]
fn a_cancelled_request_is_never_resumed_and_never_answered() {
    let mut h = Harness::new();
    let s = h.initialize();
    let (_, cursor) = dropped_call(&mut h, &s, 4);
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}});
    let Reply::Accepted { cancels, .. } = h.handle(&post(Some(&s), &cancel)) else {
        panic!("a cancellation is accepted and names its request")
    };
    assert_eq!(cancels, [RequestId::Number(4)]);
    assert!(h.gate.abort_request(&s, &cancels[0]).unwrap());
    let st = h.get(&s, &cursor);
    let d = st.decision.clone().unwrap();
    assert!(!d.resumed);
    assert!(d.stranded.is_empty());
    assert!(messages(&st).is_empty(), "no response for a cancelled request: {:?}", st.frames);
}

#[test]
fn a_cursor_of_another_session_or_a_post_never_resumes() {
    let mut h = Harness::new();
    let a = h.initialize();
    let b = h.initialize();
    let (_, cursor) = dropped_call(&mut h, &a, 1);
    let st = h.get(&b, &cursor);
    assert_eq!(st.decision.unwrap().reason, Some(resume_gate::StaleReason::OtherSession));
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    let req = with_header(post(Some(&a), &ping), "last-event-id", cursor.as_bytes());
    let st = stream(h.handle(&req));
    assert_eq!(st.decision.as_ref().unwrap().reason, Some(resume_gate::StaleReason::PostNeverResumes));
    assert_eq!(messages(&st), [json!({"jsonrpc": "2.0", "id": 9, "result": {}})]);
}

#[test]
fn garbage_cursors_start_fresh() {
    let mut h = Harness::new();
    let s = h.initialize();
    for cursor in ["", "1-2-3", &"9".repeat(10_000)] {
        let st = h.get(&s, cursor);
        assert_eq!(st.decision.unwrap().reason, Some(resume_gate::StaleReason::Malformed), "{cursor:.20}");
    }
}
