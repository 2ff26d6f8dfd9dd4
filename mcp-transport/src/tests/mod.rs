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
use crate::test_util::InProcess;

const VERSION: &str = "2025-11-25";

struct Harness {
    server: Server,
    gate: InProcess,
    minted: u32,
}

impl Harness {
    fn new() -> Self {
        Self { server: Server::new(ServerConfig::default()), gate: InProcess::new(), minted: 0 }
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

mod batches;
mod driver;
mod exchange;
mod guards;
mod reconnects;
mod sessions;
mod stateless;
mod streams;
mod tasks;
