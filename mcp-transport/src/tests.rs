//! The transport's rules, in process: the real core `Gate` behind `GateApi`, no sockets, no
//! wasm (as quinn-proto keeps its protocol tests in the protocol crate). Every status rule,
//! every guard, and the stale and stranded paths a host relies on.

use resume_gate::{Origin, RequestId};
use serde_json::{Value, json};

use crate::gate::{GateApi, InProcess as NativeGate};
use crate::hosts::AllowedHosts;
use crate::jsonrpc::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, RESULT_LOST};
use crate::server::{HttpRequest, Plain, Reply, Server, ServerConfig, Stream};

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
    use std::cell::{Cell, RefCell};
    use std::collections::HashSet;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use resume_gate::GateError;

    use super::*;
    use crate::calls::{self, Answered, CallHost};
    use crate::server::PendingCall;
    use crate::tools::{JournalPage, ToolHost};

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

    /// A host answering one stream over the harness's gate: tools finish at once, `append`
    /// counts into `journal`, frames go to `frames`.
    struct TestHost<'a> {
        gate: RefCell<&'a mut NativeGate>,
        session: String,
        stream: u64,
        journal: &'a RefCell<Vec<String>>,
        frames: RefCell<Vec<String>>,
        cancelled: HashSet<RequestId>,
        lost: RefCell<Vec<RequestId>>,
        /// After this many records the session is ended (its state vanishes).
        vanish_after: Cell<Option<usize>>,
    }

    impl ToolHost for TestHost<'_> {
        fn sleep(&self, _ms: u64) -> impl Future<Output = bool> + Send {
            std::future::ready(true)
        }
        fn notify(&self, message: String) -> bool {
            self.record(&message, false).is_ok()
        }
        fn close_connection(&self) {}
        fn append(&self, line: &str) -> Result<u64, crate::tools::AppendError> {
            self.journal.borrow_mut().push(line.to_owned());
            Ok(self.journal.borrow().len() as u64)
        }
        fn journal(&self, _: u64, _: u64) -> Result<JournalPage, String> {
            Ok(JournalPage::default())
        }
    }

    impl CallHost for TestHost<'_> {
        fn record(&self, data: &str, terminal: bool) -> Result<(), GateError> {
            if let Some(n) = self.vanish_after.get() {
                if n == 0 {
                    self.gate.borrow_mut().end_session(&self.session)?;
                }
                self.vanish_after.set(n.checked_sub(1));
            }
            let mut gate = self.gate.borrow_mut();
            let recorded = if terminal {
                gate.terminal(&self.session, self.stream, data)
            } else {
                gate.emit(&self.session, self.stream, data)
            }?;
            self.frames.borrow_mut().push(crate::sse::recorded(&recorded, data));
            Ok(())
        }
        fn cancelled(&self, id: &RequestId) -> bool {
            self.cancelled.contains(id)
        }
        fn lost(&self, ids: &[RequestId]) {
            self.lost.borrow_mut().extend_from_slice(ids);
        }
    }

    /// Runs the stream's pending requests as a host does; the frames written, how it ended,
    /// and the requests answered `-32001` directly.
    fn run(
        h: &mut Harness,
        st: &Stream,
        journal: &RefCell<Vec<String>>,
        cancelled: &[RequestId],
        vanish_after: Option<usize>,
    ) -> (Vec<Value>, Answered, Vec<RequestId>) {
        let host = TestHost {
            gate: RefCell::new(&mut h.gate),
            session: st.session.clone(),
            stream: st.stream,
            journal,
            frames: RefCell::new(st.frames.clone()),
            cancelled: cancelled.iter().cloned().collect(),
            lost: RefCell::new(Vec::new()),
            vanish_after: Cell::new(vanish_after),
        };
        let answered = {
            let mut future = pin!(calls::answer(&st.calls, &host));
            let Poll::Ready(answered) = future.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
                panic!("the test tools never wait")
            };
            answered
        };
        let frames = Stream { frames: host.frames.into_inner(), ..st.clone() };
        (messages(&frames), answered, host.lost.into_inner())
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
        let (sent, answered, _) = run(&mut h, &st, &journal, &[], None);
        assert_eq!(
            ids(&sent),
            [json!(1), json!(2), json!(3), Value::Null],
            "one response per request, then the error"
        );
        assert_eq!(answered, Answered::All, "the last response is the terminal event");
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
        let (sent, _, _) = run(&mut h, &st, &journal, &[], None);
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
        let (sent, _, _) = run(&mut h, &st, &journal, &[], None);
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
        let (sent, _, _) = run(&mut h, &st, &journal, &[], None);
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
        let (sent, answered, _) = run(&mut h, &st, &journal, &status.cancelled, None);
        assert_eq!(ids(&sent), [json!(42), json!(40)]);
        assert_eq!(answered, Answered::All);
        assert_eq!(*journal.borrow(), ["a"], "the cancelled call never ran");
    }

    #[test]
    fn a_batch_whose_last_request_was_cancelled_ends_with_an_empty_terminal_event() {
        let mut h = Harness::new();
        let s = h.initialize();
        let journal = RefCell::new(Vec::new());
        let st = stream(batch(&mut h, &s, None, json!([ping(50), call(51, "append", json!({"text": "a"}))])));
        h.gate.abort_request(&s, &RequestId::Number(51)).unwrap();
        let (sent, answered, _) = run(&mut h, &st, &journal, &[RequestId::Number(51)], None);
        assert_eq!((ids(&sent), answered), (vec![json!(50)], Answered::All));
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
        let (_, answered, lost) = run(&mut h, &st, &journal, &[], Some(1));
        assert_eq!(answered, Answered::Lost(GateError::UnknownSession));
        assert_eq!(lost, [RequestId::Number(72), RequestId::Number(71)], "every request not answered yet");
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
        let (sent, _, _) = run(&mut h, &st, &journal, &[], None);
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
