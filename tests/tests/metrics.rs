//! `/metrics` (host-example `--metrics`): off unless asked for; then the gate's counters and
//! the server's own in the Prometheus text format, each sample under its `# TYPE` line.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::json;
use tests::http::{Client, TestServer};

/// `GET /metrics`: the status, the content type and the body.
fn scrape(addr: SocketAddr) -> (u16, String, String) {
    scrape_as(addr, &addr.to_string(), None)
}

/// `GET /metrics` with this `Host` and, if given, this `Origin`.
fn scrape_as(addr: SocketAddr, host: &str, origin: Option<&str>) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
    let head = format!("GET /metrics HTTP/1.1\r\nHost: {host}\r\n{origin}Connection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let content_type = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case("content-type")))
        .map_or(String::new(), |(_, v)| v.trim().to_owned());
    (status, content_type, body.to_owned())
}

/// The value of the sample named exactly `name` (labels included).
fn sample(body: &str, name: &str) -> u64 {
    let line = body.lines().find(|l| l.split_once(' ').is_some_and(|(n, _)| n == name));
    line.and_then(|l| l.rsplit_once(' '))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn metrics_are_off_by_default_then_count_requests_events_and_fresh_decisions_by_reason() {
    let srv = TestServer::host_example();
    assert_eq!(scrape(srv.addr).0, 404, "off unless --metrics");
    srv.app.as_ref().unwrap().enable_metrics();

    let client = Client::initialize(srv.addr);
    let mut call = client.call(1, "countdown", json!({"n": 2, "interval_ms": 0}), &[]);
    assert_eq!(call.status, 200);
    call.frames_until_closed(Duration::from_secs(10));
    let mut stale = client.get(Some("not-an-event-id"));
    assert_eq!(stale.status, 200, "a malformed cursor starts a fresh stream");
    assert!(stale.next_frame(Duration::from_secs(10)).is_some_and(|f| f.is_priming()));

    let (status, content_type, body) = scrape(srv.addr);
    assert_eq!(status, 200);
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
    assert!(sample(&body, "resume_gate_requests_total") >= 3, "{body}");
    assert_eq!(sample(&body, "resume_gate_sessions"), 1);
    assert_eq!(sample(&body, "resume_gate_live_streams"), 1, "the fresh GET stream is attached");
    assert_eq!(sample(&body, "resume_gate_events_emitted_total"), 3, "two progress events and the result");
    assert_eq!(sample(&body, "resume_gate_resumes_total"), 0);
    assert_eq!(sample(&body, "resume_gate_fresh_total{reason=\"malformed\"}"), 1);
    assert_eq!(sample(&body, "resume_gate_fresh_total{reason=\"forged\"}"), 0);
    assert!(sample(&body, "resume_gate_memory_bytes") > 0);
    assert_eq!(
        sample(&body, "resume_gate_memory_budget_bytes"),
        resume_gate::Config::default().max_total_bytes
    );
    let mut typed = std::collections::HashSet::new();
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(kind == "counter" || kind == "gauge", "{line}");
            typed.insert(name.to_owned());
        } else if !line.starts_with("# HELP ") {
            let name = line.split(['{', ' ']).next().unwrap();
            assert!(typed.contains(name), "{name} has no # TYPE line before it");
        }
    }
}

#[test]
fn metrics_obey_the_same_host_and_origin_check_as_mcp() {
    let srv = TestServer::host_example();
    srv.app.as_ref().expect("host-example in process").enable_metrics();
    assert_eq!(scrape(srv.addr).0, 200);
    let (status, _, body) = scrape_as(srv.addr, "evil.example", None);
    assert_eq!(status, 403, "{body}");
    assert!(!body.contains("resume_gate_"), "{body}");
    assert_eq!(scrape_as(srv.addr, &srv.addr.to_string(), Some("http://evil.example")).0, 403);
    assert_eq!(scrape_as(srv.addr, &srv.addr.to_string(), Some(&format!("http://{}", srv.addr))).0, 200);
}
