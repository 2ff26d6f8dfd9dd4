//! The transport's rules, in process: the real core `Gate` behind `GateApi`, no sockets, no
//! wasm (as quinn-proto keeps its protocol tests in the protocol crate). Every status rule,
//! every guard, and the stale and stranded paths a host relies on.

use resume_gate::{Origin, RequestId};
use serde_json::{Value, json};

use crate::gate::GateApi;
use crate::hosts::AllowedHosts;
use crate::http::HttpRequest;
use crate::jsonrpc::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, RESULT_LOST};
use crate::reply::{Plain, Reply, Stream};
use crate::server::{Server, ServerConfig};
use crate::test_util::InProcess as NativeGate;

const VERSION: &str = "2025-11-25";

struct Harness {
    server: Server,
    gate: NativeGate,
    minted: u32,
}

impl Harness {
    fn new() -> Self {
        Self { server: Server::new(ServerConfig::default()), gate: NativeGate::new(), minted: 0 }
    }

    fn handle(&mut self, req: &HttpRequest) -> Reply {
        self.minted += 1;
        let id = format!("session-{}", self.minted);
        self.server.handle(&mut self.gate, req, || Some(id))
    }

    fn initialize(&mut self) -> String {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        match self.handle(&post(None, &body)) {
            Reply::Plain(Plain { status: 200, session: Some(s), .. }) => s,
            other => panic!("initialize failed: {other:?}"),
        }
    }

    fn call(&mut self, session: &str, id: i64, method: &str) -> Stream {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}});
        stream(self.handle(&post(Some(session), &body)))
    }

    fn get(&mut self, session: &str, cursor: &str) -> Stream {
        let mut req = request("GET", Some(session));
        req.headers.push(("last-event-id".into(), cursor.as_bytes().to_vec()));
        stream(self.handle(&req))
    }
}

fn request(method: &str, session: Option<&str>) -> HttpRequest {
    let mut headers = vec![
        ("host".to_owned(), b"localhost:8080".to_vec()),
        ("accept".to_owned(), b"application/json, text/event-stream".to_vec()),
        ("content-type".to_owned(), b"application/json".to_vec()),
        ("mcp-protocol-version".to_owned(), VERSION.as_bytes().to_vec()),
    ];
    if let Some(s) = session {
        headers.push(("mcp-session-id".to_owned(), s.as_bytes().to_vec()));
    }
    HttpRequest { method: method.into(), headers, body: Vec::new() }
}

fn post(session: Option<&str>, body: &Value) -> HttpRequest {
    HttpRequest { body: body.to_string().into_bytes(), ..request("POST", session) }
}

fn with_header(mut req: HttpRequest, name: &str, value: &[u8]) -> HttpRequest {
    req.headers.retain(|(n, _)| n != name);
    req.headers.push((name.to_owned(), value.to_vec()));
    req
}

fn plain(reply: Reply) -> Plain {
    match reply {
        Reply::Plain(p) => p,
        other => panic!("expected a plain reply, got {other:?}"),
    }
}

fn stream(reply: Reply) -> Stream {
    match reply {
        Reply::Stream(s) => s,
        other => panic!("expected a stream, got {other:?}"),
    }
}

fn error_code(p: &Plain) -> i64 {
    let body: Value = serde_json::from_str(p.body.as_deref().expect("a JSON-RPC error body")).unwrap();
    body["error"]["code"].as_i64().expect("an error code")
}

