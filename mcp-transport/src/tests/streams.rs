use super::*;

#[test]
fn a_post_request_gets_priming_then_its_response_and_closes() {
    let mut h = Harness::new();
    let s = h.initialize();
    let st = h.call(&s, 7, "ping");
    assert_eq!(st.frames.len(), 2, "priming and the response");
    assert!(st.close);
    assert_eq!(messages(&st), [json!({"jsonrpc": "2.0", "id": 7, "result": {}})]);
}

#[test]
fn a_request_id_is_used_once_per_session() {
    let mut h = Harness::new();
    let s = h.initialize();
    h.call(&s, 1, "ping");
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let p = plain(h.handle(&post(Some(&s), &ping)));
    assert_eq!((p.status, error_code(&p)), (400, INVALID_REQUEST));
    let other = h.initialize();
    h.call(&other, 1, "ping");
}

#[test]
fn a_tools_call_is_handed_to_the_host_on_an_open_stream() {
    let mut h = Harness::new();
    let s = h.initialize();
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "countdown", "arguments": {"n": 1}}});
    let st = stream(h.handle(&post(Some(&s), &body)));
    assert!(!st.close);
    assert_eq!(st.calls[0].id(), Some(&RequestId::Number(3)));
}
