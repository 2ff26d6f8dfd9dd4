//! Safe to expose: a server answers the names it is configured for (`--allowed-host`, the Spin
//! app's `allowed_hosts` variable) and refuses every other `Host` and `Origin` with `403`, on
//! host-example and on the Spin app (edge-host).

use std::time::Duration;

use serde_json::json;
use tests::http::{ACCEPT, Client, JSON, Setup, TestServer, request};

fn initialize(srv: &TestServer, extra: &[(&str, &str)]) -> (u16, Option<Client>) {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let mut headers = vec![JSON, ACCEPT];
    headers.extend_from_slice(extra);
    let resp = request(srv.addr, "POST", &headers, body.to_string().as_bytes());
    let session = resp.header("mcp-session-id").map(str::to_owned);
    let client = session.map(|session| Client { addr: srv.addr, session, version: "2025-11-25" });
    (resp.status, client)
}

fn a_configured_name_is_served_and_every_other_host_or_origin_refused(start: fn(Setup) -> TestServer) {
    let srv =
        start(Setup { allowed_hosts: vec!["mcp.example.com", "api.example.com:8443"], ..Setup::default() });
    let host = ("Host", "mcp.example.com");
    let (status, client) = initialize(&srv, &[host]);
    assert_eq!(status, 200, "the configured name, no port");
    let client = client.expect("a session");
    let mut call = client.call(1, "countdown", json!({"n": 2, "interval_ms": 0}), &[host]);
    assert_eq!(call.status, 200);
    let frames = call.frames_until_closed(Duration::from_secs(10));
    assert!(frames.iter().any(|f| f.json()["id"] == 1 && f.json().get("result").is_some()), "{frames:?}");

    assert_eq!(initialize(&srv, &[("Host", "MCP.example.com:8080")]).0, 200, "any port, any case");
    assert_eq!(initialize(&srv, &[host, ("Origin", "https://mcp.example.com")]).0, 200);
    assert_eq!(initialize(&srv, &[("Host", "api.example.com:8443")]).0, 200, "a name with its port");

    for refused in ["api.example.com", "api.example.com:443", "evil.example", "localhost", "127.0.0.1"] {
        assert_eq!(initialize(&srv, &[("Host", refused)]).0, 403, "Host {refused}");
    }
    for origin in ["https://evil.example", "null", "http://localhost:3000"] {
        assert_eq!(initialize(&srv, &[host, ("Origin", origin)]).0, 403, "Origin {origin}");
    }
    let foreign = client.call(2, "countdown", json!({"n": 0}), &[("Host", "evil.example")]);
    assert_eq!(foreign.status, 403, "a session is no way around the check");
}

fn without_configuration_only_localhost_names_are_served(start: fn(Setup) -> TestServer) {
    let srv = start(Setup::default());
    let port = srv.addr.port().to_string();
    for ok in [format!("127.0.0.1:{port}"), format!("localhost:{port}"), "[::1]".to_owned()] {
        assert_eq!(initialize(&srv, &[("Host", &ok)]).0, 200, "Host {ok}");
    }
    assert_eq!(initialize(&srv, &[("Host", "mcp.example.com")]).0, 403);
}

mod host_example {
    use super::*;

    #[test]
    fn a_configured_name_is_served_and_every_other_host_or_origin_refused() {
        super::a_configured_name_is_served_and_every_other_host_or_origin_refused(
            TestServer::host_example_with,
        )
    }

    #[test]
    fn without_configuration_only_localhost_names_are_served() {
        super::without_configuration_only_localhost_names_are_served(TestServer::host_example_with)
    }
}

mod edge {
    use super::*;

    #[test]
    fn a_configured_name_is_served_and_every_other_host_or_origin_refused() {
        super::a_configured_name_is_served_and_every_other_host_or_origin_refused(TestServer::edge_with)
    }

    #[test]
    fn without_configuration_only_localhost_names_are_served() {
        super::without_configuration_only_localhost_names_are_served(TestServer::edge_with)
    }
}