/// The JSON of each `data:` frame (priming frames have none).
fn messages(s: &Stream) -> Vec<Value> {
    s.frames
        .iter()
        .filter_map(|f| f.lines().find_map(|l| l.strip_prefix("data:")).map(str::trim))
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn first_id(s: &Stream) -> String {
    s.frames[0].lines().find_map(|l| l.strip_prefix("id: ")).unwrap().to_owned()
}

/// A host in the tests: serves an exchange to its end over the in-process gate. Tools finish
/// at once; their waits move a clock (the host's and the gate's alike); what is written, and
/// the journal, are kept.
mod driver {
    use std::cell::RefCell;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use super::NativeGate;
    use crate::exchange::Exchange;
    use crate::gate::GateApi;
    use crate::journal::{AppendError, JournalPage};
    use crate::tools::ToolHost;

    pub struct Driver<'a> {
        pub gate: &'a mut NativeGate,
        pub journal: &'a RefCell<Vec<String>>,
        pub now: u64,
        /// After this many recorded events the session is ended under the call.
        pub vanish_after: Option<usize>,
        pub written: Vec<String>,
    }

    impl Driver<'_> {
        pub fn serve(&mut self, exchange: &mut Exchange) {
            loop {
                self.drain(exchange);
                if exchange.is_finished() {
                    return;
                }
                if let Some(call) = exchange.poll_call(&mut *self.gate, self.now) {
                    let response = {
                        let tools = Tools {
                            driver: RefCell::new(&mut *self),
                            exchange: RefCell::new(&mut *exchange),
                        };
                        let mut future = pin!(call.respond(&tools));
                        let Poll::Ready(response) =
                            future.as_mut().poll(&mut Context::from_waker(Waker::noop()))
                        else {
                            panic!("the test tools never wait")
                        };
                        response
                    };
                    self.vanish_maybe();
                    exchange.handle_response(&mut *self.gate, &response);
                    continue;
                }
                match exchange.poll_timeout() {
                    Some(at) => {
                        self.advance_to(at);
                        exchange.handle_timeout(&mut *self.gate, self.now);
                    }
                    None => return,
                }
            }
        }

        fn drain(&mut self, exchange: &mut Exchange) {
            while let Some(frame) = exchange.poll_transmit() {
                self.written.push(frame);
            }
        }

        fn advance_to(&mut self, at: u64) {
            if at > self.now {
                self.gate.advance(at - self.now);
                self.now = at;
            }
        }

        fn vanish_maybe(&mut self) {
            if let Some(n) = self.vanish_after {
                if n == 0 {
                    for id in ["session-1", "session-2", "session-3"] {
                        let _ = self.gate.end_session(id);
                    }
                }
                self.vanish_after = n.checked_sub(1);
            }
        }
    }

    struct Tools<'d, 'a> {
        driver: RefCell<&'d mut Driver<'a>>,
        exchange: RefCell<&'d mut Exchange>,
    }

    impl ToolHost for Tools<'_, '_> {
        fn sleep(&self, ms: u64) -> impl Future<Output = bool> + Send {
            let (mut driver, mut exchange) = (self.driver.borrow_mut(), self.exchange.borrow_mut());
            let end = driver.now + ms;
            let mut going = exchange.call_running();
            while going && driver.now < end {
                let at = exchange.poll_timeout().map_or(end, |t| t.min(end));
                driver.advance_to(at);
                let now = driver.now;
                if exchange.poll_timeout().is_some_and(|t| t <= now) {
                    exchange.handle_timeout(&mut *driver.gate, now);
                }
                driver.drain(&mut exchange);
                going = exchange.call_running();
            }
            std::future::ready(going)
        }
        fn notify(&self, message: String) -> bool {
            let (mut driver, mut exchange) = (self.driver.borrow_mut(), self.exchange.borrow_mut());
            driver.vanish_maybe();
            let going = exchange.handle_event(&mut *driver.gate, &message);
            driver.drain(&mut exchange);
            going
        }
        fn close_connection(&self) {
            let (mut driver, mut exchange) = (self.driver.borrow_mut(), self.exchange.borrow_mut());
            exchange.close_connection(&mut *driver.gate);
        }
        fn append(&self, line: &str) -> Result<u64, AppendError> {
            let driver = self.driver.borrow();
            driver.journal.borrow_mut().push(line.to_owned());
            Ok(driver.journal.borrow().len() as u64)
        }
        fn journal(&self, _: u64, _: u64) -> Result<JournalPage, String> {
            Ok(JournalPage::default())
        }
    }
}

