//! A raw HTTP client for the scenarios. It speaks HTTP/1.0 over a plain `TcpStream`, so a
//! streamed response arrives close-delimited (no chunked framing to undo) and a test can read
//! SSE frames one by one, wait with a timeout, or cut the connection by dropping it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::{Value, json};

/// One SSE event as received.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    pub id: Option<String>,
    pub retry: Option<String>,
    pub data: String,
}

impl Frame {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or(Value::Null)
    }

    pub fn is_priming(&self) -> bool {
        self.id.is_some() && self.data.is_empty()
    }
}

/// A response whose body is read as it arrives.
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    reader: BufReader<TcpStream>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The next SSE frame, or `None` when the body ends or nothing arrives within `wait`.
    pub fn next_frame(&mut self, wait: Duration) -> Option<Frame> {
        self.reader.get_ref().set_read_timeout(Some(wait)).ok()?;
        let mut frame = Frame::default();
        let mut data: Vec<String> = Vec::new();
        let mut seen = false;
        loop {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if seen {
                    frame.data = data.join("\n");
                    return Some(frame);
                }
                continue;
            }
            seen = true;
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
            match field {
                "id" => frame.id = Some(value),
                "retry" => frame.retry = Some(value),
                "data" => data.push(value),
                _ => {}
            }
        }
    }

    /// Every frame until the server closes the body (at most `wait` between frames).
    pub fn frames_until_closed(&mut self, wait: Duration) -> Vec<Frame> {
        std::iter::from_fn(|| self.next_frame(wait)).collect()
    }

    pub fn body(mut self) -> String {
        let mut s = String::new();
        let _ = self.reader.get_ref().set_read_timeout(Some(Duration::from_secs(10)));
        let _ = self.reader.read_to_string(&mut s);
        s
    }

    pub fn json(self) -> Value {
        serde_json::from_str(&self.body()).unwrap_or(Value::Null)
    }
}

/// Sends one request; `headers` are added to `Host`, `Content-Length` and the MCP defaults.
pub fn request(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
    let mut stream = TcpStream::connect(addr).expect("connect");
    let mut head = format!("{method} /mcp HTTP/1.0\r\nContent-Length: {}\r\n", body.len());
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("status line");
    let status = status_line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((n, v)) = line.split_once(':') {
            headers.push((n.trim().to_owned(), v.trim().to_owned()));
        }
    }
    Response { status, headers, reader }
}

/// A 2026-07-28 POST as the spec writes it: the version in the header and in `_meta` with the
/// client's `capabilities`, the method mirrored into `Mcp-Method` and its name (`name`, or a
/// task's `taskId`) into `Mcp-Name` unless `extra` sets that header; then `extra`.
pub fn stateless_post(
    addr: SocketAddr,
    id: i64,
    method: &str,
    mut params: Value,
    capabilities: Value,
    extra: &[(&str, &str)],
) -> Response {
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(STATELESS);
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    let name = params.get("name").or(params.get("taskId")).and_then(Value::as_str).map(str::to_owned);
    let mut headers = vec![JSON, ACCEPT, ("MCP-Protocol-Version", STATELESS), ("Mcp-Method", method)];
    if let Some(name) = name.as_deref().filter(|_| !extra.iter().any(|(n, _)| *n == "Mcp-Name")) {
        headers.push(("Mcp-Name", name));
    }
    headers.extend_from_slice(extra);
    request(addr, "POST", &headers, body.as_bytes())
}

/// The stateless protocol revision.
pub const STATELESS: &str = "2026-07-28";

/// A session with the latest protocol, opened through `initialize`.
pub struct Client {
    pub addr: SocketAddr,
    pub session: String,
    pub version: &'static str,
}

pub const JSON: (&str, &str) = ("Content-Type", "application/json");
pub const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");

impl Client {
    pub fn initialize(addr: SocketAddr) -> Self {
        let resp = Self::send_initialize(addr);
        assert_eq!(resp.status, 200);
        let session = resp.header("mcp-session-id").expect("a session id").to_owned();
        Self { addr, session, version: "2025-11-25" }
    }

    /// A session, or the status that refused it.
    pub fn open(addr: SocketAddr) -> Result<Self, u16> {
        let resp = Self::send_initialize(addr);
        match resp.header("mcp-session-id") {
            Some(session) if resp.status == 200 => {
                Ok(Self { addr, session: session.to_owned(), version: "2025-11-25" })
            }
            _ => Err(resp.status),
        }
    }

    /// The status an `initialize` gets, for tests that expect a refusal.
    pub fn try_initialize(addr: SocketAddr) -> u16 {
        Self::send_initialize(addr).status
    }

    fn send_initialize(addr: SocketAddr) -> Response {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
        request(addr, "POST", &[JSON, ACCEPT], body.to_string().as_bytes())
    }

    fn headers<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut h = vec![
            JSON,
            ACCEPT,
            ("Mcp-Session-Id", self.session.as_str()),
            ("MCP-Protocol-Version", self.version),
        ];
        h.extend_from_slice(extra);
        h
    }

    pub fn post(&self, body: &Value, extra: &[(&str, &str)]) -> Response {
        request(self.addr, "POST", &self.headers(extra), body.to_string().as_bytes())
    }

    pub fn call(&self, id: i64, tool: &str, arguments: Value, extra: &[(&str, &str)]) -> Response {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": tool, "arguments": arguments, "_meta": {"progressToken": format!("p{id}")}}});
        self.post(&body, extra)
    }

    pub fn get(&self, last_event_id: Option<&str>) -> Response {
        let mut extra = Vec::new();
        if let Some(id) = last_event_id {
            extra.push(("Last-Event-ID", id));
        }
        request(self.addr, "GET", &self.headers(&extra), b"")
    }

    pub fn delete(&self) -> Response {
        request(self.addr, "DELETE", &self.headers(&[]), b"")
    }
}
