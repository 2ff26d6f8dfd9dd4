use super::*;

#[test]
fn no_session_header_is_405_for_get_and_delete_400_for_post_an_unknown_one_404() {
    let mut h = Harness::new();
    for method in ["GET", "DELETE"] {
        let p = plain(h.handle(&request(method, None)));
        assert_eq!((p.status, p.allow), (405, Some("POST")), "{method} without a session");
    }
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    assert_eq!(plain(h.handle(&post(None, &ping))).status, 400);
    let p = plain(h.handle(&request("GET", Some("nobody"))));
    assert_eq!((p.status, error_code(&p)), (404, -32001));
}

#[test]
fn a_session_id_that_is_not_one_is_400_never_404() {
    let mut h = Harness::new();
    for bad in ["x".repeat(129), "a b".into(), "é".into()] {
        let p = plain(h.handle(&request("GET", Some(&bad))));
        assert_eq!((p.status, error_code(&p)), (400, INVALID_REQUEST), "{bad:?}");
    }
    let p = plain(h.handle(&request("GET", Some(&"x".repeat(128)))));
    assert_eq!(p.status, 404, "128 characters is a valid id, just not an open one");
}

#[test]
fn a_store_failure_is_503_with_retry_after_never_404() {
    let mut h = Harness::new();
    let s = h.initialize();
    h.gate.broken = true;
    for req in [request("GET", Some(&s)), request("DELETE", Some(&s))] {
        let p = plain(h.handle(&req));
        assert_eq!(p.status, 503, "{}", req.method);
        assert!(p.headers().contains(&("retry-after", "1".into())));
    }
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    assert_eq!(plain(h.handle(&post(Some(&s), &ping))).status, 503);
    h.gate.broken = false;
    assert_eq!(messages(&h.call(&s, 1, "ping"))[0]["result"], json!({}), "the session lived on");
}

#[test]
fn initialize_without_randomness_is_503() {
    let mut h = Harness::new();
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}});
    let p = plain(h.server.handle(&mut h.gate, &post(None, &body), || None));
    assert_eq!(p.status, 503);
    assert_eq!(p.session, None);
}

#[test]
fn delete_ends_the_session() {
    let mut h = Harness::new();
    let s = h.initialize();
    assert_eq!(plain(h.handle(&request("DELETE", Some(&s)))).status, 200);
    assert_eq!(plain(h.handle(&request("GET", Some(&s)))).status, 404);
}

#[test]
fn mint_session_id_is_128_random_bits_in_hex() {
    let id = crate::server::mint_session_id(|b| {
        b.fill(0xab);
        true
    });
    assert_eq!(id.as_deref(), Some("abababababababababababababababab"));
    assert_eq!(crate::server::mint_session_id(|_| false), None);
}
