use super::*;

#[test]
fn methods_other_than_get_post_delete_are_405_with_allow() {
    let mut h = Harness::new();
    let p = plain(h.handle(&request("PUT", None)));
    assert_eq!((p.status, p.allow), (405, Some("GET, POST, DELETE")));
    assert!(p.headers().contains(&("allow", "GET, POST, DELETE".into())));
}

#[test]
fn an_unsupported_protocol_version_is_400_with_the_versions_we_speak() {
    let mut h = Harness::new();
    let s = h.initialize();
    let req = with_header(request("GET", Some(&s)), "mcp-protocol-version", b"1999-01-01");
    let p = plain(h.handle(&req));
    assert_eq!((p.status, error_code(&p)), (400, -32022));
    let body: Value = serde_json::from_str(p.body.as_deref().unwrap()).unwrap();
    assert_eq!(body["error"]["data"]["requested"], "1999-01-01");
    assert_eq!(
        body["error"]["data"]["supported"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
    );
    let req = with_header(post(None, &json!({})), "mcp-protocol-version", "x\u{1}".repeat(40).as_bytes());
    let body: Value = serde_json::from_str(plain(h.handle(&req)).body.as_deref().unwrap()).unwrap();
    assert_eq!(
        body["error"]["data"]["requested"],
        Value::Null,
        "a long or unprintable version is not echoed"
    );
}

#[test]
fn a_foreign_host_or_origin_is_403_before_anything_else() {
    let mut h = Harness::new();
    for (name, value) in [("host", &b"evil.example"[..]), ("origin", b"https://evil.example")] {
        let p = plain(h.handle(&with_header(request("PUT", None), name, value)));
        assert_eq!(p.status, 403, "{name}");
    }
    h.server.config.allowed_hosts = AllowedHosts::new(["mcp.example.com"]);
    let req = with_header(request("GET", None), "host", b"mcp.example.com:443");
    assert_eq!(plain(h.handle(&req)).status, 405, "allowed; refused later: a GET needs a session");
}

#[test]
fn media_types_are_checked() {
    let mut h = Harness::new();
    let s = h.initialize();
    let req = with_header(post(Some(&s), &json!({})), "content-type", b"text/plain");
    assert_eq!(plain(h.handle(&req)).status, 415);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let req = with_header(post(Some(&s), &ping), "accept", b"application/json");
    assert_eq!(plain(h.handle(&req)).status, 406);
}

#[test]
fn bodies_that_are_not_json_rpc_get_the_matching_error() {
    let mut h = Harness::new();
    let s = h.initialize();
    let mut req = post(Some(&s), &json!({}));
    req.body = b"{nope".to_vec();
    let p = plain(h.handle(&req));
    assert_eq!((p.status, error_code(&p)), (400, PARSE_ERROR));
    let p = plain(h.handle(&post(Some(&s), &json!({"jsonrpc": "2.0", "id": true, "method": "ping"}))));
    assert_eq!((p.status, error_code(&p)), (400, INVALID_REQUEST));
}

#[test]
fn oversized_ids_method_and_tool_names_are_refused_and_never_echoed() {
    let mut h = Harness::new();
    let s = h.initialize();
    let huge = "x".repeat(1 << 20);
    for (body, code) in [
        (json!({"jsonrpc": "2.0", "id": huge, "method": "ping"}), INVALID_REQUEST),
        (json!({"jsonrpc": "2.0", "id": 7, "method": huge}), METHOD_NOT_FOUND),
        (json!({"jsonrpc": "2.0", "method": huge}), METHOD_NOT_FOUND),
    ] {
        let p = plain(h.handle(&post(Some(&s), &body)));
        assert_eq!((p.status, error_code(&p)), (400, code));
        assert!(p.body.as_ref().unwrap().len() < 200, "{:?}", p.body);
    }
    let call = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": huge}});
    let st = stream(h.handle(&post(Some(&s), &call)));
    assert_eq!(messages(&st)[0]["error"]["code"], json!(INVALID_PARAMS));
    assert!(st.frames.iter().map(String::len).sum::<usize>() < 1000);
    assert!(h.call(&s, 9, "ping").close, "the session still works");
}

#[test]
fn an_unknown_method_is_answered_on_its_stream_with_32601() {
    let mut h = Harness::new();
    let s = h.initialize();
    let st = h.call(&s, 1, "no/such");
    assert_eq!(messages(&st)[0]["error"]["code"], json!(METHOD_NOT_FOUND));
    assert!(st.close);
}