mod guards {
    use super::*;

    #[test]
    fn methods_other_than_get_post_delete_are_405_with_allow() {
        let mut h = Harness::new();
        let p = plain(h.handle(&request("PUT", None)));
        assert_eq!((p.status, p.allow), (405, Some("GET, POST, DELETE")));
        assert!(p.headers().contains(&("allow", "GET, POST, DELETE".into())));
    }

    #[test]
    fn an_unsupported_protocol_version_is_400() {
        let mut h = Harness::new();
        let s = h.initialize();
        let req = with_header(request("GET", Some(&s)), "mcp-protocol-version", b"1999-01-01");
        let p = plain(h.handle(&req));
        assert_eq!((p.status, error_code(&p)), (400, INVALID_REQUEST));
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
        assert_eq!(plain(h.handle(&req)).status, 400, "allowed; refused later for the missing session");
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
}

mod sessions {
    use super::*;

    #[test]
    fn no_session_header_is_400_an_unknown_one_404() {
        let mut h = Harness::new();
        assert_eq!(plain(h.handle(&request("GET", None))).status, 400);
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
}

mod streams {
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
}

mod reconnects {
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
        h.gate
            .gate
            .configure(resume_gate::Config { max_events_per_stream: 1, ..Default::default() })
            .unwrap();
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
        let cancel =
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}});
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
            assert_eq!(
                st.decision.unwrap().reason,
                Some(resume_gate::StaleReason::Malformed),
                "{cursor:.20}"
            );
        }
    }
}

mod batches {
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
        let mut driver =
            driver::Driver { gate: &mut h.gate, journal, now: 0, vanish_after, written: Vec::new() };
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
        let body = json!([
            call(5, "append", json!({"text": "a"})),
            ping(6),
            call(7, "append", json!({"text": "b"}))
        ]);
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
        let body =
            json!([call(20, "append", json!({"text": "x"})), call(20, "append", json!({"text": "x"}))]);
        let st = stream(batch(&mut h, &s, None, body));
        let sent = run(&mut h, &st, &journal, &[], None);
        assert_eq!(
            codes(&sent),
            [Some(INVALID_REQUEST), None],
            "the refusal is answered first, then the call"
        );
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
        let body = json!([
            call(40, "append", json!({"text": "a"})),
            call(41, "append", json!({"text": "b"})),
            ping(42)
        ]);
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
}

mod exchange {
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
        let mut driver =
            driver::Driver { gate: &mut h.gate, journal, now: 0, vanish_after: None, written: Vec::new() };
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
        let mut driver = driver::Driver {
            gate: &mut h.gate,
            journal: &RefCell::new(Vec::new()),
            now: 0,
            vanish_after: None,
            written: Vec::new(),
        };
        driver.serve(&mut follower);
        assert_eq!(driver.written.last().map(String::as_str), Some("retry: 250\n\n"));
        assert!(driver.now >= TIMING.follow_ms, "it followed for its time: {} ms", driver.now);
    }

    #[test]
    fn a_follower_answers_a_call_whose_writer_is_gone_with_32001() {
        let mut h = Harness::new();
        let s = h.initialize();
        h.gate
            .configure(&Config {
                lease_ms: TIMING.lease_ms,
                max_detached_ms: Some(60_000),
                ..Config::default()
            })
            .unwrap();
        let st = countdown(&mut h, &s, 7, 0, 0);
        let cursor = first_id(&st);
        h.gate.detach(&s, st.stream, st.attachment).unwrap();
        let resumed = h.get(&s, &cursor);
        let mut follower = Exchange::new(resumed, options(true, Events::Elsewhere), 0);
        let sent = serve(&mut h, &mut follower, &RefCell::new(Vec::new()));
        assert_eq!(
            sent.last().map(|m| (&m["id"], &m["error"]["code"])),
            Some((&json!(7), &json!(RESULT_LOST)))
        );
    }
}
